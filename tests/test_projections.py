"""The dense projections as each stack's model code writes them (costmodel Plan.projections): Megatron-core's
fused QKV and gate/up GEMMs, torchtitan's Llama with separate wq, wk, wv (before its fuse_qkv default) and
separate w1, w3. Shapes by hand from the model's dimensions; the time ordering from the roofline's shape."""
from __future__ import annotations

import json

import pytest

from costmodel import compute, layer
from costmodel import types as cm
from planner.commands.main import main
from planner.frameworks import REGISTRY

# Llama 3.1 70B (HF config.json: hidden 8192, 64 heads of 128, 8 KV heads, intermediate 28672), at TP 8.
LLAMA70 = cm.Model(name="llama3.1-70b", num_layers=80, hidden_size=8192, num_attention_heads=64, num_kv_heads=8,
                   ffn_hidden_size=28672, vocab_size=128256, seq_length=8192, mlp="swiglu")
TOKENS, TP = 2 * 8192, 8


def flops(gemms) -> float:
    return sum(2.0 * m * n * k * count for m, n, k, count in gemms)


def test_separate_attention_projections_by_hand():
    """Q: 64 x 128 = 8192 columns, K and V: 8 x 128 = 1024 each, all over TP 8: 1024, 128, 128 per rank; the
    output projection 8192 x (8192 / 8). Fused: one GEMM of 1024 + 2 x 128 = 1280 columns."""
    assert compute.attention_gemms(LLAMA70, TOKENS, TP, fused=False) == [
        (TOKENS, 1024, 8192, 1), (TOKENS, 128, 8192, 2), (TOKENS, 8192, 1024, 1)]
    assert compute.attention_gemms(LLAMA70, TOKENS, TP) == [(TOKENS, 1280, 8192, 1), (TOKENS, 8192, 1024, 1)]


def test_separate_gate_and_up_by_hand():
    """SwiGLU's gate and up, 28672 / 8 = 3584 columns each per rank, as two GEMMs or one of 7168; down 3584 -> 8192."""
    assert compute.mlp_gemms(LLAMA70, TOKENS, TP, LLAMA70.ffn, fused=False) == [
        (TOKENS, 3584, 8192, 2), (TOKENS, 8192, 3584, 1)]
    assert compute.mlp_gemms(LLAMA70, TOKENS, TP, LLAMA70.ffn) == [(TOKENS, 7168, 8192, 1), (TOKENS, 8192, 3584, 1)]


@pytest.mark.parametrize("projections", cm.PROJECTIONS)
def test_the_same_flops_whichever_way(projections):
    """Splitting a GEMM's columns moves no FLOP: 2 x tokens x 8192 x (1280 + 7168) forward per rank, plus the
    two row-parallel GEMMs."""
    attn = compute.attention_work(LLAMA70, 2, TP, True, True, True, projections).gemms
    mlp = compute.dense_mlp_work(LLAMA70, TOKENS, TP, True, LLAMA70.ffn, True, projections).gemms
    assert flops(attn + mlp) == 2.0 * TOKENS * (8192 * (1280 + 7168) + 1024 * 8192 + 3584 * 8192)


def test_narrower_gemms_take_longer():
    """Each GEMM runs at min(m, n) / (min(m, n) + half) of its large-shape rate (compute.gemm_seconds), so the
    128-column K and V GEMMs at TP 8 run at 128 / (128 + 383) = 0.25 of it against 1280 / 1663 = 0.77 for the
    fused QKV: fused < fused_qkv (gate/up split, 3584 columns each) < separate, on H100 in bf16."""
    from planner.inputs.catalogs import resolve_gpu

    gpu, eff = resolve_gpu("h100-sxm-80gb").to_gpu(), cm.Efficiency()
    seconds = {p: layer.layer_times(LLAMA70, 2, TP, True, True, gpu, "bf16", eff, projections=p).forward_seconds
               for p in cm.PROJECTIONS}
    assert seconds["fused"] < seconds["fused_qkv"] < seconds["separate"]
    h, rate = eff.matmul_half_dim, compute.sustained_flops_per_second(gpu, "bf16")
    large = compute.large_gemm_fraction(gpu, "bf16", eff)

    def by_hand(n: int) -> float:  # 2 x tokens x n x 8192 FLOPs at large x n / (n + h) of the rate
        return 2.0 * TOKENS * n * 8192 / (rate * large * n / (n + h))

    qkv = (by_hand(1024) + 2 * by_hand(128)) - by_hand(1280)
    assert seconds["separate"] - seconds["fused_qkv"] == pytest.approx(qkv, rel=1e-9)


def test_each_framework_times_its_own_projections():
    """Megatron-LM and DeepSpeed (Megatron-DeepSpeed) fuse both; torchtitan fuses QKV (fuse_qkv=True) but not gate
    and up (FeedForward w1, w3)."""
    plan = cm.Plan(tp=8, pp=1, dp=1)
    assert REGISTRY["megatron"].knobs_for(plan).projections.values == ("fused",)
    assert REGISTRY["deepspeed"].knobs_for(plan).projections.values == ("fused",)
    assert REGISTRY["torchtitan"].knobs_for(plan).projections.values == ("fused_qkv",)


