"""Megatron's selective recompute of a whole MoE layer (--recompute-modules moe) and of its shared experts
(shared_experts), Megatron-LM d98e8a64: moe_layer.py wraps route, dispatch, experts and combine in one
checkpoint, so the layer keeps only its input and replays all of it, its token exchanges included, in
backward; shared_experts checkpoints the shared experts' forward alone (transformer_config.py
recompute_modules). Expected values are hand arithmetic from the published configs."""
from __future__ import annotations

from dataclasses import replace

import pytest
from emit_support import job
from test_emit_megatron_options import check, script_arguments

from costmodel import memory, stage
from costmodel import types as cm
from costmodel.flops import hardware_flops_per_step, model_flops_per_step
from planner.emit import megatron
from planner.frameworks import REGISTRY
from planner.frameworks.base import plan_violations
from planner.inputs import loading


def model(name: str, **kw) -> cm.Model:
    return loading.load_model_spec(name, **kw).to_model()


def test_hfu_counts_the_whole_moe_mlp_replayed():
    """Qwen3-235B-A22B (h 4096, 128 experts of 1536, top 8, gated, no shared experts): the moe module
    replays the router and the 8 routed experts, 2 x (4096 x 128 + 8 x 3 x 4096 x 1536) = 303,038,464
    FLOPs per token, on all 94 layers; the norms are elementwise."""
    qwen, gbs = model("qwen3-235b-a22b"), 4
    extra = hardware_flops_per_step(qwen, gbs, "selective", ("layernorm", "moe")) - model_flops_per_step(qwen, gbs)
    assert extra == pytest.approx(94 * 303_038_464 * gbs * qwen.seq_length, rel=1e-12)


def test_hfu_of_the_shared_experts_and_no_double_count_under_moe():
    """DeepSeek-V3 (h 7168, 256 routed experts of 2048, top 8, one shared expert of 2048, the first 3 of 61
    layers dense): shared_experts replays 2 x 3 x 7168 x 2048 = 88,080,384 FLOPs per token on the 58 MoE
    layers; moe replays 2 x (7168 x 256 + 8 x 3 x 7168 x 2048 + 3 x 7168 x 2048) = 796,393,472, which
    holds the shared experts already, so naming both counts them once."""
    ds, gbs = model("deepseek-v3"), 2
    base = model_flops_per_step(ds, gbs)
    tokens = gbs * ds.seq_length
    shared = hardware_flops_per_step(ds, gbs, "selective", ("shared_experts",)) - base
    assert shared == pytest.approx(58 * 88_080_384 * tokens, rel=1e-12)
    whole = hardware_flops_per_step(ds, gbs, "selective", ("moe",)) - base
    assert whole == pytest.approx(58 * 796_393_472 * tokens, rel=1e-12)
    assert hardware_flops_per_step(ds, gbs, "selective", ("moe", "shared_experts")) - base == pytest.approx(whole)


def test_an_moe_layer_replaying_its_mlp_keeps_only_the_attention_side():
    """Qwen3-235B-A22B layer 0 at s = 4096, b = 1, no TP, FlashAttention, 16-bit, moe recomputed: norm inputs
    4sbh, norm outputs 4sbh, Q 2sb x 8192, K and V 2sb x 4 x 128 each, the output projection's input
    2sb x 8192, log-sum-exp 4 x 64 x sb: sb (8 x 4096 + 16384 + 2048 + 16384 + 256) = 4096 x 67,840 =
    277,872,640 bytes. Replaying only the experts' activation (moe_act) keeps the MoE MLP's too: fp32 router
    probabilities 4 x 4096 x 128, per routed row (4096 x 8) its input 2h and gate and up outputs 2 x 2 x 1536,
    and the experts' outputs 2 x 4096 x 8 x 4096: 2,097,152 + 32,768 x 14,336 + 268,435,456 = 740,294,656."""
    qwen = model("qwen3-235b-a22b", seq_length=4096)
    kept = memory.layer_activation_bytes(qwen, 1, 1, False, "selective", True, index=0, modules=("moe",))
    assert kept == 4096 * 67_840
    act_only = memory.layer_activation_bytes(qwen, 1, 1, False, "selective", True, index=0, modules=("moe_act",))
    assert act_only - kept == 740_294_656


