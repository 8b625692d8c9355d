"""README.txt for an emit folder: the plan, what planner predicts for it, how to launch."""
from __future__ import annotations

from costmodel import lowp
from planner.emit.deepspeed import deepspeed_buckets
from planner.emit.job import Job
from planner.frameworks import REGISTRY
from planner.frameworks import megatron as megatron_rules
from planner.frameworks import torchtitan as titan
from planner.frameworks.base import scored_otherwise
from planner.inputs.plans import plan_to_dict, recompute_label

GIB = 2**30


def plan_lines(job: Job) -> list[str]:
    p = job.plan
    return [
        "Plan",
        f"  tp {p.tp}, cp {p.cp} ({p.cp_comm}), pp {p.pp}, vpp {p.vpp}, dp {p.dp}, ep {p.ep}, etp {p.etp}; "
        f"ZeRO stage {p.zero_stage}",
        f"  sequences of {job.model.seq_length:,} tokens; micro batch {p.micro_batch_size}, global batch "
        f"{p.global_batch_size} ({p.grad_accum_steps} micro-batches per step per pipeline)",
        f"  recompute {recompute_label(plan_to_dict(p))}, sequence parallel {'on' if p.sequence_parallel else 'off'}, "
        f"precision {p.precision}, gradients reduced in {p.grad_comm_dtype}",
        f"  DP sync overlapped with backward: {'yes' if p.overlap_dp_comm else 'no'}; "
        f"fused attention: {attention_words(job)}",
    ]


def attention_words(job: Job) -> str:
    """The plan's fused attention kernel as the README names it. planner's kernel names (cudnn, flash2, flash3)
    are NVIDIA's stacks'; a catalog GPU of another vendor (AMD: ROCm has no cuDNN) runs its stack's own kernel,
    which the cost model prices at the generic rate whichever name the plan carries."""
    if not job.plan.flash_attention:
        return "no"
    gpu = non_nvidia_gpu(job)
    if gpu is not None:
        stack = {"amd": "ROCm"}.get(gpu.vendor, gpu.vendor)
        return f"yes, the {stack} stack's own kernel (planner's kernel names, cudnn, flash2 and flash3, are NVIDIA's)"
    return job.plan.attention_kernel


def non_nvidia_gpu(job: Job):
    """The plan's catalog GPU (the estimate's `gpu`) when another vendor than NVIDIA makes it, else None (an
    NVIDIA part, or a GPU the catalog does not name)."""
    from planner.inputs.catalogs import gpu_catalog

    gpu = gpu_catalog().get(str(job.estimate.get("gpu")))
    return gpu if gpu is not None and gpu.vendor != "nvidia" else None


def prediction_lines(job: Job) -> list[str]:
    e = job.estimate
    out = ["Predicted by planner's cost model" + (f", under the what-if {e['assumed']} (not the cluster as "
                                                  "given)" if e.get("assumed") else "")]
    if e.get("step_time_s"):
        mfu = f", MFU {100 * e['mfu']:.1f}%" if e.get("mfu") is not None else ""
        out.append(f"  step time {e['step_time_s']:.2f} s, {e.get('tokens_per_s', 0):,.0f} tokens/s{mfu}")
    if e.get("memory_per_gpu_bytes"):
        cap = e.get("memory_capacity_bytes")
        of = f" of {cap / GIB:.1f} GiB" if cap else ""
        fits = "" if e.get("fits") is None else (" (fits)" if e["fits"] else " (DOES NOT FIT: expect out-of-memory)")
        out.append(f"  memory per GPU {e['memory_per_gpu_bytes'] / GIB:.1f} GiB{of}{fits}")
    training = e.get("training") or {}
    if training.get("steps"):
        out.append(f"  {training['steps']:,} steps to train {training['training_tokens']:.3g} tokens")
    return out if len(out) > 1 else []


