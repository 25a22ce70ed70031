"""The instance file schema: what a user may write, checked field by field.

Every model forbids unknown fields and is frozen. Units are in the field names
(``_gb`` is 10^9 bytes, ``_w`` watts, ``_usd_per_mwh`` US dollars per megawatt-hour).
Cross-references (a phase naming a GPU type) are checked in
:mod:`planner.instance.references`; :mod:`planner.instance.resolve` turns a validated
:class:`InstanceSpec` into the resolved :class:`~planner.instance.model.Instance`.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

Precision = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
Recompute = Literal["none", "selective", "full"]
Contract = Literal["on_demand", "spot", "reserved"]
Cooling = Literal["air", "liquid", "immersion"]
Optimizer = Literal["adam", "adamw", "sgd", "sgd_momentum", "adafactor", "lion"]
Pass = Literal["train", "forward"]

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
PosFloat = Annotated[PositiveFloat, Field(allow_inf_nan=False)]
NonNegFloat = Annotated[NonNegativeFloat, Field(allow_inf_nan=False)]
#: A file or column name: at least one character.
Name = Annotated[str, Field(min_length=1)]

#: Typical power usage effectiveness by cooling type. Air: Uptime Institute Global Data Center
#: Survey 2023 industry average PUE 1.58. Liquid (direct-to-chip): 1.15, vendor figures for
#: liquid-cooled GPU halls (e.g. Supermicro/NVIDIA DLC reference designs quote 1.1-1.2).
#: Immersion: 1.05 (two-phase immersion vendors quote 1.02-1.07).
if TYPE_CHECKING:
    from planner.physics.architecture import Architecture, ParamCounts

PUE_BY_COOLING: dict[str, float] = {"air": 1.58, "liquid": 1.15, "immersion": 1.05}

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

    start_hour: Annotated[int, Field(ge=0, le=23)]
    end_hour: Annotated[int, Field(ge=0, le=24)]
    price: FiniteFloat
    weekdays: tuple[Annotated[int, Field(ge=0, le=6)], ...] = (0, 1, 2, 3, 4, 5, 6)


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
    """

    values: tuple[FiniteFloat, ...] | None = None
    csv: Name | None = None
    column: Name | None = None
    time_column: Name | None = None
    timezone: str = "UTC"
    tou: TimeOfUse | None = None
    constant: FiniteFloat | None = None
    scale: FiniteFloat = 1.0

    @model_validator(mode="after")
    def _exactly_one(self) -> Series:
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


class GpuType(Strict):
    """A GPU model and the node it comes in (vendor datasheet figures; dense, no sparsity)."""

    memory_gb: PosFloat
    peak_tflops: dict[Precision, PosFloat | None]
    board_power_w: PosFloat
    idle_power_w: NonNegFloat
    gpus_per_node: PositiveInt = 8
    node_overhead_w: NonNegFloat = 0.0
    intra_node_gb_per_s: PosFloat = 300.0
    inter_node_gb_per_s: PosFloat = 25.0
    family: str = "nvidia"
    failures_per_gpu_hour: NonNegFloat | None = None
    failures_per_1000_node_days: NonNegFloat | None = None
    source: str | None = None

    @model_validator(mode="after")
    def _check(self) -> GpuType:
        if self.idle_power_w > self.board_power_w:
            raise ValueError("idle_power_w must not exceed board_power_w")
        if not any(v for v in self.peak_tflops.values()):
            raise ValueError("peak_tflops needs at least one precision with a value")
        if self.failures_per_gpu_hour is not None and self.failures_per_1000_node_days is not None:
            raise ValueError("give failures_per_gpu_hour or failures_per_1000_node_days, not both")
        return self


#: A price or rate per GPU-hour: one number for the whole horizon, or an hourly series in any
#: form electricity accepts (inline list, CSV file, time-of-use bands in the region's local
#: time, constant), on the same clock; resolved by :mod:`planner.instance.offers`, where
#: negative values are refused.
Rate = NonNegFloat | Series


class OnDemand(Strict):
    usd_per_gpu_hour: Rate
    billing_granularity_hours: PositiveInt = 1
    min_rental_hours: NonNegativeInt = 0


class Spot(Strict):
    usd_per_gpu_hour: Rate
    preemptions_per_hour: Rate = 0.01
    billing_granularity_hours: PositiveInt = 1
    min_rental_hours: NonNegativeInt = 0


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
    hours: PositiveInt
    usd_per_gpu_hour: Rate | None = None
    min_gpus: NonNegativeInt | None = None
    max_gpus: NonNegativeInt | None = None
    prorate: bool = True


