"""Shared test helpers: instances from dicts, and the independent checker on every plan."""

from __future__ import annotations

import pytest
from builders import OPTIMIZERS, instance_from, tiny_dict

from planner.instance.model import Instance


@pytest.fixture
def tiny() -> Instance:
    return instance_from(tiny_dict(), "tiny.yaml")


@pytest.fixture(params=OPTIMIZERS)
def solver(request: pytest.FixtureRequest) -> str:
    """A test that takes ``solver`` runs once on every optimising solver of ``planner.solve``
    (:data:`builders.OPTIMIZERS`); ``pytest.mark.parametrize("solver", ...)`` narrows it."""
    return str(request.param)
