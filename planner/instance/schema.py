"""The instance file schema: what a user may write, checked field by field.

Every model forbids unknown fields and is frozen. Units are in the field names
(``_gb`` is 10^9 bytes, ``_w`` watts, ``_usd_per_mwh`` US dollars per megawatt-hour), except
a GPU type's ``memory_gb``, the vendor's figure in its ``memory_unit`` (GiB for HBM).
Cross-references (a phase naming a GPU type) are checked in
:mod:`planner.instance.references`; :mod:`planner.instance.resolve` turns a validated
:class:`InstanceSpec` into the resolved :class:`~planner.instance.model.Instance`.
"""

# No ``from __future__ import annotations`` here: with it every field's annotation is a string
# that pydantic turns into a ForwardRef and evaluates (288 of them), 40-50 ms of every
# command's start; a method returning its own class quotes it instead.
import math
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from planner.physics.architecture import (
    MLA,
    OPTIONAL_ARCHITECTURE_FIELDS,
    FlopsConvention,
    MoE,
)
from planner.physics.memory import MemoryConvention, Offload
from planner.physics.storage import CheckpointScheme

Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
Recompute = Literal["none", "selective", "full"]
Contract = Literal["on_demand", "spot", "reserved"]
Cooling = Literal["air", "liquid", "immersion"]
Optimizer = Literal["adam", "adamw", "sgd", "sgd_momentum", "adafactor", "lion"]
Pass = Literal["train", "forward"]

#: The most digits an integer may have: a larger one is beyond the range of a float, in
#: which all the planner's arithmetic is done (10^308 is the largest power of ten a float
#: holds).
MAX_DIGITS = 308
_TOO_LARGE = 10**MAX_DIGITS

# Caps on how many of a thing an instance may list. Configurations multiply over a phase's
# option lists, and checks, configuration spaces and models grow with phases x regions x GPU
# types, so each cap bounds the work of `trainplan check` and of building a model. Each is
# far above what a real instance lists.
#: GPU counts per phase: every whole count from 1 to 64, or powers of two up to 2^63.
MAX_GPU_COUNTS = 64
#: Fractional GPU slices per phase: MIG-style partitions (sevenths, eighths) several times.
MAX_FRACTIONS = 32
#: Choices in each of tensor_parallel, pipeline_parallel, extra_spare_nodes: degrees are
#: powers of two, and 16 of them reach 2^15.
MAX_CHOICES = 16
#: Phases: a campaign is a handful (data preparation, pre-training, annealing, fine-tunes,
#: evaluations); a lab's quarter of 20 teams is 200. 1,000 is what memory allows: the
#: configuration space of a 200-phase quarter (10 regions x 4 GPU types, 2,190 hours) takes
#: about 150 MB and its solve peaks near 2 GB (docs/benchmarks.md), so 1,000 such phases stay
#: within a workstation's memory, and `check` reads them in well under a minute.
MAX_PHASES = 1000
#: Regions: the largest clouds have about 35 regions each; 64 covers a choice among several.
MAX_REGIONS = 64
#: GPU types: a vendor generation adds a handful; 64 covers every data-centre GPU since 2017.
MAX_GPU_TYPES = 64
#: Storage tiers per region: providers offer 3-6 (hot, cool, cold, archive, ...).
MAX_STORAGE_TIERS = 16
#: (region, GPU type) pairs with capacity or offers, over all regions: 64 regions with 4 GPU
#: types each, or 16 with 16. Configurations are enumerated per pair and hour (64 x 64 pairs
#: over a 3-year horizon took `check` 20 s; 256 pairs take about 3 s).
MAX_OFFERED_PAIRS = 256


def _digits(n: int) -> int:
    """Decimal digits of a nonzero integer, without converting it to text (Python refuses
    to print integers of more than 4,300 digits)."""
    d = math.floor(math.log10(abs(n))) + 1
    return d + 1 if abs(n) >= 10**d else d - 1 if abs(n) < 10 ** (d - 1) else d


def _number(v: object) -> object:
    """One rule for every number field, whatever wrote the document (YAML, JSON, Python):
    a number is written as a number. Text is refused even when it reads as one (``"12"``,
    ``"1e308"``): it would otherwise pass the magnitude check as text and become a number
    only later. ``true``/``false`` are refused too. Integers of more than MAX_DIGITS digits
    are refused before any float arithmetic overflows on them. Other values go on to the
    field's own check (text that is no number at all: "expected a number (got 'eighty')")."""
    if isinstance(v, bool):
        raise ValueError("expected a number, not true/false")
    if isinstance(v, str):
        try:
            float(v)
        except ValueError:
            return v
        raise ValueError("expected a number, not text")
    if isinstance(v, int) and abs(v) >= _TOO_LARGE:
        raise ValueError(
            f"expected a number of at most {MAX_DIGITS} digits, got an integer of "
            f"{_digits(v)} digits"
        )
    return v


#: Applied to every number field (and to unions of a number and something else, so that a
#: quoted number is named as such rather than tried as the other branch).
Number = BeforeValidator(_number)
FiniteFloat = Annotated[float, Field(allow_inf_nan=False), Number]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False), Number]
PosFloat = Annotated[float, Field(gt=0.0, allow_inf_nan=False), Number]
NonNegFloat = Annotated[float, Field(ge=0.0, allow_inf_nan=False), Number]
PosInt = Annotated[int, Field(gt=0), Number]
NonNegInt = Annotated[int, Field(ge=0), Number]
#: Lists of at least this many numbers are checked at once (an hourly series of a year has
#: 8,760): validating each number on its own took most of reading a year of inline series.
BULK_VALUES = 64


def _bulk_floats(v: object, handler: ValidatorFunctionWrapHandler) -> object:
    """A list of finite numbers (ints and floats, no bool) as a tuple of floats, checked at
    once; anything else, number by number (the handler: every error named by its index)."""
    if isinstance(v, list | tuple) and len(v) >= BULK_VALUES and set(map(type, v)) <= _PLAIN:
        try:
            out = tuple(map(float, v))
        except OverflowError:
            return handler(v)
        if all(map(math.isfinite, out)):
            return out
    return handler(v)


