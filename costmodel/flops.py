"""Parameter and FLOP counts of a decoder-only transformer, dense or mixture-of-experts.

Source: Narayanan et al. 2021 (arXiv:2104.04473) Sec 5.1 / Appendix and Korthikanti et al. 2022
(arXiv:2205.05198) Sec 6: a GEMM of (m x k) @ (k x n) costs 2mkn FLOPs; per layer forward with
MHA and a 4h GeLU MLP this gives 24 b s h^2 + 4 b s^2 h. Generalised here to grouped-query
attention (K/V projections of width kv_heads*head_dim, an explicit head_dim), multi-head latent
attention (DeepSeek-V2 Sec 2.1: low-rank query and key/value latents), gated MLPs (3 matrices
h x f), and routed experts (Fedus et al., Switch Transformer, Sec 2: a token's FLOPs are those of the
experts it is routed to, so FLOPs follow the *active* parameters: router, top-k experts, shared
experts). Attention scores count the full s x s product (causal masking not subtracted) as the
papers do, unless `causal=True` (newer Megatron-Bridge tables count the causal half); local
(sliding / chunked) layers count the keys each query sees. Backward = 2 x forward.
"""
from __future__ import annotations

from functools import lru_cache

from .types import Model


@lru_cache(maxsize=1024)
def layer_representatives(model: Model) -> tuple[int, ...]:
    """For each layer, the model's first layer of the same kind (MoE or dense MLP, local or global
    attention): layers of one kind have the same parameters, FLOPs and costs."""
    first: dict[tuple[bool, bool], int] = {}
    return tuple(first.setdefault((model.is_moe_layer(i), model.is_local_attention_layer(i)), i)
                 for i in range(model.num_layers))


@lru_cache(maxsize=1024)
def layer_kind_counts(model: Model) -> tuple[tuple[int, int], ...]:
    """(representative layer, how many layers of its kind) for the whole stack."""
    counts: dict[int, int] = {}
    for rep in layer_representatives(model):
        counts[rep] = counts.get(rep, 0) + 1
    return tuple(sorted(counts.items()))


def q_width(model: Model) -> int:
    """Width of the queries (and of the attention output): heads x per-head query dimension."""
    if model.mla:
        return model.num_attention_heads * (model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim)
    return model.num_attention_heads * model.head_dim


def kv_width(model: Model) -> int:
    """Width of the keys, and of the values, of standard attention: kv_heads x head_dim (grouped-query attention
    shares each K/V head among num_attention_heads / kv_heads query heads; Ainslie et al. 2023, arXiv:2305.13245)."""
    return model.kv_heads * model.head_dim


def value_width(model: Model) -> int:
    """Width of the attention output before the output projection: heads x value head dimension."""
    if model.mla:
        return model.num_attention_heads * model.mla.v_head_dim
    return model.num_attention_heads * model.head_dim


def qkv_out_dim(model: Model) -> int:
    """Output width of the fused QKV projection (heads x head_dim for Q, kv_heads x head_dim for K
    and V); under MLA the total output width of its down and up projections."""
    if model.mla:
        return sum(n for _, n in mla_projections(model))
    return q_width(model) + 2 * kv_width(model)


def mla_projections(model: Model) -> list[tuple[int, int]]:
    """(input, output) widths of the MLA projections before attention (DeepSeek-V2 eq. 9-10, 12-14):
    query down to q_lora_rank and up to heads x (nope + rope) (or straight from h without a query
    latent); keys/values down to kv_lora_rank plus the shared RoPE key, then up to heads x (nope + v)."""
    m, h, heads = model.mla, model.hidden_size, model.num_attention_heads
    q = [(h, m.q_lora_rank), (m.q_lora_rank, q_width(model))] if m.q_lora_rank else [(h, q_width(model))]
    kv = [(h, m.kv_lora_rank + m.qk_rope_head_dim), (m.kv_lora_rank, heads * (m.qk_nope_head_dim + m.v_head_dim))]
    return q + kv


