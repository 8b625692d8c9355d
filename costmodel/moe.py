"""A routed mixture-of-experts MLP on one GPU: router, token permutation, the local experts' grouped
GEMMs, shared experts, and the expert-parallel token exchange.

Layout (Megatron-core MoE parallel folding, Liu et al. "MoE Parallel Folding", arXiv:2504.14960,
Sec 3): attention runs over tp x cp x dp ranks of a pipeline stage, the experts over the same ranks
folded as etp x ep x expert-DP. Under TP the MoE layer's input is sequence parallel, so each GPU
routes its own tokens/tp. Each token goes to k experts: the alltoall dispatcher sends each routed copy
to the EP rank holding that expert and brings the result back (dispatch and combine in forward, their
mirror in backward), and with etp > 1 the expert's matrices are split like TP, its tokens gathered
over the etp ranks. With balanced routing (what NVIDIA's benchmarks force) every GPU's experts see
tokens x k rows; `imbalance` scales the busiest rank's rows (what-if: real routers are not
balanced), a capacity factor caps and pads them (GShard Sec 2.2; Megatron's
--moe-pad-expert-input-to-capacity).
"""
from __future__ import annotations

from dataclasses import dataclass

from .compute import Work, mlp_gemms
from .flops import expert_parameters, mlp_matrices


@dataclass(frozen=True)
class ExpertLayout:
    ep: int = 1
    etp: int = 1
    imbalance: float = 1.0  # busiest rank's routed rows over the balanced share
    prologue: bool = False  # the activation's eager prologue runs (Plan.moe_act_prologue, prologue_bytes)


def row_factor(model, layout: ExpertLayout) -> float:
    """Routed rows on the busiest GPU over the balanced share: the capacity factor when experts are
    padded to capacity, else the routing imbalance, at most what routing can do (max_imbalance)."""
    cf = model.moe.capacity_factor
    return cf if cf > 0 else min(layout.imbalance, max_imbalance(model, layout))


