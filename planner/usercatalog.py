"""User GPU catalogs moved into the instance layer (:mod:`planner.instance.usercatalog`, which
the instance reader completes GPU types from); this name stays so existing imports work."""

from planner.instance.usercatalog import *  # noqa: F403
