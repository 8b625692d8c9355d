"""Every argument an emitted Megatron-LM launch.sh passes to pretrain_gpt.py is one Megatron-LM's own
parser defines: the option exists, takes a value exactly when the parser says so, and the value is
one of its choices. tests/data/emit/megatron_options.json is that parser's option table, dumped from
Megatron-LM d98e8a64 by tests/tools/dump_megatron_options.py (whole scripts were also run through
parse_args/validate_args by tests/tools/megatron_validate.py, see tests/data/emit/README.md)."""
from __future__ import annotations

import json
from dataclasses import replace
import shlex

import pytest
from emit_support import DATA, job, tiny

from costmodel import types as cm
from planner.emit import megatron
from planner.inputs.loading import load_model_spec

OPTIONS = json.loads((DATA / "megatron_options.json").read_text())["options"]


def script_arguments(script: str) -> list[str]:
    """The words of the bash arrays the script hands to pretrain_gpt.py (not DISTRIBUTED_ARGS)."""
    words, inside = [], None
    for line in script.splitlines():
        if line.endswith("=(") and not line.startswith("DISTRIBUTED_ARGS"):
            inside = True
            continue
        if inside and line.strip() == ")":
            inside = False
            continue
        if inside:
            words += shlex.split(line.replace('"${', "'${").replace('}"', "}'"))
    return words


def check(words: list[str]) -> list[str]:
    problems, i = [], 0
    while i < len(words):
        flag = words[i]
        spec = OPTIONS.get(flag)
        if spec is None:
            problems.append(f"unknown option {flag}")
            i += 1
            continue
        if spec.get("hidden"):
            problems.append(f"{flag} is hidden (a deprecated alias)")
        if not spec["value"]:
            i += 1
            continue
        values = []
        i += 1
        while i < len(words) and not words[i].startswith("--"):
            values.append(words[i])
            i += 1
        if not values or (spec["nargs"] is None and len(values) != 1):
            problems.append(f"{flag} takes {spec['nargs'] or 'one'} value(s), got {values}")
        if spec["choices"] and any(v not in spec["choices"] for v in values):
            problems.append(f"{flag} {values} not in {spec['choices']}")
    return problems


def rack_job(model, **plan):
    """A job on GB200 NVL72 trays: 4 GPUs a node, one 72-GPU NVLink domain (the flex dispatcher is HybridEP)."""
    from emit_support import estimate

    from planner.emit import build_job

    return build_job(model, {**estimate(model, **plan), "gpu": "gb200", "gpus_per_node": 4, "nvlink_domain_size": 72})


def b200_job(model, **plan):
    """A job on DGX B200 nodes: 8 GPUs a node and NVLink domain (the flex dispatcher is DeepEP, or NCCL EP)."""
    from emit_support import estimate

    from planner.emit import build_job

    return build_job(model, {**estimate(model, **plan), "gpu": "b200-sxm-180gb", "gpus_per_node": 8,
                             "nvlink_domain_size": 8})


