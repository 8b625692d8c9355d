"""Context parallelism: how the cp ranks that share a sequence exchange keys and values.

Each GPU holds s/cp tokens of every sequence, in 2 x cp chunks so that causal work balances (rank i
takes chunks i and 2cp - 1 - i; Megatron-core, Transformer Engine's context-parallel attention;
Llama 3 paper, arXiv:2407.21783, Sec 3.3.2). Its queries still need every earlier key, so:
  p2p        ring attention (Liu et al., arXiv:2310.01889): cp - 1 steps, each passing the K/V block
             on to the next rank while attention runs on the block in hand; backward passes K/V and
             their gradients (twice the bytes) beside 2.5x the compute (FlashAttention backward).
  all_gather K/V all-gathered before attention, their gradients reduce-scattered after it (Llama 3);
             not overlapped. Transformer Engine's (AttnFuncWithCPAndKVAllGather) saves the local K/V and
             gathers them again in backward.
  all_gather_saved  the same exchange with the gathered K/V saved for backward, which then only
             reduce-scatters their gradients: torch's FlexAttention context parallelism as torchtitan runs it
             (torch/distributed/tensor/experimental/_context_parallel _cp_custom_ops.py flex_cp_allgather,
             whose registered backward is a reduce-scatter; flex_attention saves its full-length K/V inputs).
  a2a        DeepSpeed-Ulysses (Jacobs et al., arXiv:2309.14509): all-to-all of Q, K, V from
             sequence-split to head-split before attention and of the output back after it, the
             mirror in backward; not overlapped; cp must divide the (TP-split) KV heads.
  a2a+p2p    a2a inside the ranks of one NVLink domain, p2p ring across domains (Megatron-core
             hierarchical_context_parallel_sizes).
A transfer that attention hides still costs its SM share (costmodel/overlap.py).
"""
from __future__ import annotations

from . import overlap, topology
from .comm import (
    Link,
    alltoall_seconds,
    hierarchical_allgather_seconds,
    hierarchical_reduce_scatter_seconds,
    p2p_seconds,
)
from .flops import q_width, value_width
from .layer import LayerTimes
from .types import Cluster, Efficiency, Model, Plan

Pair = tuple  # (forward, backward) seconds
ELEMENT_BYTES = 2.0  # K/V and attention outputs stay 16-bit under every recipe


def kv_widths(model: Model, plan: Plan) -> tuple[float, float]:
    """(K, V) widths per token before TP: kv_heads x head_dim each (num_attention_heads x head_dim
    when the plan repeats K/V to the query heads first, Plan.repeat_kv), or under MLA the per-head
    keys (nope + rope dims) and values expanded from the latent (Megatron-core's MLA with CP)."""
    if model.mla:
        return float(q_width(model)), float(value_width(model))
    kv = float((model.num_attention_heads if plan.repeat_kv else model.kv_heads) * model.head_dim)
    return kv, kv


def kv_chunk_bytes(model: Model, plan: Plan) -> float:
    """K and V of one GPU's s/cp tokens (per micro-batch, TP-split)."""
    k, v = kv_widths(model, plan)
    return plan.micro_batch_size * model.seq_length / plan.cp * (k + v) / plan.tp * ELEMENT_BYTES


def out_chunk_bytes(model: Model, plan: Plan) -> float:
    """One GPU's attention output for its s/cp tokens (per micro-batch, TP-split)."""
    return plan.micro_batch_size * model.seq_length / plan.cp * value_width(model) / plan.tp * ELEMENT_BYTES


def exchange_buffer_bytes(model: Model, plan: Plan) -> float:
    """What a GPU holds beyond the saved activations while one layer's attention runs (per micro-batch).
    all_gather holds the whole sequence's K/V and, in backward, their gradients before the reduce-scatter,
    2 x cp chunks; all_gather_saved keeps the gathered K/V among the activations (memory.layer_activation_terms)
    and holds their gradients in backward, cp chunks. The p2p ring as Transformer Engine runs it
    (AttnFuncWithCPAndKVP2P, context_parallel.py @d0067d0) keeps every step's K/V buffer (p2p_comm_buffers, the
    first a copy of its own K/V) and every step's partial output (out_per_step) until the final correction, cp
    of each on the rank with the most causal work (the last, whose every step is a full block); a2a+p2p's ring
    runs over cp / (ranks of a domain), which this function does not know: taken as cp, an upper bound.
    Ulysses' head-split Q, K, V are as large as the sequence-split ones: nothing extra."""
    if plan.cp <= 1 or plan.cp_comm == "a2a":
        return 0.0
    if plan.cp_comm in ("all_gather", "all_gather_saved"):
        return (2.0 if plan.cp_comm == "all_gather" else 1.0) * plan.cp * kv_chunk_bytes(model, plan)
    return plan.cp * (kv_chunk_bytes(model, plan) + out_chunk_bytes(model, plan))


