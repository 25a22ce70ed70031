"""The builders the tests share: small instances as dicts (the tiny instance, one phase in a
region, two regions, two nights, ...), reading them, solving them, and the assertion that a
plan passes the independent checker. Imported by the test modules of every layer; fixtures
are in conftest.py."""

from __future__ import annotations

import copy
import importlib
import random
from pathlib import Path
from typing import Any

import typer

from formulations.pipeline import solve_milp
from planner.checker import verify
from planner.instance.model import Instance
from planner.instance.read import from_dict, load_document
from planner.model.options import SolveOptions
from planner.model.plan import Plan
from planner.solve import SOLVERS

# A GPU with round numbers: 1 kW board power, no idle draw, ten per node, no host overhead.
ROUND_GPU = {
    "memory_gb": 80,
    "peak_tflops": {"bf16": 100.0},
    "board_power_w": 1000,
    "idle_power_w": 0,
    "gpus_per_node": 10,
    "node_overhead_w": 0,
    "failures_per_gpu_hour": 0.0,
}


FREE_STORAGE = {"hot": {"usd_per_gb_month": 0.0}}


def region(
    tz: str, electricity: dict[str, Any], offers: dict[str, Any], capacity: int = 10
) -> dict[str, Any]:
    return {
        "timezone": tz,
        "pue": 1.0,
        "electricity": electricity,
        "capacity": {"G": capacity},
        "offers": {"G": offers},
        "storage": FREE_STORAGE,
    }


def one_phase(
    regions: dict[str, Any],
    gpu_hours: float,
    deadline: int,
    hours: int = 24,
    preemptible: bool = False,
    gpu: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    phase = {
        "name": "job",
        "kind": "data_preparation",
        "work": {"gpu_hours": gpu_hours, "gpu": "G"},
        "deadline": deadline,
        "preemptible": preemptible,
        "power_load": 1.0,
        "options": options or {"gpu_counts": [10], "extra_spare_nodes": [0]},
    }
    d = {
        "name": "hand",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": hours},
        "gpu_types": {"G": gpu or ROUND_GPU},
        "regions": regions,
        "phases": [phase],
    }
    d.update(extra)
    return d


def solved(d: dict[str, Any], **kw: Any) -> Any:
    inst = instance_from(d)
    res = solve_milp(inst, SolveOptions(time_limit=30, gap=0.0), **kw)
    assert res.plan is not None, res.message
    assert_valid(inst, res.plan)
    return inst, res


NIGHT = {"tou": {"default": 100, "bands": [{"start_hour": 0, "end_hour": 6, "price": 20}]}}


NIGHT_NY = {"tou": {"default": 100, "bands": [{"start_hour": 0, "end_hour": 6, "price": 10}]}}


def three_cheap_hours(resume_overhead_hours: float) -> dict[str, Any]:
    """A preemptible 3-hour job on 10 GPUs (10 kW, $1/GPU-h), 24 h at 50 USD/MWh except hours
    2, 7 and 11 at 5."""
    prices = [50.0] * 24
    for t in (2, 7, 11):
        prices[t] = 5.0
    d = one_phase(
        {"r": region("UTC", {"values": prices}, {"on_demand": {"usd_per_gpu_hour": 1.0}})},
        30,
        deadline=24,
        preemptible=True,
    )
    d["phases"][0]["resume_overhead_hours"] = resume_overhead_hours
    return d


def generated(seed: int) -> dict[str, Any]:
    """A small random variant of the tiny instance: prices, capacities, deadlines, work."""
    rng = random.Random(seed)
    d = tiny_dict()
    d["horizon"]["hours"] = 36
    d["regions"]["east"]["electricity"] = {
        "values": [round(rng.uniform(-5, 150), 2) for _ in range(36)]
    }
    d["regions"]["east"]["capacity"]["A100"] = rng.choice([8, 16, 24])
    d["regions"]["west"]["capacity"]["A100"] = rng.choice([8, 16])
    d["regions"]["west"]["offers"]["A100"]["on_demand"]["usd_per_gpu_hour"] = round(
        rng.uniform(1.5, 2.5), 2
    )
    d["phases"][0]["work"]["gpu_hours"] = rng.choice([8, 12, 20])
    d["phases"][1]["work"]["tokens"] = rng.choice([1e9, 2e9, 3e9])
    d["phases"][1]["deadline"] = rng.choice([24, 30, 36])
    d["phases"][1]["preemptible"] = rng.random() < 0.5
    return d


OD = {"on_demand": {"usd_per_gpu_hour": 1.0}}


def two_nights(berlin_to_ny_usd_per_gb: float | None = None) -> dict[str, Any]:
    """Berlin (UTC+2) is cheap ($20/MWh) 00-06 local = hours 0-3 of a horizon starting
    2023-06-05 00:00 UTC, New York (UTC-4) ($10/MWh) 00-06 local = hours 4-9; $100 otherwise.
    10 GPUs x 1 kW on demand at $1/GPU-h; 80 GPU-hours = 8 h, deadline and horizon 8 h; a
    36 GB checkpoint, tiers writing and reading 1 GB/s, links 1 GB/s, restarts instant."""
    berlin = region("Europe/Berlin", NIGHT, OD)
    ny = region("America/New_York", NIGHT_NY, OD)
    for r in (berlin, ny):
        r["default_link_gb_per_s"] = 1.0
    if berlin_to_ny_usd_per_gb is not None:
        berlin["transfer_usd_per_gb"] = {"newyork": berlin_to_ny_usd_per_gb}
    phase = {
        "name": "job",
        "kind": "data_preparation",
        "work": {"gpu_hours": 80, "gpu": "G"},
        "deadline": 8,
        "power_load": 1.0,
        "checkpoint_gb": 36,
        "options": {"gpu_counts": [10], "extra_spare_nodes": [0], "max_segments": 2},
    }
    return {
        "name": "sun",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 8},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"berlin": berlin, "newyork": ny},
        "phases": [phase],
        "failure": {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"},
    }