def max_imbalance(model, layout: ExpertLayout) -> float:
    """The largest routing imbalance the layout allows: every token of the ep ranks sends as many of its
    k copies as it can to the busiest rank, one per expert there (a token picks k distinct experts,
    GShard Sec 2.2), min(k, E/ep); over the balanced k per token that is ep x min(k, E/ep) / k
    (1 with ep = 1: one rank takes every copy either way)."""
    k = model.moe.experts_per_token
    return layout.ep * min(k, max(1, model.moe.num_experts // layout.ep)) / k


def routed_rows(model, tokens: int, tp: int, layout: ExpertLayout) -> float:
    """Token copies this GPU's experts process per micro-batch: its tokens/tp times k, gathered over
    the etp ranks, times the row factor."""
    return tokens / tp * model.moe.experts_per_token * layout.etp * row_factor(model, layout)


def expert_gemms(model, tokens: int, tp: int, layout: ExpertLayout) -> list:
    """(m, n, k, count) of the grouped expert GEMMs: E/ep local experts, each with rows/(E/ep) tokens,
    up (and gate) then down, their width split over etp."""
    moe, h = model.moe, model.hidden_size
    local = max(1, moe.num_experts // layout.ep)
    m = max(1, round(routed_rows(model, tokens, tp, layout) / local))
    f = moe.ffn_hidden_size // layout.etp
    up = (mlp_matrices(model) - 1) * f
    return [(m, up, h, local), (m, h, f, local)]


def mlp_work(model, tokens: int, tp: int, layout: ExpertLayout) -> Work:
    """Forward work of one MoE MLP on one GPU for `tokens` tokens of its micro-batch (all TP ranks').

    GEMMs: the router (tokens/tp x E, replicated weights), the local experts (expert_gemms), the
    shared experts as a TP-split dense MLP. Elementwise bytes: router logits in fp32 (write, then
    softmax/top-k read and write, 12 B per logit), the permutation (read h, write k copies) and its
    inverse (read k copies, write h) in 16-bit, the expert activation (gated: read 2f, write f) on the
    routed rows and its prologue where it runs (prologue_bytes), the shared experts' activation. Casts: the
    routed rows' inputs to up and down."""
    moe, h = model.moe, model.hidden_size
    own = tokens / tp
    rows = routed_rows(model, tokens, tp, layout)
    f = moe.ffn_hidden_size / layout.etp
    acts = (3 if model.gated_mlp else 2) * f
    moved = (12.0 * own * moe.num_experts + 2.0 * 2.0 * own * h * (1 + moe.experts_per_token) + 2.0 * rows * acts
             + prologue_bytes(model, tokens, tp, layout))
    gemms = [(max(1, round(own)), moe.num_experts, h, 1)] + expert_gemms(model, tokens, tp, layout)
    up = (mlp_matrices(model) - 1) * f
    cast_in, cast_grad = rows * (h + f), rows * (up + h)
    weights = moe.num_experts // layout.ep * expert_parameters(model) / layout.etp
    shared = shared_work(model, tokens, tp)
    return Work(gemms + shared.gemms, moved + shared.moved_bytes, cast_in + shared.cast_inputs,
                cast_grad + shared.cast_grads, weights + shared.weights)


def shared_work(model, tokens: int, tp: int) -> Work:
    """Forward work of the shared experts on one GPU (none: empty): a TP-split dense MLP of the shared
    width, its activation (gated: read 2 x width, write width, 16-bit) and its GEMM inputs' casts. Every token
    goes through them (DeepSeekMoE, Dai et al. 2024, arXiv:2401.06066 Sec 3.2; Megatron-core
    moe/shared_experts.py SharedExpertMLP, an MLP over the whole micro-batch)."""
    h, shared = model.hidden_size, model.moe.shared_ffn_hidden_size
    if not shared:
        return Work([], 0.0, 0.0, 0.0, 0.0)
    moved = 2.0 * tokens * (3 if model.gated_mlp else 2) * shared / tp
    cast_in = tokens * (h / tp + shared / tp)
    cast_grad = tokens * ((mlp_matrices(model) - 1) * shared / tp + h / tp)
    return Work(mlp_gemms(model, tokens, tp, shared), moved, cast_in, cast_grad, mlp_matrices(model) * h * shared / tp)


def activation_function_bytes(model, tokens: int, tp: int, layout: ExpertLayout) -> float:
    """16-bit HBM bytes of the experts' activation function on this GPU's routed rows (gated: read
    gate and up, write the product; else read and write), with its prologue where it runs."""
    f = model.moe.ffn_hidden_size / layout.etp
    rows = routed_rows(model, tokens, tp, layout)
    return 2.0 * rows * (3 if model.gated_mlp else 2) * f + prologue_bytes(model, tokens, tp, layout)


def clamps_eagerly(model, layout: ExpertLayout) -> bool:
    """Whether the activation's prologue clamps with eager ops (ExpertLayout.prologue, a gated MLP with a
    clamp, Model.glu_clamp): what prologue_bytes moves and activation_terms keeps."""
    return layout.prologue and bool(model.glu_clamp) and model.gated_mlp


def prologue_bytes(model, tokens: int, tp: int, layout: ExpertLayout) -> float:
    """Forward HBM bytes of the eager clamp before a fused gated activation (ExpertLayout.prologue, with a
    clamp: Model.glu_clamp), on the fc1 output of this GPU's routed rows, n = rows x 2f elements in 16-bit.
    Megatron-core's weighted_bias_quick_geglu_impl (fusions/fused_bias_geglu.py L424-432, core_v0.15.0 to
    core_v0.19.0) splits the output into gate and up views, clamps each into a new tensor (read and write
    n/2 each) and concatenates them (read n, write n): 4n elements, 8n bytes. Its backward (autograd's
    clamp_backward: a where over comparison masks per half, then the split's concatenation of the two
    gradients) moves about 15n, which the layer's rule for elementwise backward (twice the forward's bytes,
    layer.layer_times) gives as 16n."""
    if not clamps_eagerly(model, layout):
        return 0.0
    n = routed_rows(model, tokens, tp, layout) * 2 * model.moe.ffn_hidden_size / layout.etp
    return 2.0 * 4 * n


def dispatch_bytes(model, tokens: int, tp: int, layout: ExpertLayout, element_bytes: float = 2.0) -> float:
    """Bytes of one GPU's buffer in one all-to-all (dispatch, or combine) per micro-batch: its routed
    copies, tokens/tp x k x h (comm.alltoall_seconds sends the (ep - 1)/ep for other ranks)."""
    if layout.ep <= 1:
        return 0.0
    return tokens / tp * model.moe.experts_per_token * row_factor(model, layout) * model.hidden_size * element_bytes


def activation_terms(model, tokens: int, tp: int, layout: ExpertLayout, recompute_act: bool = False,
                     gemm_input_bytes: float = 2.0, recompute_shared: bool = False) -> dict[str, float]:
    """16-bit bytes one MoE MLP keeps for backward on one GPU (besides its input, which the layer's
    norm keeps), by the module whose input each tensor is (types.OFFLOAD_MODULES where Megatron's
    fine-grained offload names one): the router's fp32 probabilities (tokens/tp x E), the routed rows'
    inputs (expert_fc1, gathered over etp), their fc1 outputs (moe_act: gated, gate and up), the
    activation's product (expert_fc2; replayed instead under `recompute_act`, Megatron's moe_act
    module), the experts' outputs before the weighted combine (tokens/tp x k x h), and the shared
    experts' intermediates, TP-split (replayed instead under `recompute_shared`, Megatron's
    shared_experts module, which checkpoints the shared experts' forward and so keeps only their input,
    the norm's output). Counted like Korthikanti eq. 1's MLP term, per routed row instead of per token.
    With the activation's clamp prologue (prologue_bytes) the clamps keep the fc1 output for their
    backward and the fused activation its clamped copy, as large: moe_act twice, unless replayed (Megatron
    checkpoints the whole activation function, prologue included, and keeps only its input)."""
    moe, h = model.moe, model.hidden_size
    own = tokens / tp
    rows = routed_rows(model, tokens, tp, layout)
    g = gemm_input_bytes
    f = moe.ffn_hidden_size / layout.etp
    shared = ((4.0 if model.gated_mlp else 2.0) + g) * tokens * moe.shared_ffn_hidden_size / tp
    fc1_out = rows * 2.0 * (2 if model.gated_mlp else 1) * f
    clamped = fc1_out if clamps_eagerly(model, layout) and not recompute_act else 0.0
    return {"router_probs": 4.0 * own * moe.num_experts,
            "expert_fc1": rows * g * h,
            "moe_act": fc1_out + clamped,
            "expert_fc2": 0.0 if recompute_act else rows * g * f,
            "expert_outputs": 2.0 * own * moe.experts_per_token * row_factor(model, layout) * h,
            "shared_experts": 0.0 if recompute_shared else shared}


def remote_domains_per_token(model, ep: int, per_domain: int) -> float:
    """Expected number of other NVLink domains of the EP group that hold at least one of a token's k
    experts, with the experts spread evenly over the group's ep / per_domain domains and the k chosen
    uniformly (balanced routing): (D - 1) (1 - C(E - E/D, k) / C(E, k)), the probability that k draws without
    replacement from E experts all miss a given domain's E/D being the hypergeometric C(E - E/D, k) / C(E, k).
    It is the count of inter-domain sends DeepEP's and HybridEP's dispatch makes per token, each token sent once
    per remote domain that needs it (DeepSeek-V3 report, arXiv:2412.19437 Sec 3.2.2: a token crosses IB once per
    target node and is forwarded over NVLink inside it; the report's node-limited routing, at most 4 nodes a
    token, is not assumed here)."""
    domains = max(1, ep // max(1, per_domain))
    if domains <= 1:
        return 0.0
    e, k = model.moe.num_experts, model.moe.experts_per_token
    outside = e - e // domains
    miss = 1.0
    for i in range(k):  # probability that none of the k distinct experts is in a given domain
        miss *= max(0.0, (outside - i) / (e - i))
    return (domains - 1) * (1.0 - miss)


def deduplicated_dispatch_seconds(model, tokens: int, tp: int, layout: ExpertLayout, per_domain: int,
                                  nvlink_bytes_per_second: float, network_bytes_per_second: float,
                                  latency_seconds: float, element_bytes: float = 2.0) -> float:
    """One dispatch (or combine) by DeepEP / HybridEP (Zhao et al., DeepEP, 2025; DeepSeek-V3 report
    Sec 3.2.2): each token crosses the network once per remote domain that holds one of its experts
    (remote_domains_per_token) and is forwarded inside the domain over NVLink; every routed copy but
    the one to this GPU moves over NVLink once. Both run at once; the slower sets the time."""
    own = tokens / tp * row_factor(model, layout)
    h = model.hidden_size * element_bytes
    far = own * remote_domains_per_token(model, layout.ep, per_domain) * h / network_bytes_per_second
    near = own * model.moe.experts_per_token * h * (1 - 1 / layout.ep) / nvlink_bytes_per_second
    return max(far, near) + latency_seconds


def etp_gather_bytes(model, tokens: int, tp: int, layout: ExpertLayout, element_bytes: float = 2.0) -> float:
    """Total bytes of the routed rows gathered over the etp ranks before the experts (and
    reduce-scattered after them): all etp ranks' copies, x h."""
    if layout.etp <= 1:
        return 0.0
    return routed_rows(model, tokens, tp, layout) * model.hidden_size * element_bytes
