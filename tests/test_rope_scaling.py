"""RoPE scaling: read from config.json (planner/inputs/hf_rope.py, specs.py RopeScalingSpec), refused by
Megatron-LM where its command line cannot state it (frameworks/megatron.py rope_scaling), and written
into its launches (emit/megatron.py rope_scaling_flags). Expected values are the configs' own keys and
the flags NVIDIA's launches of these models pass."""
from __future__ import annotations

import json

import pytest
from emit_support import job

from planner.errors import PlannerError
from planner.frameworks import megatron as mg
from planner.inputs.loading import load_model_spec
from planner.inputs.specs import ModelSpec

HF = "tests/data/hf_configs"


def edited(tmp_path, source: str, **changes) -> str:
    data = json.load(open(f"{HF}/{source}.json"))
    data.update(changes)
    path = tmp_path / f"{source}-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(data))
    return str(path)


def flags(model: ModelSpec, **plan) -> list[str]:
    """The words of the emitted pretrain_gpt.py arguments that concern position encoding."""
    from planner.emit import megatron

    words = [w for flag, value in megatron.architecture_flags(job(model, **plan)) for w in
             ([flag] if value is None else [flag, str(value)])]
    return words


# ---------------------------------------------------------------- read from config.json

def test_deepseek_v3_yarn_is_read_as_its_config_states():
    """deepseek-ai/DeepSeek-V3 config.json: rope_scaling {type yarn, factor 40, original 4096, beta_fast 32,
    beta_slow 1, mscale 1.0, mscale_all_dim 1.0}."""
    r = load_model_spec(f"{HF}/deepseek-v3.json").rope_scaling
    assert (r.rope_type, r.factor, r.original_max_position_embeddings) == ("yarn", 40.0, 4096)
    assert (r.beta_fast, r.beta_slow, r.mscale, r.mscale_all_dim, r.truncate) == (32, 1, 1.0, 1.0, True)


def test_gpt_oss_yarn_keeps_its_untruncated_correction_range():
    """openai/gpt-oss-120b config.json: rope_scaling {rope_type yarn, factor 32, original 4096, beta_fast 32,
    beta_slow 1, truncate false}, no mscale pair."""
    r = load_model_spec(f"{HF}/gpt-oss-120b.json").rope_scaling
    assert (r.rope_type, r.factor, r.original_max_position_embeddings, r.truncate) == ("yarn", 32.0, 4096, False)
    assert r.mscale is None and r.mscale_all_dim is None


def test_linear_and_llama3_kinds():
    """google/gemma-3-27b: {rope_type linear, factor 8}; Llama 4 Scout: {rope_type llama3, factor 16,
    low_freq_factor 1, high_freq_factor 1, original 8192}; Qwen3 has none."""
    gemma = load_model_spec(f"{HF}/gemma-3-27b.json").rope_scaling
    assert (gemma.rope_type, gemma.factor) == ("linear", 8.0)
    scout = load_model_spec(f"{HF}/llama4-scout-17b-16e.json").rope_scaling
    assert (scout.rope_type, scout.factor, scout.low_freq_factor, scout.high_freq_factor,
            scout.original_max_position_embeddings) == ("llama3", 16.0, 1.0, 1.0, 8192)
    assert load_model_spec(f"{HF}/qwen3-8b.json").rope_scaling is None


def test_default_kind_is_none_and_v5_rope_parameters_are_read(tmp_path):
    assert load_model_spec(edited(tmp_path, "qwen3-8b", rope_scaling={"rope_type": "default"})).rope_scaling is None
    v5 = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "rope_theta": 1e6}
    r = load_model_spec(edited(tmp_path, "qwen3-8b", rope_parameters=v5)).rope_scaling
    assert (r.rope_type, r.factor, r.original_max_position_embeddings) == ("yarn", 4.0, 32768)


@pytest.mark.parametrize("block, field", [
    ({"rope_type": "dynamic", "factor": 2.0}, "rope_scaling.rope_type"),
    ({"type": "longrope", "factor": 2.0}, "rope_scaling.rope_type"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "attention_factor": 1.2},
     "rope_scaling.attention_factor"),
    ("yarn", "rope_scaling"),
])
def test_what_would_launch_another_model_is_refused_naming_it(tmp_path, block, field):
    with pytest.raises(PlannerError) as err:
        load_model_spec(edited(tmp_path, "qwen3-8b", rope_scaling=block))
    assert field in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("scaling, why", [
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, "needs high_freq_factor"),
    ({"rope_type": "linear", "factor": 8.0, "beta_fast": 32.0}, "beta_fast do not apply"),
    ({"rope_type": "yarn", "factor": 4.0}, "needs original_max_position_embeddings"),
    ({"rope_type": "yarn", "factor": 0.5, "original_max_position_embeddings": 4096}, "at least 1"),
    ({"rope_type": "linear", "factor": 2.0, "truncate": False}, "truncate applies to rope_type yarn"),
])
def test_spec_checks_each_kinds_parameters(scaling, why):
    with pytest.raises(ValueError, match=why):
        ModelSpec(name="m", num_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=100, seq_length=128,
                  position_embedding="rope", rope_scaling=scaling)


