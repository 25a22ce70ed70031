"""``trainplan estimate`` and planner.analysis.estimate / planner.instance.catalog: hand-computed
rows, memory equal to the physics, exit status 2 for bad flags, and the instance mode on
tests/data/tiny.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import planner
import planner.interfaces.cli.estimate  # registers the command
from planner.analysis.estimate import (
    EstimateError,
    estimate,
    estimate_inputs,
    gpu_spec,
    parse_quantity,
    phase_estimates,
)
from planner.instance.catalog import CatalogError, catalog_price, gpu_by_name, load_catalog
from planner.instance.schema import GpuType
from planner.interfaces.cli.app import app
from planner.model.costs import mean_price_costs
from planner.physics.layout import LayoutChoice
from planner.physics.memory import MemoryAllowances, memory_per_gpu
from planner.physics.transformer import ModelDims

TINY = Path(__file__).parents[1] / "data" / "tiny.yaml"


def run(*args: str) -> Any:
    """Invoke ``trainplan estimate ARGS`` in-process (the app is a group: a root callback)."""
    return CliRunner().invoke(app, ["estimate", *args])


def run_json(*args: str) -> Any:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


# 7B model (L = 32, h = 4096, a = 32, s = 2048, V = 32000) on 1e9 tokens, 8 x H100-SXM (bf16
# 989.4 TFLOPS dense, 80 GB, 700 W board; idle 70 W and node overhead 2,760 W pinned by flag),
# ZeRO-1, no recompute, MFU 0.4, PUE 1.2, $100/MWh, $2/GPU-h, job MTBF 1000 h, synchronous
# 60 s checkpoint writes.
CASE = (
    "--params",
    "7e9",
    "--tokens",
    "1e9",
    "--gpu",
    "H100-SXM",
    "--gpus",
    "8",
    "--precision",
    "bf16",
    "--zero",
    "1",
    "--recompute",
    "none",
    "--layers",
    "32",
    "--hidden",
    "4096",
    "--heads",
    "32",
    "--seq-len",
    "2048",
    "--gpu-idle-w",
    "70",
    "--node-overhead-w",
    "2760",
    "--mfu",
    "0.4",
    "--pue",
    "1.2",
    "--price-usd-per-mwh",
    "100",
    "--gpu-hour-usd",
    "2",
    "--mtbf-hours",
    "1000",
    "--mtbf-scope",
    "job",
    "--checkpoint-write-s",
    "60",
    "--checkpoint",
    "sync",
)


def test_catalog_h100_is_the_datasheet() -> None:
    # NVIDIA H100 SXM: 80 GB, 700 W, bf16 1,979 TFLOPS with sparsity -> 989.4 dense
    # (Hopper whitepaper), no sparsity in the catalog.
    h100 = gpu_by_name("h100-sxm")
    assert (h100.memory_gb, h100.board_power_w, h100.peak_tflops["bf16"]) == (80, 700, 989.4)


def test_json_row_against_hand_computation() -> None:
    rows = run_json(*CASE)
    assert len(rows) == 1
    r = rows[0]
    for key in (
        "model_states_gb",
        "activations_gb",
        "total_gb",
        "capacity_gb",
        "fits",
        "gpu_hours",
        "hours",
        "energy_kwh",
        "checkpoint_interval_s",
        "expected_failures",
        "cost_usd",
        "tokens_per_kwh",
    ):
        assert key in r
    assert set(r["cost_usd"]) >= {"rental", "energy", "failure", "total"}
    assert (r["gpu"], r["gpus"], r["dp"], r["zero"]) == ("H100-SXM", 8, 8, 1)
    # Model states, ZeRO-1 over 8: (2 + 2) x 7e9 + 12 x 7e9 / 8 = 28e9 + 10.5e9 = 38.5 GB.
    assert r["model_states_gb"] == pytest.approx(38.5)
    # Activations (FlashAttention, no recompute): 34 s b h x L = 34 x 2048 x 4096 x 32
    # = 9,126,805,504 plus 4 s b h (1 + V/h) = 33,554,432 x 8.8125 = 295,698,432
    # -> 9,422,503,936 B.
    assert r["activations_gb"] == pytest.approx(9.422503936)
    # Total: (38.5 + 9.4225) x 1.05 + 1.5 = 51.8186 GB of 80 GiB x 0.90 = 85.899 x 0.90
    # = 77.309 GB usable (HBM is binary; 10% headroom by default).
    assert r["total_gb"] == pytest.approx(51.8186291)
    assert r["capacity_gb"] == pytest.approx(77.3094113)
    assert r["fits"] is True
    # Work, 6ND (the default convention): 6 x 7e9 x 1e9 = 4.2e19 FLOPs.
    assert r["flops_convention"] == "6nd"
    assert r["flops"] == pytest.approx(4.2e19)
    # Sustained: 8 x 989.4e12 x 0.4 = 3.16608e15 FLOP/s (one node, the MFU at its own scale).
    assert r["flops_per_s"] == pytest.approx(3.16608e15)
    assert r["scaling"]["efficiency"] == 1.0 and r["layout_efficiency"] == 1.0
    # Daly: M = 3.6e6 s, delta = 60: sqrt(2 x 60 x 3.6e6) = 20,784.61;
    # r = 60 / 7.2e6 = 8.333e-6; x (1 + 0.0028868/3 + 8.333e-6/9) = x 1.00096318 -> 20,804.63;
    # minus 60 = 20,744.63 s.
    assert r["checkpoint_interval_s"] == pytest.approx(20744.63, abs=0.01)
    # Hours at the MFU: 4.2e19 / 3.16608e15 / 3600 = 3.684893 h; GPU-hours 8 x 3.684893
    # = 29.47915. With the stalls: / (1 - 60 / 20,804.63) = / 0.9971160 = 3.695551 h.
    assert r["hours"] == pytest.approx(3.684893, abs=1e-6)
    assert r["gpu_hours"] == pytest.approx(29.47915, abs=1e-5)
    assert r["work_hours"] == pytest.approx(3.695551, abs=1e-6)
    assert r["checkpoint_hours"] == pytest.approx(3.695551 - 3.684893, abs=1e-6)
    # Power: (8 x (70 + 630 x 0.9) + 2,760) / 1000 x 1.2 = 7.856 x 1.2 = 9.4272 kW;
    # 9.4272 x 3.695551 = 34.83870 kWh; 1e9 / 34.83870 = 2.870371e7 tokens/kWh.
    assert r["facility_kw"] == pytest.approx(9.4272)
    assert r["energy_kwh"] == pytest.approx(34.83870, abs=1e-5)
    assert r["tokens_per_kwh"] == pytest.approx(2.870371e7, rel=1e-5)
    # Loss per failure: (20,744.63 + 60) / 2 / 3600 = 2.889532 h of work redone, plus the
    # downtime 0.05 detect + 0.10 restart + 98 GB / (1 GB/s x 1 node) / 3600 = 0.177222 h:
    # L = 3.066754 h.
    assert r["checkpoint_gb"] == pytest.approx(98.0)
    assert r["downtime_h"] == pytest.approx(0.177222, abs=1e-6)
    assert r["loss_h_per_failure"] == pytest.approx(3.066754, abs=1e-6)
    # Failures: 0.001/h per wall hour; per running hour 0.001 / (1 - 0.001 x 3.066754)
    # = 0.00100308; x 3.695551 h = 0.00370692 expected, 0.00370692 x 3.066754 = 0.0113682 h
    # lost (x 8 GPUs = 0.0909459 GPU-hours); wall 3.695551 + 0.0113682 = 3.706919 h.
    assert r["failure_rate_per_h"] == pytest.approx(0.001)
    assert r["expected_failures"] == pytest.approx(0.00370692, abs=1e-8)
    assert r["lost_hours"] == pytest.approx(0.0113682, abs=1e-7)
    assert r["lost_gpu_hours"] == pytest.approx(8 * 0.0113682, abs=1e-6)
    assert r["wall_hours"] == pytest.approx(3.706919, abs=1e-6)
    # Effective training time: (1 - 60/20,804.63)(1 - 0.001 x 3.066754) = 0.997116 x
    # 0.996933 = 0.994058 = 3.684893 / 3.706919.
    assert r["effective_training_time"] == pytest.approx(3.684893 / 3.706919, abs=1e-6)
    # Costs: rental 8 x $2 x 3.695551 = $59.12882; energy 34.83870 kWh x $0.1 = $3.483870;
    # failure 0.0113682 h x ($16 + 9.4272 x 0.1)/h = 0.0113682 x 16.94272 = $0.192608.
    c = r["cost_usd"]
    assert c["rental"] == pytest.approx(59.12882, abs=1e-4)
    assert c["energy"] == pytest.approx(3.483870, abs=1e-5)
    assert c["failure"] == pytest.approx(0.192608, abs=1e-5)
    assert c["total"] == pytest.approx(59.12882 + 3.483870 + 0.192608, abs=1e-4)


def test_memory_columns_equal_the_physics() -> None:
    rows = run_json(
        "--params",
        "13B",
        "--tokens",
        "2e10",
        "--gpu",
        "a100-sxm-80gb",
        "--layers",
        "40",
        "--hidden",
        "5120",
        "--heads",
        "40",
        "--seq-len",
        "4096",
        "--gpus",
        "8",
        "--gpus",
        "16",
        "--zero",
        "1",
        "--zero",
        "3",
        "--recompute",
        "none",
        "--recompute",
        "full",
        "--tp",
        "2",
        "--micro-batch",
        "2",
    )
    # One row per combination, in the order gpus x precision x zero x recompute.
    assert [(r["gpus"], r["zero"], r["recompute"]) for r in rows] == [
        (8, 1, "none"),
        (8, 1, "full"),
        (8, 3, "none"),
        (8, 3, "full"),
        (16, 1, "none"),
        (16, 1, "full"),
        (16, 3, "none"),
        (16, 3, "full"),
    ]
    m = ModelDims(13e9, 40, 5120, 40, 4096, 32000)
    for r in rows:
        lay = LayoutChoice("bf16", zero=r["zero"], recompute=r["recompute"], tp=2, pp=1)
        # the default headroom: 10% of the GPU kept free
        policy = MemoryAllowances(buffer_gb=1.5, fragmentation=0.05, headroom=0.10)
        # dp = GPUs / tp; micro-batch 2, training, no fixed need, the whole GPU
        mem = memory_per_gpu(m, (80.0, "GiB"), lay, r["gpus"] // 2, (2, True, 0.0, 1.0), policy)
        assert r["model_states_gb"] == pytest.approx(mem.model_states_gb)
        assert r["activations_gb"] == pytest.approx(mem.activations_gb)
        assert r["total_gb"] == pytest.approx(mem.total_gb)
        assert r["fits"] == mem.fits
    # 16 GPUs, ZeRO-3, full recompute: the MFU holds at the 16 GPUs it is used at (no
    # reference scale given: no scaling loss); tp 2 (0.98), ZeRO-3 across nodes (0.95), full
    # recompute (0.75): 16 x 312e12 x 0.4 = 1.9968e15; x 0.98 = 1.956864e15; x 0.95
    # = 1.859021e15; x 0.75 = 1.394266e15.
    assert rows[-1]["flops_per_s"] == pytest.approx(1.394266e15, rel=1e-6)
    assert rows[-1]["scaling"]["efficiency"] == 1.0
    # Default failure rate, per GPU (Llama 3): 16 x 419 / 21,233,664 = 3.1572e-4 per hour.
    assert rows[-1]["failure_rate_per_h"] == pytest.approx(3.1572e-4, rel=1e-4)


def test_defaults_and_mtbf_scope() -> None:
    # No --gpus: one node (8); T4 has no bf16, so the default precision is fp16.
    (r,) = run_json("--params", "1B", "--tokens", "1e8", "--gpu", "T4", "--mtbf-hours", "50000")
    assert (r["gpus"], r["precision"]) == (8, "fp16")
    # MTBF 50,000 h per GPU -> 8 / 50,000 = 1.6e-4 failures per job-hour.
    assert r["failure_rate_per_h"] == pytest.approx(1.6e-4)
    # Architecture inferred from 1e9: L = round((1e9 / 196,608)^(1/3)) = round(17.2) = 17.
    assert (r["layers"], r["architecture_inferred"]) == (17, True)
    assert any("inferred" in n for n in r["notes"])


def test_explicit_gpu_without_price() -> None:
    (r,) = run_json(
        "--params",
        "1.5B",
        "--tokens",
        "3e9",
        "--gpu-memory-gb",
        "40",
        "--gpu-tflops",
        "100",
        "--gpu-power-w",
        "300",
        "--gpus",
        "2",
    )
    assert r["gpu"] == "custom"
    assert r["capacity_gb"] == pytest.approx(40 * 2**30 / 1e9 * 0.90)  # 40 GiB x 0.90
    # Idle 10% of 300 W = 30 W, load 0.9: 30 + 270 x 0.9 = 273 W x 2 GPUs, no node overhead,
    # PUE 1.58: 0.546 x 1.58 = 0.86268 kW.
    assert r["facility_kw"] == pytest.approx(0.86268)
    assert r["cost_usd"]["rental"] is None and r["cost_usd"]["total"] is None
    assert r["cost_usd"]["energy"] > 0


def test_tables_print() -> None:
    r = run(*CASE)
    assert r.exit_code == 0, r.stderr
    assert "8 x H100-SXM bf16 ZeRO-1" in r.stdout and "fits" in r.stdout
    r = run(*CASE, "--zero", "3")
    assert r.exit_code == 0
    assert "summary" in r.stdout  # several configurations: a comparison table too


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--params", "7X", "--tokens", "1e9", "--gpu", "H100-SXM"), "--params"),
        (("--params", "-7B", "--tokens", "1e9", "--gpu", "H100-SXM"), "--params"),
        (("--params", "7B", "--tokens", "0", "--gpu", "H100-SXM"), "--tokens"),
        # H100 now means H100-SXM (issue 12); an ambiguous A100 lists its variants
        (("--params", "7B", "--tokens", "1e9", "--gpu", "A100"), "A100-SXM-80GB, A100-SXM-40GB"),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "nope"), "H100-SXM"),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--gpus", "0"), "--gpus"),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--gpus", "-8"), "--gpus"),
        (
            ("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--gpus", "6", "--tp", "4"),
            "multiple of tp x pp",
        ),
        (
            (
                "--params",
                "7B",
                "--tokens",
                "1e9",
                "--gpu",
                "H100-SXM",
                "--layers",
                "32",
                "--hidden",
                "4096",
                "--heads",
                "32",
                "--tp",
                "16",
                "--gpus",
                "16",
            ),
            "--tp",
        ),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--mfu", "-0.3"), "--mfu"),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--mfu", "1.5"), "--mfu"),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--pue", "0.8"), "--pue"),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--zero", "4"), "--zero"),
        (
            ("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--precision", "int4"),
            "--precision",
        ),
        (("--params", "7B", "--tokens", "1e9", "--gpu", "T4", "--precision", "bf16"), "no bf16"),
        (
            ("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--recompute", "some"),
            "--recompute",
        ),
        (
            ("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--mtbf-hours", "-5"),
            "--mtbf-hours",
        ),
        (
            ("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--mtbf-scope", "node"),
            "--mtbf-scope",
        ),
        (
            ("--params", "7B", "--tokens", "1e9", "--gpu", "H100-SXM", "--gpu-hour-usd", "-1"),
            "--gpu-hour-usd",
        ),
        (("--params", "7B", "--tokens", "1e9", "--gpu-memory-gb", "80"), "--gpu-tflops"),
        (
            (
                "--params",
                "7B",
                "--tokens",
                "1e9",
                "--gpu",
                "H100-SXM",
                "--layers",
                "32",
                "--hidden",
                "4096",
                "--heads",
                "30",
            ),
            "--heads",
        ),
        (("--tokens", "1e9", "--gpu", "H100-SXM"), "--params"),
        (("--model", "llama-9", "--gpu", "H100-SXM"), "unknown model preset 'llama-9'"),
        (("--model", "llama-2-7b", "--gpu", "H100-SXM", "--ep", "2"), "--ep"),
        (("--model", "llama-2-7b", "--gpu", "H100", "--scaling", "linear"), "--scaling"),
        (("--model", "llama-2-7b", "--gpu", "H100", "--checkpoint", "never"), "--checkpoint"),
        (
            (
                "--model",
                "llama-2-7b",
                "--gpu",
                "H100",
                "--failure-preset",
                "rsc1",
                "--mtbf-hours",
                "9",
            ),
            "not both",
        ),
        (("--model", "llama-2-7b", "--gpu", "H100", "--pp", "33", "--gpus", "33"), "--pp"),
        (("--tokens", "1e9", "--gpu", "H100-SXM", "--params", "7B", "--phase", "x"), "INSTANCE"),
        ((str(TINY),), "--phase"),
        ((str(TINY), "--phase", "nope"), "unknown phase 'nope'"),
        ((str(TINY), "--phase", "finetune", "--gpus", "8"), "--gpus"),
        (("missing.yaml", "--phase", "finetune"), "missing.yaml"),
    ],
)
def test_bad_flags_exit_2(args: tuple[str, ...], message: str) -> None:
    r = run(*args)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_parse_quantity() -> None:
    assert parse_quantity("7e9", "--params") == 7e9
    assert parse_quantity("7B", "--params") == 7e9
    assert parse_quantity("70b", "--params") == 70e9
    assert parse_quantity("1.5T", "--tokens") == 1.5e12
    assert parse_quantity("300M", "--params") == 300e6
    assert parse_quantity("2k", "--tokens") == 2000
    for bad in ("7X", "", "B", "-7B", "0", "inf", "nan", "7 B B", "1e999"):
        with pytest.raises(EstimateError, match="--params"):
            parse_quantity(bad, "--params")


def test_catalog() -> None:
    cat = load_catalog()
    assert len(cat) >= 5
    assert all(isinstance(g, GpuType) for g in cat.values())
    raw = yaml.safe_load((Path(planner.__file__).parent / "data" / "gpus.yaml").read_text())
    for name, entry in raw.items():
        # Lookups ignore case; the price is kept apart from the GPU type.
        assert gpu_by_name(name.upper()) == cat[name]
        assert gpu_by_name(name.lower()).memory_gb == entry["memory_gb"]
        assert catalog_price(name.lower()) == entry.get("on_demand_usd_per_gpu_hour")
    with pytest.raises(CatalogError, match=r"unknown GPU 'B300'.*known: .*H100-SXM"):
        gpu_by_name("B300")
    # Changing the returned dict does not change the catalog.
    cat.clear()
    assert load_catalog()


def test_gpu_spec_overrides_catalog() -> None:
    spec = gpu_spec("l4", tflops=100.0, usd_per_gpu_hour=0.5)
    assert spec.name == "L4"
    assert spec.gpu.memory_gb == gpu_by_name("L4").memory_gb
    assert spec.gpu.peak_tflops["bf16"] == 100.0 and spec.usd_per_gpu_hour == 0.5
    with pytest.raises(EstimateError, match="idle power"):
        gpu_spec("l4", idle_w=500.0)


def test_library_rows_do_not_fit_are_flagged() -> None:
    # 70B with plain DDP on 8 x 80 GB: states alone 16 x 70 = 1,120 GB per GPU: does not fit,
    # but the row is still returned with its figures.
    rows = estimate(
        estimate_inputs(params=70e9, tokens=1e9, gpu=gpu_spec("H100-SXM"), zero=[0], gpus=[8])
    )
    assert len(rows) == 1 and not rows[0].memory.fits
    assert rows[0].memory.model_states_gb == pytest.approx(1120.0)


# ----------------------------------------------------------------------------- instance mode


def test_instance_mode_tiny_json() -> None:
    out = run("--json", str(TINY), "--phase", "finetune")
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["phase"] == "finetune" and data["reason"] is None
    rows = data["configurations"]
    assert 1 <= len(rows) <= 15 and len(rows) == min(15, data["feasible"])
    totals = [r["cost_usd"]["total"] for r in rows]
    assert totals == sorted(totals)
    for r in rows:
        assert r["fits"] and r["total_gb"] <= r["capacity_gb"]
        parts = sum(v for k, v in r["cost_usd"].items() if k != "total")
        assert r["cost_usd"]["total"] == pytest.approx(parts)
        # Work is in tokens: 2e9 tokens per kWh of the run.
        assert r["tokens_per_kwh"] == pytest.approx(2e9 / r["energy_kwh"])
    # Hand check of 8 x A100 in east ($2/GPU-h, constant $60/MWh, PUE 1.2): the A100 at load
    # 0.9 draws 50 + 350 x 0.9 = 365 W; (8 x 365 + 1,600) / 1000 x 1.2 = 4.52 x 1.2 = 5.424 kW.
    east = [r for r in rows if r["region"] == "east" and r["gpu"] == "A100" and r["gpus"] == 8]
    assert east
    r = east[0]
    n = r["hours"]
    assert r["facility_kw"] == pytest.approx(5.424)
    assert r["energy_kwh"] == pytest.approx(5.424 * n)
    assert r["cost_usd"]["energy"] == pytest.approx(5.424 * n * 60 / 1000)
    assert r["cost_usd"]["rental"] == pytest.approx(8 * 2.0 * n)
    assert r["gpu_hours"] == pytest.approx(8 * n)


def test_instance_mode_library_matches_cost_function() -> None:
    inst = planner.read(TINY)
    pe = phase_estimates(inst, "prep", top=3)
    assert len(pe.rows) == 3 and pe.feasible >= 3 and pe.reason is None
    for row in pe.rows:
        assert row.costs == mean_price_costs(inst, row.config)
        assert row.tokens_per_kwh is None  # prep's work is in GPU-hours
    with pytest.raises(EstimateError, match="--top"):
        phase_estimates(inst, "prep", top=0)


def test_instance_mode_table_and_infeasible(tmp_path: Path) -> None:
    out = run(str(TINY), "--phase", "finetune")
    assert out.exit_code == 0
    assert "E[failures]" in out.stdout and "finetune" in out.stdout
    # A 70B model on 24 GB L4s only: no configuration; the reason, exit status 1.
    doc = yaml.safe_load(TINY.read_text())
    doc["models"]["m1b"] = {"params": 70e9, "layers": 80, "hidden": 8192, "heads": 64}
    doc["phases"][1]["gpu_types"] = ["L4"]
    doc["phases"][1]["options"] = {"max_gpus": 8}
    f = tmp_path / "big.yaml"
    f.write_text(yaml.safe_dump(doc))
    out = run(str(f), "--phase", "finetune")
    assert out.exit_code == 1
    assert "no feasible configuration" in out.stdout and "finetune" in out.stdout
    out = run("--json", str(f), "--phase", "finetune")
    assert out.exit_code == 1
    data = json.loads(out.stdout)
    assert data["configurations"] == [] and data["reason"].startswith("finetune:")