def test_the_shared_experts_module_drops_their_intermediates():
    """DeepSeek-V3's shared expert (2048 wide, gated) keeps gate and up outputs (2 x 2 bytes) and their
    product (2 bytes) per token: 6 x 4096 x 2048 bytes at s = 4096, b = 1, no TP."""
    ds = model("deepseek-v3", seq_length=4096)
    one = {mods: memory.layer_activation_bytes(ds, 1, 1, False, "selective", True, index=3, modules=mods)
           for mods in (("moe_act",), ("moe_act", "shared_experts"))}
    assert one[("moe_act",)] - one[("moe_act", "shared_experts")] == 6 * 4096 * 2048


def qwen_stage(modules: tuple[str, ...], **kw) -> stage.StageCost:
    qwen = model("qwen3-235b-a22b", seq_length=16384)
    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 256)
    plan = cm.Plan(tp=4, pp=8, dp=8, vpp=4, ep=8, micro_batch_size=1, global_batch_size=256, zero_stage=1,
                   sequence_parallel=True, recompute="selective", recompute_modules=modules, **kw)
    return stage.stage_cost(qwen, cluster, plan, 12, 1, cm.Efficiency())


@pytest.mark.parametrize("dispatch", ["alltoall", "deepep"])
def test_the_replayed_moe_layer_exchanges_its_tokens_and_waits_on_the_host_again(dispatch):
    """Per micro-batch an MoE layer dispatches and combines in forward and mirrors both in backward: two
    passes of its exchange; replaying the whole layer adds a third (x 3/2). Its dropless dispatch waits on
    the host for its split sizes once per forward: replayed, twice (x 2)."""
    act, whole = qwen_stage(("layernorm", "moe_act"), ep_dispatch=dispatch), qwen_stage(("layernorm", "moe"),
                                                                                       ep_dispatch=dispatch)
    assert act.ep_comm_seconds > 0 and whole.ep_comm_seconds == pytest.approx(1.5 * act.ep_comm_seconds)
    assert act.moe_sync_seconds > 0 and whole.moe_sync_seconds == pytest.approx(2 * act.moe_sync_seconds)
    assert whole.recompute_seconds > act.recompute_seconds
    assert whole.activation_bytes < act.activation_bytes


def test_moe_replay_holds_the_activation_module():
    qwen = model("qwen3-235b-a22b", seq_length=4096)
    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8)
    plan = cm.Plan(dp=8, ep=8, micro_batch_size=1, global_batch_size=64, recompute="selective",
                   recompute_modules=("moe",))
    lt = stage.stage_kernels(qwen, cluster, plan, cm.Efficiency()).layers[0]
    assert lt.replay_seconds(("moe", "moe_act")) == lt.replay_seconds(("moe",)) > lt.replay_seconds(("moe_act",)) > 0


def test_which_tp_exchanges_a_recompute_replays():
    """A layer's forward has an attention exchange and, when its MLP is TP-split, the MLP's (an MoE layer's
    routed experts have none; its shared experts do). Full recompute replays both; selective replays the
    MLP's when the module holding it is recomputed."""
    ds, qwen, dense = model("deepseek-v3"), model("qwen3-235b-a22b"), model("llama3-8b")
    plan = cm.Plan(tp=2, dp=4, micro_batch_size=1, global_batch_size=8, sequence_parallel=True, recompute="selective")
    cases = [(ds, 3, ("moe",), 1), (ds, 3, ("shared_experts",), 1), (ds, 3, ("moe_act",), 0), (ds, 0, ("mlp",), 1),
             (qwen, 0, ("moe",), 0), (dense, -1, ("mlp",), 1), (dense, -1, ("core_attn",), 0)]
    for m, rep, modules, replayed in cases:
        assert stage.replayed_tp_exchanges(m, replace(plan, recompute_modules=modules), rep) == replayed
    assert stage.replayed_tp_exchanges(ds, replace(plan, recompute="full"), 3) == 2
    assert stage.replayed_tp_exchanges(qwen, replace(plan, recompute="full"), 0) == 1


