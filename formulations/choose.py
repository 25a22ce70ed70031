"""Which model solves an instance ("auto"): the choice alone, with a one-sentence reason.

- Some phase can pause (preemptible, and some configuration runs more than an hour), may
  change configuration at checkpoints (``max_segments`` > 1), continues from a running
  configuration, may run under a reserved term, or has no feasible configuration: the hourly
  MILP (:mod:`formulations.exact.milp`), the only model of pauses, resumes, parking, segments,
  migrations and terms, and the one that reports a phase without a configuration.
- Otherwise every phase is one contiguous run, fixed by its configuration and start hour, and
  two exact models of the same costs exist: the start-time MILP on HiGHS
  (:mod:`formulations.exact.starttime`, ``"starttime"``) and CP-SAT
  (:mod:`formulations.exact.cpsat`). The start-time MILP's capacity rows hold one nonzero per
  (start, running hour): configurations x window x run length; CP-SAT's interval model grows with
  configurations x window only. "auto" picks the **start-time MILP** up to
  :data:`HIGHS_MAX_NONZEROS` capacity nonzeros and CP-SAT above.

Measured by ``benchmarks/cpsat_vs_milp.py`` (2 threads, 60 s, shared machine; seconds to a
proved optimum, or objective at the limit):

=====  ===========  ====================  ===================  =====================
size   nonzeros     CP-SAT                HiGHS presolve off   HiGHS presolve on
=====  ===========  ====================  ===================  =====================
XS     17k          0.1 s                 0.0 s                0.4 s
S      56k / 114k   0.2 / 0.4 s           0.1 / 0.3 s          0.6 / 3.4-9.4 s
M      243k         3.5 s                 5.6-11.9 s           7.5-37.8 s
L      2.1M         17,469 (bound 8.7k)   21,376 (bound 16.2k)
XL     14.6M        26,222                26,228 (no bound)
=====  ===========  ====================  ===================  =====================

The start-time MILP runs HiGHS with presolve off (``formulations.exact.starttime.solve``'s
``HIGHS_OPTIONS``), the column that is fastest up to S; CP-SAT wins from M on. The two are
run together, each starting the other, by :mod:`formulations.portfolio`.
"""

from __future__ import annotations

from formulations.exact.starttime.data import estimate_nonzeros
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace, config_space

#: At most this many start-time capacity nonzeros, "auto" picks the start-time MILP (HiGHS,
#: presolve off); above it, CP-SAT (see the table above).
HIGHS_MAX_NONZEROS = 150_000


def pausable(inst: Instance, space: ConfigSpace) -> list[str]:
    """The preemptible phases that can actually pause: some configuration runs more than one
    hour. A phase whose every configuration runs a single hour has one run whatever it may
    do, so the non-preemptive models are exact for it (no resume, no parking)."""
    return [
        p.name
        for p in inst.active_phases
        if p.preemptible and any(c.hours > 1 for c in space.by_phase.get(p.name, ()))
    ]


def choose(inst: Instance) -> tuple[str, str]:
    """("milp" | "starttime" | "cpsat", a one-sentence reason): the hourly MILP when a phase
    needs what only it models, else the start-time MILP when its capacity rows (counted as
    they would be built, only the rows it keeps) have at most :data:`HIGHS_MAX_NONZEROS`
    nonzeros, else CP-SAT."""
    active = inst.active_phases
    if not active:
        return "milp", "nothing to plan: every phase is done (the plan is empty)"
    space = config_space(inst)
    pre = pausable(inst, space)
    if pre:
        names = ", ".join(pre[:3]) + (" ..." if len(pre) > 3 else "")
        return "milp", (
            f"milp: {len(pre)} of {len(active)} phases may pause ({names}), and "
            "only the hourly MILP models pauses and resumes"
        )
    seg = [p.name for p in active if p.options.max_segments > 1]
    if seg:
        names = ", ".join(seg[:3]) + (" ..." if len(seg) > 3 else "")
        return "milp", (
            f"milp: {names} may change configuration at checkpoints (max_segments > 1), "
            "and only the hourly MILP models segments and migrations"
        )
    running = [p.name for p in active if p.running is not None]
    if running:
        return "milp", (
            f"milp: {', '.join(running[:3])} continue from a running configuration, and "
            "the hourly MILP models the migration off it"
        )
    if has_terms(space):
        return "milp", "milp: reserved terms are modelled by the hourly MILP only"
    if space.infeasible:
        return "milp", (
            "milp: some phase has no feasible configuration, which the hourly MILP reports"
        )
    nvar, nnz = estimate_nonzeros(inst, space)
    n = len(active)
    if nnz <= HIGHS_MAX_NONZEROS:
        return "starttime", (
            f"starttime: all {n} phases are non-preemptive and the start-time MILP is "
            f"small ({nvar:,} starts, {_si(nnz)} capacity nonzeros <= "
            f"{_si(HIGHS_MAX_NONZEROS)}), where HiGHS proves optimality fastest"
        )
    return "cpsat", (
        f"cpsat: all {n} phases are non-preemptive and the start-time MILP would "
        f"have {_si(nnz)} capacity nonzeros ({nvar:,} starts), more than "
        f"{_si(HIGHS_MAX_NONZEROS)}"
    )


def has_terms(space: ConfigSpace) -> bool:
    """Some configuration runs under a named reserved term."""
    return any(c.term for cs in space.by_phase.values() for c in cs)


def _si(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return f"{n:,}"
