"""The built-in GPU catalog moved into the instance layer (:mod:`planner.instance.catalog`,
which reads instance files' GPU names through it); this name stays so existing imports work."""

from planner.instance.catalog import *  # noqa: F403