def launch_lines(job: Job, frameworks: list[str]) -> list[str]:
    out = ["How to launch"]
    if "deepspeed" in frameworks:
        out += ["  DeepSpeed: put your node names in deepspeed/hostfile, then",
                "    TRAIN_SCRIPT=path/to/train.py bash deepspeed/launch.sh [script arguments]"]
    if "megatron" in frameworks:
        rank = "NODE_RANK=0" if job.nnodes == 1 else f"NODE_RANK=<0..{job.nnodes - 1}> MASTER_ADDR=<node 0>"
        out += [f"  Megatron-LM: on {'the node' if job.nnodes == 1 else f'each of the {job.nnodes} nodes'}:",
                f"    MEGATRON_LM=path/to/Megatron-LM {rank} bash megatron/launch.sh",
                "    (mock data; for yours add DATA_PATH=PREFIX TOKENIZER_MODEL=NAME_OR_PATH, a Hugging Face "
                "tokenizer)"]
    if "torchtitan" in frameworks:
        out += torchtitan_lines(job)
    return out


def torchtitan_lines(job: Job) -> list[str]:
    """torchtitan 0.3.0 runs from its checkout, where the recipe's tokenizer path points
    (scripts/download_hf_assets.py fetches it; the debug model's ships in tests/assets)."""
    flavour, _ = titan.match_flavour(job.cm_model)
    rank = "NODE_RANK=0" if job.nnodes == 1 else f"NODE_RANK=<0..{job.nnodes - 1}> MASTER_ADDR=<node 0>"
    where = "the node" if job.nnodes == 1 else f"each of the {job.nnodes} nodes"
    out = [f"  torchtitan 0.3.0 (pip install torchtitan==0.3.0): on {where}, in a torchtitan checkout of release/0.3",
           "    (git checkout release/0.3: the checkout's package is the one that runs, and main's config "
           "fields differ)"]
    if flavour and flavour.repo:
        out.append(f"    python scripts/download_hf_assets.py --repo_id {flavour.repo} --assets tokenizer")
    return out + [f"    {rank} bash <this folder>/torchtitan/launch.sh"]


def requirement_lines(job: Job, frameworks: list[str]) -> list[str]:
    """What the files were checked against (each framework module's source) and what the user installs or
    supplies beyond it, each from the framework's own code: Transformer Engine (every Megatron-LM launch keeps
    the default transformer_impl, transformer_engine: transformer_config.py d98e8a64), DeepEP or HybridEP for
    the flex dispatcher (token_dispatcher.py imports them), torchao 0.9+ for torchtitan's float8
    (components/quantization/float8.py: without it the converter raises, and an older torchao turns float8 off
    with a warning), the gated Llama tokenizer, and DeepSpeed's async_io op for NVMe offload."""
    p, out = job.plan, ["Written for"]
    for name in frameworks:
        out.append(f"  {REGISTRY[name].title}: {REGISTRY[name].source}")
    needs = []
    if "megatron" in frameworks:
        needs.append("Megatron-LM: Transformer Engine (the launch keeps Megatron-LM's default, transformer_impl "
                     "transformer_engine)")
        if p.ep_dispatch == "deepep" and job.cm_model.moe is not None:
            needs.append("Megatron-LM: the flex token dispatcher's backend library (DeepEP, or HybridEP / NCCL EP as "
                         "written in launch.sh), installed next to Megatron-LM")
    if "torchtitan" in frameworks:
        if p.precision == "fp8" and job.cm_model.moe is None:
            needs.append("torchtitan: torchao 0.9 or newer for float8 (without it the job fails at start; an older "
                         "one trains in bf16 after a warning)")
        elif lowp.is_low(p.precision):
            needs.append(f"torchtitan: torchao with its MoE training prototype (torchao.prototype.moe_training; "
                         f"checked with 0.18.0) for {p.precision.upper()} (without it the job fails at start)")
        needs.append("torchtitan: its recipe's dataset (c4, streamed from the Hugging Face Hub) and tokenizer "
                     "(download_hf_assets.py; gated models need a Hugging Face token)")
    if "deepspeed" in frameworks and "nvme" in (job.options.offload_optimizer, job.options.offload_param):
        needs.append("DeepSpeed: the async_io op (libaio) for NVMe offload (ds_report shows it)")
    return out + (["Needs"] + [f"  - {n}" for n in needs] if needs else [])


