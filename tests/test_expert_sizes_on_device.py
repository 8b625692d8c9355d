"""Where the experts' grouped GEMMs read each expert's token count (cm.Plan.expert_sizes_on_device). Megatron-core's
dropless all-to-all dispatcher copies the tokens per local expert to the host even with one EP and TP rank
(token_dispatcher.py sync point "before_finish": Transformer Engine's GroupedLinear takes m_splits as a host list);
torchtitan 0.3.0 without expert parallelism sorts the tokens on the GPU (models/common/token_dispatcher.py
LocalTokenDispatcher) and torch._grouped_mm reads the offsets of the counts there (models/common/moe.py
GroupedExperts @4f9e9a47), so nothing waits; with EP its AllToAllTokenDispatcher calls .tolist() on the split
sizes and waits as Megatron-core's does; and PyTorch's torch._grouped_mm reads the offsets on the device only on
Hopper and datacenter Blackwell (GroupedBlas.cpp's SM90/SM100 kernels; elsewhere _grouped_mm_fallback copies
them to the host). Expected values: layers x forward passes x the fitted wait."""
from __future__ import annotations

import dataclasses

import pytest

from costmodel import stage
from costmodel import types as cm
from planner.commands.main import main
from planner.emit import render
from planner.frameworks import REGISTRY
from planner.frameworks.base import Machine
from planner.inputs.loading import load_model_spec

Q30 = "qwen3-30b-a3b"  # 48 layers, every one MoE


def _plan(**fields) -> cm.Plan:
    return cm.Plan(**{"tp": 1, "pp": 1, "dp": 8, "micro_batch_size": 1, "global_batch_size": 8, **fields})


@pytest.mark.parametrize("ep, on_device, waits", [(1, False, True), (1, True, False), (8, False, True),
                                                  (8, True, True)])
def test_a_layer_waits_unless_its_counts_stay_on_the_gpu_without_ep(ep, on_device, waits):
    assert stage.host_synced_dispatch(_plan(ep=ep, expert_sizes_on_device=on_device)) is waits


def test_the_wait_per_micro_batch_by_hand():
    """Qwen3-30B-A3B's 48 layers, every one MoE (its config.json: decoder_sparse_step 1, no mlp_only_layers) x 1
    forward pass (no recompute) x Efficiency.moe_host_sync_seconds at ep 1 on Megatron-core's terms; nothing on
    torchtitan's; under full recompute the replayed dispatch waits again (2 passes)."""
    eff, layers = cm.Efficiency(), load_model_spec(Q30).to_model().moe_layers
    assert layers == 48
    assert stage.moe_sync_seconds(_plan(), eff, layers) == pytest.approx(48 * eff.moe_host_sync_seconds)
    assert stage.moe_sync_seconds(_plan(expert_sizes_on_device=True), eff, layers) == 0.0
    full = _plan(recompute="full")
    assert stage.moe_sync_seconds(full, eff, layers) == pytest.approx(2 * 48 * eff.moe_host_sync_seconds)


def test_estimate_drops_the_host_syncs_with_the_flag(capsys):
    """Qwen3-30B-A3B on 8 H100 at ep 1: the step without --expert-sizes-on-device carries its moe_sync part; with
    it that part is 0, every other part but the exposed DP sync as before, and the step shorter by the wait less
    what the DP sync no longer hides behind it (the backward it overlaps is shorter by the waits)."""
    base = ["estimate", Q30, "dgx-h100", "--gpus", "8", "--dp", "8", "--zero", "3", "--gbs", "8", "--json"]

    def run(*extra):
        assert main([*base, *extra]) == 0
        import json
        return json.loads(capsys.readouterr().out)

    host, device = run(), run("--expert-sizes-on-device")
    assert host["plan"]["expert_sizes_on_device"] is False and device["plan"]["expert_sizes_on_device"] is True
    assert host["time_breakdown_s"]["moe_sync"] > 0 and device["time_breakdown_s"]["moe_sync"] == 0
    h, d = host["time_breakdown_s"], device["time_breakdown_s"]
    assert {k: v for k, v in h.items() if k not in ("moe_sync", "dp_comm_exposed")} == {
        k: v for k, v in d.items() if k not in ("moe_sync", "dp_comm_exposed")}
    saved = host["step_time_s"] - device["step_time_s"]
    assert saved == pytest.approx(h["moe_sync"] - (d["dp_comm_exposed"] - h["dp_comm_exposed"]))
    assert 0 < saved <= h["moe_sync"]


@pytest.mark.parametrize("generation, on_gpu", [("hopper", True), ("blackwell", True), ("ampere", False),
                                                ("cdna3", False)])
def test_frameworks_state_where_their_expert_gemms_read_the_counts(generation, on_gpu):
    machine = Machine(generation, 8, 8)
    assert REGISTRY["torchtitan"].expert_sizes_on_device(machine) is on_gpu
    assert REGISTRY["megatron"].expert_sizes_on_device(machine) is False


@pytest.mark.parametrize("cluster_name, framework, on", [("dgx-h100", "torchtitan", True),
                                                         ("dgx-h100", "megatron", False),
                                                         ("dgx-a100", "torchtitan", False)])
def test_search_plans_read_the_counts_where_the_framework_does(cluster_name, framework, on):
    """suggest --framework torchtitan scores its MoE plans on H100 with the field on, on A100 (PyTorch's grouped
    GEMM fallback) off; Megatron-LM's everywhere off."""
    from planner.inputs import loading
    from planner.search import suggest
    from planner.search.space import SearchSpec

    model = load_model_spec(Q30, global_batch_size=64)
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), 16)
    result = suggest.run(SearchSpec(model.to_model(), cluster, 64, frameworks=(framework,)), suggest.Options(top_k=3))
    assert {r.plan.expert_sizes_on_device for r in result.ranked} == {on}


def test_emit_says_when_the_plan_read_the_counts_elsewhere():
    """A torchtitan launch of a plan scored with Megatron-core's host copy at ep 1 says how to re-score it."""
    from emit_support import estimate

    from planner.emit import build_job

    spec = load_model_spec(Q30)
    est = estimate(spec, dp=8, zero_stage=3, global_batch_size=8, grad_dtype="fp32", cross_entropy="fused",
                   pipeline_buffers="per_microbatch", sp_gathered=True)
    for gpu, said in (("h100-sxm-80gb", True), ("a100-sxm-80gb", False)):  # A100: PyTorch's fallback waits too
        j = build_job(spec, {**est, "gpu": gpu})
        assert ("re-score with planner estimate ... --expert-sizes-on-device" in render(j, "torchtitan")[
            "README.txt"][0]) is said, gpu
    j = dataclasses.replace(build_job(spec, {**est, "gpu": "h100-sxm-80gb"}))
    j = dataclasses.replace(j, plan=dataclasses.replace(j.plan, expert_sizes_on_device=True))
    assert "--expert-sizes-on-device" not in render(j, "torchtitan")["README.txt"][0]