def ring_exposed_seconds(step_seconds: float, steps: int, block_seconds: float, sm_share: float) -> float:
    """A ring of `steps` transfers of `step_seconds`, each beside one block of attention of
    `block_seconds`: what shows (overlap.overlapped_cost_seconds per step)."""
    exposed = steps * max(0.0, step_seconds - block_seconds)
    hidden = steps * min(step_seconds, block_seconds)
    return overlap.overlapped_cost_seconds(exposed, hidden, sm_share)


def ring_seconds(model: Model, plan: Plan, lt: LayerTimes, ring: int, link: Link, eff: Efficiency) -> Pair:
    """(forward, backward) of a p2p ring over `ring` ranks. The rank's attention (its queries
    against every key) is split over the ring's steps, one block of keys each: cp steps for plain
    p2p, cp / inner for a2a+p2p, whose Ulysses exchange first gives each rank inner x the tokens for
    1 / inner of the heads."""
    if ring <= 1:
        return 0.0, 0.0
    step = p2p_seconds(kv_chunk_bytes(model, plan), link)
    block = lt.attention_forward_seconds / ring
    forward = ring_exposed_seconds(step, ring - 1, block, eff.collective_sm_share)
    backward = ring_exposed_seconds(2 * step, ring - 1, 2.5 * block, eff.collective_sm_share)
    return forward, backward


def kernel_span_divisor(plan: Plan) -> int:
    """What divides the sequence into the key span one attention kernel call sweeps (compute.attention_block_span):
    1 for all_gather_saved, whose FlexAttention runs the rank's queries against the gathered keys in one call
    (torch _context_parallel, flex_cp_allgather then flex_attention with the load-balanced block mask); cp, a
    ring step's s/cp block, for the others. Ulysses (a2a) also runs the whole sequence, for cp-th of the heads,
    and Transformer Engine's all-gather sweeps keys up to each chunk's end; priced at s/cp all the same
    (validation/README.md, "Context parallelism as each stack runs it": the rows say otherwise)."""
    return 1 if plan.cp > 1 and plan.cp_comm == "all_gather_saved" else plan.cp


def regathers(plan: Plan) -> bool:
    """Whether an all-gather exchange gathers K/V again in backward: Transformer Engine's always (priced in
    layer_exposed_seconds); the saved one under per-op recompute, whose save list (torchtitan
    distributed/activation_checkpoint.py _get_default_save_ops) has no collective, so the gathered K/V are not
    kept (nor counted: memory.layer_activation_terms keeps saved_ops alone there), which stage.cp_layer_seconds
    adds: the layer's exchanges read no recompute setting (the search shares them across its values)."""
    return plan.cp_comm == "all_gather" or (plan.cp_comm == "all_gather_saved" and plan.recompute == "op")


def passes(plan: Plan) -> int:
    """Forward passes per micro-batch: 1, 2 with full recompute."""
    return 2 if plan.recompute == "full" else 1


def ulysses_seconds(model: Model, plan: Plan, ranks: int, per_domain: int, fast: Link, slow: Link) -> Pair:
    """(forward, backward): all-to-alls of Q, K, V in and of the output out over `ranks` ranks."""
    k, v = kv_widths(model, plan)
    tokens = plan.micro_batch_size * model.seq_length / plan.cp
    qkv = tokens * (q_width(model) + k + v) / plan.tp * ELEMENT_BYTES
    out = tokens * value_width(model) / plan.tp * ELEMENT_BYTES
    one = alltoall_seconds(qkv, ranks, per_domain, fast, slow) + alltoall_seconds(out, ranks, per_domain, fast, slow)
    return one, one


def layer_exposed_seconds(model: Model, cluster: Cluster, plan: Plan, lt: LayerTimes, eff: Efficiency) -> Pair:
    """(forward pass, backward) of one layer's CP exchanges per micro-batch that show on the critical
    path (a full recompute repeats the forward's)."""
    if plan.cp <= 1:
        return 0.0, 0.0
    inner = topology.cp_ranks_per_domain(plan, cluster)
    fast, slow = topology.nvlink_link(cluster, eff, inner), topology.network_link(cluster, eff)
    if plan.cp_comm == "p2p":  # each ring step goes to one neighbour: one link of a mesh (topology.nvlink_link)
        return ring_seconds(model, plan, lt, plan.cp, topology.nvlink_link(cluster, eff, 2) if inner == plan.cp
                            else slow, eff)
    if plan.cp_comm in ("all_gather", "all_gather_saved"):
        size = kv_chunk_bytes(model, plan) * plan.cp
        gather = hierarchical_allgather_seconds(size, plan.cp, inner, fast, slow)
        scatter = hierarchical_reduce_scatter_seconds(size, plan.cp, inner, fast, slow)
        return gather, scatter + (gather if plan.cp_comm == "all_gather" else 0.0)
    if plan.cp_comm == "a2a":
        return ulysses_seconds(model, plan, plan.cp, inner, fast, slow)
    # a2a+p2p: Ulysses inside the domain, ring across domains
    (a_f, a_b), (r_f, r_b) = (ulysses_seconds(model, plan, inner, inner, fast, slow),
                              ring_seconds(model, plan, lt, plan.cp // inner, slow, eff))
    return a_f + r_f, a_b + r_b