def bucket_note(job: Job) -> str:
    """What DeepSpeed's gradient reduce buckets hold, and whether the memory above counts them."""
    elements, held, more = deepspeed_buckets(job)
    head = (f"DeepSpeed: ZeRO-{job.plan.zero_stage} copies gradients into reduce_bucket_size buckets of {elements:,} "
            "elements for their reduction (contiguous_gradients; a second under overlap_comm at ZeRO-1/2: "
            f"runtime/zero/stage_1_and_2.py setup_buckets), {held / 2**30:.2f} GiB per GPU")
    if not more:
        return head + ", counted with the gradients above."
    counted = ("which the memory above does not count" if more == held
               else f"{more / 2**30:+.2f} GiB beside the buckets the memory above counts")
    return (head + f", {counted}: re-score as DeepSpeed runs it with planner estimate ... "
            f"--grad-bucket-elements {elements}.")


def note_lines(job: Job, frameworks: list[str]) -> list[str]:
    p, o, notes = job.plan, job.options, []
    if "deepspeed" in frameworks:
        if p.tp > 1 or p.pp > 1 or p.sequence_parallel:
            notes.append("DeepSpeed: tensor/pipeline/sequence parallelism are set in the training script (e.g. "
                         "Megatron-DeepSpeed flags); ds_config holds the batch, ZeRO and precision settings, with "
                         "train_batch_size counted over dp = GPUs/(tp*pp).")
        if p.zero_stage:
            notes.append(bucket_note(job))
        if p.flash_attention and p.attention_kernel == "flash2" and (p.tp > 1 or p.pp > 1):
            notes.append("DeepSpeed: the prediction above assumes Megatron-DeepSpeed's flash-attn 2 kernel, which it "
                         "runs only with --use-flash-attn-v2 (megatron/arguments.py @f4157bea; off by default): pass "
                         "it to the training script.")
        if p.recompute != "none":
            notes.append(f"DeepSpeed: {p.recompute} recompute is the model code's job; activation_checkpointing only "
                         "configures deepspeed.checkpointing, which the model must call (Megatron-DeepSpeed does; "
                         "Hugging Face models: gradient_checkpointing_enable()).")
        if o.offload_optimizer != "none" or o.offload_param != "none":
            notes.append("DeepSpeed: offload is on; the cost model does not model it, so step time and memory "
                         "above are without offload. With offload_optimizer use DeepSpeedCPUAdam or a config "
                         "optimizer block (DeepSpeed refuses other client optimizers with ZeRO-Offload: "
                         "runtime/engine.py).")
        if p.stage_layers and len(set(p.stage_layers)) > 1:
            notes.append("DeepSpeed: the uneven layer split is chosen in code (PipelineModule partition_method).")
    if "torchtitan" in frameworks:
        notes += torchtitan_notes(job)
    if "megatron" in frameworks and p.full_iteration_graph:
        notes.append("Megatron-LM: the whole iteration runs as one CUDA graph, so the loss and gradients are not "
                     "checked for NaN (--no-check-for-nan-in-loss-and-grad, which Megatron-LM requires with it); "
                     "the graph's own memory pool is not in the memory above.")
    moe = job.model.moe
    if "megatron" in frameworks and moe is not None and moe.aux_loss_coeff is None:
        notes.append("Megatron-LM: the model states no load-balancing loss (config.json's router_aux_loss_coef or "
                     "aux_loss_alpha), so launch.sh sets none and Megatron-LM's --moe-aux-loss-coeff default 0 "
                     "trains without one" + (" beside the expert bias" if moe.router_expert_bias else "")
                     + ": add --moe-router-load-balancing-type and --moe-aux-loss-coeff to balance the experts "
                     "(the estimate prices balanced routing either way).")
    if "megatron" in frameworks and megatron_rules.nccl_ep(p):
        notes.append("Megatron-LM: the MXFP8 token dispatch runs on the NCCL EP backend, which needs a Transformer "
                     "Engine with its EP API (transformer_engine.pytorch.ep; Megatron-LM experts.py names TE PR 3355); "
                     "planner prices NCCL EP's exchanges like DeepEP's, which no published run has checked.")
    notes += otherwise_notes(job, frameworks) + stack_notes(job)
    notes += [f"planner: {w}" for w in job.estimate.get("warnings") or []]
    notes += [f"planner: {c}" for c in published_cautions(job.estimate)]
    return ["Notes"] + [f"  - {n}" for n in notes] if notes else []


