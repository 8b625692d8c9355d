"""torchtitan: what it runs and refuses.

Read at torchtitan 0.3.0, the PyPI release that planner emits for (planner/emit/torchtitan.py): its
configuration, trainer, llama3 and distributed files are byte-identical to pytorch/torchtitan
release/0.3 @ 4f9e9a47 (2026-08-21). The layout and knob rules below were first read at main
b5bcd76c (2026-08-21; LC §3.2 of shared/reference/launch-configs.md) and hold at 0.3.0:
torchtitan/distributed/parallel_dims.py, models/llama3/parallelize.py, trainer.py,
distributed/activation_checkpoint.py, distributed/fsdp.py, and torch.distributed.pipelining
(schedules.py, torch 2.13).

`launch_violations` holds the rules on the model torchtitan launches: it builds only its own model
definitions (models/llama3/__init__.py `llama3_configs`), so they are checked when emitting, not in
the search, which scores any architecture.
"""
from __future__ import annotations

from dataclasses import dataclass
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
    """llama3/infra/parallelize.py (LC §3.2): seq_len % (tp * 2 * cp) == 0. (0.3.0's trainer.py asks
    seq_len % (tp with sequence parallelism x 2cp with cp > 1); this older rule is the stricter.) Under
    context parallelism the FlexAttention block mask (torch 2.13 _create_cp_block_mask) also needs
    seq_len divisible by cp x its 128-token block."""
    if model.seq_length % (2 * plan.tp * plan.cp):
        return f"torchtitan: seq_len {model.seq_length} not divisible by 2*tp*cp = {2 * plan.tp * plan.cp}"
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


