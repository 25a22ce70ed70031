"""Energy: power of a configuration, facility energy, its price and its emissions."""

from __future__ import annotations

import math


def gpu_power_w(board_w: float, idle_w: float, load: float) -> float:
    """GPU draw at a load in [0, 1]: P = P_idle + (P_board - P_idle) x load.

    A linear power model between idle and board power (TDP), as used by e.g. the ML CO2
    Impact calculator and BLOOM's accounting (Luccioni et al. 2022 measured ~400 W average
    on 400 W A100s during training, i.e. load ~1 at the board limit)."""
    return idle_w + (board_w - idle_w) * load


def it_power_kw(
    gpus: float,
    spare_gpus: float,
    board_w: float,
    idle_w: float,
    load: float,
    gpus_per_node: int,
    node_overhead_w: float,
) -> float:
    """IT power in kW: working GPUs at ``load``, spare GPUs idle, and the host overhead of every
    node (working and spare; a fractional GPU carries its share of one node's overhead)."""
    nodes = math.ceil(gpus / gpus_per_node) if gpus >= 1 else gpus / gpus_per_node
    spare_nodes = spare_gpus / gpus_per_node
    watts = (
        gpus * gpu_power_w(board_w, idle_w, load)
        + spare_gpus * idle_w
        + (nodes + spare_nodes) * node_overhead_w
    )
    return watts / 1000.0


def facility_kw(it_kw: float, pue: float) -> float:
    """Facility power = IT power x PUE (The Green Grid, PUE definition, 2007)."""
    return it_kw * pue


def energy_cost_usd(kw: float, price_usd_per_mwh: float, hours: float = 1.0) -> float:
    """Cost = kW x hours x price / 1000 (USD/MWh to USD/kWh)."""
    return kw * hours * price_usd_per_mwh / 1000.0


def emissions_tonnes(kwh: float, g_per_kwh: float) -> float:
    """tCO2 = kWh x gCO2/kWh / 10^6."""
    return kwh * g_per_kwh / 1e6


def tokens_per_kwh(tokens: float, kwh: float) -> float:
    """Tokens trained per kWh (infinite for no energy)."""
    return tokens / kwh if kwh > 0 else math.inf
