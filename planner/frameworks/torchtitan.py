"""torchtitan: what it runs and refuses.

Read at pytorch/torchtitan b5bcd76c (2026-08-21) (LC §3.2 of shared/reference/launch-configs.md):
torchtitan/distributed/parallel_dims.py, models/llama3/infra/parallelize.py, train.py,
distributed/activation_checkpoint.py, and torch.distributed.pipelining (schedules.py).
"""
from __future__ import annotations

from typing import Optional

from costmodel import types as cm
from planner.frameworks.base import Choice, Framework, Knobs, only_with_tp


def interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torch.distributed.pipelining schedules.py, ScheduleInterleaved1F1B: micro-batches run in
    rounds = max(1, m // pp), and m must be a multiple of the number of rounds."""
    m = plan.num_microbatches
    if plan.vpp > 1 and m % max(1, m // plan.pp):
        return f"torchtitan interleaved 1F1B: {m} micro-batches not a multiple of {m // plan.pp} rounds"
    return None


def sequence_split(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """llama3/infra/parallelize.py (LC §3.2): seq_len % (tp * 2 * cp) == 0; cp = 1 here."""
    if model.seq_length % (2 * plan.tp):
        return f"torchtitan: seq_len {model.seq_length} not divisible by 2*tp = {2 * plan.tp}"
    return None


def grad_dtypes(precision: str) -> Choice:
    """LC §3.2: training.mixed_precision_reduce is float32 (default) or bfloat16."""
    allowed = ("fp32",) if precision == "fp32" else ("fp32", "bf16")
    return Choice(allowed, "torchtitan reduces gradients in float32 or bfloat16 (mixed_precision_reduce)")


def knobs(tp_split: bool, pp_split: bool) -> Knobs:
    zero = (3,) if tp_split or pp_split else (0, 3)
    return Knobs(
        zero_stage=Choice(zero, "torchtitan shards with FSDP2 (ZeRO-3) on data_parallel_shard; plain DDP "
                                "(replicate only) cannot be combined with other parallelism (parallelize.py)"),
        recompute=Choice(("none", "op", "full"), "activation_checkpoint.mode is none, selective (per-op, "
                                                 "selective_ac_option 'op') or full"),
        sequence_parallel=only_with_tp(tp_split, "sequence parallelism splits along the TP group, needs tp > 1"),
        precision=Choice(("fp32", "bf16", "fp8"), "training.mixed_precision_param is float32 or bfloat16; FP8 "
                                                  "linears come from torchao (float8); no fp16 mode"),
        grad_dtype=grad_dtypes,
    )


FRAMEWORK = Framework(
    name="torchtitan", title="torchtitan", source="pytorch/torchtitan b5bcd76c (2026-08-21)",
    layout_rules=(interleaving, sequence_split),
    knobs=knobs,
)
