"""What each training framework can run: layout rules and allowed knob values, as data + small predicates.

`--framework any` (the default) is the union: a plan is in the space when at least one framework runs
it. Every rule cites where it was read; unless noted the source is the project's reference
/work/shared/reference/launch-configs.md (LC, compiled 2026-11-29 from Megatron-LM d98e8a64,
DeepSpeed edaa7221, torchtitan b5bcd76c), section given as LC §n. The emitters' own checks
(planner/emit/*_rules.py) mirror the same sources; the two must agree on what is legal.

Rules the cost model already enforces for every plan (costmodel/rules.py: degrees multiply to the
GPU count, heads/kv heads/ffn divisible by tp, pp*vpp <= layers, gbs % (mbs*dp) == 0, SP needs
tp > 1) are not repeated here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from costmodel import types as cm
from costmodel.pipeline import default_chunk_layers

FRAMEWORKS = ("megatron", "deepspeed", "torchtitan")


@dataclass(frozen=True)
class KnobSets:
    """Values one framework accepts for each knob, given the layout (see `knob_sets`)."""

    zero: tuple[int, ...]
    recompute: tuple[str, ...]
    sequence_parallel: tuple[bool, ...]
    precision: tuple[str, ...]
    grad: Callable[[str], tuple[str, ...]]  # precision -> gradient communication dtypes


# ---------------------------------------------------------------------------------------------
# Layout rules: each returns a sentence when the framework cannot run the layout, else None.
# `plan` carries the layout (tp, pp, dp, vpp, micro-batch, global batch); knobs are irrelevant.

def megatron_layers_split(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """LC §2.2 rule 3: num_layers % pp == 0, unless --decoder-first/last-pipeline-num-layers make only
    the first and last stage lighter (LC §2.1 flags); the middle stages then split the rest evenly.
    Interleaving with an uneven split is not emitted (planner/emit/megatron_rules.stage_layers_form)."""
    if plan.vpp > 1:
        return None
    middle = default_chunk_layers(model.num_layers, plan.pp, 1)[1:-1]
    if model.num_layers % plan.pp and len(set(middle)) > 1:
        return f"Megatron-LM: {model.num_layers} layers on pp {plan.pp} leave uneven middle stages"
    return None


def megatron_interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """LC §2.2 rule 4: with VPP, num_layers % (pp*vpp) == 0 (transformer_block.get_num_layers_to_build)
    and the number of micro-batches a multiple of pp (pipeline_parallel/schedules.py)."""
    if plan.vpp == 1:
        return None
    if model.num_layers % (plan.pp * plan.vpp):
        return f"Megatron-LM interleaving: {model.num_layers} layers not divisible by pp*vpp = {plan.pp * plan.vpp}"
    if plan.num_microbatches % plan.pp:
        return f"Megatron-LM interleaving: {plan.num_microbatches} micro-batches not a multiple of pp {plan.pp}"
    return None


def deepspeed_no_interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """DeepSpeed runtime/pipe/schedule.py: the PipelineEngine's TrainSchedule is plain 1F1B, one chunk
    per stage (planner/emit/deepspeed_rules.no_interleaving)."""
    return "DeepSpeed pipeline engine: no interleaved schedule" if plan.vpp > 1 else None


def torchtitan_interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """torch.distributed.pipelining schedules.py, ScheduleInterleaved1F1B: micro-batches run in
    rounds = max(1, m // pp), and m must be a multiple of the number of rounds."""
    m = plan.num_microbatches
    if plan.vpp > 1 and m % max(1, m // plan.pp):
        return f"torchtitan interleaved 1F1B: {m} micro-batches not a multiple of {m // plan.pp} rounds"
    return None


def torchtitan_sequence_split(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """LC §3.2 (llama3/infra/parallelize.py): seq_len % (tp * 2 * cp) == 0; cp = 1 here."""
    if model.seq_length % (2 * plan.tp):
        return f"torchtitan: seq_len {model.seq_length} not divisible by 2*tp = {2 * plan.tp}"
    return None


LAYOUT_RULES: dict[str, tuple] = {
    "megatron": (megatron_layers_split, megatron_interleaving),
    "deepspeed": (deepspeed_no_interleaving,),
    "torchtitan": (torchtitan_interleaving, torchtitan_sequence_split),
}


def layout_violation(framework: str, model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """The first layout rule of `framework` that `plan` breaks, or None."""
    for rule in LAYOUT_RULES[framework]:
        msg = rule(model, plan)
        if msg:
            return msg
    return None


# ---------------------------------------------------------------------------------------------
# Knob sets per framework. They depend on the layout only through tp > 1 and pp > 1.

def megatron_grads(precision: str) -> tuple[str, ...]:
    """LC §2.2 rule 9: gradients reduce in fp32, or in the 16-bit parameter dtype with
    --grad-reduce-in-bf16 (bf16; fp8 training keeps bf16 parameters) or under --fp16."""
    half = {"bf16": "bf16", "fp8": "bf16", "fp16": "fp16"}.get(precision)
    return ("fp32", half) if half else ("fp32",)


def deepspeed_grads(precision: str) -> tuple[str, ...]:
    """LC §1.3 communication_data_type: fp32, fp16 or bf16; no int8 all-reduce."""
    return ("fp32",) if precision == "fp32" else ("fp32", "fp16", "bf16")


def torchtitan_grads(precision: str) -> tuple[str, ...]:
    """LC §3.2 training.mixed_precision_reduce: float32 (default) or bfloat16."""
    return ("fp32",) if precision == "fp32" else ("fp32", "bf16")


def knob_sets(framework: str, tp_split: bool, pp_split: bool) -> KnobSets:
    """Knob values `framework` accepts for a layout with tp > 1 (`tp_split`) and pp > 1 (`pp_split`)."""
    if framework == "megatron":
        # ZeRO: --use-distributed-optimizer shards optimizer states only (ZeRO-1); FSDP is not emitted
        # (planner/emit/megatron_rules.zero_stage). Recompute: --recompute-granularity selective|full
        # (LC §2.1). Precision: --bf16/--fp16/--fp8-format, fp32 without them (LC §2.1, rule 9).
        return KnobSets((0, 1), ("none", "selective", "full"), (False, True), ("fp32", "bf16", "fp16", "fp8"),
                        megatron_grads)
    if framework == "deepspeed":
        # LC §1.2: the PipelineEngine asserts "ZeRO-2 and ZeRO-3 are incompatible with pipeline
        # parallelism". LC §1.3: activation_checkpointing / HF gradient checkpointing recompute whole
        # layers (no selective variant); sequence_parallel_size is Ulysses, not Megatron SP; the
        # config has fp16/bf16 blocks only, no FP8 (planner/emit/deepspeed_rules.precision).
        zero = (0, 1) if pp_split else (0, 1, 2, 3)
        return KnobSets(zero, ("none", "full"), (False,), ("fp32", "bf16", "fp16"), deepspeed_grads)
    if framework == "torchtitan":
        # LC §3.2: FSDP2 (ZeRO-3) on the data_parallel_shard dimension; plain DDP (replicate only)
        # "cannot be combined with other parallelism". activation_checkpoint.mode none|selective|full,
        # where selective with selective_ac_option "op" is the cost model's "op" recompute.
        # enable_sequence_parallel (HEAD). Precision: training.dtype / mixed_precision_param; FP8
        # linears via torchao (validation/README.md, precision convention).
        zero = (3,) if tp_split or pp_split else (0, 3)
        return KnobSets(zero, ("none", "op", "full"), (False, True), ("fp32", "bf16", "fp8"), torchtitan_grads)
    raise ValueError(f"unknown framework {framework}")
