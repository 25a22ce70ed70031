"""What each cost lever of the seed article is worth on one instance.

The article (docs: the seed digest) claims that combining its levers cut a team's hidden
training cost by 45%. This module measures the levers on the user's own instance instead of
asserting them: it builds a *lever-free baseline* (the plan a team would make by hand), then
switches each lever on alone, then all of them together, and costs every plan with
:func:`planner.costs.cost_plan`.

The baseline, lever by lever (each restriction is an instance transformation through
:meth:`Instance.replace`, except time shifting, which is the scheduling rule):

=============== ======= ===================================================================
lever           article lever-free baseline
=============== ======= ===================================================================
time_shifting   1.2     every phase as soon as possible, in one contiguous run: the greedy
                        list schedule with ``first_start_only`` (no waiting for cheap hours,
                        no pauses). With the lever on, the hourly MILP places the hours.
cooling         1.1     air-cooled PUE 1.58 (Uptime Institute 2023 average) in every region
                        whose PUE is better; a region already worse keeps its own.
precision       1.3/5.1 ``bf16`` (else the first allowed precision the GPU supports), and the
                        simplest ZeRO stage / recomputation that fits memory, tried in the
                        order recompute none < selective < full, ZeRO 0 < 1 < 2 < 3.
gpu_type        2.1     one GPU type for every phase: the most capable (highest peak TFLOPS
                        at the phase's precision, then most memory) allowed for the main
                        phase (the phase with the most FLOPs) and offered with capacity; a
                        phase that may not use it keeps its own most capable allowed type.
elastic         2.2     whole nodes only and one GPU count per phase: the smallest whole-node
                        count that fits (no fractional GPUs, no sub-node counts); when that
                        misses a deadline, any whole-node count at least as large.
storage         2.3     only the dearest ("hot") storage tier in every region, no checkpoint
                        compression (``storage.compression_ratio`` 1).
spares          4.1     only the spare nodes ``redundancy.spare_nodes`` requires.
contracts       6.2     on-demand only (no spot, no reserved capacity).
region          1.2     one region for every phase: where one GPU-hour of the baseline GPU
                        costs least on demand at the region's mean electricity price
                        (rental + board power x PUE x mean price); a phase that may not run
                        there keeps its own cheapest allowed region.
follow_sun      1.2     one configuration for the whole run (``max_segments: 1``). With the
                        lever on, a phase the instance lets run in segments may move between
                        regions at checkpoints (``segment_changes: [region]``), each move a
                        migration (docs/cost-model.md, "Segments").
elastic_scaling 2.2     as follow_sun; with the lever on, a phase in segments may change its
                        GPU count (and layout) at checkpoints: more GPUs in cheap hours,
                        fewer in dear ones (CarbonScaler-style).
=============== ======= ===================================================================

The two segment levers exist for phases whose ``options.max_segments`` is above 1; they are
measured with the hourly MILP (the only model of segments), so with time shifting on, and
with the choice they change at checkpoints on too (region choice for follow_sun, elastic GPU
counts for elastic_scaling): their own worth is their saving minus those levers'
(:attr:`LeverRun.note` says so). With both on, a phase may change what its
``segment_changes`` allows.

When the fully restricted phase has no configuration (its memory, window or capacity rules
every lever-free setting out), the phase keeps its own options for the levers that stop it,
dropped in the order elastic, precision, region, gpu_type, contracts. When the baseline
schedule then misses a deadline or capacity, the least loosening that gives one is searched:
whole-node counts instead of one count, then one phase-level lever kept for every phase, then
two, then all. A lever the baseline keeps is reported as such (it is part of the baseline, not
a saving); every step is in :attr:`LeverReport.notes`.

A lever run without time shifting is the greedy as-soon-as-possible schedule over the
variant's configuration space; with time shifting it is :func:`planner.solve.solve` (the
hourly MILP). Every run also considers the baseline plan itself, re-costed on the variant
(the baseline's hours and configurations stay available when a lever is switched on), and
keeps the cheaper: a lever is never reported to cost money because a greedy rule is myopic.
Costs are the objective ``sum_k weights[k] x cost[k]`` (USD with the default weights).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from formulations.greedy import greedy
from planner.configs import (
    Config,
    ConfigSpace,
    build_config_space,
    enumerate_phase,
    gpu_counts,
)
from planner.costs import cost_plan, weights
from planner.instance.model import Instance
from planner.instance.schema import PUE_BY_COOLING, Phase
from planner.jsonable import record
from planner.plan import COST_KEYS, Plan
from planner.schedule import Assignment, Schedule
from planner.workload import peak_tflops, work_flops

#: The article's claim for all levers together: hidden training cost -45%.
ARTICLE_CLAIM = 0.45
#: The article's claim for the training cycle: -30%.
ARTICLE_CYCLE_CLAIM = 0.30
#: The lever-free PUE: air cooling, Uptime Institute Global Data Center Survey 2023.
AIR_PUE = PUE_BY_COOLING["air"]


@dataclass(frozen=True)
class Lever:
    key: str
    label: str
    article: str


#: The levers, in the order the report lists them.
LEVERS: tuple[Lever, ...] = (
    Lever("time_shifting", "time shifting (cheap hours, pauses)", "1.2"),
    Lever("cooling", "cooling / PUE as given", "1.1"),
    Lever("precision", "precision, ZeRO, recomputation", "1.3, 5.1"),
    Lever("gpu_type", "GPU type per phase (mixed fleet)", "2.1"),
    Lever("elastic", "fractional GPUs, elastic GPU count", "2.2"),
    Lever("storage", "storage tiers, compression", "2.3"),
    Lever("spares", "spare-node sizing", "4.1"),
    Lever("contracts", "spot and reserved contracts", "6.2"),
    Lever("region", "region choice", "1.2"),
    Lever("follow_sun", "follow the sun (move regions at checkpoints)", "1.2"),
    Lever("elastic_scaling", "elastic scaling (GPU count at checkpoints)", "2.2"),
)

#: Levers measured with the hourly MILP (time choice included).
_MILP_LEVERS = ("time_shifting", "follow_sun", "elastic_scaling")

#: What each segment lever lets a segment boundary change (options.segment_changes).
_SEGMENT_LEVERS: dict[str, tuple[str, ...]] = {
    "follow_sun": ("region",),
    "elastic_scaling": ("gpus", "layout"),
}
LEVER_KEYS = tuple(lv.key for lv in LEVERS)

#: Phase-level restrictions dropped, in this order, when the baseline cannot be built.
_DROP_ORDER = ("elastic", "precision", "region", "gpu_type", "contracts")

_RECOMPUTE_ORDER = ("none", "selective", "full")


class LeverError(ValueError):
    """The lever analysis cannot run on this instance; the message says why."""


@dataclass(frozen=True)
class LeverRun:
    """One plan of the analysis: the baseline, one lever on, or all levers on."""

    key: str
    label: str
    article: str
    method: str
    plan: Plan | None
    instance: Instance = field(repr=False, compare=False)
    cost: float | None = None
    components: dict[str, float] = field(default_factory=dict)
    saving_usd: float | None = None
    saving_pct: float | None = None
    cycle_h: int | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = record(self, {"cycle_h": "cycle_hours"}, skip=("instance", "plan"))
        return {**out, "plan": self.plan.to_dict() if self.plan is not None else None}


@dataclass(frozen=True)
class LeverReport:
    instance: str
    baseline: LeverRun
    levers: tuple[LeverRun, ...]
    all_levers: LeverRun
    rules: tuple[str, ...]
    notes: tuple[str, ...] = ()
    claim: float = ARTICLE_CLAIM
    runtime_s: float = 0.0

    def run(self, key: str) -> LeverRun:
        for r in self.levers:
            if r.key == key:
                return r
        if key == "all":
            return self.all_levers
        if key == "baseline":
            return self.baseline
        raise KeyError(key)

    @property
    def interaction_usd(self) -> float | None:
        """All levers' saving minus the sum of the single savings: levers overlap (negative)
        or reinforce each other (positive)."""
        if self.all_levers.saving_usd is None:
            return None
        return self.all_levers.saving_usd - sum(r.saving_usd or 0.0 for r in self.levers)

    def headline(self) -> str:
        pct = self.all_levers.saving_pct
        if pct is None:
            return f"all levers: n/a (the article claims -{self.claim:.0%})"
        return f"all levers: {-pct * 100:+.1f}% (the article claims -{self.claim:.0%})".replace(
            "+-", "-"
        )

    def cycle_headline(self) -> str:
        b, a = self.baseline.cycle_h, self.all_levers.cycle_h
        if not b or a is None:
            return ""
        change = (a - b) / b
        return (
            f"training cycle: {b} h -> {a} h ({change * 100:+.1f}%; the article claims "
            f"-{ARTICLE_CYCLE_CLAIM:.0%})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "trainplan-levers/1",
            "instance": self.instance,
            "baseline": self.baseline.to_dict(),
            "levers": [r.to_dict() for r in self.levers],
            "all_levers": self.all_levers.to_dict(),
            "interaction_usd": self.interaction_usd,
            "article_claim": -self.claim,
            "headline": self.headline(),
            "rules": list(self.rules),
            "notes": list(self.notes),
            "runtime_s": self.runtime_s,
        }


# ----------------------------------------------------------------------------- baseline


@dataclass
class _Baseline:
    updates: dict[str, dict[str, Any]]
    rules: list[str]
    notes: list[str]
    instance: Instance
    space: ConfigSpace
    schedule: Schedule
    #: Phase-level levers the baseline keeps (it cannot meet the deadlines without them).
    kept: frozenset[str] = frozenset()


def _check_names(inst: Instance) -> None:
    """Variants address phases and regions by dotted paths: names must not hold a dot."""
    bad = [f"phase {p.name!r}" for p in inst.phases if "." in p.name]
    bad += [f"region {r!r}" for r in inst.spec.regions if "." in r]
    bad += [f"GPU type {g!r}" for g in inst.spec.gpu_types if "." in g]
    if bad:
        raise LeverError(
            f"{inst.source}: lever variants address names by dotted paths; "
            f"rename {', '.join(bad)} without a '.'"
        )


def _allowed_gpus(inst: Instance, p: Phase) -> tuple[str, ...]:
    return p.gpu_types or tuple(inst.spec.gpu_types)


def _allowed_regions(inst: Instance, p: Phase) -> tuple[str, ...]:
    return p.regions or tuple(inst.spec.regions)


def _has_pool(inst: Instance, region: str, gpu: str, on_demand: bool) -> bool:
    cap = inst.capacity.get((region, gpu))
    offer = inst.region(region).offers.get(gpu)
    if cap is None or offer is None or float(np.max(cap)) <= 0:
        return False
    return offer.on_demand is not None if on_demand else True


def _base_precision(inst: Instance, p: Phase, gpu: str) -> str | None:
    g = inst.gpu(gpu)
    allowed = [x for x in p.options.precision if peak_tflops(g, x)]
    if not allowed:
        return None
    return "bf16" if "bf16" in allowed else allowed[0]


def _most_capable(inst: Instance, p: Phase) -> str | None:
    """The allowed GPU type with the highest peak TFLOPS at the phase's baseline precision
    (then most memory) that an allowed region offers with capacity (on demand if any is)."""
    regions = _allowed_regions(inst, p)
    for on_demand in (True, False):
        cands = [
            g
            for g in _allowed_gpus(inst, p)
            if any(_has_pool(inst, r, g, on_demand) for r in regions)
        ]
        if cands:

            def rank(g: str) -> tuple[float, float, str]:
                prec = _base_precision(inst, p, g)
                peak = peak_tflops(inst.gpu(g), prec) if prec else None
                return (peak or 0.0, inst.gpu(g).memory_gb, g)

            return max(cands, key=rank)
    return None


def _base_pue(inst: Instance, region: str) -> float:
    return max(inst.region(region).effective_pue, AIR_PUE)


def _cheapest_region(inst: Instance, p: Phase, gpu: str) -> str | None:
    """Where one GPU-hour of ``gpu`` costs least on demand at the mean electricity price:
    offer price (its mean over the horizon) + board power (kW) x baseline PUE x mean USD/MWh
    / 1000."""
    best: tuple[float, str] | None = None
    g = inst.gpu(gpu)
    for on_demand in (True, False):
        for r in _allowed_regions(inst, p):
            if not _has_pool(inst, r, gpu, on_demand):
                continue
            o = inst.region(r).offers[gpu]
            prices = [
                float(np.mean(inst.offer_price(r, gpu, k)))
                for k in ("on_demand", "spot", "reserved")
                if getattr(o, k) is not None
            ]
            rent = (
                float(np.mean(inst.offer_price(r, gpu, "on_demand")))
                if o.on_demand is not None
                else min(prices)
            )
            score = (
                rent
                + g.board_power_w / 1000 * _base_pue(inst, r) * float(np.mean(inst.price[r])) / 1000
            )
            if best is None or (score, r) < best:
                best = (score, r)
        if best is not None:
            return best[1]
    return None


def _global_updates(inst: Instance) -> dict[str, dict[str, Any]]:
    """Restrictions that do not depend on a phase's choices: PUE, storage, spares, contracts."""
    ups: dict[str, dict[str, Any]] = {k: {} for k in LEVER_KEYS}
    for rname, r in inst.spec.regions.items():
        if r.effective_pue < AIR_PUE:
            ups["cooling"][f"regions.{rname}.pue"] = AIR_PUE
            ups["cooling"][f"regions.{rname}.cooling"] = None
        if len(r.storage) > 1:
            tiers = r.storage
            hot = max(sorted(tiers), key=lambda t: tiers[t].usd_per_gb_month)
            raw = inst.raw["regions"][rname]["storage"][hot]
            ups["storage"][f"regions.{rname}.storage"] = {hot: raw}
    if inst.spec.storage.compression_ratio != 1.0:
        ups["storage"]["storage.compression_ratio"] = 1.0
    for p in inst.active_phases:
        pre = f"phases.{p.name}.options"
        if p.options.storage_tiers is not None and any(
            x.startswith("regions.") for x in ups["storage"]
        ):
            ups["storage"][f"{pre}.storage_tiers"] = None
        if tuple(p.options.extra_spare_nodes) != (0,):
            ups["spares"][f"{pre}.extra_spare_nodes"] = [0]
        if tuple(p.options.contracts) != ("on_demand",):
            ups["contracts"][f"{pre}.contracts"] = ["on_demand"]
        if p.options.max_segments > 1:
            for key in _SEGMENT_LEVERS:
                # off, this lever leaves only the other segment lever's changes
                others = {c for k, v in _SEGMENT_LEVERS.items() if k != key for c in v}
                ups[key][f"{pre}.segment_changes"] = [
                    c for c in p.options.segment_changes if c in others
                ]
    return ups