def _bulk_whole(v: object, handler: ValidatorFunctionWrapHandler) -> object:
    """A list of whole numbers >= 0 of at most MAX_DIGITS digits as a tuple, checked at
    once; anything else, number by number (the handler)."""
    if (
        isinstance(v, list | tuple)
        and len(v) >= BULK_VALUES
        and set(map(type, v)) == {int}
        and min(v) >= 0
        and max(v) < _TOO_LARGE
    ):
        return tuple(v)
    return handler(v)


_PLAIN = {int, float}

#: A file or column name: at least one character.
Name = Annotated[str, Field(min_length=1)]
#: The probability a deadline is to be met with (``deadline_confidence``): above 0, at most
#: 0.9999 (a float's sum of the Poisson terms reaches it).
Confidence = Annotated[float, Field(gt=0.0, le=0.9999, allow_inf_nan=False), Number]


def _printable(v: str) -> str:
    """Names are shown in summaries, tables and messages: no control characters in them (an
    ESC would start a terminal escape sequence, a newline would forge an output line)."""
    if not v.isprintable():
        raise ValueError(
            "expected printable text (no control characters such as ESC, tab or newline)"
        )
    return v


#: A name or label shown in output: printable characters only.
Label = Annotated[str, AfterValidator(_printable)]


def _shown(v: str) -> str:
    """A user's text for a message: quoted, at most 40 characters of it."""
    return repr(v[:40]) + ("..." if len(v) > 40 else "")


def _iana(v: str) -> str:
    """``v`` if it names an IANA time zone, else a ValueError saying what was expected."""
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(v)
    except Exception:
        raise ValueError(
            f"expected an IANA time zone such as 'Europe/Berlin', got {_shown(v)}"
        ) from None
    return v


#: An IANA time zone name (``Europe/Berlin``), checked when read.
TimeZone = Annotated[str, AfterValidator(_iana)]


#: Typical power usage effectiveness by cooling type. Air: Uptime Institute Global Data Center
#: Survey 2023 industry average PUE 1.58. Liquid (direct-to-chip): 1.15, vendor figures for
#: liquid-cooled GPU halls (e.g. Supermicro/NVIDIA DLC reference designs quote 1.1-1.2).
#: Immersion: 1.05 (two-phase immersion vendors quote 1.02-1.07).
if TYPE_CHECKING:
    from planner.physics.architecture import Architecture, ParamCounts

#: Facility PUE when none is given (air cooling, the survey average above): the one default,
#: which ``trainplan estimate`` takes too.
DEFAULT_PUE = 1.58

PUE_BY_COOLING: dict[str, float] = {"air": DEFAULT_PUE, "liquid": 1.15, "immersion": 1.05}

#: Model FLOPs utilisation of a phase that gives none, and of a GPU type a per-GPU ``mfu``
#: mapping leaves out (the planner and the checker both read this one constant).
DEFAULT_MFU = 0.40


class Strict(BaseModel):
    """Base: unknown fields are errors, objects are immutable, ints are not silently floats."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, validate_default=True)


# ----------------------------------------------------------------------------- series


class TouBand(Strict):
    """A time-of-use band in local time: ``start_hour`` inclusive to ``end_hour`` exclusive
    (wrapping past midnight when end < start), on the given weekdays (0 = Monday)."""

    start_hour: Annotated[int, Field(ge=0, le=23), Number]
    end_hour: Annotated[int, Field(ge=0, le=24), Number]
    price: FiniteFloat
    weekdays: tuple[Annotated[int, Field(ge=0, le=6), Number], ...] = (0, 1, 2, 3, 4, 5, 6)


class TimeOfUse(Strict):
    """Time-of-use tariff: bands over a default price; weekends and holidays at their own price."""

    default: FiniteFloat
    #: at most one band per hour of the week
    bands: Annotated[tuple[TouBand, ...], Field(max_length=168)] = ()
    weekend: FiniteFloat | None = None
    holidays: tuple[date, ...] = ()
    holiday: FiniteFloat | None = None


class Series(Strict):
    """An hourly series over the horizon, given exactly one way.

    - ``values``: an inline list, one value per hour from the horizon start (longer is cut);
    - ``csv``: a file (path relative to the instance file), a ``column`` of values and a
      ``time_column`` of timestamps; timestamps without an offset are read in ``timezone``;
    - ``tou``: time-of-use bands in the region's local time;
    - ``constant``: one value for every hour.

    A ``csv`` series with ``reference_year`` is a price profile: each horizon hour reads the
    row of the same weekday and local hour of day in that year (planner.instance.profiles),
    so a 2026 horizon can reuse 2023's prices; ``scale`` multiplies the values.
    """

    values: Annotated[tuple[FiniteFloat, ...], WrapValidator(_bulk_floats)] | None = None
    csv: Name | None = None
    column: Name | None = None
    time_column: Name | None = None
    timezone: TimeZone = "UTC"
    tou: TimeOfUse | None = None
    constant: FiniteFloat | None = None
    scale: FiniteFloat = 1.0
    reference_year: Annotated[int, Field(ge=1900, le=2200)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> "Series":
        given = [k for k in ("values", "csv", "tou", "constant") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "expected exactly one of 'values' (a list), 'csv' (a file), 'tou' (time-of-use "
                f"bands) or 'constant'; got {given or 'none'}"
            )
        if self.csv is not None and (self.column is None or self.time_column is None):
            raise ValueError("a 'csv' series needs 'column' and 'time_column'")
        if self.csv is None and (self.column is not None or self.time_column is not None):
            raise ValueError("'column' and 'time_column' belong to a 'csv' series only")
        if self.csv is None and self.reference_year is not None:
            raise ValueError("'reference_year' (a price profile) belongs to a 'csv' series only")
        return self


def _not_a_number(v: object) -> object:
    """Refuse numbers in the date-time branch of ``release``/``deadline``: a number there is a
    horizon hour, never a Unix timestamp (pydantic would otherwise read ``deadline: 0`` as
    1970-01-01T00:00:00Z once the hour branch has refused it)."""
    if isinstance(v, int | float):
        raise ValueError("a number here is an hour of the horizon, not a time")
    return v


#: A point in time written as an ISO date-time (YAML may hand over a datetime object).
Time = Annotated[datetime, BeforeValidator(_not_a_number)]


# ----------------------------------------------------------------------------- hardware


def _figures_from_catalog(schema: dict[str, Any]) -> None:
    """JSON Schema of a GPU type: no figure is required in the file, because an entry named
    after a catalog GPU (or with ``catalog: NAME``) takes the figures it leaves out from the
    catalog (planner.instance.gpus); the reader reports any that are still missing."""
    schema.pop("required", None)


#: Published fleets' failure rates (planner.physics.reliability.FAILURE_PRESETS).
FailurePresetName = Literal["llama3", "rsc1", "rsc2"]


class GpuType(Strict):
    """A GPU model and the node it comes in (vendor datasheet figures; dense, no sparsity).

    In a file, an entry may name a catalog GPU (``trainplan gpus``): by its key
    (``H100-SXM: {}``) or by ``catalog: NAME``; the figures it gives override the
    catalog's.

    ``memory_gb`` is the vendor's figure in ``memory_unit``: HBM and GDDR capacities are
    binary, so the default ``GiB`` reads an "80 GB" A100 as 80 x 2^30 bytes (81,920 MiB);
    ``GB`` takes 10^9 bytes. ``host_gb_per_s`` is the device-to-host bandwidth of one GPU, one
    direction, with pinned buffers (checkpoint snapshots, CPU offload; 25: PCIe Gen4/5 x16
    as achieved, a stated assumption). The failure rate is ``failures_per_gpu_hour``,
    ``failures_per_1000_node_days`` or a published fleet's ``failure_preset`` (at most one;
    none: the instance's ``failure`` model)."""

    model_config = ConfigDict(json_schema_extra=_figures_from_catalog)

    catalog: Name | None = None
    accelerator: Name | None = None
    memory_gb: PosFloat
    memory_unit: Literal["GiB", "GB"] = "GiB"
    peak_tflops: dict[Precision, PosFloat | None]
    board_power_w: PosFloat
    idle_power_w: NonNegFloat
    gpus_per_node: PosInt = 8
    node_overhead_w: NonNegFloat = 0.0
    intra_node_gb_per_s: PosFloat = 300.0
    inter_node_gb_per_s: PosFloat = 25.0
    host_gb_per_s: PosFloat = 25.0
    family: Label = "nvidia"
    failures_per_gpu_hour: NonNegFloat | None = None
    failures_per_1000_node_days: NonNegFloat | None = None
    failure_preset: FailurePresetName | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "GpuType":
        if self.idle_power_w > self.board_power_w:
            raise ValueError("idle_power_w must not exceed board_power_w")
        if not any(v for v in self.peak_tflops.values()):
            raise ValueError("peak_tflops needs at least one precision with a value")
        rates = [
            k
            for k in ("failures_per_gpu_hour", "failures_per_1000_node_days", "failure_preset")
            if getattr(self, k) is not None
        ]
        if len(rates) > 1:
            raise ValueError(f"give one failure rate, not {' and '.join(rates)}")
        return self


