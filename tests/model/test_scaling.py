"""The scaling model: anchored at the MFU's reference scale, switchable, reportable."""

from __future__ import annotations

import pytest

from planner.physics import compute, layout


def test_interconnect_model_is_nearly_flat_for_ring_allreduce() -> None:
    # Llama-2-70B-like, tp 8: each GPU all-reduces 2 B x 70e9 / 8 = 17.5e9 B of gradients per
    # step over 25 GB/s (A100 nodes, 200 Gb/s per GPU). dp = 256 (2048 GPUs):
    # 2 x 255/256 x 17.5e9 / 25e9 = 1.39453 s; with a 10 s step and 90% overlap the exposed
    # part is 0.139453 s -> eff 10 / 10.139453 = 0.986247.
    assert compute.dp_allreduce_seconds(17.5e9, 256, 25.0) == pytest.approx(1.394531, rel=1e-6)
    e = compute.interconnect_efficiency(10.0, 17.5e9, 256, 25.0, overlap=0.9)
    assert e == pytest.approx(0.986247, rel=1e-6)
    # Relative to a reference of 1024 GPUs (dp 128: 2 x 127/128 x 0.7 = 1.389063 s,
    # eff 10 / 10.138906 = 0.986300): 0.986247 / 0.986300 = 0.999946. A ring all-reduce costs
    # almost the same at any dp, so an MFU measured at 1024 GPUs holds at 2048.
    m = compute.ScalingModel("interconnect", reference_gpus=1024, overlap=0.9)
    r = compute.relative_scaling(
        m, 2048, 8, step_compute_s=10.0, grad_bytes=17.5e9, dp_of=256, gb_per_s=25.0
    )
    assert r.efficiency == pytest.approx(0.999946, abs=2e-6)
    assert "relative to 1024 GPUs" in r.detail and r.kind == "interconnect"
    # Within one node nothing is charged: from 8 GPUs to 2048 the loss is the whole 1.4%.
    r8 = compute.relative_scaling(
        compute.ScalingModel("interconnect", reference_gpus=8, overlap=0.9),
        2048,
        8,
        step_compute_s=10.0,
        grad_bytes=17.5e9,
        dp_of=256,
        gb_per_s=25.0,
    )
    assert r8.efficiency == pytest.approx(0.986247, rel=1e-6)


def test_scaling_model_choices_and_defaults() -> None:
    # Default: no correction at the scale the MFU is used at, whatever the model.
    for kind in ("none", "per_doubling", "interconnect"):
        assert compute.relative_scaling(compute.ScalingModel(kind), 4096, 8).efficiency == 1.0
    # per_doubling relative to 64 GPUs (8 nodes) at 512 GPUs (64 nodes): 0.97^(6 - 3).
    m = compute.ScalingModel("per_doubling", 0.97, reference_gpus=64)
    assert compute.relative_scaling(m, 512, 8).efficiency == pytest.approx(0.97**3)
    with pytest.raises(ValueError, match="scaling model"):
        compute.ScalingModel("linear")
    with pytest.raises(ValueError, match="per_doubling"):
        compute.ScalingModel("per_doubling", 1.2)


def test_layout_efficiency_keeps_its_default_and_takes_interleaving() -> None:
    # Default m = 16, v = 1 as before: pp 4 -> 16/19.
    assert compute.layout_efficiency(1, 4, 0, 2, False) == pytest.approx(16 / 19)
    # m = 64, v = 4 at pp 16: 256 / (256 + 15) = layout.pipeline_efficiency.
    got = compute.layout_efficiency(1, 16, 0, 2, False, microbatches=64, virtual=4)
    assert got == pytest.approx(layout.pipeline_efficiency(16, 64, 4))
    assert compute.implied_mfu(8.4e23, 1_720_320, 312.0) == pytest.approx(0.4347, abs=1e-4)
