"""Storage: checkpoint size, tier cost per hour, checkpoint write time, transfers."""

from __future__ import annotations

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
    return gb * usd_per_gb
