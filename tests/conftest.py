"""Shared test helpers: instances from dicts, and the independent checker on every plan."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from planner.instance.model import Instance
from planner.instance.read import from_dict, load_document
from planner.model.plan import Plan

DATA = Path(__file__).parent / "data"


def tiny_dict() -> dict[str, Any]:
    return copy.deepcopy(load_document(DATA / "tiny.yaml"))


def instance_from(d: dict[str, Any], name: str = "<test>") -> Instance:
    return from_dict(d, name, DATA)


def assert_valid(inst: Instance, plan: Plan) -> None:
    """Every plan a test produces must pass the independent checker."""
    from planner.checker import verify

    v = verify(inst, plan)
    assert v.ok, "checker rejected the plan:\n" + "\n".join(
        f"{x.kind} {x.phase}: {x.message}" for x in v.violations
    )


@pytest.fixture
def tiny() -> Instance:
    return instance_from(tiny_dict(), "tiny.yaml")