JOBS = {
    "llama3-70b": lambda: job(load_model_spec("llama3-70b"), tp=8, pp=4, dp=2, vpp=5, global_batch_size=512,
                              zero_stage=1, recompute="selective", sequence_parallel=True),
    "nemotron-4-15b": lambda: job(load_model_spec("nemotron-4-15b"), tp=8, pp=2, dp=1, global_batch_size=8,
                                  recompute="full", precision="fp8"),
    "gpt-fp16-unfused": lambda: job(tiny(), pp=4, dp=2, global_batch_size=16, precision="fp16",
                                    grad_dtype="fp32", flash_attention=False, overlap_pp_comm=False),
    "uneven-split": lambda: job(tiny(num_layers=30), pp=4, dp=1, global_batch_size=8),
    "mxfp8-tp-overlap": lambda: job(load_model_spec("llama3-70b"), tp=4, pp=2, dp=8, global_batch_size=64,
                                    zero_stage=1, sequence_parallel=True, precision="mxfp8", tp_comm_overlap=True,
                                    lowp_param_gather=True),
    "nvfp4-bf16-ends": lambda: job(load_model_spec("llama3-8b"), tp=2, dp=4, global_batch_size=32, zero_stage=1,
                                   precision="nvfp4", bf16_layers_start=1, bf16_layers_end=2),
    "fp8-cs-offload": lambda: job(load_model_spec("llama3-8b"), dp=8, global_batch_size=32, zero_stage=1,
                                  precision="fp8", fp8_recipe="tensorwise", offload_layers=8),
    "llama4-maverick-graphs": lambda: job(load_model_spec("llama4-maverick"), tp=8, pp=4, dp=8, ep=8,
                                          global_batch_size=1024, zero_stage=1, sequence_parallel=True,
                                          moe_cuda_graphs=True, ep_dispatch="deepep"),
    "qwen3-30b-full-graph": lambda: rack_job(load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256,
                                             zero_stage=1, ep_dispatch="deepep", full_iteration_graph=True),
    "qwen3-30b-mxfp8-dispatch": lambda: b200_job(load_model_spec("qwen3-30b-a3b"), dp=16, ep=16, global_batch_size=256,
                                                  zero_stage=1, precision="mxfp8", ep_dispatch="deepep",
                                                  ep_dispatch_dtype="mxfp8", full_iteration_graph=True),
    # YaRN: gpt-oss's without MLA (--position-embedding-type yarn and the --yarn-* flags), DeepSeek-V3's
    # on multi-latent attention (--rotary-scaling-factor, --mscale, --mscale-all-dim)
    "gpt-oss-yarn": lambda: job(load_model_spec("gpt-oss-120b"), dp=8, ep=8, global_batch_size=64, zero_stage=1,
                                rope_fusion=False),
    "deepseek-v3-mla-yarn": lambda: job(load_model_spec("deepseek-v3"), pp=4, dp=2, ep=2, global_batch_size=16,
                                        zero_stage=1),
    "qwen3-30b-eager": lambda: job(load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256, zero_stage=1,
                                   fused_elementwise=False),
    # Megatron-FSDP: NVIDIA's Llama 3 70B GB200 FP8 recipe (FSDP over 64 GPUs, 40 layers offloaded), and
    # ZeRO-2 with TP and fp32 gradients
    "llama3-70b-fsdp-offload": lambda: rack_job(load_model_spec("llama3-70b"), dp=64, global_batch_size=256,
                                                micro_batch_size=2, zero_stage=3, precision="fp8",
                                                offload_layers=40, lowp_param_gather=True),
    "llama3-8b-zero2-tp": lambda: rack_job(load_model_spec("llama3-8b"), tp=2, dp=4, global_batch_size=32,
                                           zero_stage=2, sequence_parallel=True, grad_dtype="fp32"),
    # a replica's stages numbered together (--use-tp-pp-dp-mapping), with cp: NVIDIA's MLPerf 405B layout, smaller
    "llama3-8b-tp-pp-dp": lambda: rack_job(load_model_spec("llama3-8b"), tp=2, cp=2, pp=2, dp=2, global_batch_size=16,
                                           zero_stage=1, sequence_parallel=True, rank_order="tp-cp-pp-dp"),
}


@pytest.mark.parametrize("name", sorted(JOBS))
def test_every_argument_is_a_megatron_option(name):
    words = script_arguments(megatron.launch_sh(JOBS[name]()))
    assert "--num-layers" in words and "--tensor-model-parallel-size" in words
    assert check(words) == []


def test_the_check_catches_what_megatron_would_refuse():
    assert check(["--normalization", "rmsnorm"]) == ["--normalization ['rmsnorm'] not in ['LayerNorm', 'RMSNorm']"]
    assert check(["--no-such-flag"]) == ["unknown option --no-such-flag"]
    assert check(["--num-layers"]) == ["--num-layers takes one value(s), got []"]