def test_scaling_needs_rope():
    with pytest.raises(ValueError, match="need position_embedding: rope"):
        ModelSpec(name="m", num_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=100, seq_length=128,
                  rope_scaling={"rope_type": "linear", "factor": 2.0})


# ---------------------------------------------------------------- Megatron-LM

def test_deepseek_v3_launch_states_its_yarn_as_nvidia_launches_it():
    """yanring/Megatron-MoE-ModelZoo model_configs/benchmarking/DeepSeek-V3.yaml @e8650517 L122-124:
    --rotary-scaling-factor 40, --mscale 1.0, --mscale-all-dim 1.0 (the MLA CLI's defaults are 1, 1 and 0,
    arguments.py _add_mla_args); the model's RoPE stays --position-embedding-type rope under MLA."""
    words = flags(load_model_spec("deepseek-v3"), pp=4, dp=2, ep=2, global_batch_size=16, zero_stage=1)
    assert ("--position-embedding-type rope --rotary-base 10000 --rotary-scaling-factor 40.0 --mscale 1.0 "
            "--mscale-all-dim 1.0") in " ".join(words)


def test_gpt_oss_launch_states_its_yarn_as_megatron_bridge_sets_it():
    """Megatron-Bridge gpt_oss_bridge.py @067f987d L65, L94-100: position_embedding_type yarn, scaling factor
    32, original 4096, beta_fast 32, beta_slow 1, correction range not rounded."""
    words = " ".join(flags(load_model_spec("gpt-oss-120b"), dp=8, ep=8, global_batch_size=64, zero_stage=1,
                           rope_fusion=False))
    assert ("--position-embedding-type yarn --rotary-base 150000 --rotary-scaling-factor 32.0 "
            "--yarn-original-max-position-embeddings 4096 --yarn-beta-fast 32.0 --yarn-beta-slow 1.0 "
            "--no-yarn-correction-range-round-to-int") in words


