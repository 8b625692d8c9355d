"""Korthikanti et al. 2022 (arXiv:2205.05198) activation memory, Sec 4 eq. 1-6 and Sec 4.3,
for the paper's own configurations (Table 3): s = 2048, v = 51200, t = 8.

Expected values are the paper's formulas evaluated by hand in this file; the cost model computes
activations term by term (GQA/SwiGLU/flash-aware), so agreement checks the generalisation."""
import pytest
from conftest import gpt

from costmodel.memory import layer_activation_bytes
from costmodel.stage import stage_activation_bytes
from costmodel.types import Plan

S, V, T = 2048, 51200, 8
# name: (layers L, hidden h, heads a, pp, interleave v, micro-batch b)
CONFIGS = {
    "22B": (48, 6144, 64, 1, 1, 4),
    "175B": (96, 12288, 96, 8, 3, 1),
    "530B": (105, 20480, 128, 35, 3, 1),
    "1T": (128, 25600, 160, 64, 1, 1),
}


def paper_per_layer(h, a, b, mode):
    sbh = S * b * h
    return {
        "no_parallel": sbh * (34 + 5 * a * S / h),                    # eq. 1, t = 1
        "tp": sbh * (10 + 24 / T + 5 * a * S / (h * T)),              # eq. 2
        "tp_sp": sbh / T * (34 + 5 * a * S / h),                      # eq. 4
        "tp_selective": sbh * (10 + 24 / T),                          # Table 2
        "tp_sp_selective": sbh * 34 / T,                              # eq. 6 per layer
        "full": 2 * sbh,                                              # Table 2, full recompute
    }[mode]


MODES = {  # mode: (tp, sequence_parallel, recompute)
    "no_parallel": (1, False, "none"),
    "tp": (T, False, "none"),
    "tp_sp": (T, True, "none"),
    "tp_selective": (T, False, "selective"),
    "tp_sp_selective": (T, True, "selective"),
    "full": (T, False, "full"),
}


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("mode", MODES)
def test_per_layer_activation_bytes(name, mode):
    layers, h, a, _, _, b = CONFIGS[name]
    tp, sp, recompute = MODES[mode]
    got = layer_activation_bytes(gpt(layers, h, a), b, tp, sp, recompute, flash=False)
    assert got == pytest.approx(paper_per_layer(h, a, b, mode), rel=1e-9)


