"""planner.physics against published figures and hand computations.

Every oracle names its source; the published figures are the ones collected in
planner/data/GPU_SOURCES.md ("Published reference figures"). Arithmetic is in the comments so
a reader can redo it without the code.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import planner
from planner.instance.schema import FailureModel
from planner.model.configs import build_config_space
from planner.physics import compute, energy, reliability, storage
from planner.physics.layout import LayoutChoice
from planner.physics.memory import (
    MemoryAllowances,
    activation_bytes,
    activation_bytes_per_layer,
    memory_per_gpu,
    model_state_bytes,
)
from planner.physics.transformer import (
    ModelDims,
    flops_per_token,
    infer_architecture,
    params_from_architecture,
)

TINY = Path(__file__).parents[1] / "data" / "tiny.yaml"
GB = 1e9


# ----------------------------------------------------------------------------- ZeRO, Figure 1


@pytest.mark.parametrize(
    ("stage", "published_gb"),
    [
        # Rajbhandari et al. 2020 (ZeRO, SC20), Figure 1: Psi = 7.5e9, N_d = 64, K = 12.
        # stage 0: (2 + 2 + 12) x 7.5e9 = 120e9 B = 120 GB
        (0, 120.0),
        # stage 1: (2 + 2) x 7.5 + 12 x 7.5 / 64 = 30 + 1.40625 = 31.406 -> "31.4 GB"
        (1, 31.4),
        # stage 2: 2 x 7.5 + (2 + 12) x 7.5 / 64 = 15 + 1.640625 = 16.641 -> "16.6 GB"
        (2, 16.6),
        # stage 3: (2 + 2 + 12) x 7.5 / 64 = 1.875 -> "1.9 GB"
        (3, 1.9),
    ],
)
def test_zero_figure_1(stage: int, published_gb: float) -> None:
    got = model_state_bytes(7.5e9, "bf16", "adam", stage, dp=64) / GB
    assert round(got, 1) == published_gb


def test_zero_table_1_other_degrees() -> None:
    # ZeRO Table 1, 7.5B model: DP 4 -> P_os 52.5, P_os+g 41.3, P_os+g+p 30 GB.
    # 4 x 7.5 + 12 x 7.5 / 4 = 30 + 22.5 = 52.5; 2 x 7.5 + 14 x 7.5 / 4 = 15 + 26.25 = 41.25;
    # 16 x 7.5 / 4 = 30.
    assert model_state_bytes(7.5e9, "bf16", "adam", 1, dp=4) / GB == pytest.approx(52.5)
    assert model_state_bytes(7.5e9, "bf16", "adam", 2, dp=4) / GB == pytest.approx(41.25)
    assert model_state_bytes(7.5e9, "bf16", "adam", 3, dp=4) / GB == pytest.approx(30.0)


def test_model_states_fp32_tp_pp_and_forward() -> None:
    # fp32 Adam: weights 4 + grads 4 + momentum 4 + variance 4 = 16 B/param (no separate
    # master copy, K = 12 - 4 = 8). 1e9 params, stage 0, tp = 2, pp = 2: 16 x 1e9 / 4 = 4 GB.
    assert model_state_bytes(1e9, "fp32", "adamw", 0, dp=1, tp=2, pp=2) / GB == pytest.approx(4.0)
    # SGD with momentum in bf16: K = 8 -> (2 + 2 + 8) = 12 B/param; ZeRO-1 on 4: 4 + 8/4 = 6.
    assert model_state_bytes(1e9, "bf16", "sgd_momentum", 1, dp=4) / GB == pytest.approx(6.0)
    # Forward only: the weights alone, fp8 1 B/param; ZeRO-3 shards them: 7e9 / 8 = 0.875 GB.
    assert model_state_bytes(7e9, "fp8", "adamw", 0, dp=8, train=False) / GB == pytest.approx(7.0)
    assert model_state_bytes(7e9, "fp8", "adamw", 3, dp=8, train=False) / GB == pytest.approx(0.875)
    with pytest.raises(ValueError, match="ZeRO stage"):
        model_state_bytes(1e9, "bf16", "adamw", 4, dp=2)


# ----------------------------------------------------------------------------- Korthikanti


# GPT-3 175B (Brown et al. 2020 Table 2.1): s = 2048, h = 12288, a = 96; b = 1, t = 8.
# sbh = 2048 x 1 x 12288 = 25,165,824; 5as/h = 5 x 96 x 2048 / 12288 = 80.
SBH = 2048 * 12288


def test_korthikanti_no_parallelism_without_flash() -> None:
    # Korthikanti et al. 2022, Table 2, "no parallelism": sbh (34 + 5as/h)
    # = 25,165,824 x (34 + 80) = 25,165,824 x 114 = 2,868,903,936 bytes (2.87 GB per layer).
    got = activation_bytes_per_layer(2048, 1, 12288, 96, tp=1, recompute="none", flash=False)
    assert got == pytest.approx(2_868_903_936)


def test_korthikanti_tensor_sequence_parallel() -> None:
    # TP + SP, no recompute: sbh/t (34 + 5as/h) = 2,868,903,936 / 8 = 358,612,992.
    got = activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, recompute="none", flash=False)
    assert got == pytest.approx(358_612_992)
    # TP + SP + selective recompute: 34 sbh / t = 34 x 25,165,824 / 8 = 106,954,752.
    sel = activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, recompute="selective", flash=False)
    assert sel == pytest.approx(106_954_752)
    # Full recompute keeps the layer input only: 2 sbh / t = 2 x 25,165,824 / 8 = 6,291,456.
    full = activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, recompute="full", flash=False)
    assert full == pytest.approx(6_291_456)


def test_korthikanti_selective_saves_70_percent_for_gpt3() -> None:
    # The paper: selective recomputation cuts GPT-3's activation memory by ~70%:
    # 1 - 34 / (34 + 80) = 1 - 0.298 = 0.702.
    none = activation_bytes_per_layer(2048, 1, 12288, 96, 1, "none", False)
    sel = activation_bytes_per_layer(2048, 1, 12288, 96, 1, "selective", False)
    assert 1 - sel / none == pytest.approx(0.70, abs=0.005)


def test_flash_attention_drops_the_score_term_and_fp32_doubles() -> None:
    # FlashAttention never stores the a s^2 scores: 34 sbh = 855,638,016 with or without
    # selective recompute.
    flash = activation_bytes_per_layer(2048, 1, 12288, 96, 1, "none", True)
    assert flash == pytest.approx(34 * SBH)
    # 32-bit activations: twice the paper's 2-byte accounting.
    fp32 = activation_bytes_per_layer(2048, 1, 12288, 96, 1, "none", True, elem_bytes=4.0)
    assert fp32 == pytest.approx(2 * 34 * SBH)


def test_gpt3_first_stage_activations() -> None:
    gpt3 = ModelDims(174.6e9, 96, 12288, 96, 2048, 51200, flash_attention=False)
    # pp = 8 (1F1B): first stage holds L layers' worth: 96 x 106,954,752 = 10,267,656,192 B.
    assert activation_bytes(gpt3, 1, 8, 8, "selective", "bf16") == pytest.approx(10_267_656_192)
    # pp = 1 adds embeddings/output: 4 sbh / t (1 + V/h) = 12,582,912 x (1 + 51200/12288)
    # = 12,582,912 + 52,428,800 = 65,011,712.
    assert activation_bytes(gpt3, 1, 8, 1, "selective", "bf16") == pytest.approx(
        10_267_656_192 + 65_011_712
    )


# ----------------------------------------------------------------------------- FLOPs, params


def test_gpt3_training_flops() -> None:
    # Brown et al. 2020, Table D.1: GPT-3 175B, 300B tokens: 3.14E+23 FLOPs.
    # 6ND = 6 x 175e9 x 300e9 = 3.15e23 (0.3% high); with the table's 174.6e9 params
    # 6 x 174.6e9 x 300e9 = 3.1428e23.
    gpt3 = ModelDims(174.6e9, 96, 12288, 96, 2048, 51200)
    assert flops_per_token(ModelDims(175e9, 96, 12288, 96, 2048, 51200)) * 300e9 == pytest.approx(
        3.14e23, rel=0.01
    )
    assert flops_per_token(gpt3) * 300e9 == pytest.approx(3.14e23, rel=0.001)
    # Kaplan's attention term: 6 L s h D = 6 x 96 x 2048 x 12288 x 300e9 = 4.349e21 (1.4% more).
    with_attn = flops_per_token(gpt3, "kaplan") * 300e9
    assert with_attn - 3.1428e23 == pytest.approx(6 * 96 * 2048 * 12288 * 300e9, rel=1e-3)
    # PaLM/Megatron count the score and value products in full: twice Kaplan's term.
    palm = flops_per_token(gpt3, "palm") - flops_per_token(gpt3)
    assert palm == pytest.approx(12 * 96 * 2048 * 12288)
    assert flops_per_token(gpt3, "megatron") == flops_per_token(gpt3, "palm")
    # Forward only: a third of training.
    assert flops_per_token(gpt3, train=False) == pytest.approx(6 * 174.6e9 / 3)


def test_narayanan_params_gpt3() -> None:
    # Narayanan et al. 2021 eq. 2 with L = 96, h = 12288, V = 51200 (their padded vocabulary),
    # s = 2048: 12 x 96 x 12288^2 = 173,946,175,488;
    # x (1 + 13/147,456 + 53,248/14,155,776) = x 1.0038500 -> 174.616e9,
    # the 174,600M of Brown et al. Table D.1.
    assert params_from_architecture(96, 12288, 51200, 2048) == pytest.approx(174.6e9, rel=1e-3)


def test_narayanan_params_llama2_7b() -> None:
    # Llama 2 7B (Touvron et al. 2023): L = 32, h = 4096, V = 32000, s = 4096.
    # 12 x 32 x 4096^2 = 6,442,450,944 x (1 + 13/49,152 + 36,096/1,572,864) = 6.592e9;
    # the released model has 6.74e9 (SwiGLU MLP and untied output embedding): 2.2% apart.
    got = params_from_architecture(32, 4096, 32000, 4096)
    assert got == pytest.approx(6.592e9, rel=1e-3)
    assert got == pytest.approx(6.74e9, rel=0.03)


def test_architecture_inferred_from_params() -> None:
    # h = 128 L: 12 x 128^2 L^3 = P. GPT-3: (174.6e9 / 196,608)^(1/3) = 96.1 -> L = 96;
    # h = sqrt(174.6e9 / (12 x 96)) = 12,311 -> 96 x 128 = 12,288; heads 96.
    assert infer_architecture(174.6e9) == (96, 12288, 96)


def test_llama2_70b_implied_mfu() -> None:
    # Touvron et al. 2023, Table 2: Llama 2 70B took 1,720,320 A100-80GB GPU-hours on 2.0T tokens.
    # 6ND = 6 x 70e9 x 2e12 = 8.4e23 FLOPs. At 312 TFLOPS bf16 dense:
    # MFU = 8.4e23 / (1,720,320 x 3600 s x 312e12) = 8.4e23 / 1.9323e24 = 0.4347.
    flops = 6 * 70e9 * 2e12
    mfu = flops / (1_720_320 * 3600 * 312e12)
    assert mfu == pytest.approx(0.4347, abs=1e-4)
    # And back: at that MFU one A100 needs 1,720,320 hours.
    fps = compute.effective_flops_per_s(1, 312.0, 0.4347, "none", 1.0)
    assert compute.hours_for(flops, fps) == pytest.approx(1_720_320, rel=1e-3)


def test_llama2_70b_energy_and_emissions() -> None:
    # Touvron et al. 2023, Table 2: 400 W per GPU, 1,720,320 GPU-hours -> 291.42 tCO2eq.
    # Energy at the power cap (load 1, no node overhead, no PUE, as in the paper):
    # 0.4 kW x 1,720,320 h = 688,128 kWh = 688 MWh.
    kw = energy.it_power_kw(
        1, 0, board_w=400, idle_w=55, load=1.0, gpus_per_node=8, node_overhead_w=0
    )
    kwh = kw * 1_720_320
    assert kwh == pytest.approx(688_128)
    # Implied intensity 291.42e6 g / 688,128 kWh = 423.5 g/kWh; back through our function:
    # 688,128 x 423.5 / 1e6 = 291.42 t.
    assert energy.emissions_tonnes(kwh, 423.5) == pytest.approx(291.42, rel=1e-3)


def test_bloom_energy() -> None:
    # Luccioni et al. 2022 (BLOOM): 1,082,990 A100-80GB GPU-hours, 433,196 kWh dynamic energy.
    gpu_hours, kwh_published = 1_082_990, 433_196
    # Implied average power per GPU: 433,196 kWh / 1,082,990 h = 0.400 kW (the 400 W TDP).
    avg_kw = kwh_published / gpu_hours
    assert avg_kw == pytest.approx(0.400, abs=1e-4)
    # Our power model at full load reaches the board power whatever the idle draw: 400 W.
    assert energy.gpu_power_w(400, 55, 1.0) == pytest.approx(400)
    it = energy.it_power_kw(1, 0, 400, 55, 1.0, 8, 0)
    assert it * gpu_hours == pytest.approx(kwh_published)
    # With their PUE 1.2 (their Table 4): 433,196 x 1.2 = 519,835 kWh; at 57 g/kWh
    # 433,196 x 57 / 1e6 = 24.69 t (the abstract's "24.7 tonnes"), x 1.2 = 29.6 t ("~30 t").
    fac = energy.facility_kw(it, 1.2) * gpu_hours
    assert fac == pytest.approx(519_835, abs=1)
    assert energy.emissions_tonnes(kwh_published, 57) == pytest.approx(24.69, abs=0.01)
    assert energy.emissions_tonnes(fac, 57) == pytest.approx(29.6, abs=0.05)


# ----------------------------------------------------------------------------- Young / Daly


def test_young_and_daly_one_minute_one_day() -> None:
    # delta = 60 s, M = 24 h = 86,400 s.
    # Young 1974: sqrt(2 x 60 x 86,400) = sqrt(10,368,000) = 3219.94 s.
    assert reliability.young_interval_s(60, 86400) == pytest.approx(3219.94, abs=0.01)
    # Daly 2006: r = delta / 2M = 60 / 172,800 = 3.4722e-4, sqrt(r) = 0.0186339;
    # 3219.94 x (1 + 0.0186339/3 + 3.4722e-4/9) - 60 = 3219.94 x 1.0062499 - 60 = 3180.06 s.
    tau = reliability.daly_interval_s(60, 86400)
    assert tau == pytest.approx(3180.06, abs=0.01)
    # Overhead delta / (tau + delta) = 60 / 3240.06 = 1.8518%.
    assert reliability.checkpoint_overhead(60, tau) == pytest.approx(0.018518, abs=1e-6)
    # Loss per failure: half a segment plus downtime: 3240.06 / 2 / 3600 + 0.5 = 0.95001 h.
    assert reliability.loss_hours_per_failure(tau, 60, 0.5) == pytest.approx(0.95001, abs=1e-5)


def test_daly_long_checkpoint_branch() -> None:
    # delta >= 2M: tau = M. delta = 100 s, M = 40 s -> 40; delta = 2M exactly -> M.
    assert reliability.daly_interval_s(100, 40) == 40
    assert reliability.daly_interval_s(80, 40) == 40
    # No failures: never checkpoint, no overhead, loss = downtime.
    assert reliability.daly_interval_s(60, math.inf) == math.inf
    assert reliability.checkpoint_overhead(60, math.inf) == 0.0
    assert reliability.loss_hours_per_failure(math.inf, 60, 0.25) == 0.25


def test_llama3_failure_rate() -> None:
    # Dubey et al. 2024 (Llama 3) §3.3.4: 419 unexpected interruptions in 54 days on 16,384
    # GPUs. Per GPU-hour: 419 / (16,384 x 54 x 24) = 419 / 21,233,664 = 1.9733e-5.
    per_gpu = 419 / (16384 * 54 * 24)
    assert per_gpu == pytest.approx(1.9733e-5, rel=1e-4)
    assert FailureModel().failures_per_gpu_hour == pytest.approx(per_gpu)
    # Job rate: 16,384 x 1.9733e-5 = 0.3233 /h; MTBF = 54 x 24 / 419 = 3.093 h.
    lam = reliability.job_failure_rate(16384, per_gpu)
    assert 1 / lam == pytest.approx(3.093, abs=0.001)
    # A 1-minute checkpoint against that MTBF (M = 11,135 s): Young sqrt(2 x 60 x 11,135) =
    # 1155.9 s (19.3 min); Daly r = 60 / 22,270 = 2.694e-3:
    # 1155.9 x (1 + 0.05191/3 + 2.694e-3/9) - 60 = 1155.9 x 1.017602 - 60 = 1116.3 s (18.6 min).
    M = 3600 / lam
    assert reliability.young_interval_s(60, M) == pytest.approx(1155.9, abs=0.1)
    assert reliability.daly_interval_s(60, M) == pytest.approx(1116.3, abs=0.1)
    # Spot preemptions add to the hardware rate.
    assert reliability.job_failure_rate(8, 1e-4, 0.02) == pytest.approx(0.0208)
    # Failures per 1000 node-days -> per GPU-hour: 5 / 1000 / 24 / 8 = 2.6042e-5.
    assert reliability.per_gpu_hour_from_node_days(5, 8) == pytest.approx(2.6042e-5, rel=1e-4)


def test_downtime_and_failures_per_running_hour() -> None:
    # Downtime: detect 0.05 h + (spare node -> swap 0.1 h, else restart 0.5 h) + reload 0.05 h.
    rm = reliability.RestartModel(detect_h=0.05, restart_h=0.5, swap_h=0.1)
    assert rm.downtime_h(0.05, spare_nodes=1) == pytest.approx(0.2)
    assert rm.downtime_h(0.05) == pytest.approx(0.6)
    # lambda 0.1/h, L = 0.6 h: failures strike the redone work too, 0.1 / (1 - 0.06) =
    # 0.106383 per running hour; at lambda L >= 1 the run never ends.
    assert reliability.failures_per_running_hour(0.1, 0.6) == pytest.approx(0.1 / 0.94)
    assert math.isinf(reliability.failures_per_running_hour(2.0, 0.5))
    # An asynchronous snapshot durable 30 s after its stall: 30 s more lost per failure, and
    # the interval is at least those 30 s.
    assert reliability.loss_hours_per_failure(600, 1, 0.1, 30) == pytest.approx(
        601 / 7200 + 30 / 3600 + 0.1
    )
    assert reliability.checkpoint_interval_s(0.01, 1e9, 30.0) > 30.0
    assert reliability.checkpoint_interval_s(0.01, 1.0, 30.0) == 30.0


# ----------------------------------------------------------------------------- energy


def test_dgx_h100_node_power_and_cost() -> None:
    # 8 x H100 SXM (700 W board, 70 W idle) at load 0.9, host overhead 2,760 W per node.
    # GPU: 70 + (700 - 70) x 0.9 = 637 W.
    assert energy.gpu_power_w(700, 70, 0.9) == pytest.approx(637)
    # IT: (8 x 637 + 2,760) / 1000 = (5,096 + 2,760) / 1000 = 7.856 kW.
    it = energy.it_power_kw(8, 0, 700, 70, 0.9, 8, 2760)
    assert it == pytest.approx(7.856)
    # Facility at PUE 1.2: 9.4272 kW.
    fac = energy.facility_kw(it, 1.2)
    assert fac == pytest.approx(9.4272)
    # 10 hours at $100/MWh: 9.4272 x 10 x 100 / 1000 = $9.4272.
    assert energy.energy_cost_usd(fac, 100.0, 10) == pytest.approx(9.4272)
    # 94.272 kWh at 400 g/kWh = 37,708.8 g = 0.0377088 t.
    assert energy.emissions_tonnes(94.272, 400) == pytest.approx(0.0377088)
    assert energy.tokens_per_kwh(1e9, 94.272) == pytest.approx(1e9 / 94.272)
    assert energy.tokens_per_kwh(1e9, 0.0) == math.inf


def test_spare_node_and_fractional_gpu_power() -> None:
    # One spare node idles: + 8 x 70 W + 2,760 W = 3,320 W -> 7.856 + 3.32 = 11.176 kW.
    assert energy.it_power_kw(8, 8, 700, 70, 0.9, 8, 2760) == pytest.approx(11.176)
    # 9 GPUs need 2 nodes: 9 x 637 + 2 x 2,760 = 5,733 + 5,520 = 11.253 kW.
    assert energy.it_power_kw(9, 0, 700, 70, 0.9, 8, 2760) == pytest.approx(11.253)
    # Half a GPU carries 0.5/8 of a node's overhead: 0.5 x 637 + 2,760/16 = 318.5 + 172.5 W.
    assert energy.it_power_kw(0.5, 0, 700, 70, 0.9, 8, 2760) == pytest.approx(0.491)


# ----------------------------------------------------------------------------- memory totals


def test_memory_breakdown_7b_zero3_full_recompute() -> None:
    # 7B model, L = 32, h = 4096, a = 32, s = 4096, V = 32000, bf16 AdamW on 8 x 80 GB,
    # ZeRO-3 (dp = 8), full recompute, micro-batch 1, tp = pp = 1.
    m = ModelDims(7e9, 32, 4096, 32, 4096, 32000)
    lay = LayoutChoice("bf16", zero=3, recompute="full", tp=1, pp=1)
    policy = MemoryAllowances(buffer_gb=1.5, fragmentation=0.05, headroom=0.05)
    # 8 replicas; micro-batch 1, training, no fixed need, the whole GPU
    mem = memory_per_gpu(m, (80.0, "GiB"), lay, 8, (1, True, 0.0, 1.0), policy)
    # States: 16 x 7e9 / 8 = 14e9 B = 14.0 GB, plus ZeRO-3's gathered largest layer, the
    # embedding table: 2 x 2 bytes x 32000 x 4096 = 0.524288 GB.
    assert mem.gather_gb == pytest.approx(0.524288)
    assert mem.model_states_gb == pytest.approx(14.524288)
    # Activations: 2 sbh per layer = 2 x 4096 x 4096 = 33,554,432 x 32 = 1,073,741,824, plus
    # 4 sbh (1 + V/h) = 67,108,864 x 8.8125 = 591,396,864 -> 1,665,138,688 B = 1.66514 GB.
    assert mem.activations_gb == pytest.approx(1.665138688)
    # Total (14.524288 + 1.665139) x 1.05 + 1.5 = 16.998898 + 1.5 = 18.498898 GB against
    # 80 GiB x 0.95 = 85.899346 x 0.95 = 81.604379 GB usable (HBM is binary).
    assert mem.total_gb == pytest.approx(18.4988980)
    assert mem.capacity_gb == pytest.approx(81.6043786)
    assert mem.fits
    assert mem.headroom_gb == pytest.approx(81.6043786 - 18.4988980)


def test_checkpoint_size() -> None:
    # (w + K) P: bf16 Adam (2 + 12) x 7e9 = 98 GB; fp32 Adam (4 + 8) x 7e9 = 84 GB; forward 0.
    assert storage.checkpoint_gb(7e9, "bf16", "adamw") == pytest.approx(98.0)
    assert storage.checkpoint_gb(7e9, "fp32", "adamw") == pytest.approx(84.0)
    assert storage.checkpoint_gb(7e9, "bf16", "adamw", train=False) == 0.0
    # Written at 5 GB/s: 19.6 s. Kept 730 h at $0.02/GB-month: 98 x 0.02 = $1.96 a month.
    assert storage.write_seconds(98.0, 5.0) == pytest.approx(19.6)
    assert storage.storage_usd_per_hour(98.0, 0.02) * 730 == pytest.approx(1.96)


def _seventy_b_on_l4() -> planner.Instance:
    # Llama-2-70B-like (P = 70e9, L = 80, h = 8192, 64 heads, s = 4096) fine-tuned on 24 GB
    # L4s only, at most 8 GPUs. Best layout: model states never drop below 16 x 70e9 / 8
    # = 140 GB per GPU (ZeRO-3 over 8, or tp = 8): with full recompute at tp = 8 the activations are
    # 80 x 2 x 4096 x 8192 / 8 = 671,088,640 plus 4 x 4096 x 8192 / 8 x (1 + 32000/8192)
    # = 82,313,216 -> 0.75340 GB; total (140 + 0.75340) x 1.05 + 1.5 = 149.29 GB.
    inst = planner.read(TINY)
    return inst.replace(
        {
            "models.m1b": {
                "params": 70e9,
                "layers": 80,
                "hidden": 8192,
                "heads": 64,
                "seq_len": 4096,
                "vocab": 32000,
            },
            "phases.finetune.gpu_types": ["L4"],
            "phases.finetune.options": {"max_gpus": 8},
        }
    )


def test_seventy_b_on_l4_is_infeasible() -> None:
    space = build_config_space(_seventy_b_on_l4())
    assert space.by_phase["finetune"] == ()
    assert [i.phase for i in space.infeasible] == ["finetune"]


def test_memory_infeasibility_message() -> None:
    space = build_config_space(_seventy_b_on_l4())
    reason = next(i.reason for i in space.infeasible if i.phase == "finetune")
    assert reason.startswith("finetune:")
    assert "149.3 GB" in reason  # the GB needed at best (see _seventy_b_on_l4)
    # the largest allowed GPU, in its vendor's binary unit: 24 GiB = 25.77 GB
    assert "24 GiB (25.8 GB)" in reason
    assert "23.2 GB usable" in reason  # 25.77 x (1 - 0.10)


# ----------------------------------------------------------------------------- efficiencies


def test_scaling_efficiency() -> None:
    # Within a node: 1. 9 GPUs = 2 nodes: 0.97^1. 64 GPUs = 8 nodes: 0.97^3 = 0.912673.
    assert compute.scaling_efficiency(8, 8, 0.97) == 1.0
    assert compute.scaling_efficiency(9, 8, 0.97) == pytest.approx(0.97)
    assert compute.scaling_efficiency(64, 8, 0.97) == pytest.approx(0.912673)
    # 24 GPUs = 3 nodes: 0.97^log2(3) = exp(1.58496 x ln 0.97) = exp(1.58496 x -0.0304592)
    # = exp(-0.0482767) = 0.952870.
    assert compute.scaling_efficiency(24, 8, 0.97) == pytest.approx(0.952870, abs=1e-6)


def test_layout_efficiency() -> None:
    assert compute.layout_efficiency(1, 1, 0, 8, False) == 1.0
    # tp = 4: 0.98^2 = 0.9604.
    assert compute.layout_efficiency(4, 1, 1, 2, True) == pytest.approx(0.9604)
    # pp = 4 with 16 micro-batches: bubble 3 / 19 -> 1 - 0.157895 = 0.842105.
    assert compute.layout_efficiency(1, 4, 0, 2, False) == pytest.approx(16 / 19)
    # tp 4, pp 4, ZeRO-3 across nodes: 0.9604 x 0.842105 x 0.95 = 0.768320.
    assert compute.layout_efficiency(4, 4, 3, 4, True) == pytest.approx(0.768320, abs=1e-6)
    # ZeRO-3 within a node, or with dp = 1, costs nothing extra.
    assert compute.layout_efficiency(1, 1, 3, 8, False) == 1.0
    assert compute.layout_efficiency(8, 1, 3, 1, True) == pytest.approx(0.98**3)


def test_recompute_throughput() -> None:
    # Full recompute: 6ND of model FLOPs in the time of 8ND -> 0.75; selective ~4% slower.
    r = compute.RECOMPUTE_THROUGHPUT
    assert set(r) == {"none", "selective", "full"}
    assert (r["none"], r["full"]) == (1.0, 0.75)
    assert r["selective"] == pytest.approx(1 / 1.04)
    # 8 GPUs x 989.4 TFLOPS x 0.4 x 0.75 = 2,374.56 TFLOP/s.
    assert compute.effective_flops_per_s(8, 989.4, 0.4, "full", 1.0) == pytest.approx(2.37456e15)
    # 1e18 FLOPs at 1e15 FLOP/s = 1000 s = 0.27778 h.
    assert compute.hours_for(1e18, 1e15) == pytest.approx(1000 / 3600)