def elastic() -> dict[str, Any]:
    """One region, free power in hours 0-3 and $500/MWh after; 10 or 20 GPUs (one or two
    10-GPU nodes) at $1/GPU-h, two nodes at scaling efficiency 0.8; work 104 GPU-hours at
    full efficiency (the MFU holds at the reference scale, one node); deadline hour 9 of a
    10-hour horizon; restarts take 0.5 h."""
    r = region(
        "UTC",
        {"values": [0, 0, 0, 0, 500, 500, 500, 500, 500, 500]},
        OD,
        capacity=20,
    )
    phase = {
        "name": "job",
        "kind": "data_preparation",
        "work": {"gpu_hours": 104, "gpu": "G"},
        "deadline": 9,
        "power_load": 1.0,
        "scaling": {"per_doubling": 0.8, "reference_gpus": 10},
        "options": {"gpu_counts": [10, 20], "extra_spare_nodes": [0], "max_segments": 2},
    }
    return {
        "name": "elastic",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 10},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"r": r},
        "phases": [phase],
        "failure": {"restart_hours": 0.5, "detect_hours": 0.0, "checkpoint": "sync"},
    }


def two_regions(capacity_a: int | list[int] = 10) -> dict[str, Any]:
    """Regions a ($20/MWh) and b ($50/MWh), both UTC, 10 GPUs x 1 kW at $1/GPU-h; one
    non-preemptible job of 80 GPU-hours (8 h on 10 GPUs) in a 12-hour horizon, a 36 GB
    checkpoint, tiers and links at 1 GB/s, instant restarts."""

    def region(price: float, cap: int | list[int]) -> dict[str, Any]:
        return {
            "timezone": "UTC",
            "pue": 1.0,
            "electricity": {"constant": price},
            "capacity": {"G": cap},
            "offers": {"G": {"on_demand": {"usd_per_gpu_hour": 1.0}}},
            "storage": FREE_STORAGE,
            "default_link_gb_per_s": 1.0,
        }

    return {
        "name": "lost",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": 12},
        "gpu_types": {"G": ROUND_GPU},
        "regions": {"a": region(20, capacity_a), "b": region(50, 10)},
        "phases": [
            {
                "name": "job",
                "kind": "data_preparation",
                "work": {"gpu_hours": 80, "gpu": "G"},
                "power_load": 1.0,
                "checkpoint_gb": 36,
                "options": {"gpu_counts": [10], "extra_spare_nodes": [0]},
            }
        ],
        "failure": {"restart_hours": 0.0, "detect_hours": 0.0, "checkpoint": "sync"},
    }


DATA = Path(__file__).parent / "data"


def tiny_dict() -> dict[str, Any]:
    return copy.deepcopy(load_document(DATA / "tiny.yaml"))


def instance_from(d: dict[str, Any], name: str = "<test>") -> Instance:
    return from_dict(d, name, DATA)


def assert_valid(inst: Instance, plan: Plan) -> None:
    """Every plan a test produces must pass the independent checker."""

    v = verify(inst, plan)
    assert v.ok, "checker rejected the plan:\n" + "\n".join(
        f"{x.kind} {x.phase}: {x.message}" for x in v.violations
    )


#: Every solver of ``planner.solve`` that optimises (all but the lever-free baseline): the
#: ``solver`` fixture (conftest.py) runs a test on each.
OPTIMIZERS = tuple(s for s in SOLVERS if s != "baseline")


def command_app(name: str) -> typer.Typer:
    """A root typer app holding only the command ``name`` (``verify``, ``report``, ...) as a
    subcommand, whatever other commands are registered: its module is imported (which
    registers it on the CLI's app) and its registration copied."""
    importlib.import_module(f"planner.interfaces.cli.{name}")
    from planner.interfaces.cli.app import app

    root = typer.Typer(add_completion=False)

    @root.callback()
    def _root() -> None:
        """test root"""

    root.registered_commands.extend(c for c in app.registered_commands if c.name == name)
    return root
