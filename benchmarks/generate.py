"""Deterministic generator of realistic benchmark instances at named sizes.

Sizes are phases x configurations per phase x hourly slots:

    small 4x12x168   medium 8x40x336   large 16x80x720   xlarge 40x120x720

Realistic means: real hourly day-ahead prices (the extracts in instances/data/prices, June-
August 2023) for markets in different time zones, DAGs of phases (data preparation ->
validation -> pre-training -> fine-tuning -> evaluation, several model pipelines sharing the
pools), capacity that varies by hour (a daily cycle of other tenants and maintenance
windows), and deadlines with 1.4-2x slack over the fastest schedule. The configuration count
per phase is steered through GPU counts, contracts and tiers and reported as built.
"""

from __future__ import annotations

import csv
import math
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PRICES = ROOT / "instances" / "data" / "prices"

SIZES: dict[str, tuple[int, int, int]] = {
    "small": (4, 12, 168),
    "medium": (8, 40, 336),
    "large": (16, 80, 720),
    "xlarge": (40, 120, 720),
}

#: (market file stem, IANA zone, PUE)
MARKETS = [
    ("US-TEX-ERCO", "America/Chicago", 1.35),
    ("DE-LU", "Europe/Berlin", 1.2),
    ("JP-TK", "Asia/Tokyo", 1.4),
    ("SG", "Asia/Singapore", 1.5),
    # last: the CAISO extract's timestamps look shifted by ~7 h (instances/data/SOURCES.md)
    ("US-CAL-CISO", "America/Los_Angeles", 1.3),
    ("ES", "Europe/Madrid", 1.25),
]

#: Datasheet figures as in planner/data/gpus.yaml (dense TFLOPS).
GPUS: dict[str, dict[str, Any]] = {
    "H100": {
        "memory_gb": 80,
        "peak_tflops": {"bf16": 989.4, "fp8": 1978.9},
        "board_power_w": 700,
        "idle_power_w": 70,
        "gpus_per_node": 8,
        "node_overhead_w": 2800,
        "family": "nvidia",
    },
    "A100": {
        "memory_gb": 80,
        "peak_tflops": {"bf16": 312.0},
        "board_power_w": 400,
        "idle_power_w": 50,
        "gpus_per_node": 8,
        "node_overhead_w": 1900,
        "family": "nvidia",
    },
    "L4": {
        "memory_gb": 24,
        "peak_tflops": {"bf16": 121.0, "fp8": 242.0},
        "board_power_w": 72,
        "idle_power_w": 16,
        "gpus_per_node": 8,
        "node_overhead_w": 500,
        "family": "nvidia",
    },
}
PRICE = {"H100": 3.8, "A100": 2.5, "L4": 0.8}


def _prices(market: str, start_index: int, hours: int) -> list[float]:
    path = PRICES / f"price_{market}_2023-06-01_2023-09-01.csv"
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    vals = [float(r["Price (USD/MWh)"]) for r in rows]
    return [round(v, 3) for v in vals[start_index : start_index + hours]]


