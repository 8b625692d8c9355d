"""torchtitan files for a plan: a configuration module (planner_job.py) and launch.sh.

Targets torchtitan 0.3.0, the current PyPI release (config, trainer, llama3, qwen3, deepseek_v3, gpt_oss files as at
pytorch/torchtitan release/0.3 @ 4f9e9a47). Since 9810191b (2026-02-23) torchtitan has no TOML: a run
is a Python function returning `Trainer.Config`, selected with `--module` and `--config`, best
derived from a shipped recipe (torchtitan/config/README.md). planner_job.py derives from the flavour's
recipe in models/<family>/config_registry.py and sets what the plan says. Field names from
config/configs.py (TrainingConfig, ParallelismConfig, CompileConfig), trainer.py (Trainer.Config),
distributed/activation_checkpoint.py, components/loss.py, components/quantization (float8.py, mx.py) and
distributed/pipeline_parallel.py; the torchrun line from run_train.sh and multinode_trainer.slurm.
What torchtitan runs and refuses is planner/frameworks/torchtitan.py's.
"""
from __future__ import annotations

import json
import shlex
import textwrap

from costmodel.pipeline import chunk_layers
from planner.emit.job import Job, refuse_unless_runs
from planner.errors import PlannerError
from planner.frameworks import torchtitan as titan

MXFP8_PAD = 128  # MXFP8GroupedExpertsConverter's pad_multiple on SM100 (`converters`)
MODULE = "planner_job"  # the module's file name and its function's: --module planner_job --config planner_job
Kwargs = list[tuple[str, object]]


class Code(str):
    """A Python expression, written as is."""


