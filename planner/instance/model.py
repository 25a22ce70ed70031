"""The validated, resolved instance: the spec plus every series resolved to horizon hours."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from planner.instance.offers import Rates, Term
from planner.instance.paths import set_path
from planner.instance.schema import GpuType, InstanceSpec, Phase, Region
from planner.physics.transformer import ModelDims


@dataclass(frozen=True, eq=False)
class Instance:
    """Read-only. Build with :func:`planner.read`; make variants with :meth:`replace`.

    Hours are slots ``0 .. hours-1`` counted from ``start`` (UTC); hour ``t`` covers
    ``[start + t h, start + (t+1) h)``. A phase may run in hours ``release <= t < deadline``.

    The mappings are read-only views (:class:`types.MappingProxyType`) and the arrays in them
    are read-only (``setflags(write=False)``): a caller cannot change a series under a model
    built from it. Pickling and copying work (the views are rebuilt).
    """

    spec: InstanceSpec
    source: str
    raw: Mapping[str, Any]
    base_dir: Path
    #: USD/MWh per horizon hour, the region's adder included.
    price: Mapping[str, np.ndarray]
    #: gCO2/kWh per horizon hour, or None.
    carbon: Mapping[str, np.ndarray | None]
    #: GPUs available per (region, gpu type) per hour.
    capacity: Mapping[tuple[str, str], np.ndarray]
    release: Mapping[str, int]
    deadline: Mapping[str, int]
    models: Mapping[str, ModelDims]
    #: Phase names in a topological order of the precedence graph.
    order: tuple[str, ...]
    failures_per_gpu_hour: Mapping[str, float]
    #: Every offer's price per GPU-hour and spot's preemptions per hour, per horizon hour, and
    #: the reserved terms (:mod:`planner.instance.offers`); read through :meth:`offer_price`,
    #: :meth:`preemptions` and :meth:`reserved_terms`.
    rates: Rates
    #: The function that built this instance from its raw document (``from_dict``): what
    #: :meth:`replace` calls, so that this module needs no import of the reader. A
    #: module-level function, so the instance pickles.
    rebuild: Callable[[Any, str, Path], Instance] = field(compare=False, repr=False)
    warnings: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in _MAPPINGS:
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _read_only(value))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in _MAPPINGS:
            state[name] = dict(state[name])
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # unpickled arrays come back writable: freeze them again
        for name, value in state.items():
            object.__setattr__(self, name, _read_only(value) if name in _MAPPINGS else value)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def hours(self) -> int:
        return self.spec.horizon.hours

    @property
    def start(self) -> datetime:
        return self.spec.horizon.start

    def time_of(self, hour: int) -> datetime:
        return self.start + timedelta(hours=hour)

    def phase(self, name: str) -> Phase:
        for p in self.spec.phases:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def phases(self) -> tuple[Phase, ...]:
        return self.spec.phases

    @property
    def active_phases(self) -> tuple[Phase, ...]:
        """Phases still to run (``done: true`` marks an artifact that already exists)."""
        return tuple(p for p in self.spec.phases if not p.done)

    def gpu(self, name: str) -> GpuType:
        return self.spec.gpu_types[name]

    def region(self, name: str) -> Region:
        return self.spec.regions[name]

    def successors(self, name: str) -> tuple[str, ...]:
        """Phases still to run that name ``name`` as a predecessor (a done successor needs
        nothing handed on)."""
        return tuple(p.name for p in self.spec.phases if name in p.predecessors and not p.done)

    def offer_price(self, region: str, gpu: str, contract: str, term: str = "") -> np.ndarray:
        """USD per GPU-hour of an offer in every horizon hour (``term``: a reserved offer's
        named term; "" for the offer itself). KeyError when it is not offered."""
        return self.rates.price[(region, gpu, contract, term)]

    def preemptions(self, region: str, gpu: str) -> np.ndarray:
        """Spot preemptions per hour of a (region, GPU type) in every horizon hour (zeros
        when the region offers no spot)."""
        arr = self.rates.preemptions.get((region, gpu))
        return arr if arr is not None else np.zeros(self.hours)

    def reserved_terms(self, region: str, gpu: str) -> tuple[Term, ...]:
        """The reserved terms of a (region, GPU type) offer (one implicit term ``""`` over the
        horizon when the offer lists none); () without a reserved offer."""
        return self.rates.terms.get((region, gpu), ())

    def term(self, region: str, gpu: str, name: str) -> Term | None:
        return self.rates.term(region, gpu, name)

    def replace(self, updates: Mapping[str, Any]) -> Instance:
        """A variant: ``updates`` maps dotted field paths (``regions.de.pue``,
        ``phases.pretrain.deadline`` — phases by name) to new values; the result is validated
        afresh, so a bad value raises the same :class:`InstanceError` a file would."""
        data: Any = _deepcopy(self.raw)
        for path, value in updates.items():
            set_path(data, path, value, self.source)
        return self.rebuild(data, self.source, self.base_dir)


#: The fields held as read-only views.
_MAPPINGS = (
    "price",
    "carbon",
    "capacity",
    "release",
    "deadline",
    "models",
    "failures_per_gpu_hour",
)


def _read_only(mapping: Mapping[Any, Any]) -> MappingProxyType[Any, Any]:
    """A read-only view of a copy of ``mapping``, its numpy arrays made read-only."""
    for v in mapping.values():
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
    return MappingProxyType(dict(mapping))


def _deepcopy(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _deepcopy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_deepcopy(v) for v in x]
    return x
