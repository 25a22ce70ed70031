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

import copy
import csv
import math
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
PRICES = ROOT / "instances" / "data" / "prices"

SIZES: dict[str, tuple[int, int, int]] = {
    "small": (4, 12, 168),
    "medium": (8, 40, 336),
    "large": (16, 80, 720),
    "xlarge": (40, 120, 720),
}

#: Market file stem -> (IANA zone, PUE); PUE values are assumptions in the usual range.
MARKET_ZONES: dict[str, tuple[str, float]] = {
    "US-TEX-ERCO": ("America/Chicago", 1.35),
    "DE-LU": ("Europe/Berlin", 1.2),
    "JP-TK": ("Asia/Tokyo", 1.4),
    "SG": ("Asia/Singapore", 1.5),
    "US-CAL-CISO": ("America/Los_Angeles", 1.3),
    "ES": ("Europe/Madrid", 1.25),
    "FR": ("Europe/Paris", 1.2),
    "NL": ("Europe/Amsterdam", 1.2),
    "US-MIDA-PJM": ("America/New_York", 1.3),
    "AU-NSW": ("Australia/Sydney", 1.35),
    "CA-ON": ("America/Toronto", 1.25),
}


def _with_deadlines(d: dict[str, Any], rng: random.Random, hours: int) -> dict[str, Any]:
    """``d`` with its work scaled so that the fastest schedule fills 30% of the horizon, and
    each phase due 1.4-2x its earliest finish after its release (within the horizon)."""
    finish = _scale_work(d, 0.30)
    for ph in d["phases"]:
        rel = ph["release"]
        slack = rng.uniform(1.4, 2.0)
        ph["deadline"] = int(min(hours, rel + math.ceil((finish[ph["name"]] - rel) * slack) + 2))
    return d


def _year_prices(market: str) -> dict[str, str]:
    """A market's real 2023 hourly day-ahead prices (the full-year extract) as a CSV series."""
    return {
        "csv": FULL_YEAR_PRICES.format(market=market),
        "column": "Price (USD/MWh)",
        "time_column": "Datetime (UTC)",
    }


def two_tiers() -> dict[str, Any]:
    """Every generated region's storage: a hot tier and a cheaper, slower cold one."""
    return {
        "hot": {"usd_per_gb_month": 0.08, "write_gb_per_s": 10.0, "read_gb_per_s": 10.0},
        "cold": {
            "usd_per_gb_month": 0.02,
            "write_gb_per_s": 1.0,
            "read_gb_per_s": 1.0,
            "retrieval_usd_per_gb": 0.01,
        },
    }


def _markets(*stems: str) -> list[tuple[str, str, float]]:
    """(market file stem, IANA zone, PUE) for ``stems``, in that order."""
    return [(m, *MARKET_ZONES[m]) for m in stems]


#: The sizes' markets (the CAISO extract's timestamps look shifted by ~7 h, so it comes
#: late: instances/data/SOURCES.md).
MARKETS = _markets("US-TEX-ERCO", "DE-LU", "JP-TK", "SG", "US-CAL-CISO", "ES")

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
    return _generated(size, n_phases, n_configs, hours, seed)


