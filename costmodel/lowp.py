"""Low-precision training recipes: which GEMMs run in 8 or 4 bits, what the casts cost, what stays in memory.

Formats:
  fp8 with per-tensor scales (E4M3 forward, E5M2 gradients in the hybrid format): the scale comes from an
    amax history (delayed: Transformer Engine DelayedScaling, Megatron --fp8-recipe delayed) or from
    the tensor itself, read once more before the cast (tensorwise, TE Float8CurrentScaling, NeMo
    "FP8-CS"; rowwise, one scale per row, torchao float8's recipe in torchtitan); blockwise scales one fp32 per 1x128 activation block and 128x128 weight block
    (TE Float8BlockScaling, the DeepSeek-V3 recipe, arXiv:2412.19437 Sec 3.3).
  mxfp8: E4M3/E5M2 elements with one E8M0 (1-byte) scale per 32 elements (OCP Microscaling Formats
    spec v1.0, 2023), scaled in hardware by Blackwell's tensor cores (TE MXFP8BlockScaling).
  mxfp4: E2M1 (4-bit) elements with one E8M0 scale per 32 elements (OCP Microscaling Formats spec v1.0),
    at the FP4 tensor rate (AMD CDNA4, whose FP4 peak is MXFP4's; Blackwell, PTX ISA 8.7 tcgen05.mma
    .kind::mxf4). The training recipe is ROCm Transformer Engine's MXFP4BlockScaling as AMD's Primus runs it
    (NVIDIA's Transformer Engine has no MXFP4 recipe, nor Megatron-LM's --fp4-recipe; ROCm/TransformerEngine
    read at 030b792 and 1459f9b, near the 261eda6 AMD's MLPerf v6.0 image pins): fprop, dgrad and wgrad all in
    MXFP4, gradients included (quantization.py MXFP4BlockScalingRecipeState); every quantized tensor written
    rowwise and columnwise from 16-bit by one kernel (common/cast/mxfp4/cast_transpose_mxfp4_shuffled.cuh);
    weights cast once a step; the optional fixed 16-point Hadamard transform (NVTE_MXFP4_USE_HADAMARD) runs in
    place inside that kernel before the scales, on both operands of each GEMM: it moves no extra bytes and is
    not priced.
  nvfp4: E2M1 (4-bit) elements with one E4M3 scale per 16 elements and one fp32 per tensor (NVIDIA
    Blackwell NVFP4; TE NVFP4BlockScaling); the training recipe applies a 16x16 random Hadamard
    transform to both wgrad inputs and rounds gradients stochastically (NVIDIA, "Pretraining Large
    Language Models with NVFP4", arXiv:2509.25149, Sec 4).

Which GEMMs: the four projections of every transformer layer (QKV, attention output, MLP up/gate and
down), forward (fprop) and backward (dgrad and wgrad). Attention's QK^T and PV, the output layer and
the loss stay 16-bit (Megatron-core's output layer is not a TE module; torchtitan's float8 skips it),
and so do the layers a plan keeps in 16-bit at the start and end of the stack (Megatron
--first-last-layers-bf16 with --num-layers-at-start/end-in-bf16, which NVFP4 recipes use).

Casts: a GEMM input is quantized by one kernel that reads its 16-bit values (2 B each) and writes the
quantized data in two layouts, rowwise for the GEMM that reads it now and columnwise (transposed) for the
backward GEMM that reads it later (TE Float8Tensor keeps the transpose; MXFP8 and NVFP4 tensors hold
rowwise and columnwise data, since the scales run along the reduction dimension). Tensorwise scaling
reads the input once more for its amax; nvfp4 reads and writes both wgrad inputs once more for the
Hadamard transform. Weights are cast once per optimizer step (TE caches the casts across the
micro-batches of a step) and kept in the layouts written (two; one for per-tensor FP8 on Blackwell, below).

Transformer Engine (read at d0067d0, 2026-08, against v1.13-v2.7; validation/README.md, "HBM efficiency measured
instead of fitted, and the low-precision casts") moves less in two cases, which `te_layouts` and
`te_norm_cast_bytes_per_element` count for the stack that caches its weight casts (weight_casts "step", TE's:
cached_casts, cast_layouts; compute.block_cast_bytes): on Blackwell a per-tensor
FP8 GEMM reads either layout (transformer_engine.cpp nvte_is_non_tn_fp8_gemm_supported), so
Float8Quantizer and Float8CurrentScalingQuantizer write no transposed copy (pytorch/csrc/quantizer.cpp); and
the norm of a LayerNormLinear (Megatron-core's QKV and dense FC1, TELayerNormColumnParallelLinear) quantizes
its own output: under delayed scaling it writes FP8 itself (ln_fwd_kernels.cuh; on Hopper a transpose pass
follows, ln_api.cpp), under current scaling it writes 16-bit with the amax computed in the same kernel
(FUSED_NORM_AMAX_FP8, v2.7+), so the cast reads the input once. MXFP8 and blockwise norms stay unfused
(without NVTE_NORM_FWD_USE_CUDNN); Megatron-core's activation runs outside TE, so the FC2 input and the FC1
output gradient are standalone casts. The cached weight copies (weight_copy_bytes_per_param) are kept in
te_layouts layouts too: 1 B per parameter for per-tensor FP8 on Blackwell, not 2.
"""
from __future__ import annotations

LOW_PRECISIONS = ("fp8", "mxfp8", "mxfp4", "nvfp4")
FP8_RECIPES = ("delayed", "tensorwise", "rowwise", "blockwise")

