"""Analysis on top of solves: infeasibility explained (``explain``, ``elastic``), levers measured,
cost frontiers (``pareto``), savings against the baseline (``attribution``), the instance
summary, ``trainplan estimate``, plan files judged against their instance (``admit``) and the
Monte-Carlo replay (``simulate``)."""