#: A price or rate per GPU-hour: one number for the whole horizon, or an hourly series in any
#: form electricity accepts (inline list, CSV file, time-of-use bands in the region's local
#: time, constant), on the same clock; resolved by :mod:`planner.instance.offers`, where
#: negative values are refused.
Rate = NonNegFloat | Series

#: Who pays the power an offer's GPUs draw: ``included`` in the rental price (a hyperscaler's
#: on-demand, spot and reserved prices), or ``metered`` on top of it at the region's
#: electricity price (a colocation site, a compute-leasing platform, one's own cluster).
EnergyBilling = Literal["metered", "included"]
#: What kind of site a region is; it sets the default of its offers' ``energy``
#: (planner.instance.offers.energy_billing): ``cloud`` includes power in the rental, the
#: others meter it.
SiteKind = Literal["cloud", "colocation", "own", "leasing"]


#: GPUs a pool holds, per GPU type: one whole number for the whole horizon, an inline list
#: (one a horizon hour), or an hourly series in any form prices take (``csv``, ``tou``,
#: ``constant``, ``values``), whose values must be whole numbers >= 0 (checked when resolved,
#: :mod:`planner.instance.resolve`).
Capacity = Annotated[
    NonNegInt | Annotated[tuple[NonNegInt, ...], WrapValidator(_bulk_whole)] | Series, Number
]


class OnDemand(Strict):
    usd_per_gpu_hour: Rate
    billing_granularity_hours: PosInt = 1
    min_rental_hours: NonNegInt = 0
    energy: EnergyBilling | None = None
    zone: Name | None = None


class Spot(Strict):
    usd_per_gpu_hour: Rate
    preemptions_per_hour: Rate = 0.01
    billing_granularity_hours: PosInt = 1
    min_rental_hours: NonNegInt = 0
    energy: EnergyBilling | None = None
    zone: Name | None = None


def _not_a_bool(v: object) -> object:
    if isinstance(v, bool):
        raise ValueError("expected an hour of the horizon or an ISO date-time")
    return v


class ReservedTerm(Strict):
    """One commitment term of a reserved offer: it begins at ``start`` (an hour of the horizon,
    negative for a term bought before the horizon, or an ISO date-time with a UTC offset) and
    lasts ``hours``; the GPUs committed are paid for the whole term whether used or not and
    usable only inside it. Price and commitment sizes default to the offer's. ``prorate``
    (default): only the term's hours inside the horizon are charged to this plan (the rest
    belongs to the plans before and after it); ``prorate: false`` charges the whole term."""

    name: Annotated[str, Field(min_length=1, max_length=100)] | None = None
    start: Annotated[int | Time, BeforeValidator(_not_a_bool)]
    hours: PosInt
    usd_per_gpu_hour: Rate | None = None
    min_gpus: NonNegInt | None = None
    max_gpus: NonNegInt | None = None
    prorate: bool = True


