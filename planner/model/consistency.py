"""Consistency checks: what makes an instance impossible to plan, or suspicious, found before
any model is built. One module, read by ``trainplan check`` (:mod:`planner.analysis.summary`),
``planner.solve`` (numeric findings become :class:`NumericWarning` warnings) and ``trainplan
explain``. Every check returns :class:`Finding` objects; none raises for a valid instance.

- *configuration*: phases without any configuration, and why (:mod:`planner.model.configs`
  computes the reason; a memory reason carries the closest layout);
- *memory*: the smallest memory need of any (GPU type, GPU count, layout) the phase may use
  against that GPU's usable memory, ``memory_gb x (1 - headroom)``; amount in GB short;
- *deadline*: the earliest finish through the precedence graph with each phase's fastest
  configuration (the critical-path forward pass of :mod:`planner.model.windows`) against each
  deadline; amount in hours;
- *capacity*: the compulsory parts of phases bound to one (region, GPU) pool (Lahrichi 1982;
  the timetable rule of cumulative scheduling): a non-preemptible phase with window ``[e, l)``
  and ``n`` hours must run in ``[l - n, e + n)`` whatever its start and needs at least
  ``min_c G_c`` GPUs then; hours where those needs add up above capacity are a conflict;
- *numeric*: valid numbers that are almost certainly a unit mistake or make the model badly
  scaled (:mod:`planner.model.hygiene` holds the rules and thresholds).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from planner.instance.model import Instance
from planner.jsonable import record
from planner.model.configs import ConfigSpace, Infeasibility
from planner.model.hygiene import check_numerics
from planner.model.windows import critical_path, earliest_finish, time_windows


class NumericWarning(UserWarning):
    """A number in an instance that is valid but implausible (a wrong unit, a badly scaled
    objective). Raised by :func:`warn_numerics`, which :func:`planner.solve` calls."""


@dataclass(frozen=True)
class Finding:
    """One conflict or suspicion: its kind (memory, deadline, capacity, carbon,
    configuration, numeric), the phase (None for a pool or the whole plan), how much is
    missing and in what unit, and where it comes from (``pre-check`` holds for any plan;
    ``relaxation`` is what the smallest relaxation of ``explain`` changes)."""

    kind: str
    phase: str | None
    amount: float | None
    unit: str
    message: str
    source: str = "pre-check"
    region: str | None = None
    gpu: str | None = None
    hours: tuple[int, ...] = ()
    phases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The finding as ``explain --json`` writes it."""
        return record(self)


# ----------------------------------------------------------------------------- helpers


def when(inst: Instance, hour: int) -> str:
    """An hour of the horizon as a UTC time, ``2023-06-05 14:00Z``."""
    t: datetime = inst.time_of(hour).astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%MZ")


def hour_ranges(hours: list[int]) -> list[list[int]]:
    """Consecutive runs of a list of hours, in order."""
    out: list[list[int]] = []
    for t in sorted(hours):
        if out and out[-1][-1] == t - 1:
            out[-1].append(t)
        else:
            out.append([t])
    return out


def span(inst: Instance, run: list[int]) -> str:
    """Hours ``run`` (first to last) as a message states them: hour numbers and the times they
    cover."""
    a, b = run[0], run[-1]
    hours = f"hour {a}" if a == b else f"hours {a}-{b}"
    return f"{hours} ({when(inst, a)} to {when(inst, b + 1)})"


def fastest_hours(space: ConfigSpace) -> dict[str, int | None]:
    """Per active phase the fewest hours of any configuration (None: it has none)."""
    return {n: (min(c.hours for c in cs) if cs else None) for n, cs in space.by_phase.items()}


# ----------------------------------------------------------------------------- checks


def memory_finding(inst: Instance, inf: Infeasibility) -> Finding | None:
    """The memory shortfall of a phase without configurations: the layout that comes closest
    (recorded by the configuration space), when even it does not fit."""
    need = inf.memory
    if need is None or need.short_gb <= 1e-9:
        return None
    headroom = inst.spec.memory.headroom
    return Finding(
        "memory",
        inf.phase,
        need.short_gb,
        "GB",
        f"{inf.phase}: needs {need.need_gb:.1f} GB per GPU at best ({need.setting} on "
        f"{need.gpu}) but {need.gpu} has {need.usable_gb:.1f} GB usable "
        f"({inst.gpu(need.gpu).memory_gb:g} {inst.gpu(need.gpu).memory_unit} less "
        f"{headroom:.0%} headroom): "
        f"{need.short_gb:.1f} GB short",
        gpu=need.gpu,
    )


def configuration_findings(inst: Instance, space: ConfigSpace) -> list[Finding]:
    """One finding per phase without a configuration: its memory shortfall when memory rules
    every layout out, else the configuration space's reason."""
    out: list[Finding] = []
    for inf in space.infeasible:
        mem = memory_finding(inst, inf)
        out.append(mem or Finding("configuration", inf.phase, None, "", inf.reason))
    return out


