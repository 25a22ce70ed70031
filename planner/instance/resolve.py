"""Resolution: a validated, cross-checked spec becomes the :class:`Instance` the planner uses,
every series one value per horizon hour."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from planner.instance.errors import FieldError, InstanceError
from planner.instance.model import Instance
from planner.instance.offers import resolve_offers
from planner.instance.references import topological, window
from planner.instance.schema import InstanceSpec, Series
from planner.instance.series import SeriesError, resolve_series
from planner.physics.reliability import FAILURE_PRESETS, per_gpu_hour_from_node_days
from planner.physics.transformer import ModelDims, dims


def resolve(
    spec: InstanceSpec,
    data: Any,
    file: str,
    base_dir: Path,
    rebuild: Callable[..., Instance],
    data_root: Path | None = None,
) -> Instance:
    """Resolve every series to one value per horizon hour (price = series x scale + adder,
    USD/MWh), capacities to hourly arrays, release/deadline to hour slots (:func:`_window`),
    models to :class:`~planner.physics.transformer.ModelDims` (with their full architecture
    when the spec gives one: presets, GQA, MoE, ...) and failure rates per GPU type (its own
    rate, per 1,000 node-days, a fleet preset, else the instance's failure model); arrays are
    read-only and mappings are read-only views."""
    errors: list[FieldError] = []
    T, start = spec.horizon.hours, spec.horizon.start
    price: dict[str, np.ndarray] = {}
    carbon: dict[str, np.ndarray | None] = {}
    capacity: dict[tuple[str, str], np.ndarray] = {}
    series_notes: list[str] = []  # what the CSV reader did that a user should know
    for rname, r in spec.regions.items():
        try:
            prices = (
                resolve_series(
                    r.electricity,
                    start,
                    T,
                    r.timezone,
                    base_dir,
                    data_root=data_root,
                    notes=series_notes,
                )
                + r.price_adder_usd_per_mwh
            )
            prices.setflags(write=False)
            price[rname] = prices
        except SeriesError as e:
            errors.append(FieldError(f"regions.{rname}.electricity", str(e)))
        carbon[rname] = None
        if r.carbon_intensity is not None:
            try:
                ci = resolve_series(
                    r.carbon_intensity,
                    start,
                    T,
                    r.timezone,
                    base_dir,
                    data_root=data_root,
                    notes=series_notes,
                )
                if np.any(ci < 0):
                    errors.append(
                        FieldError(
                            f"regions.{rname}.carbon_intensity", "expected non-negative gCO2/kWh"
                        )
                    )
                carbon[rname] = ci
            except SeriesError as e:
                errors.append(FieldError(f"regions.{rname}.carbon_intensity", str(e)))
        for g, cap in r.capacity.items():
            where = f"regions.{rname}.capacity.{g}"
            try:
                arr = _capacity(cap, start, T, r.timezone, base_dir, data_root)
            except SeriesError as e:
                errors.append(FieldError(where, str(e)))
                continue
            arr.setflags(write=False)
            capacity[(rname, g)] = arr
    rates, rate_errors = resolve_offers(spec, base_dir)
    errors.extend(rate_errors)
    if errors:
        raise InstanceError(file, errors)
    warnings: list[str] = list(dict.fromkeys(series_notes))
    models = _models(spec, warnings)
    windows = {p.name: window(spec, p) for p in spec.phases}
    fr = _failure_rates(spec)
    return Instance(
        spec=spec,
        source=file,
        raw=data,
        base_dir=base_dir,
        price=MappingProxyType(price),
        carbon=MappingProxyType(carbon),
        capacity=MappingProxyType(capacity),
        release=MappingProxyType({n: w[0] for n, w in windows.items()}),
        deadline=MappingProxyType({n: w[1] for n, w in windows.items()}),
        models=MappingProxyType(models),
        order=topological(spec.phases),
        failures_per_gpu_hour=MappingProxyType(fr),
        rates=rates,
        warnings=tuple(warnings),
        rebuild=rebuild,
        data_root=data_root,
    )


def _models(spec: InstanceSpec, warnings: list[str]) -> dict[str, ModelDims]:
    """Every model's dimensions (with its full architecture when the spec gives one); a
    warning for each whose architecture had to be inferred from its parameter count."""
    models: dict[str, ModelDims] = {}
    for mname, m in spec.models.items():
        models[mname] = dims(
            m.params,
            m.layers,
            m.hidden,
            m.heads,
            m.seq_len,
            m.vocab,
            m.optimizer,
            m.flash_attention,
            arch=m.architecture() if m.uses_full_architecture else None,
        )
        if models[mname].inferred:
            md = models[mname]
            warnings.append(
                f"models.{mname}: architecture inferred from params (L={md.layers},"
                f" h={md.hidden}, heads={md.heads}); give layers/hidden for accuracy"
            )
    return models


def _failure_rates(spec: InstanceSpec) -> dict[str, float]:
    """Failures per GPU-hour of every GPU type: its own rate, per 1,000 node-days, a fleet
    preset, else the instance's failure model."""
    fr: dict[str, float] = {}
    for gname, gpu in spec.gpu_types.items():
        if gpu.failures_per_gpu_hour is not None:
            fr[gname] = gpu.failures_per_gpu_hour
        elif gpu.failures_per_1000_node_days is not None:
            fr[gname] = per_gpu_hour_from_node_days(
                gpu.failures_per_1000_node_days, gpu.gpus_per_node
            )
        elif gpu.failure_preset is not None:
            fr[gname] = FAILURE_PRESETS[gpu.failure_preset].per_gpu_hour
        else:
            fr[gname] = spec.failure.failures_per_gpu_hour
    return fr


def _capacity(
    cap: int | tuple[int, ...] | Series,
    start: datetime,
    hours: int,
    timezone: str,
    base_dir: Path,
    data_root: Path | None,
) -> np.ndarray:
    """A pool's GPUs per horizon hour. A constant capacity is one value seen ``hours`` times
    (a read-only broadcast view: 64 regions x 64 GPU types x 3 years of hours would
    otherwise take 860 MB); a series (any form) must give whole numbers >= 0."""
    if isinstance(cap, tuple):
        return np.asarray(cap[:hours], dtype=float)
    if not isinstance(cap, Series):
        return np.broadcast_to(np.float64(cap), (hours,))
    if cap.constant is not None and cap.scale == 1.0:
        values = np.broadcast_to(np.float64(cap.constant), (hours,))
    else:
        values = resolve_series(cap, start, hours, timezone, base_dir, data_root=data_root)
    bad = np.flatnonzero((values < 0) | (values != np.floor(values)))
    if len(bad):
        k = int(bad[0])
        raise SeriesError(
            f"expected whole numbers of GPUs >= 0, got {values[k]:g} at hour {k} "
            f"({len(bad)} hour{'s' * (len(bad) != 1)} in all)"
        )
    return values
