"""Plans without a model: ``lookahead`` (the look-ahead list schedule), ``greedy``, ``warm``
(a warm start's placements kept where they still fit), ``earliest`` (the earliest-finish pass
among plans of equal cost), ``baseline`` (the lever-free plan a team would run without the
planner, which attribution measures savings against)."""