def _main_phase(inst: Instance) -> Phase:
    active = inst.active_phases
    if not active:
        raise LeverError(f"{inst.source}: every phase is done; there is nothing to plan")
    return max(active, key=lambda p: (work_flops(inst, p), -inst.order.index(p.name)))


def _ladder(p: Phase) -> list[tuple[int, str]]:
    """(ZeRO stage, recomputation) from the simplest: recompute none < selective < full,
    ZeRO 0 < 1 < 2 < 3, among the phase's allowed values."""
    rcs = [rc for rc in _RECOMPUTE_ORDER if rc in p.options.recompute]
    return [(z, rc) for rc in rcs for z in sorted(set(p.options.zero))]


def _whole_node_counts(p: Phase, inst: Instance, gpu: str) -> list[int]:
    """Whole-node counts the phase may use, smallest first; when none is allowed, the largest
    allowed count rounded up to whole nodes (a team rents nodes, not cards)."""
    g = inst.gpu(gpu)
    n = g.gpus_per_node
    counts = gpu_counts(p, g)
    whole = sorted({int(c) for c in counts if c >= 1 and float(c).is_integer() and int(c) % n == 0})
    if whole:
        return whole
    return [max(1, math.ceil(max(counts) / n)) * n]


def _phase_choice(
    inst0: Instance, p: Phase, gpu: str | None, region: str | None, dropped: set[str]
) -> dict[str, dict[str, Any]] | None:
    """Phase-level restrictions (per lever: path -> value) for the first lever-free setting
    under which the phase has a configuration in ``inst0`` (the instance with the global
    restrictions applied), or None. Levers in ``dropped`` keep the phase's own options."""
    p0 = inst0.phase(p.name)
    pre = f"phases.{p.name}"
    base: dict[str, dict[str, Any]] = {k: {} for k in LEVER_KEYS}
    fields: dict[str, Any] = {}
    opts: dict[str, Any] = {}
    if "contracts" in dropped:
        opts["contracts"] = p.options.contracts
    g = None if "gpu_type" in dropped else gpu
    if g is not None and set(_allowed_gpus(inst0, p)) != {g}:
        fields["gpu_types"] = (g,)
        base["gpu_type"][f"{pre}.gpu_types"] = [g]
    r = None if "region" in dropped else region
    if r is not None and set(_allowed_regions(inst0, p)) != {r}:
        fields["regions"] = (r,)
        base["region"][f"{pre}.regions"] = [r]
    ref_gpu = g or _most_capable(inst0, p0)
    prec = None
    if "precision" not in dropped and ref_gpu is not None:
        prec = _base_precision(inst0, p0, ref_gpu)
    ladder: list[tuple[int, str] | None] = [*_ladder(p0)] if prec is not None else [None]
    counts: list[int | None] = (
        [*_whole_node_counts(p0, inst0, ref_gpu)]
        if "elastic" not in dropped and ref_gpu
        else [None]
    )
    for step in ladder:
        for n in counts:
            o = dict(opts)
            ups = {k: dict(v) for k, v in base.items()}
            if step is not None and prec is not None:
                z, rc = step
                o.update(precision=(prec,), zero=(z,), recompute=(rc,))
                ups["precision"].update(
                    {
                        f"{pre}.options.precision": [prec],
                        f"{pre}.options.zero": [z],
                        f"{pre}.options.recompute": [rc],
                    }
                )
            if n is not None:
                o.update(gpu_counts=(n,), fractions=())
                ups["elastic"].update(
                    {f"{pre}.options.gpu_counts": [n], f"{pre}.options.fractions": []}
                )
                ups["elastic_whole"] = {
                    f"{pre}.options.gpu_counts": [c for c in counts if c is not None and c >= n],
                    f"{pre}.options.fractions": [],
                }
            variant = p0.model_copy(update={**fields, "options": p0.options.model_copy(update=o)})
            configs, _why = enumerate_phase(inst0, variant)
            if configs:
                return ups
    return None


