"""Small random instances where every coupling of the hourly model matters: a DAG with a
diamond (a phase with two predecessors), capacity that binds, a reserved offer, billing
blocks, a minimum rental, resume costs and pauses, transfers between regions. Small enough
(24-30 hours, 4 phases) that HiGHS proves their optimum in seconds: the reference for the
bounds and heuristics (tests/solvers/test_lagrange.py, tests/solvers/test_pipeline.py)."""

from __future__ import annotations

import random
from typing import Any

from builders import tiny_dict


def hard_dict(seed: int) -> dict[str, Any]:
    rng = random.Random(f"hard-{seed}")
    d = tiny_dict()
    hours = rng.choice([24, 30])
    d["horizon"]["hours"] = hours
    east, west = d["regions"]["east"], d["regions"]["west"]
    east["electricity"] = {"values": [round(rng.uniform(-5, 160), 2) for _ in range(hours)]}
    west["electricity"] = {"values": [round(rng.uniform(10, 140), 2) for _ in range(hours)]}
    east["capacity"]["A100"] = [rng.choice([8, 8, 12, 16]) for _ in range(hours)]
    west["capacity"]["A100"] = rng.choice([4, 8])
    east["offers"]["A100"] = {
        "on_demand": {
            "usd_per_gpu_hour": 2.0,
            "billing_granularity_hours": rng.choice([1, 2, 3]),
            "min_rental_hours": rng.choice([0, 4]),
        }
    }
    if rng.random() < 0.5:
        east["offers"]["A100"]["reserved"] = {
            "usd_per_gpu_hour": round(rng.uniform(0.9, 1.6), 2),
            "min_gpus": rng.choice([0, 4]),
        }
    east["default_transfer_usd_per_gb"] = 0.05
    west["default_transfer_usd_per_gb"] = 0.05
    prep, ft = d["phases"]
    prep["work"]["gpu_hours"] = rng.choice([6, 10, 14])
    prep["output_gb"] = rng.choice([0, 50, 200])
    prep["resume_overhead_hours"] = rng.choice([0.0, 0.25, 0.5])
    ft["work"]["tokens"] = rng.choice([1e9, 1.5e9])
    ft["preemptible"] = rng.random() < 0.5
    ft["deadline"] = hours
    ft["options"] = {"gpu_counts": [4, 8]}
    side = {
        "name": "side",
        "kind": "data_preparation",
        "work": {"gpu_hours": rng.choice([4, 8]), "gpu": "A100"},
        "preemptible": rng.random() < 0.5,
        "output_gb": 20,
        "options": {"gpu_counts": [2, 4, 8]},
    }
    merge = {
        "name": "merge",
        "kind": "evaluation",
        "model": "m1b",
        "work": {"tokens": 3e8, "passes": "forward"},
        "predecessors": ["finetune", "side"],
        "preemptible": rng.random() < 0.5,
        "options": {"gpu_counts": [2, 4]},
    }
    d["phases"].extend([side, merge])
    return d
