"""Megatron-LM: what it runs and refuses.

Read at NVIDIA/Megatron-LM d98e8a64 (2026-08-22): megatron/training/arguments.py (validate_args),
megatron/core/transformer/transformer_config.py (TransformerConfig.__post_init__),
megatron/core/transformer/transformer_block.py (get_num_layers_to_build),
megatron/core/pipeline_parallel/schedules.py (interleaved schedule),
megatron/core/distributed/param_and_grad_buffer.py and core/optimizer/distrib_optimizer.py.
Summarised with section numbers in the project's reference shared/reference/launch-configs.md
(LC §2). The emitter (planner/emit/megatron.py) writes these choices as flags.
"""
from __future__ import annotations

from typing import Optional

from costmodel import types as cm
from costmodel.pipeline import chunk_layers
from planner.frameworks.base import Choice, Framework, Knobs, Machine, MachineRule, only_with_tp


def pipeline_layout(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """Megatron-LM's --pipeline-model-parallel-layout for a layer split that
    --decoder-first/last-pipeline-num-layers cannot write (middle stages that differ, or any uneven
    split under interleaving; arguments.py, pipeline_parallel_layer_layout.py): one stage per model
    chunk in chunk order (virtual stage v of rank r is chunk v x pp + r), '|' between them, t*n for n
    transformer layers, E (the embedding) on the first, the MTP layers (m) and the loss (L) on the
    last, as NVIDIA's DeepSeek-V3 recipes write it (Et*4|(t*4|)*14tmL). None otherwise."""
    layers = chunk_layers(model, plan)
    if len(set(layers)) == 1 or (plan.vpp == 1 and len(set(layers[1:-1])) <= 1):
        return None
    stages = [f"t*{n}" if n > 1 else "t" * n for n in layers]
    stages[0] = "E" + stages[0]
    stages[-1] += "m" * model.mtp_layers + "L"
    return "|".join(stages)


def uneven_split(model: cm.Model, plan: cm.Plan) -> Optional[tuple[Optional[int], Optional[int]]]:
    """(first, last) stage layer counts when the split is uneven in the first and last stages only,
    without interleaving, else None; None for a stage that has as many layers as the middle ones
    (Megatron's --decoder-first/last-pipeline-num-layers, written only for the stages that differ;
    other uneven splits are written as a pipeline_layout)."""
    layers = chunk_layers(model, plan)
    if len(set(layers)) == 1 or plan.vpp > 1 or len(set(layers[1:-1])) > 1:
        return None
    first, last, middle = layers[0], layers[-1], layers[1:-1]
    mid = middle[0] if middle else None
    return (None if first == mid else first, None if last == mid else last)


def interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """arguments.py: the interleaved schedule needs pp > 1 (pp > 2 without p2p overlap)."""
    if plan.vpp == 1:
        return None
    least = 2 if plan.overlap_pp_comm else 3
    if plan.pp < least:
        why = "" if plan.overlap_pp_comm else " with --no-overlap-p2p-communication"
        return f"Megatron-LM interleaving (vpp {plan.vpp}) needs pipeline size >= {least}{why} (got {plan.pp})"
    return None


def interleaving_groups(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """schedules.py: the interleaved schedule runs micro-batches in groups of pp, so their number
    must be a multiple of pp."""
    if plan.vpp > 1 and plan.num_microbatches % plan.pp:
        return (f"Megatron-LM interleaving: {plan.num_microbatches} micro-batches are not a multiple of "
                f"pp {plan.pp}")
    return None


def query_groups(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py: num_query_groups must be a multiple or a divisor of tp."""
    groups, tp = model.kv_heads, plan.tp
    if groups % tp and tp % groups:
        return f"Megatron-LM: num_query_groups ({groups}) must be a multiple or divisor of tp ({tp})"
    return None


def position_embedding(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """arguments.py --position-embedding-type: learned_absolute, rope, yarn, mrope, relative or none;
    no ALiBi (BLOOM's Megatron-DeepSpeed fork had it, Megatron-LM does not)."""
    if model.position_embedding == "alibi":
        return "Megatron-LM has no ALiBi position encoding (--position-embedding-type learned_absolute|rope|none|...)"
    return None


# YaRN on multi-latent attention: MLATransformerConfig's fields that Megatron-LM's CLI does not set
# (arguments.py _add_mla_args has --rotary-scaling-factor, --mscale and --mscale-all-dim only;
# transformer_config.py L3315-3330), at their defaults, which are Hugging Face's YaRN defaults too.
MLA_YARN_DEFAULTS = {"original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0}
# Llama 3.1's scaling: Megatron-core takes the factor alone (--rope-scaling-factor); the rest is fixed
# in rotary_pos_embedding.py RotaryEmbedding._apply_scaling.
LLAMA3_FIXED = {"original_max_position_embeddings": 8192, "low_freq_factor": 1.0, "high_freq_factor": 4.0}


def rope_scaling(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """What of RoPE scaling pretrain_gpt.py can launch (arguments.py, argument_utils.py
    _apply_yarn_config_from_args, gpt_model.py): YaRN on grouped or multi-head attention with
    --position-embedding-type yarn and a flag for each parameter, rotating every dimension (its embedding
    builds frequencies over all of kv_channels); YaRN on multi-latent attention with --rotary-scaling-factor,
    --mscale and --mscale-all-dim (both or neither), the rest at MLA_YARN_DEFAULTS and the correction range
    rounded; Llama 3.1's with --use-rope-scaling --rope-scaling-factor and the rest LLAMA3_FIXED; linear
    interpolation with --rotary-seq-len-interpolation-factor, an integer; neither of the last two on
    multi-latent attention, whose RoPE is YaRN's."""
    r = model.rope_scaling
    if r is None:
        return None
    fixed = {"yarn": MLA_YARN_DEFAULTS if model.mla else {}, "llama3": LLAMA3_FIXED, "linear": {}}[r.kind]
    differ = [f"{k} {getattr(r, k):g} (Megatron-LM: {v:g})" for k, v in fixed.items()
              if getattr(r, k) is not None and getattr(r, k) != v]
    if model.mla and r.kind == "yarn" and not r.truncate:
        differ.append("truncate false (Megatron-LM's multi-latent attention rounds YaRN's correction range)")
    if model.mla and r.kind != "yarn":
        differ.append(f"{r.kind} scaling (Megatron-LM's multi-latent attention rescales with YaRN only)")
    if model.mla and r.kind == "yarn" and bool(r.mscale) != bool(r.mscale_all_dim):
        differ.append("one of mscale and mscale_all_dim (Hugging Face then scales cos and sin by its default and "
                      "the softmax by mscale_all_dim alone; Megatron-LM's multi-latent attention by their ratio)")
    if r.kind == "linear" and r.factor != int(r.factor):
        differ.append(f"factor {r.factor:g} (--rotary-seq-len-interpolation-factor takes an integer)")
    if r.kind == "yarn" and not model.mla and model.rotary_percent != 1.0:
        differ.append(f"rotary_percent {model.rotary_percent:g} (its YaRN embedding rotates every dimension: "
                      "yarn_rotary_pos_embedding.py builds its frequencies over kv_channels)")
    if differ:
        return f"Megatron-LM cannot launch this model's {r.kind} RoPE scaling: " + "; ".join(differ)
    return None


def runs_rope_fused(model: cm.Model) -> bool:
    """Whether Megatron-LM applies this model's RoPE with Transformer Engine's fused kernel: not YaRN without
    multi-latent attention, for which arguments.py turns apply_rope_fusion off (--position-embedding-type
    yarn is not rope, L1628-1629) and rope_utils.py apply_rotary_pos_emb would fall back anyway (the fused
    kernel takes no YaRN attention scale, mscale != 1). Multi-latent attention's YaRN keeps its fused
    kernels (multi_latent_attention.py fused_apply_mla_rope_for_q / _for_kv)."""
    return not model.yarn_rope


def rope_fusion(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """A plan must run RoPE as Megatron-LM runs it for the model (runs_rope_fused); unfused is always
    possible (--no-rope-fusion)."""
    if plan.rope_fusion and plan.fused_elementwise and not runs_rope_fused(model):
        return ("Megatron-LM applies YaRN's RoPE unfused without multi-latent attention (arguments.py turns "
                "apply_rope_fusion off unless --position-embedding-type rope): re-plan with --no-rope-fusion")
    return None


def runs_act_prologue(model: cm.Model) -> bool:
    """Whether Megatron-LM runs the routed experts' activation through the prologue of its fused quick-GEGLU
    (cm.Plan.moe_act_prologue): an MoE model with --quick-geglu and linear biases. argument_utils.py gives a
    non-SwiGLU MLP bias_activation_fusion = bias_gelu_fusion, on unless --no-bias-gelu-fusion or without
    --add-bias-linear (arguments.py L1605-1606); the experts' bias_act_func (moe/experts.py, and mlp.py for
    SequentialMLP's experts) then calls weighted_bias_quick_geglu_impl (fusions/fused_bias_geglu.py, the same
    at core_v0.15.0 to core_v0.19.0 and d98e8a64). Without biases the experts take the eager glu() path, whose
    extra traffic is not priced."""
    return model.biased_quick_geglu_experts


def act_prologue(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """A plan runs the experts' activation as Megatron-LM does for the model (runs_act_prologue); and the
    prologue's blocking copy cannot be captured: PyTorch refuses a copy from unpinned host memory during
    capture (aten/src/ATen/native/cuda/Copy.cu), so no whole-iteration graph with it (NVIDIA's graphed
    gpt-oss recipes run Transformer Engine's fused grouped MLP instead, which planner does not price)."""
    runs = runs_act_prologue(model)
    if runs and plan.full_iteration_graph:
        return ("Megatron-LM's fused quick-GEGLU copies its offset from the host at every call, which a "
                "whole-iteration CUDA graph cannot capture (fused_bias_geglu.py): no --cuda-graph-impl full_iteration "
                "for this model")
    if plan.moe_act_prologue != runs:
        return (f"Megatron-LM {'runs' if runs else 'does not run'} the experts' activation through its fused "
                "quick-GEGLU's prologue for this model (moe_act_prologue must be "
                f"{str(runs).lower()}; fused_bias_geglu.py)")
    return None


def activation(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """arguments.py: GELU by default, --swiglu, --squared-relu, --quick-geglu; no plain GeGLU."""
    if model.mlp == "geglu":
        return "Megatron-LM's pretrain_gpt.py has no GeGLU MLP (--swiglu, --squared-relu, --quick-geglu only)"
    return None


def qk_norm(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """--qk-layernorm builds Megatron-core's query and key norms over one head (attention.py SelfAttention:
    hidden_size_per_attention_head). A norm over all heads at once (OLMoE) is another model; Megatron-Bridge
    carries its own attention class for it (models/olmoe/olmoe_provider.py OLMoESelfAttention, read at
    067f987d), which pretrain_gpt.py does not have."""
    if model.qk_norm == "learned_all_heads":
        return ("Megatron-LM's pretrain_gpt.py normalizes queries and keys per head (--qk-layernorm), not over "
                "all heads at once as this model does (OLMoE)")
    return None


def fp8_recipe(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """arguments.py --fp8-recipe: tensorwise, delayed, mxfp8, blockwise (no rowwise)."""
    if plan.precision == "fp8" and plan.fp8_recipe not in ("delayed", "tensorwise", "blockwise"):
        return f"Megatron-LM has no {plan.fp8_recipe} fp8 recipe (--fp8-recipe delayed|tensorwise|blockwise|mxfp8)"
    return None


def attention_backend(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """planner writes context-parallel Megatron plans with --attention-backend fused (emit/megatron.py):
    Transformer Engine's context parallelism with Megatron's sbhd layout runs on cuDNN's fused attention.
    --attention-backend flash turns TE's fused and unfused backends off (language_module.py sets
    NVTE_FUSED_ATTN=0, NVTE_UNFUSED_ATTN=0), and TE's FlashAttention takes no learnable softmax offset
    (TransformerEngine v2.18 dot_product_attention/utils.py get_attention_backend), so a model with
    attention sinks finds no backend at its first forward."""
    if plan.attention_kernel == "flash2" and plan.cp > 1:
        return "planner writes Megatron-LM context parallelism with cuDNN fused attention only (attention kernel cudnn)"
    if plan.attention_kernel == "flash2" and model.attention_sinks:
        return ("Transformer Engine's FlashAttention backend has no attention sinks (--softmax-type learnable): "
                "Megatron-LM with --attention-backend flash finds no attention backend; use attention kernel cudnn")
    return None


def cpu_offloading(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py: CPU offloading not with pipeline parallelism, not with activation
    recomputation (fewer offloaded layers than the model has: a cost-model rule for every stack,
    costmodel/rules.py _offload_rules)."""
    if not plan.offload_layers:
        return None
    if plan.pp > 1 or plan.recompute != "none":
        return "Megatron-LM's CPU activation offloading needs pp 1 and no recompute (transformer_config.py)"
    return None


def fine_grained_offloading(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py (d98e8a64) on --fine-grained-activation-offloading: not with cpu_offloading;
    attn_proj only with core_attn; no expert_fc1 or moe_act offload while the moe module recomputes the
    whole MoE layer; with the MoE layers' Transformer Engine CUDA graphs the norms' inputs cross the graph
    boundaries and stay (docs/user-guide/features/fine_grained_activation_offloading.md, "CUDA Graph
    Integration"). A whole-iteration graph needs --fine-grained-offloading-max-inflight-offloads, which
    the emitter does not write: refused. The EP A2A overlap on the NCCL EP backend (an MXFP8 dispatch) cannot
    offload expert_fc1 (transformer_config.py: its overlap path frees the raw input that offload keeps)."""
    mods = set(plan.offload_modules)
    if not mods:
        return None
    if plan.offload_layers:
        return "Megatron-LM's fine-grained activation offloading cannot run with CPU offloading (transformer_config.py)"
    if "attn_proj" in mods and "core_attn" not in mods:
        return "Megatron-LM offloads attn_proj only together with core_attn (transformer_config.py)"
    if "moe" in plan.replayed_modules and mods & set(cm.MOE_OFFLOAD_MODULES):
        return ("Megatron-LM cannot offload expert_fc1 or moe_act while recomputing the whole MoE layer (the moe "
                "recompute module, transformer_config.py)")
    if plan.moe_cuda_graphs and mods & {"attn_norm", "mlp_norm"}:
        return ("Megatron-LM does not offload attn_norm or mlp_norm with CUDA graphs: they cross the graph "
                "boundaries (fine_grained_activation_offloading.md)")
    if plan.full_iteration_graph:
        return ("planner does not write the in-flight offload cap a whole-iteration CUDA graph needs with "
                "fine-grained activation offloading (--fine-grained-offloading-max-inflight-offloads)")
    if "expert_fc1" in mods and plan.ep_overlap and plan.ep_dispatch == "deepep" and nccl_ep(plan):
        return ("Megatron-LM's EP A2A overlap on the NCCL EP backend (the MXFP8 dispatch) cannot offload expert_fc1 "
                "(transformer_config.py)")
    return None


def lowp_param_gather(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """arguments.py: --fp8-param-gather only with the distributed optimizer or FSDP."""
    if plan.lowp_param_gather and plan.zero_stage == 0:
        return "Megatron-LM keeps fp8/fp4 parameters only with the distributed optimizer (--fp8-param-gather)"
    return None


def distributed_optimizer_reduce(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """param_and_grad_buffer.py: with the distributed optimizer each bucket is reduce-scattered into
    its shard; a full gradient all-reduce is plain DDP (ZeRO 0). Megatron-FSDP (ZeRO 2/3) reduce-scatters too
    and gathers one FSDP unit module, a transformer layer, at a time (distributed/fsdp/mcore_fsdp_adapter.py
    fsdp_unit_modules): the per-tensor gathers and all-reduced gradients of DeepSpeed's 2021 ZeRO-3 are not
    what it runs."""
    if plan.zero_stage >= 1 and plan.grad_reduce == "allreduce":
        return (f"Megatron-LM reduce-scatters gradients at ZeRO {plan.zero_stage} (the distributed optimizer, "
                "Megatron-FSDP); grad_reduce allreduce is DeepSpeed's (use ZeRO 0 for a plain all-reduce)")
    if plan.zero_stage == 3 and plan.zero3_gather_unit == "tensor":
        return ("Megatron-FSDP gathers one transformer layer at a time (fsdp_unit_modules); zero3_gather_unit "
                "tensor is DeepSpeed's 2021 ZeRO-3")
    return None


def moe_sequence_parallel(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """core/transformer/moe/moe_layer.py (ValueError at the first forward): an MoE layer with an
    attention TP group > 1 needs --sequence-parallel (model_parallel_config.py only warns)."""
    if model.moe is not None and plan.tp > 1 and not plan.sequence_parallel:
        return "Megatron-LM's MoE layers with tp > 1 need --sequence-parallel (core/transformer/moe/moe_layer.py)"
    return None


def sequence_parallel_split(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """core/tensor_parallel/mappings.py _split_along_first_dim (sequence parallelism's scatter of the [s, b, h]
    activations, at the first forward) asserts "First dimension of the tensor should be divisible by tensor
    parallel size": each context-parallel rank's s / cp tokens must split over the tp ranks (Transformer Engine's
    userbuffers, --tp-comm-overlap, which needs sequence parallelism, size their buffers the same way). A machine
    rule (base.MachineRule) because it reads the split's own tp and cp beside the knob."""
    if not plan.sequence_parallel or plan.tp == 1:
        return None
    local = model.seq_length // plan.cp
    if local % plan.tp:
        return (f"Megatron-LM's sequence parallelism splits each rank's {local} tokens (seq {model.seq_length} / cp "
                f"{plan.cp}) over tp {plan.tp} ranks, which does not divide them (core/tensor_parallel/mappings.py "
                "asserts)")
    return None


def moe_expert_bias(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py: "Bias in Moe is only supported when ETP==1"."""
    if model.moe is not None and plan.etp > 1 and model.linear_bias:
        return "Megatron-LM supports MoE biases only with expert tensor parallel 1 (transformer_config.py)"
    return None


def nccl_ep(plan: cm.Plan) -> bool:
    """Whether the plan's token dispatch runs on the flex dispatcher's NCCL EP backend: an MXFP8 dispatch
    (Plan.ep_dispatch_dtype), which no other backend sends (transformer_config.py d98e8a64: "require the
    'ncclep' flex dispatcher backend"). The one home of that rule for the checks here and the emitters."""
    return plan.ep_dispatch_dtype != "bf16"


def padded_dispatch(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py __post_init__ (d98e8a64): the flex dispatcher with the DeepEP backend
    refuses moe_pad_expert_input_to_capacity, which a capacity factor is written with (emit); so does
    its NCCL EP backend (token_dispatcher.py _NCCLEPManager: "drop and pad is not supported yet")."""
    if plan.ep_dispatch == "deepep" and model.moe is not None and model.moe.capacity_factor > 0:
        backend, where = ("NCCL EP", "token_dispatcher.py") if nccl_ep(plan) else \
            ("DeepEP", "transformer_config.py")
        return (f"Megatron-LM's {backend} dispatcher does not pad experts to a capacity ({where}); a capacity "
                "factor needs the all-to-all dispatcher")
    return None


def fp8_dispatch(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """Megatron-LM sends tokens to the experts in MXFP8 (--moe-dispatch-fwd-dtype / --moe-combine-bwd-dtype
    mxfp8, transformer_config.py d98e8a64, from #6524) only through the flex dispatcher's NCCL EP backend
    ("require the 'ncclep' flex dispatcher backend"). Experts padded to a capacity: padded_dispatch."""
    if nccl_ep(plan) and model.moe is not None and plan.ep_dispatch != "deepep":
        return ("Megatron-LM sends MXFP8 tokens only through its flex dispatcher (NCCL EP backend, "
                "transformer_config.py): use --ep-dispatch deepep")
    return None


# Per-rank token budget of a flex dispatcher with fixed-size buffers, over the balanced share
# (--moe-expert-rank-capacity-factor): NVIDIA's Megatron-Bridge recipes' value (validation/incoming/
# moe_2025_2026.yaml); under the balanced routing plans are priced with, no token is dropped.
RANK_CAPACITY_FACTOR = 1.5
# The expert activations Transformer Engine's fused grouped MLP takes (experts.py _is_fused_impl_supported:
# gated SiLU or quick GELU; a weighted squared ReLU too, which planner does not write).
OP_FUSER_MLPS = ("swiglu", "quick_geglu")


def rank_budget(model: cm.Model, plan: cm.Plan) -> bool:
    """Whether the flex dispatcher's buffers get a fixed size (RANK_CAPACITY_FACTOR), for CUDA graphs
    to capture them: under the whole-iteration graph (HybridEP or NCCL EP), and NCCL EP under the MoE
    layers' graphs too, whose eager mode sizes its receive buffer per step from a token count on the
    host (token_dispatcher.py _NCCLEPManager: "set for static shapes (fixed receive buffer, CUDA-graph
    capturable ...), unset for eager"). The cost model prices these plans without a host wait
    (costmodel/stage.py host_synced_dispatch)."""
    if model.moe is None or plan.ep_dispatch != "deepep":
        return False
    return plan.full_iteration_graph or (nccl_ep(plan) and plan.moe_cuda_graphs)


def op_fuser(model: cm.Model, plan: cm.Plan) -> bool:
    """Whether the experts run through Transformer Engine's op fuser (--use-transformer-engine-op-fuser),
    which a per-rank token budget needs (transformer_config.py, HybridEP and NCCL EP), and an MXFP8
    dispatch too ("require BOTH use_transformer_engine_op_fuser and moe_grouped_gemm")."""
    return rank_budget(model, plan) or (model.moe is not None and nccl_ep(plan))


def fused_experts(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """experts.py (d98e8a64) asserts _is_fused_impl_supported when the op fuser is on (op_fuser): no
    expert tensor parallelism, an activation it fuses (OP_FUSER_MLPS), the router's probabilities
    applied to the experts' output (the fused MLP does not pre-multiply their input), and neither
    expert_fc1 nor moe_act offloaded ("Selective expert_fc1/moe_act offload is only supported unfused")."""
    if not op_fuser(model, plan):
        return None
    why = "an MXFP8 token dispatch" if nccl_ep(plan) else "a fixed per-rank token budget"
    fuser = f"{why} runs the experts through Transformer Engine's op fuser, which"
    if model.moe.router_probs_on_input:
        return (f"{fuser} does not apply the router's probabilities to the experts' input as this model does "
                "(experts.py)")
    if plan.etp > 1:
        return f"{fuser} Megatron-LM allows without expert tensor parallelism only (experts.py): use etp 1"
    if model.mlp not in OP_FUSER_MLPS:
        return (f"{fuser} Megatron-LM allows with {' or '.join(OP_FUSER_MLPS)} experts only (experts.py), "
                f"not {model.mlp}")
    offloaded = sorted(set(plan.offload_modules) & {"expert_fc1", "moe_act"})
    if offloaded:
        return f"{fuser} Megatron-LM runs without {' or '.join(offloaded)} offloaded only (experts.py)"
    return None


def mtp_position(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """arguments.py: --mtp-num-layers needs --position-embedding-type rope or none, which a YaRN RoPE without
    multi-latent attention is not (it launches as --position-embedding-type yarn: emit/megatron.py)."""
    if not model.mtp_layers:
        return None
    if model.yarn_rope:
        return ("Megatron-LM's multi-token prediction needs RoPE or no position embedding, not YaRN's "
                "--position-embedding-type yarn (arguments.py)")
    if model.position_embedding not in ("rope", "none"):
        return "Megatron-LM's multi-token prediction needs RoPE or no position embedding (arguments.py)"
    return None


def local_attention(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """TransformerConfig.window_size is a sliding window (Transformer Engine); there is no chunked
    local attention. Transformer Engine (context_parallel.py, v2.18) runs a sliding window under
    context parallelism only with the all_gather or a2a exchange."""
    windowed = model.attention_window and model.attention_window < model.seq_length
    if windowed and model.window_kind == "chunked":
        return "Megatron-LM has no chunked local attention (only sliding windows, --window-size)"
    if windowed and plan.cp > 1 and plan.cp_comm not in ("all_gather", "a2a"):
        return (f"Transformer Engine runs sliding-window attention under context parallelism only with cp_comm "
                f"all_gather or a2a (got {plan.cp_comm})")
    return None


def ulysses_even_heads(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """Transformer Engine dot_product_attention/utils.py get_attention_backend (d0067d0 L1272): cp_comm_type
    a2a or a2a+p2p disables the fused (cuDNN) attention unless a TP rank's query heads and KV-head groups are both
    even, and planner writes Megatron-LM's context parallelism with the fused backend only (attention_backend:
    --attention-backend fused), so such a plan finds no backend. Megatron passes a2a+p2p to Transformer Engine
    even when its Ulysses group is one rank. A machine rule on cp_comm: it reads the split's tp and cp
    themselves, which the search's plan rules may not (frameworks/base.py)."""
    if plan.cp <= 1 or plan.cp_comm not in ("a2a", "a2a+p2p"):
        return None
    heads = model.num_attention_heads // plan.tp
    groups = heads if model.mla else (model.num_attention_heads if plan.repeat_kv else model.kv_heads) // plan.tp
    if heads % 2 or groups % 2:
        return (f"Transformer Engine's fused attention runs cp_comm {plan.cp_comm} only with an even number of query "
                f"heads and KV-head groups per TP rank (got {heads} and {groups} at tp {plan.tp}), and planner writes "
                "Megatron-LM's context parallelism with the fused backend only")
    return None


def attention_sinks(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """Transformer Engine context_parallel.py (v2.18): a learnable softmax offset (gpt-oss's sinks,
    --softmax-type learnable) runs under context parallelism only with cp_comm_type a2a."""
    if model.attention_sinks and plan.cp > 1 and plan.cp_comm != "a2a":
        return (f"Transformer Engine runs attention sinks (--softmax-type learnable) under context parallelism only "
                f"with cp_comm a2a (got {plan.cp_comm})")
    return None


def moe_cuda_graphs(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py __post_init__: CUDA graphs of some modules (the MoE router and dispatch
    scopes the emitter writes) refuse full recompute ("only supported with full iteration CUDA graph")
    and CPU offloading ("CUDA graphs not supported with CPU offloading"); and a recompute module may
    not cover a graphed scope: the moe module (the whole MoE layer) with the router graphed ("moe
    recompute is not supported with moe_router CUDA graph")."""
    if plan.moe_cuda_graphs and plan.recompute == "full":
        return "Megatron-LM's MoE CUDA graphs do not run with full recompute (transformer_config.py)"
    if plan.moe_cuda_graphs and "moe" in plan.replayed_modules:
        return ("Megatron-LM does not recompute the moe module with the MoE router CUDA-graphed "
                "(transformer_config.py); drop moe from recompute_modules or the MoE CUDA graphs")
    if plan.moe_cuda_graphs and plan.offload_layers:
        return "Megatron-LM's CUDA graphs do not run with CPU activation offloading (transformer_config.py)"
    return None


def full_iteration_graph(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py (d98e8a64): cuda_graph_impl is one value, so the whole-iteration graph and the
    MoE layers' Transformer Engine graphs (cuda_graph_modules, which must be empty with full_iteration)
    exclude each other. A dropless MoE layer with the all-to-all dispatcher copies its split sizes to the
    host (token_dispatcher.py; moe/README.md: "the resulting dynamic shapes make MoE layers uncapturable"),
    which no captured graph can do (the flex dispatcher runs HybridEP with fixed buffers then: flex_backend).
    And a graphed layer replays no random numbers, so __post_init__ refuses attention dropout with core_attn
    recomputed and hidden dropout with the mlp or moe modules recomputed under a full graph."""
    if not plan.full_iteration_graph:
        return None
    if plan.moe_cuda_graphs:
        return ("Megatron-LM runs one --cuda-graph-impl: full_iteration or the MoE layers' transformer_engine "
                "graphs, not both (transformer_config.py)")
    if model.moe is not None and plan.ep_dispatch == "alltoall" and not model.moe.capacity_factor:
        return ("a dropless MoE layer with the all-to-all dispatcher waits on the host for its split sizes, which "
                "a whole-iteration CUDA graph cannot capture (Megatron-LM moe/README.md)")
    replayed = {"core_attn", "mlp", "moe"} & set(plan.replayed_modules)
    if model.dropout and replayed:
        return (f"Megatron-LM does not recompute {', '.join(sorted(replayed))} with dropout inside a whole-iteration "
                "CUDA graph (graphed recomputation takes no random numbers, transformer_config.py)")
    return None


def bf16_layers(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py __post_init__ (fp8, which mxfp8 is in Megatron): "Delayed scaling does not
    support first / last layer in BF16", and num_layers_at_start/end_in_bf16 each at most
    num_layers // pp. Reads pp itself: the search never sets bf16 layers (an estimate flag), so its
    per-class probe of the plan rules does not meet this one."""
    if not (plan.bf16_layers_start or plan.bf16_layers_end) or plan.precision not in ("fp8", "mxfp8"):
        return None
    if plan.precision == "fp8" and plan.fp8_recipe == "delayed":
        return ("Megatron-LM's fp8 delayed scaling does not keep first/last layers in bf16 (transformer_config.py); "
                "use another fp8 recipe")
    most = model.num_layers // plan.pp
    if max(plan.bf16_layers_start, plan.bf16_layers_end) > most:
        return (f"Megatron-LM keeps at most num_layers // pp = {most} layers in bf16 at each end "
                f"(got {plan.bf16_layers_start},{plan.bf16_layers_end}; transformer_config.py)")
    return None


def graphed_router_layernorm(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_layer.py can_recompute_pre_mlp_layernorm_for_cudagraph: with the MoE router in a CUDA
    graph, an MoE layer recomputes its pre-MLP layernorm only with the all-to-all dispatcher (the flex
    dispatcher returns the norm's output from the graph in a static buffer); otherwise Megatron drops
    that recompute with a warning, and the layer keeps the activation the plan was priced without."""
    if (model.moe is not None and plan.moe_cuda_graphs and plan.ep_dispatch == "deepep"
            and "layernorm" in plan.replayed_modules):
        return ("Megatron-LM does not recompute an MoE layer's pre-MLP layernorm when its router is CUDA-graphed "
                "with the flex (DeepEP) dispatcher (transformer_layer.py); drop layernorm from recompute_modules")
    return None


def delayed_scaling_recompute(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py: "Delayed scaling does not support moe_act and layernorm recompute"."""
    recomputed = {"moe_act", "layernorm"} & set(plan.replayed_modules)
    if plan.precision == "fp8" and plan.fp8_recipe == "delayed" and recomputed:
        return ("Megatron-LM's fp8 delayed scaling does not recompute moe_act or layernorm (transformer_config.py); "
                "use another fp8 recipe")
    return None


def deepep_groups(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """core/transformer/moe/token_dispatcher.py (the flex dispatcher's DeepEP backend): "DeepEP
    dispatcher requires TPxEP > 1", TP being the expert tensor-parallel group."""
    if plan.ep_dispatch == "deepep" and plan.ep * plan.etp <= 1:
        return "Megatron-LM's DeepEP dispatcher needs expert TP x EP > 1 (token_dispatcher.py)"
    return None


def precision_aware_optimizer(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """optimizer/distrib_optimizer.py: the precision-aware optimizer's low-precision states live in
    the distributed optimizer (TE FusedAdam)."""
    if plan.optimizer_states == "bf16" and plan.zero_stage == 0:
        return "Megatron-LM's precision-aware optimizer (bf16 states) needs the distributed optimizer (ZeRO 1)"
    return None


def ep_overlap(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """transformer_config.py (--overlap-moe-expert-parallel-comm): pp 1 or a virtual pipeline; expert
    parallelism (ep > 1); no full recompute, nor the moe module recomputed ("disable moe in
    recompute_modules when enabling overlap_moe_expert_parallel_comm"); at most one MTP layer; MoE only. Under
    Megatron-FSDP (ZeRO 2/3) no per-layer CUDA graphs: distributed/fsdp/mcore_fsdp_adapter.py asserts
    cuda_graph_impl none or full_iteration with the overlap ("1F1B overlap with FSDP does not support per-layer
    CUDA graphs"), where the MoE router and dispatch graphs the emitter writes are transformer_engine's."""
    if not plan.ep_overlap:
        return None
    if model.moe is None:
        return "Megatron-LM's expert-parallel A2A overlap needs MoE layers"
    if plan.ep <= 1:
        return "Megatron-LM's expert-parallel A2A overlap needs expert parallelism (ep > 1)"
    if plan.pp > 1 and plan.vpp == 1:
        return "Megatron-LM's expert-parallel A2A overlap needs pp 1 or a virtual pipeline (vpp > 1)"
    if plan.recompute == "full":
        return "Megatron-LM's expert-parallel A2A overlap does not run with full recompute"
    if "moe" in plan.replayed_modules:
        return ("Megatron-LM's expert-parallel A2A overlap does not run with the moe module recomputed "
                "(transformer_config.py)")
    if model.mtp_layers > 1:
        return "Megatron-LM's expert-parallel A2A overlap allows at most one MTP layer"
    if plan.precision not in ("bf16", "fp16", "fp8", "mxfp8", "nvfp4"):
        return "Megatron-LM's expert-parallel A2A overlap needs a bf16 or fp16 model (transformer_config.py)"
    if megatron_fsdp(plan) and (plan.moe_cuda_graphs or plan.layer_cuda_graphs):
        return ("Megatron-FSDP (ZeRO 2/3) runs the expert-parallel A2A overlap without per-layer CUDA graphs "
                "(distributed/fsdp/mcore_fsdp_adapter.py): drop the MoE CUDA graphs, the overlap or FSDP")
    return None


def tp_overlap_quantizer(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """Transformer Engine (d0067d0d, pytorch/module/base.py fill_userbuffers_buffer_for_all_gather):
    userbuffers gather unquantized, FP8 (delayed or current scaling) and MXFP8 tensors; any other
    quantizer (fp8 blockwise, NVFP4) raises "Unsupported quantizer for Userbuffers" at the first
    forward."""
    blockwise = plan.precision == "fp8" and plan.fp8_recipe == "blockwise"
    if plan.tp_comm_overlap and (plan.precision == "nvfp4" or blockwise):
        what = "fp8 blockwise scaling" if blockwise else "nvfp4"
        return f"Transformer Engine's TP overlap (userbuffers) does not gather {what} tensors (module/base.py)"
    return None


def tp_overlap_mla(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """core/extensions/transformer_engine.py (TELinear): a linear whose userbuffer name is not qkv, proj,
    fc1 or fc2 sets the shared config.tp_comm_overlap to False with a warning, and multi-latent
    attention's projections are named q_down_proj, kv_down_proj, ... (multi_latent_attention.py): the
    overlap the plan is priced with goes off for the layers built after them."""
    if plan.tp_comm_overlap and model.mla is not None:
        return ("Megatron-LM turns TP overlap off for multi-latent attention's projections (their userbuffer "
                "names are not qkv/proj/fc1/fc2; core/extensions/transformer_engine.py)")
    return None


# DeepEP's dispatch and combine configurations by expert group size (deepseek-ai/DeepEP dd758caf, 2026-07,
# deep_ep/buffers/legacy.py get_dispatch_config / get_combine_config; v1.2.1 lacks 48 and 96): any other
# size asserts "Unsupported number of EP ranks". Megatron passes the expert TP x EP group (fused_a2a.py).
DEEPEP_GROUP_SIZES = frozenset({2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144, 160})
# DeepEP README (Requirements, dd758caf): Hopper (SM90) GPUs or architectures with the SM90 PTX ISA.
DEEPEP_GENERATIONS = ("hopper", "blackwell")


def flex_backend(machine: Machine, plan: cm.Plan) -> str:
    """The flex dispatcher's library for Plan.ep_dispatch "deepep", which the cost model prices as one
    crossing per remote NVLink domain, forwarded inside it: DeepEP within 8-GPU NVLink nodes; HybridEP
    where the NVLink domain spans several nodes (GB200/GB300 NVL72), since DeepEP's kernels reach at
    most 8 NVLink peers and send the rest over RDMA (deepseek-ai/DeepEP csrc/kernels/configs.cuh
    NUM_MAX_NVL_PEERS 8). NVIDIA's GB200/GB300 recipes use hybridep (validation/runs.yaml notes). Under a
    whole-iteration CUDA graph HybridEP everywhere: DeepEP's dispatch waits on the host (Megatron-LM
    d98e8a64 fused_a2a.py: "the CPU will wait for GPU's signal to arrive, so this is not compatible with
    CUDA graph"), HybridEP with a per-rank token budget does not (token_dispatcher.py; the emitter writes
    the budget), and NVIDIA's DGX-B300 recipe with that graph runs it on 8-GPU nodes (validation/runs.yaml,
    mbridge-26.06-qwen3-30b-a3b-b300-mxfp8). NCCL EP for an MXFP8 dispatch (Plan.ep_dispatch_dtype), the only
    backend that sends one (transformer_config.py); the cost model prices its exchanges as the other flex
    backends', one crossing per remote NVLink domain (an assumption: no published measurement)."""
    if nccl_ep(plan):
        return "ncclep"
    if plan.full_iteration_graph or machine.nvlink_domain_size > machine.gpus_per_node:
        return "hybridep"
    return "deepep"


def flex_dispatch_machine(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """The flex dispatcher's libraries run on NVIDIA Hopper or newer, with NVLink among a node's GPUs
    and an RDMA network between NVLink domains (DeepEP README, Requirements); DeepEP itself only at the
    expert group sizes it has configurations for (DEEPEP_GROUP_SIZES), NCCL EP (an MXFP8 dispatch) on
    Blackwell and not across a multi-node NVLink domain."""
    if plan.ep_dispatch != "deepep" or model.moe is None:
        return None
    if machine.generation is not None and machine.generation not in DEEPEP_GENERATIONS:
        return f"the flex dispatcher (DeepEP/HybridEP) needs NVIDIA Hopper or newer GPUs, not {machine.generation} " \
               "(DeepEP README)"
    if machine.nvlink_domain_size < machine.gpus_per_node:
        return "the flex dispatcher (DeepEP) needs NVLink between all GPUs of a node (DeepEP README)"
    group, backend = plan.ep * plan.etp, flex_backend(machine, plan)
    if backend == "ncclep" and machine.generation is not None and machine.generation != "blackwell":
        return (f"an MXFP8 token dispatch quantizes with Transformer Engine's MXFP8 recipe, which needs Blackwell "
                f"(compute capability 10.0+), not {machine.generation} (Megatron-LM's NCCL EP tests skip without it)")
    if backend == "ncclep" and machine.nvlink_domain_size > machine.gpus_per_node:
        return ("Megatron-LM documents HybridEP as its only flex backend across a multi-node NVLink domain "
                "(transformer_config.py moe_flex_dispatcher_backend), not NCCL EP, which sends MXFP8 tokens")
    if backend == "deepep" and group not in DEEPEP_GROUP_SIZES:
        return (f"DeepEP has no dispatch configuration for an expert group of {group} ranks (expert TP x EP; sizes "
                f"{', '.join(map(str, sorted(DEEPEP_GROUP_SIZES)))}; deep_ep/buffers/legacy.py)")
    if machine.rdma is False and not machine.nvlink_holds(group):
        return "the flex dispatcher (DeepEP) needs an RDMA network between NVLink domains (DeepEP README)"
    return None


def userbuffers_domain(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """Transformer Engine's userbuffers (--tp-comm-overlap) share their buffers among the TP ranks of one
    node (file descriptors over Unix sockets, userbuffers-host.cpp) or of one multi-node NVLink domain
    (MNNVL, TransformerEngine PR 1470, v2.2): "Tensor-parallel GPUs must be on a single node"
    (examples/pytorch/comm_gemm_overlap/README.md) outside such a domain."""
    if plan.tp_comm_overlap and not machine.nvlink_holds(plan.tp):
        return (f"Transformer Engine's TP overlap (userbuffers) needs the {plan.tp} TP ranks inside one NVLink domain "
                f"({machine.nvlink_domain_size} GPUs)")
    return None


# What Megatron-LM runs on AMD Instinct GPUs, where its Transformer Engine is ROCm's fork (NVIDIA's has no
# ROCm path). Read 2026-12-04: ROCm/TransformerEngine as the file index holds it (030b792, 01b4205, 09a0654:
# copyright 2024-2026, branch and date not recorded), AMD-AGI/Primus fd1eeab (2026-08-22, AMD's training
# framework over Megatron-LM). The flex dispatcher is refused there by flex_dispatch_machine (DeepEP needs NVIDIA
# Hopper or newer; ROCm/DeepEP 92b4ae1, 2026-05-19, is a preliminary port that AMD runs through Primus-Turbo).
ROCM_TE = "ROCm's Transformer Engine fork (ROCm/TransformerEngine)"


def rocm_userbuffers(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """--tp-comm-overlap on ROCm: the fork's userbuffers implement only the ring-exchange overlap ("We have
    only implemented P2P", ROCm/TransformerEngine PR #367, 2026), not the pipelined and bulk overlaps
    Megatron-LM's configuration asks for, and AMD's own MI355X configurations run without it (Primus
    examples/mlperf config_MI355X*.sh: TP_COMM_OVERLAP=False)."""
    if machine.rocm and plan.tp_comm_overlap:
        return (f"--tp-comm-overlap on AMD GPUs: {ROCM_TE} implements only the ring-exchange userbuffers overlap "
                "(PR #367), and AMD's MI355X configurations turn it off (AMD-AGI/Primus examples/mlperf)")
    return None


def rocm_graphs(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """CUDA graphs on ROCm: the fork supports HIP graphs partially (README: "HipGraph, HipTX: partially
    supported"), and AMD documents graph capture of MoE layers only through Primus, in bf16 (Primus
    docs/04-technical-guides/mega-moe.md: FP8 "Not supported ... CUDA-graph capture"); no whole-iteration
    capture is documented there."""
    if machine.rocm and (plan.moe_cuda_graphs or plan.full_iteration_graph):
        return (f"CUDA graphs of the MoE layers or the whole iteration on AMD GPUs: {ROCM_TE} supports HIP graphs "
                "partially, and AMD documents MoE graph capture only in its Primus framework")
    return None


def rocm_fp8_recipe(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """FP8 recipes on ROCm: delayed and current (tensorwise) scaling run on gfx942 (MI300X/MI325X, FNUZ formats)
    and gfx950; MXFP8 on gfx950 only (the catalog gives no MXFP8 rate below MI355X) and behind
    NVTE_ROCM_ENABLE_MXFP8 (the launch files set it); blockwise scaling not at all (quantization.py
    check_fp8_block_scaling_support: "FP8 block scaled gemm not yet supported for ROCm")."""
    if machine.rocm and plan.precision == "fp8" and plan.fp8_recipe == "blockwise":
        return (f"--fp8-recipe blockwise on AMD GPUs: {ROCM_TE} has no block-scaled FP8 GEMM "
                "(check_fp8_block_scaling_support); use delayed or tensorwise")
    return None


def overlap_connections(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """Before Blackwell the two overlaps want opposite CUDA_DEVICE_MAX_CONNECTIONS: TP overlap 1, so that
    the communication kernel is queued before the GEMM it overlaps (NeMo 8cfedd72
    lightning/pytorch/callbacks/megatron_comm_overlap.py), EP overlap more than 1 (Megatron-LM d98e8a64
    core/transformer/moe/README.md, "Requirements for EP A2A Overlap"); arguments.py warns and leaves
    the choice to the user. NVIDIA's H100 MoE recipes run one or the other (validation/runs.yaml)."""
    if plan.tp_comm_overlap and plan.ep_overlap and machine.generation not in (None, "blackwell"):
        return ("before Blackwell, TP overlap needs CUDA_DEVICE_MAX_CONNECTIONS=1 and EP overlap more than 1 "
                "(NeMo megatron_comm_overlap.py, Megatron-LM MoE README): use one of them")
    return None


def fsdp_connections(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """Before Blackwell, tensor and context parallelism want CUDA_DEVICE_MAX_CONNECTIONS=1 (arguments.py
    asserts it for them alone) and Megatron-FSDP asserts it is not 1; with both, arguments.py only warns
    that they "require different CUDA_MAX_CONNECTIONS settings for best performance" and advises against
    using them together. The cost model does not price that conflict, so the pair is not offered there
    (as overlap_connections does for TP and EP overlap)."""
    if megatron_fsdp(plan) and (plan.tp > 1 or plan.cp > 1) and machine.generation not in (None, "blackwell"):
        return ("before Blackwell, Megatron-FSDP (ZeRO-2/3) needs CUDA_DEVICE_MAX_CONNECTIONS other than 1 and "
                "tensor or context parallelism wants 1 (Megatron-LM arguments.py warns against the pair): use "
                "tp 1 and cp 1 with it, or ZeRO-1")
    return None


def max_connections(machine: Machine, plan: cm.Plan) -> Optional[tuple[str, str]]:
    """CUDA_DEVICE_MAX_CONNECTIONS for the plan's launch ("unset", "1" or "32") and why, or None where no rule
    applies (tp 1 and cp 1, not Megatron-FSDP). Megatron-LM d98e8a64 arguments.py: with tp > 1 or cp > 1 it
    asserts "1" before Blackwell, except with --overlap-moe-expert-parallel-comm, where it only warns and the EP
    overlap needs more than 1 (core/transformer/moe/README.md), so 32; Megatron-FSDP asserts it is not 1 and its
    docs unset it (docs/user-guide/features/megatron_fsdp.md), so unset (before Blackwell only at tp 1 and cp 1:
    fsdp_connections refuses the rest); from Blackwell on arguments.py has no rule and NeMo (8cfedd72
    lightning/pytorch/callbacks/megatron_comm_overlap.py) recommends 32, so that streams do not serialise."""
    blackwell = machine.generation == "blackwell"
    split = plan.tp > 1 or plan.cp > 1
    if megatron_fsdp(plan) and not (blackwell and split):
        return "unset", ("Megatron-FSDP asserts this is not 1 (megatron/training/arguments.py) and its docs leave it "
                         "unset.")
    if not split:
        return None
    if blackwell:
        return "32", ("More connections than the default 8, so that streams do not serialise (NeMo's setting on "
                      "Blackwell, where Megatron-LM has no rule).")
    if plan.ep_overlap:
        return "32", ("The expert-parallel A2A overlap needs more than 1 (Megatron-LM MoE README); before Blackwell "
                      "megatron/training/arguments.py then warns instead of asserting 1.")
    return "1", ("Megatron-LM asserts this with tensor or context parallelism before Blackwell "
                 "(megatron/training/arguments.py).")


# Compute capability below 9.0: no CUDA multicast objects, which Transformer Engine's userbuffers use.
PRE_MULTICAST_GENERATIONS = ("volta", "turing", "ampere", "ada")


def userbuffers_without_multicast(machine: Machine) -> bool:
    """Whether Transformer Engine's userbuffers (--tp-comm-overlap) must fall back from CUDA multicast objects
    (compute capability 9.0+ and NVSwitch) to CUDA IPC handles (UB_SKIPMC=1), or initialize_ub asserts
    (examples/pytorch/comm_gemm_overlap/README.md, pytorch/module/base.py @ v2.8): an older GPU, or a node
    whose GPUs an NVSwitch domain does not span."""
    return machine.generation in PRE_MULTICAST_GENERATIONS or machine.nvlink_domain_size < machine.gpus_per_node


def grad_dtypes(precision: str) -> Choice:
    """arguments.py / distributed_data_parallel.py (LC §2.2 rule 9): gradients reduce in fp32, or in
    the 16-bit parameter dtype (--grad-reduce-in-bf16 for bf16 and fp8, whose parameters are bf16;
    --fp16 without --accumulate-allreduce-grads-in-fp32). No int8 gradient reduction exists."""
    half = {"bf16": "bf16", "fp8": "bf16", "mxfp8": "bf16", "nvfp4": "bf16", "fp16": "fp16"}.get(precision)
    allowed = ("fp32", half) if half else ("fp32",)
    return Choice(allowed, f"Megatron-LM reduces {precision} gradients in {' or '.join(allowed)} only")


# Megatron-FSDP's --data-parallel-sharding-strategy per ZeRO stage it runs (arguments.py; docs/user-guide/
# features/megatron_fsdp.md: optim_grads = ZeRO-2, optim_grads_params = ZeRO-3).
FSDP_SHARDING = {2: "optim_grads", 3: "optim_grads_params"}


def megatron_fsdp(plan: cm.Plan) -> bool:
    """Whether Megatron-LM runs the plan's ZeRO stage as Megatron-FSDP (FSDP_SHARDING)."""
    return plan.zero_stage in FSDP_SHARDING


def megatron_fsdp_stages(pp_split: bool) -> Choice:
    """ZeRO 0 is plain DDP, 1 the distributed optimizer (core/optimizer/distrib_optimizer.py), 2 and 3
    Megatron-FSDP (--use-megatron-fsdp, version 1, the default: arguments.py turns the distributed optimizer
    on for it). planner writes Megatron-FSDP as Megatron-LM's own examples (examples/megatron_fsdp: Llama 3 8B,
    DeepSeek-V3) and NVIDIA's Megatron-Bridge Llama 3 70B recipes run it, without pipeline parallelism:
    validate_args does not refuse the pair, but no example or recipe runs it, and version 2 refuses tp, pp
    and cp > 1 (core/distributed/fsdp/mcore_fsdp_adapter.py _validate_config)."""
    if pp_split:
        return Choice((0, 1), "Megatron-LM shards optimizer states with its distributed optimizer (ZeRO-1); planner "
                              "writes Megatron-FSDP (ZeRO-2/3) only without pipeline parallelism, as Megatron-LM's "
                              "examples/megatron_fsdp run it")
    return Choice((0, 1, 2, 3), "Megatron-LM shards optimizer states with its distributed optimizer (ZeRO-1), and "
                                "gradients (ZeRO-2) or parameters too (ZeRO-3) with Megatron-FSDP (--use-megatron-"
                                "fsdp --data-parallel-sharding-strategy optim_grads|optim_grads_params)")


def knobs(tp_split: bool, pp_split: bool) -> Knobs:
    return Knobs(
        zero_stage=megatron_fsdp_stages(pp_split),
        recompute=Choice(("none", "selective", "full"), "Megatron-LM recomputes with --recompute-granularity "
                                                        "selective|full (torchtitan's per-op SAC is not one of them)"),
        sequence_parallel=only_with_tp(tp_split, "Megatron-LM turns --sequence-parallel off at tp 1 (arguments.py)"),
        precision=Choice(("fp32", "bf16", "fp16", "fp8", "mxfp8", "nvfp4"),
                         "Megatron-LM trains in fp32, --bf16, --fp16, --fp8-format with --fp8-recipe "
                         "delayed|tensorwise|blockwise|mxfp8, or --fp4-format e2m1 with --fp4-recipe nvfp4|custom "
                         "(no mxfp4: arguments.py), all through Transformer Engine"),
        grad_dtype=grad_dtypes,
        tp_comm_overlap=Choice((False, True) if tp_split else (False,),
                               "Megatron-LM overlaps TP communication with --tp-comm-overlap (Transformer Engine "
                               "userbuffers), with tensor and sequence parallelism (arguments.py)"),
        ep_dispatch=Choice(("alltoall", "deepep"), "Megatron-LM dispatches tokens with --moe-token-dispatcher-type "
                                                   "alltoall, or flex with the DeepEP/HybridEP library"),
        ep_dispatch_dtype=Choice(("bf16", "mxfp8"), "Megatron-LM sends MXFP8 tokens with --moe-flex-dispatcher-"
                                                    "backend ncclep --moe-dispatch-fwd-dtype mxfp8 "
                                                    "--moe-combine-bwd-dtype mxfp8"),
        moe_cuda_graphs=Choice((False, True), "Megatron-LM graphs the MoE router and dispatch with --cuda-graph-impl "
                                              "transformer_engine --cuda-graph-modules moe_router moe_preprocess"),
        full_iteration_graph=Choice((False, True), "Megatron-LM captures the whole forward-backward with "
                                                   "--cuda-graph-impl full_iteration"),
        layer_cuda_graphs=Choice((False,), "planner writes no per-layer CUDA graphs for Megatron-LM (--cuda-graph-impl "
                                           "local): their memory pools are not priced"),
        rank_order=Choice(("tp-cp-dp-pp", "tp-cp-pp-dp"), "Megatron-LM numbers ranks tp-cp-ep-dp-pp, or "
                                                          "tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping"),
        optimizer_states=Choice(("fp32", "bf16"), "Megatron-LM keeps Adam states in fp32, or bf16 with "
                                                  "--use-precision-aware-optimizer"),
        ep_overlap=Choice((False, True), "Megatron-LM overlaps expert-parallel all-to-alls with "
                                         "--overlap-moe-expert-parallel-comm"),
        cp_comm=Choice(("p2p", "all_gather", "a2a", "a2a+p2p"),
                       "--cp-comm-type is one of p2p, all_gather, a2a, a2a+p2p (Transformer Engine's "
                       "attn_forward_func_with_cp)"),
        attention_kernel=Choice(("cudnn", "flash2"), "Megatron-LM picks Transformer Engine's attention with "
                                                     "--attention-backend fused (cuDNN) or flash (FlashAttention-2)"),
        module_offload=Choice((False, True), "Megatron-LM offloads the inputs of chosen modules with "
                                             "--fine-grained-activation-offloading --offload-modules"),
        optimizer_offload=Choice((False,), "Megatron-LM d98e8a64 (main) has no --offload-optimizer-states: only "
                                           "its dev branch does (#2987, 2026-01-19), which these launch files do "
                                           "not target"),
        cross_entropy=Choice(("vocab_parallel_fused", "vocab_parallel"),
                             "Megatron-LM runs its vocab-parallel cross entropy on an fp32 copy of the logits, "
                             "compiled with --cross-entropy-loss-fusion or eager without; arguments.py refuses "
                             "Transformer Engine's fused loss (--cross-entropy-fusion-impl te: 'disabled due to "
                             "stability issues') and has no eager F.cross_entropy: these files write the compiled "
                             "one"),
        block_recompute=Choice((False, True), "Megatron-LM recomputes the first N layers of each model chunk with "
                                              "--recompute-method block --recompute-num-layers N (recompute.py)"),
        activation_offload=Choice((False,) if pp_split else (False, True),
                                  "Megatron-LM offloads the activations of whole layers with "
                                  "--cpu-offloading-num-layers, without pipeline parallelism (cpu_offloading)"),
    )


FRAMEWORK = Framework(
    name="megatron", title="Megatron-LM", source="NVIDIA/Megatron-LM d98e8a64 (2026-08-22)",
    layout_rules=(interleaving, query_groups, position_embedding, rope_scaling, activation, qk_norm),
    interleaving_rules=(interleaving_groups,),
    knobs=knobs,
    rope_fusion=runs_rope_fused,
    rope_unfused_on_request=True,  # --no-rope-fusion (arguments.py), which emit/megatron.py writes for such a plan
    act_prologue=runs_act_prologue,
    plan_rules=(distributed_optimizer_reduce, fp8_recipe, cpu_offloading, fine_grained_offloading,
                lowp_param_gather,
                moe_sequence_parallel, moe_expert_bias, padded_dispatch, fp8_dispatch, fused_experts, mtp_position,
                local_attention, ep_overlap,
                attention_sinks, moe_cuda_graphs, full_iteration_graph, delayed_scaling_recompute,
                deepep_groups, bf16_layers,
                graphed_router_layernorm, precision_aware_optimizer, attention_backend, tp_overlap_quantizer,
                tp_overlap_mla, rope_fusion, act_prologue),
    machine_rules=(MachineRule(("ep_dispatch", "ep_dispatch_dtype", "full_iteration_graph"), flex_dispatch_machine),
                   MachineRule(("sequence_parallel",), sequence_parallel_split),
                   MachineRule(("cp_comm",), ulysses_even_heads),
                   MachineRule(("tp_comm_overlap",), userbuffers_domain),
                   MachineRule(("tp_comm_overlap", "ep_overlap"), overlap_connections),
                   MachineRule(("zero_stage",), fsdp_connections),
                   MachineRule(("tp_comm_overlap",), rocm_userbuffers),
                   MachineRule(("moe_cuda_graphs", "full_iteration_graph"), rocm_graphs),
                   MachineRule(("precision", "fp8_recipe"), rocm_fp8_recipe)),
)