def _merge(updates: Mapping[str, Mapping[str, Any]], off: Iterable[str]) -> dict[str, Any]:
    """The instance updates of every lever in ``off`` (switched off = restricted). Segment
    changes restricted by several levers keep what all of them allow; when nothing is left
    the phase runs on one configuration (``max_segments: 1``)."""
    out: dict[str, Any] = {}
    changes: dict[str, list[str]] = {}
    for k in off:
        for path, value in updates.get(k, {}).items():
            if path.endswith(".segment_changes"):
                prev = changes.get(path)
                changes[path] = value if prev is None else [c for c in prev if c in value]
            else:
                out[path] = value
    for path, value in changes.items():
        if value:
            out[path] = value
        else:
            out[path.removesuffix("segment_changes") + "max_segments"] = 1
    return out


#: A segment lever needs the lever whose choice it changes at checkpoints.
_NEEDS = {"follow_sun": "region", "elastic_scaling": "elastic"}


def _variant(
    inst: Instance, updates: Mapping[str, Mapping[str, Any]], on: Iterable[str]
) -> Instance:
    on_set = set(on)
    on_set |= {_NEEDS[k] for k in on_set if k in _NEEDS}
    merged = _merge(updates, [k for k in LEVER_KEYS if k not in on_set])
    return inst.replace(merged) if merged else inst


