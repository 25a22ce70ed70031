"""Checks that need the whole validated document: every name refers to something, every
release/deadline leaves an hour slot inside the horizon, precedence has no cycle, and every
number has a plausible magnitude; and the phases' topological order."""

from __future__ import annotations

import heapq
import math
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from planner.instance.errors import FieldError
from planner.instance.messages import field_path, listing, quoted
from planner.instance.schema import MAX_OFFERED_PAIRS, InstanceSpec, Phase

#: Nonzero magnitudes a number may take; work sizes and parameter counts up to LARGEST_SIZE.
#: Beyond them costs overflow (1e308 USD/MWh x kW = inf), divide by zero (5e-324 GB/s) or
#: defeat the solver's tolerances; no real instance comes near (tokens up to ~1e13, FLOPs
#: ~1e25, prices ~1e3, failure rates ~1e-5).
MAGNITUDE = (1e-12, 1e15)
LARGEST_SIZE = 1e30
_SIZE_KEYS = frozenset({"tokens", "flops", "params", "gpu_hours"})


#: Lists of at least this many values are checked at once when they hold numbers only.
_BULK = 64


def _numbers_within(values: list[Any], low: float, top: float) -> bool:
    """Whether ``values`` holds only ints and floats (no bool) whose nonzero finite ones lie
    within [low, top] in size: then :func:`check_magnitudes` has nothing to say about it.
    False when unsure (anything else in it, integers beyond float range): the values are
    then checked one by one."""
    if not all(type(v) is float or type(v) is int for v in values):
        return False
    try:
        arr = np.abs(np.asarray(values, dtype=float))
    except OverflowError:
        return False
    arr = arr[np.isfinite(arr) & (arr != 0)]
    if np.any(arr > _EXACT):
        return False  # an integer may have been rounded: compare it exactly
    return bool(np.all((arr >= low) & (arr <= top)))


#: Every integer up to this size is exactly a float (2^53).
_EXACT = float(2**53)


def check_magnitudes(data: Any, errors: list[FieldError]) -> None:
    """Append an error for every nonzero number outside MAGNITUDE (keys in _SIZE_KEYS: above
    LARGEST_SIZE), with its readable path."""
    low, high = MAGNITUDE
    stack: list[tuple[Any, tuple[Any, ...], str]] = [(data, (), "")]
    while stack:
        node, loc, key = stack.pop()
        if isinstance(node, dict):
            stack.extend((v, (*loc, k), str(k)) for k, v in node.items())
        elif isinstance(node, list):
            top = LARGEST_SIZE if key in _SIZE_KEYS else high
            if len(node) >= _BULK and _numbers_within(node, low, top):
                continue  # an hourly series whose every number is fine
            stack.extend((v, (*loc, i), key) for i, v in enumerate(node))
        elif (
            isinstance(node, int | float)
            and not isinstance(node, bool)
            and node != 0
            and (isinstance(node, int) or math.isfinite(node))
        ):
            # no float() of an integer here: one beyond float range would overflow (the
            # schema refuses integers of more than MAX_DIGITS digits; Python documents need
            # not have passed it), and int-to-float comparisons are exact
            top = LARGEST_SIZE if key in _SIZE_KEYS else high
            if not low <= abs(node) <= top:
                got = (
                    f"{node:g}"
                    if isinstance(node, float) or abs(node) < 1e300
                    else "a huge integer"
                )
                errors.append(
                    FieldError(
                        field_path(loc, data),
                        f"expected 0 or a magnitude between {low:g} and "
                        f"{top:g} (got {got}); is the unit right?",
                    )
                )


def _hour_of(spec: InstanceSpec, when: int | datetime) -> int | float:
    """Hours from the horizon start (NaN for a date-time without a UTC offset)."""
    if isinstance(when, datetime):
        if when.tzinfo is None:
            return math.nan
        return (when - spec.horizon.start).total_seconds() / 3600.0
    return when