def attention_parameters(model: Model) -> int:
    """Weights of one layer's attention: Q/K/V (or MLA) projections and the output projection,
    plus MLA's latent norms."""
    h = model.hidden_size
    out = value_width(model) * h
    if model.mla:
        norms = model.mla.kv_lora_rank + model.mla.q_lora_rank
        return sum(i * o for i, o in mla_projections(model)) + out + norms
    return h * qkv_out_dim(model) + out


def mla_down_parameters(model: Model) -> int:
    """MLA's down projections to the latents (and the shared RoPE key) and the latents' norms: the part of
    attention_parameters that every tensor-parallel rank holds whole (Megatron-core builds the down
    projections as Transformer Engine linears in parallel_mode "duplicated", multi_latent_attention.py,
    since core v0.14.0; before, column-parallel with the latent gathered). 0 without MLA."""
    if not model.mla:
        return 0
    m, h = model.mla, model.hidden_size
    return h * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim) + m.q_lora_rank + m.kv_lora_rank


def tp_replicated_parameters(model: Model, moe: bool = False) -> int:
    """Weights of one layer that tensor parallelism does not split (Megatron-core d98e8a64, checked by
    building shards with its own code: tests/test_megatron_shards.py): the two norms, the router's E x h
    of an MoE layer (moe/router.py), MLA's down projections and latent norms (mla_down_parameters)."""
    router = model.hidden_size * model.moe.num_experts if moe else 0
    return 2 * model.hidden_size + router + mla_down_parameters(model)


def mlp_matrices(model: Model) -> int:
    """Number of h x f weight matrices in the MLP: 2 for GeLU or squared ReLU, 3 gated (gate, up, down)."""
    return 3 if model.gated_mlp else 2


def dense_mlp_parameters(model: Model) -> int:
    """Weights of one dense layer's MLP, biases left out: two h x ffn matrices, three when gated (GLU variants,
    Shazeer 2020, arXiv:2002.05202 Sec 2; mlp_matrices)."""
    return mlp_matrices(model) * model.hidden_size * model.ffn


def expert_parameters(model: Model) -> int:
    """Weights of one routed expert."""
    return mlp_matrices(model) * model.hidden_size * model.moe.ffn_hidden_size


def moe_mlp_parameters(model: Model, active: bool = False) -> int:
    """Weights of one MoE MLP: router (h x E), routed experts (all, or the top-k a token uses), shared
    experts."""
    moe, h = model.moe, model.hidden_size
    routed = (moe.experts_per_token if active else moe.num_experts) * expert_parameters(model)
    return h * moe.num_experts + routed + mlp_matrices(model) * h * moe.shared_ffn_hidden_size


def parameters_per_layer(model: Model, moe: bool = False, active: bool = False) -> int:
    """Weights of one layer: attention, MLP (dense, or MoE: all experts or the active ones), two norms
    (biases ignored)."""
    mlp = moe_mlp_parameters(model, active) if moe else dense_mlp_parameters(model)
    return attention_parameters(model) + mlp + 2 * model.hidden_size


def embedding_parameters(model: Model) -> int:
    """Input embedding V x h (position embeddings ignored: learned ones are s x h, small)."""
    return model.vocab_size * model.hidden_size


def layer_parameters_sum(model: Model, active: bool = False) -> int:
    """All transformer layers' weights (MoE layers counted with all experts, or the active ones)."""
    moe_layers = model.moe_layers
    dense = (model.num_layers - moe_layers) * parameters_per_layer(model)
    return dense + (moe_layers * parameters_per_layer(model, True, active) if moe_layers else 0)


def total_parameters(model: Model, active: bool = False) -> int:
    """All weights of the main model (multi-token prediction modules apart, mtp_parameters); an untied
    output layer adds another V x h. With `active`, the weights one token uses (top-k experts)."""
    output = 0 if model.tie_embeddings else embedding_parameters(model)
    return layer_parameters_sum(model, active) + embedding_parameters(model) + output + model.hidden_size


def mtp_parameters(model: Model) -> int:
    """Weights of the multi-token prediction modules as checkpoints store them (DeepSeek-V3 Sec 2.2:
    each a transformer layer, the 2h x h projection of [hidden; next-token embedding], three norms,
    and its own copy of the embedding and output layer, shared with the main model in training)."""
    if not model.mtp_layers:
        return 0
    h = model.hidden_size
    layer = parameters_per_layer(model, model.moe is not None)
    return model.mtp_layers * (layer + 2 * h * h + 3 * h + 2 * embedding_parameters(model))


