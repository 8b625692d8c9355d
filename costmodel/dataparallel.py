"""Data-parallel / ZeRO synchronisation per optimizer step, and how much of it hides.

Volumes per GPU, for Psi parameters on the GPU (its TP/PP share), Rajbhandari et al. "ZeRO"
Sec 7: plain DP and ZeRO-1/2 move 2 Psi (a gradient ReduceScatter plus a parameter AllGather,
or one AllReduce, which costs the same on a ring); ZeRO-3 moves 3 Psi (parameters gathered for
forward and again for backward, gradients reduce-scattered). Frequency follows the frameworks:
ZeRO 0/1 (and Megatron's distributed optimizer) reduce once per optimizer step after gradient
accumulation; ZeRO-2 (DeepSpeed) reduce-scatters each micro-batch's gradients into the shard;
ZeRO-3 / FSDP gathers and reduces every micro-batch, and gathers once more for a full-recompute
forward replay. With `grad_reduce` "allreduce" (DeepSpeed's bf16 pipeline engine, its 2021
ZeRO-3) the gradients are all-reduced instead of reduce-scattered: one Psi more. Every collective
pays its ring latency, so how many there are (per layer, per weight tensor, per bucket) counts.
Gradient compression sends gradients in a narrower dtype (seed article: FP16 halves, INT8
quarters the FP32 volume); parameters stay in their training dtype.
"""
from __future__ import annotations

from math import ceil

from . import lowp
from .comm import Link, hierarchical_allgather_seconds, hierarchical_reduce_scatter_seconds, ring_allreduce_seconds
from .types import DTYPE_BYTES, Plan


def param_gather_bytes_per_param(precision: str, lowp_params: bool = False) -> float:
    """Bytes per parameter of a parameter AllGather: 16-bit weights (fp32 when training in fp32), or
    the quantized ones when the parameters themselves are kept low-precision (Megatron
    --fp8-param-gather / --fp4-param-gather: the all-gather moves fp8/fp4 data and its scales)."""
    if lowp_params and lowp.is_low(precision):
        return lowp.quantized_bytes_per_element(precision)
    return 4.0 if precision == "fp32" else 2.0


# DeepSpeed all-reduces gradients in buckets of 5e8 elements (engine.py buffered_allreduce_fallback
# with MEMORY_OPT_ALLREDUCE_SIZE / reduce_bucket_size = 500000000, v0.3.13 to v0.6.5).
ALLREDUCE_BUCKET_PARAMS = 5e8
# ZeRO-3 as DeepSpeed ran it in 2021 (v0.3.13-v0.4.0, partition_parameters.py `_allgather_param`):
# one AllGather per weight tensor; tensors under 1e5 elements stay resident, so per layer only the
# four matrices (fused QKV, output projection, fc1, fc2). It passed torch.distributed.all_gather a
# list of per-rank views, which PyTorch's NCCL process group of the time served by gathering into a
# fresh flat buffer and copying each rank's piece back (ProcessGroupNCCL::allgather,
# torch/lib/c10d/ProcessGroupNCCL.cpp @00f5dfd): the gathered weights cross HBM once more, read
# and written.
TENSOR_GATHERS_PER_LAYER = 4
TENSOR_GATHER_COPY_BYTES_PER_BYTE = 2.0


def allreduce_bucket_bytes(params: float, plan: Plan) -> float:
    """Unsharded gradient bytes a ZeRO-2/3 rank holds beside its shards when it all-reduces in buckets
    (`grad_reduce` "allreduce", DeepSpeed's stage 3 of 2021 without contiguous_gradients): a bucket of
    up to ALLREDUCE_BUCKET_PARAMS full gradients waits for its reduction, and buffered_reduce_fallback
    flattens it into one more buffer of the same size before the all_reduce (engine.py, as cited
    above). Nothing otherwise: ZeRO-0/1 keep every gradient anyway, reduce-scatters write the shards."""
    if plan.grad_reduce != "allreduce" or plan.zero_stage < 2 or plan.dp <= 1:
        return 0.0
    return 2.0 * min(params, ALLREDUCE_BUCKET_PARAMS) * DTYPE_BYTES[plan.grad_comm_dtype]


def staging_bucket_bytes(plan: Plan) -> float:
    """Bytes of the reduce buckets a runtime copies gradients into for their reduction (Plan.grad_bucket_elements
    elements each; DeepSpeed with contiguous_gradients, deepspeed/runtime/zero at edaa7221): ZeRO-1/2 fill one
    bucket in the weights' dtype (16-bit, fp32 when training in fp32) while, with the sync overlapped with the
    backward, the other is reduced (stage_1_and_2.py setup_buckets: a second buffer under overlap_comm);
    ZeRO-3 reduce-scatters from one bucket in the communication dtype (stage3.py, allocated with the optimizer).
    Both are held at the backward's peak. ZeRO 0 has none."""
    if plan.grad_bucket_elements == 0 or plan.zero_stage == 0:
        return 0.0
    if plan.zero_stage == 3:
        return float(plan.grad_bucket_elements * DTYPE_BYTES[plan.grad_comm_dtype])
    width = DTYPE_BYTES["fp32" if plan.precision == "fp32" else "bf16"]
    return float((2 if plan.overlap_dp_comm else 1) * plan.grad_bucket_elements * width)


def _split_into(seconds_of, size_bytes: float, count: int) -> float:
    """`count` equal collectives moving `size_bytes` in all: same bandwidth, `count` latencies."""
    return count * seconds_of(size_bytes / count)