class Reserved(Strict):
    """Reserved capacity: ``gpus`` chosen by the planner in [min_gpus, max_gpus] (or 0), paid
    every hour of the horizon whether used or not; or, with ``terms``, per term (one-year and
    three-year commitments side by side), paid for the term and usable only inside it."""

    usd_per_gpu_hour: Rate
    min_gpus: NonNegInt = 0
    max_gpus: NonNegInt | None = None
    terms: tuple[ReservedTerm, ...] = ()
    energy: EnergyBilling | None = None

    @model_validator(mode="after")
    def _check(self) -> "Reserved":
        if self.max_gpus is not None and self.max_gpus < self.min_gpus:
            raise ValueError("max_gpus must be at least min_gpus")
        names = [t.name or f"term-{i + 1}" for i, t in enumerate(self.terms)]
        _once("term name", tuple(names))
        for name, t in zip(names, self.terms, strict=True):
            lo = self.min_gpus if t.min_gpus is None else t.min_gpus
            hi = self.max_gpus if t.max_gpus is None else t.max_gpus
            if hi is not None and hi < lo:
                raise ValueError(f"term {name}: max_gpus must be at least min_gpus")
        return self

    def term_names(self) -> tuple[str, ...]:
        """The terms' names (``term-<i>`` for an unnamed i-th term, from 1)."""
        return tuple(t.name or f"term-{i + 1}" for i, t in enumerate(self.terms))


class Offers(Strict):
    on_demand: OnDemand | None = None
    spot: Spot | None = None
    reserved: Reserved | None = None

    @model_validator(mode="after")
    def _any(self) -> "Offers":
        if self.on_demand is None and self.spot is None and self.reserved is None:
            raise ValueError("expected at least one of on_demand, spot, reserved")
        return self


class StorageTier(Strict):
    """A storage tier. Checkpoints and training data are sharded: every node writes and reads
    its own part (PyTorch DCP, Megatron distributed checkpoints, data-parallel loaders), so a
    job moves ``write_gb_per_s`` / ``read_gb_per_s`` per node, up to the tier's
    ``aggregate_gb_per_s`` for the whole job (None: no limit beyond the nodes'). Llama 3's
    Tectonic sustained 2 TB/s for 16K GPUs (Dubey et al. 2024 §3.3.1)."""

    usd_per_gb_month: NonNegFloat
    write_gb_per_s: PosFloat = 1.0
    read_gb_per_s: PosFloat = 1.0
    aggregate_gb_per_s: PosFloat | None = None
    retrieval_usd_per_gb: NonNegFloat = 0.0


class Sla(Strict):
    """Provider credit: a share of failures is the provider's fault and earns
    ``credit_multiplier`` times the downtime in rental credit (the article's 200% = 2.0),
    capped at the loss it compensates: per failure at most the rental of the hours the
    failure lost (work since the last checkpoint plus the downtime), so a plan never earns
    money by failing (docs/cost-model.md, "SLA credits")."""

    provider_fault_share: Fraction = 0.5
    credit_multiplier: NonNegFloat = 2.0


class Region(Strict):
    timezone: TimeZone
    pue: Annotated[float, Field(ge=1.0, le=5.0, allow_inf_nan=False), Number] | None = None
    cooling: Cooling | None = None
    electricity: Series
    price_adder_usd_per_mwh: FiniteFloat = 0.0
    carbon_intensity: Series | None = None
    zones: PosInt = 1
    capacity: dict[str, Capacity]
    offers: dict[str, Offers]
    storage: dict[Label, StorageTier] = Field(
        default_factory=lambda: {"hot": StorageTier(usd_per_gb_month=0.10, write_gb_per_s=5.0)},
        max_length=MAX_STORAGE_TIERS,
    )
    transfer_usd_per_gb: dict[str, NonNegFloat] = Field(default_factory=dict)
    default_transfer_usd_per_gb: NonNegFloat = 0.02
    #: Bandwidth of the link to another region (GB/s), for moving a checkpoint when a phase
    #: migrates; ``default_link_gb_per_s`` for regions not listed (1.25 GB/s = 10 Gbit/s).
    link_gb_per_s: dict[str, PosFloat] = Field(default_factory=dict)
    default_link_gb_per_s: PosFloat = 1.25
    sla: Sla | None = None
    cloud: Name | None = None
    cloud_region: Name | None = None
    #: What kind of site this is (default: ``cloud`` when ``cloud`` is given, else
    #: ``colocation``): a cloud's offers include power in their price, the others meter it.
    site: SiteKind | None = None

    @model_validator(mode="after")
    def _check(self) -> "Region":
        if self.pue is None and self.cooling is None:
            raise ValueError("expected 'pue' or 'cooling' (air, liquid, immersion)")
        if self.pue is not None and self.cooling is not None:
            raise ValueError("give 'pue' or 'cooling', not both")
        if not self.storage:
            raise ValueError("storage: expected at least one tier")
        return self

    @property
    def effective_pue(self) -> float:
        """The region's PUE: its own, else its cooling's typical figure (air 1.58, liquid 1.15,
        immersion 1.05)."""
        return self.pue if self.pue is not None else PUE_BY_COOLING[str(self.cooling)]


# ----------------------------------------------------------------------------- model


#: ModelSpec fields that only the full architecture model knows (not Narayanan's eq. 2):
#: the optional Architecture fields of planner.physics.architecture, and MoE and MLA.
ARCHITECTURE_FIELDS = (*OPTIONAL_ARCHITECTURE_FIELDS, "moe", "mla")


