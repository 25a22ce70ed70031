"""What every field of the instance file means: unit, meaning and an example, per
``Model.field`` of :mod:`planner.instance.schema`.

The schema gives each field's type and default; this table gives the rest. Both feed
``docs/instance-format.md`` (``docs/make_instance_format.py``) and the JSON Schema that
``trainplan schema`` prints, and a test fails when a schema field has no entry here or the
document differs from what they generate, so the documentation cannot drift from the code.
"""

from __future__ import annotations

#: ``"Model.field": (unit, meaning, example)``; the example is YAML as it would appear under
#: the model's own key (a value, or ``key: value`` lines).
FIELD_DOCS: dict[str, tuple[str, str, str]] = {
    # ------------------------------------------------------------------ InstanceSpec
    "InstanceSpec.name": ("", "Name of the instance; plans and reports carry it.", "week-7b"),
    "InstanceSpec.description": ("", "Free text for people.", "7B pre-train in one week"),
    "InstanceSpec.horizon": (
        "",
        "The planning horizon: every phase runs in its hours, counted from its start.",
        "{start: 2026-12-07T00:00:00Z, hours: 72}",
    ),
    "InstanceSpec.gpu_catalog": (
        "path",
        "A user GPU catalog (trainplan-catalog/1, path relative to this file) whose GPUs "
        "`gpu_types` may name before the built-in catalog; `trainplan gpus --catalog FILE` "
        "lists it, `trainplan gpus import-skypilot` writes one from SkyPilot's vms.csv.",
        "my-gpus.yaml",
    ),
    "InstanceSpec.gpu_types": (
        "",
        "The GPU types phases may use, by name. An entry named after a catalog GPU "
        "(`trainplan gpus`) or with `catalog: NAME` takes the figures it leaves out from "
        "the catalog; any figure given overrides the catalog's.",
        "{H100-SXM: {}, L4: {board_power_w: 70}, big: {catalog: H200}}",
    ),
    "InstanceSpec.regions": (
        "",
        "Where GPUs can be rented: time zone, electricity, capacity, offers and storage.",
        "{eu-de: {timezone: Europe/Berlin, pue: 1.2, ...}}",
    ),
    "InstanceSpec.models": (
        "",
        "Transformer models the phases train or run, by name.",
        "{llama-13b: {preset: llama-2-13b}}",
    ),
    "InstanceSpec.phases": (
        "",
        "The work to plan: each phase with its work, window, predecessors and options.",
        "[{name: finetune, model: llama-13b, work: {tokens: 2.0e9}}]",
    ),
    "InstanceSpec.families": (
        "",
        "Per GPU family (GpuType.family), a one-time porting cost paid when a plan uses it.",
        "{amd: {porting_usd: 20000}}",
    ),
    "InstanceSpec.failure": (
        "",
        "How often GPUs fail and what a restart costs (Young/Daly checkpointing).",
        "{preset: llama3}",
    ),
    "InstanceSpec.storage": (
        "",
        "Checkpoint retention, compression and where finished outputs are archived.",
        "{retention: 2, compression_ratio: 1.0}",
    ),
    "InstanceSpec.memory": (
        "",
        "Allowances on top of model states and activations in GPU memory.",
        "{buffer_gb: 1.5, headroom: 0.05}",
    ),
    "InstanceSpec.objective": (
        "",
        "Weights of the cost components, a carbon price and a carbon cap.",
        "{carbon_usd_per_tonne: 80}",
    ),
    # ------------------------------------------------------------------ Horizon
    "Horizon.start": (
        "ISO date-time with offset",
        "Start of hour 0 (a time with a UTC offset).",
        "2026-12-07T00:00:00Z",
    ),
    "Horizon.hours": ("hours", "Length of the horizon in hours (at most 3 years).", "72"),
    # ------------------------------------------------------------------ GpuType
    "GpuType.catalog": (
        "",
        "The catalog GPU this entry takes its figures from (default: the entry's own name, "
        "when it leaves a required figure out).",
        "H100-SXM",
    ),
    "GpuType.accelerator": (
        "",
        "The cloud's name for the accelerator, for `trainplan export` (default: SkyPilot's "
        "name for the catalog entry, e.g. H100, A100-80GB).",
        "H100",
    ),
    "GpuType.memory_gb": (
        "GB (as the vendor states it)",
        "On-board memory per GPU. Required unless taken from the catalog.",
        "80",
    ),
    "GpuType.peak_tflops": (
        "TFLOPS (dense)",
        "Dense peak per precision (fp32, tf32, bf16, fp16, fp8; null where the chip has "
        "none), without 2:4 sparsity. Required unless taken from the catalog.",
        "{bf16: 989.4, fp8: 1978.9}",
    ),
    "GpuType.board_power_w": (
        "W",
        "Board power at full load (TDP). Required unless taken from the catalog.",
        "700",
    ),
    "GpuType.idle_power_w": (
        "W",
        "Power of an idle GPU (spares draw it). Required unless taken from the catalog.",
        "70",
    ),
    "GpuType.gpus_per_node": ("GPUs", "GPUs in one node (the unit spares come in).", "8"),
    "GpuType.node_overhead_w": (
        "W",
        "Host power per node beyond the GPUs (CPUs, memory, NICs, fans).",
        "2760",
    ),
    "GpuType.intra_node_gb_per_s": (
        "GB/s",
        "Scale-up bandwidth per GPU inside a node (both directions).",
        "900",
    ),
    "GpuType.inter_node_gb_per_s": (
        "GB/s",
        "Scale-out network bandwidth per GPU between nodes (one direction).",
        "50",
    ),
    "GpuType.family": (
        "",
        "Software family (porting costs are per family, InstanceSpec.families).",
        "nvidia",
    ),
    "GpuType.failures_per_gpu_hour": (
        "1/GPU-hour",
        "Failure rate of this GPU type (default: failure.failures_per_gpu_hour).",
        "2.0e-5",
    ),
    "GpuType.failures_per_1000_node_days": (
        "1/(1000 node-days)",
        "The failure rate as published per 1000 node-days (give this or failures_per_gpu_hour).",
        "6.5",
    ),
    "GpuType.source": ("", "Where the figures come from.", "NVIDIA H100 datasheet"),
    "GpuType.memory_unit": (
        "",
        "The unit of `memory_gb` as the vendor means it: GiB (2^30 bytes; HBM and GDDR are "
        "binary: an 80 GB A100 has 81,920 MiB) or GB (10^9 bytes).",
        "GiB",
    ),
    "GpuType.host_gb_per_s": (
        "GB/s",
        "Device-to-host bandwidth of one GPU, one direction, pinned buffers: the snapshot of an "
        "asynchronous checkpoint and CPU offload move at it (25: PCIe Gen4/5 x16 as achieved, a "
        "stated assumption).",
        "25",
    ),
    "GpuType.failure_preset": (
        "",
        "A published fleet's failure rate: llama3 (419 interruptions in 54 days on 16,384 H100), "
        "rsc1 or rsc2 (Meta's RSC clusters, Kokolis et al. 2024). At most one of this, "
        "failures_per_gpu_hour and failures_per_1000_node_days.",
        "llama3",
    ),
    # ------------------------------------------------------------------ Region
    "Region.timezone": (
        "IANA time zone",
        "Local time of the site: time-of-use bands, price profiles and local times in "
        "reports use it.",
        "Europe/Berlin",
    ),
    "Region.pue": (
        "",
        "Power usage effectiveness of the site (facility power / IT power); give this or "
        "`cooling`.",
        "1.2",
    ),
    "Region.cooling": (
        "",
        "Cooling type, for a typical PUE: air 1.58, liquid 1.15, immersion 1.05.",
        "liquid",
    ),
    "Region.electricity": (
        "USD/MWh",
        "Hourly electricity price (a Series: a CSV file, a price profile, time-of-use "
        "bands, a list or a constant).",
        "{csv: data/prices/price_DE-LU_2023.csv, column: Price (USD/MWh), "
        "time_column: Datetime (UTC), reference_year: 2023}",
    ),
    "Region.price_adder_usd_per_mwh": (
        "USD/MWh",
        "Added to every hour's price (taxes, grid fees on top of a wholesale price).",
        "50",
    ),
    "Region.carbon_intensity": (
        "gCO2/kWh",
        "Hourly carbon intensity of the grid (a Series); without it the region's "
        "emissions are not counted and plans say their emissions are incomplete.",
        "{constant: 350}",
    ),
    "Region.zones": (
        "",
        "Availability zones in the region (phases may require several, redundancy.zones).",
        "3",
    ),
    "Region.capacity": (
        "GPUs",
        "GPUs that can be rented at once per GPU type: a number, or one number per hour.",
        "{H100-SXM: 64, L4: 16}",
    ),
    "Region.offers": (
        "",
        "Prices per GPU type: on demand, spot and reserved contracts.",
        "{H100-SXM: {on_demand: {usd_per_gpu_hour: 3.29}}}",
    ),
    "Region.storage": (
        "",
        "Storage tiers by name (default: one hot tier at 0.10 USD/GB-month, 5 GB/s write).",
        "{hot: {usd_per_gb_month: 0.6}, cold: {usd_per_gb_month: 0.023}}",
    ),
    "Region.transfer_usd_per_gb": (
        "USD/GB",
        "Price of moving data from this region to another, by destination region.",
        "{eu-fr: 0.02}",
    ),
    "Region.default_transfer_usd_per_gb": (
        "USD/GB",
        "Transfer price to regions not listed in transfer_usd_per_gb.",
        "0.02",
    ),
    "Region.sla": (
        "",
        "The provider's outage credit (lowers the expected failure cost); none by default.",
        "{provider_fault_share: 0.5, credit_multiplier: 2.0}",
    ),
    "Region.cloud": (
        "",
        "The cloud the region is in, for `trainplan export` (SkyPilot's cloud name).",
        "aws",
    ),
    "Region.cloud_region": (
        "",
        "The cloud's own region name, for `trainplan export` (default: this region's key).",
        "eu-central-1",
    ),
    "Region.link_gb_per_s": (
        "GB/s",
        "Bandwidth of the link to another region, by region, for moving a checkpoint when a "
        "phase migrates.",
        "{us-tex: 2.5}",
    ),
    "Region.default_link_gb_per_s": (
        "GB/s",
        "Link bandwidth to regions not listed in link_gb_per_s (1.25 GB/s = 10 Gbit/s).",
        "1.25",
    ),
    # ------------------------------------------------------------------ Series
    "Series.values": (
        "per hour",
        "Inline values, one per hour from the horizon start (a longer list is cut).",
        "[60, 55, 52]",
    ),
    "Series.csv": (
        "path",
        "A CSV file (path relative to the instance file) with a time column and a value "
        "column; `#` lines are comments.",
        "data/prices/price_DE-LU_2023.csv",
    ),
    "Series.column": ("", "The CSV column holding the values.", "Price (USD/MWh)"),
    "Series.time_column": (
        "",
        "The CSV column holding ISO timestamps; rows are matched on their UTC hour.",
        "Datetime (UTC)",
    ),
    "Series.timezone": (
        "IANA time zone",
        "Time zone of CSV timestamps written without an offset.",
        "UTC",
    ),
    "Series.tou": (
        "",
        "Time-of-use tariff: bands in the region's local time over a default price.",
        "{default: 120, bands: [{start_hour: 22, end_hour: 6, price: 40}]}",
    ),
    "Series.constant": ("per hour", "One value for every hour.", "60"),
    "Series.scale": (
        "",
        "Multiplies every value (before price_adder_usd_per_mwh is added).",
        "1.1",
    ),
    "Series.reference_year": (
        "year",
        "A price profile: each horizon hour reads the CSV's row of the same weekday and "
        "local hour of day in this year, nearest the same calendar date (a 2026 horizon on "
        "2023 prices); the CSV must cover the reference days.",
        "2023",
    ),
    # ------------------------------------------------------------------ TimeOfUse, TouBand
    "TimeOfUse.default": ("per hour", "Value of hours no band, weekend or holiday covers.", "120"),
    "TimeOfUse.bands": (
        "",
        "Bands in local time; the last band that covers an hour sets it.",
        "[{start_hour: 22, end_hour: 6, price: 40}]",
    ),
    "TimeOfUse.weekend": ("per hour", "Value of Saturdays and Sundays (local).", "50"),
    "TimeOfUse.holidays": ("dates", "Local dates priced as holidays.", "[2026-12-25]"),
    "TimeOfUse.holiday": ("per hour", "Value of the holidays.", "45"),
    "TouBand.start_hour": ("hour of day", "First local hour of the band (0-23).", "22"),
    "TouBand.end_hour": (
        "hour of day",
        "Local hour the band ends before (exclusive, 0-24; before start_hour: wraps past "
        "midnight).",
        "6",
    ),
    "TouBand.price": ("per hour", "Value inside the band.", "40"),
    "TouBand.weekdays": ("weekdays", "Days the band applies on (0 = Monday).", "[0, 1, 2, 3, 4]"),
    # ------------------------------------------------------------------ offers
    "Offers.on_demand": ("", "On-demand price and billing.", "{usd_per_gpu_hour: 3.29}"),
    "Offers.spot": (
        "",
        "Spot price and preemption rate (only preemptible phases use spot).",
        "{usd_per_gpu_hour: 2.48, preemptions_per_hour: 0.1}",
    ),
    "Offers.reserved": (
        "",
        "Reserved capacity: GPUs committed for the whole horizon, paid used or not.",
        "{usd_per_gpu_hour: 2.1, max_gpus: 64}",
    ),
    "OnDemand.usd_per_gpu_hour": ("USD per GPU-hour", "On-demand rental price.", "3.29"),
    "OnDemand.billing_granularity_hours": (
        "hours",
        "Rental is billed in blocks of this many hours.",
        "1",
    ),
    "OnDemand.min_rental_hours": ("hours", "Least billed hours of a rental.", "0"),
    "Spot.usd_per_gpu_hour": ("USD per GPU-hour", "Spot rental price.", "2.48"),
    "Spot.preemptions_per_hour": (
        "1/hour",
        "Rate at which the provider takes a spot job back (a failure of the job).",
        "0.1",
    ),
    "Spot.billing_granularity_hours": (
        "hours",
        "Rental is billed in blocks of this many hours.",
        "1",
    ),
    "Spot.min_rental_hours": ("hours", "Least billed hours of a rental.", "0"),
    "Reserved.usd_per_gpu_hour": (
        "USD per GPU-hour",
        "Reserved price, paid for every hour of the horizon per committed GPU.",
        "2.1",
    ),
    "Reserved.min_gpus": ("GPUs", "Least commitment when any is made.", "8"),
    "Reserved.max_gpus": ("GPUs", "Largest commitment (no limit when absent).", "64"),
    "Reserved.terms": (
        "",
        "Reservation terms offered side by side (one-year, three-year, a month): each a pool of"
        " its own, paid for the whole term whether used or not and usable only inside it.",
        "[{name: 1y, start: 0, hours: 8760, usd_per_gpu_hour: 2.2}]",
    ),
    # ------------------------------------------------------------------ StorageTier, Sla
    "StorageTier.usd_per_gb_month": ("USD per GB-month", "Storage price.", "0.023"),
    "StorageTier.write_gb_per_s": (
        "GB/s",
        "Write bandwidth of a job's checkpoint writes.",
        "2.4",
    ),
    "StorageTier.read_gb_per_s": (
        "GB/s",
        "Read bandwidth (data loading, checkpoint reloads after a failure).",
        "2.4",
    ),
    "StorageTier.retrieval_usd_per_gb": (
        "USD/GB",
        "Price of reading data back (archive tiers charge it).",
        "0.03",
    ),
    "StorageTier.aggregate_gb_per_s": (
        "GB/s",
        "Bandwidth the whole job shares on this tier; a sharded checkpoint moves at min(write/read"
        " per node x nodes, this) (none: no limit beyond the nodes').",
        "2000",
    ),
    "Sla.provider_fault_share": (
        "share",
        "Share of failures that are the provider's fault (spot preemptions never are).",
        "0.5",
    ),
    "Sla.credit_multiplier": (
        "",
        "Rental credit per hour of downtime the provider causes (200% = 2.0).",
        "2.0",
    ),
    # ------------------------------------------------------------------ ModelSpec
    "ModelSpec.preset": (
        "",
        "A published model by name (planner/data/models.yaml); fields given beside it win.",
        "llama-2-13b",
    ),
    "ModelSpec.params": (
        "parameters",
        "Parameter count; derived from the architecture when not given.",
        "1.3e10",
    ),
    "ModelSpec.layers": ("", "Transformer layers.", "40"),
    "ModelSpec.hidden": ("", "Hidden size.", "5120"),
    "ModelSpec.heads": ("", "Attention heads (inferred as hidden/128 when not given).", "40"),
    "ModelSpec.seq_len": ("tokens", "Sequence length of training and inference.", "4096"),
    "ModelSpec.vocab": ("tokens", "Vocabulary size.", "32000"),
    "ModelSpec.optimizer": (
        "",
        "Optimizer, for the optimizer states in memory and checkpoints.",
        "adamw",
    ),
    "ModelSpec.flash_attention": (
        "",
        "FlashAttention: attention scores are not kept in activation memory.",
        "true",
    ),
    "ModelSpec.ffn_hidden": ("", "Feed-forward hidden size (default 4 x hidden).", "13824"),
    "ModelSpec.kv_heads": ("", "Key/value heads (grouped-query attention).", "8"),
    "ModelSpec.head_dim": ("", "Dimension per attention head (default hidden/heads).", "128"),
    "ModelSpec.gated_mlp": ("", "Gated MLP (SwiGLU: three FFN matrices).", "true"),
    "ModelSpec.tied_embeddings": ("", "Input and output embeddings share weights.", "false"),
    "ModelSpec.position": ("", "Position encoding: learned or rope.", "rope"),
    "ModelSpec.norm": ("", "Normalisation: layernorm or rmsnorm.", "rmsnorm"),
    "ModelSpec.linear_bias": ("", "Linear layers have biases.", "false"),
    "ModelSpec.qkv_bias": ("", "Query/key/value projections have biases.", "false"),
    "ModelSpec.moe": (
        "",
        "Mixture of experts: `experts` routed experts of FFN size `expert_ffn`, `top_k` active "
        "per token, `shared_experts` always active (FFN `shared_ffn`, default expert_ffn), the "
        "first `first_dense_layers` dense, then every `every`-th layer MoE, `router_bias`. "
        "Total parameters count every expert; FLOPs count the active ones.",
        "{experts: 8, top_k: 2, expert_ffn: 14336}",
    ),
    "ModelSpec.mla": (
        "",
        "Multi-head latent attention (DeepSeek-V2/V3): `q_lora_rank` (0: uncompressed "
        "queries), `kv_lora_rank`, and the per-head `qk_nope_head_dim`, `qk_rope_head_dim`, "
        "`v_head_dim`.",
        "{q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, "
        "qk_rope_head_dim: 64, v_head_dim: 128}",
    ),
    "MoE.experts": ("", "Routed experts per MoE layer.", "8"),
    "MoE.top_k": ("", "Experts active per token.", "2"),
    "MoE.expert_ffn": ("", "Feed-forward size of one expert.", "14336"),
    "MoE.shared_experts": ("", "Experts every token uses.", "0"),
    "MoE.shared_ffn": ("", "Feed-forward size of a shared expert (default expert_ffn).", "2048"),
    "MoE.first_dense_layers": ("", "Leading layers that stay dense.", "3"),
    "MoE.every": ("", "Every n-th layer after those is MoE.", "1"),
    "MoE.router_bias": ("", "The router has a bias.", "false"),
    "MLA.q_lora_rank": ("", "Compressed query rank (0: uncompressed queries).", "1536"),
    "MLA.kv_lora_rank": ("", "Compressed key/value rank.", "512"),
    "MLA.qk_nope_head_dim": ("", "Per-head query/key dimension without RoPE.", "128"),
    "MLA.qk_rope_head_dim": ("", "Per-head query/key dimension with RoPE.", "64"),
    "MLA.v_head_dim": ("", "Per-head value dimension.", "128"),
    "Progress.fraction": (
        "",
        "Share of the phase's work done.",
        "0.4",
    ),
    "Progress.tokens": (
        "tokens",
        "Tokens done (against work.tokens).",
        "6.0e10",
    ),
    "Progress.flops": (
        "FLOPs",
        "FLOPs done (against the phase's work).",
        "1.0e21",
    ),
    "ReservedTerm.name": (
        "",
        "The term's name (plans and reports name the pool by it).",
        "1y",
    ),
    "ReservedTerm.start": (
        "hour or time",
        "When the term begins: an hour of the horizon (negative: bought before it) or an ISO "
        "date-time with a UTC offset.",
        "0",
    ),
    "ReservedTerm.hours": (
        "h",
        "The term's length.",
        "8760",
    ),
    "ReservedTerm.usd_per_gpu_hour": (
        "USD/GPU-h",
        "The term's price (a number or an hourly series; default: the offer's).",
        "2.2",
    ),
    "ReservedTerm.min_gpus": (
        "GPUs",
        "Least commitment (default: the offer's).",
        "64",
    ),
    "ReservedTerm.max_gpus": (
        "GPUs",
        "Largest commitment (default: the offer's).",
        "512",
    ),
    "ReservedTerm.prorate": (
        "",
        "Charge only the term's hours inside the horizon to this plan (the rest belongs to the "
        "plans before and after it); false: the whole term.",
        "true",
    ),
    "Running.gpu": (
        "",
        "GPU type of the running configuration.",
        "H100-SXM",
    ),
    "Running.region": (
        "",
        "Region it runs in.",
        "eu-de",
    ),
    "Running.contract": (
        "",
        "Its contract: on_demand, spot or reserved.",
        "on_demand",
    ),
    "Running.gpus": (
        "GPUs",
        "Working GPUs.",
        "64",
    ),
    "Running.spare_gpus": (
        "GPUs",
        "Spare GPUs held.",
        "8",
    ),
    "Running.precision": (
        "",
        "Training precision.",
        "bf16",
    ),
    "Running.zero": (
        "",
        "ZeRO stage.",
        "1",
    ),
    "Running.recompute": (
        "",
        "Activation recomputation: none, selective, full.",
        "selective",
    ),
    "Running.tp": (
        "",
        "Tensor-parallel degree.",
        "8",
    ),
    "Running.pp": (
        "",
        "Pipeline-parallel degree.",
        "1",
    ),
    "Running.tier": (
        "",
        "Storage tier of its checkpoints.",
        "hot",
    ),
    "Running.term": (
        "",
        "Reserved term it runs under (empty: none).",
        "1y",
    ),
    "Running.sp": (
        "",
        "Sequence parallelism on.",
        "true",
    ),
    "Running.cp": (
        "",
        "Context-parallel degree.",
        "1",
    ),
    "Running.ep": (
        "",
        "Expert-parallel degree.",
        "1",
    ),
    "Running.microbatches": (
        "",
        "Micro-batches per step.",
        "16",
    ),
    "Running.virtual": (
        "",
        "Interleaved model chunks per device.",
        "1",
    ),
    "Running.offload": (
        "",
        "CPU offload: none, optimizer, params.",
        "none",
    ),
    "Running.checkpoint": (
        "",
        "Its checkpoint scheme (none: the phase's default).",
        "async",
    ),
    # ------------------------------------------------------------------ Phase
    "Phase.name": (
        "",
        "Unique name of the phase (other phases name it as predecessor).",
        "finetune",
    ),
    "Phase.kind": (
        "",
        "A label for people (training, evaluation, ...). It does not change the physics: "
        "an evaluation is a forward pass only with `work.passes: forward`.",
        "evaluation",
    ),
    "Phase.model": (
        "",
        "The model the phase trains or runs (a key of `models`); without one, the work "
        "is given as FLOPs or GPU-hours and memory is not modelled.",
        "llama-13b",
    ),
    "Phase.work": ("", "How much work the phase is.", "{tokens: 2.0e9}"),
    "Phase.predecessors": (
        "",
        "Phases that must end before this one starts; their output moves to its region.",
        "[data-prep]",
    ),
    "Phase.release": (
        "hour or ISO date-time",
        "Earliest start: a horizon hour, or a date-time with offset.",
        "0",
    ),
    "Phase.deadline": (
        "hour or ISO date-time",
        "The phase ends by then: a horizon hour (exclusive) or a date-time with offset "
        "(default: the horizon's end).",
        "2026-12-10T00:00:00Z",
    ),
    "Phase.gpu_types": (
        "",
        "GPU types the phase may use (default: every type).",
        "[H100-SXM]",
    ),
    "Phase.regions": (
        "",
        "Regions the phase may run in (default: every region).",
        "[eu-de, eu-fr]",
    ),
    "Phase.options": (
        "",
        "What the planner may choose among: precision, ZeRO, parallelism, GPU counts, "
        "contracts, storage tiers, spares.",
        "{gpu_counts: [16, 32, 48, 64], contracts: [on_demand]}",
    ),
    "Phase.preemptible": (
        "",
        "The phase may pause between hours and run on spot (it checkpoints and resumes).",
        "true",
    ),
    "Phase.resume_overhead_hours": (
        "hours",
        "Hours of rental and power lost at each resume after a pause.",
        "0.25",
    ),
    "Phase.mfu": (
        "share",
        "Model FLOPs utilisation, one number or per GPU type (types left out: 0.40).",
        "{H100-SXM: 0.40, A100-SXM-80GB: 0.50}",
    ),
    "Phase.power_load": ("share", "Share of board power drawn while running.", "0.9"),
    "Phase.scaling": ("", "Scaling efficiency over nodes.", "{per_doubling: 0.98}"),
    "Phase.redundancy": (
        "",
        "Spare nodes and availability zones the phase needs.",
        "{spare_nodes: 1, zones: 1}",
    ),
    "Phase.data": (
        "",
        "Input data: its size, where it lives, how often it is read.",
        "{size_gb: 500, home_region: eu-de}",
    ),
    "Phase.checkpoint_gb": (
        "GB",
        "Checkpoint size (default: weights and optimizer states of the model).",
        "200",
    ),
    "Phase.output_gb": (
        "GB",
        "Output handed to successors and archived (default: the trained weights).",
        "26",
    ),
    "Phase.memory_gb": ("GB", "Extra memory per GPU the phase needs beyond the model.", "2"),
    "Phase.licence_usd_per_gpu_hour": (
        "USD per GPU-hour",
        "Software licence paid per GPU-hour held.",
        "0.1",
    ),
    "Phase.done": (
        "",
        "The phase's output exists already (reuse): it is not planned.",
        "false",
    ),
    "Phase.progress": (
        "",
        "Work already done when the phase is re-planned: a fraction, or {tokens: ...} or "
        "{flops: ...} done; only the rest is planned.",
        "0.4",
    ),
    "Phase.running": (
        "",
        "The configuration the phase is running on when re-planned (where its latest checkpoint"
        " is): going on with it costs nothing more, any other start is a migration.",
        "{gpu: H100-SXM, region: eu-de, contract: on_demand, gpus: 64, tier: hot}",
    ),
    # ------------------------------------------------------------------ Work
    "Work.tokens": ("tokens", "Tokens processed (6 N D FLOPs to train, 2 N D forward).", "2.0e9"),
    "Work.passes": (
        "",
        "train (forward and backward) or forward (evaluation, inference, validation).",
        "forward",
    ),
    "Work.flops": ("FLOPs", "The work as FLOPs.", "1.2e21"),
    "Work.gpu_hours": (
        "GPU-hours",
        "The work as GPU-hours measured on `gpu` at `precision`.",
        "384",
    ),
    "Work.gpu": ("", "The GPU type gpu_hours were measured on.", "L4"),
    "Work.precision": ("", "The precision gpu_hours were measured at.", "bf16"),
    "Work.flops_convention": (
        "",
        "How tokens become FLOPs: 6nd (6 x active parameters x tokens, the default: a published "
        "MFU is counted this way), kaplan (plus the attention term 6 L s h), palm (PaLM App. B: "
        "plus 12 L H Q T), megatron (Narayanan et al. 2021 eq. 3).",
        "6nd",
    ),
    # ------------------------------------------------------------------ Options
    "Options.precision": ("", "Precisions to choose among.", "[bf16, fp8]"),
    "Options.zero": ("", "ZeRO stages to choose among (0-3).", "[1, 3]"),
    "Options.recompute": (
        "",
        "Activation recomputation: none, selective, full.",
        "[none, selective]",
    ),
    "Options.tensor_parallel": ("", "Tensor-parallel degrees (within a node).", "[1, 2, 4, 8]"),
    "Options.pipeline_parallel": ("", "Pipeline-parallel degrees.", "[1, 2]"),
    "Options.gpu_counts": (
        "GPUs",
        "GPU counts to try. Default: 1, 2, 4 and whole nodes by powers of two "
        "(8, 16, 32, ...) within min_gpus..max_gpus, so a count such as 48 is tried only "
        "when listed.",
        "[16, 32, 48, 64]",
    ),
    "Options.min_gpus": ("GPUs", "Least GPU count of the default counts.", "8"),
    "Options.max_gpus": ("GPUs", "Largest GPU count of the default counts.", "64"),
    "Options.fractions": (
        "share of a GPU",
        "Fractional GPU slices to offer (0 < f < 1), for small phases.",
        "[0.5, 0.25]",
    ),
    "Options.micro_batch": ("sequences", "Micro-batch size per GPU (activation memory).", "1"),
    "Options.contracts": (
        "",
        "Contracts the phase may use: on_demand, spot (preemptible phases only), reserved.",
        "[on_demand, spot]",
    ),
    "Options.storage_tiers": (
        "",
        "Storage tiers the phase may keep checkpoints in (default: every tier).",
        "[hot]",
    ),
    "Options.extra_spare_nodes": (
        "nodes",
        "Spare nodes beyond redundancy.spare_nodes the planner may add.",
        "[0, 1]",
    ),
    "Options.microbatches": (
        "",
        "Micro-batches per step a pipeline may use: the bubble is (p - 1) / (v m).",
        "[16, 32]",
    ),
    "Options.interleave": (
        "",
        "Model chunks per device (interleaved 1F1B, Narayanan et al. 2021 §2.2.2); needs pp > 1 "
        "and the micro-batches a multiple of pp.",
        "[1, 2]",
    ),
    "Options.sequence_parallel": (
        "",
        "Whether Megatron sequence parallelism (Korthikanti et al. 2022) is used with tp > 1; "
        "without it tensor-parallel activations are larger.",
        "[true, false]",
    ),
    "Options.context_parallel": (
        "",
        "Context-parallel degrees: cp ranks split the sequence (ring attention); GPUs = tp x cp x "
        "pp x dp.",
        "[1, 2]",
    ),
    "Options.expert_parallel": (
        "",
        "Expert-parallel degrees of an MoE model: ep ranks split the routed experts (all-to-all "
        "per MoE layer).",
        "[1, 8]",
    ),
    "Options.offload": (
        "",
        "CPU offload the phase may use: none, optimizer (ZeRO-Offload) or params (ZeRO-Infinity, "
        "with ZeRO-3), with its PCIe time.",
        "[none, optimizer]",
    ),
    "Options.checkpoint": (
        "",
        "Checkpoint schemes the phase may choose among (default: failure.checkpoint): sync, async,"
        " in_memory.",
        "[async, in_memory]",
    ),
    "Options.max_segments": (
        "",
        "At most this many segments: the phase may change configuration at checkpoints (region,"
        " GPU type and count, contract, layout), each change a migration (docs/cost-model.md, "
        "Segments); 1: one configuration for the whole run.",
        "2",
    ),
    "Options.segment_changes": (
        "",
        "What may change from one segment to the next: region (with its storage tier), "
        "gpu_type, gpus (count and spares), contract (with the reserved term), layout.",
        "[region]",
    ),
    "Scaling.per_doubling": (
        "share",
        "Efficiency kept per doubling of nodes (0.98: 2% lost each time).",
        "0.98",
    ),
    "Scaling.kind": (
        "",
        "The scaling model away from the reference scale: per_doubling (per_doubling ** "
        "log2(nodes)), interconnect (from the GPU type's inter_node_gb_per_s: compute / (compute +"
        " (1 - overlap) gradient all-reduce)), none.",
        "per_doubling",
    ),
    "Scaling.reference_gpus": (
        "GPUs",
        "The scale the MFU was measured at (none: the scale it is used at, so every GPU count runs"
        " at the MFU); throughput per GPU is eff(n) / eff(reference).",
        "2048",
    ),
    "Scaling.overlap": (
        "",
        "Share of the gradient all-reduce hidden behind compute (kind: interconnect).",
        "0.9",
    ),
    "Scaling.layout": (
        "",
        "modeled: the layout's own factors (tensor parallelism, pipeline bubble, ZeRO-3 traffic, "
        "expert all-to-all, offload) and recomputation are charged against an MFU meant at tp = pp"
        " = 1; in_mfu: the MFU was measured for the layout used (a published run's) and none is "
        "charged.",
        "modeled",
    ),
    "Redundancy.spare_nodes": ("nodes", "Hot spare nodes the phase must hold.", "1"),
    "Redundancy.zones": ("", "Availability zones the region must have.", "2"),
    "DataSpec.size_gb": ("GB", "Size of the input data.", "500"),
    "DataSpec.home_region": (
        "",
        "Region the data lives in (moving it elsewhere costs transfer).",
        "eu-de",
    ),
    "DataSpec.read_passes": (
        "",
        "Times the data is read (I/O time is size x passes / read bandwidth).",
        "1",
    ),
    "DataSpec.residency": (
        "",
        "The regions the data may be staged to (data residency); a configuration or segment "
        "elsewhere is refused (none: anywhere).",
        "[eu-de, eu-fr]",
    ),
    "Family.porting_usd": ("USD", "One-time cost of porting the stack to the family.", "20000"),
    # ------------------------------------------------------------------ FailureModel
    "FailureModel.preset": (
        "",
        "A published failure rate: llama3, rsc1, rsc2 (an explicit rate wins).",
        "llama3",
    ),
    "FailureModel.failures_per_gpu_hour": (
        "1/GPU-hour",
        "Default failure rate (Llama 3: 419 interruptions in 54 days on 16,384 GPUs).",
        "1.97e-5",
    ),
    "FailureModel.restart_hours": ("hours", "Time to restart a job after a failure.", "0.5"),
    "FailureModel.spare_swap_hours": (
        "hours",
        "Time to swap in a hot spare node instead of restarting.",
        "0.1",
    ),
    "FailureModel.checkpoint_write_s": (
        "seconds",
        "Time to write a checkpoint (default: size / the tier's write bandwidth).",
        "60",
    ),
    "FailureModel.detect_hours": ("hours", "Time until a failure is noticed.", "0.05"),
    "FailureModel.checkpoint": (
        "",
        "Checkpoint scheme: sync, async (only a host snapshot blocks), in_memory.",
        "async",
    ),
    "FailureModel.in_memory_replicas": (
        "copies",
        "Copies an in_memory checkpoint keeps in the host memory of peer nodes (Gemini, SOSP "
        "2023).",
        "2",
    ),
    "StoragePolicy.retention": ("checkpoints", "Checkpoints kept while a phase runs.", "2"),
    "StoragePolicy.compression_ratio": (
        "",
        "Checkpoints and outputs are this many times smaller on storage.",
        "1.5",
    ),
    "StoragePolicy.archive": (
        "",
        "Where finished outputs wait: the region's cheapest tier or its hottest.",
        "cheapest",
    ),
    "MemoryPolicy.buffer_gb": (
        "GB",
        "Per GPU: CUDA context, NCCL and library workspaces.",
        "1.5",
    ),
    "MemoryPolicy.fragmentation": (
        "share",
        "Allocator fragmentation on top of states and activations.",
        "0.05",
    ),
    "MemoryPolicy.headroom": ("share", "Share of GPU memory kept free.", "0.05"),
    "MemoryPolicy.convention": (
        "",
        "How model states are counted: zero (the ZeRO paper: 2 + 2 + 12 bytes per parameter), "
        "megatron (fp32 gradient accumulation: 2 + 4 + 12), deepspeed (its estimators' figures).",
        "megatron",
    ),
    "Objective.weights": (
        "",
        "Weight of each cost component in the objective (default 1 each): rental, energy, "
        "storage, failure, transfer, porting, carbon.",
        "{carbon: 2.0}",
    ),
    "Objective.carbon_usd_per_tonne": (
        "USD per t CO2",
        "Carbon price: emissions cost this per tonne.",
        "80",
    ),
    "Objective.carbon_cap_tonnes": (
        "t CO2",
        "Plans may emit at most this much (regions without carbon data count zero).",
        "5",
    ),
}
