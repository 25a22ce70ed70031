"""A small vectorised container for a mixed-integer linear program.

The formulations write their variables and constraints here once, family by family, with
readable keys. From it the model goes either straight into highspy (arrays, well under a
microsecond per nonzero) or into a Pyomo model that a person can read, extend and export
(:func:`to_pyomo`); both describe exactly the same program.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

INF = float("inf")


@dataclass
class Family:
    """A named group of columns or rows: ``members[k]`` is the index of the one keyed
    ``keys[k]``. Members need not be contiguous (families may interleave)."""

    name: str
    members: list[int]
    keys: list[Hashable]
    doc: str = ""


@dataclass
class LinearProgram:
    """Columns (variables) and rows (constraints), grouped into named families."""

    cost: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    var_families: dict[str, Family] = field(default_factory=dict)
    row_lower: list[float] = field(default_factory=list)
    row_upper: list[float] = field(default_factory=list)
    row_ptr: list[int] = field(default_factory=lambda: [0])
    row_idx: list[int] = field(default_factory=list)
    row_val: list[float] = field(default_factory=list)
    row_families: dict[str, Family] = field(default_factory=dict)
    offset: float = 0.0
    #: Columns defined by a row of their own (:meth:`add_definition`): column -> that row.
    definitions: dict[int, int] = field(default_factory=dict)

    @property
    def num_vars(self) -> int:
        """Columns of the program."""
        return len(self.cost)

    @property
    def num_rows(self) -> int:
        """Rows (constraints) of the program."""
        return len(self.row_lower)

    @property
    def num_nonzeros(self) -> int:
        """Nonzeros of the constraint matrix: what the size guards compare."""
        return len(self.row_idx)

    def add_vars(
        self,
        family: str,
        keys: Sequence[Hashable],
        lower: float | Sequence[float] | np.ndarray = 0.0,
        upper: float | Sequence[float] | np.ndarray = INF,
        integer: bool = False,
        cost: float | Sequence[float] | np.ndarray = 0.0,
        doc: str = "",
    ) -> np.ndarray:
        """Add one column per key; returns their indices. A family may be extended."""
        n = len(keys)
        start = self.num_vars
        self.cost.extend(_broadcast(cost, n))
        self.lower.extend(_broadcast(lower, n))
        self.upper.extend(_broadcast(upper, n))
        self.integer.extend([integer] * n)
        fam = self.var_families.setdefault(family, Family(family, [], [], doc))
        fam.members.extend(range(start, start + n))
        fam.keys.extend(keys)
        return np.arange(start, start + n)

    def add_row(
        self,
        family: str,
        key: Hashable,
        idx: Sequence[int] | np.ndarray,
        val: Sequence[float] | np.ndarray,
        lower: float = -INF,
        upper: float = INF,
    ) -> None:
        """Add one constraint lower <= sum(val * x[idx]) <= upper."""
        start = self.num_rows
        self.row_idx.extend(int(i) for i in idx)
        self.row_val.extend(float(v) for v in val)
        self.row_ptr.append(len(self.row_idx))
        self.row_lower.append(lower)
        self.row_upper.append(upper)
        fam = self.row_families.setdefault(family, Family(family, [], []))
        fam.members.append(start)
        fam.keys.append(key)

    def add_definition(
        self,
        family: str,
        key: Hashable,
        j: int,
        idx: Sequence[int] | np.ndarray,
        val: Sequence[float] | np.ndarray,
    ) -> None:
        """Add the row ``x[j] = sum(val * x[idx])`` and mark x[j] as defined by it: the
        solver's copy (:func:`substituted`) puts the sum in its place in every other row and
        in the objective and leaves the row out. The caller guarantees that x[j] is
        continuous, that its bounds follow from those of x[idx] and the other rows, and that
        no column of ``idx`` is itself defined."""
        self.definitions[int(j)] = self.num_rows
        self.add_row(family, key, [j, *idx], [1.0, *(-float(v) for v in val)], 0.0, 0.0)

    def add_at_least(self, family: str, key: Hashable, i: int, j: int) -> None:
        """Add x[i] >= x[j] (the row 0 <= x[i] - x[j]): one indicator implies another, a
        sequence is monotone."""
        self.add_row(family, key, [i, j], [1.0, -1.0], lower=0.0)

    def add_at_most(self, family: str, key: Hashable, i: int, j: int) -> None:
        """Add x[i] <= x[j] (the row x[i] - x[j] <= 0)."""
        self.add_row(family, key, [i, j], [1.0, -1.0], upper=0.0)

    def add_rows(
        self,
        family: str,
        keys: Sequence[Hashable],
        idx: Sequence[np.ndarray],
        val: Sequence[np.ndarray],
        lower: float | np.ndarray = -INF,
        upper: float | np.ndarray = INF,
    ) -> None:
        """Add one constraint per key, ``lower[k] <= sum(val[k] * x[idx[k]]) <= upper[k]``:
        the same rows as :meth:`add_row` key by key, in one go (the builders' bulk path)."""
        n = len(keys)
        if not n:
            return
        start = self.num_rows
        lens = np.fromiter((len(i) for i in idx), dtype=np.int64, count=n)
        flat_idx = np.concatenate([np.asarray(i, dtype=np.int64) for i in idx])
        flat_val = np.concatenate([np.asarray(v, dtype=float) for v in val])
        base = len(self.row_idx)
        self.row_idx.extend(flat_idx.tolist())
        self.row_val.extend(flat_val.tolist())
        self.row_ptr.extend((base + np.cumsum(lens)).tolist())
        self.row_lower.extend(np.broadcast_to(np.asarray(lower, dtype=float), (n,)).tolist())
        self.row_upper.extend(np.broadcast_to(np.asarray(upper, dtype=float), (n,)).tolist())
        fam = self.row_families.setdefault(family, Family(family, [], []))
        fam.members.extend(range(start, start + n))
        fam.keys.extend(keys)

    def arrays(self) -> dict[str, np.ndarray]:
        """The program as numpy arrays (costs, bounds, integrality, rows in CSR form), what a solver
        backend or a child process takes."""
        return {
            "cost": np.asarray(self.cost, dtype=float),
            "lower": np.asarray(self.lower, dtype=float),
            "upper": np.asarray(self.upper, dtype=float),
            "integer": np.asarray(self.integer, dtype=bool),
            "row_lower": np.asarray(self.row_lower, dtype=float),
            "row_upper": np.asarray(self.row_upper, dtype=float),
            "row_ptr": np.asarray(self.row_ptr, dtype=np.int64),
            "row_idx": np.asarray(self.row_idx, dtype=np.int64),
            "row_val": np.asarray(self.row_val, dtype=float),
        }

    def var_name(self, j: int) -> str:
        """A readable name of column ``j``: its family and key (``x[train,3,17]``), or ``v<j>``
        outside any family."""
        for fam in self.var_families.values():
            if j in fam.members:
                return f"{fam.name}[{_fmt(fam.keys[fam.members.index(j)])}]"
        return f"v{j}"

    def objective_of(self, x: np.ndarray) -> float:
        """The objective of solution ``x``, the constant offset included."""
        return float(np.dot(np.asarray(self.cost), x) + self.offset)

    def violations(self, x: np.ndarray, tol: float = 1e-6) -> list[str]:
        """Rows and bounds a point violates (for testing starts and extracted solutions)."""
        a = self.arrays()
        out: list[str] = []
        lo, hi = a["lower"], a["upper"]
        bad = np.where((x < lo - tol) | (x > hi + tol))[0]
        out.extend(f"bound {self.var_name(int(j))} = {x[j]}" for j in bad[:10])
        act = _activities(a, x)
        bad_rows = np.where((act < a["row_lower"] - tol) | (act > a["row_upper"] + tol))[0]
        for r in bad_rows[:10]:
            out.append(
                f"row {self._row_name(int(r))}: {act[r]} not in "
                f"[{a['row_lower'][r]}, {a['row_upper'][r]}]"
            )
        return out

    def activities(self, x: np.ndarray) -> np.ndarray:
        """``sum(val * x[idx])`` of every row at the point ``x``."""
        return _activities(self.arrays(), x)

    def _row_name(self, r: int) -> str:
        for fam in self.row_families.values():
            if r in fam.members:
                return f"{fam.name}[{_fmt(fam.keys[fam.members.index(r)])}]"
        return f"r{r}"


def substituted(
    lp: LinearProgram,
) -> tuple[dict[str, np.ndarray], Callable[[np.ndarray], np.ndarray] | None]:
    """The arrays of ``lp`` with its defined columns (:meth:`LinearProgram.add_definition`)
    substituted out, and the map from a point of the result back to a point of ``lp`` (None
    when nothing is defined).

    With ``x_j = sum_k b_jk x_k`` every other row's ``a_rj x_j`` becomes ``sum_k a_rj b_jk
    x_k`` (entries on the same column summed), the cost ``c_j`` moves to ``c_k += c_j b_jk``,
    the defining rows go, and x_j is fixed at 0 (so :func:`without_fixed_zeros` drops it);
    the map sets ``x_j = sum_k b_jk x_k``. The same program in fewer rows and columns: what a
    presolve's aggregator would do, for solves with HiGHS's presolve off."""
    a = lp.arrays()
    if not lp.definitions:
        return a, None
    ptr, idx, val = a["row_ptr"], a["row_idx"], a["row_val"]
    n, m = len(a["cost"]), len(a["row_lower"])
    cols = np.fromiter(lp.definitions, dtype=np.int64, count=len(lp.definitions))
    rows = np.fromiter(lp.definitions.values(), dtype=np.int64, count=len(cols))
    row_of = np.repeat(np.arange(m), np.diff(ptr))
    is_def_row = np.zeros(m, dtype=bool)
    is_def_row[rows] = True
    is_def_col = np.zeros(n, dtype=bool)
    is_def_col[cols] = True
    # the definitions' right-hand sides, grouped by defined column (position in ``cols``)
    pos = np.full(n, -1, dtype=np.int64)
    pos[cols] = np.arange(len(cols))
    in_def = is_def_row[row_of]
    own = in_def & is_def_col[idx]
    if np.any(val[own] != 1.0) or np.any(np.bincount(row_of[own], minlength=m)[rows] != 1):
        raise ValueError("a defining row holds its own column, with coefficient 1, and no other")
    rhs = in_def & ~is_def_col[idx]
    col_of_row = np.full(m, -1, dtype=np.int64)
    col_of_row[rows] = cols
    owner = pos[col_of_row[row_of[rhs]]]
    order = np.argsort(owner, kind="stable")
    d_owner, d_col, d_val = owner[order], idx[rhs][order], -val[rhs][order]
    d_ptr = np.concatenate([[0], np.cumsum(np.bincount(d_owner, minlength=len(cols)))])
    # every other row: kept entries, and each defined column's entry expanded
    other = ~is_def_row[row_of]
    keep = other & ~is_def_col[idx]
    exp = other & is_def_col[idx]
    e_pos = pos[idx[exp]]
    counts = d_ptr[e_pos + 1] - d_ptr[e_pos]
    starts = np.repeat(d_ptr[e_pos], counts)
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    src = starts + within
    new_row = np.cumsum(~is_def_row) - 1
    r_all = np.concatenate([row_of[keep], np.repeat(row_of[exp], counts)])
    c_all = np.concatenate([idx[keep], d_col[src]])
    v_all = np.concatenate([val[keep], np.repeat(val[exp], counts) * d_val[src]])
    order = np.lexsort((c_all, r_all))
    r_all, c_all, v_all = r_all[order], c_all[order], v_all[order]
    first = np.ones(len(r_all), dtype=bool)
    first[1:] = (r_all[1:] != r_all[:-1]) | (c_all[1:] != c_all[:-1])
    at = np.flatnonzero(first)
    v_sum = np.add.reduceat(v_all, at) if len(at) else v_all[:0]
    r_u, c_u = r_all[at], c_all[at]
    nz = v_sum != 0.0
    r_u, c_u, v_sum = r_u[nz], c_u[nz], v_sum[nz]
    out = dict(a)
    cost = a["cost"].copy()
    np.add.at(cost, d_col, np.repeat(cost[cols], np.diff(d_ptr)) * d_val)
    cost[cols] = 0.0
    lower, upper = a["lower"].copy(), a["upper"].copy()
    lower[cols] = 0.0
    upper[cols] = 0.0
    counts_r = np.bincount(new_row[r_u], minlength=m - len(rows))
    out.update(
        cost=cost,
        lower=lower,
        upper=upper,
        row_lower=a["row_lower"][~is_def_row],
        row_upper=a["row_upper"][~is_def_row],
        row_ptr=np.concatenate([[0], np.cumsum(counts_r)]).astype(np.int64),
        row_idx=c_u.astype(np.int64),
        row_val=v_sum,
    )
    d_src_owner = np.repeat(np.arange(len(cols)), np.diff(d_ptr))

    def expand(x: np.ndarray) -> np.ndarray:
        full = np.array(x, dtype=float)
        full[cols] = np.bincount(d_src_owner, weights=d_val * full[d_col], minlength=len(cols))
        return full

    return out, expand


def _activities(a: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """Row activities from the arrays of :meth:`LinearProgram.arrays`; 0 for a row without
    nonzeros wherever it stands (``np.add.reduceat`` cannot take the offset of an empty last
    row: a carbon cap over no emissions raised IndexError there)."""
    ptr, idx, val = a["row_ptr"], a["row_idx"], a["row_val"]
    rows = len(ptr) - 1
    row_of = np.repeat(np.arange(rows), np.diff(ptr))
    return np.bincount(row_of, weights=val * x[idx], minlength=rows).astype(float)


def _broadcast(v: float | Sequence[float] | np.ndarray, n: int) -> list[float]:
    if isinstance(v, int | float):
        return [float(v)] * n
    vals = [float(x) for x in v]
    if len(vals) != n:
        raise ValueError(f"expected {n} values, got {len(vals)}")
    return vals


def _fmt(key: Hashable) -> str:
    if isinstance(key, tuple):
        return ",".join(str(k) for k in key)
    return str(key)