def test_launch_details_the_model_and_plan_state():
    """What the audit of 2026-12-02 found missing, each Megatron-LM's own flag at d98e8a64: Llama 4's NoPE
    layers every 4th (TransformerConfig.no_rope_freq, the pattern [0, 0, 0, 1] per four layers, as
    Llama4TextConfig's no_rope_layer_interval 4) and its router weight on the expert input
    (moe_apply_probs_on_input, top-1); Qwen3's RMSNorm epsilon 1e-6 (config.json rms_norm_eps) against
    Megatron's 1e-5; the MoE graph scopes as --cuda-graph-modules (--cuda-graph-scope is a hidden,
    deprecated alias); an eager plan's unfused elementwise kernels; a fused plan no -fusion flag but the loss's."""
    mav = script_arguments(megatron.launch_sh(JOBS["llama4-maverick-graphs"]()))
    assert mav[mav.index("--no-rope-freq") + 1] == "4" and "--moe-apply-probs-on-input" in mav
    assert mav[mav.index("--cuda-graph-modules") + 1:][:2] == ["moe_router", "moe_preprocess"]
    assert "--norm-epsilon" not in mav  # Llama 4's 1e-5 is Megatron's default
    eager = script_arguments(megatron.launch_sh(JOBS["qwen3-30b-eager"]()))
    assert eager[eager.index("--norm-epsilon") + 1] == "1e-06"
    assert {"--no-bias-swiglu-fusion", "--no-bias-dropout-fusion", "--no-rope-fusion"} <= set(eager)
    fused = script_arguments(megatron.launch_sh(job(load_model_spec("qwen3-30b-a3b"), dp=8, ep=8,
                                                    global_batch_size=256, zero_stage=1)))
    assert [w for w in fused if w.endswith("-fusion")] == ["--cross-entropy-loss-fusion"]  # the compiled loss
    assert check(["--cuda-graph-scope", "moe_router"]) == ["--cuda-graph-scope is hidden (a deprecated alias)"]


def test_mxfp8_parameters_gather_through_the_gradient_buffer():
    """Megatron-Bridge's bf16_with_mxfp8_mixed (mixed_precision.py) pairs fp8_param_gather with
    reuse_grad_buf_for_mxfp8_param_ag, as the MXFP8 runs in validation/runs.yaml ran; without it
    Megatron keeps a second parameter buffer (optimizer_config.py warns)."""
    words = script_arguments(megatron.launch_sh(JOBS["mxfp8-tp-overlap"]()))
    assert "--fp8-param-gather" in words and "--reuse-grad-buf-for-mxfp8-param-ag" in words


def test_the_compiled_loss_is_written_and_the_eager_one_is_not():
    """--cross-entropy-loss-fusion (a flag from TransformerConfig, model_parallel_config.py @d98e8a64, default
    off; --cross-entropy-fusion-impl keeps its default native) for the plan's compiled vocab-parallel loss; nothing
    for the eager one, Megatron-LM's default. A plan scored with a loss Megatron-LM does not run (Transformer
    Engine's, which arguments.py refuses 'due to stability issues', or an eager F.cross_entropy) gets the compiled
    one and a README line saying how to re-score."""
    from planner.emit import render

    model = load_model_spec("llama3-8b")
    fused = script_arguments(megatron.launch_sh(job(model, dp=8, global_batch_size=32)))
    eager = script_arguments(megatron.launch_sh(job(model, dp=8, global_batch_size=32, cross_entropy="vocab_parallel")))
    assert fused.count("--cross-entropy-loss-fusion") == 1 and "--cross-entropy-fusion-impl" not in fused
    assert "--cross-entropy-loss-fusion" not in eager
    for loss in ("fused", "eager"):
        files = render(job(model, dp=8, global_batch_size=32, cross_entropy=loss), "megatron")
        assert "--cross-entropy-loss-fusion" in script_arguments(files["megatron/launch.sh"][0])
        readme = files["README.txt"][0]
        assert f"assumes the {loss} loss, but Megatron-LM runs its vocab-parallel cross entropy" in readme
        assert "re-score with planner estimate ... --cross-entropy vocab_parallel_fused" in readme


