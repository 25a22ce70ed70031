"""THE baseline: the plan a team would make by hand, without any of the cost levers.

One definition, used by ``trainplan solve`` (the saving it prints and writes into the plan),
``trainplan levers`` (the run every lever is measured from) and ``trainplan report`` (the
answer its first screen gives). It is a plan of the user's own instance: the levers are
*decisions* the baseline does not take, each expressed as a restriction of the phases'
choices (:meth:`Instance.replace` of phase options, GPU types and regions), never a change of
the sites, prices or data; so the baseline plan is costed by the one cost model on the
instance as written, and ``trainplan verify`` accepts it.

=============== ===========================================================================
lever           without it (the baseline)
=============== ===========================================================================
time_shifting   every phase as soon as possible, in one contiguous run: the greedy list
                schedule with ``first_start_only`` (no waiting for cheap hours, no pauses)
precision       ``bf16`` (else the first allowed precision the GPU supports), and the
                simplest ZeRO stage / recomputation that fits memory, tried in the order
                recompute none < selective < full, ZeRO 0 < 1 < 2 < 3
gpu_type        per phase the GPU type a team comparing price sheets picks: the cheapest
                per unit of work at on-demand prices, ``(on-demand price + metered board
                power x PUE x mean price) / (peak TFLOPS at the phase's precision x MFU)``
                in its cheapest allowed region, among the allowed types offered with
                capacity with which the phase has a configuration (of two equally fast
                GPUs, the cheaper; ties: the one listed first)
elastic         one GPU count per phase, whole nodes: the smallest allowed whole-node count
                that fits (no fractional GPUs; when no whole-node count is allowed, the
                smallest allowed whole count); when that misses a deadline, any allowed
                whole-node count at least as large
storage         the dearest storage tier of each region only
spares          only the spare nodes ``redundancy.spare_nodes`` requires
contracts       on-demand only (no spot, no reserved capacity)
region          one region for every phase: where one GPU-hour of the main phase's GPU
                (the phase with the most FLOPs) costs least on demand at the region's mean
                electricity price (rental + board power x PUE x mean price when the power is
                metered); a phase that may not run its GPU there keeps its own cheapest
=============== ===========================================================================

When the fully restricted phase has no configuration (its memory, window or capacity rules
every lever-free setting out), the phase keeps its own options for the levers that stop it,
dropped in the order elastic, precision, region, gpu_type, contracts. When the baseline
schedule then misses a deadline or capacity, the least loosening that gives one is searched:
whole-node counts instead of one count, then one phase-level lever kept for every phase, then
two, then all. A lever the baseline keeps is part of the baseline, not a saving; every step
is in :attr:`LeverFree.notes`.

The site's PUE and the instance's checkpoint compression are facts of the instance, not
decisions of a plan: the baseline keeps them (their worth shows in where and on what a plan
runs; a what-if on them is a variant or a grid, not a lever).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from formulations.heuristics.greedy import greedy, hottest_tier
from planner.collector import fewer_collections
from planner.instance.model import Instance
from planner.instance.offers import energy_billing
from planner.instance.schema import Phase
from planner.model.configs import (
    Config,
    ConfigSpace,
    enumerate_phase,
    full_config_space,
    gpu_counts,
    plan_key,
    variant_space,
)
from planner.model.costs import cost_plan, within_carbon_cap
from planner.model.options import SolveOptions
from planner.model.plan import CONFIG_FIELDS, Plan
from planner.model.progress import Tracker
from planner.model.result import Result, Termination
from planner.model.schedule import Assignment, Schedule
from planner.model.workload import mfu_of, peak_tflops, work_flops

SOLVER = "baseline"


@dataclass(frozen=True)
class Lever:
    """A cost lever: what the baseline does without it. ``section`` is the lever's number in
    the article docs/levers.md quotes."""

    key: str
    label: str
    section: str


#: The levers, in the order reports list them (time shifting first: it is the MILP's).
LEVERS: tuple[Lever, ...] = (
    Lever("time_shifting", "time shifting (cheap hours, pauses)", "1.2"),
    Lever("precision", "precision, ZeRO, recomputation", "1.3, 5.1"),
    Lever("gpu_type", "GPU type per phase beyond the price sheet (mixed fleet)", "1.1, 2.1"),
    Lever("elastic", "fractional GPUs, elastic GPU count", "2.2"),
    Lever("storage", "storage tiers", "2.3"),
    Lever("spares", "spare-node sizing", "4.1"),
    Lever("contracts", "spot and reserved contracts", "6.2"),
    Lever("region", "region choice (follow the sun, site PUE)", "1.1, 1.2"),
    Lever("follow_sun", "follow the sun (move regions at checkpoints)", "1.2"),
    Lever("elastic_scaling", "elastic scaling (GPU count at checkpoints)", "2.2"),
)
LEVER_KEYS = tuple(lv.key for lv in LEVERS)

#: The segment levers and what each lets a segment boundary change (options.segment_changes):
#: only phases with ``options.max_segments`` above 1 have them; off, the change is not allowed,
#: and a phase left with no change runs on one configuration (``max_segments: 1``).
SEGMENT_LEVERS: dict[str, tuple[str, ...]] = {
    "follow_sun": ("region",),
    "elastic_scaling": ("gpus", "layout"),
}

#: Levers measured with the hourly MILP (time choice included): the only model of segments.
MILP_LEVERS = ("time_shifting", *SEGMENT_LEVERS)

#: A segment lever needs the lever whose choice it changes at checkpoints (switched on with
#: it when it is measured alone).
SEGMENT_NEEDS = {"follow_sun": "region", "elastic_scaling": "elastic"}

#: Phase-level restrictions dropped, in this order, when the baseline cannot be built.
_DROP_ORDER = ("elastic", "precision", "region", "gpu_type", "contracts")
_RECOMPUTE_ORDER = ("none", "selective", "full")


class BaselineError(ValueError):
    """No lever-free baseline exists on this instance; the message says why."""


@dataclass(frozen=True)
class LeverFree:
    """The lever-free baseline of an instance: per lever the instance updates that switch it
    off, how it was built (``rules``, ``notes``), the levers it had to keep, and its schedule
    on the instance itself."""

    updates: Mapping[str, Mapping[str, Any]]
    rules: tuple[str, ...]
    notes: tuple[str, ...]
    kept: frozenset[str]
    schedule: Schedule
    plan: Plan

    def restricts(self, key: str) -> bool:
        """The baseline restricts lever ``key`` (time shifting always: it is the schedule)."""
        return key == "time_shifting" or bool(self.updates.get(key))

    def variant(self, inst: Instance, on: Iterable[str]) -> Instance:
        """``inst`` with every lever switched off except those in ``on``."""
        merged = self._off(on)
        return inst.replace(merged) if merged else inst

    def variant_phases(self, inst: Instance, on: Iterable[str]) -> dict[str, Phase]:
        """The phases :meth:`variant` changes, as it changes them, without rebuilding the
        instance (:func:`restricted_phases`)."""
        return restricted_phases(inst, self._off(on))

    def _off(self, on: Iterable[str]) -> dict[str, Any]:
        on_set = set(on)
        return _merge(self.updates, [k for k in LEVER_KEYS if k not in on_set])


# ----------------------------------------------------------------------------- choices


def _check_names(inst: Instance) -> None:
    """Variants address phases and regions by dotted paths: names must not hold a dot."""
    bad = [f"phase {p.name!r}" for p in inst.phases if "." in p.name]
    bad += [f"region {r!r}" for r in inst.spec.regions if "." in r]
    bad += [f"GPU type {g!r}" for g in inst.spec.gpu_types if "." in g]
    if bad:
        raise BaselineError(
            f"{inst.source}: the lever-free baseline addresses names by dotted paths; "
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
    (then most memory) that an allowed region offers with capacity (on demand if any is):
    the reference for the phase's precision and counts when its GPU type is left open."""
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