def window(spec: InstanceSpec, p: Phase) -> tuple[int, int]:
    """The phase's hour slots ``release <= t < deadline``: slot ``t`` covers ``[t, t + 1)``
    hours from the start, so a release between whole hours rounds up (06:30 -> slot 7, the
    first that starts no earlier) and a deadline rounds down (10:30 -> 10, slot 9 is the last
    that ends by then)."""
    rel = _hour_of(spec, p.release)
    dl = spec.horizon.hours if p.deadline is None else _hour_of(spec, p.deadline)
    return math.ceil(rel), math.floor(dl)


class _Known(NamedTuple):
    """The names an instance defines, as a set (phases, storage tiers) or a listing for
    messages (:func:`planner.instance.messages.listing`): built once, so every check is a set
    or dict lookup and the work is linear in the size of the document."""

    names: set[str]
    phases: str
    gpus: str
    regions: str
    models: str
    tiers: set[str]


def _known(spec: InstanceSpec) -> _Known:
    """The names ``spec`` defines (:class:`_Known`)."""
    names = [p.name for p in spec.phases]
    return _Known(
        set(names),
        listing(names),
        listing(sorted(spec.gpu_types)),
        listing(sorted(spec.regions)),
        listing(sorted(spec.models)),
        {t for r in spec.regions.values() for t in r.storage},
    )


def check_references(spec: InstanceSpec, errors: list[FieldError]) -> None:
    """Append an error for every name that refers to nothing (GPU types, regions, models,
    phases, storage tiers, families), every release/deadline that is naive, outside the
    horizon or leaves no whole hour slot, and (when all names resolve) a precedence cycle."""
    known = _known(spec)
    seen: set[str] = set()
    for i, p in enumerate(spec.phases):
        where = f"phases[{i}] ({p.name})"
        if p.name in seen:
            errors.append(FieldError(f"{where}.name", f"duplicate phase name {quoted(p.name)}"))
        seen.add(p.name)
        _check_phase_names(spec, known, where, p, errors)
        if not _check_phase_times(spec, where, p, errors):
            continue  # a time without a UTC offset: the phase's hours mean nothing yet
        for t in p.options.storage_tiers or ():
            if t not in known.tiers:
                errors.append(
                    FieldError(
                        f"{where}.options.storage_tiers",
                        f"no region has a storage tier {quoted(t)}",
                    )
                )
    _check_region_names(spec, known, errors)
    pairs = sum(len(set(r.capacity) | set(r.offers)) for r in spec.regions.values())
    if pairs > MAX_OFFERED_PAIRS:
        errors.append(
            FieldError(
                "regions",
                f"expected at most {MAX_OFFERED_PAIRS} (region, GPU type) pairs with capacity "
                f"or offers, over all regions (got {pairs})",
            )
        )
    families = {g.family for g in spec.gpu_types.values()}
    for fam in spec.families:
        if fam not in families:
            errors.append(FieldError(f"families.{fam}", "no GPU type belongs to this family"))
    check_state_references(spec, errors)
    if not errors:
        cycle = find_cycle(spec.phases)
        if cycle:
            errors.append(FieldError("phases", "precedence cycle: " + " -> ".join(cycle)))


