"""Small random instances across every feature, for the property tests
(tests/solvers/test_properties.py).

:func:`instances` draws a valid instance document: one or two regions and GPU types, hourly
prices in every series form (constant, time-of-use bands, inline hourly values), carbon
intensity and caps, capacity by the hour, on-demand / spot / reserved offers with billing
blocks, minimum rentals and reserved terms, storage tiers with retrieval prices, transfers,
failures with checkpoints and spares, chains and diamonds of phases that may pause, change
configuration at checkpoints (segments), pay licences and porting, and re-planned phases with
progress and a running configuration, sites that meter or include power, the value of
time and deadlines with a confidence. Every money figure of the document is a field listed in
:func:`scale_money`, so scaling them all by k scales the cost of every plan by k.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

START = "2023-06-05T00:00:00Z"  # a Monday
GPU_NAMES = ("G", "H")
REGION_NAMES = ("a", "b")


def _gpu(draw: Callable[..., Any], name: str) -> dict[str, Any]:
    return {
        "memory_gb": 80,
        "peak_tflops": {"bf16": draw(st.sampled_from([100.0, 200.0]))},
        "board_power_w": draw(st.sampled_from([500, 1000])),
        "idle_power_w": draw(st.sampled_from([0, 100])),
        "gpus_per_node": draw(st.sampled_from([2, 4])),
        "node_overhead_w": draw(st.sampled_from([0, 200])),
        "failures_per_gpu_hour": draw(st.sampled_from([0.0, 0.0, 1e-3, 5e-3])),
        "family": "nvidia" if name == "G" else draw(st.sampled_from(["nvidia", "other"])),
        "inter_node_gb_per_s": 10.0,
    }


def _money(draw: Callable[..., Any], hours: int, low: float, high: float) -> Any:
    """A price in one of the series forms (or a plain number)."""
    kind = draw(st.sampled_from(["number", "constant", "tou", "values"]))
    value = st.integers(int(low * 100), int(high * 100)).map(lambda c: c / 100)
    if kind == "number":
        return draw(value)
    if kind == "constant":
        return {"constant": draw(value)}
    if kind == "tou":
        s = draw(st.integers(0, 23))
        e = draw(st.integers(0, 24).filter(lambda x: x != s))
        return {
            "tou": {
                "default": draw(value),
                "bands": [{"start_hour": s, "end_hour": e, "price": draw(value)}],
            }
        }
    return {"values": draw(st.lists(value, min_size=hours, max_size=hours))}


def _series(draw: Callable[..., Any], hours: int, low: float, high: float) -> dict[str, Any]:
    s = _money(draw, hours, low, high)
    return {"constant": s} if isinstance(s, float) else s


def _offers(draw: Callable[..., Any], hours: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "on_demand": {
            "usd_per_gpu_hour": _money(draw, hours, 0.5, 4.0),
            "billing_granularity_hours": draw(st.sampled_from([1, 1, 2])),
            "min_rental_hours": draw(st.sampled_from([0, 0, 3])),
        }
    }
    if draw(st.booleans()):
        out["spot"] = {
            "usd_per_gpu_hour": _money(draw, hours, 0.2, 2.0),
            "preemptions_per_hour": draw(st.sampled_from([0.0, 0.02, 0.1])),
        }
    if draw(st.integers(0, 3)) == 0:
        res: dict[str, Any] = {
            "usd_per_gpu_hour": draw(st.sampled_from([0.3, 0.8, 1.5])),
            "min_gpus": draw(st.sampled_from([0, 2])),
        }
        if draw(st.booleans()):
            res["terms"] = [
                {
                    "name": "t1",
                    "start": (t0 := draw(st.integers(-4, hours // 2))),
                    "hours": draw(st.integers(max(2, 1 - t0), hours)),
                    "usd_per_gpu_hour": draw(st.sampled_from([0.2, 0.6])),
                    "prorate": draw(st.booleans()),
                }
            ]
        out["reserved"] = res
    return out


def _region(
    draw: Callable[..., Any], hours: int, gpus: list[str], others: list[str]
) -> dict[str, Any]:
    cap = {}
    for g in gpus:
        if draw(st.booleans()):
            cap[g] = draw(st.sampled_from([4, 8, 16, 16]))
        else:
            cap[g] = draw(st.lists(st.sampled_from([8, 16, 16, 0]), min_size=hours, max_size=hours))
    storage: dict[str, Any] = {
        "hot": {
            "usd_per_gb_month": draw(st.sampled_from([0.0, 0.1])),
            "write_gb_per_s": 1.0,
            "read_gb_per_s": 1.0,
        }
    }
    if draw(st.booleans()):
        storage["cold"] = {
            "usd_per_gb_month": 0.01,
            "write_gb_per_s": 0.5,
            "read_gb_per_s": 0.5,
            "retrieval_usd_per_gb": draw(st.sampled_from([0.0, 0.02])),
        }
    r: dict[str, Any] = {
        "timezone": draw(st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"])),
        "pue": draw(st.sampled_from([1.0, 1.2])),
        "electricity": _series(draw, hours, 0.0, 300.0),
        "price_adder_usd_per_mwh": draw(st.sampled_from([0.0, 20.0])),
        "capacity": cap,
        "offers": {g: _offers(draw, hours) for g in gpus},
        "storage": storage,
        "default_transfer_usd_per_gb": draw(st.sampled_from([0.0, 0.02])),
        "default_link_gb_per_s": 1.0,
    }
    if draw(st.booleans()):
        r["carbon_intensity"] = _series(draw, hours, 50.0, 600.0)
    if others and draw(st.booleans()):
        r["transfer_usd_per_gb"] = {others[0]: draw(st.sampled_from([0.0, 0.05]))}
    if draw(st.integers(0, 4)) == 0:
        r["sla"] = {"provider_fault_share": 0.5, "credit_multiplier": 2.0}
    site = draw(st.sampled_from(["colocation", "colocation", "cloud", "own"]))
    r["site"] = site  # who pays the power: a cloud's offers include it by default
    if draw(st.integers(0, 3)) == 0:
        for offers in r["offers"].values():
            offers["on_demand"]["energy"] = draw(st.sampled_from(["metered", "included"]))
    return r


def _phase(
    draw: Callable[..., Any],
    k: int,
    hours: int,
    gpus: list[str],
    regions: list[str],
    predecessors: list[str],
) -> dict[str, Any]:
    preemptible = draw(st.booleans())
    counts = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3, unique=True))
    p: dict[str, Any] = {
        "name": f"p{k}",
        "kind": "data_preparation",
        "work": {"gpu_hours": float(draw(st.integers(2, 24))), "gpu": gpus[0]},
        "predecessors": predecessors,
        "preemptible": preemptible,
        "power_load": draw(st.sampled_from([0.5, 1.0])),
        "checkpoint_gb": draw(st.sampled_from([0, 0, 10, 40])),
        "output_gb": draw(st.sampled_from([0, 5])),
        "resume_overhead_hours": draw(st.sampled_from([0.0, 0.25])),
        "options": {
            "gpu_counts": sorted(counts),
            "extra_spare_nodes": draw(st.sampled_from([[0], [0, 1]])),
        },
    }
    if draw(st.integers(0, 3)) == 0:
        p["release"] = draw(st.integers(0, hours // 4))
    if draw(st.booleans()):
        p["deadline"] = draw(st.integers(hours // 2, hours))
    if draw(st.integers(0, 4)) == 0:
        p["redundancy"] = {"spare_nodes": 1}  # spares come in whole nodes: a count of 8 too
        p["options"]["gpu_counts"] = sorted({*counts, 8})
    if draw(st.integers(0, 4)) == 0:
        p["licence_usd_per_gpu_hour"] = 0.1
    if draw(st.integers(0, 3)) == 0:
        p["data"] = {"size_gb": 20, "home_region": draw(st.sampled_from(regions))}
    if draw(st.integers(0, 3)) == 0:
        p["options"]["contracts"] = draw(
            st.sampled_from([["on_demand"], ["on_demand", "spot"], ["on_demand", "reserved"]])
        )
    if draw(st.integers(0, 3)) == 0:
        p["options"]["checkpoint"] = draw(st.sampled_from([["sync"], ["async", "in_memory"]]))
    if draw(st.integers(0, 5)) == 0:
        p["usd_per_hour_early"] = draw(st.sampled_from([0.5, 5.0]))
    if "deadline" in p and draw(st.integers(0, 4)) == 0:
        p["deadline_confidence"] = draw(st.sampled_from([0.5, 0.9]))
    if draw(st.integers(0, 3)) == 0 and (len(regions) > 1 or len(counts) > 1 or len(gpus) > 1):
        p["options"]["max_segments"] = 2
        p["options"]["segment_changes"] = draw(
            st.sampled_from([["region"], ["gpus"], ["region", "gpus", "gpu_type", "contract"]])
        )
    return p


def _replanned(draw: Callable[..., Any], d: dict[str, Any]) -> None:
    """The first phase re-planned: some work done, running on a configuration the instance
    offers (its region, GPU type, on-demand contract, a listed count, the hot tier)."""
    p = d["phases"][0]
    region = draw(st.sampled_from(sorted(d["regions"])))
    gpu = draw(st.sampled_from(sorted(d["gpu_types"])))
    if "gpu_types" in p or "regions" in p:
        return
    p["progress"] = {"fraction": draw(st.sampled_from([0.25, 0.5]))}
    p["release"] = max(p.get("release", 0), draw(st.integers(0, 2)))
    run: dict[str, Any] = {
        "gpu": gpu,
        "region": region,
        "contract": "on_demand",
        "gpus": draw(st.sampled_from(p["options"]["gpu_counts"])),
        "tier": "hot",
        "zero": 0,
        "recompute": "none",
    }
    if draw(st.booleans()):
        run["checkpoint"] = (p["options"].get("checkpoint") or [d["failure"]["checkpoint"]])[0]
    if "redundancy" in p:  # a node of spares beside whole nodes
        run["gpus"] = 8
        run["spare_gpus"] = d["gpu_types"][gpu]["gpus_per_node"]
    p["running"] = run


@st.composite
def instances(draw: Callable[..., Any]) -> dict[str, Any]:
    """A valid instance document (module docstring)."""
    hours = draw(st.integers(6, 16))
    gpus = list(GPU_NAMES[: draw(st.integers(1, 2))])
    regions = list(REGION_NAMES[: draw(st.integers(1, 2))])
    d: dict[str, Any] = {
        "name": "prop",
        "horizon": {"start": START, "hours": hours},
        "gpu_types": {g: _gpu(draw, g) for g in gpus},
        "regions": {r: _region(draw, hours, gpus, [o for o in regions if o != r]) for r in regions},
        "failure": {
            "restart_hours": draw(st.sampled_from([0.0, 0.1])),
            "detect_hours": 0.0,
            "checkpoint": draw(st.sampled_from(["sync", "async"])),
        },
        "phases": [],
    }
    shape = draw(st.sampled_from(["one", "chain", "parallel", "diamond"]))
    preds = {
        "one": [[]],
        "chain": [[], ["p0"], ["p1"]],
        "parallel": [[], []],
        "diamond": [[], ["p0"], ["p0"], ["p1", "p2"]],
    }[shape]
    for k, pr in enumerate(preds):
        d["phases"].append(_phase(draw, k, hours, gpus, regions, pr))
    if "other" in {g.get("family") for g in d["gpu_types"].values()}:
        d["families"] = {"other": {"porting_usd": 5.0}}
    obj: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        obj["carbon_usd_per_tonne"] = draw(st.sampled_from([0.0, 100.0]))
    if draw(st.integers(0, 2)) == 0:
        obj["carbon_cap_tonnes"] = draw(st.sampled_from([0.0005, 0.005, 0.05]))
    if draw(st.integers(0, 4)) == 0:
        obj["usd_per_hour_early"] = draw(st.sampled_from([0.2, 2.0]))
    if obj:
        d["objective"] = obj
    if draw(st.integers(0, 3)) == 0:
        _replanned(draw, d)
    return d


# ----------------------------------------------------------------------------- variants


def _scale_value(v: Any, k: float) -> Any:
    """A number or series form scaled by k."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v * k
    v = copy.deepcopy(v)
    if "constant" in v:
        v["constant"] *= k
    elif "values" in v:
        v["values"] = [x * k for x in v["values"]]
    elif "tou" in v:
        v["tou"]["default"] *= k
        for b in v["tou"]["bands"]:
            b["price"] *= k
    return v