def layer_gemm_flops(model: Model, tokens: int, moe: bool = False) -> float:
    """Forward FLOPs of the weight GEMMs of one layer (attention projections, MLP or the router and the
    experts each token is routed to) for `tokens` tokens: 2 x active weights per token."""
    active = parameters_per_layer(model, moe, active=True) - 2 * model.hidden_size
    if model.mla:
        active -= model.mla.kv_lora_rank + model.mla.q_lora_rank  # latent norms, not GEMMs
    return 2.0 * active * tokens


def attention_keys_per_query(model: Model, index: int = -1, causal: bool = False) -> float:
    """Keys each query attends to on average in layer `index` (< 0: a global layer): s for full
    attention counted as the papers do (full square), s/2 causal (as the newer Megatron-Bridge tables
    count). A local layer's queries see the keys inside their window: sliding w, minus the ramp at the
    sequence start, sum_i min(i + 1, w) / s = w - w(w - 1)/2s; chunked (w + 1)/2 on average within a
    w-token chunk; doubled under the full-square convention, as for global layers."""
    s = model.seq_length
    if index < 0 or not model.is_local_attention_layer(index):
        return s / 2 if causal else float(s)
    w = model.attention_window
    keys = w - w * (w - 1) / (2 * s) if model.window_kind == "sliding" else (w + 1) / 2
    return keys if causal else 2 * keys


def layer_attention_flops(model: Model, batch: int, index: int = -1, causal: bool = False) -> float:
    """Forward FLOPs of QK^T and attention-times-V for `batch` sequences: 2 b s x keys per query x
    (query + value widths), which for full multi-head attention is 4 b s^2 h."""
    keys = attention_keys_per_query(model, index, causal)
    return 2.0 * batch * model.seq_length * keys * (q_width(model) + value_width(model))


def layer_forward_flops(model: Model, batch: int, index: int = -1, causal: bool = False) -> float:
    """Forward FLOPs of transformer layer `index` for `batch` sequences (Korthikanti Sec 6).
    `index` < 0: a dense, global-attention layer."""
    moe = index >= 0 and model.is_moe_layer(index)
    return layer_gemm_flops(model, batch * model.seq_length, moe) + layer_attention_flops(model, batch, index, causal)


def logits_forward_flops(model: Model, batch: int) -> float:
    """Forward FLOPs of the output projection to the vocabulary: 2 b s h V."""
    return 2.0 * batch * model.seq_length * model.hidden_size * model.vocab_size


def mtp_forward_flops(model: Model, batch: int, causal: bool = False) -> float:
    """Forward FLOPs of the multi-token prediction modules: a layer (MoE when the model is), the 2h x h
    projection and the output layer, each (DeepSeek-V3 Sec 2.2)."""
    if not model.mtp_layers:
        return 0.0
    tokens = batch * model.seq_length
    layer = layer_gemm_flops(model, tokens, model.moe is not None) + layer_attention_flops(model, batch, -1, causal)
    proj = 2.0 * tokens * 2 * model.hidden_size * model.hidden_size
    return model.mtp_layers * (layer + proj + logits_forward_flops(model, batch))


def model_flops_per_step(model: Model, global_batch_size: int, causal: bool = False) -> float:
    """Model FLOPs of one optimizer step (forward + backward, no recompute).

    Korthikanti eq. 7 for GPT: 72 B L s h^2 (1 + s/6h + V/12hL); this function is its
    generalisation: 3 x (sum of the layers' forward + logits forward + MTP modules).
    """
    forward = sum(n * layer_forward_flops(model, global_batch_size, rep, causal) for rep, n in layer_kind_counts(model))
    return 3.0 * (forward + logits_forward_flops(model, global_batch_size)
                  + mtp_forward_flops(model, global_batch_size, causal))


def fuses_qkv(projections: str) -> bool:
    """Whether the stack runs Q, K and V as one GEMM (Plan.projections: fused, fused_qkv)."""
    return projections != "separate"


