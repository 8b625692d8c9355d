"""DeepSpeed's config and engine checks, mirrored so `planner emit` refuses what DeepSpeed would.

Sources (deepspeedai/DeepSpeed edaa7221, 2026-08-22, checked against PyPI deepspeed 0.19.8):
deepspeed/runtime/config.py, runtime/precision_config.py, runtime/zero/config.py,
runtime/zero/offload_config.py, runtime/pipe/engine.py, runtime/pipe/schedule.py.
fp16 xor bf16 and the batch identity hold by construction and are checked with DeepSpeed's own
parser in the tests.
"""
from __future__ import annotations

from typing import Optional

from .job import Job
from .rules import batch_divisible

COMM_DTYPES = ("fp32", "fp16", "bf16")


def pipeline_zero(job: Job) -> Optional[str]:
    """runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"."""
    if job.plan.pp > 1 and job.plan.zero_stage >= 2:
        return f"ZeRO-{job.plan.zero_stage} is incompatible with pipeline parallelism (pp={job.plan.pp}); use ZeRO 0/1"
    return None


def no_interleaving(job: Job) -> Optional[str]:
    """runtime/pipe/schedule.py: the PipelineEngine's TrainSchedule is plain 1F1B, one chunk per stage."""
    if job.plan.vpp > 1:
        return f"DeepSpeed's pipeline engine has no interleaved schedule (vpp={job.plan.vpp}); re-plan with vpp 1"
    return None


def comm_dtype(job: Job) -> Optional[str]:
    """runtime/config.py get_communication_data_type: only fp16, bf16 and fp32 are accepted."""
    if job.grad_dtype not in COMM_DTYPES:
        return (f"communication_data_type must be one of {', '.join(COMM_DTYPES)} (got {job.grad_dtype}); "
                "DeepSpeed has no int8 gradient all-reduce (ZeRO++ qgZ is a different, ZeRO-3-only scheme)")
    return None


def precision(job: Job) -> Optional[str]:
    """runtime/precision_config.py: the config has fp16 and bf16 blocks only; FP8 GEMMs come from
    the model code (Transformer Engine), which a ds_config cannot switch on."""
    if job.plan.precision == "fp8":
        return ("ds_config has no FP8 mode (only fp16/bf16 blocks); re-plan with --precision bf16 "
                "or use --format megatron")
    return None


def offload_param_stage(job: Job) -> Optional[str]:
    """runtime/zero/config.py offload_param: "Valid only with stage 3"."""
    if job.options.offload_param != "none" and job.plan.zero_stage != 3:
        return f"offload_param needs ZeRO stage 3 (plan has {job.plan.zero_stage})"
    return None


def offload_optimizer_stage(job: Job) -> Optional[str]:
    """runtime/zero/config.py offload_optimizer: "Valid for ZeRO stage 1, 2, 3"."""
    if job.options.offload_optimizer != "none" and job.plan.zero_stage == 0:
        return "offload_optimizer needs ZeRO stage 1, 2 or 3 (plan has 0)"
    return None


def nvme_path(job: Job) -> Optional[str]:
    """runtime/zero/offload_config.py: nvme offload reads and writes under nvme_path."""
    o = job.options
    if "nvme" in (o.offload_optimizer, o.offload_param) and not o.nvme_path:
        return "offload to nvme needs --nvme-path"
    return None


def zero3_reduce_scatter(job: Job) -> Optional[str]:
    """runtime/zero/stage3.py (__reduce_and_partition_ipg_grads): both bucket paths scatter the
    averaged gradients into partitions; the `reduce_scatter: false` all-reduce exists only in
    stage_1_and_2.py (gradient_reduction_w_predivide)."""
    if job.plan.zero_stage == 3 and job.plan.grad_reduce == "allreduce":
        return ("ZeRO-3 always reduce-scatters gradients in current DeepSpeed; grad_reduce allreduce "
                "(DeepSpeed's 2021 stage 3) applies to ZeRO 1/2 only")
    return None


DEEPSPEED_RULES = (batch_divisible, pipeline_zero, no_interleaving, comm_dtype, precision, offload_param_stage,
                   offload_optimizer_stage, nvme_path, zero3_reduce_scatter)
