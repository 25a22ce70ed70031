"""Fewer collector passes over the configuration space and the attribution's greedy plans
(planner/collector.py), and a forked child that freezes what it inherited (planner/beside.py)."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import pytest

import planner.model.configs as C
from planner.analysis.attribution import lever_chain
from planner.beside import Beside
from planner.collector import ALLOCATIONS_PER_PASS, fewer_collections
from planner.instance import read

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def thresholds() -> Any:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_the_block_has_a_higher_first_threshold_and_puts_it_back(thresholds: Any) -> None:
    gc.set_threshold(700, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (ALLOCATIONS_PER_PASS, 10, 10)
        with fewer_collections(5):  # nested: never lower than the outer block's
            assert gc.get_threshold() == (ALLOCATIONS_PER_PASS, 10, 10)
        assert gc.get_threshold() == (ALLOCATIONS_PER_PASS, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(ValueError), fewer_collections():
        raise ValueError("the thresholds come back after an exception too")
    assert gc.get_threshold() == (700, 10, 10)


def test_automatic_collection_off_stays_off(thresholds: Any) -> None:
    gc.set_threshold(0, 10, 10)
    with fewer_collections():
        assert gc.get_threshold() == (0, 10, 10)
    assert gc.get_threshold() == (0, 10, 10)


def test_the_space_and_the_chain_run_with_fewer_collections(
    thresholds: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gc.set_threshold(700, 10, 10)
    seen: list[int] = []
    real = C._enumerate_all

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(gc.get_threshold()[0])
        return real(*a, **k)

    monkeypatch.setattr(C, "_enumerate_all", spy)
    inst = read(ROOT / "instances" / "week-7b.yaml")
    lever_chain(inst)
    assert seen and all(t >= ALLOCATIONS_PER_PASS for t in seen)
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the child needs fork")
def test_a_child_beside_freezes_what_it_inherited() -> None:
    assert Beside(gc.get_freeze_count).result() > 0