def fuses_gate_up(projections: str) -> bool:
    """Whether the stack runs a gated MLP's gate and up as one GEMM (Plan.projections: fused only)."""
    return projections == "fused"


def projection_widths(model: Model, projections: str = "fused") -> list[int]:
    """Output widths of a dense layer's matmuls in execution order as the stack writes them (Plan.projections):
    separate, as torchtitan's Llama of 2024-2025: wq, wk, wv, wo, then w1, w3, w2 (SwiGLU) or fc1, fc2 (GeLU);
    fused_qkv (torchtitan since fuse_qkv): wqkv, wo, w1, w3, w2; fused (Megatron-core): wqkv, wo, w13, w2."""
    h, kv, f = model.hidden_size, kv_width(model), model.ffn
    attention = [q_width(model) + 2 * kv] if fuses_qkv(projections) else [q_width(model), kv, kv]
    gated = mlp_matrices(model) == 3
    mlp = ([2 * f, h] if fuses_gate_up(projections) else [f, f, h]) if gated else [f, h]
    return attention + [h] + mlp


def projection_inputs(model: Model, projections: str = "fused") -> list[int]:
    """Input widths of the same matmuls (wo's input is heads x head_dim, w2's is f)."""
    h, f = model.hidden_size, model.ffn
    attention = [h] if fuses_qkv(projections) else [h, h, h]
    gated = mlp_matrices(model) == 3
    mlp = ([h, f] if fuses_gate_up(projections) else [h, h, f]) if gated else [h, f]
    return attention + [value_width(model)] + mlp


def op_recomputed_gemm_flops(model: Model, tokens: int, projections: str = "fused") -> float:
    """Forward FLOPs of the matmuls torchtitan's per-op SAC recomputes: every second one in
    execution order (torchtitan/distributed/activation_checkpoint.py, SelectiveAC)."""
    pairs = list(zip(projection_inputs(model, projections), projection_widths(model, projections)))
    return float(sum(2 * tokens * k * n for i, (k, n) in enumerate(pairs) if i % 2 == 1))


def moe_layer_gemms(model: Model) -> list[tuple[int, int, int]]:
    """(input, output, matmuls per token) of one MoE layer's GEMMs in the order the cost model runs
    them (compute.attention_gemms, moe.mlp_work): the fused QKV (or MLA's projections), the output
    projection, the router, the grouped experts' fused up (and gate) and their down (k per token),
    then the shared experts' up and down."""
    h, moe = model.hidden_size, model.moe
    attention = mla_projections(model) if model.mla else [(h, qkv_out_dim(model))]
    up, k = mlp_matrices(model) - 1, moe.experts_per_token
    gemms = [(i, o, 1) for i, o in attention] + [(value_width(model), h, 1), (h, moe.num_experts, 1),
                                                  (h, up * moe.ffn_hidden_size, k), (moe.ffn_hidden_size, h, k)]
    if moe.shared_ffn_hidden_size:
        gemms += [(h, up * moe.shared_ffn_hidden_size, 1), (moe.shared_ffn_hidden_size, h, 1)]
    return gemms


def op_sac_moe_linears(linears: list, shared: list, halve_up=None) -> list:
    """An MoE layer's mm/linear ops in the order torchtitan's per-op selective AC counts them
    (torchtitan 0.3.0, distributed/activation_checkpoint.py: _get_default_save_ops and the policy's mm
    count): `linears` (the attention projections, the output projection, the router), then `shared`
    (the shared experts' up and down), whose fused gate and up `halve_up` splits into w1 and w3, two
    linears in torchtitan (None: not gated). It saves the odd-numbered outputs ([0::2]) and replays the
    even-numbered ([1::2]). The routed experts' grouped GEMMs (torch._grouped_mm) are not in its save
    list and not counted: it replays them all. GEMMs in any one format."""
    if shared and halve_up is not None:
        shared = [*halve_up(shared[0]), *shared[1:]]
    return linears + shared


