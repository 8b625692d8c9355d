"""Megatron-LM's argument validation, mirrored so `planner emit` refuses what Megatron would.

Sources (NVIDIA/Megatron-LM d98e8a64, 2026-08-22): megatron/training/arguments.py
(validate_args), megatron/core/transformer/transformer_config.py (TransformerConfig.__post_init__),
megatron/core/pipeline_parallel/schedules.py (interleaved schedule), megatron/core/optimizer/
distrib_optimizer.py. Rules that the emitter satisfies by construction (fp16 xor bf16, recompute
method/num-layers only with full recompute, --overlap-param-gather only with the distributed
optimizer and --overlap-grad-reduce, max_position_embeddings >= seq_length) are asserted in the
tests instead.
"""
from __future__ import annotations

from typing import Optional

from .job import Job
from .rules import batch_divisible


def zero_stage(job: Job) -> Optional[str]:
    """Megatron's own optimizer shards only optimizer states (--use-distributed-optimizer,
    core/optimizer/distrib_optimizer.py: ZeRO-1-like); it has no ZeRO-2/3."""
    if job.plan.zero_stage >= 2:
        return (f"ZeRO stage {job.plan.zero_stage}: Megatron-LM's distributed optimizer shards optimizer "
                "states only (ZeRO-1); gradient/parameter sharding needs Megatron-FSDP, which planner does "
                "not emit")
    return None


def heads_tp(job: Job) -> Optional[str]:
    """transformer_config.py: num_attention_heads must be a multiple of tensor_model_parallel_size."""
    heads, tp = job.model.num_attention_heads, job.plan.tp
    if heads % tp:
        return f"num_attention_heads ({heads}) must be a multiple of tensor_model_parallel_size ({tp})"
    return None


def query_groups_tp(job: Job) -> Optional[str]:
    """transformer_config.py: num_query_groups must be a multiple or a divisor of tp."""
    groups, tp = job.model.num_kv_heads or job.model.num_attention_heads, job.plan.tp
    if groups % tp and tp % groups:
        return f"num_query_groups ({groups}) must be a multiple or divisor of tensor_model_parallel_size ({tp})"
    return None


def sequence_parallel_tp(job: Job) -> Optional[str]:
    """arguments.py: with tp == 1 --sequence-parallel is silently switched off."""
    if job.plan.sequence_parallel and job.plan.tp == 1:
        return "--sequence-parallel needs tensor_model_parallel_size > 1 (Megatron turns it off at tp=1)"
    return None


def layers_pp(job: Job) -> Optional[str]:
    """arguments.py: number of layers divisible by pipeline size (even split, no VPP flags)."""
    p, layers = job.plan, job.model.num_layers
    if p.vpp == 1 and not uneven_split(job) and layers % p.pp:
        return (f"num_layers ({layers}) must be divisible by pipeline-model-parallel size ({p.pp}) "
                "(or give --stage-layers with only the first/last stage different)")
    return None


def vpp_layers(job: Job) -> Optional[str]:
    """arguments.py (--num-layers-per-virtual-pipeline-stage): layers % pp == 0 and
    (layers/pp) % layers-per-virtual-stage == 0, i.e. layers % (pp*vpp) == 0."""
    p, layers = job.plan, job.model.num_layers
    if p.vpp > 1 and layers % (p.pp * p.vpp):
        return f"num_layers ({layers}) must be divisible by pp x vpp = {p.pp}x{p.vpp} for interleaving"
    return None


def vpp_pp(job: Job) -> Optional[str]:
    """arguments.py: the interleaved schedule needs pp > 1, pp > 2 without p2p overlap."""
    p = job.plan
    least = 2 if p.overlap_pp_comm else 3
    if p.vpp > 1 and p.pp < least:
        why = "" if p.overlap_pp_comm else " with --no-overlap-p2p-communication"
        return f"interleaving (vpp={p.vpp}) needs pipeline-model-parallel size >= {least}{why} (got {p.pp})"
    return None


def vpp_microbatches(job: Job) -> Optional[str]:
    """core/pipeline_parallel/schedules.py: interleaving runs micro-batches in groups of pp, so
    their number must be a multiple of pp."""
    p = job.plan
    if p.vpp > 1 and p.grad_accum_steps % p.pp:
        return f"interleaving needs the number of micro-batches ({p.grad_accum_steps}) to be a multiple of pp ({p.pp})"
    return None


def uneven_split(job: Job) -> Optional[tuple[int | None, int | None]]:
    """(first, last) layer counts when the plan's stage_layers is uneven, else None."""
    layers = job.plan.stage_layers
    if not layers or len(set(layers)) == 1:
        return None
    first, last = layers[0], layers[-1]
    middle = layers[1:-1]
    mid = middle[0] if middle else None
    return (None if first == mid else first, None if last == mid else last)


def stage_layers_form(job: Job) -> Optional[str]:
    """transformer_config.py (uneven PP): only the first and last stage may differ, the middle
    stages share the rest evenly (--decoder-first/last-pipeline-num-layers)."""
    layers = job.plan.stage_layers
    if not uneven_split(job):
        return None
    if job.plan.vpp > 1:
        return "uneven --stage-layers with interleaving: planner emits uneven splits only for vpp=1"
    if len(set(layers[1:-1])) > 1:
        return (f"stage_layers {list(layers)}: Megatron-LM's uneven split lets only the first and last "
                "stage differ (--decoder-first/last-pipeline-num-layers)")
    return None


def grad_dtype(job: Job) -> Optional[str]:
    """arguments.py/distributed_data_parallel.py: gradients are reduced in the parameter dtype or
    fp32 (--accumulate-allreduce-grads-in-fp32); bf16 params reduce in fp32 unless
    --grad-reduce-in-bf16. No int8 gradient reduction exists."""
    half, g = job.half_dtype, job.grad_dtype
    allowed = {"fp32", half} if half else {"fp32"}
    if g not in allowed:
        return (f"gradients cannot be reduced in {g} when training in {job.plan.precision} "
                f"(Megatron-LM reduces in {' or '.join(sorted(allowed))})")
    return None


def distributed_optimizer_reduce(job: Job) -> Optional[str]:
    """core/distributed/param_and_grad_buffer.py: with the distributed optimizer each bucket is
    reduce-scattered into its shard; a full gradient all-reduce is plain DDP (ZeRO 0)."""
    if job.plan.zero_stage == 1 and job.plan.grad_reduce == "allreduce":
        return ("Megatron-LM's distributed optimizer reduce-scatters gradients; grad_reduce allreduce "
                "with ZeRO-1 is DeepSpeed's bf16 pipeline engine (use ZeRO 0 for a plain all-reduce)")
    return None


MEGATRON_RULES = (zero_stage, batch_divisible, heads_tp, query_groups_tp, sequence_parallel_tp, layers_pp,
                  vpp_layers, vpp_pp, vpp_microbatches, stage_layers_form, grad_dtype, distributed_optimizer_reduce)
