"""Bounds: what no plan can beat. ``separable`` (each phase alone, with the capacity to
itself; infeasibility at once), ``lagrange`` (the precedence-chained DP bound, its Lagrangian
ascent over capacity and reserved prices, and the plans its relaxation gives), ``segment_path``
(the bound for phases that may change configuration at checkpoints)."""
