"""Compute time of one transformer layer on one GPU: GEMMs at a shape-dependent efficiency,
attention core, and memory-bound elementwise work at HBM bandwidth.

GEMM time is a roofline (Williams, Waterman & Patterson, CACM 2009): the larger of FLOPs at the
achievable matmul rate and bytes moved at HBM bandwidth. The achievable rate is the generation's
large-GEMM fraction of dense peak (measured maxima, stas00/ml-engineering accelerator table)
times a saturation factor x / (x + x_half) of the smaller output dimension x = min(M, N): the
output tiles are what the SMs share out, so small outputs fill fewer SMs (NVIDIA "Matrix
Multiplication Background User's Guide": wave and tile quantisation). A small inner dimension K
shows up through the roofline instead (few FLOPs per byte of output). FP8 applies to weight GEMMs only; attention runs in
16-bit (as Transformer Engine's default recipe). Backward costs twice forward.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import lowp
from .flops import mlp_matrices, parameters_per_layer, projection_inputs, projection_widths, qkv_out_dim
from .types import DTYPE_BYTES, Efficiency, Gpu, Model


@dataclass(frozen=True)
class LayerTimes:
    """Seconds for one layer and one micro-batch on one GPU."""

    forward_seconds: float
    backward_seconds: float
    attention_forward_seconds: float  # the attention core, which selective recompute replays
    op_replay_seconds: float  # what per-op selective AC replays: every second matmul and the elementwise work
    gemm_forward_seconds: float = 0.0  # the four projections' forward GEMMs (what TP collectives overlap)


def scale_matmul_efficiency(eff: Efficiency, scale: float) -> Efficiency:
    """`eff` with its large-GEMM fraction of peak multiplied by `scale` (a cluster's measured
    compute efficiency relative to the published figures, Cluster.matmul_efficiency_scale)."""
    if scale == 1.0:
        return eff
    return replace(eff, matmul_efficiency_scale=eff.matmul_efficiency_scale * scale)


def power_capped_clock_fraction(power_limit_watts: float, tdp_watts: float) -> float:
    """Sustained clock under a power cap, relative to the GPU at its rated board power (TDP).

    Dynamic CMOS power is P = C V^2 f, and voltage scales about linearly with frequency under
    DVFS, so power goes as f^3 and the clock as the cube root of the power budget (Mudge, "Power:
    a first-class architectural design constraint", IEEE Computer 34(4), 2001). Assumes the
    compute-bound kernels already run at the power limit at TDP (H100 SXM GEMMs throttle at
    700 W) and ignores static power, which would make the cut deeper. Memory bandwidth is not
    clock-bound and stays.
    """
    if power_limit_watts <= 0 or tdp_watts <= 0 or power_limit_watts >= tdp_watts:
        return 1.0
    return (power_limit_watts / tdp_watts) ** (1.0 / 3.0)


def sustained_flops_per_second(gpu: Gpu, precision: str) -> float:
    """Dense peak of `precision` at the GPU's sustained tensor clock."""
    return gpu.peak_flops_per_second(precision) * gpu.tensor_clock_fraction


def large_gemm_fraction(gpu: Gpu, precision: str, eff: Efficiency) -> float:
    """Fraction of the dense peak the largest GEMMs reach: this GPU's measured maximum achievable
    matmul (MAMF, Gpu.matmul_fraction) when the catalog has it, else its generation's value from the
    measured parts of that generation (Efficiency tables). Low-precision formats share the 8-bit
    measurement (MXFP8 and NVFP4 GEMMs run on the same tensor cores at their own peak)."""
    key = "bf16" if precision in ("bf16", "fp16", "fp32") else "fp8"
    if key in gpu.matmul_fraction:
        return gpu.matmul_fraction[key]
    table = eff.matmul_peak_fraction if key == "bf16" else eff.fp8_matmul_peak_fraction
    return table.get(gpu.generation, 0.75)


def gemm_seconds(m: int, n: int, k: int, gpu: Gpu, precision: str, eff: Efficiency) -> float:
    """Roofline time of one (m x k) @ (k x n) GEMM."""
    flops = 2.0 * m * n * k
    x = min(m, n)
    frac = min(1.0, large_gemm_fraction(gpu, precision, eff) * eff.matmul_efficiency_scale) * x / (x + eff.matmul_half_dim)
    compute = flops / (sustained_flops_per_second(gpu, precision) * frac)
    moved = DTYPE_BYTES[precision] * (m * k + k * n) + 2.0 * m * n
    return max(compute, moved / (gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency))


def weight_gemms(model: Model, tokens: int, tp: int) -> list[tuple[int, int, int]]:
    """(m, n, k) of the forward weight GEMMs of one layer under Megatron TP (column then row parallel)."""
    h, f = model.hidden_size, model.ffn
    up_width = (mlp_matrices(model) - 1) * f  # GeLU: f; SwiGLU: fused gate+up, 2f
    return [
        (tokens, qkv_out_dim(model) // tp, h),  # QKV, column parallel
        (tokens, h, h // tp),  # attention output projection, row parallel
        (tokens, up_width // tp, h),  # MLP up (and gate), column parallel
        (tokens, h, f // tp),  # MLP down, row parallel
    ]


def projection_gemms(model: Model, tokens: int, tp: int) -> list[tuple[int, int, int]]:
    """(m, n, k) of each unfused matmul in execution order (see flops.projection_widths); wo and
    the last MLP matrix are row parallel (input split over TP), the others column parallel."""
    widths, inputs = projection_widths(model), projection_inputs(model)
    row_parallel = {3, len(widths) - 1}
    return [(tokens, n, k // tp) if i in row_parallel else (tokens, n // tp, k)
            for i, (k, n) in enumerate(zip(inputs, widths))]


def attention_core_seconds(
    model: Model, batch: int, tp: int, gpu: Gpu, precision: str, flash: bool, eff: Efficiency
) -> float:
    """QK^T and softmax(.)V for `batch` sequences, heads split over TP, in 16-bit (fp32 if training fp32).

    Unfused (pre-FlashAttention Megatron): two batched GEMMs with inner dimension head_dim or s,
    over the whole s x s square (the causal mask is applied, not skipped).
    FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023 Sec 3.1.1): one fused kernel that
    skips the blocks above the causal diagonal, so it does half the 4 b s^2 h FLOPs, at its own
    achieved fraction of the 16-bit peak, which grows with the sequence (`flash_attention_fraction`).
    FLOP counts for MFU still count the full square, as the papers do.
    """
    s, d = model.seq_length, model.head_dim
    heads = max(1, model.num_attention_heads // tp)
    attn_precision = "fp32" if precision == "fp32" else "bf16"
    if flash:
        flops = 0.5 * 4.0 * s * s * d
        return batch * heads * flops / (sustained_flops_per_second(gpu, attn_precision)
                                        * flash_attention_fraction(s, eff))
    scores = gemm_seconds(s, s, d, gpu, attn_precision, eff)
    values = gemm_seconds(s, d, s, gpu, attn_precision, eff)
    return batch * heads * (scores + values)


def flash_attention_fraction(seq_length: int, eff: Efficiency) -> float:
    """FlashAttention's achieved fraction of the 16-bit peak at sequence length s:
    f_max * s / (s + s_half). Each (batch, head) runs a fixed prologue/epilogue and the causal
    diagonal tiles are half masked, costs that shrink against the s^2 work as s grows (the
    FlashAttention-2 paper's throughput rises with sequence length, Dao 2023 Fig. 4-7)."""
    return eff.flash_attention_peak_fraction * seq_length / (seq_length + eff.flash_attention_half_seq)


def attention_score_bytes(model: Model, batch: int, tp: int, flash: bool) -> float:
    """HBM bytes of unfused attention's a*s scores per token (0 with FlashAttention, which keeps
    them on chip): Megatron's fused scale-mask-softmax reads and writes them (2 passes), and with
    dropout the dropout kernel reads, writes and stores a 1-byte mask (2.5 passes), 16-bit each."""
    if flash:
        return 0.0
    passes = 2 + (2.5 if model.dropout else 0)
    heads = model.num_attention_heads / tp
    return 2.0 * batch * model.seq_length * heads * model.seq_length * passes


def eager_extra_bytes_per_token(model: Model) -> float:
    """Extra forward HBM bytes per token and layer when elementwise work runs as separate eager
    PyTorch kernels (as torchtitan runs without torch.compile), over the fused kernels above.

    Counted kernel by kernel from torchtitan's Llama code: RMSNorm upcasts to fp32 and runs
    float(), pow, mean, mul by rsqrt, type_as and the weight product as separate kernels (36 B per
    element against 4 B fused) for each of 2 norms; SwiGLU runs silu and the product apart
    (10 B per f element against 6 B); rotary embeddings on q and k go through fp32 complex
    arithmetic (about 20 B per element against 4 B when compiled).
    """
    h, f = model.hidden_size, model.ffn
    kv = model.kv_heads * model.head_dim
    gated = 4.0 * f if model.gated_mlp else 0.0
    return 2 * (36.0 - 4.0) * h + gated + (20.0 - 4.0) * (h + kv)


def elementwise_bytes(model: Model, batch: int, tp: int, sequence_parallel: bool, flash: bool,
                      fused: bool = True) -> float:
    """HBM bytes read+written by one layer's forward non-GEMM kernels (16-bit activations).

    Per token, in units of 16-bit h-element rows: two norms (read+write 4h), two residual adds
    (6h), the MLP activation (GeLU: read+write f each; SwiGLU: read 2f, write f). Dropout on the
    two block outputs is fused with the residual add (Megatron-LM's bias_dropout_add), so it only
    adds its 1-byte masks (2 x h/2). Without sequence parallel the
    norms, residuals and dropouts are replicated on every TP rank (Korthikanti Sec 4.2.2).
    Plus the attention scores of unfused attention (`attention_score_bytes`), and with
    `fused=False` the extra traffic of eager kernels (`eager_extra_bytes_per_token`).
    """
    h, f, s = model.hidden_size, model.ffn, model.seq_length
    tokens = batch * s
    replicated = 10 * h + (h if model.dropout else 0)
    split = (3 if model.gated_mlp else 2) * f
    divisor = tp if sequence_parallel else 1
    eager = 0.0 if fused else tokens * eager_extra_bytes_per_token(model) / tp
    return 2.0 * tokens * (replicated / divisor + split / tp) + attention_score_bytes(model, batch, tp, flash) + eager


def gemm_input_widths(model: Model, tp: int, sequence_parallel: bool) -> tuple[list[float], list[float]]:
    """Per token on one GPU: the widths of the forward GEMM inputs (QKV, output projection, MLP up,
    MLP down) and of the output gradients their dgrad reads. Column-parallel inputs are the full h,
    or h/tp under sequence parallelism (cast before the all-gather); row-parallel ones are split."""
    h, f = model.hidden_size, model.ffn
    full = h / tp if sequence_parallel else h
    up = (mlp_matrices(model) - 1) * f
    return [full, h / tp, full, f / tp], [qkv_out_dim(model) / tp, full, up / tp, full]


def cast_bytes(model: Model, tokens: int, tp: int, sequence_parallel: bool, precision: str,
               recipe: str) -> tuple[float, float]:
    """(forward, backward) HBM bytes of one layer's casts to a low-precision format for `tokens`
    tokens (costmodel/lowp.py: each input read and written in two layouts; NVFP4's Hadamard pass on
    the wgrad inputs). 0 for 16- and 32-bit training."""
    if not lowp.is_low(precision):
        return 0.0, 0.0
    inputs, grads = gemm_input_widths(model, tp, sequence_parallel)
    per = lowp.cast_bytes_per_element(precision, recipe)
    had = lowp.hadamard_bytes_per_element(precision)
    return tokens * sum(inputs) * per, tokens * (sum(grads) * per + (sum(inputs) + sum(grads)) * had)


def layer_times(
    model: Model, batch: int, tp: int, sequence_parallel: bool, flash: bool,
    gpu: Gpu, precision: str, eff: Efficiency, fused: bool = True, recipe: str = "delayed", weight_casts: str = "step",
) -> LayerTimes:
    """Forward/backward compute seconds of one layer for one micro-batch of `batch` sequences: the four
    projections in `precision` (with its casts, costmodel/lowp.py), attention in 16-bit."""
    tokens = batch * model.seq_length
    gemms = sum(gemm_seconds(m, n, k, gpu, precision, eff) for m, n, k in weight_gemms(model, tokens, tp))
    attn = attention_core_seconds(model, batch, tp, gpu, precision, flash, eff)
    moved = elementwise_bytes(model, batch, tp, sequence_parallel, flash, fused)
    cast_fwd, cast_bwd = cast_bytes(model, tokens, tp, sequence_parallel, precision, recipe)
    if weight_casts == "use" and lowp.is_low(precision):  # the layer's weights cast for fprop, again for dgrad
        weights = (parameters_per_layer(model) - 2 * model.hidden_size) / tp
        per = lowp.weight_cast_bytes_per_param(precision, recipe) / 2.0  # one layout per use
        cast_fwd, cast_bwd = cast_fwd + weights * per, cast_bwd + weights * per
    hbm = gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency
    forward = gemms + attn + (moved + cast_fwd) / hbm
    # FlashAttention's backward recomputes QK^T: 5 matmuls against the forward's 2 (Dao 2023 Alg. 2).
    backward = 2.0 * (gemms + moved / hbm) + cast_bwd / hbm + (2.5 if flash else 2.0) * attn
    # Selective recompute replays the attention core: its GEMMs and, unfused, the softmax/dropout.
    replay = attn + attention_score_bytes(model, batch, tp, flash) / hbm
    op_gemms = projection_gemms(model, tokens, tp)[1::2]  # every second matmul
    op_replay = sum(gemm_seconds(m, n, k, gpu, precision, eff) for m, n, k in op_gemms) + moved / hbm
    return LayerTimes(forward, backward, replay, op_replay, gemms)


def logits_seconds(model: Model, batch: int, tp: int, gpu: Gpu, precision: str, eff: Efficiency) -> float:
    """Forward + backward of the vocabulary projection and cross-entropy on the last stage.

    Low-precision training keeps this GEMM in 16-bit (costmodel/lowp.py): Megatron-core's output layer is a plain
    tensor_parallel.ColumnParallelLinear, not a Transformer Engine module (gpt_model.py), and
    torchtitan's float8 conversion skips it (float8.py module_filter_fn: fqn != "output")."""
    tokens = batch * model.seq_length
    gemm = gemm_seconds(tokens, model.vocab_size // tp, model.hidden_size, gpu, lowp.sixteen_bit(precision), eff)
    loss_bytes = 4.0 * 3 * tokens * model.vocab_size / tp  # fp32 logits: write, softmax read+write
    return 3.0 * gemm + loss_bytes / (gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency)


def optimizer_seconds(params_owned: float, gpu: Gpu, eff: Efficiency) -> float:
    """Mixed-precision Adam update, memory bound: per owned parameter read fp32 param, grad, m, v
    (16 B) and write param, m, v and the 16-bit copy (14 B)."""
    return 30.0 * params_owned / (gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency)