def scale_money(d: dict[str, Any], k: float) -> dict[str, Any]:
    """Every money figure of an :func:`instances` document times k: rental (every offer and
    term), electricity (series and adder), storage and retrieval, transfers, licences,
    porting, the carbon price, the value of an hour. A plan's cost is linear in them, so
    every plan costs k times as much and the optimum is k times the optimum."""
    d = copy.deepcopy(d)
    for r in d["regions"].values():
        r["electricity"] = _scale_value(r["electricity"], k)
        r["price_adder_usd_per_mwh"] *= k
        r["default_transfer_usd_per_gb"] *= k
        for dst in r.get("transfer_usd_per_gb", {}):
            r["transfer_usd_per_gb"][dst] *= k
        for tier in r["storage"].values():
            tier["usd_per_gb_month"] *= k
            if "retrieval_usd_per_gb" in tier:
                tier["retrieval_usd_per_gb"] *= k
        for offers in r["offers"].values():
            for kind in ("on_demand", "spot", "reserved"):
                if kind in offers:
                    o = offers[kind]
                    o["usd_per_gpu_hour"] = _scale_value(o["usd_per_gpu_hour"], k)
                    for t in o.get("terms", []):
                        t["usd_per_gpu_hour"] = _scale_value(t["usd_per_gpu_hour"], k)
    for p in d["phases"]:
        for key in ("licence_usd_per_gpu_hour", "usd_per_hour_early"):
            if key in p:
                p[key] *= k
    for f in d.get("families", {}).values():
        f["porting_usd"] *= k
    for key in ("carbon_usd_per_tonne", "usd_per_hour_early"):
        if key in d.get("objective", {}):
            d["objective"][key] *= k
    return d