def _gpu_hour_usd(inst: Instance, region: str, gpu: str) -> float:
    """What one GPU-hour of ``gpu`` costs in ``region`` on the price sheet: the on-demand
    price (its mean over the horizon; the cheapest offered contract without on-demand) plus,
    when the offer meters power, the board power x the site's PUE at the region's mean
    electricity price."""
    o = inst.region(region).offers[gpu]
    prices = {
        k: float(np.mean(inst.offer_price(region, gpu, k)))
        for k in ("on_demand", "spot", "reserved")
        if getattr(o, k) is not None
    }
    contract = "on_demand" if o.on_demand is not None else min(prices, key=prices.__getitem__)
    rent = prices[contract]
    if energy_billing(inst.region(region), gpu, contract) == "included":
        return rent
    kw = inst.gpu(gpu).board_power_w / 1000 * inst.region(region).effective_pue
    return rent + kw * float(np.mean(inst.price[region])) / 1000


def price_sheet_ranking(inst: Instance, p: Phase) -> list[tuple[float, str]]:
    """The allowed GPU types of phase p with an on-demand pool in an allowed region (any
    pool when none has one), cheapest per unit of work first: ``(USD per GPU-hour in the
    cheapest region, :func:`_gpu_hour_usd`) / (peak TFLOPS at the phase's baseline precision x
    MFU on that type)``, i.e. USD per PFLOP-hour of useful work, as a team comparing price
    sheets ranks them. Ties keep the order the instance lists the types in."""
    regions = _allowed_regions(inst, p)
    for on_demand in (True, False):
        out: list[tuple[float, int, str]] = []
        for i, g in enumerate(_allowed_gpus(inst, p)):
            prec = _base_precision(inst, p, g)
            peak = peak_tflops(inst.gpu(g), prec) if prec else None
            hours = [_gpu_hour_usd(inst, r, g) for r in regions if _has_pool(inst, r, g, on_demand)]
            if not peak or not hours:
                continue
            out.append((min(hours) / (peak * mfu_of(p, g) / 1000.0), i, g))
        if out:
            return [(usd, g) for usd, _, g in sorted(out)]
    return []


