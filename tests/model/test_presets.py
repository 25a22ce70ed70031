"""Model presets and exact parameter counts against the published figures.

Every count below is computed from the preset's dimensions (planner/data/models.yaml) by
planner.physics.architecture.param_counts; each test states the published figure, its source,
and the hand arithmetic, and the tolerance is the rounding of the published figure.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from planner.instance.schema import ModelSpec
from planner.physics.architecture import (
    MLA,
    Architecture,
    MoE,
    infer_dims,
    largest_layer_params,
    param_counts,
)
from planner.physics.presets import (
    PresetError,
    preset_architecture,
    preset_entry,
    preset_names,
    resolve_preset,
)
from planner.physics.transformer import dims, params_from_architecture


def total(name: str) -> int:
    return param_counts(preset_architecture(name)).total


def test_llama_3_1_8b_is_8_03b() -> None:
    # Published: 8.03B (model page of meta-llama/Llama-3.1-8B; Llama 3 paper Table 3 dims).
    # Per layer: q, o 4096^2 each = 33,554,432; k, v 4096 x 1024 (8 kv heads of 128) each
    # = 8,388,608; SwiGLU 3 x 4096 x 14336 = 176,160,768; 2 RMSNorm gains 8,192
    # -> 218,112,000 x 32 = 6,979,584,000. Embedding and untied head 2 x 128256 x 4096
    # = 1,050,673,152; final norm 4,096. Total 8,030,261,248.
    assert total("llama-3.1-8b") == 8_030_261_248
    # Narayanan's eq. 2 (a GPT block) misses SwiGLU's third matrix, GQA and the untied head:
    # 6.59B with the old default vocabulary (the figure), 7.00B with V = 128256.
    assert params_from_architecture(32, 4096, 32000, 4096) == pytest.approx(6.59e9, rel=1e-3)
    assert params_from_architecture(32, 4096, 128256, 8192) == pytest.approx(7.00e9, rel=1e-3)


def test_llama_3_1_70b_is_70_6b() -> None:
    # Published: 70.6B (model page). Per layer: 2 x 8192^2 + 2 x 8192 x 1024 = 150,994,944;
    # 3 x 8192 x 28672 = 704,643,072; norms 16,384 -> 855,654,400 x 80 = 68,452,352,000;
    # embeddings 2 x 128256 x 8192 = 2,101,346,304; final 8,192 -> 70,553,706,496.
    assert total("llama-3.1-70b") == 70_553_706_496
    assert total("llama-3.1-70b") == pytest.approx(70.6e9, abs=0.05e9)


def test_llama_3_1_405b_is_405_9b() -> None:
    # Published: 405.9B (model page; Llama 3 paper Table 3: 126 layers, 16384, FFN 53248,
    # 128 heads, 8 kv heads). Per layer: 2 x 16384^2 + 2 x 16384 x 1024 = 570,425,344;
    # 3 x 16384 x 53248 = 2,617,245,696; norms 32,768 -> 3,187,703,808 x 126
    # = 401,650,679,808; embeddings 2 x 128256 x 16384 = 4,202,692,608; final 16,384
    # -> 405,853,388,800.
    assert total("llama-3.1-405b") == 405_853_388_800
    assert total("llama-3.1-405b") == pytest.approx(405.9e9, abs=0.05e9)


@pytest.mark.parametrize(
    ("name", "count", "published"),
    [
        # Llama 2 (Touvron et al. 2023 Table 1 names 7B/13B/70B; the released checkpoints hold
        # 6.74B, 13.0B and 69.0B). 7B: per layer 4 x 4096^2 + 3 x 4096 x 11008 + 8,192
        # = 202,383,360 x 32 = 6,476,267,520; + 2 x 32000 x 4096 + 4,096 = 6,738,415,616.
        ("llama-2-7b", 6_738_415_616, 6.74e9),
        # 13B: (4 x 5120^2 + 3 x 5120 x 13824 + 10,240) x 40 + 2 x 32000 x 5120 + 5,120.
        ("llama-2-13b", 13_015_864_320, 13.0e9),
        # 70B (GQA, 8 kv heads): (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672 + 16,384)
        # x 80 + 2 x 32000 x 8192 + 8,192 = 68,976,648,192: "70B" in the paper, 69.0B stored.
        ("llama-2-70b", 68_976_648_192, 69.0e9),
    ],
)
def test_llama_2(name: str, count: int, published: float) -> None:
    assert total(name) == count
    assert total(name) == pytest.approx(published, abs=0.05e9)


def test_mixtral_8x7b_total_and_active() -> None:
    # Published (Mistral AI model card / Jiang et al. 2024): 46.7B total, 12.9B active.
    # Per layer: attention 41,943,040 (as Llama 3.1 8B); router 4096 x 8 = 32,768; 8 experts
    # x 3 x 4096 x 14336 = 1,409,286,144; norms 8,192 -> 1,451,270,144 x 32 = 46,440,644,608;
    # + 2 x 32000 x 4096 + 4,096 = 46,702,792,704.
    # Active: 2 experts: 41,943,040 + 32,768 + 352,321,536 + 8,192 = 394,305,536 x 32
    # = 12,617,777,152 + 262,148,096 = 12,879,925,248 (Mistral counts both embedding tables).
    pc = param_counts(preset_architecture("mixtral-8x7b"))
    assert pc.total == 46_702_792_704
    assert pc.active == 12_879_925_248
    assert pc.total == pytest.approx(46.7e9, abs=0.05e9)
    assert pc.active == pytest.approx(12.9e9, abs=0.05e9)
    # The routed experts are what expert parallelism shards: 32 x 8 x 176,160,768.
    assert pc.expert_params == 32 * 8 * 176_160_768


def test_deepseek_v3_total_and_active_with_mla() -> None:
    # Published: 671B total, 37B activated (DeepSeek-V3 report §4.2); README_WEIGHTS.md:
    # main model 671B, 36.6B activated "including 0.9B for the output Head" (the 14B MTP
    # module is separate and not counted here).
    # MLA per layer: q_a 7168 x 1536 = 11,010,048; q norm 1,536; q_b 1536 x 128 x 192
    # = 37,748,736; kv_a 7168 x 576 = 4,128,768; kv norm 512; kv_b 512 x 128 x 256
    # = 16,777,216; o 16384 x 7168 = 117,440,512 -> 187,107,328. Norms 14,336.
    # Dense layer (3): + 3 x 7168 x 18432 = 396,361,728 -> 583,483,392.
    # MoE layer (58): router 256 x 7168 + 256 = 1,835,264; 256 routed + 1 shared expert of
    # 3 x 7168 x 2048 = 44,040,192 -> 257 x 44,040,192 = 11,318,329,344 -> 11,507,286,272.
    # Total 3 x 583,483,392 + 58 x 11,507,286,272 + 2 x 129280 x 7168 + 7,168
    # = 1,750,450,176 + 667,422,603,776 + 1,853,358,080 + 7,168 = 671,026,419,200.
    pc = param_counts(preset_architecture("deepseek-v3"))
    assert pc.total == 671_026_419_200
    assert pc.total == pytest.approx(671e9, abs=0.5e9)
    # Active without the input embedding (a lookup): MoE layer 187,107,328 + 14,336
    # + 1,835,264 + 9 x 44,040,192 = 585,318,656 x 58 = 33,948,482,048; + 1,750,450,176
    # + output head 926,679,040 + final norm 7,168 = 36,625,618,432 -> "36.6B", "37B".
    assert pc.active_params(count_input_embedding=False) == 36_625_618_432
    assert pc.active_params(count_input_embedding=False) == pytest.approx(36.6e9, abs=0.05e9)
    # Without MLA (plain MHA, 128 heads of 56) the total is 672.1B (0.2% off) but the active
    # count 37.75B misses the published 36.6B by 3%: MLA is needed for the active count.
    plain = Architecture(
        61,
        7168,
        128,
        129280,
        ffn_hidden=18432,
        gated_mlp=True,
        tied_embeddings=False,
        position="rope",
        norm="rmsnorm",
        linear_bias=False,
        moe=preset_architecture("deepseek-v3").moe,
    )
    assert param_counts(plain).active_params(False) - 36.6e9 > 1e9


@pytest.mark.parametrize(
    ("name", "count", "published"),
    [
        # Qwen2.5-7B model card: 7.61B (6.53B non-embedding), QKV bias, untied; the card
        # truncates 7.6156B to 7.61B, hence a tolerance of 0.01B.
        # Per layer: q 3584^2 + 3584, k, v 3584 x 512 + 512 each, o 3584^2 = 29,364,736;
        # MLP 3 x 3584 x 18944 = 203,685,888; norms 7,168 -> 233,057,792 x 28
        # = 6,525,618,176; embeddings 2 x 152064 x 3584 = 1,089,994,752; final 3,584.
        ("qwen2.5-7b", 7_615_616_512, 7.61e9),
        # Qwen2.5-72B model card: 72.7B.
        ("qwen2.5-72b", 72_706_203_648, 72.7e9),
    ],
)
def test_qwen2_5(name: str, count: int, published: float) -> None:
    assert total(name) == count
    assert total(name) == pytest.approx(published, abs=0.01e9 if published < 10e9 else 0.05e9)


def test_qwen2_5_7b_non_embedding() -> None:
    # Model card: 6.53B non-embedding = 7,615,616,512 - 1,089,994,752 = 6,525,621,760.
    pc = param_counts(preset_architecture("qwen2.5-7b"))
    assert pc.non_embedding == 6_525_621_760
    assert pc.non_embedding == pytest.approx(6.53e9, abs=0.005e9)


def test_gpt3_175b() -> None:
    # Brown et al. 2020 Table D.1: 174,600M. 12 L h^2 + 13 L h = 173,961,535,488
    # (96 layers, h = 12288); + (50257 + 2048) x 12288 = 642,723,840 + final LN 24,576
    # = 174,604,259,328.
    assert total("gpt-3-175b") == 174_604_259_328
    assert total("gpt-3-175b") == pytest.approx(174.6e9, abs=0.05e9)
    # Narayanan's eq. 2 (their V = 51200) lands within 0.01%: the GPT block is the default.
    assert params_from_architecture(96, 12288, 51200, 2048) == pytest.approx(
        total("gpt-3-175b"), rel=1e-3
    )


def test_every_preset_has_a_source_and_a_published_figure() -> None:
    for name in preset_names():
        e = preset_entry(name)
        assert len(str(e["source"])) > 40, name
        # every preset's count is within 1.5% of its published figure (Llama 2 70B is the
        # loosest only if one takes the paper's "70B": the stored 69.0B is within 0.1%)
        assert total(name) == pytest.approx(float(e["published_params"]), rel=0.01), name


def test_preset_names_resolve_loosely() -> None:
    assert resolve_preset("Llama-3.1-405B") == "llama-3.1-405b"
    assert resolve_preset("llama_3.1_8b") == "llama-3.1-8b"
    assert resolve_preset("llama-3-1-70b") == "llama-3.1-70b"
    with pytest.raises(PresetError, match=r"unknown model preset 'gpt-5'.*known: llama-2-7b"):
        resolve_preset("gpt-5")


# ----------------------------------------------------------------------------- schema


def test_model_spec_preset_gives_exact_params() -> None:
    m = ModelSpec.model_validate({"preset": "llama-3.1-8b"})
    assert m.params == 8_030_261_248
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.vocab, m.seq_len) == (
        32,
        4096,
        32,
        8,
        128256,
        8192,
    )
    # A field beside the preset wins, and the count follows the override:
    # 16 layers: 16 x 218,112,000 + 1,050,673,152 + 4,096 = 4,540,469,248.
    m16 = ModelSpec.model_validate({"preset": "llama-3.1-8b", "layers": 16, "seq_len": 4096})
    assert m16.params == 4_540_469_248 and m16.seq_len == 4096
    # An explicit params wins over the count.
    assert ModelSpec.model_validate({"preset": "llama-3.1-8b", "params": 8e9}).params == 8e9


def test_model_spec_architecture_fields_without_preset() -> None:
    spec = {
        "layers": 32,
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "ffn_hidden": 14336,
        "vocab": 128256,
        "gated_mlp": True,
        "tied_embeddings": False,
        "position": "rope",
        "norm": "rmsnorm",
        "linear_bias": False,
    }
    assert ModelSpec.model_validate(spec).params == 8_030_261_248
    moe = ModelSpec.model_validate(
        {**spec, "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "expert_ffn": 14336}}
    )
    assert moe.params == 46_702_792_704
    counts = moe.param_counts()
    assert counts is not None and counts.active == 12_879_925_248


def test_model_spec_legacy_forms_unchanged() -> None:
    # params only: no architecture, nothing derived.
    m = ModelSpec.model_validate({"params": 7e9})
    assert m.params == 7e9 and m.architecture() is None
    # layers/hidden/vocab only: params stays None, and dims() applies eq. 2 as before.
    g = ModelSpec.model_validate({"layers": 96, "hidden": 12288, "vocab": 51200})
    assert g.params is None
    d = dims(g.params, g.layers, g.hidden, g.heads, g.seq_len, g.vocab)
    assert d.params == pytest.approx(params_from_architecture(96, 12288, 51200, 2048))


def test_model_spec_errors() -> None:
    with pytest.raises(ValidationError, match="unknown model preset 'llama-9'"):
        ModelSpec.model_validate({"preset": "llama-9"})
    with pytest.raises(ValidationError, match="multiple of kv_heads"):
        ModelSpec.model_validate({"layers": 2, "hidden": 512, "heads": 8, "kv_heads": 3})
    with pytest.raises(ValidationError, match="top_k must not exceed experts"):
        ModelSpec.model_validate(
            {"layers": 2, "hidden": 512, "moe": {"experts": 2, "top_k": 4, "expert_ffn": 64}}
        )
    with pytest.raises(ValidationError, match="expected 'params', a 'preset'"):
        ModelSpec.model_validate({"seq_len": 4096})


def test_preset_reads_through_an_instance() -> None:
    from pathlib import Path

    import planner

    tiny = planner.read(Path(__file__).parents[1] / "data" / "tiny.yaml")
    inst = tiny.replace({"models.m1b": {"preset": "qwen2.5-7b"}})
    # read.py passes params, layers, hidden, heads of the expanded spec to dims(): the model
    # carries the preset's exact count (7,615,616,512, see test_qwen2_5) and its dimensions.
    assert inst.models["m1b"].params == 7_615_616_512
    assert (inst.models["m1b"].layers, inst.models["m1b"].hidden) == (28, 3584)
    assert inst.spec.models["m1b"].preset == "qwen2.5-7b"


# ----------------------------------------------------------------------------- inference


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # L = round((P / 196,608)^(1/3)); h = sqrt(P / (12 L)) rounded to a multiple of 1024.
        # 7e9: L = round(32.9) = 33; sqrt(7e9 / 396) = 4204 -> 4096; heads 32 (not 33).
        (7e9, (33, 4096, 32)),
        # 13e9: L = round(40.2) = 40; sqrt(13e9 / 480) = 5204 -> 5120; heads 40 (not 41).
        (13e9, (40, 5120, 40)),
        # 70e9: L = 71; sqrt(70e9 / 852) = 9064 -> 9216; heads 72 (not 71).
        (70e9, (71, 9216, 72)),
        # GPT-3: unchanged (96, 12288, 96).
        (174.6e9, (96, 12288, 96)),
        # 125M: L = round(8.6) = 9; sqrt(125e6 / 108) = 1076 -> 1024; 8 heads.
        (125e6, (9, 1024, 8)),
    ],
)
def test_inferred_heads_allow_tensor_parallelism(
    params: float, expected: tuple[int, int, int]
) -> None:
    got = infer_dims(params)
    assert got == expected
    if got[2] >= 8:
        assert all(got[2] % t == 0 for t in (1, 2, 4, 8))


def test_largest_layer_and_validation() -> None:
    # Llama 3.1 405B: the embedding table 128256 x 16384 = 2,101,346,304 is the largest module;
    # with tp 8 each GPU gathers 262,668,288 of it.
    a = preset_architecture("llama-3.1-405b")
    assert largest_layer_params(a) == 2_101_346_304
    assert largest_layer_params(a, tp=8) == 262_668_288
    with pytest.raises(ValueError, match="multiple of kv_heads"):
        Architecture(2, 512, 8, 1000, kv_heads=3)
    with pytest.raises(ValueError, match="top_k"):
        MoE(experts=4, top_k=5, expert_ffn=10)
    # MLA with uncompressed queries (q_lora_rank 0): q = h x heads x (nope + rope).
    small = Architecture(
        1,
        64,
        2,
        10,
        gated_mlp=True,
        linear_bias=False,
        norm="rmsnorm",
        position="rope",
        tied_embeddings=True,
        mla=MLA(0, 16, 8, 4, 8),
    )
    # q 64 x 2 x 12 = 1,536; kv_a 64 x 20 = 1,280; kv norm 16; kv_b 16 x 2 x 16 = 512;
    # o 2 x 8 x 64 = 1,024 -> 4,368.
    assert param_counts(small).attention_per_layer == 4_368