def late_reasons(inst: Instance, fastest: dict[str, int | None]) -> dict[str, str]:
    """Phases that cannot meet their deadline after their predecessors, each with a sentence
    for ``check`` (the forward pass of :func:`planner.model.windows.earliest_finish`)."""
    out: dict[str, str] = {}
    for name, f in earliest_finish(inst, fastest).items():
        if f.finish > inst.deadline[name]:
            out[name] = (
                f"{name}: after its predecessors (earliest finish of {f.via!r} at hour "
                f"{f.start}) its fastest configuration ({f.finish - f.start} h) would end at "
                f"hour {f.finish}, after its deadline (hour {inst.deadline[name]})"
            )
    return out


def deadline_findings(inst: Instance, fastest: dict[str, int | None]) -> list[Finding]:
    """``EF(p) = max(release(p), EF(q) for active predecessors q) + fastest(p)``; a finding for
    every phase with ``EF(p) > deadline(p)`` (amount ``EF - deadline`` hours), naming the
    critical path."""
    out: list[Finding] = []
    ef = earliest_finish(inst, fastest)
    for name, f in ef.items():
        d = inst.deadline[name]
        if f.finish <= d:
            continue
        chain = critical_path(ef, name)
        past = (
            f"; it is {f.finish - inst.hours} h past the horizon end too"
            if f.finish > inst.hours
            else ""
        )
        out.append(
            Finding(
                "deadline",
                name,
                float(f.finish - d),
                "h",
                f"{name}: the fastest possible finish is hour {f.finish} "
                f"({when(inst, f.finish)}; path {' -> '.join(chain)}, fastest configurations "
                f"from release hour {inst.release[chain[0]]}) but its deadline is hour {d} "
                f"({when(inst, d)}): {f.finish - d} h short{past}",
            )
        )
    return out


def capacity_findings(inst: Instance, space: ConfigSpace) -> list[Finding]:
    """Compulsory parts of single-pool phases summed per pool and hour against capacity."""
    win = time_windows(inst, space.fewest_hours())
    demand: dict[tuple[str, str], np.ndarray] = {}
    who: dict[tuple[str, str], dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, configs in space.by_phase.items():
        e, l_ = win.start[name], win.end[name]
        fits = [c for c in configs if c.hours <= l_ - e]
        pools = {(c.region, c.gpu) for c in fits}
        if len(pools) != 1:
            continue
        pool = next(iter(pools))
        lo, hi = e, l_
        for c in fits:
            if inst.phase(name).preemptible:
                s, f = (e, l_) if c.hours == l_ - e else (0, 0)
            else:
                s, f = l_ - c.hours, e + c.hours
            lo, hi = max(lo, s), min(hi, f)
        if lo >= hi:
            continue
        need = min(c.total_gpus for c in fits)
        demand.setdefault(pool, np.zeros(inst.hours))[lo:hi] += need
        for t in range(lo, hi):
            who[pool][t].append(name)
    out: list[Finding] = []
    for (r, g), d in sorted(demand.items()):
        cap = inst.capacity[(r, g)]
        over = [t for t in range(inst.hours) if d[t] > cap[t] + 1e-9]
        for run in hour_ranges(over):
            excess = float(max(d[t] - cap[t] for t in run))
            names = tuple(sorted({n for t in run for n in who[(r, g)][t]}))
            out.append(
                Finding(
                    "capacity",
                    None,
                    excess,
                    "GPUs",
                    f"capacity {r}/{g}: {', '.join(names)} must all run in {span(inst, run)} "
                    f"and need {float(max(d[t] for t in run)):g} GPUs there; the pool has "
                    f"{float(min(cap[t] for t in run)):g}: {excess:g} GPUs short",
                    region=r,
                    gpu=g,
                    hours=tuple(run),
                    phases=names,
                )
            )
    return out


def numeric_findings(inst: Instance) -> list[Finding]:
    """Implausible magnitudes and a badly scaled objective (:mod:`planner.model.hygiene`), each
    message starting with the field path responsible."""
    return [Finding("numeric", None, None, "", w) for w in check_numerics(inst)]


def warn_numerics(inst: Instance, stacklevel: int = 3) -> list[Finding]:
    """Issue every numeric finding as a :class:`NumericWarning` (so a library user sees it
    as a Python warning) and return them."""
    found = numeric_findings(inst)
    for f in found:
        warnings.warn(f.message, NumericWarning, stacklevel=stacklevel)
    return found


def findings(inst: Instance, space: ConfigSpace) -> list[Finding]:
    """Every pre-check finding of an instance over its configuration space: configurations
    (memory included), deadlines after predecessors, compulsory capacity, numerics."""
    return [
        *configuration_findings(inst, space),
        *deadline_findings(inst, fastest_hours(space)),
        *capacity_findings(inst, space),
        *numeric_findings(inst),
    ]
