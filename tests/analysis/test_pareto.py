"""`trainplan pareto`: cost frontiers against a makespan cap and an emissions cap, with
hand-computed points. Every plan goes through the independent checker."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from builders import DATA, assert_valid, instance_from, tiny_dict
from typer.testing import CliRunner

from planner.analysis.pareto import ParetoError, ParetoPoint, frontier
from planner.instance import read
from planner.interfaces.cli import app
from planner.interfaces.cli import pareto as _register_pareto  # noqa: F401  (registers the command)
from planner.solve import solve

TOU = DATA / "levers_tou.yaml"

ROUND_GPU = {
    "memory_gb": 80,
    "peak_tflops": {"bf16": 100},
    "board_power_w": 1000,
    "idle_power_w": 0,
    "gpus_per_node": 10,
    "node_overhead_w": 0,
    "failures_per_gpu_hour": 0.0,
}


def _region(price: float, ci: float, rent: float) -> dict[str, Any]:
    return {
        "timezone": "UTC",
        "pue": 1.0,
        "electricity": {"constant": price},
        "carbon_intensity": {"constant": ci},
        "capacity": {"G": 10},
        "offers": {"G": {"on_demand": {"usd_per_gpu_hour": rent}}},
        "storage": {"hot": {"usd_per_gb_month": 0.0}},
    }


def two_grids() -> dict[str, Any]:
    """One 4-hour job on 10 GPUs (9 kW at PUE 1.0 -> 36 kWh) in a cheap coal region or a
    dear hydro region.
    coal:  rental 10 x 2.0 x 4 = 80 + 36 kWh x 50 / 1000 = 1.8  -> 81.8 USD,
           36 x 800 / 1e6 = 0.0288 t
    hydro: rental 10 x 2.5 x 4 = 100 + 36 x 100 / 1000 = 3.6   -> 103.6 USD,
           36 x 20 / 1e6 = 0.00072 t"""
    return {
        "name": "two-grids",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 12},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"coal": _region(50, 800, 2.0), "hydro": _region(100, 20, 2.5)},
        "phases": [
            {
                "name": "job",
                "kind": "data_preparation",
                "work": {"gpu_hours": 40, "gpu": "G"},
                "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
            }
        ],
    }


def _check(points: list[ParetoPoint]) -> None:
    for p in points:
        assert p.plan is not None
        assert_valid(p.instance, p.plan)


def test_deadline_frontier_hand_computed() -> None:
    inst = read(TOU)
    pts = frontier(inst, "deadline", points=5, time_limit=30)
    # fastest makespan 4 h; caps linspace(4, 24, 5) = 4, 9, 14, 19, 24
    assert [p.x for p in pts] == [4, 9, 14, 19, 24]
    # 10.8 kW (9 kW x PUE 1.2); one contiguous 4 h run ending by D, best at the end:
    # cheap hours (>= 12) in the run k = clamp(D - 12, 0, 4); energy 10.8 x
    # (200 (4 - k) + 50 k) / 1000; rental 80.
    # D = 4, 9: k = 0 -> 8.64 -> 88.64;  D = 14: k = 2 -> 10.8 x 500 / 1000 = 5.4 -> 85.4;
    # D = 19, 24: k = 4 -> 2.16 -> 82.16
    expected = [88.64, 88.64, 85.4, 82.16, 82.16]
    assert [p.cost for p in pts] == pytest.approx(expected, abs=1e-6)
    assert all(p.kept_from is None for p in pts)
    assert all(p.makespan_h is not None and p.makespan_h <= p.x for p in pts)
    _check(pts)


def test_deadline_frontier_monotone_and_ends_at_the_optimum() -> None:
    inst = instance_from(tiny_dict(), "tiny.yaml")
    pts = frontier(inst, "deadline", points=4, time_limit=30)
    costs = [p.cost for p in pts]
    assert all(c is not None for c in costs)
    gap = 1e-4  # the MILP's default relative gap
    for a, b in itertools.pairwise(costs):
        assert a is not None and b is not None and b <= a * (1 + gap) + 1e-9
    assert all(p.kept_from is None for p in pts)  # no point needed the previous one's plan
    assert pts[-1].x == inst.hours
    opt = solve(inst, solver="milp", time_limit=30, backend="highs")
    assert opt.objective is not None
    assert pts[-1].cost == pytest.approx(opt.objective, rel=gap)
    # the tightest cap is the fastest makespan: a plan ends exactly there
    assert pts[0].makespan_h == pts[0].x
    _check(pts)


def test_carbon_frontier_hand_computed() -> None:
    inst = instance_from(two_grids())
    pts = frontier(inst, "carbon", points=3, time_limit=30)
    # caps from hydro's 0.00072 t to coal's 0.0288 t: 0.00072, 0.01476, 0.0288
    assert [p.x for p in pts] == pytest.approx([0.00072, 0.01476, 0.0288], rel=1e-9)
    # below coal's emissions only hydro fits: 103.6; at coal's own emissions: 81.8
    assert [p.cost for p in pts] == pytest.approx([103.6, 103.6, 81.8], abs=1e-6)
    assert [p.plan.phases[0].region for p in pts if p.plan] == ["hydro", "hydro", "coal"]
    opt = solve(inst, solver="milp", time_limit=30, backend="highs")
    assert pts[-1].cost == pytest.approx(opt.objective, rel=1e-9)
    for p in pts:
        assert p.emissions_t is not None and p.emissions_t <= p.x * (1 + 1e-6)
    _check(pts)


def test_carbon_needs_intensity() -> None:
    d = two_grids()
    del d["regions"]["hydro"]["carbon_intensity"]
    with pytest.raises(ParetoError, match=r"regions\.hydro\.carbon_intensity"):
        frontier(instance_from(d), "carbon", points=3)
    with pytest.raises(ParetoError, match="expected one of deadline, carbon"):
        frontier(instance_from(two_grids()), "speed")


def test_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    png = tmp_path / "f.png"
    res = runner.invoke(
        app, ["pareto", str(TOU), "--vs", "deadline", "--points", "3", "--png", str(png)]
    )
    assert res.exit_code == 0, res.output
    assert "$88.64" in res.output and "$82.16" in res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = runner.invoke(app, ["pareto", str(TOU), "--vs", "deadline", "--points", "2", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [p["x"] for p in data["points"]] == [4, 24]
    # no carbon intensity in levers_tou.yaml: a clear input error, exit 2
    res = runner.invoke(app, ["pareto", str(TOU), "--vs", "carbon"])
    assert res.exit_code == 2
    assert "regions.r.carbon_intensity" in res.output
    res = runner.invoke(app, ["pareto", str(TOU), "--vs", "speed"])
    assert res.exit_code == 2
