"""The segment-path bound vectorised (running minima over hours, migrations by source
region) computes the dynamic programme of its definition, and stops at its deadline with a
valid bound."""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import planner
from formulations.bounds import segment_path as sb
from planner.instance.read import from_dict, load_document
from planner.model.configs import config_space
from planner.model.costs import migration_cost, weights
from planner.model.windows import time_windows

ROOT = Path(__file__).resolve().parents[2]


def _reference_forward(d: sb._Data, mig: np.ndarray, mu: float) -> np.ndarray:
    """The forward pass hour by hour, as its definition reads (module docstring)."""
    red = (d.red0 - mu * d.rate[:, None]).T
    H, C = red.shape
    K = d.segments
    own = np.minimum(red, 0.0) if d.preemptible else red
    F = np.full((H, K, C), np.inf)
    for t in range(H):
        for k in range(K):
            best = d.start.copy() if k == 0 else np.full(C, np.inf)
            if t > 0:
                best = np.minimum(best, F[t - 1, k])
                if k > 0:
                    best = np.minimum(best, (F[t - 1, k - 1][:, None] + mig).min(axis=0))
            F[t, k] = best + own[t]
    return F


def _reference_backward(d: sb._Data, mig: np.ndarray, mu: float) -> np.ndarray:
    red = (d.red0 - mu * d.rate[:, None]).T
    H, C = red.shape
    K = d.segments
    own = np.minimum(red, 0.0) if d.preemptible else red
    B = np.full((H, K, C), np.inf)
    for t in range(H - 1, -1, -1):
        for k in range(K - 1, -1, -1):
            best = d.end.copy()
            if t + 1 < H:
                best = np.minimum(best, B[t + 1, k])
                if k + 1 < K:
                    best = np.minimum(best, (mig + B[t + 1, k + 1][None, :]).min(axis=1))
            B[t, k] = best + own[t]
    return B


def _data_of(monkeypatch: pytest.MonkeyPatch, inst: Any, configs: Any, e: int, l_: int) -> sb._Data:
    """The data :func:`formulations.bounds.segment_path.segment_bound` builds for its passes."""
    seen: list[sb._Data] = []
    real = sb._forward

    def spy(d: sb._Data, mu: float) -> np.ndarray:
        seen.append(d)
        return real(d, mu)

    with monkeypatch.context() as m:
        m.setattr(sb, "_forward", spy)
        sb.segment_bound(inst, configs, e, l_)
    return seen[0]


@pytest.mark.parametrize("preemptible", [False, True])
def test_the_passes_are_the_dynamic_programme(
    monkeypatch: pytest.MonkeyPatch, preemptible: bool
) -> None:
    doc = load_document(ROOT / "instances" / "week-7b.yaml")
    for ph in doc["phases"]:
        ph.setdefault("options", {})["max_segments"] = 3
        ph["preemptible"] = preemptible
    inst = from_dict(doc, "<week-7b in segments>", ROOT / "instances")
    space = config_space(inst)
    win = time_windows(inst, space.fewest_hours())
    w = weights(inst)
    for name in ("pretrain", "finetune"):
        configs = space[name]
        d = _data_of(monkeypatch, inst, configs, win.start[name], win.end[name])
        assert len(d.rate) == len(configs)  # every configuration can run somewhere here
        # the pairwise migrations of the definition, from the cost model (none into itself)
        mig = np.array(
            [
                [migration_cost(inst, a, b).weighted(w) if a is not b else np.inf for b in configs]
                for a in configs
            ]
        )
        by_region = d.leave[:, None] + d.move[d.region] + d.enter[None, :]
        assert np.allclose(np.where(np.isinf(mig), np.inf, by_region), mig)
        for mu in (0.0, 10.0, 1e3, 5e4):
            assert np.allclose(sb._forward(d, mu), _reference_forward(d, mig, mu), equal_nan=True)
            assert np.allclose(sb._backward(d, mu), _reference_backward(d, mig, mu), equal_nan=True)


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_the_bound_stops_at_its_deadline_and_stays_valid() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import generate

    d = generate.generate("medium", 0)
    ph = copy.deepcopy(next(p for p in d["phases"] if p["kind"] == "pretraining"))
    ph.update(predecessors=[], preemptible=True, gpu_types=["H100", "A100"])
    ph["options"].update(
        max_segments=3, segment_changes=["region"], gpu_counts=[128, 256], extra_spare_nodes=[0]
    )
    d["phases"] = [ph]
    d["regions"] = generate.generate("large", 0)["regions"]
    inst = from_dict(d, "<one phase in segments>", generate.ROOT)
    space = config_space(inst)
    name = ph["name"]
    assert len(space[name]) > 700  # issue 26: one phase of 714 configurations
    win = time_windows(inst, space.fewest_hours())
    e, l_ = win.start[name], win.end[name]
    t0 = time.perf_counter()
    quick = sb.segment_bound(inst, space[name], e, l_, deadline=time.perf_counter() + 1.0)
    took = time.perf_counter() - t0
    full = sb.segment_bound(inst, space[name], e, l_)
    # a cut-short search ends within one evaluation of its deadline, and any mu is a bound
    assert took < 1.0 + 2.0
    assert quick.multi <= full.multi + 1e-6 * abs(full.multi)
    # the whole solve honours its time limit (issue 26: 20.7-38.7 s at --time-limit 5)
    t0 = time.perf_counter()
    res = planner.solve(inst, time_limit=5)
    assert time.perf_counter() - t0 <= 5 * 1.05 + 1.0
    assert res.plan is not None and res.bound is not None and res.bound <= res.objective
