"""The exact models: ``milp`` (the hourly MILP, one builder per constraint family),
``starttime`` (the start-time MILP of contiguous runs) and ``cpsat`` (CP-SAT on the same
contiguous runs)."""