def test_the_readme_names_the_version_and_what_a_launch_needs():
    """README.txt says which Megatron-LM the files were checked against and what the user installs: Transformer
    Engine always (Megatron-LM's default transformer_impl), the flex dispatcher's library with DeepEP; launch.sh
    swaps its mock data for DATA_PATH and TOKENIZER_MODEL (Megatron-LM takes one data source: arguments.py; the
    old comment said to add --data-path, which it refuses beside --mock-data)."""
    from planner.emit import render

    files = render(JOBS["qwen3-30b-mxfp8-dispatch"](), "megatron")
    text = files["README.txt"][0]
    assert "Written for\n  Megatron-LM: NVIDIA/Megatron-LM d98e8a64 (2026-08-22)" in text
    assert "Megatron-LM: Transformer Engine" in text and "the flex token dispatcher's backend library" in text
    assert "DATA_PATH=PREFIX TOKENIZER_MODEL=NAME_OR_PATH" in text
    dense = render(JOBS["llama3-70b"](), "megatron")
    assert "flex token dispatcher" not in dense["README.txt"][0]
    script = dense["megatron/launch.sh"][0]
    assert 'if [[ -n "${DATA_PATH:-}" ]]; then\n  DATA_ARGS=(--data-path "$DATA_PATH" --tokenizer-type ' \
           'HuggingFaceTokenizer\n             --tokenizer-model "${TOKENIZER_MODEL:?' in script
    assert "else\n  DATA_ARGS=(--mock-data --tokenizer-type NullTokenizer --vocab-size 128256)\nfi" in script


def test_a_whole_iteration_graph_is_megatrons_full_iteration_impl():
    """transformer_config.py (d98e8a64): cuda_graph_impl "full_iteration" captures the forward-backward in
    one graph; arguments.py asserts --no-check-for-nan-in-loss-and-grad with it. No --cuda-graph-modules
    (it must be empty there)."""
    words = script_arguments(megatron.launch_sh(JOBS["qwen3-30b-full-graph"]()))
    assert words[words.index("--cuda-graph-impl") + 1] == "full_iteration"
    assert "--no-check-for-nan-in-loss-and-grad" in words and "--cuda-graph-modules" not in words
    plain = script_arguments(megatron.launch_sh(JOBS["qwen3-30b-eager"]()))
    assert "--cuda-graph-impl" not in plain and "--no-check-for-nan-in-loss-and-grad" not in plain


def test_a_graphed_moe_iteration_runs_hybridep_with_a_token_budget():
    """Megatron-LM d98e8a64: DeepEP's dispatch waits on the host (fused_a2a.py, "not compatible with CUDA
    graph"), and HybridEP sizes its buffers on the host unless moe_expert_rank_capacity_factor fixes them
    (token_dispatcher.py), which with HybridEP needs the Transformer Engine op fuser (transformer_config.py).
    So a graphed MoE iteration dispatches with HybridEP, on an NVL72 rack as on 8-GPU nodes (NVIDIA's DGX-B300
    recipe does), with NVIDIA's recipes' budget, 1.5. Graphed recomputation takes no random numbers, so a
    model with dropout cannot recompute core_attn inside the graph."""
    from planner.frameworks import REGISTRY
    from planner.frameworks.base import plan_violations

    for built in (JOBS["qwen3-30b-full-graph"](),
                  job(load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256, zero_stage=1,
                      ep_dispatch="deepep", full_iteration_graph=True)):
        words = script_arguments(megatron.launch_sh(built))
        assert words[words.index("--moe-flex-dispatcher-backend") + 1] == "hybridep"
        assert words[words.index("--moe-expert-rank-capacity-factor") + 1] == "1.5"
        assert "--use-transformer-engine-op-fuser" in words and check(words) == []
    plain = job(load_model_spec("qwen3-30b-a3b"), dp=8, ep=8, global_batch_size=256, zero_stage=1, ep_dispatch="deepep")
    words = script_arguments(megatron.launch_sh(plain))
    assert words[words.index("--moe-flex-dispatcher-backend") + 1] == "deepep"
    assert "--moe-expert-rank-capacity-factor" not in words
    fw, plan = REGISTRY["megatron"], replace(plain.plan, ep=1, ep_dispatch="alltoall", recompute="selective",
                                             full_iteration_graph=True)
    assert any("dropout" in r for r in plan_violations(fw, replace(tiny().to_model(), dropout=True), plan))
    assert not any("dropout" in r for r in plan_violations(fw, replace(tiny().to_model(), dropout=False), plan))
    # Megatron's hidden-dropout check names the whole "moe" module, not moe_act (the experts' activation)
    act_only = replace(plan, recompute_modules=("moe_act",))
    assert not any("dropout" in r for r in plan_violations(fw, replace(tiny().to_model(), dropout=True), act_only))