class ModelSpec(Strict):
    """A transformer: ``params`` alone, a ``preset`` by name (planner/data/models.yaml, any
    field overridable), or the architecture.

    With layers, hidden and vocab only, params = 12 L h^2 (1 + 13/(12 h)) + (V + s) h
    (Narayanan et al. 2021, eq. 2, a GPT block). With any of the architecture fields (FFN size,
    gated MLP, kv heads, tied embeddings, MoE, MLA, ...) or a preset, and no explicit
    ``params``, params is the exact count from the dimensions
    (planner.physics.architecture.param_counts; total parameters for MoE)."""

    preset: Name | None = None
    params: PosFloat | None = None
    layers: PosInt | None = None
    hidden: PosInt | None = None
    heads: PosInt | None = None
    seq_len: PosInt = 2048
    vocab: PosInt = 32000
    optimizer: Optimizer = "adamw"
    flash_attention: bool = True
    ffn_hidden: PosInt | None = None
    kv_heads: PosInt | None = None
    head_dim: PosInt | None = None
    gated_mlp: bool | None = None
    tied_embeddings: bool | None = None
    position: Literal["learned", "rope"] | None = None
    norm: Literal["layernorm", "rmsnorm"] | None = None
    linear_bias: bool | None = None
    qkv_bias: bool | None = None
    dropout: bool | None = None
    moe: MoE | None = None
    mla: MLA | None = None

    @model_validator(mode="before")
    @classmethod
    def _expand_preset(cls, data: object) -> object:
        """``preset: NAME`` expands to the preset's fields; fields given beside it win."""
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        from planner.physics.presets import PresetError, preset_fields

        name = data["preset"]
        if not isinstance(name, str):
            raise ValueError(f"preset: expected a preset name, got {name!r}")
        try:
            fields = preset_fields(name)
        except PresetError as e:
            raise ValueError(str(e)) from None
        return {**fields, **data}

    @model_validator(mode="after")
    def _check(self) -> "ModelSpec":
        if self.params is None and (self.layers is None or self.hidden is None):
            raise ValueError("expected 'params', a 'preset', or 'layers' and 'hidden'")
        explicit_heads = self.head_dim is not None or self.mla is not None
        if self.hidden and self.heads and self.hidden % self.heads and not explicit_heads:
            raise ValueError("hidden must be divisible by heads (or give head_dim)")
        if self.kv_heads is not None and self.heads is not None and self.heads % self.kv_heads:
            raise ValueError("heads must be a multiple of kv_heads")
        if (
            self.moe is not None
            and self.layers is not None
            and self.moe.first_dense_layers > self.layers
        ):
            raise ValueError("moe.first_dense_layers exceeds layers")
        if self.params is None and self.has_architecture and self.uses_full_architecture:
            counts = self.param_counts()
            assert counts is not None
            # frozen model: set the derived count once, during validation
            object.__setattr__(self, "params", float(counts.total))
        return self

    @property
    def has_architecture(self) -> bool:
        """Layers and hidden are known (given or from the preset)."""
        return self.layers is not None and self.hidden is not None

    @property
    def uses_full_architecture(self) -> bool:
        """A preset or any field beyond Narayanan's GPT block was given."""
        return self.preset is not None or any(
            getattr(self, k) is not None for k in ARCHITECTURE_FIELDS
        )

    def architecture(self) -> "Architecture | None":
        """The :class:`planner.physics.architecture.Architecture`, or None for a
        params-only model."""
        if not self.has_architecture:
            return None
        from planner.physics.presets import architecture_from_fields

        return architecture_from_fields(self.model_dump())

    def param_counts(self) -> "ParamCounts | None":
        """Exact parameter counts from the dimensions, or None for a params-only model."""
        arch = self.architecture()
        if arch is None:
            return None
        from planner.physics.architecture import param_counts

        return param_counts(arch)


# ----------------------------------------------------------------------------- phases


class Work(Strict):
    """How much work a phase is: training/forward tokens, FLOPs, or GPU-hours measured on a
    named GPU type at a precision.

    Tokens count FLOPs under ``flops_convention`` (planner.physics.transformer.flops_per_token,
    on active parameters for MoE): ``6nd`` (default; 6N per training token, 2N forward: the
    convention published MFU figures are computed against), ``kaplan`` (+ 6 L s d_attn,
    Kaplan et al. 2020 Table 1), ``palm`` (+ 12 L s d_attn, Chowdhery et al. 2022 App. B),
    ``megatron`` (Narayanan et al. 2021 eq. 3 without recomputation)."""

    tokens: PosFloat | None = None
    passes: Pass = "train"
    flops_convention: FlopsConvention = "6nd"
    flops: PosFloat | None = None
    gpu_hours: PosFloat | None = None
    gpu: str | None = None
    precision: Precision = "bf16"

    @model_validator(mode="after")
    def _exactly_one(self) -> "Work":
        given = [k for k in ("tokens", "flops", "gpu_hours") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"expected exactly one of 'tokens', 'flops', 'gpu_hours'; got {given or 'none'}"
            )
        if self.gpu_hours is not None and self.gpu is None:
            raise ValueError("'gpu_hours' needs 'gpu': the GPU type they were measured on")
        return self


def _once(what: str, choices: tuple[object, ...]) -> None:
    """Refuse an entry listed twice: configurations multiply over the lists, so 300 repeats
    in two of them would enumerate 90,000 copies of each layout."""
    seen: set[object] = set()
    twice: set[str] = set()
    for c in choices:
        if c in seen:
            twice.add(str(c))
        seen.add(c)
    if twice:
        raise ValueError(
            f"{', '.join(sorted(twice)[:5])} listed more than once; list each {what} once"
        )


#: Options that are lists of choices, each at least one long.
_CHOICES = (
    "precision",
    "zero",
    "recompute",
    "tensor_parallel",
    "pipeline_parallel",
    "microbatches",
    "interleave",
    "sequence_parallel",
    "context_parallel",
    "expert_parallel",
    "offload",
    "contracts",
    "extra_spare_nodes",
)


SegmentChange = Literal["region", "gpu_type", "gpus", "contract", "layout"]
SEGMENT_CHANGES: tuple[SegmentChange, ...] = ("region", "gpu_type", "gpus", "contract", "layout")


