"""Data-parallel / ZeRO synchronisation per optimizer step, and how much of it hides.

Volumes per GPU, for Psi parameters on the GPU (its TP/PP share), Rajbhandari et al. "ZeRO"
Sec 7: plain DP and ZeRO-1/2 move 2 Psi (a gradient ReduceScatter plus a parameter AllGather,
or one AllReduce, which costs the same on a ring); ZeRO-3 moves 3 Psi (parameters gathered for
forward and again for backward, gradients reduce-scattered). Frequency follows the frameworks:
ZeRO 0/1 (and Megatron's distributed optimizer) reduce once per optimizer step after gradient
accumulation; ZeRO-2 (DeepSpeed) reduce-scatters each micro-batch's gradients into the shard;
ZeRO-3 / FSDP gathers and reduces every micro-batch, and gathers once more for a full-recompute
forward replay. Gradient compression sends gradients in a narrower dtype (seed article: FP16
halves, INT8 quarters the FP32 volume); parameters stay in their training dtype.
"""
from __future__ import annotations

from .comm import Link, hierarchical_allgather_seconds, hierarchical_reduce_scatter_seconds, ring_allreduce_seconds
from .types import DTYPE_BYTES, Plan


def param_gather_bytes_per_param(precision: str) -> float:
    """Bytes per parameter of a parameter AllGather (16-bit weights; fp32 when training in fp32)."""
    return 4.0 if precision == "fp32" else 2.0


def dp_sync_seconds(
    params: float, plan: Plan, ranks_per_domain: int, fast: Link, slow: Link, num_microbatches: int
) -> float:
    """Total DP/ZeRO communication seconds per optimizer step, hidden or not."""
    dp = plan.dp
    if dp <= 1:
        return 0.0
    grad_bytes = params * DTYPE_BYTES[plan.grad_comm_dtype]
    param_bytes = params * param_gather_bytes_per_param(plan.precision)
    reduce = hierarchical_reduce_scatter_seconds(grad_bytes, dp, ranks_per_domain, fast, slow)
    gather = hierarchical_allgather_seconds(param_bytes, dp, ranks_per_domain, fast, slow)
    if plan.zero_stage <= 1:
        # AllReduce = ReduceScatter + AllGather; both in the gradient dtype for plain DP.
        if plan.zero_stage == 0:
            gather = hierarchical_allgather_seconds(grad_bytes, dp, ranks_per_domain, fast, slow)
        return reduce + gather
    if plan.zero_stage == 2:
        return num_microbatches * reduce + gather
    gathers_per_microbatch = 3 if plan.recompute == "full" else 2
    return num_microbatches * (reduce + gathers_per_microbatch * gather)


def tied_embedding_sync_seconds(embedding_params: float, plan: Plan, link: Link) -> float:
    """AllReduce of the tied word-embedding gradients between the first and last pipeline stage.

    Megatron-LM (and Megatron-DeepSpeed) keep a copy of the shared embedding on both ends of the
    pipeline and all-reduce its gradient over that 2-rank group after the flush (Shoeybi et al.
    2019; megatron/core/distributed/finalize_model_grads.py), so it is never overlapped.
    """
    if plan.pp <= 1:
        return 0.0
    return ring_allreduce_seconds(embedding_params / plan.tp * DTYPE_BYTES[plan.grad_comm_dtype], 2, link)


def dp_exposed_seconds(
    total_seconds: float, plan: Plan, overlap_window_seconds: float, layers_on_stage: int, overlap_fraction: float
) -> float:
    """Part of the DP sync on the critical path.

    With overlap, buckets are sent as backward produces them (PyTorch DDP, Li et al. VLDB 2020;
    Megatron --overlap-grad-reduce / --overlap-param-gather; ZeRO-3 prefetch), so only what
    exceeds the overlappable compute shows, and never less than the last layer's bucket, which
    is ready only when backward ends. Without overlap all of it shows.
    """
    if total_seconds <= 0:
        return 0.0
    if not plan.overlap_dp_comm:
        return total_seconds
    tail = total_seconds / max(1, layers_on_stage)
    return max(tail, total_seconds - overlap_fraction * overlap_window_seconds)