def test_an_mxfp8_dispatch_runs_on_nccl_ep_where_megatron_runs_it():
    """Megatron-LM d98e8a64 (transformer_config.py, from #6524): --moe-dispatch-fwd-dtype and
    --moe-combine-bwd-dtype mxfp8 need the flex dispatcher's NCCL EP backend with the Transformer Engine op
    fuser and grouped GEMMs, whatever the experts' precision (fp8_utils.py get_fp8_recipe_for_a2a); NCCL EP
    refuses experts padded to a capacity (token_dispatcher.py), runs MXFP8 only on Blackwell, and only HybridEP
    is documented across a multi-node NVLink domain (moe_flex_dispatcher_backend). DeepSpeed and torchtitan
    send bf16."""
    from planner.frameworks import REGISTRY
    from planner.frameworks.base import Machine, knob_violations, machine_violations, plan_violations

    built = JOBS["qwen3-30b-mxfp8-dispatch"]()
    words = script_arguments(megatron.launch_sh(built))
    assert words[words.index("--moe-flex-dispatcher-backend") + 1] == "ncclep"
    assert words[words.index("--moe-dispatch-fwd-dtype") + 1] == "mxfp8"
    assert words[words.index("--moe-combine-bwd-dtype") + 1] == "mxfp8"
    assert words.count("--use-transformer-engine-op-fuser") == 1 and "--moe-grouped-gemm" in words
    assert check(words) == []
    model, plan, fw = built.cm_model, built.plan, REGISTRY["megatron"]
    assert not plan_violations(fw, model, replace(plan, precision="bf16"))
    assert any("flex dispatcher" in v for v in plan_violations(fw, model, replace(plan, ep_dispatch="alltoall",
                                                                                full_iteration_graph=False)))
    padded = replace(model, moe=replace(model.moe, capacity_factor=1.0))
    assert any("NCCL EP dispatcher does not pad" in v for v in plan_violations(fw, padded, plan))
    rack = Machine(generation="blackwell", gpus_per_node=4, nvlink_domain_size=72, rdma=True)
    assert any("multi-node NVLink" in v for v in machine_violations(fw, model, rack, plan))
    assert not machine_violations(fw, model, rack, replace(plan, ep_dispatch_dtype="bf16"))
    hopper = Machine(generation="hopper", gpus_per_node=8, nvlink_domain_size=8, rdma=True)
    assert any("needs Blackwell" in v for v in machine_violations(fw, model, hopper, plan))
    assert not any("token dispatch in" in v for v in knob_violations(fw, plan))
    for other in ("deepspeed", "torchtitan"):
        assert any("token dispatch in mxfp8" in v for v in knob_violations(REGISTRY[other], plan))