@pytest.mark.parametrize("argv, words", [
    (["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--recompute", "selective", "--recompute-modules", "moe"],
     "recompute module moe applies only to mixture-of-experts models"),
    (["estimate", "qwen3-235b-a22b", "dgx-h100", "--gpus", "64", "--ep", "8", "--pp", "8", "--recompute",
      "selective", "--recompute-modules", "shared_experts"], "this model has none"),
])
def test_modules_a_model_does_not_have_are_refused(argv, words, capsys):
    from planner.commands.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_megatron_refuses_moe_recompute_with_a2a_overlap_or_a_graphed_router():
    """transformer_config.py (d98e8a64): "disable moe in recompute_modules when enabling
    overlap_moe_expert_parallel_comm"; "moe recompute is not supported with moe_router CUDA graph"."""
    fw, qwen = REGISTRY["megatron"], model("qwen3-235b-a22b")
    plan = cm.Plan(pp=4, vpp=2, dp=16, ep=8, micro_batch_size=1, global_batch_size=256, zero_stage=1,
                   recompute="selective", recompute_modules=("layernorm", "moe"), ep_dispatch="deepep")
    assert not plan_violations(fw, qwen, plan)
    assert any("moe module recomputed" in r for r in plan_violations(fw, qwen, replace(plan, ep_overlap=True)))
    assert any("router CUDA-graphed" in r for r in plan_violations(fw, qwen, replace(plan, moe_cuda_graphs=True)))
    assert not plan_violations(fw, qwen, replace(plan, recompute_modules=("layernorm", "moe_act"), ep_overlap=True))


def test_megatron_launch_names_the_moe_module():
    built = job(loading.load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256, zero_stage=1,
                recompute="selective", recompute_modules=["layernorm", "moe"])
    words = script_arguments(megatron.launch_sh(built))
    i = words.index("--recompute-modules")
    assert words[i + 1:i + 3] == ["layernorm", "moe"] and check(words) == []


def test_diagnose_offers_the_moe_recompute_that_makes_a_long_context_plan_fit(capsys):
    """NVIDIA's Qwen3-235B-A22B H100 layout at 16k tokens (ModelZoo long-context table: tp 4, pp 8, vpp 4, ep 8)
    without recompute does not fit in 80 GiB; its launch recomputes the whole MoE layers, and diagnose finds
    that lever, with the plan then fitting."""
    import json

    from planner.commands.main import main

    argv = ["estimate", "qwen3-235b-a22b", "dgx-h100", "--gpus", "256", "--tp", "4", "--pp", "8", "--vpp", "4",
            "--ep", "8", "--gbs", "256", "--mbs", "1", "--zero", "1", "--sequence-parallel", "--seq-length", "16384",
            "--ep-dispatch", "deepep", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert not d["fits"]
    levers = {x["lever"]: x for x in d["diagnosis"]["levers"]}
    assert levers["recompute whole MoE layers"]["memory_per_gpu_bytes"] < d["memory_capacity_bytes"]


def test_the_plan_line_names_the_modules_replayed():
    from planner.render.estimate import plan_label

    plan = {"tp": 4, "pp": 8, "dp": 8, "vpp": 4, "zero_stage": 1, "micro_batch_size": 1, "grad_accum_steps": 32,
            "recompute": "selective", "recompute_modules": ["layernorm", "moe"], "sequence_parallel": True,
            "precision": "bf16"}
    assert "recompute selective (layernorm+moe)" in plan_label(plan)
    assert "recompute selective," in plan_label({**plan, "recompute_modules": ["core_attn"]})
