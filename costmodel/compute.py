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
from .flops import (
    attention_keys_per_query,
    attention_parameters,
    fuses_gate_up,
    fuses_qkv,
    kv_width,
    mla_down_parameters,
    mla_projections,
    mlp_matrices,
    projection_inputs,
    projection_widths,
    q_width,
    qkv_out_dim,
    value_width,
)
from .types import DTYPE_BYTES, Efficiency, Gpu, Model


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


def elementwise_bytes_per_second(gpu: Gpu, eff: Efficiency) -> float:
    """The HBM rate memory-bound kernels reach (elementwise, norms, casts, the optimizer): the GPU's peak
    bandwidth times the fitted Efficiency.hbm_efficiency."""
    return gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency


def large_gemm_fraction(gpu: Gpu, precision: str, eff: Efficiency) -> float:
    """Fraction of the dense peak the largest GEMMs reach: this GPU's measured maximum achievable
    matmul (MAMF, Gpu.matmul_fraction) when the catalog has it, else its generation's value from the
    measured parts of that generation (Efficiency tables). Low-precision formats share the 8-bit
    measurement (MXFP8 and NVFP4 GEMMs run on the same tensor cores at their own peak). Where neither the
    GPU nor its generation has a low-precision measurement (the AMD parts), the GPU's bf16 fraction stands
    for it: the same share of its low-precision peak, as the measured Blackwell parts nearly reach (fp8
    0.744 against bf16 0.764; Hopper's fp8 is lower, 0.709 against 0.803). A GPU with no measurement of its
    own in a generation the table lacks has no basis (planner's GPU spec refuses it)."""
    key = "bf16" if precision in ("bf16", "fp16", "fp32") else "fp8"
    if key in gpu.matmul_fraction:
        return gpu.matmul_fraction[key]
    if key == "fp8" and gpu.generation not in eff.fp8_matmul_peak_fraction:
        return large_gemm_fraction(gpu, "bf16", eff)
    table = eff.matmul_peak_fraction if key == "bf16" else eff.fp8_matmul_peak_fraction
    if gpu.generation not in table:
        raise ValueError(f"gpu {gpu.name}: no measured GEMM rate for it or its generation {gpu.generation!r}")
    return table[gpu.generation]


def gemm_seconds(m: int, n: int, k: int, gpu: Gpu, precision: str, eff: Efficiency) -> float:
    """Roofline time of one (m x k) @ (k x n) GEMM (Williams et al. 2009, "Roofline", CACM 52(4)): the slower of
    its FLOPs at the achieved fraction of the sustained peak and its bytes at the elementwise HBM rate. The
    fraction is the large-GEMM one (large_gemm_fraction) times x / (x + matmul_half_dim), x = min(m, n): small
    output dimensions fill fewer tiles and waves (a saturation law whose half point is fitted, Efficiency).
    Assumes each operand read once in `precision` and a 16-bit output written once; k sets only the FLOPs."""
    flops = 2.0 * m * n * k
    x = min(m, n)
    frac = min(1.0, large_gemm_fraction(gpu, precision, eff) * eff.matmul_efficiency_scale) * x / (x + eff.matmul_half_dim)
    compute = flops / (sustained_flops_per_second(gpu, precision) * frac)
    moved = DTYPE_BYTES[precision] * (m * k + k * n) + 2.0 * m * n
    return max(compute, moved / elementwise_bytes_per_second(gpu, eff))


Gemm = tuple  # (m, n, k, count): `count` GEMMs of (m x k) @ (k x n)


