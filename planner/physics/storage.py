"""Storage: checkpoint size, tier cost per hour, checkpoint write time, transfers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

from planner.physics.memory import OPTIMIZER_K_MIXED, WEIGHT_BYTES

#: Hours in an average month (8760 / 12), for prices quoted per GB-month.
HOURS_PER_MONTH = 730.0


def checkpoint_gb(params: float, precision: str, optimizer: str, train: bool = True) -> float:
    """Bytes of a resumable training checkpoint: the working weights plus the optimizer states,
    (w + K) P (the model states of the ZeRO paper without the gradients). Adam in bf16:
    (2 + 12) P = 14 bytes per parameter, e.g. 98 GB for a 7B model. A forward-only phase
    checkpoints nothing but its output."""
    if not train:
        return 0.0
    w = WEIGHT_BYTES[precision]
    k = OPTIMIZER_K_MIXED[optimizer] - (4.0 if precision in ("fp32", "tf32") else 0.0)
    return (w + k) * params / 1e9


def weights_gb(params: float, precision: str = "bf16") -> float:
    """Bytes of the trained weights handed to the next phase: 2 bytes per parameter in 16 bit."""
    return WEIGHT_BYTES[precision] * params / 1e9


def storage_usd_per_hour(gb: float, usd_per_gb_month: float) -> float:
    """GB x price per GB-month / 730 hours."""
    return gb * usd_per_gb_month / HOURS_PER_MONTH


def write_seconds(gb: float, write_gb_per_s: float) -> float:
    """Time to write a checkpoint: size / tier write bandwidth."""
    return gb / write_gb_per_s


def transfer_usd(gb: float, usd_per_gb: float) -> float:
    """USD to move ``gb`` GB at ``usd_per_gb``."""
    return gb * usd_per_gb


# ----------------------------------------------------------------------------- at scale


def checkpoint_bytes(params: float, precision: str, optimizer: str) -> float:
    """Bytes of a resumable checkpoint, (w + K) P: :func:`checkpoint_gb` in bytes."""
    return checkpoint_gb(params, precision, optimizer) * 1e9


def sharded_bandwidth_gb_per_s(
    nodes: int, per_node_gb_per_s: float, aggregate_gb_per_s: float | None = None
) -> float:
    """Bandwidth of a sharded checkpoint: every data-parallel rank writes (reads) its own shard
    (PyTorch Distributed Checkpoint, Megatron's distributed checkpointing), so the job moves
    data through every node's link at once, up to the storage tier's aggregate limit:
    min(per-node x nodes, aggregate). Llama 3's storage (§3.3.1, Tectonic) sustains 2 TB/s
    (peak 7 TB/s) for 16K GPUs."""
    bw = per_node_gb_per_s * max(1, nodes)
    return min(bw, aggregate_gb_per_s) if aggregate_gb_per_s else bw


def sharded_seconds(
    nbytes: float, nodes: int, per_node_gb_per_s: float, aggregate_gb_per_s: float | None
) -> float:
    """Time to write (or read back) a sharded checkpoint of ``nbytes``:
    bytes / :func:`sharded_bandwidth_gb_per_s`. Writes and reloads follow the same model, each
    at its own per-node rate."""
    return nbytes / (sharded_bandwidth_gb_per_s(nodes, per_node_gb_per_s, aggregate_gb_per_s) * 1e9)


@dataclass(frozen=True)
class CheckpointCost:
    """What one checkpointing scheme costs: ``stall_s`` of training blocked per checkpoint,
    ``persist_s`` until the checkpoint is durable (survives a failure), ``reload_s`` to resume
    from it, ``host_bytes`` of host (CPU) memory it holds per GPU, and ``stored_s`` until the
    checkpoint is in the storage tier (None: at ``persist_s``).

    ``stored_s`` is what leaving a configuration waits for (a migration, docs/cost-model.md
    "Segments"): the next configuration reads the checkpoint from the tier, so the source's
    nodes are held until the write has landed there. It equals ``persist_s`` for ``sync``
    (the write) and ``async`` (snapshot + write); for ``in_memory`` the durable copies sit in
    the peers' host memory, which is released with the nodes, so a migration writes the
    snapshot to the tier: snapshot + write."""

    scheme: str
    stall_s: float
    persist_s: float
    reload_s: float
    host_bytes: float = 0.0
    stored: float | None = None

    @property
    def stored_s(self) -> float:
        """Seconds from the checkpoint's start until it is in the storage tier."""
        return self.persist_s if self.stored is None else self.stored

    @property
    def lag_s(self) -> float:
        """Seconds after the stall until the checkpoint is durable (0 when synchronous)."""
        return self.persist_s - self.stall_s


def synchronous_checkpoint(
    ckpt_bytes: float,
    nodes: int,
    per_node_gb_per_s: float,
    aggregate_gb_per_s: float | None,
    read_per_node_gb_per_s: float | None = None,
) -> CheckpointCost:
    """Training waits for the whole sharded write: stall = persist = write time; the reload
    reads the shards back at ``read_per_node_gb_per_s`` (default the write rate)."""
    w = sharded_seconds(ckpt_bytes, nodes, per_node_gb_per_s, aggregate_gb_per_s)
    r = sharded_seconds(
        ckpt_bytes, nodes, read_per_node_gb_per_s or per_node_gb_per_s, aggregate_gb_per_s
    )
    return CheckpointCost("sync", w, w, r)


def asynchronous_checkpoint(
    ckpt_bytes: float,
    gpus: int,
    nodes: int,
    per_node_gb_per_s: float,
    aggregate_gb_per_s: float | None,
    d2h_gb_per_s: float = 25.0,
    read_per_node_gb_per_s: float | None = None,
) -> CheckpointCost:
    """Asynchronous checkpointing (PyTorch DCP ``async_save``, Megatron async save, Nebula):
    training stalls only for the snapshot of each GPU's shard to pinned host memory,
    (bytes / gpus) / D2H bandwidth; the write to storage proceeds in the background and is
    hidden as long as it is shorter than the interval (the caller should keep interval >=
    lag_s, :func:`planner.physics.reliability.checkpoint_interval_s`). D2H 25 GB/s is a
    stated assumption for PCIe Gen4/5 x16 with pinned buffers."""
    sync = synchronous_checkpoint(
        ckpt_bytes, nodes, per_node_gb_per_s, aggregate_gb_per_s, read_per_node_gb_per_s
    )
    return _in_background(sync, ckpt_bytes, gpus, d2h_gb_per_s)


def _in_background(
    sync: CheckpointCost, ckpt_bytes: float, gpus: int, d2h_gb_per_s: float
) -> CheckpointCost:
    """The synchronous write ``sync`` moved behind a snapshot of each GPU's shard to host
    memory: stall = shard / D2H, persist = stall + the write, reload unchanged."""
    shard = ckpt_bytes / max(1, gpus)
    stall = shard / (d2h_gb_per_s * 1e9)
    return CheckpointCost("async", stall, stall + sync.persist_s, sync.reload_s, host_bytes=shard)


def in_memory_checkpoint(
    ckpt_bytes: float,
    gpus: int,
    peer_gb_per_s: float,
    d2h_gb_per_s: float = 25.0,
    replicas: int = 2,
) -> CheckpointCost:
    """In-memory checkpointing to host and peer CPU memory (Wang et al. 2023, "Gemini: Fast
    Failure Recovery in Distributed Training with In-Memory Checkpoints", SOSP '23): each GPU
    snapshots its shard to host memory and sends ``replicas - 1`` copies to peers over the
    training network, interleaved with training traffic; recovery reads the shard back from a
    peer. Stall = the host snapshot; persist = + the peer copies at ``peer_gb_per_s`` (the
    GPU's inter-node bandwidth); reload = one shard over the network. Host memory per GPU =
    replicas x shard. Failures that take out every replica fall back to the persistent
    checkpoint (Gemini's placement makes that rare; not modelled here)."""
    shard = ckpt_bytes / max(1, gpus)
    stall = shard / (d2h_gb_per_s * 1e9)
    peer = (replicas - 1) * shard / (peer_gb_per_s * 1e9)
    reload = shard / (peer_gb_per_s * 1e9)
    return CheckpointCost("in_memory", stall, stall + peer, reload, host_bytes=replicas * shard)


#: Checkpointing schemes (``failure.checkpoint``, ``options.checkpoint``).
CheckpointScheme = Literal["sync", "async", "in_memory"]
CHECKPOINT_SCHEMES: tuple[str, ...] = get_args(CheckpointScheme)


def checkpoint_cost(
    scheme: str,
    ckpt_bytes: float,
    gpus: int,
    nodes: int,
    write_per_node_gb_per_s: float,
    read_per_node_gb_per_s: float,
    aggregate_gb_per_s: float | None,
    host_gb_per_s: float,
    peer_gb_per_s: float,
    write_s: float | None = None,
    replicas: int = 2,
) -> CheckpointCost:
    """The cost of one checkpoint of ``ckpt_bytes`` written by ``gpus`` GPUs on ``nodes``
    nodes under ``scheme`` (:func:`synchronous_checkpoint`, :func:`asynchronous_checkpoint`,
    :func:`in_memory_checkpoint`). ``write_s`` fixes the time of the sharded write (the
    instance's ``failure.checkpoint_write_s``): the stall when synchronous, the background
    write when asynchronous; ``replicas`` are the in-memory copies."""
    if scheme not in CHECKPOINT_SCHEMES:
        raise ValueError(f"checkpoint scheme must be one of {', '.join(CHECKPOINT_SCHEMES)}")
    sync = synchronous_checkpoint(
        ckpt_bytes, nodes, write_per_node_gb_per_s, aggregate_gb_per_s, read_per_node_gb_per_s
    )
    if write_s is not None:
        sync = CheckpointCost("sync", write_s, write_s, sync.reload_s)
    if scheme == "in_memory":
        mem = in_memory_checkpoint(ckpt_bytes, gpus, peer_gb_per_s, host_gb_per_s, replicas)
        return replace(mem, stored=mem.stall_s + sync.persist_s)
    return sync if scheme == "sync" else _in_background(sync, ckpt_bytes, gpus, host_gb_per_s)
