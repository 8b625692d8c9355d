"""FLOP and parameter counts against published formulas and published parameter counts."""
import pytest
from conftest import gpt

from costmodel.flops import hardware_flops_per_step, model_flops_per_step, total_parameters
from costmodel.types import Model


@pytest.mark.parametrize("layers,h,a,B", [(24, 2304, 24, 512), (96, 12288, 96, 1536), (128, 25600, 160, 3072)])
def test_model_flops_korthikanti_eq7(layers, h, a, B):
    s, V = 2048, 51200
    expected = 72 * B * layers * s * h**2 * (1 + s / (6 * h) + V / (12 * h * layers))
    assert model_flops_per_step(gpt(layers, h, a), B) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("layers,h,a,B", [(24, 2304, 24, 512), (96, 12288, 96, 1536)])
def test_full_recompute_flops_narayanan_eq3(layers, h, a, B):
    s, V = 2048, 51200
    expected = 96 * B * s * layers * h**2 * (1 + s / (6 * h) + V / (16 * layers * h))
    assert hardware_flops_per_step(gpt(layers, h, a), B, "full") == pytest.approx(expected, rel=1e-12)


def test_selective_recompute_adds_one_attention_core_forward():
    # Re-running QK^T and attention x V costs their forward, 4 B s^2 h per layer.
    m = gpt(24, 2304, 24)
    extra = hardware_flops_per_step(m, 8, "selective") - model_flops_per_step(m, 8)
    assert extra == pytest.approx(24 * 4 * 8 * 2048**2 * 2304)


def test_llama2_7b_parameter_count():
    # Hugging Face meta-llama/Llama-2-7b-hf: 6,738,415,616 parameters (untied, SwiGLU, no biases).
    m = Model("llama2-7b", 32, 4096, 32, 32000, 4096, ffn_hidden_size=11008, mlp="swiglu")
    assert total_parameters(m) == 6_738_415_616


def test_llama3_8b_parameter_count_with_gqa():
    # Hugging Face meta-llama/Meta-Llama-3-8B: 8,030,261,248 parameters (8 KV heads of 128).
    m = Model("llama3-8b", 32, 4096, 32, 128256, 8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")
    assert total_parameters(m) == 8_030_261_248


@pytest.mark.parametrize("layers,h,a,published_b", [(24, 2304, 24, 1.7), (80, 12288, 96, 145.6), (128, 25600, 160, 1008.0)])
def test_megatron_table1_parameter_counts(layers, h, a, published_b):
    # Narayanan et al. 2021 eq. for Table 1: P = 12 l h^2 (1 + 13/12h + (V+s)/12lh), which also counts
    # biases and norm biases (13h per layer) and learned positions (s h); we count weights only
    # (2 norm weights per layer, one final norm), so ours + 11 l h + s h - h is their P.
    s, V = 2048, 51200
    narayanan = 12 * layers * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * layers * h))
    ours = total_parameters(gpt(layers, h, a))
    assert ours + 11 * layers * h + s * h - h == pytest.approx(narayanan, rel=1e-12)
    assert narayanan / 1e9 == pytest.approx(published_b, abs=0.05 * max(1, published_b / 100))


def test_gqa_swiglu_model_flops_palm_appendix_b():
    """Chowdhery et al. 2022 (PaLM) Appendix B: model FLOPs per token = 6 N + 12 L h s, N the matmul
    weights. Llama 3 8B (GQA 8 KV heads of 128, SwiGLU f = 14336, V = 128256, s = 8192):
      per layer Q, O 2 x 4096^2 + K, V 2 x 4096 x 1024 + MLP 3 x 4096 x 14336 = 218,103,808
      N = 32 x 218,103,808 + output 4096 x 128256 = 7,504,658,432
      6 N + 12 x 32 x 4096 x 8192 = 57,912,852,480 FLOPs per token; x 8192 tokens per sequence."""
    m = Model("llama3-8b", 32, 4096, 32, 128256, 8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")
    assert model_flops_per_step(m, 1) == 57_912_852_480 * 8192
    assert model_flops_per_step(m, 4) == 4 * 57_912_852_480 * 8192


def test_op_recompute_reruns_every_second_matmul():
    """torchtitan per-op SAC (activation_checkpoint.py) saves every odd-numbered matmul output in execution
    order and recomputes the others' forward. Separate projections (torchtitan's Llama of 2024-2025: wq, wk, wv,
    wo, w1, w3, w2): wk (4096 x 1024), wo (4096 x 4096) and w3 (4096 x 14336): 2 x (4,194,304 + 16,777,216 +
    58,720,256) = 159,383,552 FLOPs per token per layer. With QKV fused (wqkv, wo, w1, w3, w2): wo and w3,
    2 x (16,777,216 + 58,720,256) = 150,994,944."""
    m = Model("llama3-8b", 32, 4096, 32, 128256, 8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")
    extra = hardware_flops_per_step(m, 1, "op", projections="separate") - model_flops_per_step(m, 1)
    assert extra == 32 * 159_383_552 * 8192
    extra = hardware_flops_per_step(m, 1, "op", projections="fused_qkv") - model_flops_per_step(m, 1)
    assert extra == 32 * 150_994_944 * 8192