class Options(Strict):
    """What the planner may choose among for a phase. Every list is a choice the planner
    makes per configuration; the defaults keep one value each (the list multiplies the
    configuration space), the user lists more:

    - ``pipeline_parallel``: any degree up to the layers (uneven stages: ceil(L/p) layers on
      the most loaded stage, Llama 3's 126 layers on PP16);
    - ``microbatches``: micro-batches per step and pipeline (the bubble (p - 1) / (v m));
      ``interleave``: model chunks per device v (Narayanan et al. 2021 §2.2.2; needs pp > 1
      and m a multiple of pp);
    - ``sequence_parallel``: Megatron sequence parallelism with tp > 1 (Korthikanti 2022);
      ``context_parallel``: cp ranks split the sequence (ring attention); ``expert_parallel``:
      ep ranks split the routed experts of an MoE model;
    - ``offload``: ``none``, ``optimizer`` (ZeRO-Offload) or ``params`` (ZeRO-Infinity, ZeRO-3)
      to CPU memory, with its PCIe time;
    - ``checkpoint``: ``sync``, ``async`` or ``in_memory`` (default: ``failure.checkpoint``).

    GPUs = tp x cp x pp x dp."""

    precision: tuple[Precision, ...] = ("bf16",)
    zero: tuple[Annotated[int, Field(ge=0, le=3), Number], ...] = (0, 1, 2, 3)
    recompute: tuple[Recompute, ...] = ("none", "selective", "full")
    tensor_parallel: Annotated[tuple[PosInt, ...], Field(max_length=MAX_CHOICES)] = (1, 2, 4, 8)
    pipeline_parallel: Annotated[tuple[PosInt, ...], Field(max_length=MAX_CHOICES)] = (1,)
    gpu_counts: Annotated[tuple[PosInt, ...], Field(max_length=MAX_GPU_COUNTS)] | None = None
    min_gpus: PosInt = 1
    max_gpus: PosInt = 1024
    fractions: Annotated[
        tuple[Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False), Number], ...],
        Field(max_length=MAX_FRACTIONS),
    ] = ()
    micro_batch: PosInt = 1
    microbatches: Annotated[tuple[PosInt, ...], Field(max_length=MAX_CHOICES)] = (16,)
    interleave: Annotated[tuple[PosInt, ...], Field(max_length=MAX_CHOICES)] = (1,)
    sequence_parallel: tuple[bool, ...] = (True,)
    context_parallel: Annotated[tuple[PosInt, ...], Field(max_length=MAX_CHOICES)] = (1,)
    expert_parallel: Annotated[tuple[PosInt, ...], Field(max_length=MAX_CHOICES)] = (1,)
    offload: tuple[Offload, ...] = ("none",)
    checkpoint: tuple[CheckpointScheme, ...] | None = None
    contracts: tuple[Contract, ...] = ("on_demand", "spot", "reserved")
    storage_tiers: Annotated[tuple[str, ...], Field(max_length=MAX_STORAGE_TIERS)] | None = None
    extra_spare_nodes: Annotated[tuple[NonNegInt, ...], Field(max_length=MAX_CHOICES)] = (0, 1)
    #: At most this many segments: the phase may change configuration (region, GPU type and
    #: count, contract, layout) at a checkpoint, each change a migration (docs/cost-model.md,
    #: "Segments"). 1: one configuration for the whole run.
    max_segments: Annotated[int, Field(ge=1, le=24)] = 1
    #: What may change from one segment to the next: ``region`` (with its storage tier),
    #: ``gpu_type``, ``gpus`` (count and spares), ``contract`` (with the reserved term),
    #: ``layout`` (precision, ZeRO, recomputation, tp, pp).
    segment_changes: tuple[SegmentChange, ...] = SEGMENT_CHANGES

    @model_validator(mode="after")
    def _check(self) -> "Options":
        if self.max_gpus < self.min_gpus:
            raise ValueError("max_gpus must be at least min_gpus")
        for name in _CHOICES:
            if len(getattr(self, name)) == 0:
                raise ValueError(f"{name}: expected at least one choice")
        _once("change", self.segment_changes)
        return self

    @field_validator(*_CHOICES, "gpu_counts", "storage_tiers", "checkpoint")
    @classmethod
    def _choices(cls, v: tuple[object, ...] | None) -> tuple[object, ...] | None:
        """Each choice once; a list of GPU counts or tiers, when given, not empty."""
        if v is not None:
            if len(v) == 0:
                raise ValueError("expected at least one choice")
            _once("choice", v)
        return v


class Scaling(Strict):
    """What the phase's MFU means and how throughput changes away from it.

    An MFU is valid at a reference scale: ``reference_gpus`` (None: the scale it is used at,
    so every GPU count runs at the MFU). Away from the reference the throughput per GPU is
    eff(n) / eff(reference) (planner.physics.compute.relative_scaling) under ``kind``:

    - ``per_doubling`` (default): eff(n) = per_doubling ** log2(nodes), 0.98 per doubling of
      nodes (Narayanan et al. 2021 Fig. 15 weak scaling); it makes scaling out cost
      throughput as soon as a reference is given;
    - ``interconnect``: eff(n) = t_c / (t_c + (1 - overlap) t_allreduce) from the GPU type's
      ``inter_node_gb_per_s`` (ring all-reduce of the gradients per step);
    - ``none``: 1.

    ``layout``: ``modeled`` (default) charges the layout's own factors (tensor parallelism,
    pipeline bubble and uneven stages, ZeRO-3 traffic, expert all-to-all, CPU offload) and
    recomputation against an MFU meant at tp = pp = 1 without recomputation; ``in_mfu`` says
    the MFU was measured for the layout and recomputation used (a published run's MFU) and
    charges none of them."""

    kind: Literal["per_doubling", "interconnect", "none"] = "per_doubling"
    per_doubling: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False), Number] = 0.98
    reference_gpus: PosFloat | None = None
    overlap: Fraction = 0.9
    layout: Literal["modeled", "in_mfu"] = "modeled"

    @model_validator(mode="after")
    def _per_doubling_needs_a_reference(self) -> "Scaling":
        """``per_doubling`` given without ``reference_gpus`` would do nothing (every count
        runs at the MFU): refused, naming what it needs."""
        if "per_doubling" in self.model_fields_set:
            if self.kind != "per_doubling":
                raise ValueError(f"'per_doubling' belongs to kind per_doubling, not {self.kind}")
            if self.reference_gpus is None:
                raise ValueError(
                    "'per_doubling' needs 'reference_gpus' (the scale the MFU was measured "
                    "at): without it every GPU count runs at the MFU and per_doubling has no "
                    "effect"
                )
        return self


class Redundancy(Strict):
    spare_nodes: NonNegInt = 0
    zones: PosInt = 1


class DataSpec(Strict):
    """Input data: size, the region it lives in, and bytes read per token (I/O bound, lever 3.1).
    ``residency``: the regions the data may be staged to (data residency; None: anywhere); a
    configuration or segment in another region is refused."""

    size_gb: NonNegFloat = 0.0
    home_region: str | None = None
    read_passes: PosFloat = 1.0
    residency: tuple[str, ...] | None = None


