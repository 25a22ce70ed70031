"""The model layer: what a phase is (``workload``), the configuration types and space
(``configtypes``, ``configs``), THE cost model (``costs``), time windows, the schedule every
solver returns, the plan and the result, progress events, the options every solver takes, and
the findings before any model (``hygiene``, ``consistency``, ``emissions``)."""