ELEMENT_BYTES = {"fp8": 1.0, "mxfp8": 1.0, "mxfp4": 0.5, "nvfp4": 0.5}
# Scale bytes per element: fp32 per 128 (blockwise), one E8M0 byte per 32 (mxfp8, mxfp4), one E4M3 byte per 16
# (nvfp4; the per-tensor fp32 is negligible); per-tensor scales are negligible.
SCALE_BYTES = {("fp8", "delayed"): 0.0, ("fp8", "tensorwise"): 0.0, ("fp8", "rowwise"): 0.0, ("fp8", "blockwise"): 4.0 / 128,
               "mxfp8": 1.0 / 32, "mxfp4": 1.0 / 32, "nvfp4": 1.0 / 16}


def is_low(precision: str) -> bool:
    return precision in LOW_PRECISIONS


def gemm_precision(precision: str) -> str:
    """The format the peak and GEMM efficiency of a transformer-layer projection come from."""
    return precision


def sixteen_bit(precision: str) -> str:
    """The 16-bit type the rest of a low-precision model runs in (attention, output layer): bf16."""
    return "bf16" if is_low(precision) else precision


def quantized_bytes_per_element(precision: str, recipe: str = "delayed") -> float:
    """Element plus scale bytes of one quantized value."""
    scale = SCALE_BYTES[(precision, recipe)] if precision == "fp8" else SCALE_BYTES[precision]
    return ELEMENT_BYTES[precision] + scale


def weight_bytes_per_element(precision: str, recipe: str = "delayed") -> float:
    """quantized_bytes_per_element of a weight: blockwise FP8 scales a weight per 128 x 128 block, one fp32
    per 16,384 elements (TE Float8BlockScaling w_block_scaling_dim 2, recipe/__init__.py; DeepSeek-V3 Sec 3.3),
    not per 1 x 128 as its activations; every other recipe scales weights as it scales activations."""
    if precision == "fp8" and recipe == "blockwise":
        return ELEMENT_BYTES["fp8"] + 4.0 / (128 * 128)
    return quantized_bytes_per_element(precision, recipe)


def cast_bytes_per_element(precision: str, recipe: str = "delayed", layouts: int = 2) -> float:
    """HBM bytes to quantize one 16-bit GEMM input: read it (twice for tensorwise scaling) and write it
    in `layouts` layouts (see the module docstring)."""
    reads = 2.0 if precision == "fp8" and recipe in ("tensorwise", "rowwise") else 1.0
    return 2.0 * reads + layouts * quantized_bytes_per_element(precision, recipe)


def te_layouts(precision: str, recipe: str, generation: str) -> int:
    """Layouts Transformer Engine writes of a quantized tensor: one for per-tensor FP8 on Blackwell, whose
    GEMMs read either (module docstring), else two."""
    per_tensor = precision == "fp8" and recipe in ("delayed", "tensorwise")
    return 1 if per_tensor and generation == "blackwell" else 2


def cached_casts(weight_casts: str) -> bool:
    """Whether the stack caches its weight casts for the step: Transformer Engine's ("step"), the one stack
    whose layouts (te_layouts) and fused norm casts this module counts; torchao casts at every use ("use")."""
    return weight_casts == "step"


def cast_layouts(precision: str, recipe: str, generation: str, weight_casts: str) -> int:
    """Layouts each quantized tensor is written (and a cached weight kept) in: Transformer Engine's te_layouts,
    else two."""
    return te_layouts(precision, recipe, generation) if cached_casts(weight_casts) else 2


def te_norm_cast_bytes_per_element(precision: str, recipe: str, layouts: int) -> float:
    """Transformer Engine's cast of a LayerNormLinear's norm output, over the 16-bit output the norm would
    write (which the elementwise traffic counts): delayed scaling writes the FP8 in place of it, plus a
    transpose pass (read and write) for a second layout (+1 B per element on Hopper, -1 on Blackwell);
    current scaling reads the 16-bit output once, its amax taken by the norm; other formats as a standalone
    cast (module docstring)."""
    q = quantized_bytes_per_element(precision, recipe)
    if precision == "fp8" and recipe == "delayed":
        return q - 2.0 + (layouts - 1) * 2.0 * q
    if precision == "fp8" and recipe == "tensorwise":
        return 2.0 + layouts * q
    return cast_bytes_per_element(precision, recipe, layouts)


def hadamard_bytes_per_element(precision: str) -> float:
    """NVFP4's random Hadamard transform of a wgrad input: one more 16-bit read and write."""
    return 4.0 if precision == "nvfp4" else 0.0


WEIGHT_CASTS = ("step", "use")


def weight_copy_bytes_per_param(precision: str, recipe: str = "delayed", casts: str = "step",
                                layouts: int = 2) -> float:
    """Bytes per parameter of the quantized weight copies kept next to the 16-bit weights: `layouts` layouts
    when the casts are cached for the step (Transformer Engine: te_layouts, one for per-tensor FP8 on
    Blackwell), none when cast at every use (torchao Float8Linear, torchao/float8/float8_linear.py: the fp8
    weight is a temporary of each matmul)."""
    if not is_low(precision) or casts == "use":
        return 0.0
    return layouts * weight_bytes_per_element(precision, recipe)


def weight_cast_bytes_per_param(precision: str, recipe: str = "delayed", layouts: int = 2) -> float:
    """HBM bytes per parameter to cast the weights once per step: read 16-bit, write `layouts` layouts."""
    return cast_bytes_per_element(precision, recipe, layouts) if is_low(precision) else 0.0
