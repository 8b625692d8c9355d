"""DeepSpeed: what it runs and refuses.

Read at deepspeedai/DeepSpeed edaa7221 (2026-08-22) and checked against PyPI deepspeed 0.19.8:
deepspeed/runtime/config.py, runtime/precision_config.py, runtime/zero/config.py,
runtime/zero/offload_config.py, runtime/zero/stage3.py, runtime/pipe/engine.py,
runtime/pipe/schedule.py (LC §1 of shared/reference/launch-configs.md). Tensor parallelism and
Megatron-style sequence parallelism come from the training script (Megatron-DeepSpeed), not the
config; the emitter (planner/emit/deepspeed.py) writes ds_config.json and says so.
"""
from __future__ import annotations

from typing import Optional

from costmodel import types as cm
from planner.frameworks.base import Choice, Framework, Knobs, Machine, MachineRule

COMM_DTYPES = ("fp32", "fp16", "bf16")
OFFLOAD_DEVICES = ("none", "cpu", "nvme")
# DeepSpeed's own default for the ZeRO-1/2 buckets (runtime/zero/config.py: 5e8 elements), which the launch
# files keep (emit/deepspeed.py zero_block).
ZERO12_BUCKET = 500_000_000


def zero3_reduce_bucket(model: cm.Model) -> int:
    """ZeRO-3's reduce_bucket_size as the launch files write it: the Hugging Face integration's 'auto', h^2
    elements (transformers/integrations/deepspeed.py)."""
    return model.hidden_size * model.hidden_size


def grad_bucket_elements(model: cm.Model, zero_stage: int) -> int:
    """The reduce bucket DeepSpeed copies gradients into for their reduction (Plan.grad_bucket_elements), with
    contiguous_gradients on as the launch files set it (at edaa7221; its bytes, one or two buckets by ZeRO stage
    and overlap: costmodel/dataparallel.py staging_bucket_bytes): reduce_bucket_size, 5e8 elements under ZeRO-1/2
    (runtime/zero/stage_1_and_2.py setup_buckets; the launch files never select BF16_Optimizer, which has none:
    precision_blocks) and h^2 under ZeRO-3 (stage3.py); none at ZeRO 0, where the engine all-reduces the
    gradients from where they are. Under a pipeline ZeRO-1's reduce_gradients adds one more bucket after the
    backward, when the activations are freed: not at the peak. Under grad_reduce "allreduce" at ZeRO-2 the cost
    model also counts the fallback's bucket and its flat copy (dataparallel.allreduce_bucket_bytes), the first of
    which is one of these: one bucket over."""
    if zero_stage in (1, 2):
        return ZERO12_BUCKET
    return zero3_reduce_bucket(model) if zero_stage == 3 else 0