def _check_phase_names(
    spec: InstanceSpec, known: _Known, where: str, p: Phase, errors: list[FieldError]
) -> None:
    """Errors for the names phase ``p`` gives that refer to nothing: predecessors, GPU types,
    regions, model, the GPU its work is measured on (and a precision it has no peak at), the
    GPU types of its MFU and its data's home region; and work in tokens without a model."""
    gpus, regions = spec.gpu_types, spec.regions
    for q in p.predecessors:
        if q not in known.names:
            errors.append(
                FieldError(
                    f"{where}.predecessors",
                    f"unknown phase {quoted(q)}; phases are {known.phases}",
                )
            )
        if q == p.name:
            errors.append(FieldError(f"{where}.predecessors", "a phase cannot precede itself"))
    for g in p.gpu_types or ():
        if g not in gpus:
            errors.append(
                FieldError(
                    f"{where}.gpu_types", f"unknown GPU type {quoted(g)}; known: {known.gpus}"
                )
            )
    for r in p.regions or ():
        if r not in regions:
            errors.append(
                FieldError(
                    f"{where}.regions", f"unknown region {quoted(r)}; known: {known.regions}"
                )
            )
    if p.model is not None and p.model not in spec.models:
        errors.append(
            FieldError(f"{where}.model", f"unknown model {quoted(p.model)}; known: {known.models}")
        )
    if p.work.gpu is not None and p.work.gpu not in gpus:
        errors.append(
            FieldError(
                f"{where}.work.gpu",
                f"unknown GPU type {quoted(p.work.gpu)}; known: {known.gpus}",
            )
        )
    if (
        p.work.gpu_hours is not None
        and p.work.gpu in gpus
        and not gpus[p.work.gpu].peak_tflops.get(p.work.precision)
    ):
        errors.append(
            FieldError(
                f"{where}.work.precision",
                f"GPU type {p.work.gpu!r} has no peak_tflops at "
                f"{p.work.precision!r}, so its GPU-hours say nothing "
                "about the work; give a precision it has",
            )
        )
    if p.work.tokens is not None and p.model is None:
        errors.append(
            FieldError(f"{where}.work.tokens", "work in tokens needs the phase's 'model' (6ND)")
        )
    if isinstance(p.mfu, dict):
        for g in p.mfu:
            if g not in gpus:
                errors.append(FieldError(f"{where}.mfu", f"unknown GPU type {quoted(g)}"))
    if p.data.home_region is not None and p.data.home_region not in regions:
        errors.append(
            FieldError(f"{where}.data.home_region", f"unknown region {quoted(p.data.home_region)}")
        )


def _check_phase_times(spec: InstanceSpec, where: str, p: Phase, errors: list[FieldError]) -> bool:
    """Errors for phase ``p``'s release and deadline: without a UTC offset (then False: its
    hours mean nothing), a deadline not after the release or leaving no whole hour slot, and
    hours outside the horizon."""
    rel = _hour_of(spec, p.release)
    dl = spec.horizon.hours if p.deadline is None else _hour_of(spec, p.deadline)
    naive = False
    for fname, when in (("release", p.release), ("deadline", p.deadline)):
        if isinstance(when, datetime) and when.tzinfo is None:
            naive = True
            errors.append(
                FieldError(
                    f"{where}.{fname}",
                    "expected a time with a UTC offset, e.g. "
                    "2023-06-06T12:00:00Z, or an hour number "
                    f"(got {when.isoformat()})",
                )
            )
    if naive:
        return False
    if dl <= rel:
        errors.append(
            FieldError(
                f"{where}.deadline",
                f"deadline (hour {dl:g}) must be after release (hour {rel:g})",
            )
        )
    elif math.floor(dl) <= math.ceil(rel):
        errors.append(
            FieldError(
                f"{where}.deadline",
                f"no whole hour slot between release (hour {rel:g}, "
                f"slots from {math.ceil(rel)}) and deadline (hour {dl:g}, "
                f"slots before {math.floor(dl)})",
            )
        )
    if rel < 0 or rel >= spec.horizon.hours:
        errors.append(
            FieldError(
                f"{where}.release",
                f"release hour {rel:g} is outside the horizon [0, {spec.horizon.hours})",
            )
        )
    if dl > spec.horizon.hours:
        errors.append(
            FieldError(
                f"{where}.deadline",
                f"deadline hour {dl:g} is after the horizon end ({spec.horizon.hours})",
            )
        )
    return True


def _check_region_names(spec: InstanceSpec, known: _Known, errors: list[FieldError]) -> None:
    """Errors for the regions' names that refer to nothing (GPU types of capacity and offers,
    regions of transfer prices) and capacity series shorter than the horizon."""
    gpus, regions = spec.gpu_types, spec.regions
    for rname, region in regions.items():
        for part, keys in (("capacity", region.capacity), ("offers", region.offers)):
            for g in keys:
                if g not in gpus:
                    errors.append(
                        FieldError(
                            f"regions.{rname}.{part}.{g}",
                            f"unknown GPU type {quoted(g)}; known: {known.gpus}",
                        )
                    )
        for g, cap in region.capacity.items():
            if isinstance(cap, tuple) and len(cap) < spec.horizon.hours:
                errors.append(
                    FieldError(
                        f"regions.{rname}.capacity.{g}",
                        f"expected {spec.horizon.hours} hourly values (the "
                        f"horizon), got {len(cap)}",
                    )
                )
        for other in region.transfer_usd_per_gb:
            if other not in regions:
                errors.append(
                    FieldError(
                        f"regions.{rname}.transfer_usd_per_gb", f"unknown region {quoted(other)}"
                    )
                )


