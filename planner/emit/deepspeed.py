"""DeepSpeed files for a plan: ds_config.json, a hostfile template and launch.sh.

Key names and defaults follow deepspeed/runtime/constants.py and the pydantic models in
runtime/zero/config.py, runtime/zero/offload_config.py and runtime/precision_config.py
(DeepSpeed 0.19.x). Every emitted config is parsed by DeepSpeed's own DeepSpeedConfig in the tests.
"""
from __future__ import annotations

import json
from dataclasses import replace

from costmodel.dataparallel import staging_bucket_bytes
from planner.emit.job import Job, refuse_unless_runs
from planner.errors import PlannerError
from planner.frameworks.deepspeed import ZERO12_BUCKET, grad_bucket_elements, offload_violations

# fp16 dynamic loss scaling: runtime/precision_config.py defaults, written out.
FP16_BLOCK = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000,
              "hysteresis": 2, "min_loss_scale": 1}


def zero_block(job: Job) -> dict:
    """zero_optimization. The reduce bucket is DeepSpeed's as the search scores it (frameworks/deepspeed.py
    grad_bucket_elements); a plan scored with other buckets is written with these, and the README says how much
    more or less DeepSpeed holds (bucket_note; ds_config refused only where they would not fit:
    refuse_unless_buckets_fit). ZeRO-3's others follow the Hugging Face integration's 'auto' values
    (transformers/integrations/deepspeed.py: prefetch 0.9 h^2, persistence 10 h)."""
    p, h = job.plan, job.model.hidden_size
    z: dict = {"stage": p.zero_stage}
    if p.zero_stage == 0:
        return z
    z.update(overlap_comm=p.overlap_dp_comm, contiguous_gradients=True, reduce_scatter=p.grad_reduce != "allreduce")
    if p.zero_stage < 3:
        z.update(reduce_bucket_size=grad_bucket_elements(job.cm_model, p.zero_stage),
                 allgather_bucket_size=ZERO12_BUCKET)
    else:
        z.update(reduce_bucket_size=grad_bucket_elements(job.cm_model, p.zero_stage),
                 stage3_prefetch_bucket_size=int(0.9 * h * h),
                 stage3_param_persistence_threshold=10 * h, stage3_max_live_parameters=1_000_000_000,
                 stage3_max_reuse_distance=1_000_000_000, stage3_gather_16bit_weights_on_model_save=True)
    z.update(offload_blocks(job))
    return z


PARAM_SWAP_BUFFER = 100_000_000  # offload_param.buffer_size's default, elements (runtime/zero/offload_config.py)