def tighter(d: dict[str, Any], what: str, draw: Callable[..., Any]) -> dict[str, Any] | None:
    """A variant with one constraint tighter (None when the draw cannot tighten it): "cap" (a
    carbon cap below the current one, or a first one), "deadline" (a phase's deadline earlier
    by 1-3 hours, not before its release), "capacity" (one pool's capacity lower)."""
    d = copy.deepcopy(d)
    hours = d["horizon"]["hours"]
    if what == "cap":
        obj = d.setdefault("objective", {})
        cap = obj.get("carbon_cap_tonnes")
        obj["carbon_cap_tonnes"] = draw(st.sampled_from([0.001, 0.01])) if cap is None else cap / 2
        return d
    if what == "deadline":
        p = draw(st.sampled_from(d["phases"]))
        now = p.get("deadline", hours)
        new = now - draw(st.integers(1, 3))
        if new <= p.get("release", 0):
            return None
        p["deadline"] = new
        return d
    r = draw(st.sampled_from(sorted(d["regions"])))
    g = draw(st.sampled_from(sorted(d["regions"][r]["capacity"])))
    cap = d["regions"][r]["capacity"][g]
    if isinstance(cap, list):
        d["regions"][r]["capacity"][g] = [max(0, c - 4) for c in cap]
    else:
        d["regions"][r]["capacity"][g] = max(0, cap - 4)
    return d


@st.composite
def several_pipelines(draw: Callable[..., Any]) -> dict[str, Any]:
    """An instance whose phases form at least two precedence components (independent
    pipelines, which the component descent and its ejections place): where
    :func:`instances` draws one, a copy of its last phase with no predecessors (and no
    progress or running configuration of its own) is added beside it."""
    d = draw(instances())
    phases = d["phases"]
    if len(phases) == 1 or all(p.get("predecessors") for p in phases[1:]):
        extra = copy.deepcopy(phases[-1])
        extra["name"] = "q0"
        for key in ("predecessors", "progress", "running"):
            extra.pop(key, None)
        phases.append(extra)
    return d