class Progress(Strict):
    """Work a phase has already done, given exactly one way: a ``fraction`` of its work, or
    the ``tokens`` or ``flops`` done (against the phase's own work)."""

    fraction: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] | None = None
    tokens: NonNegFloat | None = None
    flops: NonNegFloat | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> "Progress":
        given = [k for k in ("fraction", "tokens", "flops") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"expected exactly one of 'fraction', 'tokens', 'flops'; got {given or 'none'}"
            )
        return self


class Running(Strict):
    """The configuration a phase is running on when it is re-planned: where its latest
    checkpoint is. Continuing on it from the phase's release costs nothing more; any other
    start is a migration from it (docs/cost-model.md, "Segments")."""

    gpu: str
    region: str
    contract: Contract
    gpus: PosFloat
    spare_gpus: NonNegInt = 0
    precision: Precision = "bf16"
    zero: Annotated[int, Field(ge=0, le=3)] = 0
    recompute: Recompute = "none"
    tp: PosInt = 1
    pp: PosInt = 1
    tier: str
    term: str = ""
    sp: bool = True
    cp: PosInt = 1
    ep: PosInt = 1
    microbatches: PosInt = 16
    virtual: PosInt = 1
    offload: Offload = "none"
    checkpoint: CheckpointScheme | None = None