def _price_sheet_gpu(inst: Instance, p: Phase) -> str | None:
    """The first GPU type of :func:`price_sheet_ranking` with which the phase has a
    configuration (memory, window, capacity); the cheapest of the ranking when none has.
    The phase's configurations on a GPU type are those of the unpruned space on it (each GPU
    type is enumerated on its own), so the space built once per instance answers for every
    type: enumerating the phase again per type was 8 s of the 100-phase quarter's baseline."""
    ranking = price_sheet_ranking(inst, p)
    have = {c.gpu for c in full_config_space(inst).by_phase.get(p.name, ())}
    for _, g in ranking:
        if g in have:
            return g
    return ranking[0][1] if ranking else None


def _cheapest_region(inst: Instance, p: Phase, gpu: str) -> str | None:
    """Where one GPU-hour of ``gpu`` costs least on demand at the mean electricity price:
    offer price (its mean over the horizon) + board power (kW) x the site's PUE x mean
    USD/MWh / 1000 when the power is metered (:func:`_gpu_hour_usd`)."""
    best: tuple[float, str] | None = None
    for on_demand in (True, False):
        for r in _allowed_regions(inst, p):
            if not _has_pool(inst, r, gpu, on_demand):
                continue
            score = _gpu_hour_usd(inst, r, gpu)
            if best is None or (score, r) < best:
                best = (score, r)
        if best is not None:
            return best[1]
    return None


def _global_updates(inst: Instance) -> dict[str, dict[str, Any]]:
    """Restrictions that do not depend on a phase's GPU or region: storage, spares,
    contracts."""
    ups: dict[str, dict[str, Any]] = {k: {} for k in LEVER_KEYS}
    for p in inst.active_phases:
        pre = f"phases.{p.name}.options"
        regions = _allowed_regions(inst, p)
        hot = sorted({hottest_tier(inst, r, p.options.storage_tiers) for r in regions})
        offered = {
            t
            for r in regions
            for t in inst.region(r).storage
            if p.options.storage_tiers is None or t in p.options.storage_tiers
        }
        if offered - set(hot):
            ups["storage"][f"{pre}.storage_tiers"] = hot
        if tuple(p.options.extra_spare_nodes) != (0,):
            ups["spares"][f"{pre}.extra_spare_nodes"] = [0]
        if tuple(p.options.contracts) != ("on_demand",):
            ups["contracts"][f"{pre}.contracts"] = ["on_demand"]
        if p.options.max_segments > 1:
            for key, mine in SEGMENT_LEVERS.items():
                if any(c in mine for c in p.options.segment_changes):
                    ups[key][f"{pre}.segment_changes"] = [
                        c for c in p.options.segment_changes if c not in mine
                    ]
    return ups


def _main_phase(inst: Instance) -> Phase:
    active = inst.active_phases
    if not active:
        raise BaselineError(f"{inst.source}: every phase is done; there is nothing to plan")
    return max(active, key=lambda p: (work_flops(inst, p), -inst.order.index(p.name)))


def _ladder(p: Phase) -> list[tuple[int, str]]:
    """(ZeRO stage, recomputation) from the simplest: recompute none < selective < full,
    ZeRO 0 < 1 < 2 < 3, among the phase's allowed values."""
    rcs = [rc for rc in _RECOMPUTE_ORDER if rc in p.options.recompute]
    return [(z, rc) for rc in rcs for z in sorted(set(p.options.zero))]


