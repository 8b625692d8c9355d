"""Megatron's fine-grained activation offload (--fine-grained-activation-offloading --offload-modules, Megatron-LM
d98e8a64, docs/user-guide/features/fine_grained_activation_offloading.md): each named module's input goes to
host memory in forward and comes back before its backward. Expected bytes are hand arithmetic from the
published configs, term by term as Korthikanti et al. 2022 eq. 1 counts a layer's activations."""
from __future__ import annotations

from dataclasses import replace

import pytest
from emit_support import job
from test_emit_megatron_options import check, script_arguments

from costmodel import memory, stage
from costmodel import types as cm
from planner.emit import megatron
from planner.frameworks import REGISTRY
from planner.frameworks.base import knob_violations, plan_violations
from planner.inputs import loading


def model(name: str, **kw) -> cm.Model:
    return loading.load_model_spec(name, **kw).to_model()


def moved(m: cm.Model, offload: tuple[str, ...], index: int = 0, modules: tuple[str, ...] = ("core_attn",)) -> float:
    """Bytes layer `index` of `m` moves to host with `offload`, micro-batch 1, no TP, selective recompute of
    `modules`, through the estimate's own path (stage.layer_offloaded_bytes)."""
    plan = cm.Plan(micro_batch_size=1, global_batch_size=1, recompute="selective", recompute_modules=modules,
                   offload_modules=offload, flash_attention=True)
    return stage.layer_offloaded_bytes(m, plan, index)


def test_each_module_moves_its_input():
    """Qwen3-235B-A22B layer 0 at s = 4096, b = 1, no TP, 16-bit (h 4096, 64 query heads and 4 KV heads of
    128, 128 experts of 1536, top 8, gated): a norm's input 2sbh = 33,554,432; the QKV input (the norm's
    output) the same; Q, K, V 2sb (8192 + 512 + 512) = 75,497,472; the output projection's input 2sb x 8192
    = 67,108,864; the 32,768 routed rows' inputs 32,768 x 2h = 268,435,456 and their gate and up outputs
    32,768 x 2 x 2 x 1536 = 201,326,592."""
    qwen = model("qwen3-235b-a22b", seq_length=4096)
    expected = {"attn_norm": 33_554_432, "mlp_norm": 33_554_432, "qkv_linear": 33_554_432,
                "core_attn": 75_497_472, "attn_proj": 67_108_864, "expert_fc1": 268_435_456, "moe_act": 201_326_592}
    for module, size in expected.items():
        assert moved(qwen, (module,)) == size, module
    assert moved(qwen, tuple(expected)) == sum(expected.values())


def test_what_recompute_already_drops_is_not_moved():
    """The norm's output is not kept when layernorm is recomputed, and the whole MoE MLP keeps nothing
    inside it under the moe module, so there is nothing of theirs to offload."""
    qwen = model("qwen3-235b-a22b", seq_length=4096)
    assert moved(qwen, ("qkv_linear",), modules=("layernorm",)) == 0
    assert moved(qwen, ("expert_fc1", "moe_act"), modules=("moe",)) == 0
    assert moved(qwen, ("expert_fc1", "moe_act"), modules=("moe_act",)) == 268_435_456 + 201_326_592


def dense_plan(**kw) -> cm.Plan:
    return cm.Plan(dp=8, micro_batch_size=1, global_batch_size=64, zero_stage=1, **kw)


def test_a_stage_keeps_one_layers_offloaded_inputs():
    """Llama 3 8B at 4,096 tokens, no pipeline (one micro-batch in flight), 32 layers, core_attn offloaded:
    Q, K, V are 2sb (4096 + 1024 + 1024) = 50,331,648 bytes a layer; the stage keeps one layer's copy in
    flight, so it holds 31 x 50,331,648 bytes fewer."""
    llama = model("llama3-8b", seq_length=4096)
    held = {off: stage.stage_activation_bytes(llama, dense_plan(offload_modules=off), 32, 0) for off in ((), ("core_attn",))}
    assert held[()] - held[("core_attn",)] == 31 * 50_331_648


def test_copies_show_where_the_layer_does_not_cover_them():
    """Each layer's offloaded bytes cross the host link once each way, beside that layer's forward and its
    backward: at 1 GB/s the 50,331,648 bytes of Llama 3 8B's Q, K, V take 50.3 ms, longer than either pass,
    so each layer shows 2 x 50.3 ms less its forward and backward seconds; at 1 TB/s nothing shows."""
    llama = model("llama3-8b", seq_length=4096)
    plan = dense_plan(offload_modules=("core_attn",))
    base = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8)
    slow = replace(base, host_link_bytes_per_second=1e9)
    lt = stage.stage_kernels(llama, slow, plan, cm.Efficiency()).layers[0]
    assert lt.backward_seconds < 0.0503
    got = stage.stage_cost(llama, slow, plan, 32, 0, cm.Efficiency()).offload_seconds
    assert got == pytest.approx(32 * (2 * 50_331_648 / 1e9 - lt.forward_seconds - lt.backward_seconds))
    fast = replace(base, host_link_bytes_per_second=1e12)
    assert stage.stage_cost(llama, fast, plan, 32, 0, cm.Efficiency()).offload_seconds == 0