def _progress(v: object) -> object:
    """``progress: 0.4`` is a fraction."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return {"fraction": v}
    return v


class Phase(Strict):
    """A unit of work with its window: it may run in hours ``release <= t < deadline``, given
    as horizon hours (whole numbers) or as ISO date-times with a UTC offset."""

    name: Annotated[Label, Field(min_length=1, max_length=100)]
    kind: Label = "training"
    model: str | None = None
    work: Work
    predecessors: tuple[str, ...] = ()
    release: Annotated[NonNegInt | Time, Number] = 0
    deadline: Annotated[PosInt | Time, Number] | None = None
    gpu_types: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    options: Options = Field(default_factory=Options)
    preemptible: bool = False
    resume_overhead_hours: NonNegFloat = 0.25
    mfu: Annotated[PosFloat | dict[str, PosFloat], Number] = DEFAULT_MFU
    power_load: Fraction = 0.90
    scaling: Scaling = Field(default_factory=Scaling)
    redundancy: Redundancy = Field(default_factory=Redundancy)
    data: DataSpec = Field(default_factory=DataSpec)
    checkpoint_gb: NonNegFloat | None = None
    output_gb: NonNegFloat | None = None
    memory_gb: NonNegFloat = 0.0
    licence_usd_per_gpu_hour: NonNegFloat = 0.0
    done: bool = False
    #: Work already done (a re-plan from now): the planner plans the rest.
    progress: Annotated[Progress, BeforeValidator(_progress)] | None = None
    #: The configuration the phase runs on now (its checkpoint is there).
    running: Running | None = None
    #: Meet ``deadline`` with this probability under the failure model (default: the
    #: instance's ``deadline_confidence``): the plan keeps time for the interruptions expected
    #: at that quantile (planner.physics.reliability.deadline_reserve).
    deadline_confidence: Confidence | None = None
    #: What each hour this phase finishes earlier is worth, USD (default: the instance's
    #: ``objective.usd_per_hour_early`` for a phase no other phase waits for, else 0).
    usd_per_hour_early: NonNegFloat | None = None

    @field_validator("predecessors", "gpu_types", "regions")
    @classmethod
    def _listed_once(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is not None:
            _once("name", v)
        return v

    @field_validator("mfu")
    @classmethod
    def _mfu(cls, v: float | dict[str, float]) -> float | dict[str, float]:
        vals = [v] if isinstance(v, float | int) else list(v.values())
        for x in vals:
            if not 0 < x <= 1:
                raise ValueError(f"expected a model FLOPs utilisation in (0, 1], got {x}")
        return v


# ----------------------------------------------------------------------------- global


#: Room kept at both ends of the representable years for local times of the horizon's hours.
_MARGIN = timedelta(days=1)


class Horizon(Strict):
    start: datetime
    hours: Annotated[int, Field(ge=1, le=24 * 366 * 3), Number]

    @field_validator("start")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError("expected an ISO time with a UTC offset, e.g. 2023-06-05T00:00:00Z")
        try:
            _ = (v.astimezone(UTC) - _MARGIN, v.astimezone(UTC) + _MARGIN)
        except OverflowError:
            raise ValueError(
                "expected a start between 0001-01-02 and 9999-12-30 (UTC), so that every "
                "hour of the horizon is a date in years 1-9999 in any time zone; got "
                f"{v.isoformat()}"
            ) from None
        return v

    @field_validator("hours")
    @classmethod
    def _ends_in_range(cls, v: int, info: ValidationInfo) -> int:
        start = info.data.get("start")
        if isinstance(start, datetime):
            try:
                start.astimezone(UTC) + timedelta(hours=v) + _MARGIN
            except OverflowError:
                raise ValueError(
                    "expected a horizon that ends by 9999-12-30 (UTC), so that every hour of "
                    f"it is a date in years 1-9999 in any time zone; got {v} hours from "
                    f"{start.isoformat()}"
                ) from None
        return v


class FailureModel(Strict):
    """Failures and checkpoints (Young 1974, Daly 2006). The default rate is Llama 3's:
    419 unexpected interruptions in 54 days on 16,384 H100s = 1.97e-5 per GPU-hour.

    ``preset`` names a published fleet instead (planner.physics.reliability.FAILURE_PRESETS:
    ``llama3``, ``rsc1``, ``rsc2``; Kokolis et al. 2024 for Meta's RSC clusters); an explicit
    ``failures_per_gpu_hour`` wins over it. A failure costs ``detect_hours`` until it is
    noticed, then ``spare_swap_hours`` with a hot spare node or ``restart_hours`` without,
    then the reload of the last checkpoint (planner.physics.reliability.RestartModel; the
    defaults, 3, 3 and 6 minutes, are stated assumptions for an automated stack: Llama 3 handled
    most interruptions automatically, Kokolis et al. run health checks every 5 minutes).
    ``checkpoint`` is the default scheme (``options.checkpoint`` lists others a phase may
    choose): ``sync`` blocks training for the sharded write; ``async`` (default) only for a
    snapshot to host memory, the write runs behind; ``in_memory`` keeps ``in_memory_replicas``
    copies in host memory of peers (Gemini, SOSP 2023) and reloads one shard over the
    network. ``checkpoint_write_s`` fixes the time of the sharded write."""

    preset: FailurePresetName | None = None
    failures_per_gpu_hour: NonNegFloat = 419 / (16384 * 54 * 24)
    restart_hours: NonNegFloat = 0.10
    spare_swap_hours: NonNegFloat = 0.05
    detect_hours: NonNegFloat = 0.05
    checkpoint_write_s: PosFloat | None = None
    checkpoint: CheckpointScheme = "async"
    in_memory_replicas: Annotated[int, Field(ge=2, le=8)] = 2

    @model_validator(mode="before")
    @classmethod
    def _preset_rate(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("preset") and "failures_per_gpu_hour" not in data:
            from planner.physics.reliability import FAILURE_PRESETS

            p = FAILURE_PRESETS.get(str(data["preset"]))
            if p is not None:
                return {**data, "failures_per_gpu_hour": p.per_gpu_hour}
        return data


class StoragePolicy(Strict):
    retention: PosInt = 2
    compression_ratio: Annotated[float, Field(ge=1.0, le=100.0, allow_inf_nan=False), Number] = 1.0
    archive: Literal["cheapest", "hottest"] = "cheapest"


#: Share of a GPU's memory plans keep free (``memory.headroom``): the usable share is 90%.
#: PyTorch's caching allocator strands memory beyond what the tensors take: GMLake (Guo et
#: al., ASPLOS 2024, arXiv:2401.08156) measured 9.2 GB on average (up to 25 GB) of an 80 GB
#: A100 across eight LLM fine-tunes, and NCCL communicators, cuBLAS workspaces and the CUDA
#: context grow with the streams and groups a job creates. With ``fragmentation`` (5% of the
#: tensors) this keeps about the 15% GMLake recovered on average.
DEFAULT_HEADROOM = 0.10


class MemoryPolicy(Strict):
    """How memory is counted: the accounting ``convention`` of the model states (``zero``:
    the ZeRO paper's 2 + 2 + 12 bytes per parameter; ``megatron``: fp32 gradient accumulation,
    2 + 4 + 12; ``deepspeed``: its estimators' extra fp32 gradient copy, planner.physics.memory
    .state_bytes_per_param), and allowances on top of model states and activations: CUDA
    context, NCCL and library workspaces (``buffer_gb``), allocator fragmentation, and
    headroom kept free on the GPU: a plan fills at most ``1 - headroom`` of a GPU's memory
    (the usable share, 90% by default: PyTorch's caching allocator strands memory beyond the
    tensors, GMLake measured 9.2 GB of an 80 GB A100 on average)."""

    convention: MemoryConvention = "zero"
    buffer_gb: NonNegFloat = 1.5
    fragmentation: Fraction = 0.05
    headroom: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False), Number] = (
        DEFAULT_HEADROOM
    )


class Family(Strict):
    porting_usd: NonNegFloat = 0.0


class Objective(Strict):
    weights: dict[
        Literal["rental", "energy", "storage", "failure", "transfer", "porting", "carbon"],
        NonNegFloat,
    ] = Field(default_factory=dict)
    carbon_usd_per_tonne: NonNegFloat = 0.0
    carbon_cap_tonnes: NonNegFloat | None = None
    #: The value of time: what each hour a deliverable (a phase no other phase waits for)
    #: finishes earlier is worth, USD; in the objective, not in the bill.
    usd_per_hour_early: NonNegFloat = 0.0


class InstanceSpec(Strict):
    name: Label = "instance"
    description: str = ""
    horizon: Horizon
    gpu_catalog: Name | None = None
    gpu_types: Annotated[dict[Label, GpuType], Field(max_length=MAX_GPU_TYPES)]
    regions: Annotated[dict[Label, Region], Field(max_length=MAX_REGIONS)]
    models: dict[Label, ModelSpec] = Field(default_factory=dict)
    phases: Annotated[tuple[Phase, ...], Field(max_length=MAX_PHASES)]
    families: dict[Label, Family] = Field(default_factory=dict)
    failure: FailureModel = Field(default_factory=FailureModel)
    storage: StoragePolicy = Field(default_factory=StoragePolicy)
    memory: MemoryPolicy = Field(default_factory=MemoryPolicy)
    objective: Objective = Field(default_factory=Objective)
    #: Meet every deadline with this probability (a phase may set its own).
    deadline_confidence: Confidence | None = None

    @field_validator("phases")
    @classmethod
    def _nonempty(cls, v: tuple[Phase, ...]) -> tuple[Phase, ...]:
        if not v:
            raise ValueError("expected at least one phase")
        return v

    @field_validator("gpu_types", "regions")
    @classmethod
    def _nonempty_map(cls, v: dict[str, object]) -> dict[str, object]:
        if not v:
            raise ValueError("expected at least one entry")
        return v

    @model_validator(mode="after")
    def _running_scheme(self) -> "InstanceSpec":
        """A ``running`` configuration without ``checkpoint`` runs the phase's default scheme
        (:meth:`default_checkpoint`), set here once so that the planner and the checker read
        the same configuration."""
        if any(p.running is not None and p.running.checkpoint is None for p in self.phases):
            phases = tuple(
                p
                if p.running is None or p.running.checkpoint is not None
                else p.model_copy(
                    update={
                        "running": p.running.model_copy(
                            update={"checkpoint": self.default_checkpoint(p)}
                        )
                    }
                )
                for p in self.phases
            )
            object.__setattr__(self, "phases", phases)  # frozen: set once, during validation
        return self

    def checkpoint_schemes(self, p: Phase) -> tuple[CheckpointScheme, ...]:
        """The checkpointing schemes phase ``p`` may use: ``options.checkpoint``, else the
        instance's ``failure.checkpoint``."""
        return p.options.checkpoint or (self.failure.checkpoint,)

    def default_checkpoint(self, p: Phase) -> CheckpointScheme:
        """Phase ``p``'s default scheme: ``failure.checkpoint`` when the phase may use it, else
        the first scheme its ``options.checkpoint`` lists."""
        schemes = self.checkpoint_schemes(p)
        return self.failure.checkpoint if self.failure.checkpoint in schemes else schemes[0]