def grad_reduce_seconds(params: float, plan: Plan, layers: int, rs, ag) -> float:
    """One gradient reduction: ReduceScatter into the shards (one per layer under ZeRO-3, FSDP2's
    per-block reduce), or an AllReduce of every gradient: plain DP (ZeRO 0, one collective), or
    with `grad_reduce` "allreduce" under ZeRO-1..3 in 5e8-element buckets, as DeepSpeed's bf16
    pipeline engine and 2021 ZeRO-3 did. `grad_reduce` does not change ZeRO 0."""
    grad_bytes = params * DTYPE_BYTES[plan.grad_comm_dtype]
    if plan.zero_stage == 0:
        return rs(grad_bytes) + ag(grad_bytes)
    if plan.grad_reduce == "allreduce":
        buckets = max(1, ceil(params / ALLREDUCE_BUCKET_PARAMS))
        return _split_into(rs, grad_bytes, buckets) + _split_into(ag, grad_bytes, buckets)
    return _split_into(rs, grad_bytes, max(1, layers) if plan.zero_stage == 3 else 1)


def _dp_collectives(dp: int, ranks_per_domain: int, fast: Link, slow: Link):
    """(ReduceScatter, AllGather) seconds as functions of the full buffer size, over the DP group."""
    def rs(size: float) -> float:
        return hierarchical_reduce_scatter_seconds(size, dp, ranks_per_domain, fast, slow)

    def ag(size: float) -> float:
        return hierarchical_allgather_seconds(size, dp, ranks_per_domain, fast, slow)

    return rs, ag


def gradient_reduce_seconds(params: float, plan: Plan, ranks_per_domain: int, fast: Link, slow: Link) -> float:
    """One reduction of `params` gradients over the DP group as one unit (grad_reduce_seconds), no weight
    gather."""
    if plan.dp <= 1:
        return 0.0
    rs, ag = _dp_collectives(plan.dp, ranks_per_domain, fast, slow)
    return grad_reduce_seconds(params, plan, 1, rs, ag)


def zero3_edge_seconds(
    edge_params: float, plan: Plan, ranks_per_domain: int, fast: Link, slow: Link, num_microbatches: int
) -> float:
    """ZeRO-3's gather of the weights outside the transformer layers (embedding, final norm, output)
    at the start of each forward and their gradient reduction at the end of each backward, when
    there is no compute left to hide behind. FSDP2 as torchtitan applies it fully_shard()s every
    block and then the root module, which holds these weights (torchtitan parallelize_llama), so
    the root is gathered first and reduced last."""
    if plan.zero_stage != 3 or plan.dp <= 1 or edge_params <= 0:
        return 0.0
    rs, ag = _dp_collectives(plan.dp, ranks_per_domain, fast, slow)
    gather = ag(edge_params * param_gather_bytes_per_param(plan.precision))  # embedding/output stay 16-bit
    return num_microbatches * (gather + grad_reduce_seconds(edge_params, plan, 1, rs, ag))


def dp_sync_seconds(
    params: float, plan: Plan, ranks_per_domain: int, fast: Link, slow: Link, num_microbatches: int,
    layers: int = 1, hbm_bytes_per_second: float = 0.0, replay_share: float = 1.0,
) -> float:
    """Total DP/ZeRO communication seconds per optimizer step, hidden or not.

    ZeRO-3 gathers the weights of the stage's `layers` one unit at a time, each collective paying
    a ring latency: a layer (FSDP2's per-block fully_shard) or a weight tensor
    (`zero3_gather_unit` "tensor", DeepSpeed ZeRO-3 of 2021, whose list all_gather also copies the
    gathered weights through HBM at `hbm_bytes_per_second` when given). ZeRO 0 with grad_sync
    "microbatch" all-reduces after every micro-batch, as ZeRO-2 reduce-scatters.
    """
    if plan.dp <= 1:
        return 0.0
    param_bytes = params * param_gather_bytes_per_param(plan.precision, plan.lowp_param_gather)
    rs, ag = _dp_collectives(plan.dp, ranks_per_domain, fast, slow)
    reduce = grad_reduce_seconds(params, plan, layers, rs, ag)
    if plan.zero_stage == 0 and plan.grad_sync == "microbatch":
        return num_microbatches * reduce
    if plan.zero_stage <= 1:
        return reduce + (ag(param_bytes) if plan.zero_stage == 1 else 0.0)
    if plan.zero_stage == 2:
        return num_microbatches * reduce + ag(param_bytes)
    # forward, backward (unless the forward's gather is kept, zero3_reshard False), full recompute's replay of
    # the parameters it replays (`replay_share` of them: step.replay_share, Plan.recompute_layers)
    gathers_per_microbatch = (2 if plan.zero3_reshard else 1) + (replay_share if plan.recompute == "full" else 0)
    per_tensor = plan.zero3_gather_unit == "tensor"
    units = max(1, layers) * (TENSOR_GATHERS_PER_LAYER if per_tensor else 1)
    gather = _split_into(ag, param_bytes, units)
    if per_tensor and hbm_bytes_per_second > 0:
        gather += TENSOR_GATHER_COPY_BYTES_PER_BYTE * param_bytes / hbm_bytes_per_second
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
    total_seconds: float, plan: Plan, overlap_window_seconds: float, tail_seconds: float, overlap_fraction: float
) -> float:
    """Part of the DP sync on the critical path.

    With overlap, buckets are sent as backward produces them (PyTorch DDP, Li et al. VLDB 2020;
    Megatron --overlap-grad-reduce / --overlap-param-gather; ZeRO-3 prefetch), so only what
    exceeds the overlappable compute shows, and never less than `tail_seconds`, what no compute
    can hide (step.dp_tail_seconds). Without overlap all of it shows.
    """
    if total_seconds <= 0:
        return 0.0
    if not plan.overlap_dp_comm:
        return total_seconds
    return max(min(tail_seconds, total_seconds), total_seconds - overlap_fraction * overlap_window_seconds)