def test_megatron_rules_for_fine_grained_offload():
    """transformer_config.py (d98e8a64): not with cpu_offloading; attn_proj only with core_attn; nothing inside
    an MoE layer the moe module recomputes whole; the norms not with CUDA graphs (fine_grained_activation_
    offloading.md). DeepSpeed and torchtitan have no such offload."""
    fw, qwen, llama = REGISTRY["megatron"], model("qwen3-235b-a22b"), model("llama3-8b")
    moe_plan = cm.Plan(pp=4, vpp=2, dp=16, ep=8, micro_batch_size=1, global_batch_size=256, zero_stage=1,
                       recompute="selective", recompute_modules=("layernorm", "moe_act"),
                       offload_modules=("expert_fc1", "moe_act"), ep_dispatch="deepep")
    assert not plan_violations(fw, qwen, moe_plan) and not knob_violations(fw, moe_plan)
    whole = replace(moe_plan, recompute_modules=("layernorm", "moe"))
    assert any("recomputing the whole MoE layer" in r for r in plan_violations(fw, qwen, whole))
    graphed = replace(moe_plan, moe_cuda_graphs=True, offload_modules=("attn_norm",))
    assert any("graph" in r for r in plan_violations(fw, qwen, graphed))
    alone = dense_plan(offload_modules=("attn_proj",))
    assert any("only together with core_attn" in r for r in plan_violations(fw, llama, alone))
    both = dense_plan(offload_modules=("core_attn",), offload_layers=4)
    assert any("CPU offloading" in r for r in plan_violations(fw, llama, both))
    for name in ("deepspeed", "torchtitan"):
        assert any("module activation offload" in r for r in knob_violations(REGISTRY[name], dense_plan(
            offload_modules=("core_attn",))))


@pytest.mark.parametrize("argv, words", [
    (["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--offload-modules", "expert_fc1"], "this model is dense"),
    (["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--offload-modules", "core_attn", "--recompute", "full"],
     "recompute none or selective"),
])
def test_offload_that_is_not_modelled_is_refused(argv, words, capsys):
    from planner.commands.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_megatron_launch_offloads_the_modules():
    built = job(loading.load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256, zero_stage=1,
                offload_modules=["expert_fc1", "moe_act"])
    words = script_arguments(megatron.launch_sh(built))
    i = words.index("--offload-modules")
    assert words[i + 1:i + 3] == ["expert_fc1", "moe_act"] and "--fine-grained-activation-offloading" in words
    assert check(words) == []
    # arguments.py (d98e8a64): with Transformer Engine >= 2.10 the offload asserts NVTE_CPU_OFFLOAD_V1 == "1" in
    # the environment, so the script exports it (an audit found it missing: every such launch failed at start)
    assert "\nexport NVTE_CPU_OFFLOAD_V1=1\n" in megatron.launch_sh(built)
    plain = job(loading.load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256, zero_stage=1)
    assert "NVTE_CPU_OFFLOAD_V1" not in megatron.launch_sh(plain)


def test_the_nccl_ep_overlap_does_not_offload_expert_fc1():
    """transformer_config.py (d98e8a64): the EP A2A overlap on the flex dispatcher's NCCL EP backend (which an
    MXFP8 dispatch runs on) asserts that expert_fc1 is not offloaded (its overlap path frees the input that
    offload keeps); moe_act, or the DeepEP backend (bf16 dispatch), are fine."""
    fw, qwen = REGISTRY["megatron"], model("qwen3-30b-a3b")
    plan = cm.Plan(dp=16, ep=8, micro_batch_size=1, global_batch_size=256, zero_stage=1, precision="mxfp8",
                   ep_dispatch="deepep", ep_dispatch_dtype="mxfp8", ep_overlap=True, offload_modules=("expert_fc1",))
    assert any("cannot offload expert_fc1" in r for r in plan_violations(fw, qwen, plan))
    for fine in (replace(plan, offload_modules=("moe_act",)), replace(plan, ep_dispatch_dtype="bf16"),
                 replace(plan, ep_overlap=False)):
        assert not any("cannot offload expert_fc1" in r for r in plan_violations(fw, qwen, fine))


def test_every_offload_module_names_a_kept_tensor():
    """What offload moves is looked up by module name among the tensors a layer keeps
    (memory.layer_activation_terms): each name in types.OFFLOAD_MODULES must be one of them on an MoE layer
    with nothing recomputed, or the lookup would silently move nothing; and the terms sum to the layer's bytes."""
    qwen = model("qwen3-235b-a22b", seq_length=4096)
    terms = dict(memory.layer_activation_terms(qwen, 1, 1, False, "none", True, index=0))
    assert set(cm.OFFLOAD_MODULES) <= set(terms) and all(terms[m] > 0 for m in cm.OFFLOAD_MODULES)
    assert sum(terms.values()) == memory.layer_activation_bytes(qwen, 1, 1, False, "none", True, index=0)
