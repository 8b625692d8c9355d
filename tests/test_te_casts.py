"""Transformer Engine's cast traffic (costmodel/lowp.py, compute.block_cast_bytes) against what its code moves,
read at d0067d0 (2026-08; validation/README.md, "HBM efficiency measured instead of fitted, and the low-precision
casts"): bytes per element beyond the 16-bit tensor the producer writes anyway, by hand."""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel import lowp, step
from costmodel import types as cm
from costmodel.compute import Work, block_cast_bytes


@pytest.mark.parametrize("precision, recipe, generation, layouts", [
    ("fp8", "delayed", "hopper", 2), ("fp8", "delayed", "blackwell", 1),        # Blackwell reads either layout
    ("fp8", "tensorwise", "hopper", 2), ("fp8", "tensorwise", "blackwell", 1),
    ("mxfp8", "delayed", "blackwell", 2), ("fp8", "blockwise", "blackwell", 2),  # scales along the reduction dim
])
def test_layouts_written(precision, recipe, generation, layouts):
    assert lowp.te_layouts(precision, recipe, generation) == layouts


@pytest.mark.parametrize("precision, recipe, layouts, standalone, after_norm", [
    # delayed: read 2 B, write 1 B per layout; the norm writes FP8 itself (1 B for the 2 B it no longer
    # writes) and on Hopper a transpose pass reads and writes 1 B more: +1, on Blackwell -1
    ("fp8", "delayed", 2, 2 + 2, 1 - 2 + 2),
    ("fp8", "delayed", 1, 2 + 1, 1 - 2),
    # current scaling: an amax pass reads 2 B more, except after TE's norm, which takes the amax itself
    ("fp8", "tensorwise", 2, 2 + 2 + 2, 2 + 2),
    ("fp8", "tensorwise", 1, 2 + 2 + 1, 2 + 1),
    # MXFP8: one E8M0 scale per 32 elements in each layout; its norm is not fused by default
    ("mxfp8", "delayed", 2, 2 + 2 * (1 + 1 / 32), 2 + 2 * (1 + 1 / 32)),
])
def test_bytes_per_element(precision, recipe, layouts, standalone, after_norm):
    assert lowp.cast_bytes_per_element(precision, recipe, layouts) == pytest.approx(standalone)
    assert lowp.te_norm_cast_bytes_per_element(precision, recipe, layouts) == pytest.approx(after_norm)


def test_a_blocks_casts_by_hand():
    """100 input elements, 60 of them a LayerNormLinear's norm output, 50 gradient elements: on Hopper under
    delayed scaling 40 x 4 + 60 x 1 forward and 50 x 4 backward; on Blackwell 40 x 3 + 60 x -1 and 50 x 3;
    torchao's per-use casts (tensorwise) fuse nothing: 100 x 6 and 50 x 6, plus its weights cast for fprop and
    dgrad, one layout each (10 weights x (2 + 2 + 1) per pass: an amax read, a cast read, one write)."""
    work = Work([], 0.0, 100.0, 50.0, 10.0, 60.0)
    assert block_cast_bytes([work], "fp8", "delayed", "step", "hopper") == pytest.approx((220.0, 200.0))
    assert block_cast_bytes([work], "fp8", "delayed", "step", "blackwell") == pytest.approx((60.0, 150.0))
    assert block_cast_bytes([work], "fp8", "tensorwise", "use", "hopper") == pytest.approx((650.0, 350.0))
    assert block_cast_bytes([work], "bf16", "delayed", "step", "hopper") == (0.0, 0.0)


@pytest.mark.parametrize("precision, recipe, generation, copy_bytes", [
    ("fp8", "delayed", "hopper", 2.0),            # rowwise E4M3 and its transpose, 1 B each
    ("fp8", "delayed", "blackwell", 1.0),         # Float8Quantizer writes no transpose there
    ("fp8", "tensorwise", "blackwell", 1.0),
    ("mxfp8", "delayed", "blackwell", 2.0 * (1.0 + 1.0 / 32)),  # rowwise and columnwise, an E8M0 per 32
    ("nvfp4", "delayed", "blackwell", 2.0 * (0.5 + 1.0 / 16)),  # two layouts, an E4M3 per 16
    # one fp32 scale per 128 x 128 weight block (TE Float8BlockScaling w_block_scaling_dim 2), not per 1 x 128
    ("fp8", "blockwise", "hopper", 2.0 * (1.0 + 4.0 / (128 * 128))),
    ("fp8", "blockwise", "blackwell", 2.0 * (1.0 + 4.0 / (128 * 128))),
])
def test_cached_weight_copies_keep_the_layouts_written(precision, recipe, generation, copy_bytes):
    """Transformer Engine keeps the weight casts of a step in the layouts its quantizer writes; torchao's
    per-use casts keep none."""
    layouts = lowp.te_layouts(precision, recipe, generation)
    assert lowp.weight_copy_bytes_per_param(precision, recipe, "step", layouts) == pytest.approx(copy_bytes)
    assert lowp.weight_copy_bytes_per_param(precision, recipe, "use", layouts) == 0.0


def test_a_blackwell_gpu_keeps_one_byte_less_per_layer_weight_under_per_tensor_fp8():
    """The same fp8 (delayed) plan on a Hopper and a Blackwell GPU of equal size: the layer weights take
    2 + 2 B on Hopper and 2 + 1 B on Blackwell; the embedding and output layer stay 2 B on both."""
    model = cm.Model("m", 4, 1024, 8, 32000, 2048, ffn_hidden_size=4096, mlp="swiglu")
    hopper = cm.Gpu("g", 80 * 2**30, {"bf16": 300e12, "fp8": 600e12}, 2e12, 300e9)
    plan, eff = cm.Plan(dp=8, global_batch_size=8, precision="fp8"), cm.Efficiency()
    parts = {}
    for gpu in (hopper, replace(hopper, generation="blackwell")):
        cluster = cm.Cluster("c", gpu, 8, 8, 8, 300e9, 25e9)
        stage = step.stage_costs(model, cluster, plan, eff)[0]
        parts[gpu.generation] = step.memory_breakdown(model, plan, stage, eff, gpu.generation)["parameters"]
    layer_params = stage.layer_params
    assert parts["hopper"] - parts["blackwell"] == pytest.approx(1.0 * layer_params)


def test_only_the_stack_that_caches_its_casts_writes_te_layouts():
    """Transformer Engine (weight_casts "step") writes one layout of per-tensor FP8 on Blackwell; torchao's
    per-use casts (weight_casts "use") are counted at two whatever the GPU."""
    assert lowp.cast_layouts("fp8", "delayed", "blackwell", "step") == 1
    assert lowp.cast_layouts("fp8", "delayed", "blackwell", "use") == 2
    assert lowp.cast_layouts("fp8", "tensorwise", "hopper", "step") == 2
    assert lowp.cached_casts("step") and not lowp.cached_casts("use")
