"""How complete a plan's emissions are: the energy it uses in regions without carbon data.

A region without ``carbon_intensity`` adds nothing to ``emissions_t`` (docs/cost-model.md),
so a plan that runs there states fewer tonnes than it emits. :func:`carbon_coverage` says how
much of the plan's energy that is, so every place that prints emissions can mark them
incomplete.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.instance.model import Instance
from planner.model.plan import Plan


@dataclass(frozen=True)
class CarbonCoverage:
    """Energy of a plan (kWh) in all and in regions without carbon data."""

    kwh_total: float
    kwh_without_data: float
    regions_without_data: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Whether every region the plan draws power in has carbon-intensity data (else the
        emissions are a lower figure)."""
        return not self.regions_without_data

    @property
    def share_without_data(self) -> float:
        """The share of the plan's kWh drawn in regions without carbon data (0 when it draws
        none)."""
        return self.kwh_without_data / self.kwh_total if self.kwh_total > 0 else 0.0

    def describe(self, emissions_t: float) -> str:
        """``1.23 tCO2``, or ``1.23 tCO2 (incomplete: no carbon data for eu-de, which used
        84% of the energy)``."""
        text = f"{emissions_t:,.2f} tCO2"
        if self.complete:
            return text
        where = ", ".join(self.regions_without_data)
        verb = "which" if len(self.regions_without_data) == 1 else "which together"
        return (
            f"{text} (incomplete: no carbon data for {where}, {verb} used "
            f"{self.share_without_data:.0%} of the energy)"
        )


def carbon_coverage(inst: Instance, plan: Plan) -> CarbonCoverage:
    """The plan's energy, per entry ``facility_kw x hours run`` (as ``energy_kwh``), split by
    whether its region has a carbon series."""
    total = without = 0.0
    regions: list[str] = []
    for p in plan.phases:
        kw = p.info.get("facility_kw")
        kwh = float(kw) * len(p.hours) if isinstance(kw, int | float) else 0.0
        total += kwh
        if inst.carbon.get(p.region) is None:
            without += kwh
            if p.region not in regions and kwh > 0:
                regions.append(p.region)
    return CarbonCoverage(total, without, tuple(regions))
