"""One transformer layer's compute on one GPU for one micro-batch: attention and its projections,
and the MLP, dense or routed (costmodel/moe.py), assembled from compute.py's kernels.

Backward costs twice the forward's GEMMs and elementwise traffic; FlashAttention's backward
recomputes QK^T (5 matmuls against the forward's 2, Dao 2023 Alg. 2). What each recompute mode
replays: Megatron's selective recompute the attention core (Korthikanti Sec 5), torchtitan's per-op
AC every second matmul (torchtitan/distributed/activation_checkpoint.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import moe
from .compute import (
    attention_core_seconds,
    attention_exp_seconds,
    attention_rate_scale,
    attention_score_bytes,
    attention_work,
    block_cast_bytes,
    dense_mlp_work,
    elementwise_bytes_per_second,
    fp8_attention_speedup,
    gemm_seconds,
    gemms_seconds,
    projection_gemms,
    unfused_rope_bytes,
)
from .flops import op_sac_moe_linears
from .types import INSIDE_MOE_MODULE, Efficiency, Gpu, Model


@dataclass(frozen=True)
class LayerTimes:
    """Seconds for one layer and one micro-batch on one GPU."""

    forward_seconds: float
    backward_seconds: float
    attention_forward_seconds: float  # the attention core, which selective recompute replays
    op_replay_seconds: float  # what per-op selective AC replays: every second matmul and the elementwise work
    gemm_forward_seconds: float = 0.0  # the four projections' forward GEMMs (what TP collectives overlap)
    # Forward seconds each selective-recompute module replays (types.RECOMPUTE_MODULES), as pairs.
    module_replay: tuple[tuple[str, float], ...] = ()
    # Mean time left of the compute kernel running at a random instant of the layer's forward and backward
    # (kernel_residual_seconds): how long a collective kernel launched then waits for SMs.
    kernel_residual_seconds: float = 0.0

    def replay_seconds(self, modules: tuple[str, ...]) -> float:
        """What selective recompute of `modules` replays in backward. The moe module's replay holds the
        experts' activation and the shared experts, so beside it moe_act and shared_experts add nothing."""
        table = dict(self.module_replay)
        if "moe" in modules and "moe" in table:
            modules = tuple(m for m in modules if m not in INSIDE_MOE_MODULE)
        return sum(table.get(m, 0.0) for m in modules)