def _generated(
    size: str,
    n_phases: int,
    n_configs: int,
    hours: int,
    seed: int,
    pipelines: int | None = None,
) -> dict[str, Any]:
    """The named sizes' builder: ``size`` names the instance and seeds its random choices;
    ``pipelines`` (default: one per 8 phases, rounded) splits the phases into that many
    independent chains that share the pools."""
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
            "storage": two_tiers(),
        }
    models = {
        "m1b": {"layers": 24, "hidden": 2048, "heads": 16, "seq_len": 2048},
        "m7b": {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
        "m13b": {"layers": 40, "hidden": 5120, "heads": 40, "seq_len": 4096},
    }
    # configurations per phase ~ regions x GPU types x counts x contracts x tiers (pruned)
    phases: list[dict[str, Any]] = []
    if pipelines is None:
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
        model: str | None = (
            rng.choice(["m1b", "m7b"]) if kind != "pretraining" else rng.choice(["m7b", "m13b"])
        )
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


def _fastest_finish(d: dict[str, Any], steady: bool = False) -> dict[str, float]:
    """Earliest finish per phase with each phase on its fastest configuration. ``steady``:
    only configurations whose GPUs every hour of their pool can hold (the pool's least
    capacity over the horizon), so that the chain of fastest runs fits as contiguous runs
    whatever the daily cycle and the maintenance windows take (the long horizons' rule: with
    the plain fastest, a 256-GPU pre-training needs 893 contiguous hours that a pool which
    drops to 192 GPUs every day never has)."""
    from planner.instance.read import from_dict
    from planner.model.configs import build_config_space

    inst = from_dict(d, "<generated>", ROOT)
    space = build_config_space(inst)
    fastest: dict[str, int] = {}
    for p, cs in space.by_phase.items():
        ok = [c for c in cs if c.total_gpus <= inst.capacity[(c.region, c.gpu)].min()]
        fastest[p] = min((c.hours for c in (ok if steady and ok else cs)), default=0)
    finish: dict[str, float] = {}
    for ph in d["phases"]:
        start = max([finish[q] for q in ph["predecessors"]], default=0.0)
        start = max(start, float(ph.get("release", 0)))
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


# ----------------------------------------------------------------------------- families
#
# Instances that stress the MILP (issue "The solver where the problem is hard"). Each is built
# from a named size by a stated change, or by its own builder; all are deterministic in
# (name, seed). The named sizes above stay byte-identical so that old figures stay comparable.

SHIPPED = ROOT / "instances"
FULL_YEAR_PRICES = "instances/data/prices/price_{market}_2023.csv"

#: family -> instance names, in the order the suite runs them.
FAMILIES: dict[str, tuple[str, ...]] = {
    "size": ("small", "medium", "large", "xlarge"),
    "capacity": ("large-cap0.5", "large-cap0.49", "medium-compete"),
    "crowded": ("medium-x4", "large-x2-cap0.5"),
    "tight": ("medium-tight", "large-tight"),
    "shipped": ("small-finetune", "week-7b", "month-70b"),
    "long": ("long-4380", "long-8760"),
    "dag": ("dag30-static", "dag30-tou", "dag30-static-preempt", "dag30-tou-preempt"),
    "quarter": ("quarter-100", "quarter-200"),
    "terms": ("quarter-200-terms",),
    "year": ("year-seg",),
}

#: What the issue expects of an instance, printed beside its result.
EXPECT: dict[str, str] = {
    "large-cap0.49": "infeasible (proved at once)",
}


def names(selection: list[str] | None = None) -> list[str]:
    """Instance names for family or instance names (all families when ``selection`` is
    empty), each once, in the order of FAMILIES."""
    every = [n for fam in FAMILIES.values() for n in fam]
    if not selection:
        return every
    out: list[str] = []
    for item in selection:
        picked = FAMILIES.get(item, (item,) if item in every else None)
        if picked is None:
            known = ", ".join([*FAMILIES, *every])
            raise KeyError(f"unknown family or instance {item!r}; choose from {known}")
        out.extend(n for n in picked if n not in out)
    return out


def family_of(name: str) -> str:
    for fam, members in FAMILIES.items():
        if name in members:
            return fam
    raise KeyError(name)


def document(name: str, seed: int = 0) -> dict[str, Any]:
    """The instance document of a generated benchmark instance (not of a shipped one: those
    are files, see :func:`load`)."""
    if name in SIZES:
        return generate(name, seed)
    if name.startswith("large-cap"):
        return scale_capacity(generate("large", seed), float(name.removeprefix("large-cap")))
    if name == "medium-compete":
        return medium_compete(seed)
    if name == "medium-x4":
        return copies(generate("medium", seed), 4)
    if name == "large-x2-cap0.5":
        return copies(scale_capacity(generate("large", seed), 0.5), 2)
    if name in ("medium-tight", "large-tight"):
        return tighten(generate(name.removesuffix("-tight"), seed), random.Random(f"{name}-{seed}"))
    if name in ("long-4380", "long-8760"):
        return long_horizon(int(name.removeprefix("long-")), seed)
    if name.startswith("dag30-"):
        parts = name.split("-")
        return dag(parts[1], preempt="preempt" in parts, seed=seed)
    if name in ("quarter-100", "quarter-200"):
        return lab_quarter(int(name.removeprefix("quarter-")) // 10, seed)
    if name == "quarter-200-terms":
        return lab_quarter(20, seed, reserved_share=TERMS_RESERVED_SHARE)
    if name == "year-seg":
        return with_segments(long_horizon(8760, seed), "pretraining", 3)
    raise KeyError(f"no generated instance named {name!r}")


def load(name: str, seed: int = 0) -> Any:
    """The validated instance (``planner.Instance``) for a benchmark name: a shipped file read
    with ``planner.read``, or a generated document read with ``from_dict`` (relative CSV paths
    resolved from the repository root)."""
    import planner
    from planner.instance.read import from_dict

    if name in FAMILIES["shipped"]:
        return planner.read(SHIPPED / f"{name}.yaml")
    return from_dict(document(name, seed), f"<bench {name} seed {seed}>", ROOT)


def scale_capacity(d: dict[str, Any], factor: float) -> dict[str, Any]:
    """A copy with every (region, GPU) capacity multiplied by ``factor`` and rounded down
    (whole GPUs), hour by hour."""
    out = copy.deepcopy(d)
    for region in out["regions"].values():
        cap = region["capacity"]
        for g, v in cap.items():
            cap[g] = [int(x * factor) for x in v] if isinstance(v, list) else int(v * factor)
    out["name"] = f"{d['name']}-cap{factor:g}"
    out["description"] = f"{d['description']}; capacity x{factor:g} (rounded down)"
    return out


def copies(d: dict[str, Any], k: int) -> dict[str, Any]:
    """``k`` copies of every phase (names prefixed ``c1.`` .. ``ck.``, predecessors renamed
    with them), same windows, same pools: k teams crowd the same capacity."""
    out = copy.deepcopy(d)
    phases = []
    for i in range(1, k + 1):
        for ph in d["phases"]:
            c = copy.deepcopy(ph)
            c["name"] = f"c{i}.{ph['name']}"
            c["predecessors"] = [f"c{i}.{q}" for q in ph["predecessors"]]
            phases.append(c)
    out["phases"] = phases
    out["name"] = f"{d['name']}-x{k}"
    out["description"] = f"{d['description']}; {k} copies of its phases sharing the pools"
    return out


def tighten(
    d: dict[str, Any], rng: random.Random, slack: tuple[float, float] = (1.05, 1.2)
) -> dict[str, Any]:
    """A copy whose deadlines are ``slack`` (default 1.05-1.2) x the fastest finish of each
    phase plus 2 h, instead of the sizes' 1.4-2x: little room to wait for cheap hours or to
    move work out of a full pool."""
    out = copy.deepcopy(d)
    for ph in out["phases"]:
        ph.pop("deadline", None)
    finish = _fastest_finish(out)
    hours = out["horizon"]["hours"]
    for ph in out["phases"]:
        ph["deadline"] = int(min(hours, math.ceil(finish[ph["name"]] * rng.uniform(*slack)) + 2))
    out["name"] = f"{d['name']}-tight"
    out["description"] = (
        f"{d['description']}; deadlines {slack[0]:g}-{slack[1]:g}x the fastest finish"
    )
    return out


def with_segments(d: dict[str, Any], kind: str, segments: int) -> dict[str, Any]:
    """A copy in which every phase of ``kind`` may change configuration at checkpoints, in up
    to ``segments`` segments (region, GPU count and the rest: ``segment_changes`` default)."""
    out = copy.deepcopy(d)
    for ph in out["phases"]:
        if ph["kind"] == kind:
            ph["options"]["max_segments"] = segments
    out["name"] = f"{d['name']}-seg{segments}"
    out["description"] = f"{d['description']}; {kind} phases in up to {segments} segments"
    return out


def medium_compete(seed: int = 0) -> dict[str, Any]:
    """medium's size (8 phases x 40 configurations x 336 h, the same three markets and pools)
    as three pipelines (data preparation -> validation -> pre-training, twice, and data
    preparation -> validation), each scaled so that its fastest schedule takes 55% of the
    horizon: the pipelines run at the same time and want the same pools, where medium is one
    chain whose phases never overlap."""
    return _generated("medium-compete", 8, 40, 336, seed, pipelines=3)


# ----------------------------------------------------------------------------- long horizons

#: Ten of the twelve markets (US-CAL-CISO and US-NY-NYIS left out: their timestamps look
#: shifted, instances/data/SOURCES.md).
LONG_MARKETS = _markets(
    "US-TEX-ERCO", "DE-LU", "JP-TK", "SG", "ES", "FR", "NL", "US-MIDA-PJM", "AU-NSW", "CA-ON"
)
LONG_KINDS = [
    "data_preparation",
    "validation",
    "pretraining",
    "fine_tuning",
    "evaluation",
    "fine_tuning",
    "evaluation",
    "validation",
    "fine_tuning",
    "evaluation",
]


def _capacity_series(base: int, tz: str, start: datetime, hours: int) -> list[int]:
    """GPUs free per hour: 25% taken by other tenants 09:00-18:00 local, half the pool in a
    maintenance window on Thursdays 02:00-06:00 local (local time with daylight saving)."""
    zone = ZoneInfo(tz)
    out = []
    for t in range(hours):
        local = (start + timedelta(hours=t)).astimezone(zone)
        busy = 0.25 if 9 <= local.hour < 18 else 0.0
        maint = 0.5 if local.weekday() == 3 and 2 <= local.hour < 6 else 0.0
        out.append(int(base * (1 - busy - maint)))
    return out


def long_horizon(hours: int, seed: int = 0) -> dict[str, Any]:
    """50 phases (five pipelines of ten) over ``hours`` hours from 2023-01-01 00:00 UTC in ten
    markets, with the full-year 2023 prices (instances/data/prices/price_<market>_2023.csv,
    read through the reader's CSV series, paths relative to the repository root).

    Pipeline p is released at p x 12% of the horizon; its work is scaled so that its fastest
    schedule takes 30% of the horizon; deadlines are 1.4-2x the fastest finish after the
    release, capped at the horizon (fastest configurations found on the first market,
    :func:`_one_market`, among those that fit their pool in every hour: ``steady`` in
    :func:`_fastest_finish`, so that the instance is feasible). H100 and A100 capacity follow
    a local daily cycle and a weekly maintenance window (:func:`_capacity_series`); L4
    capacity is constant. Other choices (GPU prices, models, options) are those of the named
    sizes."""
    rng = random.Random(f"long-{hours}-{seed}")
    start = datetime(2023, 1, 1, tzinfo=UTC)
    n_pipes, per_pipe, n_configs = 5, 10, 80
    regions: dict[str, Any] = {}
    for market, tz, pue in LONG_MARKETS:
        regions[market] = {
            "timezone": tz,
            "pue": pue,
            "electricity": _year_prices(market),
            "price_adder_usd_per_mwh": 30.0,
            "capacity": {
                "H100": _capacity_series(256, tz, start, hours),
                "A100": _capacity_series(256, tz, start, hours),
                "L4": 64,
            },
            "offers": {
                g: {
                    "on_demand": {"usd_per_gpu_hour": round(PRICE[g] * rng.uniform(0.9, 1.1), 3)},
                    "spot": {
                        "usd_per_gpu_hour": round(PRICE[g] * 0.45, 3),
                        "preemptions_per_hour": 0.02,
                    },
                }
                for g in GPUS
            },
            "storage": two_tiers(),
        }
    phases: list[dict[str, Any]] = []
    for pipe in range(n_pipes):
        release = round(pipe * 0.12 * hours)
        for step, kind in enumerate(LONG_KINDS[:per_pipe]):
            phases.append(
                _phase(rng, f"p{pipe}-{step}-{kind}", kind, hours, n_configs, len(LONG_MARKETS))
            )
            phases[-1]["release"] = release
            phases[-1]["predecessors"] = [phases[-2]["name"]] if step else []
    d: dict[str, Any] = {
        "name": f"bench-long-{hours}-{seed}",
        "description": (
            f"generated long-horizon benchmark instance: {hours} h, {len(phases)} phases, "
            f"{len(LONG_MARKETS)} markets, seed {seed}"
        ),
        "horizon": {"start": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "hours": hours},
        "gpu_types": GPUS,
        "regions": regions,
        "models": MODELS,
        "phases": phases,
    }
    return _with_deadlines(d, rng, hours)


MODELS = {
    "m1b": {"layers": 24, "hidden": 2048, "heads": 16, "seq_len": 2048},
    "m7b": {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
    "m13b": {"layers": 40, "hidden": 5120, "heads": 40, "seq_len": 4096},
}


def _phase(
    rng: random.Random, name: str, kind: str, hours: int, n_configs: int, n_regions: int
) -> dict[str, Any]:
    """One phase as the named sizes build it (work before scaling, options, MFU)."""
    model = rng.choice(["m1b", "m7b"]) if kind != "pretraining" else rng.choice(["m7b", "m13b"])
    if kind == "pretraining":
        counts = [8, 16, 32, 64, 128, 256]
        work: dict[str, Any] = {"tokens": round(rng.uniform(0.3, 0.8) * 20e9, -6)}
        gpu_types = ["H100", "A100"]
    elif kind == "data_preparation":
        counts = [1, 2, 4, 8, 16, 32]
        work = {"gpu_hours": round(rng.uniform(50, 200)), "gpu": "A100"}
        gpu_types = ["A100", "L4"]
    elif kind == "evaluation":
        counts = [1, 2, 4, 8, 16, 32]
        work = {"tokens": round(rng.uniform(0.5, 2) * 1e9, -6), "passes": "forward"}
        gpu_types = ["A100", "L4"]
    else:
        counts = [8, 16, 32, 64, 128]
        work = {"tokens": round(rng.uniform(0.5, 2.0) * 1e9, -6)}
        gpu_types = ["H100", "A100"]
    preemptible = kind in ("data_preparation", "validation", "evaluation")
    per_count = n_regions * len(gpu_types) * 2 * (2 if preemptible else 1)
    keep = max(1, min(len(counts), round(n_configs / per_count)))
    phase: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "work": work,
        "predecessors": [],
        "gpu_types": gpu_types,
        "preemptible": preemptible,
        "options": {
            "gpu_counts": counts[-keep:],
            "tensor_parallel": [1, 2, 4, 8],
            "contracts": ["on_demand", "spot"],
            "extra_spare_nodes": [0],
            "recompute": ["selective", "full"],
            "zero": [1, 3],
        },
        "mfu": {"H100": 0.38, "A100": 0.45, "L4": 0.4},
    }
    if kind == "data_preparation":
        phase["data"] = {"size_gb": 2000, "read_passes": 1}
    else:
        phase["model"] = model
    return phase


def _one_market(d: dict[str, Any]) -> dict[str, Any]:
    """The document with its first market only (phases shared, not copied). The long-horizon
    markets have the same GPU types, storage tiers and capacity levels, so a phase's fastest
    configuration takes as many hours there as anywhere; building the configuration space of
    one market instead of ten makes generating the instance ten times faster."""
    first = next(iter(d["regions"]))
    return {**d, "regions": {first: d["regions"][first]}}


def _scale_work(d: dict[str, Any], share: float) -> dict[str, float]:
    """Scale each pipeline's work (pipeline = the name's prefix before the first '-') so that
    its fastest schedule, from its release, takes about ``share`` of the horizon (within 10%);
    returns the fastest finish per phase of the scaled document (on its first market)."""
    hours = d["horizon"]["hours"]
    target = share * hours
    for _ in range(4):
        finish = _fastest_finish(_one_market(d), steady=True)
        span: dict[str, float] = {}
        for ph in d["phases"]:
            pipe = ph["name"].split("-")[0]
            took = finish[ph["name"]] - float(ph.get("release", 0))
            span[pipe] = max(span.get(pipe, 0.0), took)
        if all(abs(f - target) < 0.1 * target for f in span.values()):
            return finish
        for ph in d["phases"]:
            k = target / max(span[ph["name"].split("-")[0]], 1.0)
            w = ph["work"]
            for key in ("tokens", "gpu_hours"):
                if key in w:
                    w[key] = float(f"{w[key] * k:.4g}")
    return _fastest_finish(_one_market(d), steady=True)


# ----------------------------------------------------------------------------- a lab's quarter

#: The quarter's GPU types: the sizes' three and the L40S (datasheet figures as in
#: planner/data/gpus.yaml: 362.05 dense bf16 TFLOPS, 350 W, 48 GB).
QUARTER_GPUS: dict[str, dict[str, Any]] = {
    **GPUS,
    "L40S": {
        "memory_gb": 48,
        "peak_tflops": {"bf16": 362.05, "fp8": 733.0},
        "board_power_w": 350,
        "idle_power_w": 35,
        "gpus_per_node": 8,
        "node_overhead_w": 1000,
        "family": "nvidia",
    },
}
#: On-demand USD per GPU-hour of the quarter's GPU types (the sizes' and the catalog's L40S
#: rounded: 1.95).
QUARTER_PRICE = {**PRICE, "L40S": 1.95}
#: Capacity of each pool before other tenants and maintenance (GPUs per region).
QUARTER_POOL = {"H100": 256, "A100": 256, "L40S": 128, "L4": 128}
QUARTER_HOURS = 2190
#: 2023-04-03 00:00 UTC, a Monday: the second quarter of the full-year 2023 price files.
QUARTER_START = datetime(2023, 4, 3, tzinfo=UTC)
#: A team's pipeline (10 phases): (kind, step name, predecessors by step name).
TEAM_PIPELINE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("data_preparation", "prep", ()),
    ("validation", "data-check", ("prep",)),
    ("pretraining", "pretrain", ("prep",)),
    ("fine_tuning", "ft-chat", ("pretrain",)),
    ("fine_tuning", "ft-code", ("pretrain",)),
    ("fine_tuning", "ft-math", ("pretrain",)),
    ("evaluation", "eval-chat", ("ft-chat",)),
    ("evaluation", "eval-code", ("ft-code",)),
    ("evaluation", "eval-math", ("ft-math",)),
    ("evaluation", "eval-report", ("eval-chat", "eval-code", "eval-math")),
)
#: Reserved capacity per region on H100 and A100: one commitment for the quarter (2,190 h)
#: priced at 65% of on-demand, bought as a decision (0 or 64-256 GPUs per pool), paid
#: whether used or not.
QUARTER_RESERVED_SHARE = 0.65
#: ... and at 40% in the quarter where commitments pay ("quarter-200-terms"): a pool then pays
#: once it is busy 40% of its hours, and 120 s plans buy three.
TERMS_RESERVED_SHARE = 0.40


def lab_quarter(
    teams: int = 20, seed: int = 0, reserved_share: float | None = None
) -> dict[str, Any]:
    """A lab's quarter: ``teams`` pipelines of ten phases each (data preparation, a data
    check, pre-training, three fine-tunes each with its evaluation, a report evaluation after
    them), 2,190 hours from 2023-04-03 in the ten long-horizon markets with their real
    full-year 2023 prices (CSV series), four GPU types per region in pools that the teams
    share, on demand, spot and a reserved commitment for the quarter on H100 and A100
    bought as a decision (0 or 64-256 GPUs per pool), at ``reserved_share`` of the on-demand
    price (QUARTER_RESERVED_SHARE by default; the "-terms" instance: TERMS_RESERVED_SHARE).

    Team i is released at i / teams x 45% of the quarter; its work is scaled so that its
    fastest schedule takes 30% of the quarter from its release, and deadlines are 1.4-2x the
    fastest finish after the release (capped at the horizon), as for the long horizons. With
    20 teams about a third of them want the cheap pools at once: capacity binds (the suite
    prints how close the plan comes to every pool)."""
    rng = random.Random(f"quarter-{teams}-{seed}")
    share = QUARTER_RESERVED_SHARE if reserved_share is None else reserved_share
    hours = QUARTER_HOURS
    start = QUARTER_START
    regions: dict[str, Any] = {}
    for market, tz, pue in LONG_MARKETS:
        factor = rng.uniform(0.9, 1.1)
        offers: dict[str, Any] = {}
        for g in QUARTER_GPUS:
            od = round(QUARTER_PRICE[g] * factor, 3)
            offers[g] = {
                "on_demand": {"usd_per_gpu_hour": od},
                "spot": {"usd_per_gpu_hour": round(od * 0.45, 3), "preemptions_per_hour": 0.02},
            }
            if g in ("H100", "A100"):
                offers[g]["reserved"] = {
                    "usd_per_gpu_hour": round(od * share, 3),
                    "min_gpus": 64,
                    "max_gpus": QUARTER_POOL[g],
                    "terms": [{"name": "q2", "start": 0, "hours": hours}],
                }
        regions[market] = {
            "timezone": tz,
            "pue": pue,
            "electricity": _year_prices(market),
            "price_adder_usd_per_mwh": 30.0,
            "capacity": {
                g: _capacity_series(QUARTER_POOL[g], tz, start, hours) for g in QUARTER_GPUS
            },
            "offers": offers,
            "storage": two_tiers(),
        }
    phases: list[dict[str, Any]] = []
    for team in range(teams):
        release = round(team / teams * 0.45 * hours)
        for kind, step, preds in TEAM_PIPELINE:
            ph = _phase(rng, f"t{team:02d}-{step}", kind, hours, 60, len(LONG_MARKETS))
            if kind == "validation":  # the data check reads the data: a forward pass
                ph["work"]["passes"] = "forward"
            if kind == "evaluation":
                ph["gpu_types"] = ["L4", "L40S"]
            elif kind == "fine_tuning":
                ph["gpu_types"] = ["H100", "A100", "L40S"]
                ph["mfu"]["L40S"] = 0.35
            else:
                ph["mfu"]["L40S"] = 0.35
            if kind in ("pretraining", "fine_tuning"):
                ph["options"]["contracts"] = ["on_demand", "spot", "reserved"]
            ph["release"] = release
            ph["predecessors"] = [f"t{team:02d}-{q}" for q in preds]
            phases.append(ph)
    d: dict[str, Any] = {
        "name": f"bench-quarter-{teams}x10-{seed}" + ("" if reserved_share is None else "-terms"),
        "description": (
            f"generated lab quarter: {teams} teams' pipelines ({len(phases)} phases), "
            f"{hours} h, {len(LONG_MARKETS)} markets x {len(QUARTER_GPUS)} GPU types, "
            f"reserved terms, seed {seed}"
        ),
        "horizon": {"start": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "hours": hours},
        "gpu_types": QUARTER_GPUS,
        "regions": regions,
        "models": MODELS,
        "phases": phases,
    }
    return _with_deadlines(d, rng, hours)


# ----------------------------------------------------------------------------- DAG

#: Markets of the DAG instances (those of week-7b): (market, IANA zone, PUE).
DAG_MARKETS = [
    ("US-TEX-ERCO", "America/Chicago", 1.35),
    ("DE-LU", "Europe/Berlin", 1.2),
    ("JP-TK", "Asia/Tokyo", 1.4),
]
DAG_TASKS = 30
DAG_HOURS = 168
#: The 1-hour task (0.5 A100-hours on one A100) that the "-preempt" variants mark preemptible.
DAG_ONE_HOUR = "t07-smoke-test"


def _tou_from_prices(market: str, tz: str, start_index: int, hours: int) -> dict[str, Any]:
    """A time-of-use tariff fitted to the real prices of the week: the mean price of weekday
    hours 08:00-20:00 local (the day band), of the other weekday hours (the default) and of
    weekend hours (the weekend price), USD/MWh, rounded to cents. (With solar in the mix the
    day band need not be the dearer one: in Germany that June week it is the cheaper.)"""
    vals = _prices(market, start_index, hours)
    zone = ZoneInfo(tz)
    t0 = datetime(2023, 6, 1, tzinfo=UTC) + timedelta(hours=start_index)
    peak, off, weekend = [], [], []
    for t, v in enumerate(vals):
        local = (t0 + timedelta(hours=t)).astimezone(zone)
        if local.weekday() >= 5:
            weekend.append(v)
        elif 8 <= local.hour < 20:
            peak.append(v)
        else:
            off.append(v)
    return {
        "default": round(sum(off) / len(off), 2),
        "bands": [
            {
                "start_hour": 8,
                "end_hour": 20,
                "price": round(sum(peak) / len(peak), 2),
                "weekdays": [0, 1, 2, 3, 4],
            }
        ],
        "weekend": round(sum(weekend) / len(weekend), 2),
    }


def dag(prices: str, preempt: bool = False, seed: int = 0) -> dict[str, Any]:
    """A 30-task DAG on three markets over one week (from Mon 2023-06-05), non-preemptive
    tasks (data preparation, fine-tuning, evaluation measured in GPU-hours) each with 1-2
    predecessors among the six before it, capacity far above any plan's use (1,024 GPUs of
    each type per market), deadlines 1.5x the fastest finish of the whole DAG.

    ``prices``: "static" (each market's mean price of that week, a constant) or "tou" (a
    three-level time-of-use tariff fitted to the week's real prices, :func:`_tou_from_prices`).
    ``preempt``: the 1-hour task ``DAG_ONE_HOUR`` is marked preemptible (nothing else changes)."""
    if prices not in ("static", "tou"):
        raise KeyError(f"dag prices must be 'static' or 'tou', got {prices!r}")
    rng = random.Random(f"dag30-{seed}")  # the same tasks for every variant
    start_index = 24 * 4  # 2023-06-05 00:00 UTC, a Monday
    regions: dict[str, Any] = {}
    for market, tz, pue in DAG_MARKETS:
        week = _prices(market, start_index, DAG_HOURS)
        electricity: dict[str, Any] = (
            {"constant": round(sum(week) / len(week), 2)}
            if prices == "static"
            else {"tou": _tou_from_prices(market, tz, start_index, DAG_HOURS)}
        )
        regions[market] = {
            "timezone": tz,
            "pue": pue,
            "electricity": electricity,
            "price_adder_usd_per_mwh": 30.0,
            "capacity": {"H100": 1024, "A100": 1024, "L4": 1024},
            "offers": {
                g: {"on_demand": {"usd_per_gpu_hour": round(PRICE[g] * rng.uniform(0.9, 1.1), 3)}}
                for g in GPUS
            },
            "storage": {
                "hot": {"usd_per_gb_month": 0.08, "write_gb_per_s": 10.0, "read_gb_per_s": 10.0}
            },
        }
    phases: list[dict[str, Any]] = []
    for k in range(DAG_TASKS):
        kind = ("data_preparation", "fine_tuning", "evaluation")[k % 3]
        name = f"t{k:02d}-{kind}"
        if kind == "data_preparation":
            work = {"gpu_hours": float(rng.randint(8, 64)), "gpu": "A100"}
            gpu_types, counts = ["A100", "L4"], [1, 2, 4, 8]
        elif kind == "fine_tuning":
            work = {"gpu_hours": float(rng.randint(16, 128)), "gpu": "H100"}
            gpu_types, counts = ["H100", "A100"], [4, 8, 16]
        else:
            work = {"gpu_hours": float(rng.randint(2, 16)), "gpu": "A100"}
            gpu_types, counts = ["A100", "L4"], [1, 2, 4]
        if k == 7:  # the 1-hour task: 0.5 A100-hours on one A100
            name, work, gpu_types, counts = (
                DAG_ONE_HOUR,
                {"gpu_hours": 0.5, "gpu": "A100"},
                ["A100"],
                [1],
            )
        earlier = [p["name"] for p in phases[max(0, k - 6) :]]
        preds = rng.sample(earlier, min(len(earlier), rng.choice([1, 2]))) if k >= 3 else []
        phases.append(
            {
                "name": name,
                "kind": kind,
                "work": work,
                "predecessors": sorted(preds),
                "gpu_types": gpu_types,
                "preemptible": preempt and name == DAG_ONE_HOUR,
                "options": {
                    "gpu_counts": counts,
                    "contracts": ["on_demand"],
                    "extra_spare_nodes": [0],
                },
            }
        )
    d: dict[str, Any] = {
        "name": f"bench-dag30-{prices}{'-preempt' if preempt else ''}-{seed}",
        "description": (
            f"generated 30-task DAG, {prices} prices"
            + (f", {DAG_ONE_HOUR} preemptible" if preempt else "")
            + f", seed {seed}"
        ),
        "horizon": {"start": "2023-06-05T00:00:00Z", "hours": DAG_HOURS},
        "gpu_types": GPUS,
        "regions": regions,
        "phases": phases,
    }
    makespan = max(_fastest_finish(d).values())
    for ph in d["phases"]:
        ph["deadline"] = int(min(DAG_HOURS, math.ceil(1.5 * makespan)))
    return d


# ----------------------------------------------------------------------------- files


def write(size: str, seed: int, path: Path) -> Path:
    """Write a generated instance as YAML; CSV paths are made relative to the file's folder
    (the reader resolves them from there)."""
    import os

    import yaml

    d = document(size, seed)
    for region in d["regions"].values():
        for key in ("electricity", "carbon_intensity"):
            series = region.get(key)
            if isinstance(series, dict) and "csv" in series:
                series["csv"] = os.path.relpath(ROOT / series["csv"], path.resolve().parent)
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    """``generate.py NAME [OUT] [--seed N]``: write one generated instance as YAML (the
    families' other seeds are the instances the project does not ship)."""
    import argparse

    generated = [n for n in names() if n not in FAMILIES["shipped"]]
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("name", nargs="?", default="small", help="one of: " + ", ".join(generated))
    ap.add_argument("out", nargs="?", type=Path, help="file to write (bench-NAME[-sSEED].yaml)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if a.name not in generated:
        ap.error(f"no generated instance named {a.name!r}; choose from {', '.join(generated)}")
    suffix = f"-s{a.seed}" if a.seed else ""
    out = a.out if a.out is not None else Path(f"bench-{a.name}{suffix}.yaml")
    print(write(a.name, a.seed, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
