"""The cost model's GEMM time against GEMMs this project timed inside a training step on a lent H200
(benchmarks/gemm_in_step.py; its log: benchmarks/results/gemm_in_step_h200_2026-12-04.log).

The step: four Llama 3 8B decoder layers (hidden 4096, 32 query / 8 KV heads of 128, SwiGLU 14336) on one
8,192-token sequence in bf16, forward and backward, PyTorch 2.11 on CUDA 13.0, the card at its 700 W limit
(693 W, 1530 MHz, after 45 s of steps). torch.profiler summed the GEMM kernels (cuBLAS nvjet) at 56.84 ms a
step. By hand, the GEMM FLOPs of that step: per token and layer the four linears hold 4096 x 6144 + 4096 x 4096
+ 4096 x 28672 + 14336 x 4096 = 218,103,808 weights; forward 2 FLOP per weight and token, backward twice that:
6 x 8192 x 218,103,808 x 4 = 4.288e13 FLOP, so the GEMMs ran at 754 TFLOP/s inside the step. The same four
forward shapes alone on the cool card ran at 722.6-799.6 TFLOP/s (776 weighted by FLOPs): power-limited, the
step's GEMMs kept 97% of it, where GEMMs back to back keep 85% (benchmarks/gemm_sustained.py).
"""
from __future__ import annotations

import pytest

from costmodel import types as cm
from costmodel.layer import layer_times
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.loading import load_model_spec

MEASURED_GEMM_SECONDS_PER_STEP = 0.05684
LAYERS = 4
WEIGHTS_PER_LAYER = 4096 * 6144 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096


def test_hand_count_of_the_step():
    assert WEIGHTS_PER_LAYER == 218_103_808
    flops = 6 * 8192 * WEIGHTS_PER_LAYER * LAYERS
    assert flops == pytest.approx(4.288e13, rel=1e-3)
    assert flops / MEASURED_GEMM_SECONDS_PER_STEP / 1e12 == pytest.approx(754.4, abs=0.5)


def test_model_gemm_seconds_match_the_h200_step():
    """The model's GEMM seconds for those four layers (its forward GEMMs, three times over for forward and
    backward: costmodel/layer.py) within 3% of the measured 56.84 ms (the model: 57.7 ms, +1.5%)."""
    spec = load_model_spec("llama3-8b", seq_length=8192)
    spec = spec[0] if isinstance(spec, tuple) else spec
    model = spec.to_model()
    assert (model.hidden_size, model.ffn, model.num_attention_heads, model.num_kv_heads) == (4096, 14336, 32, 8)
    gpu = resolve_gpu("h200-sxm-141gb").to_gpu()
    lt = layer_times(model, 1, 1, False, True, gpu, "bf16", cm.Efficiency())
    predicted = 3 * lt.gemm_forward_seconds * LAYERS
    print(f"model {predicted * 1e3:.2f} ms against measured {MEASURED_GEMM_SECONDS_PER_STEP * 1e3:.2f} ms")
    assert predicted == pytest.approx(MEASURED_GEMM_SECONDS_PER_STEP, rel=0.03)
