"""The x columns of one phase on one configuration, shared by the hourly MILP's families
(:mod:`formulations.exact.milp.model`) and its segment families
(:mod:`formulations.exact.milp.segments`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from planner.model.configs import Config


@dataclass(frozen=True)
class Column:
    """The x columns of one phase on one configuration (in one segment): their hours, the
    column indices and the z variable that switches them on. ``key`` is (phase, config index)
    or (phase, segment, config index)."""

    key: tuple[Hashable, ...]
    config: Config
    hours: np.ndarray
    xi: np.ndarray
    z: int
