"""The linear-program container: defined columns substituted out for the solver, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from formulations.lp.highs_runner import solve_highs
from formulations.lp.linear import LinearProgram, substituted


def small() -> LinearProgram:
    """Choose one of three starts y (costs 1, 2, 4); the hours x0 = y0 + y1 and x1 = y1 + y2
    are defined by them, cost 10 and 3 an hour and share a capacity row x0 + x1 <= 1.5 with
    a column w that pays -2 per unit (w <= 1). Optimum: y2 (x = (0, 1)), w = 0.5, cost 4 + 3
    - 1 = 6."""
    lp = LinearProgram()
    y = lp.add_vars("y", [0, 1, 2], 0, 1, True, [1.0, 2.0, 4.0])
    x = lp.add_vars("x", [0, 1], 0, 1, False, [10.0, 3.0])
    w = lp.add_vars("w", ["w"], 0, 1, False, -2.0)
    lp.add_row("one", 0, y, [1.0, 1.0, 1.0], 1.0, 1.0)
    lp.add_definition("def", 0, int(x[0]), [y[0], y[1]], [1.0, 1.0])
    lp.add_definition("def", 1, int(x[1]), [y[1], y[2]], [1.0, 1.0])
    lp.add_row("cap", 0, [x[0], x[1], w[0]], [1.0, 1.0, 1.0], upper=1.5)
    return lp


def test_substitution_drops_the_defined_columns_and_rows() -> None:
    lp = small()
    a, expand = substituted(lp)
    assert expand is not None
    assert len(a["row_lower"]) == 2  # the choice and the capacity row
    assert a["upper"][3] == a["upper"][4] == 0.0  # x fixed at 0, passed on as the y's
    # the capacity row now reads y0 + 2 y1 + y2 + w <= 1.5; the costs moved to the y's
    cap = slice(int(a["row_ptr"][1]), int(a["row_ptr"][2]))
    assert dict(zip(a["row_idx"][cap].tolist(), a["row_val"][cap].tolist(), strict=True)) == {
        0: 1.0,
        1: 2.0,
        2: 1.0,
        5: 1.0,
    }
    assert a["cost"].tolist() == [11.0, 15.0, 7.0, 0.0, 0.0, -2.0]
    x = expand(np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.5]))
    assert x.tolist() == [0.0, 0.0, 1.0, 0.0, 1.0, 0.5]
    assert lp.violations(x) == []


def test_substituted_solve_is_the_same_program() -> None:
    lp = small()
    raw = solve_highs(lp, 10, 0.0, 1, isolate=False)
    assert raw.objective == pytest.approx(6.0)
    assert raw.x is not None
    assert raw.x.tolist() == pytest.approx([0.0, 0.0, 1.0, 0.0, 1.0, 0.5])
    assert lp.violations(raw.x) == []
    assert lp.objective_of(raw.x) == pytest.approx(6.0)


def test_columns_solved_as_continuous_give_the_relaxation() -> None:
    # max y subject to 2 y <= 1: 0 with y binary, 1/2 with y continuous
    lp = LinearProgram()
    lp.add_vars("y", [0], 0, 1, True, -1.0)
    lp.add_row("half", 0, [0], [2.0], upper=1.0)
    exact = solve_highs(lp, 10, 0.0, 1, isolate=False)
    loose = solve_highs(lp, 10, 0.0, 1, isolate=False, continuous=np.array([0]))
    assert exact.objective == pytest.approx(0.0)
    assert loose.objective == pytest.approx(-0.5)
    assert loose.bound is not None and loose.bound <= exact.objective


def test_a_definition_must_hold_its_own_column_once() -> None:
    lp = small()
    lp.row_val[lp.row_ptr[lp.definitions[3]]] = 2.0  # x0's coefficient in its own row
    with pytest.raises(ValueError, match="its own column"):
        substituted(lp)
