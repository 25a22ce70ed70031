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
from planner.physics.memory import MemoryAllowances
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
    #: module-level function, so the instance pickles. Called as
    #: ``rebuild(raw, source, base_dir, data_root=data_root)``.
    rebuild: Callable[..., Instance] = field(compare=False, repr=False)
    #: The folder besides ``base_dir`` that files named by the instance may come from
    #: (:func:`planner.instance.files.data_file`), or None; variants keep it.
    data_root: Path | None = None
    warnings: tuple[str, ...] = field(default=())
    #: Derived from ``spec`` in ``__post_init__`` (see :meth:`_index`); not pickled.
    _by_name: Mapping[str, Phase] = field(init=False, repr=False, compare=False)
    _successors: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in _MAPPINGS:
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _read_only(value))
        self._index()

    def _index(self) -> None:
        """Lookups by phase name, built once (O(phases + edges)) so that :meth:`phase` and
        :meth:`successors` are O(1) and callers looping over phases stay linear."""
        by_name: dict[str, Phase] = {}
        succ: dict[str, list[str]] = {p.name: [] for p in self.spec.phases}
        for p in self.spec.phases:
            by_name.setdefault(p.name, p)
            if not p.done:
                for q in p.predecessors:
                    if q in succ:
                        succ[q].append(p.name)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_successors", {k: tuple(v) for k, v in succ.items()})

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in _DERIVED}
        for name in _MAPPINGS:
            state[name] = dict(state[name])
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # unpickled arrays come back writable: freeze them again
        for name, value in state.items():
            object.__setattr__(self, name, _read_only(value) if name in _MAPPINGS else value)
        self._index()

    @property
    def name(self) -> str:
        """The instance's name (its ``name`` field)."""
        return self.spec.name

    @property
    def hours(self) -> int:
        """Hours in the planning horizon: every hourly array has this length."""
        return self.spec.horizon.hours

    @property
    def start(self) -> datetime:
        """The horizon's first hour (a time with its UTC offset): hour 0 of every array."""
        return self.spec.horizon.start

    def time_of(self, hour: int) -> datetime:
        """The time at which horizon hour ``hour`` starts (in the horizon start's offset)."""
        return self.start + timedelta(hours=hour)

    def phase(self, name: str) -> Phase:
        """The phase called ``name`` (KeyError for an unknown one)."""
        return self._by_name[name]

    @property
    def phases(self) -> tuple[Phase, ...]:
        """Every phase in file order, done ones included (``active_phases`` leaves those out)."""
        return self.spec.phases

    @property
    def active_phases(self) -> tuple[Phase, ...]:
        """Phases still to run (``done: true`` marks an artifact that already exists)."""
        return tuple(p for p in self.spec.phases if not p.done)

    def gpu(self, name: str) -> GpuType:
        """The GPU type called ``name``, completed from the catalog."""
        return self.spec.gpu_types[name]

    @property
    def memory_allowances(self) -> MemoryAllowances:
        """The memory policy (``memory:``) as physics takes it."""
        return MemoryAllowances(**self.spec.memory.model_dump())

    def region(self, name: str) -> Region:
        """The region called ``name``."""
        return self.spec.regions[name]

    def successors(self, name: str) -> tuple[str, ...]:
        """Phases still to run that name ``name`` as a predecessor (a done successor needs
        nothing handed on)."""
        return self._successors.get(name, ())

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
        """The reserved term ``name`` of the (region, GPU type) offer, None when it has no such
        term."""
        return self.rates.term(region, gpu, name)

    def replace(self, updates: Mapping[str, Any]) -> Instance:
        """A variant: ``updates`` maps dotted field paths (``regions.de.pue``,
        ``phases.pretrain.deadline`` — phases by name) to new values; the result is validated
        afresh, so a bad value raises the same :class:`InstanceError` a file would."""
        data: Any = copy_document(self.raw)
        for path, value in updates.items():
            set_path(data, path, value, self.source)
        return self.rebuild(data, self.source, self.base_dir, data_root=self.data_root)


#: Fields derived from ``spec`` in ``__post_init__`` (not pickled; rebuilt on load).
_DERIVED = ("_by_name", "_successors")

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


def copy_document(x: Any) -> Any:
    """A copy of a parsed document's dicts and lists (the leaves, immutable, are shared)."""
    if isinstance(x, dict):
        return {k: copy_document(v) for k, v in x.items()}
    if isinstance(x, list):
        return [copy_document(v) for v in x]
    return x