def build_baseline(inst: Instance) -> _Baseline:
    """The lever-free baseline: restrictions per lever, its instance and its schedule."""
    _check_names(inst)
    notes: list[str] = []
    main = _main_phase(inst)
    updates = _global_updates(inst)
    inst0 = inst.replace(_merge(updates, LEVER_KEYS)) if any(updates.values()) else inst
    gpu = _most_capable(inst0, main)
    if gpu is None:
        raise LeverError(
            f"{inst.source}: no allowed GPU type of phase {main.name!r} is offered "
            "with capacity in an allowed region; run `trainplan explain`"
        )
    region = _cheapest_region(inst0, main, gpu)
    for p in inst.active_phases:
        g = gpu if gpu in _allowed_gpus(inst, p) else _most_capable(inst0, p)
        r = None
        if g is not None:
            r = (
                region
                if region is not None
                and region in _allowed_regions(inst, p)
                and _has_pool(inst, region, g, False)
                else _cheapest_region(inst0, p, g)
            )
        choice = None
        dropped: set[str] = set()
        for k in range(len(_DROP_ORDER) + 1):
            dropped = set(_DROP_ORDER[:k])
            choice = _phase_choice(inst0, p, g, r, dropped)
            if choice is not None:
                break
        if choice is None:
            if not enumerate_phase(inst, p)[0]:
                raise LeverError(
                    f"{inst.source}: phase {p.name!r} has no configuration at all "
                    "(run `trainplan explain` to see why)"
                )
            dropped = set(LEVER_KEYS)
            choice = {}
            notes.append(f"{p.name}: no lever-free setting fits; the phase keeps its options")
        elif dropped:
            notes.append(
                f"{p.name}: no lever-free setting fits; it keeps its own choice of "
                f"{', '.join(sorted(dropped))}"
            )
        for key, ups in choice.items():
            updates.setdefault(key, {}).update(ups)
        for key in dropped & {"contracts", "spares"}:
            prefix = f"phases.{p.name}."
            for path in [x for x in updates[key] if x.startswith(prefix)]:
                del updates[key][path]
    for loose, whole in _fallbacks(updates):
        trial = {k: dict(v) for k, v in updates.items()}
        for lever in loose:
            trial[lever] = {}
        if whole:
            trial["elastic"] = dict(trial.get("elastic_whole", {}))
        base_inst = _variant(inst, trial, ())
        space = build_config_space(base_inst, prune=False)
        if space.infeasible:
            continue
        sched = greedy(base_inst, space, first_start_only=True)
        if sched is None:
            continue
        if whole:
            notes.append(
                "one GPU count per phase misses a deadline or capacity: the baseline "
                "lets each phase pick among whole-node counts"
            )
        if loose:
            notes.append(
                "the lever-free baseline misses a deadline or capacity without "
                f"{', '.join(sorted(loose))}: the baseline keeps "
                f"{'that lever' if len(loose) == 1 else 'those levers'}"
            )
        rules = _rules(inst, base_inst, main, gpu, region, trial)
        return _Baseline(trial, rules, notes, base_inst, space, sched, frozenset(loose))
    raise LeverError(
        f"{inst.source}: the lever-free baseline (as soon as possible, on demand) "
        "cannot meet every deadline within capacity, even keeping the GPU-type, "
        "region, precision and count choices; run `trainplan explain`"
    )


