"""A look-ahead list-scheduling heuristic: the incumbent every solver starts from.

Backward pass (ignoring capacity): for every phase p and ready hour r, G_p(r) is the least
cost of placing p no earlier than r plus, for each successor s, G_s(end of p). For a chain or
an out-tree this is the exact optimum without capacity; for a general DAG it is a guide.
Forward pass (with capacity): phases in topological order take the placement minimising their
own cost plus the successors' G at their end, within the capacity left, the precedence-
tightened window and their predecessors' actual ends. Non-preemptible phases take contiguous
runs; preemptible ones the cheapest free hours before a candidate end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from formulations.heuristics.greedy import Usage, list_schedule
from planner.instance.model import Instance
from planner.model.configs import Config, ConfigSpace
from planner.model.costs import (
    RentalMode,
    Weights,
    block_rental,
    fixed_cost,
    hourly_cost,
    run_costs,
    weights,
)
from planner.model.schedule import Assignment, Pool, ReservedKey, Schedule, reservations_for
from planner.model.windows import Windows, time_windows

#: Candidate end hours tried for a preemptible phase (evenly spread over its window).
END_CANDIDATES = 12


def _ends(first: int, last: int) -> np.ndarray:
    """END_CANDIDATES ends spread evenly over [first, last], rounded down, each once
    (``np.unique`` of the rounded ``linspace``, without the ``numpy.ma`` import that numpy 2's
    ``np.unique`` costs: 20 ms of every solve's start)."""
    ends = np.sort(np.linspace(first, last, END_CANDIDATES).astype(int))
    return ends[np.concatenate(([True], ends[1:] != ends[:-1]))]


class LookAhead:
    def __init__(
        self,
        inst: Instance,
        space: ConfigSpace,
        windows: Windows | None = None,
        allow_reserved: bool = False,
        prices: Mapping[Pool, np.ndarray] | None = None,
        capacity: Mapping[Pool, np.ndarray] | None = None,
        start: Mapping[str, Assignment] | None = None,
    ) -> None:
        self.inst = inst
        #: the warm start: placements to keep when they still fit (formulations.heuristics.warm)
        self.start = dict(start or {})
        self.space = space
        self.w = weights(inst)
        self.win = windows or time_windows(inst, space.fewest_hours())
        self.allow_reserved = allow_reserved
        self.capacity = dict(inst.capacity if capacity is None else capacity)
        self.hourly = _Hourly(inst, space, self.w, prices)
        #: reserved configurations' hours with the commitment sunk (:meth:`assignments`
        #: with ``committed``): what running one more hour on a bought pool adds
        self.sunk = _Hourly(inst, space, self.w, prices, "billed")
        #: per phase, the least cost of placing it (and its successors' shares) from each
        #: hour on: computed when first needed (a warm start keeps most phases as they were
        #: and needs few of them)
        self.G: dict[str, np.ndarray] = {}
        self.failed: str | None = None

    def _configs(self, name: str) -> list[Config]:
        return [
            c for c in self.space.by_phase[name] if self.allow_reserved or c.contract != "reserved"
        ]

    def _succ_cost(self, name: str, end: np.ndarray) -> np.ndarray:
        total = np.zeros(len(end))
        for s in self.inst.successors(name):
            g = self._g(s)
            if g is not None:
                idx = np.clip(end, 0, len(g) - 1)
                total += g[idx]
        return total

    def _g(self, name: str) -> np.ndarray | None:
        """G of ``name`` (None for a phase not to be placed), its descendants' first, in
        reverse topological order (no recursion: chains may be a thousand phases long)."""
        if name in self.G or name not in self.space.by_phase:
            return self.G.get(name)
        need: set[str] = set()
        stack = [name]
        while stack:
            q = stack.pop()
            if q in need or q in self.G or q not in self.space.by_phase:
                continue
            need.add(q)
            stack.extend(self.inst.successors(q))
        for q in reversed(self.inst.order):
            if q in need:
                self._backward(q)
        return self.G[name]

    def _backward(self, name: str) -> None:
        """G of one phase, from its successors' (computed before it)."""
        T = self.inst.hours
        e, l_ = self.win.start[name], self.win.end[name]
        best_from = np.full(T + 1, np.inf)  # best cost of a placement starting at >= r
        pre = self.inst.phase(name).preemptible
        for c in self._configs(name):
            n = c.hours
            if l_ - e < n:
                continue
            # capacity alone (no other phase) must admit the run: a static filter
            h = np.where(
                self.capacity[(c.region, c.gpu)] >= c.total_gpus - 1e-9,
                self.hourly[(name, c.index)],
                np.inf,
            )
            starts = np.arange(e, l_ - n + 1)
            val = run_costs(self.inst, c, starts, self.w, h) + self._succ_cost(name, starts + n)
            at = np.full(T + 1, np.inf)
            at[starts] = val
            if pre:
                # cheapest n hours in [r, end) for a few ends, r = e .. (end - n)
                cands = _ends(e + n, l_)
                succ = self._succ_cost(name, cands)
                firsts, ends, extras = [], [], []
                for end, after in zip(cands, succ, strict=True):
                    extra = after + fixed_cost(self.inst, c, int(end), self.w)
                    rs = np.arange(e, end - n + 1, max(1, (end - n - e) // 8 or 1))
                    firsts.append(rs)
                    ends.append(np.full(len(rs), end))
                    extras.append(np.full(len(rs), extra))
                rs = np.concatenate(firsts)
                v = _cheapest_sums(h[e:l_], rs - e, np.concatenate(ends) - e, n)
                np.minimum.at(at, rs, v + np.concatenate(extras))
            best_from = np.minimum(best_from, at)
        # suffix minimum: starting at >= r
        self.G[name] = np.minimum.accumulate(best_from[::-1])[::-1]

    def assignments(
        self, committed: Mapping[ReservedKey, int] | None = None
    ) -> dict[str, Assignment] | None:
        """The forward pass: one assignment per phase within the capacity left, or None when
        some phase cannot be placed (``failed`` names it). ``committed``: reserved pools
        bought before the pass (GPUs per (region, GPU type, term)); their configurations
        then compete at their hours' cost without the commitment, which is paid whether they
        run or not (a sunk cost), within the GPUs of the pool the phases placed before them
        left. The backward pass (the successors' guide G) is the same for every commitment."""
        inst = self.inst
        self.failed = None
        bought = {k: n for k, n in (committed or {}).items() if n > 0}
        left = {k: np.full(inst.hours, float(n)) for k, n in bought.items()}

        def candidates(name: str) -> list[Config]:
            own = self._configs(name)
            if not bought or self.allow_reserved:
                return own
            extra = [
                c
                for c in self.space.by_phase[name]
                if c.contract == "reserved"
                and bought.get((c.region, c.gpu, c.term), 0) >= c.total_gpus
            ]
            return own + extra

        def room(c: Config, used: Usage) -> np.ndarray:
            free = self.capacity[(c.region, c.gpu)] - used[(c.region, c.gpu)] >= c.total_gpus - 1e-9
            rest = left.get((c.region, c.gpu, c.term)) if c.contract == "reserved" else None
            return free if rest is None else free & (rest >= c.total_gpus - 1e-9)

        def hourly(name: str, c: Config) -> np.ndarray:
            sunk = c.contract == "reserved" and (c.region, c.gpu, c.term) in left
            return (self.sunk if sunk else self.hourly)[(name, c.index)]

        def place(name: str, ready: int, used: Usage) -> Assignment | None:
            a = choose(name, ready, used)
            if a is not None and a.config.contract == "reserved":
                rest = left.get((a.config.region, a.config.gpu, a.config.term))
                if rest is not None:
                    rest[list(a.hours)] -= a.config.total_gpus
            return a

        def choose(name: str, ready: int, used: Usage) -> Assignment | None:
            p = inst.phase(name)
            l_ = self.win.end[name]
            kept = self._kept(name, ready, used, left)
            if kept is not None:
                return kept
            best: tuple[float, Config, tuple[int, ...]] | None = None
            configs = candidates(name)
            # a preemptible phase's configurations in the order of a lower bound on their
            # cost here, each tried only while it may still beat (or tie, earlier in the
            # list) the best
            order = (
                self._screened(name, configs, ready, used, room, hourly)
                if p.preemptible
                else [(c, -np.inf) for c in configs]
            )
            for c, floor in order:
                if best is not None and floor > best[0]:
                    break
                n = c.hours
                if l_ - ready < n:
                    continue
                free = room(c, used)
                h = hourly(name, c)
                if p.preemptible:
                    cands = _ends(ready + n, l_)
                    for end in cands:
                        hrs = np.arange(ready, end)
                        hrs = hrs[free[ready:end]]
                        if len(hrs) < n:
                            continue
                        pick = np.sort(hrs[np.argsort(h[hrs], kind="stable")[:n]])
                        real_end = int(pick[-1]) + 1
                        v = (
                            float(h[pick].sum())
                            + block_rental(inst, c, self.w, pick.tolist())
                            + fixed_cost(inst, c, real_end, self.w)
                            + self._succ_cost(name, np.array([real_end]))[0]
                            # pick is sorted and distinct: a resume at every gap
                            + self.w.failure
                            * c.resume_usd
                            * int(np.count_nonzero(np.diff(pick) > 1))
                        )
                        if not np.isfinite(v):
                            continue  # a blocked hour (outside a reserved term)
                        if (
                            best is None
                            or v < best[0]
                            or (v == best[0] and c.index < best[1].index)
                        ):
                            best = (v, c, tuple(int(t) for t in pick))
                else:
                    ok = np.concatenate([[0], np.cumsum(~free)])
                    starts = np.arange(ready, l_ - n + 1)
                    feasible = starts[(ok[starts + n] - ok[starts]) == 0]
                    if not len(feasible):
                        continue
                    val = run_costs(inst, c, feasible, self.w, h) + self._succ_cost(
                        name, feasible + n
                    )
                    k = int(np.argmin(val))
                    if not np.isfinite(val[k]):
                        continue  # every run crosses a blocked hour (outside a reserved term)
                    if best is None or val[k] < best[0]:
                        s0 = int(feasible[k])
                        best = (float(val[k]), c, tuple(range(s0, s0 + n)))
            if best is None:
                self.failed = name
                return None
            return Assignment(best[1], best[2])

        return list_schedule(inst, self.space, self.win.start, place)

    def _kept(
        self,
        name: str,
        ready: int,
        used: Usage,
        left: Mapping[ReservedKey, np.ndarray] | None = None,
    ) -> Assignment | None:
        """The warm start's placement of ``name`` if it still fits: its configuration's hours
        (the first ``n`` of the start's) from ``ready`` on inside the window, one run for a
        phase that may not pause, the pool holding its GPUs in each with what is placed
        already, every hour priced (inside a reserved term)."""
        a = self.start.get(name)
        if a is None:
            return None
        c, n = a.config, a.config.hours
        hours = np.asarray(sorted(a.hours)[:n], dtype=np.int64)
        if len(hours) < n or hours[0] < ready or hours[-1] >= self.win.end[name]:
            return None
        if not self.inst.phase(name).preemptible and hours[-1] - hours[0] != n - 1:
            return None
        pool = (c.region, c.gpu)
        if np.any(self.capacity[pool][hours] - used[pool][hours] < c.total_gpus - 1e-9):
            return None
        rest = (left or {}).get((c.region, c.gpu, c.term)) if c.contract == "reserved" else None
        if rest is not None and np.any(rest[hours] < c.total_gpus - 1e-9):
            return None
        if not np.all(np.isfinite(self.hourly[(name, c.index)][hours])):
            return None
        return Assignment(c, tuple(int(t) for t in hours))

    def _screened(
        self,
        name: str,
        configs: list[Config],
        ready: int,
        used: Usage,
        room: Callable[[Config, Usage], np.ndarray],
        hourly: Callable[[str, Config], np.ndarray],
    ) -> list[tuple[Config, float]]:
        """A preemptible phase's configurations with a lower bound on the cost of placing
        them from ``ready`` (the n cheapest free hours of the window, the archive from its
        end, the least successors' cost at any end), least first (the list's order among
        equals). The bound holds when block rental and resumes cost >= 0 (then the caller
        stops at the first bound above the best placement found); else it is -inf."""
        inst, w = self.inst, self.w
        l_ = self.win.end[name]
        out: list[tuple[float, int, Config]] = []
        for i, c in enumerate(configs):
            n = c.hours
            if l_ - ready < n:
                continue
            if c.resume_usd < 0 or c.rental_per_h < 0:
                out.append((-np.inf, i, c))
                continue
            free = room(c, used)[ready:l_]
            h = hourly(name, c)[ready:l_][free]
            if len(h) < n:
                continue
            least = float(np.partition(h, n - 1)[:n].sum()) if n < len(h) else float(h.sum())
            after = float(np.min(self._succ_cost(name, np.arange(ready + n, l_ + 1))))
            floor = least + fixed_cost(inst, c, l_, w) + after
            out.append((floor if np.isfinite(floor) else np.inf, i, c))
        out.sort(key=lambda x: (x[0], x[1]))
        return [(c, floor) for floor, _, c in out]

    def schedule(self, committed: Mapping[ReservedKey, int] | None = None) -> Schedule | None:
        """The forward pass's schedule (with ``committed`` bought first, :meth:`assignments`)
        with the least reservations that cover it; None when a phase cannot be placed or a
        reserved offer's maximum is exceeded."""
        found = self.assignments(committed)
        if found is None:
            return None
        reserved = reservations_for(self.inst, found)
        return None if reserved is None else Schedule(found, reserved)


class _Hourly(dict[tuple[str, int], np.ndarray]):
    """Each configuration's cost per hour (rental as ``mode`` says: ``as_used``, or
    ``billed`` for a reserved pool already bought) plus its GPUs at the given prices, by
    (phase, configuration index), computed when first asked for."""

    def __init__(
        self,
        inst: Instance,
        space: ConfigSpace,
        w: Weights,
        prices: Mapping[Pool, np.ndarray] | None,
        mode: RentalMode = "as_used",
    ) -> None:
        super().__init__()
        self.inst, self.w, self.prices, self.mode = inst, w, prices, mode
        # by index, not position: a pruned space keeps its configurations' indices
        self.configs = {(p, c.index): c for p, cs in space.by_phase.items() for c in cs}

    def __missing__(self, key: tuple[str, int]) -> np.ndarray:
        c = self.configs[key]
        h = hourly_cost(self.inst, c, self.w, self.mode)
        lam = self.prices.get((c.region, c.gpu)) if self.prices else None
        if lam is not None:
            h = h + c.total_gpus * lam
        self[key] = h
        return h


def _cheapest_sums(h: np.ndarray, firsts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """For each pair (first hour f, end hour g), indices into ``h``, the sum of the ``n``
    least of ``h[f:g]`` (inf when fewer than n are finite): one partial sort for all."""
    i = np.arange(len(h))[None, :]
    m = np.where((i >= firsts[:, None]) & (i < ends[:, None]), h[None, :], np.inf)
    if n < m.shape[1]:
        m = np.partition(m, n - 1, axis=1)
    return m[:, :n].sum(axis=1)


def lookahead_schedule(
    inst: Instance,
    space: ConfigSpace,
    windows: Windows | None = None,
    allow_reserved: bool = False,
    prices: Mapping[Pool, np.ndarray] | None = None,
    start: Mapping[str, Assignment] | None = None,
) -> Schedule | None:
    """The look-ahead schedule; with ``allow_reserved`` reserved configurations compete at
    their reserved price per GPU-hour used (the pool is then sized to the peak). ``prices``
    (USD per GPU-hour by pool and hour, e.g. the Lagrangian capacity prices of
    :mod:`formulations.bounds.lagrange`) are added to the hours' costs the placement sees, steering
    phases away from crowded pool-hours; the schedule is costed by the caller at the real
    costs. ``start``: a warm start's placements, kept where they still fit
    (:meth:`LookAhead._kept`), the other phases placed around them."""
    return LookAhead(inst, space, windows, allow_reserved, prices, start=start).schedule()