class Reserved(Strict):
    """Reserved capacity: ``gpus`` chosen by the planner in [min_gpus, max_gpus] (or 0), paid
    every hour of the horizon whether used or not; or, with ``terms``, per term (one-year and
    three-year commitments side by side), paid for the term and usable only inside it."""

    usd_per_gpu_hour: Rate
    min_gpus: NonNegativeInt = 0
    max_gpus: NonNegativeInt | None = None
    terms: tuple[ReservedTerm, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Reserved:
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
    def _any(self) -> Offers:
        if self.on_demand is None and self.spot is None and self.reserved is None:
            raise ValueError("expected at least one of on_demand, spot, reserved")
        return self


class StorageTier(Strict):
    usd_per_gb_month: NonNegFloat
    write_gb_per_s: PosFloat = 1.0
    read_gb_per_s: PosFloat = 1.0
    retrieval_usd_per_gb: NonNegFloat = 0.0


class Sla(Strict):
    """Provider credit: a share of failures is the provider's fault and earns
    ``credit_multiplier`` times the downtime in rental credit (the article's 200% = 2.0)."""

    provider_fault_share: Fraction = 0.5
    credit_multiplier: NonNegFloat = 2.0


class Region(Strict):
    timezone: str
    pue: Annotated[float, Field(ge=1.0, le=5.0, allow_inf_nan=False)] | None = None
    cooling: Cooling | None = None
    electricity: Series
    price_adder_usd_per_mwh: FiniteFloat = 0.0
    carbon_intensity: Series | None = None
    zones: PositiveInt = 1
    capacity: dict[str, NonNegativeInt | tuple[NonNegativeInt, ...]]
    offers: dict[str, Offers]
    storage: dict[str, StorageTier] = Field(
        default_factory=lambda: {"hot": StorageTier(usd_per_gb_month=0.10, write_gb_per_s=5.0)}
    )
    transfer_usd_per_gb: dict[str, NonNegFloat] = Field(default_factory=dict)
    default_transfer_usd_per_gb: NonNegFloat = 0.02
    #: Bandwidth of the link to another region (GB/s), for moving a checkpoint when a phase
    #: migrates; ``default_link_gb_per_s`` for regions not listed (1.25 GB/s = 10 Gbit/s).
    link_gb_per_s: dict[str, PosFloat] = Field(default_factory=dict)
    default_link_gb_per_s: PosFloat = 1.25
    sla: Sla | None = None

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(v)
        except Exception:
            raise ValueError(
                f"expected an IANA time zone such as 'Europe/Berlin', got {v!r}"
            ) from None
        return v

    @model_validator(mode="after")
    def _check(self) -> Region:
        if self.pue is None and self.cooling is None:
            raise ValueError("expected 'pue' or 'cooling' (air, liquid, immersion)")
        if self.pue is not None and self.cooling is not None:
            raise ValueError("give 'pue' or 'cooling', not both")
        if not self.storage:
            raise ValueError("storage: expected at least one tier")
        return self

    @property
    def effective_pue(self) -> float:
        return self.pue if self.pue is not None else PUE_BY_COOLING[str(self.cooling)]


# ----------------------------------------------------------------------------- model


class MoESpec(Strict):
    """Mixture of experts: ``experts`` routed experts of FFN size ``expert_ffn``, ``top_k``
    active per token, ``shared_experts`` always active, the first ``first_dense_layers`` dense
    (DeepSeek-V3: 3), then every ``every``-th layer MoE (planner.physics.architecture.MoE)."""

    experts: PositiveInt
    top_k: PositiveInt
    expert_ffn: PositiveInt
    shared_experts: NonNegativeInt = 0
    shared_ffn: PositiveInt | None = None
    first_dense_layers: NonNegativeInt = 0
    every: PositiveInt = 1
    router_bias: bool = False

    @model_validator(mode="after")
    def _check(self) -> MoESpec:
        if self.top_k > self.experts:
            raise ValueError("top_k must not exceed experts")
        return self


class MLASpec(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): compressed query and key/value ranks and
    the per-head dimensions (planner.physics.architecture.MLA). ``q_lora_rank: 0`` means
    uncompressed queries."""

    q_lora_rank: NonNegativeInt
    kv_lora_rank: PositiveInt
    qk_nope_head_dim: PositiveInt
    qk_rope_head_dim: PositiveInt
    v_head_dim: PositiveInt


#: ModelSpec fields that only the full architecture model knows (not Narayanan's eq. 2).
ARCHITECTURE_FIELDS = (
    "ffn_hidden",
    "kv_heads",
    "head_dim",
    "gated_mlp",
    "tied_embeddings",
    "position",
    "norm",
    "linear_bias",
    "qkv_bias",
    "moe",
    "mla",
)


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
    layers: PositiveInt | None = None
    hidden: PositiveInt | None = None
    heads: PositiveInt | None = None
    seq_len: PositiveInt = 2048
    vocab: PositiveInt = 32000
    optimizer: Optimizer = "adamw"
    flash_attention: bool = True
    ffn_hidden: PositiveInt | None = None
    kv_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    gated_mlp: bool | None = None
    tied_embeddings: bool | None = None
    position: Literal["learned", "rope"] | None = None
    norm: Literal["layernorm", "rmsnorm"] | None = None
    linear_bias: bool | None = None
    qkv_bias: bool | None = None
    moe: MoESpec | None = None
    mla: MLASpec | None = None

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
    def _check(self) -> ModelSpec:
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

    def architecture(self) -> Architecture | None:
        """The :class:`planner.physics.architecture.Architecture`, or None for a
        params-only model."""
        if not self.has_architecture:
            return None
        from planner.physics.presets import architecture_from_fields

        f = self.model_dump(exclude={"moe", "mla"})
        f["moe"] = self.moe.model_dump() if self.moe is not None else None
        f["mla"] = self.mla.model_dump() if self.mla is not None else None
        return architecture_from_fields(f)

    def param_counts(self) -> ParamCounts | None:
        """Exact parameter counts from the dimensions, or None for a params-only model."""
        arch = self.architecture()
        if arch is None:
            return None
        from planner.physics.architecture import param_counts

        return param_counts(arch)


# ----------------------------------------------------------------------------- phases


class Work(Strict):
    """How much work a phase is: training/forward tokens (6ND or 2ND), FLOPs, or GPU-hours
    measured on a named GPU type at a precision."""

    tokens: PosFloat | None = None
    passes: Pass = "train"
    flops: PosFloat | None = None
    gpu_hours: PosFloat | None = None
    gpu: str | None = None
    precision: Precision = "bf16"

    @model_validator(mode="after")
    def _exactly_one(self) -> Work:
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


SegmentChange = Literal["region", "gpu_type", "gpus", "contract", "layout"]
SEGMENT_CHANGES: tuple[SegmentChange, ...] = ("region", "gpu_type", "gpus", "contract", "layout")


class Options(Strict):
    """What the planner may choose among for a phase."""

    precision: tuple[Precision, ...] = ("bf16",)
    zero: tuple[Annotated[int, Field(ge=0, le=3)], ...] = (0, 1, 2, 3)
    recompute: tuple[Recompute, ...] = ("none", "selective", "full")
    tensor_parallel: tuple[PositiveInt, ...] = (1, 2, 4, 8)
    pipeline_parallel: tuple[PositiveInt, ...] = (1,)
    gpu_counts: tuple[PositiveInt, ...] | None = None
    min_gpus: PositiveInt = 1
    max_gpus: PositiveInt = 1024
    fractions: tuple[Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)], ...] = ()
    micro_batch: PositiveInt = 1
    contracts: tuple[Contract, ...] = ("on_demand", "spot", "reserved")
    storage_tiers: tuple[str, ...] | None = None
    extra_spare_nodes: tuple[NonNegativeInt, ...] = (0, 1)
    #: At most this many segments: the phase may change configuration (region, GPU type and
    #: count, contract, layout) at a checkpoint, each change a migration (docs/cost-model.md,
    #: "Segments"). 1: one configuration for the whole run.
    max_segments: Annotated[int, Field(ge=1, le=24)] = 1
    #: What may change from one segment to the next: ``region`` (with its storage tier),
    #: ``gpu_type``, ``gpus`` (count and spares), ``contract`` (with the reserved term),
    #: ``layout`` (precision, ZeRO, recomputation, tp, pp).
    segment_changes: tuple[SegmentChange, ...] = SEGMENT_CHANGES

    @model_validator(mode="after")
    def _check(self) -> Options:
        if self.max_gpus < self.min_gpus:
            raise ValueError("max_gpus must be at least min_gpus")
        for name in (
            "precision",
            "zero",
            "recompute",
            "tensor_parallel",
            "pipeline_parallel",
            "contracts",
            "extra_spare_nodes",
        ):
            if len(getattr(self, name)) == 0:
                raise ValueError(f"{name}: expected at least one choice")
        _once("change", self.segment_changes)
        return self

    @field_validator(
        "precision",
        "zero",
        "recompute",
        "tensor_parallel",
        "pipeline_parallel",
        "contracts",
        "extra_spare_nodes",
        "gpu_counts",
        "storage_tiers",
    )
    @classmethod
    def _choices(cls, v: tuple[object, ...] | None) -> tuple[object, ...] | None:
        """Each choice once; a list of GPU counts or tiers, when given, not empty."""
        if v is not None:
            if len(v) == 0:
                raise ValueError("expected at least one choice")
            _once("choice", v)
        return v


class Scaling(Strict):
    """Scaling efficiency over nodes: eff(n) = per_doubling ** log2(n_nodes) (1 within a node)."""

    per_doubling: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = 0.98


class Redundancy(Strict):
    spare_nodes: NonNegativeInt = 0
    zones: PositiveInt = 1


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
    def _exactly_one(self) -> Progress:
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
    spare_gpus: NonNegativeInt = 0
    precision: Precision = "bf16"
    zero: Annotated[int, Field(ge=0, le=3)] = 0
    recompute: Recompute = "none"
    tp: PositiveInt = 1
    pp: PositiveInt = 1
    tier: str
    term: str = ""


def _progress(v: object) -> object:
    """``progress: 0.4`` is a fraction."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return {"fraction": v}
    return v


class Phase(Strict):
    """A unit of work with its window: it may run in hours ``release <= t < deadline``, given
    as horizon hours (whole numbers) or as ISO date-times with a UTC offset."""

    name: Annotated[str, Field(min_length=1, max_length=100)]
    kind: str = "training"
    model: str | None = None
    work: Work
    predecessors: tuple[str, ...] = ()
    release: NonNegativeInt | Time = 0
    deadline: PositiveInt | Time | None = None
    gpu_types: tuple[str, ...] | None = None
    regions: tuple[str, ...] | None = None
    options: Options = Field(default_factory=Options)
    preemptible: bool = False
    resume_overhead_hours: NonNegFloat = 0.25
    mfu: PosFloat | dict[str, PosFloat] = DEFAULT_MFU
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


class Horizon(Strict):
    start: datetime
    hours: Annotated[int, Field(ge=1, le=24 * 366 * 3)]

    @field_validator("start")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError("expected an ISO time with a UTC offset, e.g. 2023-06-05T00:00:00Z")
        return v


class FailureModel(Strict):
    """Failures (Young 1974, Daly 2006 for checkpointing). The default rate is Llama 3's:
    419 unexpected interruptions in 54 days on 16,384 H100s = 1.97e-5 per GPU-hour.

    ``preset`` names a published fleet instead (planner.physics.reliability.FAILURE_PRESETS:
    ``llama3``, ``rsc1``, ``rsc2``; Kokolis et al. 2024 for the RSC clusters); an explicit
    ``failures_per_gpu_hour`` wins over it. The remaining fields describe restarts and
    checkpoints at scale (planner.physics.reliability.RestartModel, planner.physics.storage):
    ``detect_hours`` until a failure is noticed; ``checkpoint`` the scheme (``sync``: the
    sharded write blocks training; ``async``: only a snapshot to host memory blocks;
    ``in_memory``: Gemini-style copies in peer host memory); per-node and aggregate storage
    bandwidth for the sharded write and reload (None: the storage tier's own figure); the
    device-to-host bandwidth of the snapshot. Defaults keep today's behaviour for the fields
    that existed."""

    preset: Literal["llama3", "rsc1", "rsc2"] | None = None
    failures_per_gpu_hour: NonNegFloat = 419 / (16384 * 54 * 24)
    restart_hours: NonNegFloat = 0.5
    spare_swap_hours: NonNegFloat = 0.1
    checkpoint_write_s: PosFloat | None = None
    detect_hours: NonNegFloat = 0.0
    checkpoint: Literal["sync", "async", "in_memory"] = "sync"
    per_node_checkpoint_gb_per_s: PosFloat | None = None
    storage_aggregate_gb_per_s: PosFloat | None = None
    d2h_gb_per_s: PosFloat = 25.0

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
    retention: PositiveInt = 2
    compression_ratio: Annotated[float, Field(ge=1.0, le=100.0, allow_inf_nan=False)] = 1.0
    archive: Literal["cheapest", "hottest"] = "cheapest"


class MemoryPolicy(Strict):
    """Allowances on top of model states and activations: CUDA context, NCCL and library
    workspaces (``buffer_gb``), allocator fragmentation, and headroom kept free on the GPU."""

    buffer_gb: NonNegFloat = 1.5
    fragmentation: Fraction = 0.05
    headroom: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = 0.05


class Family(Strict):
    porting_usd: NonNegFloat = 0.0


class Objective(Strict):
    weights: dict[
        Literal["rental", "energy", "storage", "failure", "transfer", "porting", "carbon"],
        NonNegFloat,
    ] = Field(default_factory=dict)
    carbon_usd_per_tonne: NonNegFloat = 0.0
    carbon_cap_tonnes: NonNegFloat | None = None


class InstanceSpec(Strict):
    name: str = "instance"
    description: str = ""
    horizon: Horizon
    gpu_types: dict[str, GpuType]
    regions: dict[str, Region]
    models: dict[str, ModelSpec] = Field(default_factory=dict)
    phases: tuple[Phase, ...]
    families: dict[str, Family] = Field(default_factory=dict)
    failure: FailureModel = Field(default_factory=FailureModel)
    storage: StoragePolicy = Field(default_factory=StoragePolicy)
    memory: MemoryPolicy = Field(default_factory=MemoryPolicy)
    objective: Objective = Field(default_factory=Objective)

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
