"""The LP layer: ``linear`` (the LP container every model fills, to highspy arrays or Pyomo),
``pyomo_model``, ``highs_runner`` and ``highs_child`` (HiGHS in a child process that streams
its incumbent and bound to the parent)."""
