"""The routed experts' activation prologue (cm.Plan.moe_act_prologue): Megatron-core's fused quick-GEGLU
(fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl, core_v0.15.0 to core_v0.19.0) clamps gate and up
with eager ops before its fused kernel and builds its linear offset with torch.tensor(value, device=...), a
blocking host-to-device copy (PyTorch copy_kernel_cuda -> memcpy_and_sync: cudaMemcpyAsync then
cudaStreamSynchronize). Expected values are counted by hand from that code: two clamps (read and write half
the fc1 output each) and a concatenation (read and write all of it), and one host wait per forward pass of
the activation."""
from __future__ import annotations

import dataclasses

import pytest

from costmodel import moe, stage
from costmodel import types as cm
from planner.frameworks import megatron as mg
from planner.inputs.loading import load_model_spec
from planner.inputs.plans import build_plan
from planner.inputs.specs import PlanSpec
from planner.validation.runs import default_holdout, load_runs, prepare


@pytest.fixture(scope="module")
def gpt_oss() -> cm.Model:
    return load_model_spec("gpt-oss-120b").to_model()


def test_clamp_bytes_by_hand(gpt_oss):
    """gpt-oss-120b (hidden 2880, 128 experts of 2880, top 4) at 4,096 tokens, tp 1, ep 8, balanced: each GPU's
    experts see 4,096 x 4 = 16,384 rows, whose fc1 output is 16,384 x 2 x 2,880 = 94,371,840 elements; the two
    clamps read and write half of it each and the concatenation reads and writes all of it: 4 x that many
    16-bit elements, 754,974,720 bytes."""
    assert gpt_oss.glu_clamp == 7.0
    on = moe.ExpertLayout(ep=8, prologue=True)
    assert moe.prologue_bytes(gpt_oss, 4096, 1, on) == 2 * 4 * 16_384 * 5_760 == 754_974_720
    assert moe.prologue_bytes(gpt_oss, 4096, 1, moe.ExpertLayout(ep=8)) == 0.0  # the stack fuses it
    assert moe.prologue_bytes(dataclasses.replace(gpt_oss, glu_clamp=0.0), 4096, 1, on) == 0.0  # nothing to clamp
    # the activation's own traffic (read gate and up, write the product: 3 x 2,880 per row) plus the prologue's
    plain = 2 * 16_384 * 3 * 2_880
    assert moe.activation_function_bytes(gpt_oss, 4096, 1, on) == plain + 754_974_720
    assert moe.activation_function_bytes(gpt_oss, 4096, 1, moe.ExpertLayout(ep=8)) == plain


def test_the_clamps_keep_a_second_copy_unless_the_activation_is_replayed(gpt_oss):
    """The clamps keep their input (the fc1 output) for backward and the fused function its clamped
    concatenation, as large; Megatron's moe_act recompute checkpoints the whole activation function and keeps
    only its input."""
    fc1_out = 16_384 * 2.0 * 2 * 2_880
    on, off = moe.ExpertLayout(ep=8, prologue=True), moe.ExpertLayout(ep=8)
    assert moe.activation_terms(gpt_oss, 4096, 1, off)["moe_act"] == fc1_out
    assert moe.activation_terms(gpt_oss, 4096, 1, on)["moe_act"] == 2 * fc1_out
    assert moe.activation_terms(gpt_oss, 4096, 1, on, recompute_act=True)["moe_act"] == fc1_out


@pytest.mark.parametrize("recompute, modules, full_graph, expected", [
    ("none", (), False, 1),                        # one forward pass
    ("full", (), False, 2),                        # the layer replayed in backward
    ("selective", ("moe_act",), False, 2),         # the activation function checkpointed
    ("selective", ("moe",), False, 2),             # the whole MoE MLP checkpointed
    ("selective", ("moe", "moe_act"), False, 2),   # one replay either way
    ("selective", ("layernorm",), False, 1),       # the activation not replayed
    ("none", (), True, 0),                         # a captured graph has no host copy
])
def test_host_waits_per_forward_pass_of_the_activation(recompute, modules, full_graph, expected):
    plan = cm.Plan(ep=8, dp=8, recompute=recompute, recompute_modules=modules, moe_act_prologue=True,
                   full_iteration_graph=full_graph, ep_dispatch="deepep")
    assert stage.activation_syncs(plan) == expected
    assert stage.activation_syncs(dataclasses.replace(plan, moe_act_prologue=False)) == 0


def test_the_waits_add_to_the_dispatchers():
    """Each wait costs the fitted moe_host_sync_seconds, the all-to-all dispatcher's own wait included."""
    eff, layers = cm.Efficiency(), 9
    base = dict(ep=8, dp=8, moe_act_prologue=True)
    a2a = cm.Plan(**base, ep_dispatch="alltoall")
    graphed = cm.Plan(**base, ep_dispatch="deepep", moe_cuda_graphs=True)  # no dispatcher wait (graphs take it)
    assert stage.moe_sync_seconds(a2a, eff, layers) == pytest.approx(layers * 2 * eff.moe_host_sync_seconds)
    assert stage.moe_sync_seconds(graphed, eff, layers) == pytest.approx(layers * 1 * eff.moe_host_sync_seconds)
    off = dataclasses.replace(graphed, moe_act_prologue=False)
    assert stage.moe_sync_seconds(off, eff, layers) == 0.0