def test_suggest_scores_torchtitan_plans_with_its_projections(capsys):
    args = ["suggest", "llama3-8b", "dgx-h100", "--gpus", "16", "--gbs", "64", "--top", "1", "--json"]
    assert main([*args, "--framework", "torchtitan"]) == 0
    assert json.loads(capsys.readouterr().out)["plans"][0]["plan"]["projections"] == "fused_qkv"
    assert main([*args, "--framework", "megatron"]) == 0
    assert json.loads(capsys.readouterr().out)["plans"][0]["plan"]["projections"] == "fused"


def test_estimate_takes_the_setting_and_refuses_another(capsys):
    base = ["estimate", "llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "64", "--tp", "8", "--pp", "1",
            "--mbs", "1", "--zero", "3", "--recompute", "full", "--sequence-parallel", "--json"]
    assert main(base) == 0
    fused = json.loads(capsys.readouterr().out)
    assert main([*base, "--projections", "separate"]) == 0
    separate = json.loads(capsys.readouterr().out)
    assert (fused["plan"]["projections"], separate["plan"]["projections"]) == ("fused", "separate")
    assert separate["step_time_s"] > fused["step_time_s"]
    assert main([*base, "--projections", "unfused"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--projections" in err and "fused_qkv" in err


def test_emit_says_when_the_framework_writes_its_projections_otherwise():
    """A plan scored with Megatron's fused projections and emitted for torchtitan (whose Llama runs gate and up
    apart) gets a note naming the setting to re-score with; one scored with torchtitan's own does not, and
    Megatron-LM's files get none for a fused plan."""
    from emit_support import job

    from planner.emit import render
    from planner.inputs.loading import load_model_spec

    def readme(framework: str, projections: str) -> str:
        titan = framework == "torchtitan"
        plan = job(load_model_spec("llama3-8b"), tp=2, dp=4, zero_stage=3 if titan else 1, sequence_parallel=True,
                   sp_gathered=titan, projections=projections)  # each runtime's own sequence-parallel inputs
        return render(plan, framework)["README.txt"][0]

    assert "re-score with planner estimate ... --projections fused_qkv" in readme("torchtitan", "fused")
    assert "--projections" not in readme("torchtitan", "fused_qkv")
    assert "--projections" not in readme("megatron", "fused")
    assert "re-score with planner estimate ... --projections fused" in readme("megatron", "separate")


def test_per_op_recompute_keeps_the_outputs_of_the_stack_s_own_matmuls():
    """torchtitan's per-op AC keeps every odd-numbered matmul output in execution order. Llama 3 8B (hidden 4096,
    32 heads, 8 KV heads of 128, ffn 14336): separate, wq 4096 + wv 1024 + w1 14336 + w2 4096 = 23,552 columns
    kept; with QKV fused, wqkv 6144 + w1 14336 + w2 4096 = 24,576: 1,024 more per token, 2 bytes each."""
    from costmodel import memory

    m = cm.Model("llama3-8b", 32, 4096, 32, 128256, 8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")
    kept = {p: memory.op_sac_activation_bytes(m, 1, 1, False, p) for p in ("separate", "fused_qkv")}
    assert kept["fused_qkv"] - kept["separate"] == 2.0 * 8192 * 1024


def test_the_cost_model_refuses_what_it_does_not_model():
    """A value outside PROJECTIONS, and separate projections under per-op recompute of an MoE layer (modelled
    with one QKV GEMM): one line each."""
    from costmodel import rules
    from planner.inputs import loading

    dense = cm.Plan(tp=8, pp=1, dp=1, projections="unfused")
    refused = rules.model_plan_violations(LLAMA70, dense)
    assert any("projections must be one of fused, fused_qkv, separate" in r for r in refused)
    qwen = loading.load_model_spec("qwen3-30b-a3b").to_model()
    moe = cm.Plan(tp=1, pp=1, dp=8, ep=8, recompute="op", projections="separate")
    assert any("per-op recompute of an MoE layer" in r for r in rules.model_plan_violations(qwen, moe))
    fused_qkv = cm.Plan(tp=1, pp=1, dp=8, ep=8, recompute="op", projections="fused_qkv")
    assert not any("projections" in r for r in rules.model_plan_violations(qwen, fused_qkv))


def test_per_op_recompute_defaults_to_torchtitan_s_projections(capsys):
    """Per-op recompute is torchtitan's alone, so a plan that asks for it without naming its projections is priced
    with torchtitan's (fused_qkv), not Megatron-core's fused gate/up, which no stack runs under it."""
    base = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--tp", "1", "--pp", "1", "--mbs", "1",
            "--zero", "3", "--json"]
    for extra, expected in ((["--recompute", "op"], "fused_qkv"), (["--recompute", "full"], "fused"),
                            (["--recompute", "op", "--projections", "separate"], "separate")):
        assert main([*base, *extra]) == 0
        assert json.loads(capsys.readouterr().out)["plan"]["projections"] == expected, extra