def test_llama31_and_linear_scaling_flags(tmp_path):
    """Llama 3.1's scaling (factor 8, low 1, high 4, original 8192: Megatron-core's fixed values) as
    --use-rope-scaling --rope-scaling-factor 8; linear by 4 as --rotary-seq-len-interpolation-factor 4."""
    llama31 = ModelSpec(**{**load_model_spec("llama3-8b").model_dump(), "rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}})
    assert "--use-rope-scaling --rope-scaling-factor 8.0" in " ".join(flags(llama31, dp=8, global_batch_size=16))
    linear = ModelSpec(**{**load_model_spec("llama3-8b").model_dump(),
                          "rope_scaling": {"rope_type": "linear", "factor": 4.0}})
    assert "--rotary-seq-len-interpolation-factor 4" in " ".join(flags(linear, dp=8, global_batch_size=16))


def scaled(name: str, **scaling) -> object:
    spec = load_model_spec(name)
    return ModelSpec(**{**spec.model_dump(), "rope_scaling": scaling}).to_model()


def test_megatron_refuses_what_its_command_line_cannot_set():
    """Kimi K2's config.json has YaRN beta_fast 1 on multi-latent attention, which Megatron-LM's CLI leaves at
    MLATransformerConfig's 32; Llama 4 Scout's Llama 3.1-style scaling has high_freq_factor 1 where
    Megatron-core fixes 4; linear interpolation by 2.5 is not the integer --rotary-seq-len-interpolation-factor
    takes. Each is named; DeepSeek-V3's and gpt-oss's YaRN run."""
    kimi = scaled("deepseek-v3", rope_type="yarn", factor=32.0, original_max_position_embeddings=4096,
                  beta_fast=1.0, beta_slow=1.0, mscale=1.0, mscale_all_dim=1.0)
    assert "beta_fast 1 (Megatron-LM: 32)" in mg.rope_scaling(kimi, None)
    scout = scaled("llama3-8b", rope_type="llama3", factor=16.0, low_freq_factor=1.0, high_freq_factor=1.0,
                   original_max_position_embeddings=8192)
    assert "high_freq_factor 1 (Megatron-LM: 4)" in mg.rope_scaling(scout, None)
    assert "takes an integer" in mg.rope_scaling(scaled("llama3-8b", rope_type="linear", factor=2.5), None)
    assert "YaRN only" in mg.rope_scaling(scaled("deepseek-v3", rope_type="linear", factor=2.0), None)
    for name in ("deepseek-v3", "gpt-oss-120b", "llama3-8b"):
        assert mg.rope_scaling(load_model_spec(name).to_model(), None) is None


# ---------------------------------------------------------------- torchtitan

def test_torchtitan_flavours_take_only_their_own_scaling():
    """torchtitan release/0.3 @4f9e9a47: every Llama 3 flavour's ComplexRoPE applies Llama 3.1's scaling
    (factor 8, low 1, high 4, original 8,192: models/common/rope.py L100-103), the Qwen3 flavours none. A
    Llama 3 8B stating that scaling, or none, is the 8B flavour; one scaled by 16 is not, nor is Qwen3-8B
    with YaRN x4 (its model card's long-context setting): each refusal names rope_scaling."""
    from planner.frameworks import torchtitan as titan

    llama = load_model_spec("llama3-8b")
    for scaling in (None, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 8192}):
        flavour, _ = titan.match_flavour(ModelSpec(**{**llama.model_dump(), "rope_scaling": scaling}).to_model())
        assert flavour.name == "8B"
    by16 = {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}
    qwen = load_model_spec(f"{HF}/qwen3-8b.json")
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    for spec, scaling in ((llama, by16), (qwen, yarn)):
        flavour, why = titan.match_flavour(ModelSpec(**{**spec.model_dump(), "rope_scaling": scaling}).to_model())
        assert flavour is None and "rope_scaling" in why


# ---------------------------------------------------------------- the unfused RoPE's price

def test_unfused_rope_bytes_by_hand():
    """gpt-oss-120b (64 query heads and 8 KV heads of 64, tp 1) on 4,096 tokens: 4,608 rotated elements a
    token. Megatron-core's eager ops, 16-bit, per element: forward t*cos 2+2, neg of half 1+1, cat 2+2, *sin
    2+2, add 4+2, cat with the empty rest 2+2 = 24 B; backward *sin 4, neg 2, halves joined 4, branches added 6,
    *cos 4, the empty slice's zero gradient 2 and its addition 6 = 28 B; fused, 4 each: 20 and 24 B more.
    DeepSeek-V3 at tp 2: 64 query heads' 64-wide RoPE parts plus the one shared key part, 4,160 a token.
    Without RoPE: nothing."""
    from costmodel.compute import unfused_rope_bytes

    gpt = load_model_spec("gpt-oss-120b").to_model()
    assert unfused_rope_bytes(gpt, 4096, 1) == (20 * 4096 * 4608, 24 * 4096 * 4608)
    ds = load_model_spec("deepseek-v3").to_model()
    assert unfused_rope_bytes(ds, 4096, 2) == (20 * 4096 * 4160, 24 * 4096 * 4160)
    assert unfused_rope_bytes(load_model_spec("gpt3-175b").to_model(), 4096, 1) == (0.0, 0.0)


def test_layer_pays_the_unfused_rope_at_hbm_speed_once():
    """layer_times adds the bytes over the GPU's effective HBM rate to each pass; eager kernels
    (fused_elementwise off) count RoPE already, so rope_fusion adds nothing there."""
    from costmodel import types as cm
    from costmodel.compute import unfused_rope_bytes
    from costmodel.layer import layer_times
    from planner.inputs import loading

    gpu = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8).gpu
    model, eff = load_model_spec("llama3-8b").to_model(), cm.Efficiency()
    hbm = gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency
    fwd, bwd = unfused_rope_bytes(model, 8192, 1)
    fused = layer_times(model, 1, 1, False, True, gpu, "bf16", eff)
    eager = layer_times(model, 1, 1, False, True, gpu, "bf16", eff, rope_fusion=False)
    assert eager.forward_seconds - fused.forward_seconds == pytest.approx(fwd / hbm, rel=1e-9)
    assert eager.backward_seconds - fused.backward_seconds == pytest.approx(bwd / hbm, rel=1e-9)
    assert layer_times(model, 1, 1, False, True, gpu, "bf16", eff, fused=False, rope_fusion=False) == \
        layer_times(model, 1, 1, False, True, gpu, "bf16", eff, fused=False)