def generate(size: str, seed: int = 0) -> dict[str, Any]:
    """An instance dict (valid for planner.instance.read.from_dict)."""
    n_phases, n_configs, hours = SIZES[size]
    rng = random.Random(f"{size}-{seed}")
    n_regions = 2 if n_configs <= 12 else (3 if n_configs <= 40 else 4)
    markets = MARKETS[:n_regions]
    start_index = 24 * 4  # 2023-06-05 00:00 UTC, a Monday
    regions: dict[str, Any] = {}
    for name, tz, pue in markets:
        cap = {}
        for g in GPUS:
            base = {"H100": 256, "A100": 256, "L4": 64}[g] * max(1, n_phases // 8)
            series = []
            for t in range(hours):
                local = (
                    t
                    + {
                        "America/Chicago": -5,
                        "Europe/Berlin": 2,
                        "Asia/Tokyo": 9,
                        "America/Los_Angeles": -7,
                        "Asia/Singapore": 8,
                        "Europe/Madrid": 2,
                    }[tz]
                ) % 24
                busy = 0.25 if 9 <= local < 18 else 0.0  # other tenants by day
                maint = 0.5 if (t // 24) % 7 == 3 and 2 <= local < 6 else 0.0
                series.append(int(base * (1 - busy - maint)))
            cap[g] = series
        offers = {
            g: {
                "on_demand": {"usd_per_gpu_hour": round(PRICE[g] * rng.uniform(0.9, 1.1), 3)},
                "spot": {
                    "usd_per_gpu_hour": round(PRICE[g] * 0.45, 3),
                    "preemptions_per_hour": 0.02,
                },
            }
            for g in GPUS
        }
        regions[name] = {
            "timezone": tz,
            "pue": pue,
            "electricity": {"values": _prices(name, start_index, hours)},
            "price_adder_usd_per_mwh": 30.0,
            "capacity": cap,
            "offers": offers,
            "storage": {
                "hot": {"usd_per_gb_month": 0.08, "write_gb_per_s": 10.0, "read_gb_per_s": 10.0},
                "cold": {
                    "usd_per_gb_month": 0.02,
                    "write_gb_per_s": 1.0,
                    "read_gb_per_s": 1.0,
                    "retrieval_usd_per_gb": 0.01,
                },
            },
        }
    models = {
        "m1b": {"layers": 24, "hidden": 2048, "heads": 16, "seq_len": 2048},
        "m7b": {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
        "m13b": {"layers": 40, "hidden": 5120, "heads": 40, "seq_len": 4096},
    }
    # configurations per phase ~ regions x GPU types x counts x contracts x tiers (pruned)
    phases: list[dict[str, Any]] = []
    pipelines = max(1, n_phases // 8 + (1 if n_phases % 8 >= 4 else 0))
    kinds = [
        "data_preparation",
        "validation",
        "pretraining",
        "fine_tuning",
        "evaluation",
        "fine_tuning",
        "evaluation",
        "validation",
    ]
    for k in range(n_phases):
        pipe = k % pipelines
        step = k // pipelines
        kind = kinds[step % len(kinds)]
        name = f"p{pipe}-{step}-{kind}"
        model = rng.choice(["m1b", "m7b"]) if kind != "pretraining" else rng.choice(["m7b", "m13b"])
        prev = [ph["name"] for ph in phases if ph["name"].startswith(f"p{pipe}-")]
        preds = prev[-1:] if prev else []
        counts_all = [8, 16, 32, 64, 128, 256]
        if kind == "pretraining":
            counts = counts_all
            tokens = rng.uniform(0.3, 0.8) * hours / 168 * 20e9 * (7 / 13 if model == "m13b" else 1)
            work: dict[str, Any] = {"tokens": round(tokens, -6)}
            gpu_types = ["H100", "A100"]
        elif kind == "data_preparation":
            counts = [1, 2, 4, 8, 16, 32]
            work = {"gpu_hours": round(rng.uniform(50, 200) * hours / 168), "gpu": "A100"}
            gpu_types = ["A100", "L4"]
            model = None
        elif kind == "evaluation":
            counts = [1, 2, 4, 8, 16, 32]
            work = {"tokens": round(rng.uniform(0.5, 2) * 1e9, -6), "passes": "forward"}
            gpu_types = ["A100", "L4"]
        else:
            counts = [8, 16, 32, 64, 128]
            work = {"tokens": round(rng.uniform(0.5, 2.0) * 1e9 * hours / 168, -6)}
            gpu_types = ["H100", "A100"]
        preemptible = kind in ("data_preparation", "validation", "evaluation")
        per_count = n_regions * len(gpu_types) * 2 * (2 if preemptible else 1)
        keep = max(1, min(len(counts), round(n_configs / per_count)))
        counts = counts[-keep:]
        phase: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "work": work,
            "predecessors": preds,
            "gpu_types": gpu_types,
            "preemptible": preemptible,
            "options": {
                "gpu_counts": counts,
                "tensor_parallel": [1, 2, 4, 8],
                "contracts": ["on_demand", "spot"],
                "extra_spare_nodes": [0],
                "recompute": ["selective", "full"],
                "zero": [1, 3],
            },
            "mfu": {"H100": 0.38, "A100": 0.45, "L4": 0.4},
        }
        if model:
            phase["model"] = model
        if kind in ("data_preparation",):
            phase["data"] = {"size_gb": 2000, "read_passes": 1}
        phases.append(phase)
    inst = {
        "name": f"bench-{size}-{seed}",
        "description": f"generated benchmark instance {size} seed {seed}",
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": hours},
        "gpu_types": GPUS,
        "regions": regions,
        "models": models,
        "phases": phases,
    }
    _set_deadlines(inst, rng)
    return inst


def _fastest_finish(d: dict[str, Any]) -> dict[str, float]:
    from planner.configs import build_config_space
    from planner.instance.read import from_dict

    space = build_config_space(from_dict(d, "<generated>", ROOT))
    fastest = {p: min((c.hours for c in cs), default=0) for p, cs in space.by_phase.items()}
    finish: dict[str, float] = {}
    for ph in d["phases"]:
        start = max([finish[q] for q in ph["predecessors"]], default=0.0)
        finish[ph["name"]] = start + fastest[ph["name"]]
    return finish


def _set_deadlines(d: dict[str, Any], rng: random.Random) -> None:
    """Scale each pipeline's work so that its fastest schedule takes about 55% of the horizon,
    then set deadlines at 1.4-2x the fastest finish (fastest configuration per phase, from the
    configuration space), capped at the horizon."""
    hours = d["horizon"]["hours"]
    for _ in range(3):
        finish = _fastest_finish(d)
        pipes: dict[str, float] = {}
        for name, f in finish.items():
            pipe = name.split("-")[0]
            pipes[pipe] = max(pipes.get(pipe, 0.0), f)
        target = 0.55 * hours
        if all(abs(f - target) < 0.1 * target for f in pipes.values()):
            break
        for ph in d["phases"]:
            k = target / max(pipes[ph["name"].split("-")[0]], 1.0)
            w = ph["work"]
            for key in ("tokens", "gpu_hours"):
                if key in w:
                    w[key] = float(f"{w[key] * k:.4g}")
    finish = _fastest_finish(d)
    for ph in d["phases"]:
        slack = rng.uniform(1.4, 2.0)
        ph["deadline"] = int(min(hours, math.ceil(finish[ph["name"]] * slack) + 2))


def write(size: str, seed: int, path: Path) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(generate(size, seed), sort_keys=False))
    return path


if __name__ == "__main__":
    size = sys.argv[1] if len(sys.argv) > 1 else "small"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(f"bench-{size}.yaml")
    write(size, 0, out)
    print(out)
