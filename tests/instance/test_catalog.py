"""The GPU catalog: natural names, ambiguous names, the new Blackwell/H800/MI325X entries
against their datasheets (dense = sparse / 2), and memory capacity in the vendor's unit."""

from __future__ import annotations

import pytest

from planner.instance.catalog import (
    CatalogError,
    catalog_memory_bytes,
    catalog_memory_unit,
    catalog_names,
    catalog_price,
    gpu_by_name,
    resolve_name,
)
from planner.instance.schema import FailureModel
from planner.physics.reliability import FAILURE_PRESETS


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        ("H100", "H100-SXM"),  # H100 means the SXM part
        ("h100", "H100-SXM"),
        ("H200", "H200-SXM"),
        ("A100-80GB", "A100-SXM-80GB"),
        ("a100 40gb", "A100-SXM-40GB"),
        ("V100", "V100-SXM-32GB"),  # the catalog's only V100
        ("GB200", "GB200-NVL72"),
        ("b200", "B200"),
        ("H800", "H800-SXM"),
        ("mi325x", "MI325X"),
    ],
)
def test_natural_names(name: str, entry: str) -> None:
    assert resolve_name(name) == entry


def test_ambiguous_a100_lists_its_variants() -> None:
    with pytest.raises(CatalogError, match=r"ambiguous GPU 'A100'.*A100-SXM-80GB, A100-SXM-40GB"):
        resolve_name("A100")
    with pytest.raises(CatalogError, match=r"unknown GPU 'B300' \(did you mean B200"):
        resolve_name("B300")


@pytest.mark.parametrize(
    ("name", "bf16", "fp8", "mem", "watts", "nvlink"),
    [
        # NVIDIA HGX B200 datasheet, per GPU with sparsity: FP16/BF16 4.5 PF, FP8 9 PF ->
        # dense 2,250 / 4,500 TFLOPS; 180 GB HBM3e; up to 1,000 W; NVLink 5 1.8 TB/s.
        ("B200", 2250.0, 4500.0, 180, 1000, 1800),
        # GB200 NVL72 datasheet, per GPU: 5 / 10 PF sparse -> 2,500 / 5,000 dense; 186 GB;
        # configurable up to 1,200 W.
        ("GB200-NVL72", 2500.0, 5000.0, 186, 1200, 1800),
        # H800: the H100 SXM tensor rates (Hopper whitepaper dense 989.4 / 1,978.9), 80 GB,
        # 700 W, NVLink 400 GB/s.
        ("H800-SXM", 989.4, 1978.9, 80, 700, 400),
        # AMD MI325X datasheet (dense): 1,307.4 FP16/BF16, 2,614.9 FP8; 256 GB HBM3E;
        # 1,000 W; 896 GB/s Infinity Fabric.
        ("MI325X", 1307.4, 2614.9, 256, 1000, 896),
    ],
)
def test_new_entries_match_their_datasheets(
    name: str, bf16: float, fp8: float, mem: int, watts: int, nvlink: int
) -> None:
    g = gpu_by_name(name)
    assert g.peak_tflops["bf16"] == bf16 and g.peak_tflops["fp8"] == fp8
    assert g.memory_gb == mem and g.board_power_w == watts
    assert g.intra_node_gb_per_s == nvlink
    assert len(g.source or "") > 60
    # No public on-demand price in this snapshot: None, not a made-up figure.
    assert catalog_price(name) is None


def test_gb200_node_is_the_nvl72_domain() -> None:
    g = gpu_by_name("GB200")
    assert g.gpus_per_node == 72


def test_memory_is_binary_for_every_entry() -> None:
    # An "80 GB" A100 reports 81,920 MiB (nvidia-smi): 80 x 2^30 bytes.
    assert catalog_memory_bytes("A100-SXM-80GB") == 81_920 * 2**20
    # A "180 GB" B200 shows 183,359 MiB (about 179 GiB) usable: 180 x 2^30 = 184,320 MiB
    # installed-capacity convention, 193.3e9 bytes rather than 180e9.
    assert catalog_memory_bytes("B200") == pytest.approx(193.27e9, rel=1e-4)
    for n in catalog_names():
        assert catalog_memory_unit(n) == "GiB", n
        assert catalog_memory_bytes(n) == gpu_by_name(n).memory_gb * 2**30


def test_existing_figures_unchanged() -> None:
    h = gpu_by_name("H100-SXM")
    assert (h.memory_gb, h.peak_tflops["bf16"], h.board_power_w) == (80, 989.4, 700)
    a = gpu_by_name("A100-SXM-80GB")
    assert (a.peak_tflops["bf16"], a.board_power_w, a.intra_node_gb_per_s) == (312.0, 400, 600)


def test_failure_model_presets() -> None:
    # Default stays Llama 3's 419 / 21,233,664 per GPU-hour; a preset picks a published fleet;
    # an explicit rate wins.
    assert FailureModel().failures_per_gpu_hour == pytest.approx(1.9733e-5, rel=1e-4)
    rsc1 = FailureModel(preset="rsc1")
    # 6.50 / 1000 / 24 / 8 = 3.3854e-5
    assert rsc1.failures_per_gpu_hour == pytest.approx(3.3854e-5, rel=1e-4)
    assert rsc1.failures_per_gpu_hour == FAILURE_PRESETS["rsc1"].per_gpu_hour
    assert FailureModel(preset="rsc2", failures_per_gpu_hour=1e-6).failures_per_gpu_hour == 1e-6
    assert FailureModel(checkpoint="async").checkpoint == "async"