def check_state_references(spec: InstanceSpec, errors: list[FieldError]) -> None:
    """Names in the fields of segments and re-plans: data residency regions, link bandwidths,
    the configuration a phase is running on (GPU type, region, its offer, tier and reserved
    term), and a ``progress`` in tokens only for work in tokens."""
    gpus, regions = spec.gpu_types, spec.regions
    for rname, region in regions.items():
        for other in region.link_gb_per_s:
            if other not in regions:
                errors.append(
                    FieldError(f"regions.{rname}.link_gb_per_s", f"unknown region {other!r}")
                )
    for i, p in enumerate(spec.phases):
        where = f"phases[{i}] ({p.name})"
        for r in p.data.residency or ():
            if r not in regions:
                errors.append(
                    FieldError(
                        f"{where}.data.residency", f"unknown region {r!r}; known: {sorted(regions)}"
                    )
                )
        pr = p.progress
        if pr is not None and pr.tokens is not None and p.work.tokens is None:
            errors.append(
                FieldError(
                    f"{where}.progress.tokens",
                    "progress in tokens needs work in tokens; give a fraction or flops",
                )
            )
        run = p.running
        if run is None:
            continue
        at = f"{where}.running"
        if run.gpu not in gpus:
            errors.append(FieldError(f"{at}.gpu", f"unknown GPU type {run.gpu!r}"))
        if run.region not in regions:
            errors.append(FieldError(f"{at}.region", f"unknown region {run.region!r}"))
            continue
        region = regions[run.region]
        if run.tier not in region.storage:
            errors.append(
                FieldError(
                    f"{at}.tier",
                    f"region {run.region!r} has no storage tier {run.tier!r}; it has "
                    f"{sorted(region.storage)}",
                )
            )
        offers = region.offers.get(run.gpu)
        offer = getattr(offers, run.contract) if offers is not None else None
        if offer is None:
            errors.append(
                FieldError(
                    f"{at}.contract",
                    f"region {run.region!r} offers no {run.gpu} under {run.contract}",
                )
            )
        elif run.term and run.term not in getattr(offer, "term_names", lambda: ())():
            errors.append(FieldError(f"{at}.term", f"the reserved offer has no term {run.term!r}"))


def find_cycle(phases: tuple[Phase, ...]) -> list[str] | None:
    """A precedence cycle (``[a, b, ..., a]``) or None, by an iterative depth-first search
    over predecessor edges: O(phases + edges), no recursion."""
    preds = {p.name: p.predecessors for p in phases}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in preds:
        if root in state:
            continue
        path = [root]
        state[root] = 1
        todo = [iter(preds[root])]
        while todo:
            q = next(todo[-1], None)
            if q is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(q) == 1:
                return [*path[path.index(q) :], q]
            elif q not in state:
                state[q] = 1
                path.append(q)
                todo.append(iter(preds[q]))
    return None


def topological(phases: tuple[Phase, ...]) -> tuple[str, ...]:
    """Phase names with every phase after its predecessors (Kahn 1962), ties in file order:
    O(phases + edges)."""
    index = {p.name: i for i, p in enumerate(phases)}
    waiting = {p.name: len(set(p.predecessors)) for p in phases}
    after: dict[str, list[str]] = {p.name: [] for p in phases}
    for p in phases:
        for q in set(p.predecessors):
            after[q].append(p.name)
    ready = [index[n] for n, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    done: list[str] = []
    while ready:
        name = phases[heapq.heappop(ready)].name
        done.append(name)
        for n in after[name]:
            waiting[n] -= 1
            if waiting[n] == 0:
                heapq.heappush(ready, index[n])
    return tuple(done)