def op_sac_moe_split(model: Model) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """moe_layer_gemms as per-op selective AC sees them: (the linears in its order, op_sac_moe_linears;
    the routed experts' GEMMs)."""
    gemms = moe_layer_gemms(model)
    n = len(mla_projections(model)) + 2 if model.mla else 3  # attention projection(s), output, router
    halve = (lambda g: [(g[0], g[1] // 2, g[2])] * 2) if mlp_matrices(model) == 3 else None
    return op_sac_moe_linears(gemms[:n], gemms[n + 2:], halve), gemms[n:n + 2]


def op_sac_moe_gemms(model: Model) -> list[tuple[int, int, int]]:
    """moe_layer_gemms that per-op selective AC replays: every second linear, every routed GEMM."""
    linears, routed = op_sac_moe_split(model)
    return linears[1::2] + routed


def selective_recompute_flops(model: Model, batch: int, modules: tuple[str, ...], index: int = -1) -> float:
    """Forward FLOPs Megatron's selective recompute replays for `modules` (types.RECOMPUTE_MODULES):
    the attention core (one forward of its two s x s matmuls, 4 b s^2 h over the full square: what the replay
    runs; Korthikanti et al. 2022 eq. 8 adds 12 b s^2 h, s/3h against the MFU's s/6h, three such forwards,
    which its Table 5 HFUs use, so HFU here is 0.5-1.5 points under that table's), MLA's up projections, a
    dense layer's MLP, an MoE layer's whole MLP (router, the k routed experts, the shared experts) or its
    shared experts alone; the norms and the experts' activation function are elementwise (no matmul FLOPs)."""
    tokens = batch * model.seq_length
    dense = index < 0 or not model.is_moe_layer(index)
    out = layer_attention_flops(model, batch, index) if "core_attn" in modules else 0.0
    if "mla_up_proj" in modules and model.mla:
        ups = (1, 3) if model.mla.q_lora_rank else (0, 2)  # as layer.module_replays
        out += 2.0 * tokens * sum(k * n for i, (k, n) in enumerate(mla_projections(model)) if i in ups)
    if "mlp" in modules and dense:
        out += 2.0 * tokens * dense_mlp_parameters(model)
    if "moe" in modules and not dense:
        out += 2.0 * tokens * moe_mlp_parameters(model, active=True)
    elif "shared_experts" in modules and not dense:
        out += 2.0 * tokens * mlp_matrices(model) * model.hidden_size * model.moe.shared_ffn_hidden_size
    return out


def recompute_flops_per_layer(model: Model, batch: int, recompute: str, index: int = -1,
                              modules: tuple[str, ...] = ("core_attn",), projections: str = "fused") -> float:
    """Extra forward FLOPs one layer spends re-materialising activations in backward.

    full: the whole layer forward again (Narayanan eq. 3 counts 4 passes instead of 3).
    selective: the `modules` Megatron replays (selective_recompute_flops: the attention core's one forward,
    not the three Korthikanti's eq. 8 counts).
    op: torchtitan's per-op selective AC: every second matmul of a dense layer's projections as the stack
    writes them (`projections`); on an MoE layer every second linear and every routed expert GEMM
    (op_sac_moe_gemms, one QKV GEMM).
    """
    if recompute == "full":
        return layer_forward_flops(model, batch, index)
    if recompute == "selective":
        return selective_recompute_flops(model, batch, modules, index)
    if recompute == "op":
        tokens = batch * model.seq_length
        if index >= 0 and model.is_moe_layer(index):
            return float(sum(2 * tokens * k * n * per_token for k, n, per_token in op_sac_moe_gemms(model)))
        return op_recomputed_gemm_flops(model, tokens, projections)
    return 0.0


def hardware_flops_per_step(model: Model, global_batch_size: int, recompute: str,
                            modules: tuple[str, ...] = ("core_attn",), projections: str = "fused",
                            recomputed: tuple | None = None) -> float:
    """FLOPs the hardware executes per step, including recomputation (HFU numerator). `recomputed`: the
    (representative layer, count) of the layers that recompute, every layer (layer_kind_counts) if None."""
    kinds = layer_kind_counts(model) if recomputed is None else recomputed
    extra = sum(n * recompute_flops_per_layer(model, global_batch_size, recompute, rep, modules, projections)
                for rep, n in kinds)
    return model_flops_per_step(model, global_batch_size) + extra