def lit(value: object) -> str:
    """A Python literal: strings in double quotes (json.dumps of the ASCII names written here),
    lists item by item, Code as is, numbers and booleans as repr() writes them."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    return repr(value)


def call(name: str, kwargs: Kwargs, indent: str = "    ") -> str:
    """`name(k=v, ...)`, one keyword per line when there are several."""
    if len(kwargs) < 2:
        return f"{name}(" + ", ".join(f"{k}={lit(v)}" for k, v in kwargs) + ")"
    inner = "".join(f"{indent}    {k}={lit(v)},\n" for k, v in kwargs)
    return f"{name}(\n{inner}{indent})"


def checked_flavour(job: Job) -> titan.Flavour:
    """The model's flavour (llama3, qwen3 dense or MoE, deepseek_v3, gpt_oss), after torchtitan's rules
    (frameworks/torchtitan.py) and those on what the model spec states beyond cm.Model: the gated activation's
    offset, a gate on the shared experts."""
    refuse_unless_runs(job, "torchtitan")
    broken = titan.launch_violations(job.cm_model, job.plan)
    flavour, _ = titan.match_flavour(job.cm_model)
    if flavour is not None and job.model.glu_linear_offset != flavour.glu[0]:
        broken.append(f"torchtitan's {flavour.family} {flavour.name} flavour adds {flavour.glu[0]:g} to the gated "
                      f"activation's linear half; the model states glu_linear_offset {job.model.glu_linear_offset:g}")
    if job.model.moe is not None and job.model.moe.shared_expert_gate:
        broken.append("torchtitan's MoE has no gate on the shared experts' output (models/common/moe.py); the model "
                      "states shared_expert_gate")
    if broken:
        raise PlannerError("torchtitan would reject this plan: " + "; ".join(broken))
    return flavour


def stage_modules(job: Job) -> list[list[str]]:
    """The plan's layer split as module FQNs per pipeline stage, in stage order (stage s runs on
    rank s % pp: pipeline_parallel.py _get_pp_rank_to_stage_indices_mapping, "loop" style), the
    embedding on the first and the final norm and output on the last (_generate_llm_fqn_per_model_part)."""
    out, first = [], 0
    for n in chunk_layers(job.cm_model, job.plan):
        out.append([f"layers.{i}" for i in range(first, first + n)])
        first += n
    out[0].insert(0, "tok_embeddings")
    out[-1] += ["norm", "lm_head"]
    return out


def parallelism(job: Job) -> Kwargs:
    """FSDP2 over data_parallel_shard (ZeRO 3, or the ZeRO 1 it is under pipeline parallelism:
    frameworks/torchtitan.py `fsdp`), ZeRO 0 = data_parallel_replicate. Without pipeline parallelism
    torchtitan's FSDP default frees the weights after forward; a plan with zero3_reshard off says
    "never"."""
    p = job.plan
    out: Kwargs = [("data_parallel_replicate_degree", p.dp if p.zero_stage == 0 else 1),
                   ("data_parallel_shard_degree", p.dp if titan.fsdp(p) else 1),
                   ("tensor_parallel_degree", p.tp), ("enable_sequence_parallel", p.sequence_parallel),
                   ("pipeline_parallel_degree", p.pp)]
    if p.cp > 1:
        out.append(("context_parallel_degree", p.cp))
    if p.ep > 1:
        out.append(("expert_parallel_degree", p.ep))
    if p.pp > 1:
        out += [("pipeline_parallel_schedule", "Interleaved1F1B" if p.vpp > 1 else "1F1B"),
                ("pipeline_parallel_microbatch_size", p.micro_batch_size),
                ("module_fqns_per_model_part", Code(fqn_lists(stage_modules(job))))]
    if p.zero_stage == 3 and p.zero3_reshard == (p.pp > 1):  # the plan differs from torchtitan's default
        out.append(("fsdp_reshard_after_forward", "always" if p.zero3_reshard else "never"))
    return out


def fqn_lists(stages: list[list[str]]) -> str:
    rows = "".join(f"            {lit(s)},\n" for s in stages)
    return f"[\n{rows}        ]"


def training(job: Job) -> Kwargs:
    """trainer.py: gradient accumulation = global / (local_batch_size x dp), and with pipeline
    parallelism local_batch_size is split into pipeline_parallel_microbatch_size micro-batches. So
    a pipeline runs all of the plan's micro-batches in one schedule (local = gbs / dp), and without
    it each micro-batch is one accumulation step (local = mbs)."""
    p = job.plan
    local = p.micro_batch_size * p.num_microbatches if p.pp > 1 else p.micro_batch_size
    steps = training_steps(job)
    half = "float32" if p.precision == "fp32" else "bfloat16"
    out: Kwargs = [("local_batch_size", local), ("global_batch_size", p.global_batch_size),
                   ("seq_len", job.model.seq_length), ("steps", steps), ("dtype", "float32"),
                   ("mixed_precision_param", half),
                   ("mixed_precision_reduce", "bfloat16" if p.grad_comm_dtype == "bf16" else "float32")]
    return out + [("disable_cuda_graphs", True)]  # always: see graph_comment


def graph_comment(p) -> str:
    """Why disable_cuda_graphs is written: torchtitan 0.3 runs the forward and backward as one CUDA graph by
    default (trainer.py wrap_with_cuda_graph), which its rules refuse with pipeline parallelism or the standard
    all-to-all dispatcher (frameworks/torchtitan.py cuda_graphs_off); elsewhere the plan was scored without a
    whole-iteration graph (frameworks/base.py Knobs.full_iteration_graph), so the job runs without one too."""
    if titan.cuda_graphs_off(p):
        why = "pipeline parallelism" if p.pp > 1 else "the all-to-all token dispatcher's CPU synchronization"
        return f"CUDA graphs do not support {why} (trainer.py): disable_cuda_graphs."
    return ("disable_cuda_graphs: torchtitan graphs the forward and backward by default (trainer.py); the plan "
            "was scored without that graph (its step time and memory), so it runs without it too.")


def compile_components(job: Job) -> list[str]:
    """CompileConfig.components: the model when elementwise work is fused, the loss too when it runs
    compiled in chunks (torchtitan.chunked_loss)."""
    if not job.plan.fused_elementwise:
        return []
    return ["model", "loss"] if titan.chunked_loss(job.plan) else ["model"]


def converters(job: Job) -> list[str]:
    """The model converters (components/quantization) the plan's precision takes, as constructor calls: FP8,
    torchao float8 linears (rowwise) on the transformer layers' projections, the output layer kept in 16 bits
    as torchtitan's own llama3_405b recipe does (filter_fqns "lm_head") and an MoE router's gate with it
    ("router.gate", which Megatron-core and torchtitan run in 16 or 32 bits and the cost model prices as a GEMM
    of the plan's precision without its casts); MXFP8, torchao MXFP8 linears on the attention, dense MLP and
    shared-expert projections (mx.py converts the Linear configs whose FQN
    contains one of `fqns`: "attention", "shared_experts" where the model has them and "feed_forward" leave
    lm_head and the router out, as torchtitan's deepseek_v3_debugmodel_mxfp8 recipe writes them); and for an MoE
    model the routed experts' grouped GEMMs in the same format (Float8GroupedExpertsConverter,
    MXFP8GroupedExpertsConverter, which swap in a dispatcher that pads each expert's rows: 16 for FP8, and 128
    for MXFP8, which torchao's CuTeDSL quantization kernel needs on SM100, as torchtitan's own MXFP8 MoE recipes
    set it: models/deepseek_v3/config_registry.py @4f9e9a47; mx.py's default 32 fails there)."""
    p, compiled = job.plan, ("model_compile_enabled", "model" in compile_components(job))
    moe = job.cm_model.moe is not None
    if p.precision == "fp8":
        out = [call("Float8LinearConverter.Config",
                    [("filter_fqns", ["lm_head"] + (["router.gate"] if moe else [])), compiled], "            ")]
        return out + ([call("Float8GroupedExpertsConverter.Config", [compiled], "            ")] if moe else [])
    if p.precision == "mxfp8":
        fqns = ["attention"] + (["shared_experts"] if moe and job.cm_model.moe.shared_ffn_hidden_size else [])
        out = [call("MXFP8LinearConverter.Config", [("fqns", fqns + ["feed_forward"]), compiled], "            ")]
        grouped = call("MXFP8GroupedExpertsConverter.Config", [compiled, ("pad_multiple", MXFP8_PAD)], "            ")
        return out + ([grouped] if moe else [])
    return []


def converter_names(job: Job) -> list[str]:
    """The converter classes `converters` calls, for the import line."""
    return [c.split(".Config(")[0] for c in converters(job)]


def model_spec_line(job: Job, flavour: titan.Flavour) -> str:
    """model_registry(flavour), with the precision's converters (`converters`)."""
    conv = converters(job)
    if not conv:
        return f"model_spec = model_registry({lit(flavour.name)})"
    listed = "".join(f"            {c},\n" for c in conv)
    return (f"model_spec = model_registry(\n        {lit(flavour.name)},\n"
            f"        converters=[\n{listed}        ],\n    )")


def loss_line(job: Job) -> str:
    """ChunkedLossWrapper (the recipes' loss: logits a chunk at a time) for fused cross-entropy,
    plain CrossEntropyLoss (llama3_debugmodel_ce_loss) for an eager one."""
    return "ChunkedLossWrapper.Config(loss_fn=loss)" if titan.chunked_loss(job.plan) else "loss"


def ac_line(job: Job) -> str:
    return {"none": "None", "op": "SelectiveAC.Config()", "full": "FullAC.Config()"}[job.plan.recompute]


def imports(job: Job, flavour: titan.Flavour) -> str:
    losses = "ChunkedLossWrapper, CrossEntropyLoss" if titan.chunked_loss(job.plan) else "CrossEntropyLoss"
    ac = {"none": "", "op": "SelectiveAC", "full": "FullAC"}[job.plan.recompute]
    quantization = converter_names(job)
    lines = [f"from torchtitan.components.loss import {losses}",
             f"from torchtitan.components.quantization import {', '.join(quantization)}" if quantization else "",
             "from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig",
             f"from torchtitan.distributed.activation_checkpoint import {ac}" if ac else "",
             "from torchtitan.models.common.config_utils import decoder_vocab_size",
             f"from torchtitan.models.{flavour.family} import model_registry",
             f"from torchtitan.models.{flavour.family}.config_registry import {flavour.recipe}",
             "from torchtitan.trainer import Trainer"]
    return "\n".join(line for line in lines if line)


def router_text(kind: str, groups: int, group_topk: int, scale: float) -> str:
    grouped = f", {group_topk} of {groups} expert groups" if groups else ""
    return f"{kind}{grouped}, weights x{scale:g}"


def router_comment(job: Job, flavour: titan.Flavour) -> str:
    """What the flavour's router trains (models/<family>/__init__.py make_router_config, and every torchtitan MoE
    balanced by an expert bias, load_balance_coeff 1e-3, with no auxiliary loss: models/common/config_utils.py
    make_moe_config), against the router the model spec states, which the cost model does not price (one h x
    experts GEMM and a top-k whatever the scoring): the launch builds the flavour's."""
    m = job.model.moe
    states = (m.router, m.router_groups, m.router_group_topk, m.router_scaling_factor)
    theirs = router_text(*flavour.router) + ", balanced by an expert bias (load_balance_coeff 1e-3) with no " \
                                            "auxiliary loss"
    if states == flavour.router and not m.aux_loss_coeff and (m.router_expert_bias or m.router != "sigmoid"):
        return f"The router is torchtitan's {flavour.name} flavour's: {theirs}."
    ours = router_text(*states) + (", an expert bias" if m.router_expert_bias else "") + (
        f", an auxiliary loss of {m.aux_loss_coeff:g}" if m.aux_loss_coeff else "")
    return (f"The router is torchtitan's {flavour.name} flavour's: {theirs}; the model states {ours}. The cost "
            "model prices every router alike; edit the flavour's router config in torchtitan to train the model's.")


def training_steps(job: Job) -> int:
    return (job.estimate.get("training") or {}).get("steps") or 1000


def comments(job: Job, flavour: titan.Flavour) -> str:
    """Why the lines below say what they say, where torchtitan would otherwise do something else."""
    p, out = job.plan, []
    if p.pp > 1 and titan.fsdp(p):
        out.append("FSDP2 under pipeline parallelism: weights stay gathered and gradients unsharded until the "
                   "step's last backward (torch.distributed.pipelining), as planned (ZeRO-1).")
    out.append(graph_comment(p))
    if p.pp > 1:
        out.append("module_fqns_per_model_part: the plan's layer split, one list per stage, stage s on rank s % pp.")
    if p.ep > 1:
        out.append(f"expert_parallel_degree {p.ep}: the routed experts are split over {p.ep} ranks taken from FSDP's "
                   f"shard axis and TP (parallel_dims.py: efsdp = dp_shard x cp x tp / ep = {p.expert_dp}), each "
                   "expert whole (etp 1).")
    if flavour.router[0]:
        out.append(router_comment(job, flavour))
    steps, warmup = training_steps(job), titan.RECIPE_WARMUP_STEPS[flavour.recipe]
    if steps <= warmup:
        out.append(f"The {flavour.recipe} recipe warms the learning rate up over {warmup} steps, and these {steps} "
                   "steps are all warm-up "
                   "(torchtitan shortens it and warns): set config.lr_scheduler.warmup_steps for a run this short.")
    if p.grad_comm_dtype == "bf16":
        out.append("mixed_precision_reduce bfloat16: the plan's gradient dtype; configs.py annotates float32 only, "
                   "so the loader warns, and FSDP2 reduces in bfloat16.")
    return "".join(f"# {line}\n" for text in out for line in textwrap.wrap(text, 98))


def config_py(job: Job) -> str:
    """planner_job.py: the torchtitan configuration module."""
    flavour = checked_flavour(job)
    comps = compile_components(job)
    async_tp = [("enable_async_tensor_parallel", True)] if job.plan.tp_comm_overlap else []
    compile_call = call("CompileConfig", [("enable", bool(comps))] + ([("components", comps)] if comps else [])
                        + async_tp)
    return f'''"""torchtitan 0.3.0 configuration written by `planner emit` (see ../README.txt).

Run: torchrun ... -m torchtitan.train --module {MODULE} --config {MODULE} (launch.sh), with this
folder on PYTHONPATH. It starts from torchtitan's own {flavour.recipe} recipe (tokenizer, data,
optimizer, learning-rate schedule, checkpoints) and sets what the plan decides.
"""
{imports(job, flavour)}

# {job.title}
{comments(job, flavour)}

def {MODULE}() -> Trainer.Config:
    {model_spec_line(job, flavour)}
    config = {flavour.recipe}()
    config.model_spec = model_spec
    loss = CrossEntropyLoss.Config(global_vocab_size=decoder_vocab_size(model_spec))
    config.loss = {loss_line(job)}
    config.training = {call("TrainingConfig", training(job))}
    config.parallelism = {call("ParallelismConfig", parallelism(job))}
    config.activation_checkpoint = {ac_line(job)}
    config.compile = {compile_call}
    return config
'''


def launch_sh(job: Job) -> str:
    q = shlex.quote
    return f"""#!/usr/bin/env bash
# torchtitan launch for {job.title}.
# Written by `planner emit`; see ../README.txt. Run it on every node with NODE_RANK=0..{job.nnodes - 1},
# from a torchtitan checkout of release/0.3 (the recipe's tokenizer path, ./assets/hf/..., is relative to it,
# and the checkout's package is the one that runs: main's config fields differ from 0.3.0's).
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
# {MODULE}.py is the configuration: --module/--config select it (torchtitan/config/README.md).
export PYTHONPATH="$HERE${{PYTHONPATH:+:$PYTHONPATH}}"
export PYTORCH_ALLOC_CONF="${{PYTORCH_ALLOC_CONF:-expandable_segments:True}}"  # as run_train.sh
DISTRIBUTED_ARGS=(
  --nproc_per_node {q(str(job.gpus_per_node))} --nnodes {q(str(job.nnodes))} --node_rank "${{NODE_RANK:-0}}"
  --master_addr "${{MASTER_ADDR:-127.0.0.1}}" --master_port "${{MASTER_PORT:-29500}}"
  --local-ranks-filter "${{LOG_RANK:-0}}" --role rank --tee 3
)
# Extra arguments go to torchtitan.train (e.g. --training.steps 100 --hf_assets_path DIR).
torchrun "${{DISTRIBUTED_ARGS[@]}}" -m torchtitan.train --module {q(MODULE)} --config {q(MODULE)} "$@"
"""


def files(job: Job) -> dict[str, tuple[str, bool]]:
    """{relative path: (text, executable)} for the torchtitan/ folder."""
    return {f"{MODULE}.py": (config_py(job), False), "launch.sh": (launch_sh(job), True)}
