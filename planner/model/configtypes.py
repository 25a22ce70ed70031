"""The types of the configuration space, below the cost model: a :class:`Config` (one way to run
one phase, with its rates per running hour), its :class:`Throughput`, the :class:`MemoryNeed`
and :class:`Infeasibility` of a phase that cannot run, and the :class:`ConfigSpace`.

They live here, apart from the enumeration (:mod:`planner.model.configs`), so that the cost model
(:mod:`planner.model.costs`) and the schedule (:mod:`planner.model.schedule`) can name them without
importing the enumeration that uses them: this module imports the physics and nothing of the planner
above.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from typing import Any, cast

from planner.physics import compute, reliability
from planner.physics.layout import Layout, LayoutChoice
from planner.physics.memory import MemoryBreakdown


@dataclass(frozen=True)
class Throughput:
    """Sustained model FLOP/s of a configuration and its factors: ``eff_scale`` relative to
    the MFU's reference scale (``scaling`` says how), ``eff_layout`` the layout's own factor
    and ``recompute`` the recomputation factor (both 1 when the MFU is ``in_mfu``)."""

    flops_per_s: float
    eff_scale: float
    eff_layout: float
    recompute: float
    scaling: compute.ScalingReport


@dataclass(frozen=True)
class Config:
    """One way to run one phase. Rates are per running hour unless named otherwise."""

    phase: str
    index: int
    gpu: str
    region: str
    contract: str
    gpus: float
    spare_gpus: int
    layout: Layout
    tier: str
    memory: MemoryBreakdown
    throughput: Throughput
    compute_hours: float
    work_hours: float
    hours: int
    rental_per_h: float
    storage_per_h: float
    facility_kw: float
    job_failure_rate: float
    failure_rate: float
    loss_h: float
    downtime_h: float
    checkpoint: str
    checkpoint_interval_s: float
    checkpoint_write_s: float
    checkpoint_persist_s: float
    #: Seconds until a checkpoint is in the storage tier: what leaving this configuration
    #: (a migration) waits for (planner.physics.storage.CheckpointCost.stored_s).
    checkpoint_stored_s: float
    checkpoint_reload_s: float
    sla_share: float
    sla_multiplier: float
    billing_hours: int
    min_rental_hours: int
    one_time_usd: float
    archive_per_h: float
    resume_usd: float
    #: The reserved term a reserved-contract configuration runs under ("" for the offer's
    #: whole-horizon reservation and for other contracts).
    term: str = ""
    #: For a phase re-planned while running (``phases.<p>.running``): the migration from the
    #: running configuration into this one, (rental, energy, transfer) USD and its hours
    #: (planner.model.costs.migration_cost), None when the phase is not running anywhere;
    #: ``continues``: this is the running configuration (no cost when it goes on from the
    #: phase's release; a write and restart otherwise).
    entry: tuple[float, float, float] | None = None
    entry_hours: float = 0.0
    continues: bool = False
    #: Who pays the power (planner.instance.offers.energy_billing): ``metered`` on top of
    #: the rental at the region's price, or ``included`` in the rental price (then the
    #: configuration's power counts in kWh and emissions, not in its energy cost).
    energy: str = "metered"
    #: Whole hours kept before the phase's deadline for the interruptions expected at its
    #: ``deadline_confidence`` (planner.physics.reliability.deadline_reserve; 0 without one).
    reserve_h: int = 0

    @property
    def billed_kw(self) -> float:
        """Facility kW the plan pays for at the electricity price: all of it when the power
        is metered, none when the rental includes it."""
        return self.facility_kw if self.energy == "metered" else 0.0

    @property
    def total_gpus(self) -> float:
        """GPUs held, spares included: what capacity and rental count."""
        return self.gpus + self.spare_gpus

    @property
    def flops_per_s(self) -> float:
        """Sustained model FLOP/s of the configuration (:class:`Throughput`)."""
        return self.throughput.flops_per_s

    @property
    def checkpoint_overhead(self) -> float:
        """Share of the work hours spent stalled on checkpoints, delta / (tau + delta)."""
        return reliability.checkpoint_overhead(self.checkpoint_write_s, self.checkpoint_interval_s)

    @property
    def effective_training_time(self) -> float:
        """Useful compute over expected wall time: (1 - overhead) (1 - lambda L)
        (:func:`planner.physics.reliability.effective_training_time`)."""
        return (1.0 - self.checkpoint_overhead) * (1.0 - self.job_failure_rate * self.loss_h)

    def but(self, **changes: object) -> Config:
        """A copy with ``changes`` to its fields: ``dataclasses.replace`` without calling the
        generated ``__init__`` again (a configuration stores its fields and nothing derived
        from them), 5 us a copy against 30; the configuration spaces of the lab's quarter and
        its re-plans renumber or re-enter 12,000-23,000 of them."""
        unknown = changes.keys() - _CONFIG_FIELDS
        if unknown:
            raise TypeError(f"Config has no field {sorted(unknown)[0]!r}")
        new = object.__new__(Config)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    @classmethod
    def built(cls, values: dict[str, Any]) -> Config:
        """A configuration from every one of its fields but those with a default (which
        take it), without the generated ``__init__`` (a frozen dataclass sets each of its 40
        fields through ``object.__setattr__``): what the enumeration builds its hundreds of
        thousands with, 2.9 us a configuration against 17.1. ``values`` must name fields only,
        every one without a default among them (tests/model/test_configs_fast.py)."""
        new = object.__new__(cls)
        d = new.__dict__
        d.update(_CONFIG_DEFAULTS)
        d.update(values)
        return new

    def plan_fields(self) -> dict[str, object]:
        """The fields a plan entry states for this configuration (planner.model.plan.PhasePlan):
        where and on what it runs, its layout but ``dp``, its checkpointing and reserved term."""
        lay = self.layout
        return {
            **{k: getattr(self, k) for k in _PLAN_FIELDS},
            **{k: getattr(lay, k) for k in _LAYOUT_FIELDS},
        }

    @property
    def label(self) -> str:
        """The configuration in one line for tables and messages: GPUs (+spares), type, contract,
        region, precision, ZeRO, recomputation, tp/pp, tier and extras."""
        lay = self.layout
        g = f"{self.gpus:g}" if self.gpus >= 1 else f"{self.gpus:g}x"
        spares = f"+{self.spare_gpus}" if self.spare_gpus else ""
        extras = " ".join(
            x
            for x in (lay.extras(), "" if self.checkpoint == "async" else f"ckpt={self.checkpoint}")
            if x
        )
        contract = f"{self.contract}:{self.term}" if self.term else self.contract
        return (
            f"{g}{spares} {self.gpu} {contract} @{self.region} {lay.precision} "
            f"ZeRO-{lay.zero} rc={lay.recompute} tp{lay.tp} pp{lay.pp} {self.tier}"
            + (f" {extras}" if extras else "")
        )


#: A configuration's own fields a plan entry states, and its layout's (planner.model.plan).
_PLAN_FIELDS = ("gpu", "region", "contract", "gpus", "spare_gpus", "tier", "checkpoint", "term")
_CONFIG_FIELDS = frozenset(f.name for f in fields(Config))
_CONFIG_DEFAULTS = {f.name: f.default for f in fields(Config) if f.default is not MISSING}
_LAYOUT_FIELDS = tuple(f.name for f in fields(LayoutChoice))


@dataclass(frozen=True)
class MemoryNeed:
    """The layout of a phase whose memory need comes closest to fitting: ``need_gb`` against
    ``usable_gb`` (the GPU's memory x slice x (1 - headroom)) on ``gpu`` at ``setting``."""

    need_gb: float
    usable_gb: float
    gpu: str
    setting: str

    @property
    def short_gb(self) -> float:
        """GB per GPU the closest layout lacks (need - usable)."""
        return self.need_gb - self.usable_gb


@dataclass(frozen=True)
class Infeasibility:
    """Why a phase has no configuration. ``kind``: memory, precision, zones, region, offer,
    window or capacity; ``memory`` is the closest layout when memory rules every one out."""

    phase: str
    reason: str
    kind: str = "configuration"
    memory: MemoryNeed | None = None


@dataclass(frozen=True)
class ConfigSpace:
    """Feasible configurations per phase (dominated ones dropped) and the phases without any."""

    by_phase: dict[str, tuple[Config, ...]]
    infeasible: tuple[Infeasibility, ...]
    dropped: dict[str, int] = field(default_factory=dict)
    #: A space some of whose phases were narrowed from another one's (the baselines'
    #: variants, :func:`planner.model.configs.variant_space`): that space, and per narrowed
    #: phase the position there of each of its configurations (the same configuration but
    #: for its ``index``).
    narrowed_from: ConfigSpace | None = field(default=None, compare=False, repr=False)
    positions: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)

    def __getitem__(self, phase: str) -> tuple[Config, ...]:
        return self.by_phase[phase]

    def fewest_hours(self) -> dict[str, int]:
        """The fewest hours any configuration of each phase needs (0 when it has none): the
        ``n_p`` of :func:`planner.model.windows.time_windows`."""
        return {p: min((c.hours for c in cs), default=0) for p, cs in self.by_phase.items()}

    def restricted(self, by_phase: dict[str, tuple[Config, ...]]) -> ConfigSpace:
        """The same space with fewer configurations per phase (e.g. after bound pruning)."""
        return ConfigSpace(by_phase, self.infeasible, self.dropped)

    def by_plan_fields(self, phase: str) -> dict[tuple[object, ...], Config]:
        """The phase's configurations by :func:`plan_key` of their plan fields (how a plan
        entry names its configuration), built once per space and phase."""
        key = ("by_plan_fields", phase)
        out = cast("dict[tuple[object, ...], Config] | None", self.memo.get(key))
        if out is None:
            out = {plan_key(c.plan_fields()): c for c in self.by_phase.get(phase, ())}
            self.memo[key] = out
        return out

    def source(self, c: Config) -> Config | None:
        """The configuration of :attr:`narrowed_from` that ``c`` (of this space) is: the one it
        was narrowed from, or ``c`` itself when its phase kept that space's configurations;
        None otherwise (an enumerated phase)."""
        base = self.narrowed_from
        if base is None:
            return None
        at = self.positions.get(c.phase)
        if at is not None:
            return base.by_phase[c.phase][at[c.index]]
        return c if self.by_phase.get(c.phase) is base.by_phase.get(c.phase) else None

    @property
    def size(self) -> int:
        """Configurations over every phase."""
        return sum(len(v) for v in self.by_phase.values())

    @cached_property
    def memo(self) -> dict[object, object]:
        """Values derived from this space, kept as long as it lives (the greedy baselines'
        run tables, :func:`formulations.heuristics.greedy._phase_table`)."""
        return {}

    @cached_property
    def any_reserved(self) -> bool:
        """Some configuration runs on a reserved contract (reserved pools are offered)."""
        return any(c.contract == "reserved" for cs in self.by_phase.values() for c in cs)


def plan_key(fields_: dict[str, object]) -> tuple[object, ...]:
    """A configuration's plan fields (:meth:`Config.plan_fields`) as a key, in name order."""
    return tuple(fields_[k] for k in sorted(fields_))
