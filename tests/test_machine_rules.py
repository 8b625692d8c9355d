"""Framework rules that read the machine (planner/frameworks base.MachineRule): Megatron-LM's flex
dispatcher (DeepEP / HybridEP), Transformer Engine's userbuffers, and the CUDA_DEVICE_MAX_CONNECTIONS
the two overlaps need before Blackwell. The search drops what they refuse per split, `emit` refuses
the same plans and writes the connections each needs; plus the plan rules found beside them (EP
overlap in fp32, TP overlap with quantizers userbuffers do not gather, and with MLA)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from costmodel import types as cm
from planner.commands.main import main
from planner.frameworks import REGISTRY, Machine, megatron
from planner.inputs import loading

MEGATRON = REGISTRY["megatron"]
DGX_H100 = Machine("hopper", 8, 8, True)
NVL72 = Machine("blackwell", 4, 72, True)


def machine_of(name: str, gpus: int) -> Machine:
    return Machine.of(loading.build_cluster(loading.load_cluster_spec(name), gpus))


def moe_model(name: str = "qwen3-30b-a3b") -> cm.Model:
    return loading.load_model_spec(name).to_model()


def deepep(ep: int, etp: int = 1) -> cm.Plan:
    return cm.Plan(ep=ep, etp=etp, ep_dispatch="deepep", dp=ep * etp)


@pytest.mark.parametrize("group, refused", [(8, False), (16, False), (48, False), (128, False), (160, False),
                                            (12, True), (256, True), (320, True)])
def test_deepep_runs_only_the_group_sizes_it_has_configurations_for(group, refused):
    """deep_ep/buffers/legacy.py (dd758caf) configures 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144, 160
    ranks and asserts on any other; Megatron passes it the expert TP x EP group (fused_a2a.py)."""
    msg = megatron.flex_dispatch_machine(moe_model(), DGX_H100, deepep(group))
    assert (msg is not None) is refused and (not refused or f"group of {group} ranks" in msg)
    # expert TP counts: 64 EP ranks x 4 expert-TP ranks is a group of 256
    assert megatron.flex_dispatch_machine(moe_model(), DGX_H100, deepep(64, 4)) is not None


def test_hybridep_is_not_held_to_deepeps_group_sizes():
    """On a multi-node NVLink domain Megatron runs HybridEP (flex_backend), which has no such table."""
    plan = cm.Plan()
    assert megatron.flex_backend(NVL72, plan) == "hybridep" and megatron.flex_backend(DGX_H100, plan) == "deepep"
    # a whole-iteration CUDA graph needs HybridEP's fixed buffers (DeepEP's dispatch waits on the host)
    assert megatron.flex_backend(DGX_H100, replace(plan, full_iteration_graph=True)) == "hybridep"
    assert megatron.flex_dispatch_machine(moe_model(), NVL72, deepep(256)) is None


@pytest.mark.parametrize("cluster, gpus, why", [
    ("azure-nd-mi300x-v5", 16, "Hopper or newer"),       # AMD: DeepEP README, Hopper (SM90) GPUs
    ("aws-g6e-48xlarge", 16, "Hopper or newer"),          # L40S (Ada)
    ("pcie-h100-8x-nvlink-pairs", 16, "NVLink between all GPUs of a node"),
])
def test_deepep_needs_nvidia_hopper_with_nvlink_nodes(cluster, gpus, why):
    msg = megatron.flex_dispatch_machine(moe_model(), machine_of(cluster, gpus), deepep(8))
    assert msg is not None and why in msg
    assert megatron.flex_dispatch_machine(moe_model(), machine_of("dgx-h100", 16), deepep(8)) is None


def test_deepep_needs_rdma_between_nvlink_domains():
    no_rdma = Machine("hopper", 8, 8, False)
    assert "RDMA" in megatron.flex_dispatch_machine(moe_model(), no_rdma, deepep(16))
    assert megatron.flex_dispatch_machine(moe_model(), no_rdma, deepep(8)) is None  # one node
    assert megatron.flex_dispatch_machine(moe_model(), Machine("hopper", 8, 8, None), deepep(16)) is None  # unknown


def test_userbuffers_keep_tp_inside_one_nvlink_domain():
    """TE examples/pytorch/comm_gemm_overlap/README.md: TP ranks on one node, or one MNNVL domain."""
    plan = cm.Plan(tp=16, tp_comm_overlap=True, sequence_parallel=True)
    assert "inside one NVLink domain" in megatron.userbuffers_domain(moe_model(), DGX_H100, plan)
    assert megatron.userbuffers_domain(moe_model(), NVL72, plan) is None
    assert megatron.userbuffers_domain(moe_model(), DGX_H100, cm.Plan(tp=8, tp_comm_overlap=True)) is None


def test_tp_and_ep_overlap_want_opposite_connections_before_blackwell():
    both = cm.Plan(tp=2, ep=8, tp_comm_overlap=True, ep_overlap=True, sequence_parallel=True)
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in megatron.overlap_connections(moe_model(), DGX_H100, both)
    assert megatron.overlap_connections(moe_model(), NVL72, both) is None


def test_plan_rules_beside_them():
    model = moe_model()
    # transformer_config.py: EP overlap "is only supported with bf16 or fp16 model"
    fp32 = cm.Plan(ep=8, dp=8, ep_overlap=True, precision="fp32")
    assert "bf16 or fp16" in megatron.ep_overlap(model, fp32)
    assert megatron.ep_overlap(model, cm.Plan(ep=8, dp=8, ep_overlap=True, precision="fp8")) is None
    # TE module/base.py: userbuffers gather bf16, FP8 (delayed or current scaling) and MXFP8 only
    tpo = dict(tp=2, sequence_parallel=True, tp_comm_overlap=True)
    assert megatron.tp_overlap_quantizer(model, cm.Plan(precision="nvfp4", **tpo)) is not None
    assert megatron.tp_overlap_quantizer(model, cm.Plan(precision="fp8", fp8_recipe="blockwise", **tpo)) is not None
    for ok in (dict(precision="fp8", fp8_recipe="tensorwise"), dict(precision="mxfp8"), dict(precision="bf16")):
        assert megatron.tp_overlap_quantizer(model, cm.Plan(**ok, **tpo)) is None
    # core/extensions/transformer_engine.py turns the overlap off for MLA's projections
    assert megatron.tp_overlap_mla(moe_model("deepseek-v3"), cm.Plan(**tpo)) is not None
    assert megatron.tp_overlap_mla(model, cm.Plan(**tpo)) is None


def _suggest(capsys, argv: list[str]) -> list[dict]:
    assert main(["suggest", *argv, "--framework", "megatron", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["plans"]


def test_search_leaves_out_what_the_machine_rules_refuse(capsys):
    """DeepSeek-V3 on 2048 H100: the search once returned DeepEP over 256 expert ranks (refused by DeepEP);
    every suggested plan now passes Megatron-LM's machine rules on its cluster, and so does each plan of
    Qwen3-30B-A3B on MI300X, where the flex dispatcher does not run at all."""
    from planner.frameworks import violations
    from planner.inputs import plans
    from planner.inputs.reading import parse
    from planner.inputs.specs import PlanSpec

    for name, cluster, gpus, extra in (("deepseek-v3", "dgx-h100", 2048, []),
                                       ("qwen3-30b-a3b", "azure-nd-mi300x-v5", 32, ["--gbs", "256"])):
        spec = loading.load_model_spec(name)
        machine = machine_of(cluster, gpus)
        ranked = _suggest(capsys, [name, cluster, "--gpus", str(gpus), "--top", "3", *extra])
        assert ranked
        for entry in ranked:
            plan = plans.build_plan(parse(PlanSpec, entry["plan"], "plan"), spec, gpus)
            assert violations(MEGATRON, spec.to_model(), plan, machine) == [], entry["plan"]


def _emit_script(tmp_path, capsys, argv: list[str]) -> str:
    plan_file, out = tmp_path / "plan.json", tmp_path / "out"
    assert main(["estimate", *argv, "--json"]) == 0
    plan_file.write_text(capsys.readouterr().out)
    assert main(["emit", "--format", "megatron", "--out", str(out), str(plan_file)]) == 0
    capsys.readouterr()
    return (out / "megatron" / "launch.sh").read_text()


@pytest.mark.parametrize("argv, connections", [
    # Hopper, TP without EP overlap: arguments.py asserts 1
    (["qwen3-30b-a3b", "dgx-h100", "--gpus", "16", "--gbs", "64", "--tp", "2", "--ep", "8",
      "--sequence-parallel", "--zero", "1"], "1"),
    # Hopper, EP overlap: the MoE README needs more than 1 (arguments.py only warns)
    (["qwen3-30b-a3b", "dgx-h100", "--gpus", "16", "--gbs", "64", "--tp", "2", "--ep", "8",
      "--sequence-parallel", "--zero", "1", "--ep-overlap"], "32"),
    # Blackwell: no rule in Megatron-LM, NeMo recommends 32
    (["llama3-8b", "dgx-b200", "--gpus", "8", "--gbs", "64", "--tp", "2", "--sequence-parallel"], "32"),
    # no TP or CP: nothing to set
    (["llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64"], None),
])
def test_emit_sets_the_connections_each_overlap_needs(tmp_path, capsys, argv, connections):
    script = _emit_script(tmp_path, capsys, argv)
    lines = [line for line in script.splitlines() if line.startswith("export CUDA_DEVICE_MAX_CONNECTIONS=")]
    assert lines == ([f"export CUDA_DEVICE_MAX_CONNECTIONS={connections}"] if connections else [])


def test_emit_refuses_deepep_over_256_expert_ranks(tmp_path, capsys):
    plan_file = tmp_path / "plan.json"
    assert main(["estimate", "deepseek-v3", "dgx-h100", "--gpus", "2048", "--tp", "2", "--pp", "8", "--vpp", "4",
                 "--ep", "256", "--sequence-parallel", "--ep-dispatch", "deepep", "--zero", "1", "--precision", "fp8",
                 "--json"]) == 0
    plan_file.write_text(capsys.readouterr().out)
    assert main(["emit", "--format", "megatron", "--out", str(tmp_path / "o"), str(plan_file)]) == 2
    err = capsys.readouterr().err
    assert "DeepEP has no dispatch configuration for an expert group of 256 ranks" in err
    assert not (tmp_path / "o").exists()


def _emit_refusal(tmp_path, capsys, fmt: str, argv: list[str], *emit_args: str) -> str:
    plan_file = tmp_path / "plan.json"
    assert main(["estimate", *argv, "--json"]) == 0
    plan_file.write_text(capsys.readouterr().out)
    assert main(["emit", "--format", fmt, "--out", str(tmp_path / "o"), *emit_args, str(plan_file)]) == 2
    assert not (tmp_path / "o").exists()
    return capsys.readouterr().err


def test_torchtitan_1f1b_needs_as_many_micro_batches_as_stages(tmp_path, capsys):
    """torch 2.13 Schedule1F1B raises when micro-batches < stages (torchtitan only warns first): pp 4 with
    one micro-batch is refused by emit, and the search's pp 4 plans run interleaved or 4 micro-batches."""
    err = _emit_refusal(tmp_path, capsys, "torchtitan", ["llama3-8b", "dgx-h100", "--gpus", "16", "--pp", "4",
                                                          "--zero", "1", "--gbs", "8", "--mbs", "2"])
    assert "at least as many micro-batches as its 4 pipeline stages (got 1" in err
    ranked = _suggest_fw(capsys, "torchtitan", ["llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "8", "--fix", "pp=4",
                                                "--top", "3"])
    assert ranked
    for entry in ranked:
        plan = entry["plan"]
        assert plan["vpp"] > 1 or 8 // (plan["micro_batch_size"] * plan["dp"]) >= 4, plan