def attention_gemms(model: Model, tokens: int, tp: int, fused: bool = True) -> list[Gemm]:
    """Forward GEMMs of one layer's attention projections under Megatron TP: fused QKV column
    parallel (or, not `fused`, Q, K and V as three column-parallel GEMMs: Plan.projections),
    output projection row parallel. MLA (Megatron-core multi_latent_attention.py): the
    down projections to the latents are replicated on every TP rank, the up projections column
    parallel."""
    h = model.hidden_size
    out = (tokens, h, value_width(model) // tp, 1)
    if not model.mla and not fused:
        kv = kv_width(model)
        return [(tokens, q_width(model) // tp, h, 1), (tokens, kv // tp, h, 2), out]
    if not model.mla:
        return [(tokens, qkv_out_dim(model) // tp, h, 1), out]
    (q_in, q_out), *rest = mla_projections(model)
    if model.mla.q_lora_rank:
        q_up, kv_down, kv_up = rest
        gemms = [(tokens, q_out, q_in, 1), (tokens, q_up[1] // tp, q_up[0], 1)]
    else:
        kv_down, kv_up = rest
        gemms = [(tokens, q_out // tp, q_in, 1)]
    return gemms + [(tokens, kv_down[1], kv_down[0], 1), (tokens, kv_up[1] // tp, kv_up[0], 1), out]


def mlp_gemms(model: Model, tokens: int, tp: int, width: int, fused: bool = True) -> list[Gemm]:
    """Forward GEMMs of a TP-split MLP of intermediate width `width`: up (fused gate and up when gated;
    not `fused`, two GEMMs: Plan.projections) column parallel, down row parallel."""
    h = model.hidden_size
    ups = mlp_matrices(model) - 1
    down = (tokens, h, width // tp, 1)
    return [(tokens, width // tp, h, ups), down] if not fused else [(tokens, ups * width // tp, h, 1), down]


def weight_gemms(model: Model, tokens: int, tp: int) -> list[Gemm]:
    """(m, n, k, count) of the forward weight GEMMs of one dense layer under Megatron TP."""
    return attention_gemms(model, tokens, tp) + mlp_gemms(model, tokens, tp, model.ffn)


def gemms_seconds(gemms: list[Gemm], gpu: Gpu, precision: str, eff: Efficiency) -> float:
    return sum(count * gemm_seconds(m, n, k, gpu, precision, eff) for m, n, k, count in gemms if count and m and n)


def projection_gemms(model: Model, tokens: int, tp: int, projections: str = "fused") -> list[tuple[int, int, int]]:
    """(m, n, k) of each matmul in execution order as the stack writes them (flops.projection_widths); wo and
    the last MLP matrix are row parallel (input split over TP), the others column parallel."""
    widths, inputs = projection_widths(model, projections), projection_inputs(model, projections)
    row_parallel = {1 if fuses_qkv(projections) else 3, len(widths) - 1}
    return [(tokens, n, k // tp) if i in row_parallel else (tokens, n // tp, k)
            for i, (k, n) in enumerate(zip(inputs, widths))]


def attention_core_seconds(
    model: Model, batch: int, tp: int, gpu: Gpu, precision: str, flash: bool, eff: Efficiency,
    index: int = -1, cp: int = 1, kernel: str = "cudnn", span_cp: int | None = None,
) -> float:
    """QK^T and softmax(.)V for `batch` sequences, heads split over TP, in 16-bit (fp32 if training fp32).

    Unfused (pre-FlashAttention Megatron): two batched GEMMs with inner dimension head_dim or s,
    over the whole s x s square (the causal mask is applied, not skipped).
    FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023 Sec 3.1.1): one fused kernel that
    skips the blocks above the causal diagonal (and outside a local layer's window), so it does the
    causal FLOPs only (flops.attention_keys_per_query), at its own achieved fraction of the 16-bit
    peak, which depends on the GPU generation and the `kernel` (types.ATTENTION_KERNELS) and grows with
    the length of the blocks it works on (`flash_attention_fraction`).
    Context parallelism gives each GPU s/cp queries in 2 x cp load-balanced chunks (Megatron-core
    context_parallel; Llama 3 paper Sec 3.3.2), so each rank does 1/cp of the causal work, in blocks
    of s/cp. FP8 attention is the 16-bit time over its measured speedup (fp8_attention_speedup, applied
    by the caller to the forward and the backward). FLOP counts for MFU are flops.py's, not these.
    """
    s = model.seq_length
    heads = max(1, model.num_attention_heads // tp)
    per_head = (q_width(model) + value_width(model)) / model.num_attention_heads  # qk + v dims
    attn_precision = "fp32" if precision == "fp32" else "bf16"
    if flash:
        flops = 2.0 * (s / cp) * attention_keys_per_query(model, index, causal=True) * per_head
        span = attention_block_span(model, index, cp if span_cp is None else span_cp)
        return batch * heads * flops / (sustained_flops_per_second(gpu, attn_precision)
                                        * flash_attention_fraction(span, eff, gpu.generation, kernel))
    qk = q_width(model) // model.num_attention_heads
    d_v = value_width(model) // model.num_attention_heads
    scores = gemm_seconds(s // cp, s, qk, gpu, attn_precision, eff)
    values = gemm_seconds(s // cp, d_v, s, gpu, attn_precision, eff)
    return batch * heads * (scores + values)


def attention_block_span(model: Model, index: int = -1, cp: int = 1) -> float:
    """Length of the blocks a fused attention kernel works on in layer `index` (what its achieved fraction
    grows with, flash_attention_fraction): the GPU's s/cp queries for a global layer, at most the window for
    a local one. A layer whose queries see at least half the sequence on average (causal global attention)
    counts as global. Assumes FlashAttention-2's tiling, one pass over each query block's keys (Dao 2023 Sec
    3.1), so what limits its efficiency is how many keys a query block sweeps."""
    s = model.seq_length
    if attention_keys_per_query(model, index, causal=True) >= s / 2:
        return s / cp
    return min(s / cp, model.attention_window)


def flash_attention_fraction(seq_length: int, eff: Efficiency, generation: str = "", kernel: str = "cudnn") -> float:
    """A fused attention kernel's achieved fraction of the peak at sequence length s: f_max * s / (s + s_half).
    Each (batch, head) runs a fixed prologue/epilogue and the causal diagonal tiles are half masked,
    costs that shrink against the s^2 work as s grows (the FlashAttention-2 paper's throughput rises
    with sequence length, Dao 2023 Fig. 4-7).

    f_max depends on the generation and, on Hopper, on the kernel: FlashAttention-2's kernels issue the
    Ampere-era mma.sync instructions and reach about 35% of an H100's peak (Shah et al. 2024,
    FlashAttention-3, Sec 1), while cuDNN's fused attention, like FlashAttention-3, uses Hopper's
    asynchronous warpgroup MMA and TMA and runs about 1.9x faster (pytorch#142132: 631 against 329
    TFLOP/s on one shape). On Ampere the two perform alike (pytorch PR #192799, sm80); on Blackwell
    both names stand for the kernels built for it. f_max is fitted per generation (cuDNN's on Hopper);
    FlashAttention-2's on Hopper is that times the measured ratio (Efficiency.flash2_over_cudnn_hopper).
    FlashAttention-3, which runs on Hopper only (rules.cluster_violations), takes cuDNN's fitted fraction: in its
    paper's forward benchmark on an H100 SXM5 in bf16 (Shah et al. 2024, arXiv:2407.08608, Fig. 5) it runs at
    1.05x cuDNN's rate at head dimension 128 and 1.17x at 64 over 4k tokens (638 against 609 and 476 against 408
    TFLOP/s), and FlashAttention-2 at 0.60x and 0.79x; no published training run has timed it, so the slower of
    the two is taken (pessimistic by up to that margin)."""
    peak = eff.flash_attention_peak_fraction
    if generation == "ampere" and eff.flash_attention_peak_fraction_ampere:
        peak = eff.flash_attention_peak_fraction_ampere
    elif generation == "hopper" and eff.flash_attention_peak_fraction_cudnn_hopper:
        peak = eff.flash_attention_peak_fraction_cudnn_hopper
        if kernel == "flash2":
            peak *= eff.flash2_over_cudnn_hopper
    elif generation == "blackwell" and eff.flash_attention_peak_fraction_blackwell:
        peak = eff.flash_attention_peak_fraction_blackwell
    return peak * seq_length / (seq_length + eff.flash_attention_half_seq)


def attention_kernels_priced_alike(a: str, b: str, generation: str) -> bool:
    """Whether flash_attention_fraction gives kernels `a` and `b` one fraction on this generation: everywhere but
    on Hopper, and there unless one of them is FlashAttention-2 (cuDNN's and FlashAttention-3 share the fitted
    fraction)."""
    return generation != "hopper" or (a == "flash2") == (b == "flash2")


def attention_rate_scale(gpu: Gpu, eff: Efficiency) -> tuple[float, float]:
    """How much faster this GPU runs fused attention, forward and backward, than the part its generation's
    fitted attention fraction stands for: its own measured kernel rate over that part's, both as fractions
    of their bf16 peaks at one shape (Gpu.attention_fraction, Efficiency.attention_reference_fraction).
    GB300 (Blackwell Ultra: twice GB200's special-function exp rate, on which the softmax runs, at the same
    bf16 peak) runs cuDNN's attention 1.18x faster forward and 1.08x backward than GB200 at 8k; B300, the same
    silicon at a lower power, at GB300's rate times the two parts' ratio in one benchmark that ran both (a
    derivation, catalogs/gpus.yaml). (1, 1) for a part without a measurement or derivation of its own: it keeps
    its generation's fitted fraction."""
    reference = eff.attention_reference_fraction.get(gpu.generation)
    if not reference or len(gpu.attention_fraction) != 2:
        return 1.0, 1.0
    return gpu.attention_fraction[0] / reference[0], gpu.attention_fraction[1] / reference[1]


def fp8_attention_speedup(gpu: Gpu, eff: Efficiency) -> tuple[float, float]:
    """How much faster the fused attention kernel runs in FP8 than in bf16, (forward, backward): the part's
    own measurement (Gpu.attention_fp8_speedup), else Efficiency.fp8_attention_speedup (GB200's).

    Not the 2x of the FP8 tensor-core peak: in NVIDIA's cudnn-frontend SDPA training benchmark (one run per
    part, 8k causal, head dim 128) FP8 gains 1.09-1.21x forward and 1.04-1.32x backward on B200, GB200 and
    GB300. Its softmax, the exponentials (attention_exp_seconds) and the bf16 gradient paths do not speed
    up with the format; the matmuls alone would."""
    measured = gpu.attention_fp8_speedup if len(gpu.attention_fp8_speedup) == 2 else eff.fp8_attention_speedup
    return measured[0], measured[1]


def attention_exp_seconds(model: Model, batch: int, tp: int, gpu: Gpu, index: int = -1, cp: int = 1) -> float:
    """Seconds of the softmax exponentials of one fused-attention pass: one per attention score the
    kernel computes (the causal ones, flops.attention_keys_per_query), on the special-function units
    (Gpu.exp_per_second; 0 = not modelled). A fused attention kernel overlaps them with its matmuls,
    so the slower of the two sets its time (FlashAttention-4 on Blackwell is exp-bound at head size
    128: NVIDIA "Making Softmax More Efficient", the reason Blackwell Ultra doubled the SFU rate)."""
    if gpu.exp_per_second <= 0:
        return 0.0
    heads = max(1, model.num_attention_heads // tp)
    scores = batch * heads * (model.seq_length / cp) * attention_keys_per_query(model, index, causal=True)
    return scores / (gpu.exp_per_second * gpu.tensor_clock_fraction)


def attention_score_bytes(model: Model, batch: int, tp: int, flash: bool) -> float:
    """HBM bytes of unfused attention's a*s scores per token (0 with FlashAttention, which keeps
    them on chip): Megatron's fused scale-mask-softmax reads and writes them (2 passes), and with
    dropout the dropout kernel reads, writes and stores a 1-byte mask (2.5 passes), 16-bit each."""
    if flash:
        return 0.0
    passes = 2 + (2.5 if model.dropout else 0)
    heads = model.num_attention_heads / tp
    return 2.0 * batch * model.seq_length * heads * model.seq_length * passes


def eager_extra_bytes_per_token(model: Model, mlp_width: int) -> float:
    """Extra forward HBM bytes per token and layer when elementwise work runs as separate eager
    PyTorch kernels (as torchtitan runs without torch.compile), over the fused kernels above.

    Counted kernel by kernel from torchtitan's Llama code: RMSNorm upcasts to fp32 and runs
    float(), pow, mean, mul by rsqrt, type_as and the weight product as separate kernels (36 B per
    element against 4 B fused) for each of 2 norms; SwiGLU runs silu and the product apart
    (10 B per f element against 6 B); rotary embeddings on q and k go through fp32 complex
    arithmetic (about 20 B per element against 4 B when compiled).
    """
    h = model.hidden_size
    kv = kv_width(model)
    gated = 4.0 * mlp_width if model.gated_mlp else 0.0
    return 2 * (36.0 - 4.0) * h + gated + (20.0 - 4.0) * (h + kv)


def unfused_rope_bytes(model: Model, tokens: int, tp: int) -> tuple[float, float]:
    """Extra HBM bytes (forward, backward) of one layer's RoPE on `tokens` tokens when it runs as Megatron-core's
    eager ops instead of Transformer Engine's fused kernel, which reads and writes each rotated element once
    (4 bytes in 16-bit, both passes). Counted kernel by kernel in models/common/embeddings/rope_utils.py
    _apply_rotary_pos_emb_bshd (Megatron-LM d98e8a64), per element of the rotated query and key rows, 16-bit:
    forward t * cos (read, write: 4 B), rotate_half's negation of one half (2 B) and concatenation (4 B),
    * sin (4 B), the sum (6 B), the final cat with the empty pass-through part (4 B): 24 B, 20 over fused;
    backward (autograd's nodes, traced) the gradient times sin (4 B), the negated half (2 B), the halves
    assembled into one gradient (4 B), the two branches' gradients added (6 B), times cos (4 B), and for the
    empty pass-through slice a full-size zero gradient (2 B) added to the rotated one (6 B): 28 B, 24 over
    fused. cos and sin (one row per position) are not counted. The rotated rows: the query and key heads on
    this TP rank at the model's rotary share, or under MLA the query heads' RoPE parts and the one shared key
    part (a lower bound there: MLA's unfused path also interleaves and concatenates whole heads)."""
    if model.position_embedding != "rope":
        return 0.0, 0.0
    if model.mla:
        width = (model.num_attention_heads / tp + 1) * model.mla.qk_rope_head_dim
    else:
        width = (q_width(model) + kv_width(model)) / tp * model.rotary_percent
    return 20.0 * tokens * width, 24.0 * tokens * width


@dataclass(frozen=True)
class Work:
    """One block's forward work on one GPU for one micro-batch (the backward runs its GEMMs twice and
    moves its elementwise bytes twice)."""

    gemms: list  # (m, n, k, count)
    moved_bytes: float  # HBM bytes of the non-GEMM kernels
    cast_inputs: float  # elements of GEMM inputs cast to a low precision in forward
    cast_grads: float  # elements of output gradients cast in backward
    weights: float  # weights on this GPU (per-use casts)
    norm_inputs: float = 0.0  # of cast_inputs, those a norm fused into the linear produces (TE's LayerNormLinear)


def attention_work(model: Model, batch: int, tp: int, sequence_parallel: bool, flash: bool, fused: bool,
                   projections: str = "fused") -> Work:
    """The attention half of a layer, plus the layer's norms and residuals.

    Elementwise bytes per token, in 16-bit h-element rows: two norms (read+write 4h), two residual
    adds (6h); dropout on the two block outputs is fused with the residual add (Megatron-LM's
    bias_dropout_add), so it only adds its 1-byte masks (2 x h/2). Without sequence parallel these
    are replicated on every TP rank (Korthikanti Sec 4.2.2). Plus the attention scores of unfused
    attention (`attention_score_bytes`) and, with `fused=False`, eager kernels' extra traffic.
    GEMM inputs cast under a low precision: column-parallel inputs are the full h, or h/tp under
    sequence parallelism (cast before the all-gather); row-parallel ones are split."""
    h, tokens = model.hidden_size, batch * model.seq_length
    replicated = 10 * h + (h if model.dropout else 0)
    divisor = tp if sequence_parallel else 1
    eager = 0.0 if fused else tokens * eager_extra_bytes_per_token(model, 0) / tp
    moved = 2.0 * tokens * replicated / divisor + attention_score_bytes(model, batch, tp, flash) + eager
    full = h / tp if sequence_parallel else h
    if model.mla:
        latents = model.mla.q_lora_rank + model.mla.kv_lora_rank
        inputs = [full, latents, value_width(model) / tp]
        grads = [latents + model.mla.qk_rope_head_dim, (qkv_out_dim(model) - latents) / tp, full]
    else:
        inputs, grads = [full, value_width(model) / tp], [qkv_out_dim(model) / tp, full]
    down = mla_down_parameters(model)  # whole on every TP rank
    weights = (attention_parameters(model) - down) / tp + down
    normed = 0.0 if model.mla else tokens * full  # MLA's two down projections read a separate norm's output
    gemms = attention_gemms(model, tokens, tp, fuses_qkv(projections))
    return Work(gemms, moved, tokens * sum(inputs), tokens * sum(grads), weights, normed)


def dense_mlp_work(model: Model, tokens: int, tp: int, sequence_parallel: bool, width: int, fused: bool,
                   projections: str = "fused") -> Work:
    """A TP-split MLP of intermediate width `width`: its activation reads and writes (GeLU: f each;
    gated: read 2f, write f), its GEMMs, and its cast inputs (up: h or h/tp; down: f/tp)."""
    h = model.hidden_size
    moved = 2.0 * tokens * (3 if model.gated_mlp else 2) * width / tp
    if not fused and model.gated_mlp:
        moved += tokens * 4.0 * width / tp
    full = h / tp if sequence_parallel else h
    up = (mlp_matrices(model) - 1) * width
    weights = mlp_matrices(model) * h * width / tp
    return Work(mlp_gemms(model, tokens, tp, width, fuses_gate_up(projections)), moved, tokens * (full + width / tp),
                tokens * (up / tp + full), weights, tokens * full)


def block_cast_bytes(works: list[Work], precision: str, recipe: str, weight_casts: str,
                     generation: str) -> tuple[float, float]:
    """(forward, backward) HBM bytes of the casts to a low-precision format (costmodel/lowp.py: each
    input read and written in two layouts; NVFP4's Hadamard pass on the wgrad inputs), and with
    per-use weight casts the weights cast for fprop and again for dgrad (one layout each). Transformer
    Engine's (weight casts cached per step) on `generation`: its layouts (lowp.te_layouts) and the casts
    its LayerNormLinear's norm does (Work.norm_inputs, lowp.te_norm_cast_bytes_per_element). 0 for 16-
    and 32-bit training."""
    if not lowp.is_low(precision):
        return 0.0, 0.0
    inputs, grads = sum(w.cast_inputs for w in works), sum(w.cast_grads for w in works)
    te = lowp.cached_casts(weight_casts)
    layouts = lowp.cast_layouts(precision, recipe, generation, weight_casts)
    per, had = lowp.cast_bytes_per_element(precision, recipe, layouts), lowp.hadamard_bytes_per_element(precision)
    normed = sum(w.norm_inputs for w in works) if te else 0.0
    norm_per = lowp.te_norm_cast_bytes_per_element(precision, recipe, layouts)
    fwd, bwd = (inputs - normed) * per + normed * norm_per, grads * per + (inputs + grads) * had
    if weight_casts == "use":
        weights = sum(w.weights for w in works) * lowp.weight_cast_bytes_per_param(precision, recipe, layouts=1)
        fwd, bwd = fwd + weights, bwd + weights
    return fwd, bwd


# HBM bytes per element of a stage's logits shard that the loss reads and writes, forward and backward together,
# counted kernel by kernel from each implementation's source (logits_seconds). 16-bit logits, fp32 arithmetic.
LOSS_BYTES_PER_LOGIT = {
    # Megatron's vocab-parallel cross entropy (tensor_parallel/cross_entropy.py, unchanged in its steps from
    # Megatron-LM 2021 mpu/cross_entropy.py to d98e8a64), eager: forward upcast (read 2, write 4), max (read 4),
    # subtract in place (8), exp in place (8), sum (4), divide in place (8); backward the in-place scaling (8)
    # and autograd's cast of the fp32 gradient back to the 16-bit logits (read 4, write 2).
    "vocab_parallel": 38.0 + 14.0,
    # The same steps compiled (fusions/fused_cross_entropy.py, jit_fuser = torch.compile): upcast fused with the
    # max (6), subtract, exp and sum in one kernel (8), the divide (8); backward the scaling fused with its own
    # cast to bf16 (read 4, write 2, and the in-place write back 4).
    "vocab_parallel_fused": 22.0 + 10.0,
    # Transformer Engine's parallel cross entropy (common/triton/cross_entropy.py, v2.1-v2.17): an online-softmax
    # pass (read 2), a pass writing the gradient over the logits in place (read 2, write 2); backward scales it
    # in place (read 2, write 2).
    "fused": 6.0 + 4.0,
    # F.cross_entropy(logits.float()) (PyTorch's log_softmax and nll_loss CUDA kernels): upcast (6), log_softmax
    # over rows too long for shared memory (max, sum and write passes: read 12, write 4); backward nll_loss's
    # zeroed gradient (4), log_softmax's (read 8, sum pass 4, write 4), the cast back (6).
    "eager": 22.0 + 26.0,
}


def logits_seconds(model: Model, batch: int, tp: int, gpu: Gpu, precision: str, eff: Efficiency,
                   cross_entropy: str = "vocab_parallel_fused") -> float:
    """Forward + backward of the vocabulary projection and cross-entropy on the last stage: the GEMM (forward
    and its two backward GEMMs), and the loss over the tokens x vocab/tp logits shard at HBM bandwidth
    (LOSS_BYTES_PER_LOGIT of the plan's cross_entropy; the TP all-reduces of its row maxima and sums are a few
    bytes per token, left out).

    Low-precision training keeps this GEMM in 16-bit (costmodel/lowp.py): Megatron-core's output layer is a plain
    tensor_parallel.ColumnParallelLinear, not a Transformer Engine module (gpt_model.py), and
    torchtitan's float8 conversion skips it (float8.py module_filter_fn: fqn != "output")."""
    tokens = batch * model.seq_length
    gemm = gemm_seconds(tokens, model.vocab_size // tp, model.hidden_size, gpu, lowp.sixteen_bit(precision), eff)
    loss_bytes = LOSS_BYTES_PER_LOGIT[cross_entropy] * tokens * model.vocab_size / tp
    return 3.0 * gemm + loss_bytes / elementwise_bytes_per_second(gpu, eff)


def optimizer_seconds(params_owned: float, gpu: Gpu, eff: Efficiency, state_bytes: float = 12.0) -> float:
    """Mixed-precision Adam update, memory bound (the fused Adam kernels of apex and Transformer Engine read
    and write each tensor once): per owned parameter read the optimizer states (`state_bytes`: fp32 master,
    m, v: 12 B, ZeRO Sec 3.1's K) and an fp32 main gradient (Megatron-core's optimizers step on fp32
    main_grad whatever dtype the gradients were reduced in), write the states back and the 16-bit copy: 30 B
    with fp32 states. Assumes 16-bit weights beside the states: fp32 training (8 B of moments, the weights
    read and written, 28 B) and precision-aware bf16 states beside low-precision parameters (8 B held,
    memory.state_bytes_per_param, against the 6 B the caller passes) are priced as 30 and 18 B; the update
    is under 0.1% of a step either way (a change to 28 and 20 B moved the out-of-sample ratchets of
    tests/test_fidelity.py by 0.005 points, 2026-12-06, and was not made)."""
    return (2.0 * state_bytes + 6.0) * params_owned / elementwise_bytes_per_second(gpu, eff)