def layer_times(
    model: Model, batch: int, tp: int, sequence_parallel: bool, flash: bool,
    gpu: Gpu, precision: str, eff: Efficiency, fused: bool = True, recipe: str = "delayed", weight_casts: str = "step",
    index: int = -1, cp: int = 1, experts: moe.ExpertLayout | None = None, fp8_attention: bool = False,
    attention_kernel: str = "cudnn", projections: str = "fused", rope_fusion: bool = True, span_cp: int | None = None,
) -> LayerTimes:
    """Forward/backward compute seconds of transformer layer `index` (< 0: a dense global one) for one
    micro-batch of `batch` sequences on one GPU: the projections in `precision` (with its casts,
    costmodel/lowp.py), attention in 16-bit, the MLP dense or, on an MoE layer with `experts`, routed
    (costmodel/moe.py). Under context parallelism the GPU holds s/cp of each sequence. The dense projections
    and MLP run fused or as the stack's separate GEMMs (Plan.projections); casts of an input the separate
    GEMMs share are counted once, as torch.compile's graph CSE leaves them (the stacks that run them separate,
    torchtitan's, run float8 compiled). Without `rope_fusion` (the other kernels fused) RoPE adds its eager
    ops' traffic to both passes (compute.unfused_rope_bytes)."""
    local = replace(model, seq_length=model.seq_length // cp) if cp > 1 else model
    tokens = batch * local.seq_length
    attn_work = attention_work(local, batch, tp, sequence_parallel, flash, fused, projections)
    dense = index < 0 or not model.is_moe_layer(index)
    if dense:
        mlp_work = dense_mlp_work(local, tokens, tp, sequence_parallel, model.ffn, fused, projections)
    else:
        mlp_work = moe.mlp_work(local, tokens, tp, experts or moe.ExpertLayout())
    gemm_kernels = [count * gemm_seconds(m, n, k, gpu, precision, eff)
                    for m, n, k, count in attn_work.gemms + mlp_work.gemms if count and m and n]
    gemms = sum(gemm_kernels)
    attn = attention_core_seconds(model, batch, tp, gpu, precision, flash, eff, index, cp, attention_kernel, span_cp)
    exps = attention_exp_seconds(model, batch, tp, gpu, index, cp) if flash else 0.0
    moved_bytes = attn_work.moved_bytes + mlp_work.moved_bytes
    cast_fwd, cast_bwd = block_cast_bytes([attn_work, mlp_work], precision, recipe, weight_casts, gpu.generation)
    hbm_bytes_per_second = elementwise_bytes_per_second(gpu, eff)
    # FlashAttention's backward recomputes QK^T: 5 matmuls against the forward's 2 (Dao 2023 Alg. 2),
    # and the softmax's exponentials once more; each pass is as slow as the slower of the two.
    forward_scale, backward_scale = attention_rate_scale(gpu, eff) if flash else (1.0, 1.0)
    if fp8_attention:  # measured FP8 over bf16 rates of the same kernel
        fp8_forward, fp8_backward = fp8_attention_speedup(gpu, eff)
        forward_scale, backward_scale = forward_scale * fp8_forward, backward_scale * fp8_backward
    attn_bwd = max((2.5 if flash else 2.0) * attn / backward_scale, exps)
    attn = max(attn / forward_scale, exps)
    rope_fwd, rope_bwd = (0.0, 0.0) if rope_fusion or not fused else unfused_rope_bytes(local, tokens, tp)
    forward = gemms + attn + (moved_bytes + cast_fwd + rope_fwd) / hbm_bytes_per_second
    backward = (2.0 * (gemms + moved_bytes / hbm_bytes_per_second) + (cast_bwd + rope_bwd) / hbm_bytes_per_second
                + attn_bwd)
    # Selective recompute replays the attention core: its GEMMs and, unfused, the softmax/dropout.
    replay = attn + attention_score_bytes(local, batch, tp, flash) / hbm_bytes_per_second
    if dense:  # torchtitan's per-op AC replays every second matmul, as the stack writes them
        op_gemms = [(m, n, k, 1) for m, n, k in projection_gemms(local, tokens, tp, projections)[1::2]]
    else:  # every second linear and every routed expert GEMM (router, experts, shared: moe.mlp_work's order)
        g = mlp_work.gemms
        halve = (lambda x: [(x[0], x[1] // 2, x[2], x[3])] * 2) if model.gated_mlp else None
        op_gemms = op_sac_moe_linears(attn_work.gemms + g[:1], g[3:], halve)[1::2] + g[1:3]
    op_replay = gemms_seconds(op_gemms, gpu, precision, eff) + moved_bytes / hbm_bytes_per_second
    casts = (recipe, weight_casts)
    modules = module_replays(local, tokens, tp, sequence_parallel, dense, attn_work, mlp_work, experts, gpu, precision,
                             eff, casts)
    residual = kernel_residual_seconds(gemm_kernels, attn, attn_bwd, forward + backward)
    return LayerTimes(forward, backward, replay, op_replay, gemms, (("core_attn", replay),) + modules, residual)


def kernel_residual_seconds(gemm_kernel_seconds: list[float], attention_forward_seconds: float,
                            attention_backward_seconds: float, total_seconds: float) -> float:
    """Mean time left of the kernel running at a random instant of a layer's forward and backward: a kernel of
    d seconds is caught with probability d / total and has d / 2 left on average, so sum(d^2) / (2 total)
    (the residual life of renewal theory). The kernels: each GEMM once forward and twice backward (input and
    weight gradients, as long), a grouped expert GEMM as one kernel, the attention core forward and backward;
    the elementwise kernels are short and add to the total only. A collective kernel launched while the
    compute holds every SM waits that long for its blocks to be placed (measured, benchmarks/overlap_contention.py:
    1 ms kernels queued beside the step ran 1.6-1.8x their length)."""
    if total_seconds <= 0:
        return 0.0
    squares = (3 * sum(d * d for d in gemm_kernel_seconds) + attention_forward_seconds ** 2
               + attention_backward_seconds ** 2)
    return squares / (2 * total_seconds)


def module_replays(model: Model, tokens: int, tp: int, sequence_parallel: bool, dense: bool, attn_work, mlp_work,
                   experts, gpu: Gpu, precision: str, eff: Efficiency, casts: tuple[str, str],
                   ) -> tuple[tuple[str, float], ...]:
    """Forward seconds of the other modules Megatron's selective recompute can replay
    (transformer_config.py recompute_modules, Megatron-LM d98e8a64): MLA's up projections (their
    GEMMs), the dense MLP, the whole MoE MLP (moe: router, permutation, experts, shared experts;
    moe_layer.py checkpoints all of it, its token exchanges too, which stage.py counts), the shared
    experts alone, each block's GEMMs, elementwise traffic and input casts as in its forward; the
    experts' activation function (its HBM traffic, moe.py), the two norms (read and write h per token
    each, 16-bit; split over TP under sequence parallelism). `casts` is (fp8 recipe, weight casts)."""
    hbm = elementwise_bytes_per_second(gpu, eff)

    def block(work) -> float:
        return gemms_seconds(work.gemms, gpu, precision, eff) + (
            work.moved_bytes + block_cast_bytes([work], precision, *casts, gpu.generation)[0]) / hbm

    out = []
    if model.mla:
        ups = (1, 3) if model.mla.q_lora_rank else (0, 2)
        out.append(("mla_up_proj", gemms_seconds([attn_work.gemms[i] for i in ups], gpu, precision, eff)))
    if dense:
        out.append(("mlp", block(mlp_work)))
    else:
        out.append(("moe_act", moe.activation_function_bytes(model, tokens, tp, experts or moe.ExpertLayout()) / hbm))
        out.append(("moe", block(mlp_work)))
        if model.moe.shared_ffn_hidden_size:
            out.append(("shared_experts", block(moe.shared_work(model, tokens, tp))))
    norms = 2 * 2.0 * 2 * tokens * model.hidden_size / (tp if sequence_parallel else 1)
    out.append(("layernorm", norms / hbm))
    return tuple(out)