def _suggest_fw(capsys, fw: str, argv: list[str]) -> list[dict]:
    code = main(["suggest", *argv, "--framework", fw, "--json"])
    out = capsys.readouterr().out
    return json.loads(out)["plans"] if code == 0 else []


def test_torchtitan_context_parallel_needs_whole_mask_blocks(tmp_path, capsys):
    """torch's FlexAttention block mask under CP needs seq_len divisible by cp x 128
    (_context_parallel/_attention.py _create_cp_block_mask): 4000 tokens over cp 2 fail on the first step."""
    err = _emit_refusal(tmp_path, capsys, "torchtitan", ["llama3-8b", "dgx-h100", "--gpus", "16", "--cp", "2",
                                                          "--zero", "3", "--cp-comm", "all_gather", "--gbs", "64",
                                                          "--seq-length", "4000"], "--seq-length", "4000")
    assert "cp x 128 = 256" in err


def test_torchtitan_async_tp_needs_nvlink_peers(tmp_path, capsys):
    """AsyncTP maps the TP peers' memory over NVLink (torch symmetric memory): refused on L40S (no NVLink)."""
    err = _emit_refusal(tmp_path, capsys, "torchtitan", ["llama3-8b", "aws-g6e-48xlarge", "--gpus", "16", "--tp", "2",
                                                          "--zero", "3", "--sequence-parallel", "--tp-comm-overlap",
                                                          "--gbs", "64"])
    assert "AsyncTP needs its 2 TP ranks inside one NVLink domain" in err


