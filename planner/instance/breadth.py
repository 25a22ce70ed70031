"""How many configurations an instance asks the planner to enumerate, bounded before any is
built: every phase multiplies its GPU types, GPU counts, regions, contracts, storage tiers,
checkpointing schemes and spare-node choices (then layouts), so lists at their caps in one
file (a thousand phases x 64 regions x 16 spare choices) ask for tens of millions, which no
command would finish. Such a file is refused with the figures, naming the phase that asks
most, instead of running for an hour.

The limit is 500,000 combinations before layouts: fourteen times the largest benchmark
family (a lab's quarter of 200 phases: 36,000), and 1,400 times the shipped month-70b."""

from __future__ import annotations

import math

from planner.instance.errors import FieldError
from planner.instance.schema import InstanceSpec, Phase

#: Combinations (before layouts) the configuration space may be asked to enumerate.
MAX_COMBINATIONS = 500_000


def _factors(spec: InstanceSpec, p: Phase) -> dict[str, int]:
    """A phase's choices per dimension (an upper estimate of what the enumeration tries)."""
    o = p.options
    counts = (
        len(o.gpu_counts)
        if o.gpu_counts is not None
        else 3 + max(1, int(math.log2(max(o.max_gpus, 1))))
    ) + len(o.fractions)
    tiers = (
        len(o.storage_tiers)
        if o.storage_tiers
        else max((len(r.storage) for r in spec.regions.values()), default=1)
    )
    return {
        "GPU types": len(p.gpu_types or spec.gpu_types),
        "GPU counts": counts,
        "regions": len(p.regions or spec.regions),
        "contracts": len(o.contracts),
        "storage tiers": tiers,
        "checkpoint schemes": len(o.checkpoint) if o.checkpoint else 1,
        "spare-node choices": len(o.extra_spare_nodes),
    }


def check_breadth(spec: InstanceSpec, errors: list[FieldError]) -> None:
    """Append an error when the phases ask for more than :data:`MAX_COMBINATIONS`
    configurations before layouts (:func:`_factors` multiplied, summed over the phases)."""
    total, worst, worst_n = 0, None, -1
    for i, p in enumerate(spec.phases):
        n = math.prod(_factors(spec, p).values())
        total += n
        if n > worst_n:
            worst, worst_n = (i, p), n
    if total <= MAX_COMBINATIONS or worst is None:
        return
    i, p = worst
    shown = " x ".join(f"{v} {k}" for k, v in _factors(spec, p).items())
    errors.append(
        FieldError(
            "phases",
            f"the phases ask for about {total:,} configurations before layouts (at most "
            f"{MAX_COMBINATIONS:,}); phases[{i}] ({p.name}) alone asks {worst_n:,}: {shown}; "
            "narrow options.gpu_counts, regions, gpu_types, contracts or extra_spare_nodes",
        )
    )