def _lever_free_counts(p: Phase, inst: Instance, gpu: str) -> list[int]:
    """Allowed counts a team renting nodes would pick from, smallest first: whole nodes;
    when none is allowed, whole GPUs (never a fraction of a card)."""
    g = inst.gpu(gpu)
    counts = [c for c in gpu_counts(p, g) if c >= 1 and float(c).is_integer()]
    whole = sorted({int(c) for c in counts if int(c) % g.gpus_per_node == 0})
    return whole or sorted({int(c) for c in counts})


def _phase_choice(
    inst: Instance, p: Phase, p0: Phase, gpu: str | None, region: str | None, dropped: set[str]
) -> dict[str, dict[str, Any]] | None:
    """Phase-level restrictions (per lever: path -> value) for the first lever-free setting
    under which the phase has a configuration in ``inst`` with the global restrictions
    applied (``p0`` is ``p`` under them), or None. Levers in ``dropped`` keep
    the phase's own options."""
    pre = f"phases.{p.name}"
    base: dict[str, dict[str, Any]] = {k: {} for k in LEVER_KEYS}
    fields: dict[str, Any] = {}
    opts: dict[str, Any] = {}
    if "contracts" in dropped:
        opts["contracts"] = p.options.contracts
    g = None if "gpu_type" in dropped else gpu
    if g is not None and set(_allowed_gpus(inst, p)) != {g}:
        fields["gpu_types"] = (g,)
        base["gpu_type"][f"{pre}.gpu_types"] = [g]
    r = None if "region" in dropped else region
    if r is not None and set(_allowed_regions(inst, p)) != {r}:
        fields["regions"] = (r,)
        base["region"][f"{pre}.regions"] = [r]
    ref_gpu = g or _most_capable(inst, p0)
    prec = None
    if "precision" not in dropped and ref_gpu is not None:
        prec = _base_precision(inst, p0, ref_gpu)
    ladder: list[tuple[int, str] | None] = [*_ladder(p0)] if prec is not None else [None]
    counts: list[int | None] = (
        [*_lever_free_counts(p0, inst, ref_gpu)] if "elastic" not in dropped and ref_gpu else [None]
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
            configs, _why = enumerate_phase(inst, variant)
            if configs:
                return ups
    return None


def _merge(updates: Mapping[str, Mapping[str, Any]], off: Iterable[str]) -> dict[str, Any]:
    """The instance updates of every lever in ``off`` (switched off = restricted). The segment
    levers each take their changes out of a phase's ``segment_changes``: with several off the
    lists are intersected, and a phase left with none runs on one configuration."""
    out: dict[str, Any] = {}
    for k in off:
        for path, value in updates.get(k, {}).items():
            if path.endswith(".segment_changes") and path in out:
                value = [c for c in out[path] if c in value]
            out[path] = value
    for path in [x for x in out if x.endswith(".segment_changes") and not out[x]]:
        del out[path]
        out[path.removesuffix(".segment_changes") + ".max_segments"] = 1
    return out


def restricted_phases(inst: Instance, updates: Mapping[str, Any]) -> dict[str, Phase]:
    """The phases of ``inst`` that ``updates`` change (dotted paths
    ``phases.<name>.<field>`` and ``phases.<name>.options.<field>``, as :func:`_merge`
    makes them), changed: the phase values :meth:`Instance.replace` would validate, the
    options validated afresh, without rebuilding the instance. Its sites, offers, prices and
    capacity stay what they are, which is all a restriction of choices leaves unchanged
    (:func:`planner.model.configs.variant_space` enumerates such phases on ``inst``)."""
    fields: dict[str, dict[str, Any]] = {}
    options: dict[str, dict[str, Any]] = {}
    for path, value in updates.items():
        parts = path.split(".")
        if (
            parts[0] != "phases"
            or len(parts) not in (3, 4)
            or (len(parts) == 4) != (parts[2] == "options")
        ):
            raise ValueError(f"not a phase field or phase option: {path!r}")
        name = parts[1]
        if len(parts) == 4:
            options.setdefault(name, {})[parts[3]] = value
        else:
            v = tuple(value) if isinstance(value, list) else value
            fields.setdefault(name, {})[parts[2]] = v
    out: dict[str, Phase] = {}
    for name in sorted({*fields, *options}, key=inst.order.index):
        p = inst.phase(name)
        update = dict(fields.get(name, {}))
        if name in options:
            o = p.options
            update["options"] = type(o).model_validate({**o.model_dump(), **options[name]})
        out[name] = p.model_copy(update=update)
    return out


def _key(fields: Mapping[str, object]) -> tuple[object, ...]:
    return plan_key(dict(fields))


_KEY_FIELDS = (*CONFIG_FIELDS, "term")


def rematch(
    inst: Instance, space: ConfigSpace, schedule: Schedule, found_in: ConfigSpace | None = None
) -> Schedule | None:
    """``schedule`` (found on a variant of ``inst`` that only restricts choices,
    ``found_in`` when known) as a schedule of ``inst``: the same configurations, matched in
    ``space`` (``inst``'s unpruned space) by their plan fields (or taken from it when
    ``found_in`` was narrowed from it), on the same hours, with the same reservations. None
    if some configuration has no match or needs other hours."""
    out: dict[str, Assignment] = {}
    for name, (c, hours) in schedule.items():
        match = None
        if found_in is space:
            match = c
        elif found_in is not None and found_in.narrowed_from is space:
            match = found_in.source(c)
        if match is None:
            match = _index(space, name).get(_key(c.plan_fields()))
        if match is None or match.hours != len(hours):
            return None
        out[name] = Assignment(match, tuple(hours))
    return Schedule(out, schedule.reserved)


def plan_schedule(space: ConfigSpace, plan: Plan) -> Schedule | None:
    """The schedule a :class:`Plan` states, its entries (and the segments of a phase in
    segments) matched in ``space`` by their plan fields; None if some entry has no match or,
    on one configuration, another number of hours."""
    out: dict[str, Assignment] = {}
    segments: dict[str, tuple[Assignment, ...]] = {}
    for p in plan.phases:
        index = _index(space, p.name)
        parts = []
        for part in p.parts():
            match = index.get(_key({k: getattr(part, k) for k in _KEY_FIELDS}))
            if match is None:
                return None
            parts.append(Assignment(match, tuple(part.hours)))
        if len(parts) > 1:
            segments[p.name] = tuple(parts)
        elif parts[0].config.hours != len(p.hours):
            return None
        else:
            out[p.name] = parts[0]
    reserved = {
        **{(r, g, ""): n for r, g, n in plan.reserved},
        **{(r, g, t): n for r, g, t, n in plan.reserved_terms},
    }
    return Schedule(out, reserved, segments)


@fewer_collections()
def asap_plans(
    inst: Instance, phases: Mapping[str, Phase], full: ConfigSpace
) -> list[tuple[Plan, Schedule]]:
    """The as-soon-as-possible greedy plans of ``inst`` with its phases restricted to
    ``phases`` (:meth:`LeverFree.variant_phases`), as plans of ``inst`` (``full`` its
    unpruned space): without reserved capacity, and with it when the restricted phases
    offer any; [] when some phase has no configuration or there is no greedy plan."""
    space = variant_space(inst, phases)
    if space.infeasible:
        return []
    allows: list[Callable[[Config], bool]] = [lambda c: c.contract != "reserved"]
    if space.any_reserved:
        allows.append(lambda c: True)
    out: list[tuple[Plan, Schedule]] = []
    for allow in allows:
        found = greedy(inst, space, allow=allow, first_start_only=True)
        sched = None if found is None else rematch(inst, full, found, space)
        if sched is not None:
            out.append((cost_plan(inst, sched), sched))
    return out


def _index(space: ConfigSpace, phase: str) -> dict[tuple[object, ...], Config]:
    return space.by_plan_fields(phase)  # built once per space, shared by every match


@fewer_collections()
def lever_free(inst: Instance) -> LeverFree:
    """The lever-free baseline of ``inst`` (module docstring): its restrictions per lever, its
    schedule and its plan, both on ``inst`` itself. Raises :class:`BaselineError` when none
    exists (an instance without any plan, or one that needs more than every lever kept)."""
    _check_names(inst)
    notes: list[str] = []
    main = _main_phase(inst)
    updates = _global_updates(inst)
    restricted = restricted_phases(inst, _merge(updates, LEVER_KEYS))
    gpu = _price_sheet_gpu(inst, main)
    if gpu is None:
        raise BaselineError(
            f"{inst.source}: no allowed GPU type of phase {main.name!r} is offered "
            "with capacity in an allowed region; run `trainplan explain`"
        )
    region = _cheapest_region(inst, main, gpu)
    for p in inst.active_phases:
        g = gpu if p.name == main.name else _price_sheet_gpu(inst, p)
        r = None
        if g is not None:
            r = (
                region
                if region is not None
                and region in _allowed_regions(inst, p)
                and _has_pool(inst, region, g, False)
                else _cheapest_region(inst, p, g)
            )
        choice = None
        dropped: set[str] = set()
        for k in range(len(_DROP_ORDER) + 1):
            dropped = set(_DROP_ORDER[:k])
            choice = _phase_choice(inst, p, restricted.get(p.name, p), g, r, dropped)
            if choice is not None:
                break
        if choice is None:
            if not enumerate_phase(inst, p)[0]:
                raise BaselineError(
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
        for key in dropped & {"contracts", "spares", "storage"}:
            prefix = f"phases.{p.name}."
            for path in [x for x in updates[key] if x.startswith(prefix)]:
                del updates[key][path]
    full = full_config_space(inst)
    for loose, whole in _fallbacks(updates):
        trial = {k: dict(v) for k, v in updates.items()}
        for lever in loose:
            trial[lever] = {}
        if whole:
            trial["elastic"] = dict(trial.get("elastic_whole", {}))
        base = restricted_phases(inst, _merge(trial, LEVER_KEYS))
        space = variant_space(inst, base)
        if space.infeasible:
            continue
        found = greedy(inst, space, first_start_only=True)
        sched = None if found is None else rematch(inst, full, found, space)
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
        trial.pop("elastic_whole", None)
        rules = _rules([base.get(p.name, p) for p in inst.active_phases], main, gpu, region, trial)
        return LeverFree(
            trial,
            tuple(rules),
            tuple(notes),
            frozenset(loose),
            sched,
            cost_plan(inst, sched),
        )
    raise BaselineError(
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
    base: list[Phase],
    main: Phase,
    gpu: str,
    region: str | None,
    updates: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """How the baseline was built, in words."""
    out = ["time: every phase as soon as possible, one contiguous run (greedy list schedule)"]
    per_phase = []
    for p in base:
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
        "GPU type: per phase the cheapest per unit of work at on-demand prices (a price-sheet "
        f"comparison); {gpu} for {main.name}, the largest phase"
        + (f"; region: {region} (least on-demand GPU-hour incl. metered power)" if region else "")
    )
    if per_phase:
        out.append("per phase: " + "; ".join(per_phase))
    out.append(
        "storage: the dearest tier only; spares: only required ones; contracts: on demand only"
    )
    return out


# ----------------------------------------------------------------------------- solver


def solve_baseline(inst: Instance, options: SolveOptions = SolveOptions()) -> Result:
    """The lever-free baseline as a solver result (``solve(inst, solver="baseline")``). It is
    a rule, not a search: of ``options`` only ``on_progress`` is used (told the plan's cost);
    the time limit, gap, threads, backend and warm start have nothing to act on."""
    t0 = time.perf_counter()
    space = full_config_space(inst)
    if space.infeasible:
        return Result.no_plan(
            SOLVER,
            Termination.NO_CONFIGURATION,
            "; ".join(i.reason for i in space.infeasible),
            runtime_s=time.perf_counter() - t0,
        )
    try:
        lf = lever_free(inst)
    except BaselineError as e:  # a heuristic that finds nothing proves nothing
        return Result.no_plan(
            SOLVER, Termination.UNKNOWN, str(e), runtime_s=time.perf_counter() - t0
        )
    if not within_carbon_cap(inst, lf.plan.emissions_t):
        return Result.no_plan(
            SOLVER,
            Termination.UNKNOWN,
            f"the lever-free baseline emits {lf.plan.emissions_t:.6g} t, over the carbon cap "
            f"objective.carbon_cap_tonnes = {inst.spec.objective.carbon_cap_tonnes:g} t: a plan "
            "made by hand does not plan around a cap (the attribution compares without it); "
            "solve with another --solver for a plan within the cap",
            runtime_s=time.perf_counter() - t0,
            notes=lf.notes,
        )
    Tracker(options.on_progress, t0).offer_plan(lf.plan.objective, "lever-free baseline")
    return Result.solved(
        SOLVER,
        lf.plan,
        Termination.HEURISTIC,
        runtime_s=time.perf_counter() - t0,
        message="the lever-free baseline (docs/levers.md)",
        notes=lf.notes,
    )
