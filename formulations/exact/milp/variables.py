"""The state of the hourly MILP while it is built: :class:`MilpModel` holds the variables'
column indices by family. It sits below the families (:mod:`formulations.exact.milp.model` and
:mod:`formulations.exact.milp.segments`) so that both can name it without importing each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from formulations.exact.milp.columns import Column
from formulations.lp.linear import LinearProgram
from planner.instance.model import Instance
from planner.model.configs import ConfigSpace
from planner.model.windows import Windows


@dataclass
class MilpModel:
    """The hourly MILP being built: the instance, its configuration space, the linear program
    and the column indices of every variable family (names as in
    :mod:`formulations.exact.milp.model`), which the families, the solution reader and the
    neighbourhood search share."""

    inst: Instance
    space: ConfigSpace
    lp: LinearProgram
    windows: Windows
    #: Hours each configuration may use (False: fixed to 0), from bound-based pruning.
    masks: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    #: GPUs available per pool and hour (default: the instance's; a neighbourhood of the
    #: large-neighbourhood search passes what the phases it keeps fixed leave free).
    capacity: Mapping[tuple[str, str], np.ndarray] = field(default_factory=dict)
    z: dict[tuple[str, int], int] = field(default_factory=dict)
    x: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    u: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    #: non-preemptible phases: (start hours, y columns) per (phase, configuration index)
    y: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    S: dict[str, dict[int, int]] = field(default_factory=dict)
    P: dict[str, dict[int, int]] = field(default_factory=dict)
    F: dict[str, dict[int, int]] = field(default_factory=dict)
    s: dict[str, dict[int, int]] = field(default_factory=dict)
    a: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    b: dict[tuple[str, int], dict[int, int]] = field(default_factory=dict)
    m: dict[tuple[str, int], int] = field(default_factory=dict)
    R: dict[tuple[str, str, str], int] = field(default_factory=dict)
    sign: dict[tuple[str, str, str], int] = field(default_factory=dict)
    w: dict[tuple[str, str, str, str], int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    #: Every phase's x columns, in build order (the shared families read these).
    columns: dict[str, list[Column]] = field(default_factory=dict)
    #: Phases modelled in segments (formulations.exact.milp.segments) -> their segment count.
    segmented: dict[str, int] = field(default_factory=dict)
    #: Segment variables (formulations.exact.milp.segments): zs[(p, k, c)], the last segment's
    #: region last[(p, r)], and the rest by family.
    zs: dict[tuple[str, int, int], int] = field(default_factory=dict)
    last: dict[tuple[str, str], int] = field(default_factory=dict)
    seg: dict[str, dict[str, object]] = field(default_factory=dict)