def published_cautions(estimate: dict) -> list[str]:
    """The cautions `estimate` and `suggest` print beside the plan (coverage.cautions: MFU above every published
    run of its kind, settings no published run on its GPU generation used, a dominant MoE host wait, sequences
    longer than any fitted run), where the PLAN.json carries the fields they read (an estimate object does)."""
    from planner.analysis import coverage

    if "envelope" not in estimate:
        return []
    return coverage.cautions(estimate.get("envelope"), estimate.get("unvalidated_settings") or [], "the plan",
                             host_wait=estimate.get("host_wait"), long_context=estimate.get("long_context"))


def stack_notes(job: Job) -> list[str]:
    """On a catalog GPU of another vendor than NVIDIA: the launch rules planner checks are those of the
    frameworks' CUDA releases it cites, plus what their ROCm builds were read not to run (frameworks/megatron.py
    and torchtitan.py rocm_* rules); the rest of those builds was not read."""
    gpu = non_nvidia_gpu(job)
    if gpu is None:
        return []
    return [f"{gpu.name} is an {gpu.vendor.upper()} GPU: the rules these files were checked against are the "
            "frameworks' CUDA releases', plus what their ROCm builds were read not to run (TP overlap, MoE and "
            "whole-iteration CUDA graphs, blockwise FP8 and the flex dispatcher in Megatron-LM through ROCm's "
            "Transformer Engine fork; AsyncTP in torchtitan); run them with the frameworks' ROCm builds, whose "
            "support for this plan's other settings (fused kernels) planner has not read."]


def otherwise_notes(job: Job, frameworks: list[str]) -> list[str]:
    """Per framework, each setting it runs otherwise than the plan was scored with (frameworks.base.
    scored_otherwise: kernels, projections, loss, RoPE fusion, the experts' prologue, the TP gradient reduction,
    where the experts' token counts are read, when gradients are reduced): no launch setting changes those,
    so say how to re-score. The reduce buckets, which move memory, have their own note (bucket_note)."""
    p, notes = job.plan, []
    for name in frameworks:
        fw = REGISTRY[name]
        for o in scored_otherwise(fw, job.cm_model, p, job.machine):
            if o.field in OTHERWISE_NOTES:
                assumes, runs, flag = OTHERWISE_NOTES[o.field](p, fw, o)
                notes.append(f"{fw.title}: the prediction above assumes {assumes}, but {runs}; re-score with "
                             f"planner estimate {flag}.")
    return notes


def _flag(name: str, on: bool) -> str:
    """The estimate flag that turns a boolean setting to `on` from the plan's other value."""
    return f"... --{name}" if on else f"without --{name}"


def _prologue(p, fw, o) -> tuple[str, str, str]:
    def side(on: bool) -> str:
        return "with" if on else "without"
    return (f"the experts' activation {side(p.moe_act_prologue)} Megatron-core's quick-GEGLU prologue (eager clamps "
            f"and a host wait per MoE layer)", f"{fw.title} runs it {side(o.runs)}",
            f"{'without' if o.runs else '...'} --no-moe-act-prologue")