def test_deepspeed_nvme_optimizer_offload_needs_zero3(tmp_path, capsys):
    """ZeRO 1/2 take any offload device as CPU (stage_1_and_2.py): nvme would silently use host memory."""
    err = _emit_refusal(tmp_path, capsys, "deepspeed", ["llama3-8b", "dgx-h100", "--gpus", "16", "--zero", "2",
                                                         "--gbs", "64"], "--offload-optimizer", "nvme",
                        "--nvme-path", "/local_nvme")
    assert "offload_optimizer nvme needs ZeRO stage 3" in err


def test_deepspeed_plans_with_exposed_gradient_reduction_are_priced_without_overlap(tmp_path, capsys):
    """DeepSpeed 0.19.8 turns overlap_comm off for a pipeline model and all-reduces after the backward
    without ZeRO (runtime/engine.py): suggest once ranked pp 2 / ZeRO-1 first on 32 L40S at 2.03 s with its
    gradient sync hidden, 3.03 s exposed, behind a pp 1 plan at 2.18 s. The search now offers those plans
    with the sync after the backward (the knob overlap_dp_comm, which the machine rule refuses on there), so
    their whole sync shows and a pp 1 plan, whose sync hides, ranks first; emit refuses the overlapped one."""
    argv = ["megatron-1.7b", "aws-g6e-48xlarge", "--gpus", "32", "--gbs", "256", "--top", "5"]
    plans = _suggest_fw(capsys, "deepspeed", argv)
    assert plans[0]["plan"]["pp"] == 1 and plans[0]["plan"]["overlap_dp_comm"] is True
    exposed = [e for e in plans if e["plan"]["pp"] > 1 or e["plan"]["zero_stage"] == 0]
    assert exposed, "the pipelines are searched without --no-overlap"
    for entry in exposed:
        parts = entry["time_breakdown_s"]
        assert entry["plan"]["overlap_dp_comm"] is False and parts["dp_comm_exposed"] == parts["dp_comm"] > 0
    assert all(e["plan"]["overlap_dp_comm"] is False for e in _suggest_fw(capsys, "deepspeed", [*argv, "--no-overlap"]))
    err = _emit_refusal(tmp_path, capsys, "deepspeed", ["megatron-1.7b", "aws-g6e-48xlarge", "--gpus", "32",
                                                         "--gbs", "256", "--pp", "2", "--zero", "1"])
    assert "DeepSpeed reduces gradients after the backward with a pipeline" in err
    # the remedy names the knob, which suggest's --fix overlap_dp_comm=true sets too (not only --no-overlap)
    assert "re-plan with overlap_dp_comm off (--no-overlap)" in err


