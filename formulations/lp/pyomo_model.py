"""The Pyomo view of a :class:`LinearProgram`: one indexed ``Var`` per variable family and one
indexed ``Constraint`` per constraint family, named as in the formulation's docstrings
(``x[pretrain,3,17]``, ``capacity[us-east,H100,17]``), so a person can read it, add a
constraint, write it as LP/MPS (``m.write("plan.lp")``) or hand it to another solver."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyomo.environ as pyo

from formulations.lp.linear import LinearProgram


def _index(keys: list[object]) -> list[object]:
    return [k if isinstance(k, tuple) else (k,) for k in keys]


def to_pyomo(lp: LinearProgram) -> pyo.ConcreteModel:
    """The linear program as a Pyomo model (one indexed variable per variable family, one
    indexed constraint per row family), for the Pyomo backend; :func:`values_of` reads its
    solution back."""
    m = pyo.ConcreteModel(name="trainplan")
    a = lp.arrays()
    cols: list[Any] = [None] * lp.num_vars
    for fam in lp.var_families.values():
        members = np.asarray(fam.members, dtype=np.int64)
        if not len(members):
            continue
        integer = bool(a["integer"][members[0]])
        lo = a["lower"][members]
        hi = a["upper"][members]
        binary = integer and bool(np.all(lo == 0)) and bool(np.all(hi == 1))
        domain = pyo.Binary if binary else (pyo.Integers if integer else pyo.Reals)
        keys = _index(fam.keys)
        var = pyo.Var(keys, domain=domain, doc=fam.doc or None, dense=True)
        m.add_component(fam.name, var)
        for k, key in enumerate(keys):
            v = var[key]
            if not binary:
                v.setlb(None if np.isinf(lo[k]) else float(lo[k]))
                v.setub(None if np.isinf(hi[k]) else float(hi[k]))
            cols[int(members[k])] = v
    ptr, idx, val = a["row_ptr"], a["row_idx"], a["row_val"]
    for fam in lp.row_families.values():
        if not fam.members:
            continue
        cname = fam.name if not hasattr(m, fam.name) else f"{fam.name}_rows"
        keys = _index(fam.keys)
        row_of = {key: fam.members[k] for k, key in enumerate(keys)}

        def rule(_m: pyo.ConcreteModel, *key: object, row_of: dict = row_of) -> object:
            r = row_of[tuple(key)]
            body = pyo.quicksum(
                float(val[k]) * cols[int(idx[k])] for k in range(ptr[r], ptr[r + 1])
            )
            lo, hi = a["row_lower"][r], a["row_upper"][r]
            if np.isfinite(lo) and np.isfinite(hi) and lo == hi:
                return body == float(lo)
            if np.isfinite(lo) and np.isfinite(hi):
                return pyo.inequality(float(lo), body, float(hi))
            if np.isfinite(lo):
                return body >= float(lo)
            if np.isfinite(hi):
                return body <= float(hi)
            return pyo.Constraint.Skip

        m.add_component(cname, pyo.Constraint(keys, rule=rule, doc=fam.doc or None))
    cost = a["cost"]
    nz = np.nonzero(cost)[0]
    m.objective = pyo.Objective(
        expr=pyo.quicksum(float(cost[j]) * cols[int(j)] for j in nz) + lp.offset, sense=pyo.minimize
    )
    m._trainplan_cols = cols
    return m


def values_of(m: pyo.ConcreteModel, lp: LinearProgram) -> np.ndarray:
    """The solution of a model built by :func:`to_pyomo` as one value per column (0 for a column the
    solver left unset)."""
    cols = m._trainplan_cols
    return np.asarray([0.0 if v.value is None else float(v.value) for v in cols], dtype=float)