def tied_pipeline(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """models/common/decoder.py update_from_config: weight tying is not supported with pipeline
    parallelism (the embedding and the output layer would sit on different stages)."""
    if model.tie_embeddings and plan.pp > 1:
        return "torchtitan: weight tying is not supported with pipeline parallelism (models/common/decoder.py)"
    return None


def no_experts(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torchtitan 0.3.0 runs MoE models of its own (models/deepseek_v3, qwen3, gpt_oss, kimi_k2_7;
    parallelism.expert_parallel_degree, no expert tensor parallel), but planner's torchtitan launch
    files build the llama3 model only (planner/emit/torchtitan.py)."""
    if model.moe is not None:
        return ("planner's torchtitan launch files cover its llama3 model only, not torchtitan's MoE models; "
                "use Megatron-LM for MoE models")
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
    does not filter out (filter_fqns names modules, not a count of first/last layers)."""
    if plan.offload_layers:
        return "torchtitan has no activation offload (offload_layers is Megatron-LM's); re-plan without it"
    if plan.lowp_param_gather:
        return "torchtitan 0.3.0 all-gathers parameters in bf16 (no fp8 parameter gather); re-plan without it"
    if plan.bf16_layers_start or plan.bf16_layers_end:
        return ("torchtitan's float8 converter keeps no first/last layers in bf16 (Megatron-LM's "
                "--first-last-layers-bf16); re-plan without them")
    return None


def knobs(tp_split: bool, pp_split: bool) -> Knobs:
    """ZeRO 0 = data_parallel_replicate, ZeRO 3 = data_parallel_shard (FSDP2). Up to v0.2.2 replicate
    (DDP) ran only alone (llama3/infra/parallelize.py: "DDP has not supported > 1D parallelism"); since
    e1847f43 (2026-03-09) it is FSDP2 with a replicate axis and combines with the others (0.3.0
    torchtitan_recipes/tests/features.py llama3_debugmodel_ddp2_cp2). The older, narrower rule stays
    until tests/test_search_space.py::test_knob_sets, which pins it, is updated. With pipeline
    parallelism FSDP2 is scored as ZeRO-1 (`fsdp`)."""
    if pp_split:
        zero = Choice((1,), "torchtitan shards with FSDP2 on data_parallel_shard, which under pipeline parallelism "
                            "keeps weights and gradients unsharded through the step (ZeRO-1; pipelining/stage.py)")
    else:
        zero = Choice((3,) if tp_split else (0, 3), "torchtitan shards with FSDP2 (ZeRO-3) on data_parallel_shard; "
                      "plain DDP (replicate only) cannot be combined with other parallelism (parallelize.py)")
    return Knobs(
        zero_stage=zero,
        recompute=Choice(("none", "op", "full"), "activation_checkpoint is none, SelectiveAC (per-op) or FullAC "
                                                 "(distributed/activation_checkpoint.py)"),
        sequence_parallel=only_with_tp(tp_split, "sequence parallelism splits along the TP group, needs tp > 1"),
        precision=Choice(("fp32", "bf16", "fp8"), "training.mixed_precision_param is float32 or bfloat16; FP8 "
                                                  "linears come from torchao (float8); no fp16 mode"),
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
        weight_casts=Choice(("use",), "torchtitan's Float8 linears (torchao) cast each weight at every use with "
                                      "dynamic rowwise scales; nothing is cached"),
        sp_gathered=Choice((True,), "torchtitan's sequence parallel is DTensor's: the all-gather before the "
                                    "column-parallel linears is an autograd op whose output they save"),
        grad_sync=Choice(("chunk_end",), "FSDP2 under torch.distributed.pipelining reduce-scatters each stage's "
                                         "gradients once, after its last backward (pipelining/stage.py "
                                         "_post_backward), into new shard storage") if pp_split else
        Choice(("microbatch",), "without a pipeline the trainer runs each micro-batch's backward with the "
                                "gradient sync on (trainer.py calls no set_requires_gradient_sync), so "
                                "data_parallel_replicate all-reduces after every micro-batch"),
        pipeline_buffers=Choice(("per_microbatch",), "torch.distributed.pipelining allocates an activation and a "
                                                     "gradient receive buffer per micro-batch and keeps them "
                                                     "(pipelining/stage.py _prepare_forward_infra)"),
        cp_comm=Choice(("all_gather",), "torchtitan 0.3.0's context parallelism all-gathers keys and values "
                                        "(FlexAttention; context_parallel_rotate_method was removed in 8e555444)"),
        attention_kernel=Choice(("flash2",), "torchtitan 0.3.0's Llama 3 runs FlexAttention's Triton kernels "
                                             "(models/llama3/__init__.py attn_backend \"flex\"; SDPA is refused), "
                                             "a FlashAttention-2-class kernel (85-90% of its speed, Dong et al. "
                                             "2024, arXiv:2412.05496)"),
    )


# ---- What torchtitan launches: its own model definitions, checked by the emitter -----------------

ROPE_MAX_SEQ_LEN = 131072  # models/llama3/__init__.py: every flavour's ComplexRoPE max_seq_len
LOSS_CHUNKS = 8  # components/loss.py ChunkedLossWrapper.Config.num_chunks default


@dataclass(frozen=True)
class Flavour:
    """One entry of models/llama3/__init__.py `llama3_configs`: `model_registry(name)` builds it,
    and the configuration derives from `recipe` in models/llama3/config_registry.py (the flavour's
    own recipe, or llama3_8b's for 1B and 3B, which have none and share its 128,256-token tokenizer),
    whose hf_assets_path is `assets` (./assets/hf/<repo>, from meta-llama/<repo>; the debug model's
    tokenizer ships in the checkout, ./tests/assets/tokenizer)."""

    name: str
    recipe: str
    assets: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    ffn_hidden_size: int
    vocab_size: int
    tie_embeddings: bool


# All: RMSNorm, SwiGLU, no biases, RoPE theta 500,000 with Llama 3.1 scaling, no dropout. FFN sizes
# worked out from compute_ffn_hidden_dim (models/common/feed_forward.py): int(8 dim / 3), times
# ffn_dim_multiplier, rounded up to multiple_of: debug 682 -> 768 (256); 1B 5461 x 1.5 = 8191 -> 8192
# (1024); 3B 8192 x 1.0; 8B 10922 x 1.3 = 14198 -> 14336 (1024); 70B 21845 x 1.3 = 28398 -> 28672
# (4096); 405B 43690 x 1.2 = 52428 -> 53248 (4096).
LLAMA3_FLAVOURS = (
    Flavour("debugmodel", "llama3_debugmodel", "", 6, 256, 16, 16, 768, 2048, False),
    Flavour("1B", "llama3_8b", "Llama-3.1-8B", 16, 2048, 32, 8, 8192, 128256, True),
    Flavour("3B", "llama3_8b", "Llama-3.1-8B", 28, 3072, 24, 8, 8192, 128256, True),
    Flavour("8B", "llama3_8b", "Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256, False),
    Flavour("70B", "llama3_70b", "Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256, False),
    Flavour("405B", "llama3_405b", "Llama-3.1-405B", 126, 16384, 128, 8, 53248, 128256, False),
)


def _fields(model: cm.Model) -> dict[str, object]:
    return {"num_layers": model.num_layers, "hidden_size": model.hidden_size,
            "num_attention_heads": model.num_attention_heads, "num_kv_heads": model.kv_heads,
            "ffn_hidden_size": model.ffn, "vocab_size": model.vocab_size, "tie_embeddings": model.tie_embeddings,
            "rope_theta": model.rope_theta, "normalization": model.normalization, "mlp": model.mlp,
            "position_embedding": model.position_embedding, "rotary_percent": model.rotary_percent,
            "linear_bias": model.linear_bias, "qkv_bias": model.qkv_bias, "dropout": model.dropout,
            "qk_norm": model.qk_norm}


def _flavour_fields(f: Flavour) -> dict[str, object]:
    return {"num_layers": f.num_layers, "hidden_size": f.hidden_size, "num_attention_heads": f.num_attention_heads,
            "num_kv_heads": f.num_kv_heads, "ffn_hidden_size": f.ffn_hidden_size, "vocab_size": f.vocab_size,
            "tie_embeddings": f.tie_embeddings, "rope_theta": 500000.0, "normalization": "rmsnorm", "mlp": "swiglu",
            "position_embedding": "rope", "rotary_percent": 1.0, "linear_bias": False, "qkv_bias": False,
            "dropout": False, "qk_norm": "none"}


def _mismatches(model: cm.Model, f: Flavour) -> list[str]:
    ours, theirs = _fields(model), _flavour_fields(f)
    return [f"{k} {_show(ours[k])} (torchtitan {_show(v)})" for k, v in theirs.items() if ours[k] != v]


def _show(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


def match_flavour(model: cm.Model) -> tuple[Optional[Flavour], str]:
    """The llama3 flavour with exactly this architecture, or (None, a line naming the closest
    flavour and each field that differs). torchtitan's other dense models (models/qwen3) have
    query/key norms, which llama3 has not; its MoE models are refused before (no_experts)."""
    def distance(f: Flavour) -> tuple[int, int]:
        return len(_mismatches(model, f)), abs(f.hidden_size - model.hidden_size)

    best = min(LLAMA3_FLAVOURS, key=distance)
    diff = _mismatches(model, best)
    if not diff:
        return best, ""
    return None, (f"torchtitan has no model definition for '{model.name}': the closest, llama3 flavour "
                  f"{best.name}, differs in " + ", ".join(diff))


def launch_violations(model: cm.Model, plan: cm.Plan) -> list[str]:
    """Rules on the model torchtitan 0.3.0 builds, beyond the search's rules: a flavour of its own,
    models/common/decoder.py update_from_config (seq_len at most the RoPE max_seq_len),
    components/loss.py ChunkedLossWrapper (seq_len a multiple of num_chunks; the loss of a plan with
    fused cross-entropy)."""
    flavour, why = match_flavour(model)
    out = [why] if flavour is None else []
    if model.seq_length > ROPE_MAX_SEQ_LEN:
        out.append(f"seq_len {model.seq_length} exceeds the llama3 RoPE max_seq_len {ROPE_MAX_SEQ_LEN}")
    if plan.fused_cross_entropy and model.seq_length % LOSS_CHUNKS:
        out.append(f"ChunkedLossWrapper splits seq_len {model.seq_length} into {LOSS_CHUNKS} equal chunks "
                   "(components/loss.py); re-plan with a multiple of 8 or --eager-loss")
    return out


def cuda_graphs_off(plan: cm.Plan) -> bool:
    """trainer.py Trainer.Config._validate_cuda_graphs: "CUDA graphs do not support pipeline
    parallelism yet. Set --training.disable_cuda_graphs." (graphs are on by default otherwise)."""
    return plan.pp > 1


FRAMEWORK = Framework(
    name="torchtitan", title="torchtitan",
    source="torchtitan 0.3.0 (PyPI; pytorch/torchtitan release/0.3 @ 4f9e9a47, 2026-08-21)",
    layout_rules=(sequence_split, no_experts, tied_pipeline),
    interleaving_rules=(interleaving,),
    knobs=knobs,
    plan_rules=(fsdp_reduce_scatter, fsdp_gather_unit, fused_attention, float8_recipe,
                context_parallel_fsdp, async_tp, megatron_only_settings),
    machine_rules=(MachineRule(("tp_comm_overlap",), async_tp_domain),),
)