def test_the_op_fuser_comes_with_what_megatron_asserts_for_it():
    """experts.py (d98e8a64) asserts _is_fused_impl_supported under --use-transformer-engine-op-fuser: no
    expert tensor parallelism, a gated SiLU or quick-GELU expert, and for those NVTE_CUTEDSL_FUSED_GROUPED_MLP
    set. The fuser is written with an MXFP8 dispatch (eager or graphed) and with a per-rank token budget,
    which a whole-iteration graph needs (HybridEP in bf16 as NCCL EP) and NCCL EP under the MoE layers' CUDA
    graphs (its eager mode sizes the receive buffer on the host, token_dispatcher.py)."""
    from planner.frameworks import REGISTRY
    from planner.frameworks.base import plan_violations

    qwen = load_model_spec("qwen3-30b-a3b")
    common = dict(dp=16, ep=16, global_batch_size=256, zero_stage=1, precision="mxfp8", ep_dispatch="deepep")
    eager = b200_job(qwen, ep_dispatch_dtype="mxfp8", **common)
    graphed = b200_job(qwen, ep_dispatch_dtype="mxfp8", moe_cuda_graphs=True, **common)
    whole_bf16 = JOBS["qwen3-30b-full-graph"]()
    plain = b200_job(qwen, **common)
    whole_fp8 = JOBS["qwen3-30b-mxfp8-dispatch"]()
    for built, budget in ((eager, False), (graphed, True), (whole_bf16, True), (whole_fp8, True)):
        script = megatron.launch_sh(built)
        words = script_arguments(script)
        assert "--use-transformer-engine-op-fuser" in words
        assert ("--moe-expert-rank-capacity-factor" in words) == budget
        assert "export NVTE_CUTEDSL_FUSED_GROUPED_MLP=1" in script and check(words) == []
    script = megatron.launch_sh(plain)
    assert "--use-transformer-engine-op-fuser" not in script and "NVTE_CUTEDSL" not in script
    fw, plan = REGISTRY["megatron"], eager.plan
    assert any("etp 1" in v for v in plan_violations(fw, eager.cm_model, replace(plan, dp=8, etp=2)))
    gelu = replace(eager.cm_model, mlp="gelu")
    assert any("not gelu" in v for v in plan_violations(fw, gelu, plan))
    assert not any("op fuser" in v for v in plan_violations(fw, gelu, replace(plan, ep_dispatch_dtype="bf16")))
    # Llama 4 scales the expert's input by the router's weight; the fused MLP does not (experts.py)
    on_input = replace(eager.cm_model, moe=replace(eager.cm_model.moe, router_probs_on_input=True))
    assert any("experts' input" in v for v in plan_violations(fw, on_input, plan))
    assert not any("experts' input" in v for v in plan_violations(fw, on_input, replace(plan, ep_dispatch_dtype="bf16")))
    # offloading the experts' fc1 input or activation is only supported unfused (experts.py _is_fused_impl_supported)
    for offloaded in (("expert_fc1",), ("moe_act",), ("expert_fc1", "moe_act")):
        assert any("offloaded only" in v for v in plan_violations(fw, eager.cm_model,
                                                                 replace(plan, offload_modules=offloaded)))
        assert not any("offloaded only" in v for v in plan_violations(
            fw, eager.cm_model, replace(plan, offload_modules=offloaded, ep_dispatch_dtype="bf16")))


def test_megatron_fsdp_runs_the_ep_overlap_without_per_layer_graphs():
    """distributed/fsdp/mcore_fsdp_adapter.py (d98e8a64) asserts cuda_graph_impl none or full_iteration with
    --overlap-moe-expert-parallel-comm under Megatron-FSDP; the distributed optimizer (ZeRO 1) has no such
    assert. gpt-oss-120b on 64 GB200 ranked ZeRO-2 with the overlap and the MoE CUDA graphs among its best."""
    from planner.frameworks import REGISTRY
    from planner.frameworks.base import plan_violations

    fw, qwen = REGISTRY["megatron"], load_model_spec("qwen3-30b-a3b").to_model()
    graphed = cm.Plan(tp=1, pp=1, dp=16, ep=16, micro_batch_size=1, global_batch_size=256, ep_overlap=True,
                      moe_cuda_graphs=True, ep_dispatch="deepep", precision="bf16")
    for zero, refused in ((1, False), (2, True), (3, True)):
        broken = plan_violations(fw, qwen, replace(graphed, zero_stage=zero))
        assert any("per-layer CUDA graphs" in v for v in broken) == refused, (zero, broken)
    assert not any("per-layer CUDA graphs" in v
                   for v in plan_violations(fw, qwen, replace(graphed, zero_stage=3, moe_cuda_graphs=False)))