def _where(on: bool) -> str:
    return "GPU" if on else "host"


# Plan field -> (plan, framework, its frameworks.base.Otherwise) -> (what the plan assumes, what the framework
# does, the estimate flags that re-score it).
OTHERWISE_NOTES = {
    "attention_kernel": lambda p, fw, o: (f"{p.attention_kernel} attention", o.why, f"... --attention-kernel {o.runs}"),
    "projections": lambda p, fw, o: (f"{p.projections} projections", o.why, f"... --projections {o.runs}"),
    "rope_fusion": lambda p, fw, o: (
        "RoPE as one fused kernel" if p.rope_fusion else "RoPE applied with eager ops",
        f"its model code {'fuses it into one kernel' if o.runs else 'applies it with eager ops'}",
        "... --rope-fusion" if o.runs else "... --no-rope-fusion"),
    "moe_act_prologue": _prologue,
    "cross_entropy": lambda p, fw, o: (f"the {p.cross_entropy} loss", o.why, f"... --cross-entropy {o.runs}"),
    "tp_async_grad": lambda p, fw, o: (f"tp_async_grad {str(p.tp_async_grad).lower()}", o.why,
                                       "without --no-tp-async-grad" if o.runs else "... --no-tp-async-grad"),
    "expert_sizes_on_device": lambda p, fw, o: (
        f"the experts' token counts read on the {_where(p.expert_sizes_on_device)}",
        f"{fw.title}'s grouped expert GEMMs read them on the {_where(o.runs)} on this GPU",
        _flag("expert-sizes-on-device", o.runs)),
    "grad_sync": lambda p, fw, o: (f"grad_sync {p.grad_sync}", f"{fw.title} reduces as grad_sync {o.runs} ({o.why})",
                                   f"... --grad-sync {o.runs}"),
}


def torchtitan_notes(job: Job) -> list[str]:
    flavour, _ = titan.match_flavour(job.cm_model)
    family = flavour.family if flavour else "llama3"
    notes = [f"torchtitan: torchtitan/planner_job.py starts from the model's recipe in torchtitan's "
             f"models/{family}/config_registry.py (tokenizer, dataset, optimizer, checkpoints: edit them there or "
             "in planner_job.py) and sets the plan" + ("; torchtitan's Llama 3 flavours are Llama 3.1 (RoPE "
                                                       "scaled to 131,072 positions)." if family == "llama3" else ".")]
    if job.plan.ep > 1:
        notes.append("torchtitan: the routed experts dispatch tokens with the model's default \"standard\" backend, "
                     "AllToAllTokenDispatcher (no capacity: dropless; models/common/config_utils.py), as planned; "
                     "its DeepEP and HybridEP backends are not what the plan was scored with. CUDA graphs are off: "
                     "that dispatcher synchronizes with the CPU (trainer.py _validate_cuda_graphs).")
    if job.plan.grad_comm_dtype == "bf16":
        notes.append("torchtitan: gradients are reduced in bfloat16 as planned; torchtitan annotates "
                     "training.mixed_precision_reduce as float32 only, so its config loader prints a tyro warning, "
                     "and FSDP2 reduces in bfloat16.")
    return notes


def readme(job: Job, frameworks: list[str], files: list[str]) -> str:
    e = job.estimate
    where = f" on {e['cluster']}" if e.get("cluster") else ""
    gpu = f" x {e['gpu']}" if e.get("gpu") else " GPUs"
    blocks = [[f"planner emit: launch files for {job.model.name}{where} ({job.num_gpus}{gpu}, "
               f"{job.nnodes} node{'s' if job.nnodes > 1 else ''} of {job.gpus_per_node})"],
              plan_lines(job), prediction_lines(job), ["Files"] + [f"  {f}" for f in files],
              launch_lines(job, frameworks), requirement_lines(job, frameworks), note_lines(job, frameworks)]
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"