def test_levers_keep_to_the_searched_frameworks(capsys):
    """On 64 L40S DeepSpeed's best plan is a pipeline (pp 4, ZeRO-1), whose gradient sync DeepSpeed cannot
    overlap: the diagnosis must not offer overlapping it, while for the same plan without --framework
    (estimate: any framework, Megatron-LM overlaps a pipeline's sync) it does."""
    argv = ["megatron-1.7b", "aws-g6e-48xlarge", "--gpus", "64", "--gbs", "256"]
    assert main(["suggest", *argv, "--framework", "deepspeed", "--top", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    plan = out["plans"][0]["plan"]
    assert plan["pp"] > 1 and plan["overlap_dp_comm"] is False
    assert not any("overlap DP" in lever["lever"] for lever in out["diagnosis"]["levers"])
    assert main(["estimate", *argv, "--pp", str(plan["pp"]), "--mbs", str(plan["micro_batch_size"]), "--zero", "1",
                 "--recompute", plan["recompute"], "--no-overlap", "--json"]) == 0
    levers = json.loads(capsys.readouterr().out)["diagnosis"]["levers"]
    assert any("overlap DP" in lever["lever"] for lever in levers)


def test_a_job_smaller_than_a_node_keeps_the_nodes_dispatcher(tmp_path, capsys):
    """4 GPUs of an 8-GPU NVLink node (HGX H200): the job runs on part of one node, which is still not a
    multi-node NVLink domain, so the flex dispatcher is DeepEP (as the plan was priced), not HybridEP."""
    plan_file, out = tmp_path / "plan.json", tmp_path / "out"
    assert main(["estimate", "qwen3-30b-a3b", "hgx-h200", "--gpus", "4", "--gbs", "256", "--tp", "4", "--ep", "4",
                 "--sequence-parallel", "--ep-dispatch", "deepep", "--zero", "1", "--json"]) == 0
    plan_file.write_text(capsys.readouterr().out)
    assert main(["emit", "--format", "megatron", "--out", str(out), str(plan_file)]) == 0
    script = " ".join((out / "megatron" / "launch.sh").read_text().split())
    assert "--moe-flex-dispatcher-backend deepep" in script


@pytest.mark.parametrize("argv, reason", [
    (["mpt-7b", "gb200-nvl72", "--gpus", "8", "--gbs", "256", "--precision", "nvfp4", "--framework", "deepspeed"],
     "DeepSpeed: precision nvfp4: ds_config has fp16 and bf16 blocks only"),
    (["llama4-maverick", "dgx-b200", "--gpus", "128", "--gbs", "512", "--framework", "megatron", "--seq-length",
      "32768"], "Megatron-LM: Megatron-LM has no chunked local attention"),
])
def test_nothing_legal_names_the_knob_rule_every_combination_breaks(capsys, argv, reason):
    """When every split passes the layout rules but no knob combination runs, the refusal names the rule
    they all break (it said only "no selected framework runs tp 1 x pp 1 with the allowed knobs")."""
    assert main(["suggest", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and reason in err


MI300X = Machine("cdna3", 8, 8, True)
MI355X = Machine("cdna4", 8, 8, True)
MEGATRON_ROCM_RULES = (megatron.rocm_userbuffers, megatron.rocm_graphs, megatron.rocm_fp8_recipe)


@pytest.mark.parametrize("plan, why", [
    (cm.Plan(tp=8, sequence_parallel=True, tp_comm_overlap=True), "ring-exchange"),  # ROCm TE PR #367
    (cm.Plan(ep=8, dp=8, moe_cuda_graphs=True), "HIP graphs"),
    (cm.Plan(full_iteration_graph=True), "HIP graphs"),
    (cm.Plan(precision="fp8", fp8_recipe="blockwise"), "block-scaled"),  # check_fp8_block_scaling_support
])
def test_megatron_on_amd_gpus_refuses_what_rocms_transformer_engine_does_not_run(plan, why):
    """What ROCm's Transformer Engine fork does not run (frameworks/megatron.py rocm_*): refused on MI300X and
    MI355X with the reason, not on an H100 (where the same plans pass these rules)."""
    model = moe_model()
    for machine in (MI300X, MI355X):
        broken = [msg for rule in MEGATRON_ROCM_RULES if (msg := rule(model, machine, plan))]
        assert len(broken) == 1 and why in broken[0] and "AMD" in broken[0], broken
    assert all(m(model, DGX_H100, plan) is None for m in MEGATRON_ROCM_RULES)



def test_amd_gpus_run_delayed_and_tensorwise_fp8_and_mxfp8_where_the_part_has_it():
    """Delayed and current (tensorwise) scaling run on gfx942 and gfx950 (ROCm TE check_fp8_support), MXFP8 on
    gfx950 behind NVTE_ROCM_ENABLE_MXFP8, which the launch files set; the rules leave them alone."""
    model = moe_model()
    for plan in (cm.Plan(precision="fp8"), cm.Plan(precision="fp8", fp8_recipe="tensorwise"),
                 cm.Plan(precision="mxfp8")):
        assert all(m(model, MI355X, plan) is None for m in MEGATRON_ROCM_RULES), plan


def test_torchtitan_async_tp_is_not_offered_on_amd_gpus():
    from planner.frameworks import torchtitan

    plan = cm.Plan(tp=8, sequence_parallel=True, tp_comm_overlap=True, fused_elementwise=True)
    assert "symmetric memory" in torchtitan.rocm_async_tp(moe_model(), MI300X, plan)
    assert torchtitan.rocm_async_tp(moe_model(), DGX_H100, plan) is None


def test_torchtitan_mxfp8_is_not_offered_on_amd_gpus(capsys):
    """torchtitan's MXFP8 converters raise unless has_cuda_capability(10, 0) (components/quantization/mx.py),
    though CDNA4 runs MXFP8: refused on MI355X, offered on B200, where suggest --framework torchtitan
    --precision mxfp8 ranks plans."""
    from planner.frameworks import torchtitan

    plan = cm.Plan(dp=8, zero_stage=3, precision="mxfp8", weight_casts="use")
    assert "capability 10.0" in torchtitan.rocm_mxfp8(moe_model(), MI355X, plan)
    assert torchtitan.rocm_mxfp8(moe_model(), NVL72, plan) is None
    assert torchtitan.rocm_mxfp8(moe_model(), MI355X, cm.Plan(dp=8, zero_stage=3, precision="fp8")) is None
    assert main(["suggest", "llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--gbs", "64", "--framework",
                 "torchtitan", "--precision", "mxfp8"]) != 0
    assert "capability 10.0" in capsys.readouterr().err
    ranked = _suggest_fw(capsys, "torchtitan", ["llama3-8b", "dgx-b200", "--gpus", "8", "--gbs", "64",
                                                "--precision", "mxfp8", "--top", "2"])
    assert ranked and all(e["plan"]["precision"] == "mxfp8" and e["plan"]["weight_casts"] == "use" for e in ranked)


def test_emit_turns_mxfp8_on_for_rocms_transformer_engine(tmp_path, capsys):
    """ROCm's Transformer Engine keeps MXFP8 off unless NVTE_ROCM_ENABLE_MXFP8 is set (its README); NVIDIA's has
    no such switch."""
    argv = ["llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--gbs", "64", "--precision", "mxfp8"]
    (tmp_path / "amd").mkdir(), (tmp_path / "nv").mkdir()
    assert "export NVTE_ROCM_ENABLE_MXFP8=1" in _emit_script(tmp_path / "amd", capsys, argv).splitlines()
    argv[1] = "dgx-b200"
    assert "NVTE_ROCM_ENABLE_MXFP8" not in _emit_script(tmp_path / "nv", capsys, argv)


def test_search_on_amd_gpus_leaves_out_tp_overlap_and_graphs(capsys):
    """A dense model on MI300X at tp > 1: the suggested plans carry neither TP overlap nor CUDA graphs."""
    ranked = _suggest(capsys, ["llama3-70b", "azure-nd-mi300x-v5", "--gpus", "64", "--gbs", "512", "--fix", "tp=8",
                               "--top", "3"])
    assert ranked
    for entry in ranked:
        assert not entry["plan"]["tp_comm_overlap"] and not entry["plan"]["moe_cuda_graphs"], entry["plan"]