def _fallbacks(updates: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[tuple[str, ...], bool]]:
    """Ways to loosen the baseline, least first: nothing; whole-node counts instead of one
    count per phase; one phase-level lever kept (with or without whole-node counts); two;
    all of them. Sets that change nothing (a lever without restrictions) are skipped."""
    levers = [k for k in _DROP_ORDER if updates.get(k)]
    can_whole = bool(updates.get("elastic_whole")) and bool(updates.get("elastic"))
    seen: set[tuple[tuple[str, ...], bool]] = set()
    order: list[tuple[tuple[str, ...], bool]] = [((), False), ((), True)]
    for size in (1, 2):
        for combo in itertools.combinations(levers, size):
            order.append((combo, False))
            order.append((combo, True))
    order.append((tuple(levers), False))
    for dropped, whole in order:
        w = whole and can_whole and "elastic" not in dropped
        if whole and not w:
            continue
        if (dropped, w) not in seen:
            seen.add((dropped, w))
            yield dropped, w


def _rules(
    inst: Instance,
    base: Instance,
    main: Phase,
    gpu: str,
    region: str | None,
    updates: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """How the baseline was built, in words."""
    out = ["time: every phase as soon as possible, one contiguous run (greedy list schedule)"]
    pue = [
        f"{r} {inst.region(r).effective_pue:.2f} -> {AIR_PUE:.2f}"
        for r in inst.spec.regions
        if f"regions.{r}.pue" in updates.get("cooling", {})
    ]
    out.append(
        "PUE: air-cooled 1.58 where the site is better"
        + (f" ({', '.join(pue)})" if pue else " (no site is)")
    )
    per_phase = []
    for p in base.active_phases:
        bits = []
        if f"phases.{p.name}.gpu_types" in updates.get("gpu_type", {}):
            bits.append(f"{(p.gpu_types or ('?',))[0]}")
        if f"phases.{p.name}.regions" in updates.get("region", {}):
            bits.append(f"@{(p.regions or ('?',))[0]}")
        if f"phases.{p.name}.options.gpu_counts" in updates.get("elastic", {}):
            bits.append("/".join(f"{c:g}" for c in (p.options.gpu_counts or ())) + " GPUs")
        if f"phases.{p.name}.options.precision" in updates.get("precision", {}):
            bits.append(
                f"{p.options.precision[0]} ZeRO-{p.options.zero[0]} "
                f"recompute {p.options.recompute[0]}"
            )
        if bits:
            per_phase.append(f"{p.name}: {' '.join(bits)}")
    out.append(
        f"GPU type: {gpu} (the most capable allowed for {main.name}, the largest phase)"
        + (f"; region: {region} (least on-demand GPU-hour incl. power)" if region else "")
    )
    if per_phase:
        out.append("per phase: " + "; ".join(per_phase))
    out.append(
        "storage: the dearest tier only, no compression; spares: only required ones; "
        "contracts: on demand only"
    )
    return out


# ----------------------------------------------------------------------------- runs


def _key(c: Config) -> tuple[object, ...]:
    return (c.gpu, c.region, c.contract, c.gpus, c.spare_gpus, c.layout, c.tier)


def recost(inst: Instance, space: ConfigSpace, schedule: Schedule) -> Schedule | None:
    """The baseline schedule on a variant: the same configurations (matched by GPU, region,
    contract, counts, layout and tier) from the same start hours, for the hours the variant
    needs (never more: levers only lower checkpoint size and cost), with the same
    reservations. None if some configuration has no match or no longer fits its window."""
    out: dict[str, Assignment] = {}
    for name, (c, hours) in schedule.items():
        match = {_key(x): x for x in space.by_phase.get(name, ())}.get(_key(c))
        if match is None:
            return None
        start = min(hours)
        if match.hours > len(hours) or start + match.hours > inst.deadline[name]:
            return None
        out[name] = Assignment(match, tuple(range(start, start + match.hours)))
    return Schedule(out, schedule.reserved)


def _cycle(plan: Plan | None) -> int | None:
    if plan is None or not plan.phases:
        return None
    return max(p.end_hour for p in plan.phases) - min(p.start_hour for p in plan.phases)


def _cheapest(cands: list[Plan]) -> Plan | None:
    return min(
        cands, key=lambda p: p.objective if p.objective is not None else math.inf, default=None
    )


def _evaluate(
    variant: Instance, base: _Baseline, time_shifting: bool, time_limit: float, backend: str
) -> tuple[Plan | None, str, str]:
    """(plan, method, note) of one lever combination."""
    space = build_config_space(variant, prune=False)
    cands: list[Plan] = []
    note = ""
    method = "milp" if time_shifting else "greedy-asap"
    if time_shifting:
        from planner.solve import solve

        res = solve(variant, solver="milp", time_limit=time_limit, backend=backend)
        if res.plan is not None:
            cands.append(res.plan)
            if res.gap is not None and res.gap > 1e-3:
                note = f"MILP gap {res.gap:.1%} at the time limit"
        else:
            note = f"MILP found no plan ({res.termination.value})"
    elif not space.infeasible:
        allows: list[Callable[[Config], bool]] = [lambda c: c.contract != "reserved"]
        if any(c.contract == "reserved" for cs in space.by_phase.values() for c in cs):
            allows.append(lambda c: True)
        for allow in allows:
            sched = greedy(variant, space, allow=allow, first_start_only=True)
            if sched is not None:
                cands.append(cost_plan(variant, sched))
    again = recost(variant, space, base.schedule) if not space.infeasible else None
    if again is not None:
        kept = cost_plan(variant, again)
        best = _cheapest(cands)
        if best is None or (kept.objective or 0.0) < (best.objective or 0.0) - 1e-9:
            note = (note + "; " if note else "") + "kept the baseline plan (cheaper here)"
        cands.append(kept)
    return _cheapest(cands), method, note


def _make_run(
    key: str,
    label: str,
    article: str,
    method: str,
    plan: Plan | None,
    variant: Instance,
    base_cost: float | None,
    note: str,
) -> LeverRun:
    cost = plan.objective if plan is not None else None
    comps: dict[str, float] = {}
    if plan is not None:
        w = weights(variant)
        comps = {k: w[k] * plan.costs.get(k, 0.0) for k in COST_KEYS}
    saving = pct = None
    if cost is not None and base_cost is not None:
        saving = base_cost - cost
        pct = saving / base_cost if base_cost else 0.0
    return LeverRun(
        key, label, article, method, plan, variant, cost, comps, saving, pct, _cycle(plan), note
    )


def evaluate_levers(
    inst: Instance,
    time_limit: float = 60.0,
    backend: str = "highs",
    levers: Iterable[str] | None = None,
) -> LeverReport:
    """Cost the lever-free baseline, each lever alone (``levers``, default all) and all levers
    together on ``inst``. ``time_limit`` applies to each MILP solve (two: time shifting alone
    and all levers). A carbon cap is lifted (a cap is a constraint, not a lever, and the
    greedy runs cannot honour it). Raises :class:`LeverError` when no baseline exists."""
    t0 = time.perf_counter()
    keys = list(levers) if levers is not None else list(LEVER_KEYS)
    for k in keys:
        if k not in LEVER_KEYS:
            raise LeverError(f"unknown lever {k!r}; expected one of {', '.join(LEVER_KEYS)}")
    lifted: list[str] = []
    if inst.spec.objective.carbon_cap_tonnes is not None:
        inst = inst.replace({"objective.carbon_cap_tonnes": None})
        lifted.append(
            "objective.carbon_cap_tonnes is lifted: the hand-made baseline and the "
            "greedy lever runs do not know it (see `trainplan pareto --vs carbon`)"
        )
    base = build_baseline(inst)
    base_plan = cost_plan(base.instance, base.schedule)
    baseline = _make_run(
        "baseline", "lever-free baseline", "", "greedy-asap", base_plan, base.instance, None, ""
    )
    base_cost = baseline.cost
    baseline = _make_run(
        "baseline",
        "lever-free baseline",
        "",
        "greedy-asap",
        base_plan,
        base.instance,
        base_cost,
        "",
    )
    runs: list[LeverRun] = []
    for lv in LEVERS:
        if lv.key not in keys:
            continue
        if lv.key != "time_shifting" and not base.updates.get(lv.key):
            why = (
                "kept in the baseline: it cannot meet the deadlines without this lever"
                if lv.key in base.kept
                else "nothing to choose: the instance offers no alternative"
            )
            runs.append(
                _make_run(
                    lv.key, lv.label, lv.article, "none", base_plan, base.instance, base_cost, why
                )
            )
            continue
        variant = _variant(inst, base.updates, [lv.key])
        plan, method, note = _evaluate(variant, base, lv.key in _MILP_LEVERS, time_limit, backend)
        if lv.key in _SEGMENT_LEVERS:
            note = (note + "; " if note else "") + (
                f"measured with the hourly MILP (time shifting and {_NEEDS[lv.key]} on): its "
                f"own worth is this saving minus theirs"
            )
        runs.append(_make_run(lv.key, lv.label, lv.article, method, plan, variant, base_cost, note))
    plan, method, note = _evaluate(inst, base, True, time_limit, backend)
    all_run = _make_run("all", "all levers", "", method, plan, inst, base_cost, note)
    notes = [*lifted, *base.notes]
    for r in runs:
        if r.plan is None:
            notes.append(f"{r.key}: no plan ({r.note})")
    best_single = min(
        (r for r in runs if r.cost is not None), key=lambda r: r.cost or 0.0, default=None
    )
    if (
        best_single is not None
        and all_run.cost is not None
        and best_single.cost is not None
        and all_run.cost > best_single.cost * (1 + 1e-6) + 1e-6
    ):
        notes.append(
            f"all levers cost more than {best_single.key} alone: the solver stopped "
            "before optimality; raise --time-limit"
        )
    return LeverReport(
        inst.name,
        baseline,
        tuple(runs),
        all_run,
        tuple(base.rules),
        tuple(notes),
        ARTICLE_CLAIM,
        time.perf_counter() - t0,
    )


# ----------------------------------------------------------------------------- chart