def test_each_framework_runs_rope_as_its_code_does():
    """Megatron-LM: YaRN without MLA unfused (a fused plan of gpt-oss is refused, naming --no-rope-fusion), any
    RoPE unfused on request (--no-rope-fusion); torchtitan has no such switch. The emitted launch says so (the
    search's side: tests/test_search_tables.py test_lower_bound_holds_where_megatron_runs_rope_unfused)."""
    from planner.frameworks import torchtitan as titan
    from planner.inputs.plans import build_plan
    from planner.inputs.specs import PlanSpec

    gpt, llama = load_model_spec("gpt-oss-120b"), load_model_spec("llama3-8b")
    fused = build_plan(PlanSpec(dp=8, ep=8, global_batch_size=64, zero_stage=1, rope_fusion=True), gpt, 8)
    assert "--no-rope-fusion" in mg.rope_fusion(gpt.to_model(), fused)
    assert mg.rope_fusion(gpt.to_model(), build_plan(PlanSpec(dp=8, ep=8, global_batch_size=64, zero_stage=1,
                                                              rope_fusion=False), gpt, 8)) is None
    unfused = build_plan(PlanSpec(dp=8, global_batch_size=64, rope_fusion=False), llama, 8)
    assert mg.rope_fusion(llama.to_model(), unfused) is None
    assert "no RoPE fusion switch" in titan.megatron_only_settings(llama.to_model(), unfused)
    assert mg.FRAMEWORK.rope_fusion(gpt.to_model()) is False and mg.FRAMEWORK.rope_fusion(llama.to_model())
    from planner.emit import megatron

    words = megatron.flat_args(job(gpt, dp=8, ep=8, global_batch_size=64, zero_stage=1, rope_fusion=False))
    assert "--no-rope-fusion" in words and "--position-embedding-type" in words


# ---------------------------------------------------------------- review mends

def test_yarn_without_its_original_context_takes_max_position_embeddings(tmp_path):
    """Transformers' _compute_yarn_parameters makes the frequencies for max_position_embeddings when
    original_max_position_embeddings is absent: Qwen3-8B's config.json gives 40,960."""
    r = load_model_spec(edited(tmp_path, "qwen3-8b", rope_scaling={"rope_type": "yarn", "factor": 4.0})).rope_scaling
    assert (r.factor, r.original_max_position_embeddings) == (4.0, 40960)


def v5_gemma(tmp_path, **per_type) -> str:
    """gemma-3-27b.json as Transformers v5 writes it: text_config.rope_parameters per layer type (the v4 file's
    rope_scaling and rope_theta under full_attention, rope_local_base_freq as sliding_attention's rope_theta)."""
    data = json.load(open(f"{HF}/gemma-3-27b.json"))
    text = data["text_config"]
    full = {**text.pop("rope_scaling"), "rope_theta": text.pop("rope_theta", 1e6)}
    sliding = {"rope_type": "default", "rope_theta": text.pop("rope_local_base_freq", 1e4)}
    text["rope_parameters"] = {"full_attention": full, "sliding_attention": sliding, **per_type}
    path = tmp_path / f"gemma-v5-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_rope_parameters_per_layer_type_read_as_the_v4_file(tmp_path):
    """Transformers v5 writes Gemma 3's two RoPEs as rope_parameters per layer type (configuration_gemma3.py:
    rope_scaling updates full_attention, rope_local_base_freq becomes sliding_attention's rope_theta): the same
    model as the v4 file, the global layers' linear scaling by 8 and theta 1e6 kept (an audit found every v5
    Gemma 3 refused). A sliding entry that is scaled, or a layer type planner does not know, is still refused:
    read as one RoPE they would launch another model."""
    v4 = load_model_spec(f"{HF}/gemma-3-27b.json").model_dump()
    v5 = load_model_spec(v5_gemma(tmp_path)).model_dump()
    v4.pop("name"), v5.pop("name")
    assert v5 == v4
    assert (v5["rope_theta"], v5["rope_scaling"]["rope_type"], v5["rope_scaling"]["factor"]) == (1e6, "linear", 8.0)
    with pytest.raises(PlannerError, match="rope_parameters: holds RoPE parameters per layer type"):
        load_model_spec(v5_gemma(tmp_path, sliding_attention={"rope_type": "linear", "factor": 8.0}))
    with pytest.raises(PlannerError, match="rope_parameters: holds RoPE parameters per layer type"):
        load_model_spec(v5_gemma(tmp_path, chunked_attention={"rope_type": "default"}))