def test_megatron_runs_it_for_a_quick_geglu_moe_model_with_biases(gpt_oss):
    """argument_utils.py: a non-SwiGLU MLP fuses its bias and activation when --bias-gelu-fusion is on, which
    arguments.py turns off without linear biases; Qwen3's SwiGLU experts take weighted_bias_swiglu_impl, which
    creates no tensor on the host."""
    assert mg.runs_act_prologue(gpt_oss)
    assert not mg.runs_act_prologue(dataclasses.replace(gpt_oss, linear_bias=False))
    assert not mg.runs_act_prologue(load_model_spec("qwen3-30b-a3b").to_model())
    plan = cm.Plan(ep=8, dp=8, moe_act_prologue=True)
    assert mg.act_prologue(gpt_oss, plan) is None
    assert "must be true" in mg.act_prologue(gpt_oss, dataclasses.replace(plan, moe_act_prologue=False))
    graphed = dataclasses.replace(plan, full_iteration_graph=True, ep_dispatch="deepep")
    assert "whole-iteration CUDA graph cannot capture" in mg.act_prologue(gpt_oss, graphed)


def test_a_plan_takes_megatrons_rule_unless_told(gpt_oss):
    spec = load_model_spec("gpt-oss-120b", global_batch_size=64)
    assert build_plan(PlanSpec(ep=8), spec, 64).moe_act_prologue
    assert not build_plan(PlanSpec(ep=8, moe_act_prologue=False), spec, 64).moe_act_prologue
    assert not build_plan(PlanSpec(ep=8, full_iteration_graph=True, ep_dispatch="deepep"), spec, 64).moe_act_prologue
    qwen = load_model_spec("qwen3-30b-a3b", global_batch_size=64)
    assert not build_plan(PlanSpec(ep=8), qwen, 64).moe_act_prologue


def test_the_published_gpt_oss_layouts_read_the_recipes_path():
    """NVIDIA's gpt-oss rows run the prologue except the four whose recipes enable Transformer Engine's CuTe-DSL
    fused grouped MLP (26.06 and 26.08 on GB200/GB300, under a whole-iteration graph), and the MLPerf row,
    whose whole-iteration graph could not capture it."""
    rows = [r for r in load_runs(default_holdout()) if "gpt-oss" in r.id]
    on = {r.id for r in rows if prepare(r).plan.moe_act_prologue}
    assert len(rows) == 28 and len(on) == 23
    assert all(not prepare(r).plan.full_iteration_graph for r in rows if r.id in on)


@pytest.mark.parametrize("framework, prologue", [("megatron", True), ("torchtitan", False)])
def test_suggest_gives_megatron_plans_the_prologue_and_no_whole_iteration_graph(capsys, framework, prologue):
    """Megatron-LM's plans run the prologue (and so no whole-iteration graph); torchtitan's gpt-oss flavour
    runs its own clamped SwiGLU (models/gpt_oss/moe.py swiglu), no Megatron-core prologue."""
    import json

    from planner.commands.main import main

    assert main(["suggest", "gpt-oss-120b", "gb200-nvl72", "--gpus", "64", "--gbs", "1280", "--top", "3",
                 "--framework", framework, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    plans = [p["plan"] for p in out["plans"]]
    assert plans and all(p["moe_act_prologue"] is prologue and not p["full_iteration_graph"] for p in plans)
    if prologue:
        assert all(p["time_breakdown_s"]["moe_sync"] > 0 for p in out["plans"])  # the activation waits at least


def test_estimate_can_leave_the_prologue_out(capsys):
    """--no-moe-act-prologue scores the plan a stack that fuses the whole expert MLP would run: the activation's
    host waits gone (here the only ones: DeepEP with the MoE CUDA graphs does not wait), the clamp's traffic too."""
    import json

    from planner.commands.main import main

    base = ["estimate", "gpt-oss-120b", "gb200-nvl72", "--gpus", "64", "--ep", "64", "--mbs", "4", "--gbs", "1280",
            "--recompute", "selective", "--recompute-modules", "moe_act", "--ep-dispatch", "deepep",
            "--moe-cuda-graphs", "--json"]
    assert main(base) == 0
    on = json.loads(capsys.readouterr().out)
    assert main(base + ["--no-moe-act-prologue"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert on["plan"]["moe_act_prologue"] and not off["plan"]["moe_act_prologue"]
    # 36 MoE layers x 5 micro-batches x 2 forward passes of the activation (the moe_act replay) x the fitted wait
    waits = 36 * 5 * 2 * cm.Efficiency().moe_host_sync_seconds
    assert on["time_breakdown_s"]["moe_sync"] == pytest.approx(waits)
    assert off["time_breakdown_s"]["moe_sync"] == 0.0
    assert off["time_breakdown_s"]["compute"] < on["time_breakdown_s"]["compute"]