@pytest.mark.parametrize("name", CONFIGS)
def test_first_stage_total_with_tp_sp(name):
    """Eq. 5 (1F1B: first stage holds p micro-batches of L/p layers = L layers), times
    (1 + (p-1)/(p v)) when interleaved, plus the Sec 4.3 extras: embedding dropout sbhp/t and,
    when p = 1, the output layer and fp32 logits 4sbh/t (1 + v/h)."""
    layers, h, a, pp, vpp, b = CONFIGS[name]
    sbh = S * b * h
    expected = sbh * layers / T * (34 + 5 * a * S / h)
    if vpp > 1:
        expected *= 1 + (pp - 1) / (pp * vpp)
    expected += sbh * pp / T
    if pp == 1:
        expected += 4 * sbh / T * (1 + V / h)
    plan = Plan(tp=T, pp=pp, dp=1, vpp=vpp, micro_batch_size=b, global_batch_size=64 * pp * b,
                sequence_parallel=True, recompute="none", flash_attention=False)
    got = stage_activation_bytes(gpt(layers, h, a), plan, layers // pp, 0)
    # The embedding term is counted per in-flight micro-batch including the interleave factor: <0.1% apart.
    assert got == pytest.approx(expected, rel=2e-3)


def test_table2_sizes_in_gib_for_175b():
    """A readable anchor: 175B, t = 8, SP + selective, b = 1: 34 sbh / t = 34*2048*12288/8 bytes
    = 102 MiB per layer, x 96 layers x (1 + 7/24) interleave = 12.3 GiB on the first stage."""
    layers, h, a, pp, vpp, b = CONFIGS["175B"]
    per_layer = layer_activation_bytes(gpt(layers, h, a), b, T, True, "selective", flash=False)
    assert per_layer / 2**20 == pytest.approx(102.0, rel=1e-9)
    assert per_layer * layers * (1 + 7 / 24) / 2**30 == pytest.approx(12.36, rel=1e-3)


def test_eager_fp32_cross_entropy_holds_three_fp32_logit_tensors():
    """torchtitan at 9dec370 computes F.cross_entropy(pred.float()) eagerly: when backward starts
    the saved fp32 log-softmax output, the NLL gradient and the log-softmax input gradient (4 B
    each) are alive, 12 B per logit instead of the fused loss's single fp32 copy (4 B).
    Llama 3.1 8B, local batch 2 x 8192 tokens, vocab 128256, tp 1: 8 B x 16384 x 128256 more."""
    from costmodel.types import Model

    model = Model("llama3.1-8b", 32, 4096, 32, 128256, 8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")
    base = dict(tp=1, dp=8, micro_batch_size=2, global_batch_size=16, zero_stage=3, recompute="op")
    fused = stage_activation_bytes(model, Plan(**base), 32, 0)
    eager = stage_activation_bytes(model, Plan(**base, cross_entropy="eager"), 32, 0)
    assert eager - fused == 8 * 2 * 8192 * 128256  # 16.8 GB, 15.7 GiB


def test_eager_vocab_parallel_cross_entropy_holds_four_fp32_logit_shards():
    """Under TP torchtitan's eager loss runs as DTensor's loss parallel, whose nll-loss backward computes
    (zeros with -1 at the targets + exp(x)) * grad_output on the local shard: the saved log-softmax output x,
    the zeros, exp(x) and the sum are alive at once, 16 B per local logit. Llama 3.1 70B, local batch
    16 x 8192 tokens, vocab 128256 split over tp 8: 12 B per local logit more than the fused loss's 4 B,
    i.e. 12 x 16 x 8192 x 16032 = 25.2 GB (the 12 B tp 1 count would give 8 B, 16.8 GB)."""
    from costmodel.types import Model

    model = Model("llama3.1-70b", 80, 8192, 64, 128256, 8192, num_kv_heads=8, ffn_hidden_size=28672, mlp="swiglu")
    base = dict(tp=8, dp=32, micro_batch_size=16, global_batch_size=512, zero_stage=3, recompute="full",
                sequence_parallel=True)
    fused = stage_activation_bytes(model, Plan(**base), 80, 0)
    eager = stage_activation_bytes(model, Plan(**base, cross_entropy="eager"), 80, 0)
    assert eager - fused == 12 * 16 * 8192 * (128256 // 8)


LLAMA3_8B = dict(name="llama3-8b", num_layers=32, hidden_size=4096, num_attention_heads=32, vocab_size=128256,
                 seq_length=8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")


def llama_by_hand(flash: bool, element_bytes: int) -> float:
    """Llama 3 8B, one sequence of s = 8192, tp 1, no recompute, no dropout: Korthikanti eq. 1 term by
    term with GQA (K, V at kv/a = 8/32 of h) and SwiGLU (gate, up and their product, 3 x sbf), in 16-bit
    (element_bytes 2) or fp32 (4) tensors; the fp32 logits are 4 B per element either way.
      sbh = 8192 x 4096 = 33,554,432
      norm inputs 2 x sbh, QKV input sbh, MLP input sbh          -> 4 sbh elements
      Q sbh, K and V 2 x sbh/4, projection input sbh             -> 2.5 sbh elements
      unfused softmax, no dropout: scores + probabilities        -> 2 a s^2 b / 2 = 2,147,483,648 elements
        (FlashAttention instead: its fp32 log-sum-exp, 4 a s b = 1,048,576 bytes)
      SwiGLU: 3 s b f = 3 x 8192 x 14336 = 352,321,536 elements
      last stage: final norm input and output-layer input 2 sbh elements, fp32 logits 4 s b V bytes."""
    sbh, s, a, f, V = 8192 * 4096, 8192, 32, 14336, 128256
    elements = 4 * sbh + 2.5 * sbh + 3 * s * f + (0 if flash else a * s * s)
    per_layer = elements * element_bytes + (4 * a * s if flash else 0)
    return 32 * per_layer + 2 * sbh * element_bytes + 4 * s * V


@pytest.mark.parametrize("flash", [False, True], ids=["unfused", "flash"])
def test_llama3_8b_stage_activations_by_hand(flash):
    # unfused: 32 x 5,435,817,984 + 134,217,728 + 4,202,692,608 = 178,283,085,824 bytes
    from costmodel.types import Model

    model = Model(**LLAMA3_8B)
    plan = Plan(tp=1, dp=8, micro_batch_size=1, global_batch_size=8, flash_attention=flash)
    assert stage_activation_bytes(model, plan, 32, 0) == pytest.approx(llama_by_hand(flash, 2), rel=1e-12)
    if not flash:
        assert llama_by_hand(False, 2) == 178_283_085_824


def test_llama3_8b_fp32_stage_activations_by_hand():
    # every activation tensor is 4 B in fp32 training; only the logits (fp32 in both) stay as they were:
    # 2 x 173,946,175,488 + 8 sbh (268,435,456) + 4,202,692,608 = 352,363,479,040 bytes
    from costmodel.types import Model

    model = Model(**LLAMA3_8B)
    plan = Plan(tp=1, dp=8, micro_batch_size=1, global_batch_size=8, flash_attention=False, precision="fp32")
    assert llama_by_hand(False, 4) == 352_363_479_040
    assert stage_activation_bytes(model, plan, 32, 0) == pytest.approx(llama_by_hand(False, 4), rel=1e-12)