def test_megatron_refuses_yarn_it_would_launch_differently():
    """YaRN without MLA rotates every dimension in Megatron-core (yarn_rotary_pos_embedding.py: frequencies over
    kv_channels), so a partial rotary share is refused; with multi-token prediction it would launch as
    --position-embedding-type yarn, which arguments.py's MTP check rejects; on MLA one of mscale / mscale_all_dim
    alone scales differently from Hugging Face."""
    gpt = load_model_spec("gpt-oss-120b")
    partial = ModelSpec(**{**gpt.model_dump(), "rotary_percent": 0.5}).to_model()
    assert "rotary_percent 0.5" in mg.rope_scaling(partial, None)
    with_mtp = ModelSpec(**{**gpt.model_dump(), "mtp_layers": 1}).to_model()
    assert "--position-embedding-type yarn" in mg.mtp_position(with_mtp, None)
    assert mg.mtp_position(load_model_spec("deepseek-v3").to_model(), None) is None  # MLA's YaRN is rope there
    one = scaled("deepseek-v3", rope_type="yarn", factor=40.0, original_max_position_embeddings=4096,
                 mscale_all_dim=1.0)
    assert "one of mscale and mscale_all_dim" in mg.rope_scaling(one, None)


def test_attention_scale_pair_is_written_only_when_both_are_set():
    """Hugging Face applies mscale / mscale_all_dim only when both are non-zero, else 0.1 ln(factor) + 1, which
    Megatron-core's defaults (1 and 0) give: a pair with a zero is not written."""
    from planner.emit.megatron import rope_scaling_flags
    from planner.inputs.specs import RopeScalingSpec

    zero = RopeScalingSpec(rope_type="yarn", factor=32.0, original_max_position_embeddings=4096, mscale=0.7,
                           mscale_all_dim=0.0)
    assert not any(f.startswith("--mscale") for f, _ in rope_scaling_flags(zero, False))
    both = zero.model_copy(update={"mscale_all_dim": 0.7})
    assert ("--mscale", 0.7) in rope_scaling_flags(both, False) and ("--mscale-all-dim", 0.7) in \
        rope_scaling_flags(both, False)


def test_estimate_prices_rope_as_the_stack_applies_it_unless_told():
    """Without rope_fusion, a plan of gpt-oss takes the unfused RoPE Megatron-LM runs, a Llama the fused one;
    --no-rope-fusion (rope_fusion false) unfuses any."""
    from planner.inputs.plans import build_plan
    from planner.inputs.specs import PlanSpec

    gpt, llama = load_model_spec("gpt-oss-120b"), load_model_spec("llama3-8b")
    assert build_plan(PlanSpec(dp=8, ep=8, global_batch_size=64), gpt, 8).rope_fusion is False
    assert build_plan(PlanSpec(dp=8, global_batch_size=64), llama, 8).rope_fusion is True
    assert build_plan(PlanSpec(dp=8, global_batch_size=64, rope_fusion=False), llama, 8).rope_fusion is False


def test_a_refused_split_is_not_blamed_on_the_rope(capsys):
    """The search's probe of a YaRN model runs the RoPE as the framework does: with every split refused for
    another reason (--fix recompute=op, which Megatron-LM does not run), the reason is not the RoPE but the fix."""
    from planner.commands.main import main

    assert main(["suggest", "gpt-oss-120b", "gb200-nvl72", "--gpus", "64", "--gbs", "1280", "--framework",
                 "megatron", "--fix", "recompute=op"]) == 2
    err = capsys.readouterr().err
    assert "rope" not in err.lower() and "--fix recompute=op is refused by every framework searched" in err


def test_a_key_transformers_does_not_read_either_is_dropped_with_a_note(tmp_path):
    """deepseek-ai/DeepSeek-R1-0528-Qwen3-8B's rope_scaling carries `attn_factor` (0.878...) beside YaRN's
    factor 4 and original_max_position_embeddings 32768. Transformers' YaRN reads `attention_factor`
    (modeling_rope_utils.py) and warns of `attn_factor` as unrecognized, so the launched model never uses it:
    dropped here too, and said; `attention_factor`, which Transformers reads, is still refused (above)."""
    block = {"attn_factor": 0.8782488562869419, "factor": 4.0, "original_max_position_embeddings": 32768,
             "rope_type": "yarn"}
    spec = load_model_spec(edited(tmp_path, "qwen3-8b", rope_scaling=block))
    r = spec.rope_scaling
    assert (r.rope_type, r.factor, r.original_max_position_embeddings) == ("yarn", 4.0, 32768)
    assert "rope_scaling.attn_factor is not read by Transformers' yarn RoPE" in spec.notes
