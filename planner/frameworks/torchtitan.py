"""torchtitan: what it runs and refuses.

Read at torchtitan 0.3.0, the PyPI release that planner emits for (planner/emit/torchtitan.py): its
configuration, trainer, llama3, qwen3, deepseek_v3, gpt_oss, common MoE and distributed files are byte-identical to
pytorch/torchtitan release/0.3 @ 4f9e9a47 (2026-08-21). The layout and knob rules below were first
read at main b5bcd76c (2026-08-21; LC §3.2 of shared/reference/launch-configs.md) and hold at 0.3.0:
torchtitan/distributed/parallel_dims.py, models/llama3/parallelize.py, trainer.py,
distributed/activation_checkpoint.py, distributed/fsdp.py, and torch.distributed.pipelining
(schedules.py, torch 2.13).

`launch_violations` holds the rules on the model torchtitan launches: it builds only its own model
definitions (planner covers models/llama3 `llama3_configs`, models/qwen3 `qwen3_configs`,
models/deepseek_v3 `deepseekv3_configs` without multi-token prediction and models/gpt_oss `gptoss_configs`), so
they are checked when emitting, not in the search, which scores any dense architecture. An MoE
model is searched only where planner has its flavour (moe_flavour), and its plans follow
expert_sharding, experts_sequence_parallel and (a machine rule) experts_borrow_fsdp; the cost model
scores them as any framework's EP (all-to-all dispatch, no overlap of it, no CUDA graphs: the
Knobs defaults).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Optional

from costmodel import types as cm
from planner.frameworks.base import Choice, Framework, Knobs, Machine, MachineRule, only_with_tp


def float8_recipe(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torchtitan's float8 converter (torchtitan/components/quantization/float8.py, torchao) scales
    rowwise, dynamically; the emitter writes recipe "rowwise"."""
    if plan.precision == "fp8" and plan.fp8_recipe != "rowwise":
        return f"torchtitan's float8 linears scale rowwise (torchao), not {plan.fp8_recipe}"
    return None


def interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torch.distributed.pipelining schedules.py (torch 2.13): ScheduleInterleaved1F1B runs
    micro-batches in rounds = max(1, m // pp), and m must be a multiple of the number of rounds;
    Schedule1F1B (vpp 1, the schedule the emitter writes) raises when m < pp ("Number of microbatches
    must be greater than or equal to the number of stages"; torchtitan only warns before it)."""
    m = plan.num_microbatches
    if plan.vpp > 1 and m % max(1, m // plan.pp):
        return f"torchtitan interleaved 1F1B: {m} micro-batches not a multiple of {m // plan.pp} rounds"
    if plan.vpp == 1 and plan.pp > 1 and m < plan.pp:
        return (f"torchtitan 1F1B needs at least as many micro-batches as its {plan.pp} pipeline stages "
                f"(got {m}; torch Schedule1F1B)")
    return None


def sequence_split(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """trainer.py (0.3.0) before the first step: seq_len divisible by tp under sequence parallelism times 2 cp
    under context parallelism (its load-balanced halves), else it raises; models/llama3, qwen3 and deepseek_v3's
    parallelize check nothing more (the 2 tp cp rule of v0.2's llama3/infra/parallelize.py, LC §3.2, is gone).
    Under context parallelism the FlexAttention block mask (torch 2.13 _create_cp_block_mask) also needs seq_len
    divisible by cp x its 128-token block."""
    divisor = (plan.tp if plan.sequence_parallel else 1) * (2 * plan.cp if plan.cp > 1 else 1)
    if model.seq_length % divisor:
        return (f"torchtitan: seq_len {model.seq_length} not divisible by {divisor} (tp under sequence parallelism "
                "x 2cp under context parallelism; trainer.py)")
    if plan.cp > 1 and model.seq_length % (128 * plan.cp):
        return (f"torchtitan's context parallelism (FlexAttention) needs seq_len {model.seq_length} divisible by "
                f"cp x 128 = {128 * plan.cp} (torch _context_parallel/_attention.py _create_cp_block_mask)")
    return None


def fsdp(plan: cm.Plan) -> bool:
    """Whether the plan is torchtitan's FSDP2 (data_parallel_shard): ZeRO-3 without pipeline
    parallelism; with it, the ZeRO-1 that FSDP2 becomes under torch.distributed.pipelining. Its
    stages run every micro-batch's backward but the last with set_reshard_after_backward(False) and
    set_requires_gradient_sync(False) and reshard and reduce-scatter once in _post_backward
    (pipelining/stage.py backward_maybe_with_nosync, read at pytorch 0138610), and FSDP2 accumulates
    the unsharded gradients in its reduce dtype (FSDPParam.to_accumulated_grad_if_needed), while
    torchtitan keeps the gathered weights from forward to backward under PP (distributed/fsdp.py
    get_fsdp_reshard_after_forward_policy): within a step the stage holds unsharded weights and
    gradients over a sharded optimizer and gathers and reduce-scatters once, the cost model's ZeRO-1
    (the validation rows of torchtitan's 405B Table 6 are converted the same way)."""
    return plan.zero_stage == 3 or (plan.zero_stage == 1 and plan.pp > 1)


def context_parallel_fsdp(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """distributed/parallel_dims.py (0.3.0): the CP ranks fold into FSDP's shard axis (dp_shard x cp),
    and FSDP is applied even at dp_shard 1 when cp > 1."""
    if plan.cp > 1 and not fsdp(plan):
        return ("torchtitan shards weights over dp_shard x cp with FSDP2 whenever cp > 1: the plan needs ZeRO-3 "
                "(ZeRO-1 with pipeline parallelism)")
    return None


def family(model: cm.Model) -> str:
    """The torchtitan model family of the model's flavour ("" without one)."""
    flavour, _ = match_flavour(model)
    return flavour.family if flavour else ""


def varlen_kernel(model: cm.Model, machine: Machine) -> Optional[Choice]:
    """torchtitan's gpt-oss attends with VarlenAttention, which activates PyTorch's FlashAttention-3 implementation
    on Hopper and FlashAttention-4 on Blackwell and leaves FlashAttention-2 elsewhere (models/common/attention.py
    VarlenAttention.__init__, tools/utils.py get_cuda_flash_attention_impl, @4f9e9a47): flash3 on Hopper, else
    flash2, which the cost model prices as every kernel on Blackwell (compute.flash_attention_fraction). Its
    other families keep their knobs' FlexAttention (None)."""
    if family(model) != "gpt_oss":
        return None
    if machine.generation == "hopper":
        return Choice(("flash3",), "torchtitan's gpt-oss attends with VarlenAttention, which runs FlashAttention-3 "
                                   "on Hopper (models/common/attention.py, tools/utils.py)")
    return Choice(("flash2",), "torchtitan's gpt-oss attends with VarlenAttention, which runs FlashAttention-4 on "
                               "Blackwell (priced as every kernel there) and FlashAttention-2 elsewhere "
                               "(models/common/attention.py, tools/utils.py)")


def gpt_oss_layout(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torchtitan's gpt-oss flavours attend with VarlenAttention (model_registry's attn_backend "varlen", the
    recipes'), and distributed/context_parallel/api.py apply_cp_to_forward raises for it ("Variable-length
    attention CP is not yet supported", @4f9e9a47): its CP runs only on the flex backend with the ptrr load
    balancer (tests/integration_tests/models.py, gpt_oss_debugmodel_flex), which planner does not write or price.
    Pipeline parallelism runs (the same tests: PP+FSDP+EP with VarlenAttention)."""
    if plan.cp > 1 and family(model) == "gpt_oss":
        return ("torchtitan's gpt-oss attends with VarlenAttention, which its context parallelism does not support "
                "(distributed/context_parallel/api.py)")
    return None


def gpt_oss_precision(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torchtitan's gpt-oss recipes train in bf16 (models/gpt_oss/config_registry.py), and its biased grouped
    experts (GptOssGroupedExperts: mlp1/mlp2 biases and the clamped SwiGLU, models/gpt_oss/moe.py) are not the
    GroupedExperts whose float8 and MXFP8 converters planner read: no low precision for a gpt-oss flavour."""
    if plan.precision in ("fp8", "mxfp8") and family(model) == "gpt_oss":
        return (f"torchtitan's gpt-oss trains in bf16 in its recipes; planner does not write {plan.precision} "
                "converters for its biased grouped experts (models/gpt_oss/moe.py)")
    return None


def tied_pipeline(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """models/common/decoder.py update_from_config: weight tying is not supported with pipeline
    parallelism (the embedding and the output layer would sit on different stages)."""
    if model.tie_embeddings and plan.pp > 1:
        return "torchtitan: weight tying is not supported with pipeline parallelism (models/common/decoder.py)"
    return None


def moe_flavour(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torchtitan 0.3.0 writes each MoE family its own way (models/qwen3, deepseek_v3, gpt_oss,
    kimi_k2_7, llama4: shared experts, sigmoid or grouped routers, MLA, multi-token prediction), and
    planner reads the rules and writes the launch files of the Qwen3-MoE, DeepSeek-V3 and gpt-oss flavours only
    (MOE_FLAVOURS): an MoE model without such a flavour is not a torchtitan plan, and the search
    leaves it out rather than offer plans no launch file could run. (Dense models are searched
    whatever their architecture, as Llama-like models torchtitan's llama3 code could build.)"""
    return None if model.moe is None else _moe_flavour_gap(model)


@lru_cache(maxsize=64)
def _moe_flavour_gap(model: cm.Model) -> Optional[str]:
    """moe_flavour's line for an MoE model (None when it has a flavour), once per model: the search
    asks it for every split."""
    if match_flavour(model)[0] is not None:
        return None
    closest = min(MOE_FLAVOURS, key=lambda f: len(_mismatches(model, f)))
    diff = _mismatches(model, closest)
    return (f"planner's torchtitan rules and launch files cover its Qwen3-MoE, DeepSeek-V3 and gpt-oss flavours only: "
            f"the closest, {closest.family} {closest.name}, differs in {', '.join(diff[:3])}"
            f"{', ...' if len(diff) > 3 else ''}; use Megatron-LM for this MoE model")


def expert_sharding(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """models/common/moe_sharding.py (release/0.3 @ 4f9e9a47): with expert parallelism the routed
    experts are sharded on the EP axis only, along the expert dimension (expert_param_placement_sparse),
    and the EP ranks borrow from FSDP and TP (config/configs.py expert_parallel_degree: efsdp =
    dp_shard x cp x tp / ep): Megatron-core's folding with etp 1. Without it the experts are split on the
    dense TP axis like the MLP (expert_param_placement_dense): etp = tp. There is no expert tensor
    parallel degree of its own."""
    if model.moe is None:
        return None
    if plan.ep > 1 and plan.etp != 1:
        return (f"torchtitan shards experts over ep only (models/common/moe_sharding.py): with ep {plan.ep} "
                f"etp must be 1, got {plan.etp}")
    if plan.ep == 1 and plan.etp != plan.tp:
        return (f"torchtitan without expert parallelism splits the experts over the TP ranks "
                f"(models/common/moe_sharding.py): etp must equal tp {plan.tp}, got {plan.etp}")
    return None


def experts_borrow_fsdp(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """distributed/parallel_dims.py: the sparse mesh is (pp, dp_replicate, efsdp, ep) with efsdp =
    dp_shard x cp x tp / ep, so the EP ranks come out of FSDP's shard axis and the TP and CP ranks. Under
    plain replication (ZeRO 0: data_parallel_replicate, dp_shard 1; cp 1 there, context_parallel_fsdp) only
    the TP ranks are left to borrow: ep must divide tp (efsdp 0 otherwise, which build_mesh refuses). A machine
    rule on the ZeRO stage: it reads the split's ep, tp and cp themselves, which the search's plan rules may not
    (frameworks/base.py)."""
    if model.moe is not None and plan.ep > 1 and not fsdp(plan) and (plan.cp * plan.tp) % plan.ep:
        return ("torchtitan's expert parallelism borrows its ranks from FSDP's data_parallel_shard axis and the "
                f"TP ranks (parallel_dims.py efsdp = dp_shard x cp x tp / ep): under data_parallel_replicate "
                f"(dp_shard 1) ep {plan.ep} must divide tp {plan.tp}; or shard with ZeRO-3 (ZeRO-1 with pipeline "
                "parallelism)")
    return None


def experts_sequence_parallel(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """The cost model prices an MoE layer under TP as Megatron-core runs it, sequence parallel
    (costmodel/moe.py: each TP rank routes its tokens/tp). torchtitan also runs EP under TP without
    sequence parallelism (models/common/moe_sharding.py _router_sharding_config: the replicated input
    sliced to a sequence shard, the output gathered back over TP), a pattern of TP traffic the cost
    model does not price; so planner's torchtitan MoE plans with tp > 1 are sequence parallel."""
    if model.moe is not None and plan.tp > 1 and not plan.sequence_parallel:
        return ("planner prices torchtitan's MoE layers under tp > 1 as sequence parallel (costmodel/moe.py); "
                "re-plan with sequence parallelism")
    return None


def grad_dtypes(precision: str) -> Choice:
    """training.mixed_precision_reduce (config/configs.py) is annotated Literal["float32"], its
    default; a configuration module may set "bfloat16": the loader accepts it with a tyro warning
    and parallelize_llama passes it to FSDP2's MixedPrecisionPolicy(reduce_dtype) through
    TORCH_DTYPE_MAP (checked with 0.3.0's ConfigManager, tests/data/emit/torchtitan/README.md)."""
    allowed = ("fp32",) if precision == "fp32" else ("fp32", "bf16")
    return Choice(allowed, "torchtitan reduces gradients in float32 or bfloat16 (mixed_precision_reduce)")


def fsdp_reduce_scatter(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """distributed/fsdp.py apply_fsdp_to_decoder: FSDP2 fully_shard()s each block and reduce-scatters
    its gradients; there is no all-reduce setting."""
    if fsdp(plan) and plan.grad_reduce == "allreduce":
        return "torchtitan's FSDP2 reduce-scatters gradients; grad_reduce allreduce is not a torchtitan setting"
    return None


def fsdp_gather_unit(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """distributed/fsdp.py: one fully_shard unit per transformer block, gathered as one flat buffer."""
    if fsdp(plan) and plan.zero3_gather_unit == "tensor":
        return "torchtitan's FSDP2 gathers one transformer block at a time; zero3_gather_unit tensor is DeepSpeed's"
    return None


def async_tp(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """config/configs.py (release/0.3 @ 4f9e9a47): AsyncTP is CompileConfig.enable_async_tensor_parallel,
    a torch.compile pass; planner's plans compile only when elementwise work is fused (emit/torchtitan.py)."""
    if plan.tp_comm_overlap and not plan.fused_elementwise:
        return "torchtitan's AsyncTP (tp_comm_overlap) is a torch.compile pass: it needs compiled (fused) elementwise"
    return None


def async_tp_domain(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """AsyncTP's fused all-gather / reduce-scatter matmuls read and write the TP peers' buffers through
    torch's symmetric memory (torch/distributed/_symmetric_memory), which maps peer GPU memory over
    NVLink; torchtitan runs it on NVLink-connected H100s only (tests/integration_tests.py, "needs
    NVLink"). The TP ranks must therefore share one NVLink domain of more than one GPU."""
    if plan.tp_comm_overlap and plan.tp > 1 and not machine.nvlink_holds(plan.tp):
        return (f"torchtitan's AsyncTP needs its {plan.tp} TP ranks inside one NVLink domain "
                f"({machine.nvlink_domain_size} GPUs; symmetric memory maps peer GPUs over NVLink)")
    return None


def fused_attention(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """models/common/config_utils.py get_attention_config: flex, sdpa or varlen, all fused kernels."""
    if not plan.flash_attention:
        return "torchtitan's attention is always fused (flex, sdpa or varlen); flash_attention off is not a setting"
    return None


def megatron_only_settings(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """config/configs.py (release/0.3 @ 4f9e9a47): activation checkpointing recomputes, it never
    offloads (enable_cpu_offload moves FSDP's parameters, gradients and optimizer states); torchao's
    float8 converter gathers bf16 parameters (no fp8 all-gather setting) and converts every linear it
    does not filter out (filter_fqns names modules, not a count of first/last layers); RoPE is model code
    that torch.compile fuses or eager mode runs op by op (models/common/rope.py), with no switch of its own."""
    if plan.offload_layers:
        return "torchtitan has no activation offload (offload_layers is Megatron-LM's); re-plan without it"
    if plan.lowp_param_gather:
        return "torchtitan 0.3.0 all-gathers parameters in bf16 (no fp8 parameter gather); re-plan without it"
    if plan.bf16_layers_start or plan.bf16_layers_end:
        return ("torchtitan's float8 and MXFP8 converters keep no first/last layers in bf16 (Megatron-LM's "
                "--first-last-layers-bf16); re-plan without them")
    if not plan.rope_fusion and plan.fused_elementwise:
        return ("torchtitan has no RoPE fusion switch: compiled, RoPE fuses with the block; eager (--eager), every "
                "op runs apart; the plan has it unfused (--no-rope-fusion, or Megatron-LM's default for YaRN without "
                "MLA): re-score with planner estimate ... --rope-fusion")
    return None


def knobs(tp_split: bool, pp_split: bool) -> Knobs:
    """ZeRO 0 = data_parallel_replicate, ZeRO 3 = data_parallel_shard (FSDP2). Up to v0.2.2 replicate
    (DDP) ran only alone (llama3/infra/parallelize.py: "DDP has not supported > 1D parallelism"); since
    e1847f43 (2026-03-09) it is FSDP2 with a replicate axis and a shard axis of one rank (0.3.0
    models/llama3/parallelize.py applies apply_fsdp_to_decoder always, HSDP over ["dp_replicate", "fsdp"]),
    and combines with TP (torchtitan's loader accepted it: tests/data/emit/torchtitan/README.md). Each rank
    then holds whole fp32 weights, gradients and Adam states (16 B a parameter, under the cost model's ZeRO-0
    count of 16-18 B) and all-reduces the gradients over the replicas. With pipeline parallelism FSDP2 is
    scored as ZeRO-1 (`fsdp`)."""
    if pp_split:
        zero = Choice((1,), "torchtitan shards with FSDP2 on data_parallel_shard, which under pipeline parallelism "
                            "keeps weights and gradients unsharded through the step (ZeRO-1; pipelining/stage.py)")
    else:
        zero = Choice((0, 3), "torchtitan replicates (data_parallel_replicate, ZeRO 0) or shards with FSDP2 (ZeRO-3) "
                              "on data_parallel_shard")
    return Knobs(
        zero_stage=zero,
        recompute=Choice(("none", "op", "full"), "activation_checkpoint is none, SelectiveAC (per-op) or FullAC "
                                                 "(distributed/activation_checkpoint.py)"),
        block_recompute=Choice((False,), "FullAC wraps every block; the layer-frequency option (selective_ac_option "
                                         "N, distributed/activation_checkpoint.py _apply_layer_sac) wraps every N-th "
                                         "block, not the first of each stage"),
        sequence_parallel=only_with_tp(tp_split, "sequence parallelism splits along the TP group, needs tp > 1"),
        precision=Choice(("fp32", "bf16", "fp8", "mxfp8"),
                         "training.mixed_precision_param is float32 or bfloat16; FP8 and MXFP8 linears and grouped "
                         "experts come from torchao (components/quantization float8.py, mx.py: MXFP8 on CUDA "
                         "capability 10.0 and newer); no fp16 or NVFP4 training mode"),
        grad_dtype=grad_dtypes,
        overlap_dp_comm=Choice((True,), "torchtitan's FSDP2 prefetches the next block's all-gather and reduce-scatters "
                                        "on its own stream during backward, and no setting turns that off "
                                        "(distributed/fsdp.py)"),
        tp_comm_overlap=Choice((False, True) if tp_split else (False,),
                               "torchtitan overlaps TP communication with AsyncTP (compile.enable_async_tensor_"
                               "parallel, with torch.compile and sequence parallel)"),
        zero3_reshard=Choice((True, False), "torchtitan's parallelism.fsdp_reshard_after_forward is always, never "
                                            "or default (keep gathered under pipeline parallelism, free otherwise: "
                                            "distributed/fsdp.py get_fsdp_reshard_after_forward_policy)"),
        weight_casts=Choice(("use",), "torchtitan's Float8 and MXFP8 linears (torchao) cast each weight at every "
                                      "use with dynamic scales (rowwise, or per 32-element block); nothing is "
                                      "cached"),
        projections=Choice(("fused_qkv",), "torchtitan's Llama 3 and gpt-oss configs run Q, K and V as one GEMM "
                                           "(models/llama3/__init__.py fuse_qkv=True, since #3714) and a dense MLP's "
                                           "gate and up as two (models/common/feed_forward.py FeedForward w1, w3)"),
        cross_entropy=Choice(("fused", "eager"),
                             "torchtitan's loss is F.cross_entropy on the logits, compiled in chunks "
                             "(ChunkedLossWrapper, compile.components \"loss\") or eager; it has no Megatron "
                             "vocab-parallel loss: these files write the compiled one"),
        sp_gathered=Choice((True,), "torchtitan's sequence parallel is DTensor's: the all-gather before the "
                                    "column-parallel linears is an autograd op whose output they save"),
        tp_async_grad=Choice((False,), "DTensor's TP reduces a linear's input gradient in the redistribute's own "
                                       "backward, after the linear's backward has computed both gradients, and the "
                                       "norm's backward before it waits for it"),
        optimizer_offload=Choice((False,), "torchtitan's training.enable_cpu_offload (FSDP2 CPUOffloadPolicy, "
                                           "config/configs.py @b5bcd76c) keeps parameters and gradients on the host "
                                           "too and steps the optimizer there: another mechanism, not modelled"),
        grad_sync=Choice(("chunk_end",), "FSDP2 under torch.distributed.pipelining reduce-scatters each stage's "
                                         "gradients once, after its last backward (pipelining/stage.py "
                                         "_post_backward), into new shard storage") if pp_split else
        Choice(("microbatch",), "without a pipeline the trainer runs each micro-batch's backward with the "
                                "gradient sync on (trainer.py calls no set_requires_gradient_sync), so "
                                "data_parallel_replicate all-reduces after every micro-batch"),
        pipeline_buffers=Choice(("per_microbatch",), "torch.distributed.pipelining allocates an activation and a "
                                                     "gradient receive buffer per micro-batch and keeps them "
                                                     "(pipelining/stage.py _prepare_forward_infra)"),
        cp_comm=Choice(("all_gather_saved",), "torchtitan 0.3.0's context parallelism all-gathers keys and values "
                                              "and saves the gathered ones for backward, which reduce-scatters "
                                              "their gradients (FlexAttention's flex_cp_allgather; "
                                              "context_parallel_rotate_method was removed in 8e555444)"),
        attention_kernel=Choice(("flash2",), "torchtitan 0.3.0's Llama 3, Qwen3 and DeepSeek-V3 run FlexAttention's "
                                             "Triton kernels (models/llama3/__init__.py attn_backend \"flex\"; SDPA "
                                             "is refused), a FlashAttention-2-class kernel (85-90% of its speed, Dong "
                                             "et al. 2024, arXiv:2412.05496)"),
    )


# ---- What torchtitan launches: its own model definitions, checked by the emitter -----------------

LOSS_CHUNKS = 8  # components/loss.py ChunkedLossWrapper.Config.num_chunks default


def chunked_loss(plan: cm.Plan) -> bool:
    """Whether torchtitan's launch computes the loss compiled in chunks (ChunkedLossWrapper, compile.components
    "loss"): for every plan but one with the eager loss, the compiled one being its nearest to a Megatron loss
    (Knobs.cross_entropy; emit/readme.py says how to re-score such a plan)."""
    return plan.cross_entropy != "eager"


@dataclass(frozen=True)
class Flavour:
    """One entry of models/<family>/__init__.py (`llama3_configs`, `qwen3_configs`, `deepseekv3_configs`,
    `gptoss_configs`):
    `model_registry(name)` of torchtitan.models.<family> builds it, and the configuration derives from
    `recipe` in models/<family>/config_registry.py (the flavour's own recipe, or the one whose
    tokenizer it shares where it has none), whose hf_assets_path is ./assets/hf/<repo name> of `repo`
    (the Hugging Face repository scripts/download_hf_assets.py fetches; "" = the debug models'
    tokenizer, shipped in the checkout's ./tests/assets/tokenizer). `ffn_hidden_size` None: no dense
    MLP (every layer MoE). `max_seq_len`: the RoPE cache's length, which update_from_config
    (models/common/decoder.py) does not let training.seq_len exceed."""

    family: str
    name: str
    recipe: str
    repo: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    ffn_hidden_size: Optional[int]
    vocab_size: int
    tie_embeddings: bool
    head_dim: int = 0  # 0: hidden_size / heads
    rope_theta: float = 500000.0
    max_seq_len: int = 131072
    qk_norm: str = "none"
    experts: tuple[int, int, int] = (0, 0, 0)  # routed experts, top-k, expert FFN width; (0, 0, 0) = dense
    rope_scaling: str = "none"  # as scaling_text writes a model's
    norm_epsilon: float = 1e-5  # the RMSNorms' (models/common/nn_modules.py RMSNorm.Config default; Qwen3: 1e-6)
    mla: tuple[int, ...] = ()  # latent attention (q_lora_rank, kv_lora_rank, nope, rope, v head dims); () = GQA
    shared_ffn: int = 0  # the shared experts' width together (moe_hidden_dim x num_shared_experts)
    dense_layers: int = 0  # leading layers with the dense feed-forward (n_dense_layers)
    # The flavour's router in the model spec's terms (MoeSpec.router, router_groups, router_group_topk,
    # router_scaling_factor; "" = dense): not a cm.Model field, so the emitter compares it with the spec's
    router: tuple[str, int, int, float] = ("", 0, 0, 1.0)
    # gpt-oss's layers: the clamped, offset gated activation (cm.Model mlp quick_geglu and glu_clamp; the spec's
    # glu_linear_offset, which the emitter compares), biases on every linear layer, a sliding window on every
    # layer but each global_every-th, sinks
    mlp: str = "swiglu"
    glu: tuple[float, float] = (0.0, 0.0)
    linear_bias: bool = False
    attention_window: int = 0
    global_every: int = 0
    sinks: bool = False


# Llama 3 (models/llama3/__init__.py): RMSNorm, SwiGLU, no biases, RoPE theta 500,000 with Llama 3.1
# scaling and max_seq_len 131072, no dropout. FFN sizes worked out from compute_ffn_hidden_dim
# (models/common/feed_forward.py): int(8 dim / 3), times ffn_dim_multiplier, rounded up to multiple_of:
# debug 682 -> 768 (256); 1B 5461 x 1.5 = 8191 -> 8192 (1024); 3B 8192 x 1.0; 8B 10922 x 1.3 = 14198 ->
# 14336 (1024); 70B 21845 x 1.3 = 28398 -> 28672 (4096); 405B 43690 x 1.2 = 52428 -> 53248 (4096).
# The Llama 3.1 scaling every flavour's ComplexRoPE takes (scaling "llama": models/common/rope.py L100-103).
LLAMA31_SCALING = "llama3 x8 (low 1, high 4, original 8192)"
LLAMA3_FLAVOURS = tuple(replace(f, rope_scaling=LLAMA31_SCALING) for f in (
    Flavour("llama3", "debugmodel", "llama3_debugmodel", "", 6, 256, 16, 16, 768, 2048, False),
    Flavour("llama3", "1B", "llama3_8b", "meta-llama/Llama-3.1-8B", 16, 2048, 32, 8, 8192, 128256, True),
    Flavour("llama3", "3B", "llama3_8b", "meta-llama/Llama-3.1-8B", 28, 3072, 24, 8, 8192, 128256, True),
    Flavour("llama3", "8B", "llama3_8b", "meta-llama/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, False),
    Flavour("llama3", "70B", "llama3_70b", "meta-llama/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256, False),
    Flavour("llama3", "405B", "llama3_405b", "meta-llama/Llama-3.1-405B", 126, 16384, 128, 8, 53248, 128256, False),
))

# Qwen3 dense (models/qwen3/__init__.py _0_6b ... _32b, at 4f9e9a47): GQA with head_dim 128 and per-head
# query/key RMSNorms, SwiGLU, RMSNorm eps 1e-6, no biases, CosSinRoPE theta 1e6 and max_seq_len 40960; the
# three smallest tie the embedding and the output layer. Recipes (models/qwen3/config_registry.py):
# qwen3_0_6b, qwen3_1_7b, qwen3_14b, qwen3_32b; 4B and 8B have none and take qwen3_14b's (the same Qwen3
# tokenizer; every field the plan decides is set by planner_job.py).
QWEN3_FLAVOURS = tuple(
    Flavour("qwen3", name, recipe, repo, layers, dim, heads, 8, ffn, 151936, tied, head_dim=128, rope_theta=1e6,
            max_seq_len=40960, qk_norm="learned", norm_epsilon=1e-6)
    for name, recipe, repo, layers, dim, heads, ffn, tied in (
        ("0.6B", "qwen3_0_6b", "Qwen/Qwen3-0.6B", 28, 1024, 16, 3072, True),
        ("1.7B", "qwen3_1_7b", "Qwen/Qwen3-1.7B", 28, 2048, 16, 6144, True),
        ("4B", "qwen3_14b", "Qwen/Qwen3-14B", 36, 2560, 32, 9728, True),
        ("8B", "qwen3_14b", "Qwen/Qwen3-14B", 36, 4096, 32, 12288, False),
        ("14B", "qwen3_14b", "Qwen/Qwen3-14B", 40, 5120, 40, 17408, False),
        ("32B", "qwen3_32b", "Qwen/Qwen3-32B", 64, 5120, 64, 25600, False)))

# Qwen3-MoE (models/qwen3/__init__.py _debugmodel_moe, _30b_a3b, _235b_a22b, at 4f9e9a47): every layer
# MoE (_build_qwen3_moe_layers: softmax router, top-k renormalised, no shared expert, dropless with the
# "standard" all-to-all), RMSNorm eps 1e-6 with per-head query/key RMSNorms, SwiGLU experts, no biases,
# untied. Recipes (models/qwen3/config_registry.py): qwen3_moe_debug, qwen3_30b_a3b; 235B-A22B has
# none and shares 30B-A3B's (the same 151,936-token Qwen3 tokenizer). torchtitan's 235B-A22B sets
# RoPE theta 5,000,000 (Qwen3-235B-A22B-Instruct-2507's), the base model's config.json 1,000,000.
QWEN3_MOE_FLAVOURS = tuple(replace(f, router=("topk_softmax", 0, 0, 1.0)) for f in (
    Flavour("qwen3", "debugmodel_moe", "qwen3_moe_debug", "", 8, 256, 16, 8, None, 2048, False,
            head_dim=128, rope_theta=1e6, max_seq_len=4096, qk_norm="learned", experts=(64, 8, 768),
            norm_epsilon=1e-6),
    Flavour("qwen3", "30B-A3B", "qwen3_30b_a3b", "Qwen/Qwen3-30B-A3B", 48, 2048, 32, 4, None, 151936, False,
            head_dim=128, rope_theta=1e6, max_seq_len=40960, qk_norm="learned", experts=(128, 8, 768),
            norm_epsilon=1e-6),
    Flavour("qwen3", "235B-A22B", "qwen3_30b_a3b", "Qwen/Qwen3-30B-A3B", 94, 4096, 64, 4, None, 151936, False,
            head_dim=128, rope_theta=5e6, max_seq_len=40960, qk_norm="learned", experts=(128, 8, 1536),
            norm_epsilon=1e-6),
))
# DeepSeek-V3 (models/deepseek_v3/__init__.py _debugmodel, _16b, _236b, _671b, at 4f9e9a47): multi-head latent
# attention (kv_lora_rank 512, nope 128 + rope 64 query/key dims, v 128; a query latent from 236B up), the first
# n_dense_layers with a dense SwiGLU feed-forward and the rest MoE with num_shared_experts x moe_hidden_dim shared,
# no biases, RMSNorm eps 1e-5 (RMSNorm.Config's default), untied, ComplexRoPE theta 1e4 with YaRN x40 (original
# 4096) and max_seq_len 16384; every MoE balanced by the expert bias of load_balance_coeff 1e-3
# (config_utils.make_moe_config). Multi-token prediction layers (model_registry num_mtp_layers, MTPLoss) are not
# written by planner: a model with mtp_layers is no flavour here. Recipes (models/deepseek_v3/config_registry.py):
# deepseek_v3_debugmodel, deepseek_v3_16b (tokenizer deepseek-moe-16b-base) and deepseek_v3_671b
# (DeepSeek-V3.1-Base); 236B (DeepSeek-V2's shape) has none and shares 16B's (the same DeepSeek LLM tokenizer).
DSV3_ROPE = "yarn x40"
DEEPSEEK_V3_FLAVOURS = tuple(
    Flavour("deepseek_v3", name, recipe, repo, layers, dim, heads, heads, dense, vocab, False, head_dim=192,
            rope_theta=10000.0, max_seq_len=16384, experts=(experts, top_k, moe), rope_scaling=DSV3_ROPE,
            mla=(q_lora, 512, 128, 64, 128), shared_ffn=moe * shared, dense_layers=first, router=router)
    for name, recipe, repo, layers, dim, heads, dense, vocab, q_lora, experts, top_k, moe, shared, first, router in (
        ("debugmodel", "deepseek_v3_debugmodel", "", 6, 256, 16, 1024, 2048, 0, 8, 3, 256, 2, 1,
         ("softmax_topk", 0, 0, 1.0)),
        ("16B", "deepseek_v3_16b", "deepseek-ai/deepseek-moe-16b-base", 27, 2048, 16, 10944, 102400, 0, 64, 6,
         1408, 2, 1, ("softmax_topk", 0, 0, 1.0)),
        ("236B", "deepseek_v3_16b", "deepseek-ai/deepseek-moe-16b-base", 60, 5120, 128, 12288, 102400, 1536, 160, 6,
         1536, 2, 1, ("softmax_topk", 8, 3, 16.0)),
        ("671B", "deepseek_v3_671b", "deepseek-ai/DeepSeek-V3.1-Base", 61, 7168, 128, 18432, 129280, 1536, 256, 8,
         2048, 1, 3, ("sigmoid", 8, 4, 2.5))))
# gpt-oss (models/gpt_oss/__init__.py _debugmodel, _20b, _120b, at 4f9e9a47): every layer MoE (GptOssMoE: a biased
# softmax router renormalised over its top 4, GptOssGroupedExperts of hidden 2880 with biases and the clamped
# SwiGLU of moe.py swiglu, alpha 1.702, limit 7, (up + 1) x the activated gate), fused and biased QKV, 64 query
# and 8 KV heads of 64 with a learned sink per head, a 128-token sliding window on the even layers, RMSNorm eps 1e-5,
# untied, CosSinRoPE theta 150,000 with YaRN x32 (original 4096) and max_seq_len 131072. Recipes
# (models/gpt_oss/config_registry.py): gpt_oss_debugmodel, gpt_oss_20b, gpt_oss_120b.
GPT_OSS_FLAVOURS = tuple(
    Flavour("gpt_oss", name, recipe, repo, layers, dim, 64, 8, None, vocab, False, head_dim=64, rope_theta=150000.0,
            experts=(experts, 4, 2880), rope_scaling="yarn x32", router=("topk_softmax", 0, 0, 1.0),
            mlp="quick_geglu", glu=(1.0, 7.0), linear_bias=True, attention_window=128, global_every=2, sinks=True)
    for name, recipe, repo, layers, dim, vocab, experts in (
        ("debugmodel", "gpt_oss_debugmodel", "", 4, 256, 2048, 8),
        ("20b", "gpt_oss_20b", "openai/gpt-oss-20b", 24, 2880, 201088, 32),
        ("120b", "gpt_oss_120b", "openai/gpt-oss-120b", 36, 2880, 201088, 128)))
MOE_FLAVOURS = QWEN3_MOE_FLAVOURS + DEEPSEEK_V3_FLAVOURS + GPT_OSS_FLAVOURS
# The learning-rate warm-up steps of each recipe a flavour derives from (models/<family>/config_registry.py
# lr_scheduler, else LRSchedulersContainer.Config's warmup_steps 200: components/optimizer/lr_scheduler.py), which
# planner_job.py keeps: a run of fewer steps is all warm-up (torchtitan shortens it to the steps and warns).
RECIPE_WARMUP_STEPS = {"llama3_debugmodel": 2, "llama3_8b": 200, "llama3_70b": 200, "llama3_405b": 600,
                       "qwen3_0_6b": 2, "qwen3_1_7b": 20, "qwen3_14b": 600, "qwen3_32b": 600, "qwen3_moe_debug": 2,
                       "qwen3_30b_a3b": 600, "deepseek_v3_debugmodel": 2, "deepseek_v3_16b": 200,
                       "deepseek_v3_671b": 2000, "gpt_oss_debugmodel": 2, "gpt_oss_20b": 2000, "gpt_oss_120b": 2000}
FLAVOURS = LLAMA3_FLAVOURS + QWEN3_FLAVOURS + MOE_FLAVOURS


def _experts(model: cm.Model) -> object:
    """The routed experts as the flavours state them, or a line for an MoE torchtitan has no flavour
    of (dense layers between MoE ones, a capacity, the router's weight on the input): compared as a whole.
    Shared experts and leading dense layers are compared apart (Flavour.shared_ffn, dense_layers)."""
    m = model.moe
    if m is None:
        return (0, 0, 0)
    extras = [what for what, has in (("interleaved dense layers", m.layer_freq != 1),
                                     ("a capacity factor", m.capacity_factor),
                                     ("router weights on the input", m.router_probs_on_input)) if has]
    if extras:
        return "routed experts with " + ", ".join(extras)
    return (m.num_experts, m.experts_per_token, m.ffn_hidden_size)


def _fields(model: cm.Model) -> dict[str, object]:
    experts = _experts(model)
    every_layer_moe = model.moe is not None and isinstance(experts, tuple) and not model.moe.first_dense_layers
    moe = model.moe
    return {"num_layers": model.num_layers, "hidden_size": model.hidden_size,
            "num_attention_heads": model.num_attention_heads, "num_kv_heads": model.kv_heads,
            "head_dim": _head_dim(model), "ffn_hidden_size": None if every_layer_moe else model.ffn,
            "vocab_size": model.vocab_size, "tie_embeddings": model.tie_embeddings,
            "rope_theta": model.rope_theta, "normalization": model.normalization, "mlp": model.mlp,
            "position_embedding": model.position_embedding, "rotary_percent": model.rotary_percent,
            "linear_bias": model.linear_bias, "qkv_bias": model.qkv_bias, "dropout": model.dropout,
            "qk_norm": model.qk_norm, "experts": experts, "attention": "mla" if model.mla else "gqa",
            "attention_window": model.attention_window,
            "global_attention_every": model.global_attention_every if model.attention_window else 0,
            "attention_sinks": model.attention_sinks, "glu_clamp": model.glu_clamp,
            "mtp_layers": model.mtp_layers, "rope_scaling": scaling_text(model.rope_scaling),
            "norm_epsilon": model.norm_epsilon, "nope_every": model.nope_every, "mla": _mla(model),
            "shared_ffn": moe.shared_ffn_hidden_size if moe else 0,
            "dense_layers": moe.first_dense_layers if moe else 0}


def _mla(model: cm.Model) -> tuple[int, ...]:
    m = model.mla
    return (m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim) if m else ()


def scaling_text(r: Optional[cm.RopeScaling]) -> str:
    """A model's RoPE scaling as one comparable line ("none" without)."""
    if r is None:
        return "none"
    if r.kind == "llama3":
        return (f"llama3 x{r.factor:g} (low {r.low_freq_factor:g}, high {r.high_freq_factor:g}, "
                f"original {r.original_max_position_embeddings})")
    return f"{r.kind} x{r.factor:g}"


def _head_dim(model: cm.Model) -> int:
    """The query/key head dimension: MLA's nope + rope parts (hidden_size / heads means nothing there)."""
    return model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim if model.mla else model.head_dim


def _flavour_fields(f: Flavour) -> dict[str, object]:
    return {"num_layers": f.num_layers, "hidden_size": f.hidden_size, "num_attention_heads": f.num_attention_heads,
            "num_kv_heads": f.num_kv_heads, "head_dim": f.head_dim or f.hidden_size // f.num_attention_heads,
            "ffn_hidden_size": f.ffn_hidden_size, "vocab_size": f.vocab_size, "tie_embeddings": f.tie_embeddings,
            "rope_theta": f.rope_theta, "normalization": "rmsnorm", "mlp": f.mlp, "position_embedding": "rope",
            "rotary_percent": 1.0, "linear_bias": f.linear_bias, "qkv_bias": False, "dropout": False,
            "qk_norm": f.qk_norm, "experts": f.experts, "attention": "mla" if f.mla else "gqa",
            "attention_window": f.attention_window, "global_attention_every": f.global_every,
            "attention_sinks": f.sinks, "glu_clamp": f.glu[1], "mtp_layers": 0, "rope_scaling": f.rope_scaling,
            "norm_epsilon": f.norm_epsilon, "nope_every": 0, "mla": f.mla, "shared_ffn": f.shared_ffn,
            "dense_layers": f.dense_layers}


def _mismatches(model: cm.Model, f: Flavour) -> list[str]:
    """The fields that differ. A model that states no RoPE scaling is taken on a Llama 3 flavour's
    Llama 3.1 scaling (emit/readme.py says the flavours are Llama 3.1); one that states another is not. A model
    that states no norm epsilon is taken on the flavour's."""
    ours, theirs = _fields(model), _flavour_fields(f)
    if model.rope_scaling is None:
        ours["rope_scaling"] = theirs["rope_scaling"]
    if not model.norm_epsilon:
        ours["norm_epsilon"] = theirs["norm_epsilon"]
    return [f"{k} {_show(ours[k])} (torchtitan {_show(v)})" for k, v in theirs.items() if ours[k] != v]


def _show(value: object) -> str:
    if value is None:  # _fields' dense width of a model whose every layer is MoE
        return "none (every layer MoE)"
    if isinstance(value, tuple) and len(value) == 5:
        return "q_lora {}, kv_lora {}, nope {}, rope {}, v {}".format(*value)
    if isinstance(value, tuple):
        return "none" if not any(value) else "{} experts, top {}, ffn {}".format(*value)
    return f"{value:g}" if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


@lru_cache(maxsize=64)
def match_flavour(model: cm.Model) -> tuple[Optional[Flavour], str]:
    """The flavour with exactly this architecture, or (None, a line naming the closest flavour and each
    field that differs), once per model (the search's rules, family and model_gap ask it for every split).
    Searched: Llama 3, Qwen3, Qwen3-MoE, DeepSeek-V3 (without multi-token prediction) and gpt-oss; torchtitan's
    Llama 4 and Kimi models are not in planner's table, so a model like them is refused here."""
    def distance(f: Flavour) -> tuple[int, int]:
        return len(_mismatches(model, f)), abs(f.hidden_size - model.hidden_size)

    best = min(FLAVOURS, key=distance)
    diff = _mismatches(model, best)
    if not diff:
        return best, ""
    return None, (f"planner's torchtitan flavours (Llama 3, Qwen3, Qwen3-MoE, DeepSeek-V3, gpt-oss; not torchtitan's "
                  f"Llama 4 or Kimi models) have no '{model.name}': the closest, {best.family} flavour "
                  f"{best.name}, differs in " + ", ".join(diff))


def launch_violations(model: cm.Model, plan: cm.Plan) -> list[str]:
    """Rules on the model torchtitan 0.3.0 builds, beyond the search's rules: a flavour of its own,
    models/common/decoder.py update_from_config (seq_len at most the flavour's RoPE max_seq_len),
    components/loss.py ChunkedLossWrapper (seq_len a multiple of num_chunks; the loss of a plan with
    fused cross-entropy)."""
    flavour, why = match_flavour(model)
    out = [why] if flavour is None else []
    limit = flavour.max_seq_len if flavour else max(f.max_seq_len for f in FLAVOURS)
    if model.seq_length > limit:
        which = f"the {flavour.family} {flavour.name}" if flavour else "every flavour's"
        out.append(f"seq_len {model.seq_length} exceeds {which} RoPE max_seq_len {limit}")
    if chunked_loss(plan) and model.seq_length % LOSS_CHUNKS:
        out.append(f"ChunkedLossWrapper splits seq_len {model.seq_length} into {LOSS_CHUNKS} equal chunks "
                   "(components/loss.py); re-plan with a multiple of 8 or --cross-entropy eager")
    return out


def model_gap(model: cm.Model) -> Optional[str]:
    """Framework.model_gap: match_flavour's line when torchtitan has no definition of the model, or the
    flavour's RoPE limit when its sequences are longer (models/common/decoder.py update_from_config refuses a
    seq_len above max_seq_len, whatever the plan), so the search does not offer what emit refuses."""
    flavour, why = match_flavour(model)
    if flavour is None:
        return why or None
    if model.seq_length > flavour.max_seq_len:
        return (f"torchtitan's {flavour.family} {flavour.name} flavour builds sequences up to its RoPE max_seq_len "
                f"{flavour.max_seq_len}, below seq_len {model.seq_length} (models/common/decoder.py "
                "update_from_config)")
    return None


def cuda_graphs_off(plan: cm.Plan) -> bool:
    """trainer.py Trainer.Config._validate_cuda_graphs (graphs are on by default): "CUDA graphs do not
    support pipeline parallelism yet. Set --training.disable_cuda_graphs.", and with expert parallelism
    only a token dispatcher without CPU synchronization may run in them (MinimalAsyncEP, or HybridEP
    with a capacity), not the "standard" AllToAllTokenDispatcher planner's plans use."""
    return plan.pp > 1 or plan.ep > 1


def rocm_async_tp(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """AsyncTP on ROCm: its fused collective matmuls run on PyTorch's symmetric memory, which torchtitan's own
    tests skip on ROCm ("symmetric memory is CUDA-only", tests/integration_tests at b5bcd76, 2026-08-21; its
    ROCm CI was switched off on 2026-07-30, 20f12e3). Float8 runs there (components/quantization/float8.py
    accepts has_rocm_capability((9, 4))); MXFP8 does not (rocm_mxfp8)."""
    if machine.rocm and plan.tp_comm_overlap:
        return ("torchtitan's AsyncTP on AMD GPUs: it runs on symmetric memory, which torchtitan's tests skip on "
                "ROCm as CUDA-only")
    return None


def rocm_mxfp8(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """MXFP8 on AMD GPUs: torchtitan's MXFP8 converters raise unless has_cuda_capability(10, 0)
    (components/quantization/mx.py @ 4f9e9a47), which a ROCm device does not report, though CDNA4's tensor
    cores run MXFP8."""
    if machine.rocm and plan.precision == "mxfp8":
        return "torchtitan's MXFP8 converters need a CUDA device of capability 10.0 or newer (mx.py), not ROCm"
    return None


def grouped_mm_on_device(machine: Machine) -> bool:
    """Whether torchtitan's grouped expert GEMMs read each expert's token count on the GPU (Plan.
    expert_sizes_on_device): models/common/moe.py GroupedExperts passes the offsets of the counts to
    torch._grouped_mm as a device tensor, and without EP the dispatcher reorders the tokens on the GPU
    (token_dispatcher.py, @4f9e9a47), but PyTorch runs that grouped GEMM on the device only on NVIDIA Hopper and
    datacenter Blackwell (aten/src/ATen/native/cuda/GroupedBlas.cpp: the SM90/SM100 kernels, else
    _grouped_mm_fallback, which copies the offsets to the host and loops over the groups), and torchao's FP8 and
    MXFP8 grouped kernels run on those parts only. Elsewhere (Ampere, AMD) each grouped GEMM waits on the host, at
    least what the cost model charges one dispatch (the fallback waits once per grouped GEMM: more)."""
    return machine.generation in ("hopper", "blackwell")


FRAMEWORK = Framework(
    name="torchtitan", title="torchtitan",
    source="torchtitan 0.3.0 (PyPI; pytorch/torchtitan release/0.3 @ 4f9e9a47, 2026-08-21)",
    layout_rules=(sequence_split, moe_flavour, expert_sharding, tied_pipeline, gpt_oss_layout),
    interleaving_rules=(interleaving,),
    knobs=knobs,
    plan_rules=(fsdp_reduce_scatter, fsdp_gather_unit, fused_attention, float8_recipe,
                context_parallel_fsdp, async_tp, megatron_only_settings, experts_sequence_parallel,
                gpt_oss_precision),
    machine_rules=(MachineRule(("tp_comm_overlap",), async_tp_domain),
                   MachineRule(("tp_comm_overlap",), rocm_async_tp),
                   MachineRule(("precision",), rocm_mxfp8),
                   MachineRule(("zero_stage",), experts_borrow_fsdp)),
    model_gap=model_gap,
    expert_sizes_on_device=grouped_mm_on_device,
    attention_kernel_for=varlen_kernel,
)
