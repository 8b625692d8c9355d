"""FLOP counts of a dense decoder-only transformer.

Source: Narayanan et al. 2021 (arXiv:2104.04473) Sec 5.1 / Appendix and Korthikanti et al. 2022
(arXiv:2205.05198) Sec 6: a GEMM of (m x k) @ (k x n) costs 2mkn FLOPs; per layer forward with
MHA and a 4h GeLU MLP this gives 24 b s h^2 + 4 b s^2 h. Generalised here to grouped-query
attention (K/V projections of width kv_heads*head_dim) and gated SwiGLU MLPs (3 matrices h x f).
Attention scores count the full s x s product (causal masking not subtracted), as the papers do.
Backward = 2 x forward (gradients w.r.t. inputs and weights).
"""
from __future__ import annotations

from .types import Model


def qkv_out_dim(model: Model) -> int:
    """Output width of the fused QKV projection: h for Q plus 2 * kv_heads * head_dim for K, V."""
    return model.hidden_size + 2 * model.kv_heads * model.head_dim


def mlp_matrices(model: Model) -> int:
    """Number of h x f weight matrices in the MLP: 2 for GeLU or squared ReLU, 3 gated (gate, up, down)."""
    return 3 if model.gated_mlp else 2


def layer_gemm_flops(model: Model, tokens: int) -> float:
    """Forward FLOPs of the weight GEMMs of one layer (QKV, projection, MLP) for `tokens` tokens."""
    h = model.hidden_size
    per_token = 2 * h * qkv_out_dim(model) + 2 * h * h + 2 * mlp_matrices(model) * h * model.ffn
    return float(per_token) * tokens


def layer_attention_flops(model: Model, batch: int) -> float:
    """Forward FLOPs of QK^T and attention-times-V for `batch` sequences: 4 b s^2 h."""
    s = model.seq_length
    return 4.0 * batch * s * s * model.hidden_size


def layer_forward_flops(model: Model, batch: int) -> float:
    """Forward FLOPs of one transformer layer for `batch` sequences (Korthikanti Sec 6)."""
    return layer_gemm_flops(model, batch * model.seq_length) + layer_attention_flops(model, batch)


def logits_forward_flops(model: Model, batch: int) -> float:
    """Forward FLOPs of the output projection to the vocabulary: 2 b s h V."""
    return 2.0 * batch * model.seq_length * model.hidden_size * model.vocab_size


def model_flops_per_step(model: Model, global_batch_size: int) -> float:
    """Model FLOPs of one optimizer step (forward + backward, no recompute).

    Korthikanti eq. 7 for GPT: 72 B L s h^2 (1 + s/6h + V/12hL); this function is its
    generalisation: 3 x (L x layer forward + logits forward).
    """
    forward = model.num_layers * layer_forward_flops(model, global_batch_size)
    return 3.0 * (forward + logits_forward_flops(model, global_batch_size))


def projection_widths(model: Model) -> list[int]:
    """Output widths of a layer's matmuls in execution order, unfused as torchtitan's Llama runs
    them: wq, wk, wv, wo, then w1, w3, w2 (SwiGLU) or fc1, fc2 (GeLU)."""
    h, kv, f = model.hidden_size, model.kv_heads * model.head_dim, model.ffn
    mlp = [f, f, h] if mlp_matrices(model) == 3 else [f, h]
    return [h, kv, kv, h] + mlp


def projection_inputs(model: Model) -> list[int]:
    """Input widths of the same matmuls (wo's input is h, w2's is f)."""
    h, f = model.hidden_size, model.ffn
    mlp = [h, h, f] if mlp_matrices(model) == 3 else [h, f]
    return [h, h, h, h] + mlp


def op_recomputed_gemm_flops(model: Model, tokens: int) -> float:
    """Forward FLOPs of the matmuls torchtitan's per-op SAC recomputes: every second one in
    execution order (torchtitan/distributed/activation_checkpoint.py, SelectiveAC)."""
    pairs = list(zip(projection_inputs(model), projection_widths(model)))
    return float(sum(2 * tokens * k * n for i, (k, n) in enumerate(pairs) if i % 2 == 1))


def recompute_flops_per_layer(model: Model, batch: int, recompute: str) -> float:
    """Extra forward FLOPs one layer spends re-materialising activations in backward.

    full: the whole layer forward again (Narayanan eq. 3 counts 4 passes instead of 3).
    selective: only the attention core, QK^T and softmax-times-V (Korthikanti eq. 8).
    op: every second matmul (torchtitan per-op selective AC).
    """
    if recompute == "full":
        return layer_forward_flops(model, batch)
    if recompute == "selective":
        return layer_attention_flops(model, batch)
    if recompute == "op":
        return op_recomputed_gemm_flops(model, batch * model.seq_length)
    return 0.0


def hardware_flops_per_step(model: Model, global_batch_size: int, recompute: str) -> float:
    """FLOPs the hardware executes per step, including recomputation (HFU numerator)."""
    extra = model.num_layers * recompute_flops_per_layer(model, global_batch_size, recompute)
    return model_flops_per_step(model, global_batch_size) + extra


def parameters_per_layer(model: Model) -> int:
    """Weights of one layer: QKV, projection, MLP matrices, two norms (biases ignored)."""
    h = model.hidden_size
    return h * qkv_out_dim(model) + h * h + mlp_matrices(model) * h * model.ffn + 2 * h


def embedding_parameters(model: Model) -> int:
    """Input embedding V x h (position embeddings ignored: learned ones are s x h, small)."""
    return model.vocab_size * model.hidden_size


def total_parameters(model: Model) -> int:
    """All weights; an untied output layer adds another V x h."""
    output = 0 if model.tie_embeddings else embedding_parameters(model)
    return model.num_layers * parameters_per_layer(model) + embedding_parameters(model) + output + model.hidden_size