def no_interleaving(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """runtime/pipe/schedule.py: the PipelineEngine's TrainSchedule is plain 1F1B, one chunk per stage."""
    if plan.vpp > 1:
        return f"DeepSpeed's pipeline engine has no interleaved schedule (vpp {plan.vpp}); re-plan with vpp 1"
    return None


def no_context_parallel(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """DeepSpeed's sequence parallelism is Ulysses (deepspeed/sequence/layer.py DistributedAttention,
    runtime/sequence_parallel/ulysses_sp.py for Hugging Face models): the training script wraps the
    attention and passes its process groups; `sequence_parallel_size` in ds_config alone only changes
    the batch arithmetic (deepspeed/__init__.py, runtime/config.py)."""
    if plan.cp > 1:
        return ("DeepSpeed's sequence parallelism (Ulysses) is a change to the training script, which ds_config "
                "cannot make; re-plan with cp 1 or use Megatron-LM")
    return None


def no_experts(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """Experts in DeepSpeed are model code (deepspeed/moe/layer.py MoE(ep_size=...) with 'moe' parameter
    groups) or AutoEP's swap of a Hugging Face model's MoE blocks (module_inject/auto_ep_*.py, ds_config
    "expert_parallel"); planner's DeepSpeed launch trains its model through Megatron-DeepSpeed-style
    scripts, which carry neither."""
    if model.moe is not None:
        return ("planner's DeepSpeed launch files do not carry mixture-of-experts layers (deepspeed.moe model code, "
                "or AutoEP on a Hugging Face model); use Megatron-LM for MoE models")
    return None


def zero3_reduce_scatter(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """runtime/zero/stage3.py (__reduce_and_partition_ipg_grads): both bucket paths scatter the
    averaged gradients into partitions; the `reduce_scatter: false` all-reduce exists only in
    stage_1_and_2.py (gradient_reduction_w_predivide)."""
    if plan.zero_stage == 3 and plan.grad_reduce == "allreduce":
        return ("ZeRO-3 always reduce-scatters gradients in current DeepSpeed; grad_reduce allreduce "
                "(DeepSpeed's 2021 stage 3) applies to ZeRO 1/2 only")
    return None


def pipelined_bf16_optimizer(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """runtime/engine.py _do_optimizer_sanity_check (0.19.8): a bf16 pipeline model without ZeRO gets
    BF16_Optimizer (runtime/bf16_optimizer.py), which shards the fp32 master weights and Adam states
    over data parallel, like ZeRO-1, and keeps a full fp32 gradient buffer: not the ZeRO-0 memory the
    plan was priced with."""
    if plan.zero_stage == 0 and plan.pp > 1 and plan.precision == "bf16":
        return ("DeepSpeed trains a bf16 pipeline with its BF16_Optimizer, which shards optimizer states over "
                "data parallel (runtime/engine.py): re-plan with ZeRO 1")
    return None


def fp32_gradients_need_zero(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """runtime/engine.py _do_optimizer_sanity_check (0.19.8): under bf16 or fp16 without ZeRO, a
    data_types.grad_accum_dtype other than the model's raises NotImplementedError ("unsupported mix"),
    so the fp32 gradient buffers an fp32 gradient dtype is priced with (costmodel/memory.py: gradients
    held in their communication dtype) exist under ZeRO 1-3 only."""
    if plan.zero_stage == 0 and plan.precision in ("bf16", "fp16") and plan.grad_comm_dtype == "fp32":
        return (f"DeepSpeed accumulates {plan.precision} gradients in fp32 only under ZeRO 1-3 (runtime/engine.py "
                "raises for grad_accum_dtype fp32 without ZeRO): re-plan with ZeRO 1 or a 16-bit gradient dtype")
    return None


def exposed_gradient_reduction(model: cm.Model, machine: Machine, plan: cm.Plan) -> Optional[str]:
    """runtime/engine.py (0.19.8): a pipeline model turns overlap_comm off ("Pipeline parallelism does
    not support overlapped communication") and its schedule reduces gradients after the last step
    (runtime/pipe/schedule.py ReduceGrads); without ZeRO, allreduce_gradients all-reduces the buffered
    gradients after the backward (buffered_allreduce_fallback). A plan priced with the DP sync hidden
    behind the backward (overlap_dp_comm) does not run so there: its time would be optimistic; the search
    prices such plans with the sync after the backward. Under a pipeline at any dp: with one data-parallel rank
    the overlap moves no time, but its second reduce bucket (dataparallel.staging_bucket_bytes) is memory
    DeepSpeed does not hold there. Reads dp, so it is checked per split (a base.MachineRule on the ZeRO stage
    and the overlap)."""
    if plan.overlap_dp_comm and (plan.pp > 1 or plan.zero_stage == 0 and plan.dp > 1):
        where = "a pipeline" if plan.pp > 1 else "ZeRO 0"
        return (f"DeepSpeed reduces gradients after the backward with {where} (runtime/engine.py), not overlapped "
                "with it: re-plan with overlap_dp_comm off (--no-overlap)")
    return None


def no_activation_offload(model: cm.Model, plan: cm.Plan) -> Optional[str]:
    """ds_config offloads activation checkpoints only (activation_checkpointing.cpu_checkpointing, with
    full recompute), not the layers' activations that Megatron's --cpu-offloading-num-layers moves."""
    if plan.offload_layers:
        return ("DeepSpeed has no activation offload of whole layers (offload_layers is Megatron-LM's "
                "--cpu-offloading-num-layers); re-plan without it")
    return None


def grad_dtypes(precision: str) -> Choice:
    """runtime/config.py get_communication_data_type: fp16, bf16 or fp32 only (LC §1.3)."""
    allowed = ("fp32",) if precision == "fp32" else COMM_DTYPES
    return Choice(allowed, f"communication_data_type must be one of {', '.join(allowed)}; DeepSpeed has no int8 "
                           "gradient all-reduce (ZeRO++ qgZ is a different, ZeRO-3-only scheme)")


def knobs(tp_split: bool, pp_split: bool) -> Knobs:
    zero = (0, 1) if pp_split else (0, 1, 2, 3)
    return Knobs(
        zero_stage=Choice(zero, "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism "
                                "(runtime/pipe/engine.py); use ZeRO 0/1"),
        recompute=Choice(("none", "full"), "activation_checkpointing (and Hugging Face gradient checkpointing) "
                                           "recompute whole layers; DeepSpeed has no selective variant"),
        block_recompute=Choice((False,), "DeepSpeed's pipeline engine checkpoints every activation_checkpoint_interval "
                                         "layers (runtime/pipe/module.py), and ds_config's activation_checkpointing "
                                         "leaves which layers to the training script, which these launch files do "
                                         "not write"),
        sequence_parallel=Choice((False,), "ds_config's sequence_parallel_size is Ulysses, not Megatron-style "
                                           "sequence parallelism"),
        precision=Choice(("fp32", "bf16", "fp16"), "ds_config has fp16 and bf16 blocks only (precision_config.py); "
                                                   "FP8 GEMMs come from the model code, which a config cannot "
                                                   "switch on: re-plan with bf16 or use Megatron-LM"),
        grad_dtype=grad_dtypes,
        tp_async_grad=Choice((False,), "Megatron-DeepSpeed turns async_tensor_model_parallel_allreduce off under "
                                       "DeepSpeed (microsoft/Megatron-DeepSpeed megatron/arguments.py @f4157bea), "
                                       "so each linear's input-gradient all-reduce shows"),
        # The loss is the training script's (launch.sh runs TRAIN_SCRIPT), so any is accepted; the search scores
        # Megatron-DeepSpeed's, whose tensor- and pipeline-parallel grid the launch expects the script to build.
        cross_entropy=Choice(("vocab_parallel", "eager", "vocab_parallel_fused", "fused"),
                             "Megatron-DeepSpeed's GPT model runs Megatron's vocab-parallel cross entropy, eagerly, "
                             "on fp32-upcast logits (megatron/model/gpt_model.py @070c64be, no loss fusion); a "
                             "Hugging Face model's is F.cross_entropy on upcast logits"),
        optimizer_offload=Choice((False,), "DeepSpeed's offload_optimizer (ZeRO-Offload) also runs the optimizer "
                                           "step on the CPU, which is not this plan's mechanism (GPU step, states "
                                           "copied back for it) and not modelled"),
        pipeline_buffers=Choice(("freed",), "DeepSpeed's pipeline engine reserves buffers for the micro-batches in "
                                            "flight only (runtime/pipe/engine.py, the schedule's num_pipe_buffers), "
                                            "not one per micro-batch of the step"),
        # Like the loss, the attention is the training script's. Tensor or pipeline parallelism under DeepSpeed
        # needs Megatron-DeepSpeed's model code (the launch's mpu note), whose attention is flash-attn 2
        # (megatron/model/transformer.py FlashSelfAttention @f4157bea); a ZeRO-only script keeps the base
        # default, the model code's PyTorch SDPA, which prefers cuDNN's kernel on Hopper and later.
        **({"attention_kernel": Choice(("flash2",), "Megatron-DeepSpeed runs flash-attn 2's kernel "
                                                    "(megatron/model/transformer.py FlashSelfAttention @f4157bea)")}
           if tp_split or pp_split else {}),
    )


def offload_violations(zero_stage: int, offload_optimizer: str, offload_param: str,
                       nvme_path: Optional[str]) -> list[str]:
    """ZeRO-Offload settings (runtime/zero/offload_config.py, runtime/zero/config.py): offload_param
    "Valid only with stage 3", offload_optimizer "Valid for ZeRO stage 1, 2, 3", nvme needs a path.
    ZeRO 1 and 2 (runtime/zero/stage_1_and_2.py) take any offload device as CPU offload: NVMe swapping
    of optimizer states exists in stage3.py only, so nvme there would silently use host memory."""
    out = []
    for name, device in (("offload_optimizer", offload_optimizer), ("offload_param", offload_param)):
        if device not in OFFLOAD_DEVICES:
            out.append(f"{name} must be one of {', '.join(OFFLOAD_DEVICES)} (got {device})")
    if offload_param != "none" and zero_stage != 3:
        out.append(f"offload_param needs ZeRO stage 3 (plan has {zero_stage})")
    if offload_optimizer != "none" and zero_stage == 0:
        out.append("offload_optimizer needs ZeRO stage 1, 2 or 3 (plan has 0)")
    if offload_optimizer == "nvme" and zero_stage in (1, 2):
        out.append(f"offload_optimizer nvme needs ZeRO stage 3: stage {zero_stage} offloads to CPU memory whatever "
                   "the device (runtime/zero/stage_1_and_2.py)")
    if "nvme" in (offload_optimizer, offload_param) and not nvme_path:
        out.append("offload to nvme needs --nvme-path")
    if nvme_path and "nvme" not in (offload_optimizer, offload_param):
        out.append("--nvme-path is where nvme offload swaps; nothing offloads to nvme (--offload-optimizer/"
                   "--offload-param nvme)")
    return out


FRAMEWORK = Framework(
    name="deepspeed", title="DeepSpeed", source="deepspeedai/DeepSpeed edaa7221 (2026-08-22), PyPI 0.19.8",
    layout_rules=(no_experts, no_interleaving, no_context_parallel),  # the model-wide rule first: it names the cause
    knobs=knobs,
    plan_rules=(zero3_reduce_scatter, pipelined_bf16_optimizer, fp32_gradients_need_zero, no_activation_offload),
    # Megatron-DeepSpeed applies RoPE with eager ops (megatron/model/rotary_pos_embedding.py @f4157bea: _rotate_half
    # and torch.cat), as Hugging Face models do: never one fused kernel.
    rope_fusion=lambda model: False,
    grad_bucket_elements=grad_bucket_elements,
    machine_rules=(MachineRule(("zero_stage", "overlap_dp_comm"), exposed_gradient_reduction),),
)
