"""Memory per GPU: model states under each ZeRO stage, and activations with recompute.

Model states: Rajbhandari et al., "ZeRO" (SC20, arXiv:1910.02054) Sec 3.1 and Table 1: mixed-
precision Adam keeps 2 B of 16-bit weights, 2 B of 16-bit gradients and K = 12 B of optimizer
state (fp32 master weights, momentum, variance) per parameter; stage 1 shards the optimizer
state over Nd data-parallel ranks, stage 2 also the gradients, stage 3 also the weights.

Activations: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
(arXiv:2205.05198) Sec 4, eq. 1-6, generalised here to grouped-query attention, gated MLPs,
FlashAttention and models without dropout by summing the same per-tensor terms (see
`layer_activation_bytes`). In-flight micro-batches per pipeline stage follow Megatron-LM's
1F1B / interleaved warm-up counts.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from . import lowp, moe
from .flops import mlp_matrices, op_sac_moe_split, projection_widths, q_width, qkv_out_dim, value_width
from .types import DTYPE_BYTES, Model


@dataclass(frozen=True)
class StateBytesPerParam:
    parameters: float
    gradients: float
    optimizer_states: float


def state_bytes_per_param(precision: str, grad_dtype: str, recipe: str = "delayed",
                          casts: str = "step", lowp_params: bool = False,
                          optimizer_states: str = "fp32", layouts: int = 2) -> StateBytesPerParam:
    """Bytes per parameter before sharding (ZeRO Sec 3.1: 2 + 2 + K, K = 12 for mixed-precision Adam).

    fp32 training keeps fp32 weights and gradients and Adam's two moments (4 + 4 + 8). Low-precision
    training keeps the 16-bit weights plus their quantized copies in `layouts` layouts (costmodel/lowp.py
    weight_copy_bytes_per_param; two: 2 B for per-tensor fp8, 2.06 B for MXFP8, 1.13 B for NVFP4; one for
    Transformer Engine's per-tensor fp8 on Blackwell, lowp.te_layouts).
    With low-precision parameters (Megatron --fp8/--fp4-param-gather) the 16-bit weights are not
    kept: only the quantized copies (the fp32 master weights are in the optimizer states).
    Gradients are held in their communication dtype; int8 compression happens on the wire only,
    so the buffer stays 16-bit. Megatron's precision-aware optimizer (`optimizer_states` "bf16",
    megatron/core/optimizer/optimizer_config.py) keeps bf16 moments (2 + 2 B) and the fp32 master
    weights as the 16-bit remainder beside the bf16 weights (store_param_remainders), or in full when
    there are no 16-bit weights (low-precision parameters).
    """
    if precision == "fp32":
        return StateBytesPerParam(4.0, 4.0, 8.0)
    grad = 2.0 if grad_dtype == "int8" else float(DTYPE_BYTES[grad_dtype])
    copies = lowp.weight_copy_bytes_per_param(precision, recipe, casts, layouts)
    no_16bit = lowp_params and lowp.is_low(precision)
    if no_16bit and casts == "use":  # torchao's float8 all-gather: the gathered weight is the fp8 tensor
        copies = lowp.weight_bytes_per_element(precision, recipe)
    weights = copies if no_16bit else 2.0 + copies
    optimizer = 12.0 if optimizer_states == "fp32" else 4.0 + (4.0 if no_16bit else 2.0)
    return StateBytesPerParam(weights, grad, optimizer)


def sharded_state_bytes(params: float, per_param: StateBytesPerParam, zero_stage: int, dp: int) -> StateBytesPerParam:
    """Model-state bytes on one GPU holding `params` parameters (its TP/PP share), by ZeRO stage."""
    opt = per_param.optimizer_states * params / (dp if zero_stage >= 1 else 1)
    grad = per_param.gradients * params / (dp if zero_stage >= 2 else 1)
    weights = per_param.parameters * params / (dp if zero_stage >= 3 else 1)
    return StateBytesPerParam(weights, grad, opt)


@lru_cache(maxsize=65536)  # a pure function of hashable inputs that the search asks for many times over
def layer_activation_terms(
    model: Model, batch: int, tp: int, sequence_parallel: bool, recompute: str, flash: bool,
    element_bytes: int = 2, index: int = -1, cp: int = 1, experts: moe.ExpertLayout | None = None,
    modules: tuple[str, ...] = ("core_attn",), gemm_input_bytes: float = 2.0, sp_gathered: bool = False,
    projections: str = "fused", cp_comm: str = "p2p",
) -> tuple[tuple[str, float], ...]:
    """Activation bytes layer `index` (< 0: a dense one) keeps for backward, per micro-batch of `batch`
    sequences, on one GPU, by tensor: ((name, bytes), ...). A tensor that is a module's input is named
    by that module, as Megatron's fine-grained offload names them (types.OFFLOAD_MODULES: attn_norm,
    qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act), so what offload moves is a sum of
    these terms (stage.layer_offloaded_bytes); the rest are mlp_input (the MLP's or MoE layer's input,
    a norm output), dropout_masks, softmax (scores or log-sum-exp), mla_latents, sp_gathered, mlp_act
    and fc2 (a dense MLP's intermediates) and moe.activation_terms' routed ones; layer_input under full
    recompute, saved_ops under per-op recompute (which matmul outputs it keeps depends on `projections`).

    Korthikanti eq. 1 term by term (16-bit tensors, 1-byte dropout masks), for s, b, h:
      attention: norm output 2sbh (QKV input), Q 2sb x query width, K and V 2sb x kv_heads x head_dim
        each, output projection input 2sb x value width, dropout mask sbh; unfused softmax keeps
        2as^2b scores, as^2b mask and 2as^2b dropped-out probabilities (5as^2b); FlashAttention
        keeps only its output (counted as the projection input) and fp32 log-sum-exp (4asb). MLA
        also keeps its query and key/value latents, replicated over TP.
      MLP: input 2sbh, GeLU keeps up-projection output and activation (2sbf + 2sbf); SwiGLU keeps
        gate and up outputs and the product (6sbf); dropout mask sbh. An MoE layer's routed MLP
        instead keeps moe.activation_terms.
      norms: two inputs, 4sbh.
    With f = 4h, MHA, dropout and no flash this is sbh(34 + 5as/h), eq. 1. TP splits all but the
    norm inputs, the QKV and MLP inputs and the dropout masks (10sbh, eq. 2); sequence parallel
    splits those too (eq. 4). Selective recompute of the attention core drops the s^2 terms (eq. 6);
    of MLA's up projections, Q, K and V (the latents stay); of the dense MLP, its intermediates; of
    the experts' activation, their product; of the shared experts, their intermediates; of the whole MoE MLP
    (moe), everything it keeps; of the norms, their outputs (QKV and MLP inputs). Full recompute keeps
    only the layer input, 2sbh (2sbh/t when sequence parallel already shards it). Context parallel
    keeps s/cp of each sequence on a GPU. fp32 training (`element_bytes` 4) doubles every term.
    The inputs of the weight GEMMs (norm outputs, attention output, MLP activation output, MLA
    latents, the routed rows) are kept as `gemm_input_bytes` per element: 2 in 16-bit, the quantized
    copy under Transformer Engine's low precision (its Linear saves the cast input for the weight
    gradient, costmodel/lowp.py quantized_bytes_per_element). Sequence parallel as Megatron runs it
    saves the QKV and MLP inputs as the sequence shard and all-gathers them again in backward
    (tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication); with `sp_gathered`
    (DTensor's sequence parallel, torchtitan: the redistribute to Replicate before the column-parallel
    linears is an ordinary autograd op, so the linears save its gathered output) they are kept whole
    on every TP rank, (1 - 1/t) of them more: both inputs of a dense layer, the QKV input of an MoE one.
    """
    if element_bytes != 2:  # fp32 training keeps 4-byte activations: every tensor term scales
        return tuple((name, b * element_bytes / 2) for name, b in layer_activation_terms(
            model, batch, tp, sequence_parallel, recompute, flash, 2, index, cp, experts, modules,
            sp_gathered=sp_gathered, projections=projections, cp_comm=cp_comm))
    exchange = cp_comm if cp > 1 else "p2p"
    if cp > 1:
        model = replace(model, seq_length=model.seq_length // cp)
    s, h, a = model.seq_length, model.hidden_size, model.num_attention_heads
    sb = float(s * batch)
    sbh = sb * h
    shard = tp if sequence_parallel else 1
    if recompute == "full":
        return (("layer_input", 2.0 * sbh / shard),)
    if recompute == "op":
        if index >= 0 and model.is_moe_layer(index):
            return (("saved_ops", op_sac_moe_activation_bytes(model, batch, tp, sequence_parallel,
                                                              experts or moe.ExpertLayout())),)
        return (("saved_ops", op_sac_activation_bytes(model, batch, tp, sequence_parallel, projections)),)
    replayed = set(modules) if recompute == "selective" else set()
    g = gemm_input_bytes
    norm_output = 0.0 if "layernorm" in replayed else g * sbh / shard
    moe_layer = index >= 0 and model.is_moe_layer(index)
    terms = {"attn_norm": 2.0 * sbh / shard, "mlp_norm": 2.0 * sbh / shard, "qkv_linear": norm_output,
             "mlp_input": norm_output, "dropout_masks": 2.0 * sbh / shard if model.dropout else 0.0,
             "sp_gathered": 0.0, "attn_proj": g * sb * value_width(model) / tp}
    if sp_gathered and sequence_parallel and tp > 1:  # DTensor keeps the norm outputs whole, beyond their shard
        terms["sp_gathered"] = (1 if moe_layer else 2) * norm_output * (tp - 1)
    if model.mla:  # K has the query's width; the latents are replicated over TP
        up = 0.0 if "mla_up_proj" in replayed else 2.0 * sb * (2 * q_width(model) + value_width(model))
        terms["core_attn"] = up / tp
        terms["mla_latents"] = sb * (g * (model.mla.q_lora_rank + model.mla.kv_lora_rank)
                                     + 2.0 * model.mla.qk_rope_head_dim)
    else:  # Q, K, V
        terms["core_attn"] = 2.0 * sb * qkv_out_dim(model) / tp
    terms.update(cp_exchange_terms(model, sb, tp, cp, exchange, "core_attn" in replayed))
    if flash:
        terms["softmax"] = 4.0 * a * s * batch / tp
    elif "core_attn" not in replayed:
        terms["softmax"] = (5.0 if model.dropout else 2.0) * a * s * s * batch / tp
    if moe_layer:  # the moe module checkpoints the whole MoE MLP: only its input (a norm output) stays
        if "moe" not in replayed:
            layout = experts or moe.ExpertLayout()
            terms.update(moe.activation_terms(model, s * batch, tp, layout, "moe_act" in replayed, g,
                                              "shared_experts" in replayed))
    elif "mlp" not in replayed:  # gated: gate and up outputs (16-bit), their product; else fc1 output, activation
        terms["mlp_act"] = (4.0 if mlp_matrices(model) == 3 else 2.0) * sb * model.ffn / tp
        terms["fc2"] = g * sb * model.ffn / tp
    return tuple(terms.items())


def cp_exchange_terms(model: Model, sb: float, tp: int, cp: int, cp_comm: str, replayed: bool) -> dict[str, float]:
    """What a layer's attention keeps for backward beyond Q, K, V and its output under the CP exchange
    (context.py), for `sb` = its s/cp tokens x batch, when core attention is not replayed: all_gather_saved
    keeps the gathered K/V, (cp - 1) more K/V chunks (torch's flex_cp_allgather output, which flex_attention
    saves); a2a and a2a+p2p keep the attention output twice, the head-split one Transformer Engine saves before
    the all-to-all back (AttnFuncWithCPAndQKVOA2A.forward saves out_part, context_parallel.py @d0067d0) beside
    the sequence-split one the output projection saves."""
    if replayed or cp_comm not in ("all_gather_saved", "a2a", "a2a+p2p"):
        return {}
    if cp_comm == "all_gather_saved":
        kv = q_width(model) + value_width(model) if model.mla else 2 * model.kv_heads * model.head_dim  # K, V
        return {"cp_gathered_kv": 2.0 * sb * kv * (cp - 1) / tp}
    return {"cp_attn_out": 2.0 * sb * value_width(model) / tp}


def cp_activation_class(cp_comm: str) -> str:
    """An exchange whose layers keep the same activations as `cp_comm` (cp_exchange_terms): the TE all-gather
    keeps what the ring keeps, a2a+p2p what a2a keeps."""
    return {"all_gather": "p2p", "a2a+p2p": "a2a"}.get(cp_comm, cp_comm)


def layer_activation_bytes(
    model: Model, batch: int, tp: int, sequence_parallel: bool, recompute: str, flash: bool,
    element_bytes: int = 2, index: int = -1, cp: int = 1, experts: moe.ExpertLayout | None = None,
    modules: tuple[str, ...] = ("core_attn",), gemm_input_bytes: float = 2.0, sp_gathered: bool = False,
) -> float:
    """Activation bytes layer `index` (< 0: a dense one) keeps for backward, per micro-batch of `batch`
    sequences, on one GPU: the sum of layer_activation_terms (Korthikanti et al. 2022 eq. 1-6). The
    entry point for one layer; the step's memory sums the same terms through stage.cached_layer_terms,
    which caches them, so this one is not cached."""
    return sum(b for _, b in layer_activation_terms(model, batch, tp, sequence_parallel, recompute, flash,
                                                      element_bytes, index, cp, experts, modules, gemm_input_bytes,
                                                      sp_gathered))


def op_sac_activation_bytes(model: Model, batch: int, tp: int, sequence_parallel: bool,
                            projections: str = "fused") -> float:
    """torchtitan per-op selective AC (torchtitan/distributed/activation_checkpoint.py): saves the
    block input, the attention kernel's output (+ fp32 log-sum-exp) and every odd-numbered matmul
    output in execution order (flops.projection_widths: wq, wv, w1, w2 for a separate Llama; wqkv, w1, w2
    with its QKV fused), 16-bit; everything else is recomputed."""
    tokens = model.seq_length * batch
    saved = sum(w for i, w in enumerate(projection_widths(model, projections)) if i % 2 == 0)
    split = 2.0 * tokens * (saved + model.hidden_size) + 4.0 * model.num_attention_heads * tokens
    return 2.0 * tokens * model.hidden_size / (tp if sequence_parallel else 1) + split / tp


def op_sac_moe_activation_bytes(model: Model, batch: int, tp: int, sequence_parallel: bool,
                                layout: moe.ExpertLayout) -> float:
    """What torchtitan's per-op selective AC keeps of an MoE layer (0.3.0 activation_checkpoint.py; its
    order of linears in flops.op_sac_moe_split): the block input; the outputs of the odd-numbered
    linears (the fused QKV and the router's logits for Qwen3-MoE), 16-bit, each over tp (the router's
    on the tokens/tp a TP rank routes); the attention kernel's output and fp32 log-sum-exp; top-k's
    scores and indices (fp32 and int64 per routed copy); and with ep > 1 the all-to-all outputs
    (all_to_all_single is in its save list): the dispatched rows this GPU's experts take and the
    combined copies of its own tokens, 16-bit. The routed experts' GEMMs and everything elementwise
    are replayed."""
    tokens, h = float(model.seq_length * batch), model.hidden_size
    moe_cfg, own = model.moe, tokens / tp
    linears, _ = op_sac_moe_split(model)
    saved = 2.0 * own * sum(width for _, width, _ in linears[0::2])
    attention = 2.0 * own * value_width(model) + 4.0 * model.num_attention_heads * own
    topk = 12.0 * own * moe_cfg.experts_per_token
    exchanged = 0.0
    if layout.ep > 1:
        exchanged = 2.0 * h * (moe.routed_rows(model, tokens, tp, layout) + own * moe_cfg.experts_per_token)
    return 2.0 * tokens * h / (tp if sequence_parallel else 1) + saved + attention + topk + exchanged


def inflight_microbatches(pp: int, vpp: int, num_microbatches: int, stage: int, extra_warmup: int = 0) -> float:
    """Micro-batches whose activations stage `stage` holds at its peak, in units of a whole
    stage's layers (all its vpp chunks).

    1F1B (Narayanan et al. 2021 Sec 2.2.1): stage r warms up with pp - r forward passes.
    Interleaved: Megatron-LM warms up 2 (pp - r - 1) + (vpp - 1) pp chunk-passes, plus the one in
    progress; each chunk is 1/vpp of the stage. For r = 0 this is pp (1 + (pp-1)/(pp vpp)) whole-stage
    micro-batches, Korthikanti Sec 4.2.3. `extra_warmup` chunk-passes more: Megatron-core's schedule runs
    one more forward before the steady state when it overlaps the expert-parallel all-to-alls with the
    combined 1F1B (pipeline_parallel/schedules.py get_pp_rank_microbatches, overlap_moe_expert_parallel_comm;
    d98e8a64), so each backward has an independent forward beside it.
    """
    if vpp <= 1:
        return float(min(pp - stage, num_microbatches))
    chunks = 2 * (pp - stage - 1) + (vpp - 1) * pp + 1 + extra_warmup
    return min(chunks, num_microbatches * vpp) / vpp


def pipeline_buffer_units(pp: int, vpp: int, num_microbatches: int, stage: int, inflight: float,
                          buffers: str) -> float:
    """Stage-boundary activations (one micro-batch's stage output each) that the pipeline runtime
    holds on stage `stage` besides the layers' own activations.

    "freed": Megatron-core's schedules free each output once sent (deallocate_output_tensor) and a
    received activation is the next stage's input, which the layers' activations already count: 0.
    (DeepSpeed's pipeline engine keeps each in-flight output as a 1/tp partition, pipe_partitioned;
    not counted.)
    "per_microbatch": torch.distributed.pipelining (pipelining/stage.py, PipelineStage.
    _prepare_forward_infra and _create_grad_recv_info, read at pytorch 0138610; torchtitan's
    pipeline) allocates, for each of its vpp chunks, an activation receive buffer per micro-batch
    (not on the first chunk of the model) and a gradient receive buffer per micro-batch (not on the
    last), once, and keeps them; each chunk also caches its output until that micro-batch's
    backward (fwd_cache). Of the inflight x vpp chunk-passes in flight, the received inputs are
    already counted as layer inputs and the cached outputs are extra; spread evenly over the chunks
    (exact at vpp 1: first stage m + f, middle 2m, last m - f for m micro-batches and f in flight).
    The last stage also keeps every micro-batch's output, the logits, for the schedule's merge at the
    end of the step (output_chunks): last_stage_kept_logits_bytes.
    """
    if pp <= 1 or buffers == "freed":
        return 0.0
    first, last = int(stage == 0), int(stage == pp - 1)
    passes = inflight * vpp
    received = num_microbatches * (vpp - first) - passes * (vpp - first) / vpp
    grads = num_microbatches * (vpp - last)
    outputs = passes * (vpp - last) / vpp
    return received + grads + outputs


def first_stage_extra_bytes(model: Model, batch: int, tp: int, inflight: float) -> float:
    """Embedding output dropout mask per in-flight micro-batch: sbh/t (Korthikanti Sec 4.3)."""
    if not model.dropout:
        return 0.0
    return inflight * model.seq_length * batch * model.hidden_size / tp


def last_stage_kept_logits_bytes(model: Model, batch: int, tp: int, num_microbatches: int, buffers: str,
                                 element_bytes: int = 2) -> float:
    """torch.distributed.pipelining's last stage appends each micro-batch's output to output_chunks
    (stage.py forward_one_chunk) and keeps it until the step's outputs are merged: m x the 16-bit
    logits, split over tp (vocab-parallel loss). Nothing under "freed" pipeline buffers."""
    if buffers == "freed":
        return 0.0
    return num_microbatches * element_bytes * model.seq_length * batch * model.vocab_size / tp


def last_stage_extra_bytes(model: Model, batch: int, tp: int, cross_entropy: str = "vocab_parallel_fused",
                           element_bytes: int = 2) -> float:
    """Final norm and output-layer inputs (2 x element_bytes x sbh/t: 4sbh/t in 16-bit) and the loss's
    logits buffers.

    Megatron's vocab-parallel cross entropy, eager or compiled, keeps one fp32 copy of the logits, 4sbV/t
    (Korthikanti Sec 4.3; Megatron-LM's vocab_parallel_cross_entropy works in place on it). The fused kernels
    over the 16-bit logits (Plan.cross_entropy "fused") are held to the same 4sbV/t: Transformer Engine's
    (v2.1-v2.17) writes the gradient over its 16-bit input (2sbV/t), from v2.18 into an fp32 tensor beside it
    (6sbV/t), and torchtitan's compiled loss is not counted apart. An eager
    `F.cross_entropy(logits.float())` (torchtitan at 9dec370, train.py loss_fn, with compiling the
    loss disabled) holds three fp32 logit-sized tensors when backward starts, while every layer's
    activations are still alive: the saved log-softmax output, the NLL gradient and the
    log-softmax input gradient, 12sbV/t. With the logits split over tp (> 1) that eager loss is DTensor's
    loss parallel (torch/distributed/tensor/parallel/loss.py, torchtitan's default under TP), whose nll-loss
    backward does the log-softmax backward too, as eager ops on the local shard:
    `(zeros_like(x) with -1 scattered at the targets + exp(x)) * grad_output`, which at its peak holds the
    saved output x, the scattered zeros, exp(x) and their sum: four fp32 logit-sized tensors, 16sbV/t.
    """
    sb = model.seq_length * batch
    logits_bytes = (16.0 if tp > 1 else 12.0) if cross_entropy == "eager" else 4.0
    return 2.0 * element_bytes * sb * model.hidden_size / tp + logits_bytes * sb * model.vocab_size / tp