def param_swap_buffer(job: Job) -> int | None:
    """offload_param.buffer_size for nvme: DeepSpeed swaps each parameter's ZeRO-3 partition (its TP-local
    tensor over the dp ranks) through one buffer of buffer_size elements and asserts it fits ("More elements ...
    than buffer size", runtime/swap_tensor/partitioned_param_swapper.py get_buffer, 0.19.8): the largest
    partition (the vocabulary padded as Megatron-DeepSpeed pads it, to a multiple of 128 x tp), rounded up to a
    million, where it exceeds the default 1e8 (Llama 3 70B's embedding over tp 1 and
    dp 8: 128,256 x 8,192 / 8 = 131M); None where the default holds it."""
    m, p = job.cm_model, job.plan
    h = m.hidden_size
    padded = -(-m.vocab_size // (128 * p.tp)) * 128 * p.tp  # Megatron pads the vocabulary to 128 x tp rows
    widest = max(padded, 2 * (m.ffn_hidden_size or 4 * h), 3 * h)  # the embedding or output, fused MLP or QKV
    partition = -(-widest * h // (p.tp * p.dp))
    # DeepSpeed's swappable check admits numel < buffer_size only where it swaps (the strict test): one more
    return -(-(partition + 1) // 1_000_000) * 1_000_000 if partition >= PARAM_SWAP_BUFFER else None


def offload_blocks(job: Job) -> dict:
    """offload_optimizer / offload_param, only when asked (runtime/zero/offload_config.py); nvme parameter
    offload with a swap buffer its largest partition fits (param_swap_buffer)."""
    o, out = job.options, {}
    for key, device in (("offload_optimizer", o.offload_optimizer), ("offload_param", o.offload_param)):
        if device != "none":
            out[key] = {"device": device, "pin_memory": True}
            if device == "nvme":
                out[key]["nvme_path"] = o.nvme_path
                if key == "offload_param" and (buffer := param_swap_buffer(job)):
                    out[key]["buffer_size"] = buffer
    return out


def precision_blocks(job: Job) -> dict:
    """bf16 / fp16 blocks (never both: runtime/config.py asserts), communication_data_type, and with fp32
    gradients under a 16-bit precision data_types.grad_accum_dtype "fp32": the gradients are then held
    in fp32, as the plan was priced, where DeepSpeed otherwise accumulates them in the model's dtype and
    casts only for the collective (runtime/engine.py get_data_types; 0.19.8). Not under bf16 with ZeRO-1:
    there it would select BF16_Optimizer (engine.py _do_optimizer_sanity_check), which all-reduces the
    whole fp32 buffer after the backward, neither overlapped nor reduce-scattered as the plan was priced;
    DeepSpeed's ZeRO-1 optimizer instead keeps the bf16 .grad and reduces it in fp32 in overlapped buckets,
    so the plan's fp32 gradient buffer overstates its memory by 2 B per parameter (on the safe side)."""
    out: dict = {}
    p = job.plan
    fp32_grads = job.half_dtype is not None and p.grad_comm_dtype == "fp32"
    if job.half_dtype == "bf16":
        out["bf16"] = {"enabled": True}
        fp32_grads = fp32_grads and p.zero_stage != 1
    elif job.half_dtype == "fp16":
        out["fp16"] = dict(FP16_BLOCK)
    out["communication_data_type"] = job.plan.grad_comm_dtype
    if fp32_grads:
        out["data_types"] = {"grad_accum_dtype": "fp32"}
    return out


def activation_block(job: Job) -> dict:
    """activation_checkpointing configures deepspeed.checkpointing (runtime/activation_checkpointing/
    config.py); the model code decides what to recompute. Key is partition_activations."""
    if job.plan.recompute == "none":
        return {}
    return {"activation_checkpointing": {"partition_activations": False, "cpu_checkpointing": False,
                                         "contiguous_memory_optimization": False,
                                         "synchronize_checkpoint_boundary": False, "profile": False}}


def deepspeed_buckets(job: Job) -> tuple[int, float, float]:
    """DeepSpeed's gradient reduce buckets for the plan (frameworks/deepspeed.py grad_bucket_elements): (elements of
    each, bytes per GPU they hold, of those the bytes beyond what the plan was scored with (Plan.
    grad_bucket_elements; 0 for a plan estimated without them, as Megatron-LM and torchtitan run it), negative
    where the plan counted more)."""
    elements = grad_bucket_elements(job.cm_model, job.plan.zero_stage)
    held = staging_bucket_bytes(replace(job.plan, grad_bucket_elements=elements))
    return elements, held, held - staging_bucket_bytes(job.plan)


def refuse_unless_buckets_fit(job: Job) -> None:
    """A plan the estimate says fits, scored without the buckets DeepSpeed allocates, is refused where they
    would take it over the GPU's memory (the README otherwise says how much more DeepSpeed holds)."""
    elements, _, more = deepspeed_buckets(job)
    used, capacity = job.estimate.get("memory_per_gpu_bytes"), job.estimate.get("memory_capacity_bytes")
    if more <= 0 or not isinstance(used, (int, float)) or not isinstance(capacity, (int, float)):
        return
    if used <= capacity < used + more:
        raise PlannerError(f"DeepSpeed would not fit this plan: its ZeRO-{job.plan.zero_stage} gradient reduce "
                           f"buckets hold {more / 2**30:.2f} GiB per GPU the estimate did not count, "
                           f"{(used + more) / 2**30:.1f} GiB against {capacity / 2**30:.0f} GiB (re-score as "
                           f"DeepSpeed runs it: planner estimate ... --grad-bucket-elements {elements})")


def ds_config(job: Job) -> dict:
    """The whole config. train_batch_size = micro x gas x dp (runtime/config.py _batch_assertion,
    with dp = world/(tp*pp) as the model-parallel unit's mpu reports it)."""
    refuse_unless_runs(job, "deepspeed")
    refuse_unless_buckets_fit(job)
    o = job.options
    broken = offload_violations(job.plan.zero_stage, o.offload_optimizer, o.offload_param, o.nvme_path)
    if broken:
        raise PlannerError("DeepSpeed would reject this plan: " + "; ".join(broken))
    p = job.plan
    cfg = {"train_batch_size": p.global_batch_size, "train_micro_batch_size_per_gpu": p.micro_batch_size,
           "gradient_accumulation_steps": p.grad_accum_steps, "gradient_clipping": 1.0,
           "steps_per_print": 10, "wall_clock_breakdown": False}
    cfg.update(precision_blocks(job))
    cfg["zero_optimization"] = zero_block(job)
    cfg.update(activation_block(job))
    return cfg


def hostfile(job: Job) -> str:
    """MPI-style hostfile (launcher/runner.py: `hostname slots=N`, '#' comments)."""
    head = ["# DeepSpeed hostfile: one 'hostname slots=GPUS' line per node (deepspeed/launcher/runner.py)."]
    if job.nnodes == 1:
        return "\n".join(head + [f"localhost slots={job.gpus_per_node}"]) + "\n"
    head.append("# Replace the placeholder names with your nodes (reachable by passwordless ssh).")
    return "\n".join(head + [f"node-{i + 1} slots={job.gpus_per_node}" for i in range(job.nnodes)]) + "\n"


def launch_sh(job: Job) -> str:
    p = job.plan
    mp = ""
    if p.tp > 1 or p.pp > 1:
        mp = (f"# The script must build the tp={p.tp} x pp={p.pp} grid and pass deepspeed.initialize an mpu whose\n"
              f"# get_data_parallel_world_size() is {p.dp} (e.g. Megatron-DeepSpeed:\n"
              f"#   --tensor-model-parallel-size {p.tp} --pipeline-model-parallel-size {p.pp}).\n")
    return f"""#!/usr/bin/env bash
# DeepSpeed launch for {job.title}.
# Written by `planner emit`; see ../README.txt.
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
# TRAIN_SCRIPT: your training script; it must accept --deepspeed --deepspeed_config
# (deepspeed.add_config_arguments) and call deepspeed.initialize with that config.
{mp}TRAIN_SCRIPT="${{TRAIN_SCRIPT:-train.py}}"
HOSTFILE="${{HOSTFILE:-$HERE/hostfile}}"
deepspeed --hostfile "$HOSTFILE" --num_nodes {job.nnodes} --num_gpus {job.gpus_per_node} \\
  --master_port "${{MASTER_PORT:-29500}}" \\
  "$TRAIN_SCRIPT" --deepspeed --deepspeed_config "$HERE/ds_config.json" "$@"
"""


def files(job: Job) -> dict[str, tuple[str, bool]]:
    """{relative path: (text, executable)} for the deepspeed/ folder."""
    cfg = ds_config(job)
    return {"ds_config.json": (json.dumps(cfg, indent=2) + "\n", False), "hostfile": (hostfile(job), False),
            "launch.sh": (launch_sh(job), True)}