def test_megatron_fsdp_launch():
    """ZeRO-2/3 are Megatron-FSDP (Megatron-LM d98e8a64 arguments.py and docs/user-guide/features/megatron_fsdp.md):
    --use-megatron-fsdp with the sharding strategy, the checkpoint format validate_args asserts, unfused
    gradient accumulation as Megatron-LM's examples/megatron_fsdp run it, CUDA_DEVICE_MAX_CONNECTIONS unset
    (asserted not 1), gradients in fp32 through Megatron-FSDP's own dtype flag (it ignores
    --grad-reduce-in-bf16), and no MXFP8 gradient-buffer reuse (Megatron-FSDP turns it off). Both scripts
    went through validate_args too (tests/data/emit/README.md)."""
    z3 = JOBS["llama3-70b-fsdp-offload"]()
    words = script_arguments(megatron.launch_sh(z3))
    at = words.index("--data-parallel-sharding-strategy")
    assert words[at + 1] == "optim_grads_params"
    assert {"--use-megatron-fsdp", "--use-distributed-optimizer", "--no-gradient-accumulation-fusion",
            "--overlap-grad-reduce", "--overlap-param-gather", "--fp8-param-gather"} <= set(words)
    assert words[words.index("--ckpt-format") + 1] == "fsdp_dtensor"
    assert words[words.index("--cpu-offloading-num-layers") + 1] == "40"
    assert "unset CUDA_DEVICE_MAX_CONNECTIONS" in megatron.launch_sh(z3)
    z2 = JOBS["llama3-8b-zero2-tp"]()  # tp 2 on GB200: 32 connections, as without FSDP on Blackwell
    script = megatron.launch_sh(z2)
    words = script_arguments(script)
    assert words[words.index("--data-parallel-sharding-strategy") + 1] == "optim_grads"
    assert words[words.index("--megatron-fsdp-main-grads-dtype") + 1] == "fp32"
    assert "--grad-reduce-in-bf16" not in words and "export CUDA_DEVICE_MAX_CONNECTIONS=32" in script
    mx = script_arguments(megatron.launch_sh(b200_job(load_model_spec("llama3-8b"), dp=8, global_batch_size=32,
                                                      zero_stage=3, precision="mxfp8", lowp_param_gather=True)))
    assert "--fp8-param-gather" in mx and "--reuse-grad-buf-for-mxfp8-param-ag" not in mx
    one = script_arguments(megatron.launch_sh(JOBS["fp8-cs-offload"]()))  # ZeRO-1: the distributed optimizer only
    assert "--use-distributed-optimizer" in one and "--use-megatron-fsdp" not in one


def test_megatron_fsdp_with_tp_only_from_blackwell():
    """Before Blackwell, TP wants CUDA_DEVICE_MAX_CONNECTIONS=1 and Megatron-FSDP asserts it is not 1;
    arguments.py warns against the pair and the cost model does not price it, so it is refused there
    (frameworks/megatron.py fsdp_connections) and written on Blackwell."""
    from emit_support import estimate

    from planner.emit import build_job

    def h100(**plan):
        model = load_model_spec("llama3-8b")
        return build_job(model, {**estimate(model, global_batch_size=32, zero_stage=3, **plan), "gpu": "h100-sxm-80gb",
                                 "gpus_per_node": 8, "nvlink_domain_size": 8})

    with pytest.raises(Exception, match="Megatron-FSDP \\(ZeRO-2/3\\) needs CUDA_DEVICE_MAX_CONNECTIONS other than 1"):
        megatron.files(h100(tp=2, dp=4, sequence_parallel=True))
    assert "unset CUDA_DEVICE_MAX_CONNECTIONS" in megatron.launch_sh(h100(dp=8))  # tp 1: runs
    megatron.files(JOBS["llama3-8b-zero2-tp"]())
