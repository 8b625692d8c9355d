"""Structural legality of a plan, independent of any framework.

Each rule returns a sentence naming the rule and the numbers that break it. Framework-specific
rules (DeepSpeed pipeline engine only with ZeRO <= 1, Megatron interleaving needing
m % pp == 0, ...) live in the planner's framework filter, not here.
"""
from __future__ import annotations

from . import topology
from .pipeline import chunk_layers, stage_layer_counts
from .lowp import FP8_RECIPES, LOW_PRECISIONS, WEIGHT_CASTS, is_low
from .types import (ATTENTION_KERNELS, CP_COMMS, CROSS_ENTROPY, DISPATCH_DTYPES, GRAD_DTYPES, GRAD_REDUCES,
                    GRAD_SYNCS, PIPELINE_BUFFERS, PRECISIONS, PROJECTIONS, RANK_ORDERS, ZERO3_GATHER_UNITS,
                    MOE_OFFLOAD_MODULES, MOE_RECOMPUTE_MODULES,
                    OFFLOAD_MODULES, RECOMPUTE_MODES, RECOMPUTE_MODULES, Cluster, Model, Plan)

LOW_LIST = ", ".join(LOW_PRECISIONS)


def _degree_rules(model: Model, plan: Plan) -> list[str]:
    out = []
    for name in ("tp", "cp", "pp", "dp", "ep", "etp", "vpp", "micro_batch_size", "global_batch_size"):
        if getattr(plan, name) < 1:
            out.append(f"{name} must be >= 1 (got {getattr(plan, name)})")
    if out:
        return out
    if model.num_attention_heads % plan.tp:
        out.append(f"attention heads ({model.num_attention_heads}) must be divisible by tp ({plan.tp})")
    if model.kv_heads % plan.tp:
        out.append(f"kv heads ({model.kv_heads}) must be divisible by tp ({plan.tp})")
    if model.ffn % plan.tp:
        out.append(f"ffn hidden size ({model.ffn}) must be divisible by tp ({plan.tp})")
    if plan.global_batch_size % (plan.micro_batch_size * plan.dp):
        out.append(f"global batch ({plan.global_batch_size}) must be divisible by micro batch x dp "
                   f"({plan.micro_batch_size}x{plan.dp})")
    return out + _context_rules(model, plan) + _expert_rules(model, plan)


def _context_rules(model: Model, plan: Plan) -> list[str]:
    """Context parallelism splits each sequence into 2 x cp equal chunks (causal load balancing) and
    runs blockwise FlashAttention on them; Ulysses (a2a) splits the TP-local KV heads over cp."""
    if plan.cp == 1:
        return []
    out = []
    if model.seq_length % (2 * plan.cp):
        out.append(f"sequence length ({model.seq_length}) must split into 2 x cp = {2 * plan.cp} equal chunks")
    if not plan.flash_attention:
        out.append("context parallelism runs blockwise (flash) attention: it needs flash attention")
    if plan.cp_comm not in CP_COMMS:
        out.append(f"cp_comm must be one of {', '.join(CP_COMMS)} (got {plan.cp_comm})")
    else:
        out += _ulysses_heads(model, plan)
    return out


def _ulysses_heads(model: Model, plan: Plan) -> list[str]:
    if plan.cp_comm == "a2a" and (model.kv_heads // plan.tp) % plan.cp:
        return [f"Ulysses (cp_comm a2a) splits the KV heads over cp: {model.kv_heads // plan.tp} KV heads per TP "
                f"rank must be divisible by cp ({plan.cp})"]
    return []


def _hierarchical_heads(model: Model, cluster: Cluster, plan: Plan) -> list[str]:
    inner = topology.cp_ranks_per_domain(plan, cluster) if plan.cp > 1 else 1
    if plan.cp_comm == "a2a+p2p" and (model.kv_heads // plan.tp) % inner:
        return [f"a2a+p2p runs Ulysses over the {inner} CP ranks of an NVLink domain: {model.kv_heads // plan.tp} "
                f"KV heads per TP rank must be divisible by {inner}"]
    return []


def cp_exchange_violations(model: Model, cluster: Cluster, plan: Plan) -> list[str]:
    """The rules of the plan's CP exchange that read tp and cp themselves (the search checks them per
    split): Ulysses' and the hierarchical exchange's KV-head splits."""
    return _ulysses_heads(model, plan) + _hierarchical_heads(model, cluster, plan) if plan.cp > 1 else []


def _dispatch_dtype_rules(plan: Plan) -> list[str]:
    """A token dispatch in a low precision (Plan.ep_dispatch_dtype) needs expert ranks to send to."""
    if plan.ep_dispatch_dtype not in DISPATCH_DTYPES:
        return [f"ep_dispatch_dtype must be {' or '.join(DISPATCH_DTYPES)} (got {plan.ep_dispatch_dtype})"]
    if plan.ep_dispatch_dtype != "bf16" and plan.ep * plan.etp <= 1:
        return [f"an {plan.ep_dispatch_dtype.upper()} token dispatch needs more than one expert rank to send to"]
    return []


def _expert_rules(model: Model, plan: Plan) -> list[str]:
    """Expert parallelism: only for MoE models; ep divides the experts, and the experts fold over
    the stage's tp x cp x dp ranks as etp x ep x expert-DP."""
    if model.moe is None:
        knobs = (("ep and etp", plan.ep != 1 or plan.etp != 1), ("ep_overlap", plan.ep_overlap),
                 ("ep_dispatch deepep", plan.ep_dispatch != "alltoall"), ("moe_cuda_graphs", plan.moe_cuda_graphs),
                 ("FP8 token dispatch", plan.ep_dispatch_dtype != "bf16"),
                 *((f"recompute module {m}", m in plan.recompute_modules) for m in MOE_RECOMPUTE_MODULES))
        moe_only = [name for name, on in knobs if on]
        if not moe_only:
            return []
        verb = "apply" if len(moe_only) > 1 or moe_only == ["ep and etp"] else "applies"
        return [f"{', '.join(moe_only)} {verb} only to mixture-of-experts models (this one is dense)"]
    out = []
    if model.moe.num_experts % plan.ep:
        out.append(f"experts ({model.moe.num_experts}) must be divisible by ep ({plan.ep})")
    if (plan.tp * plan.cp * plan.dp) % (plan.ep * plan.etp):
        out.append(f"ep x etp ({plan.ep}x{plan.etp}) must divide the tp x cp x dp ranks they fold over "
                   f"({plan.tp}x{plan.cp}x{plan.dp})")
    if model.moe.ffn_hidden_size % plan.etp:
        out.append(f"expert ffn size ({model.moe.ffn_hidden_size}) must be divisible by etp ({plan.etp})")
    if "shared_experts" in plan.recompute_modules and not model.moe.shared_ffn_hidden_size:
        out.append("recompute module shared_experts replays the shared experts: this model has none")
    return out


def _pipeline_rules(model: Model, plan: Plan) -> list[str]:
    out = []
    chunks = plan.pp * plan.vpp
    if plan.grad_sync not in GRAD_SYNCS:
        out.append(f"grad_sync must be one of {', '.join(GRAD_SYNCS)} (got {plan.grad_sync})")
    elif plan.grad_sync == "chunk_end" and plan.zero_stage != 1:
        out.append("grad_sync chunk_end (FSDP2 under a pipeline: unsharded gradients over a sharded optimizer) "
                   f"is ZeRO-1 (got ZeRO {plan.zero_stage})")
    elif plan.grad_sync == "microbatch" and plan.zero_stage != 0:
        out.append("grad_sync microbatch (an all-reduce after every micro-batch) is ZeRO 0; ZeRO 2/3 reduce every "
                   f"micro-batch already (got ZeRO {plan.zero_stage})")
    if plan.grad_bucket_elements and plan.zero_stage == 0:
        out.append("grad_bucket_elements (ZeRO's reduce buckets, DeepSpeed's) needs ZeRO 1-3; ZeRO 0 reduces gradients "
                   "where they are")
    if plan.pipeline_buffers not in PIPELINE_BUFFERS:
        out.append(f"pipeline_buffers must be one of {', '.join(PIPELINE_BUFFERS)} (got {plan.pipeline_buffers})")
    if plan.vpp > 1 and plan.pp == 1:
        out.append("virtual pipeline stages (vpp > 1) need pp > 1")
    if plan.stage_layers:
        if len(plan.stage_layers) != chunks:
            out.append(f"stage_layers has {len(plan.stage_layers)} entries, expected pp*vpp = {chunks}")
        elif sum(plan.stage_layers) != model.num_layers or min(plan.stage_layers) < 0:
            out.append(f"stage_layers must be >= 0 each and sum to num_layers ({model.num_layers})")
        elif min(sum(plan.stage_layers[j * plan.pp + r] for j in range(plan.vpp)) for r in range(plan.pp)) < 1:
            out.append("stage_layers must give every pipeline rank at least one layer")
    elif model.num_layers < chunks:
        out.append(f"num_layers ({model.num_layers}) must be >= pp*vpp ({chunks}): every model chunk needs a layer")
    return out or _offload_rules(model, plan) + _partial_recompute_rules(model, plan)


def _partial_recompute_rules(model: Model, plan: Plan) -> list[str]:
    """Recompute of the first N layers of each model chunk (Plan.recompute_layers) is full recompute's (Megatron-core
    transformer_config.py: recompute_num_layers is for granularity full, None for selective), and an N that
    reaches every chunk's layers is every layer, which 0 says."""
    if plan.recompute_layers <= 0:
        return []
    if plan.recompute != "full":
        return [f"recompute_layers ({plan.recompute_layers}) chooses how many layers of each model chunk full "
                f"recompute replays: it needs recompute full (got {plan.recompute})"]
    if plan.offload_layers:
        return ["offload_layers with recompute_layers: whole-layer offload is priced on stages whose layers all "
                "recompute alike (Megatron-LM offloads layers without recompute)"]
    largest = max(chunk_layers(model, plan))
    if plan.recompute_layers >= largest:
        return [f"recompute_layers ({plan.recompute_layers}) covers every layer of every model chunk (at most "
                f"{largest} here): give 0 for every layer"]
    return []


def _offload_rules(model: Model, plan: Plan) -> list[str]:
    """Whole layers offloaded (Plan.offload_layers) are a stage's: a layer of each stays on the GPU, as
    Megatron-core asks of the whole model (transformer_config.py @ d98e8a64: cpu_offloading_num_layers below
    num_layers)."""
    if plan.offload_layers <= 0:
        return []
    fewest = min(stage_layer_counts(chunk_layers(model, plan), plan.pp, plan.vpp))
    if plan.offload_layers < fewest:
        return []
    return [f"offload_layers ({plan.offload_layers}) must leave a layer of each pipeline stage on the GPU: below "
            f"{fewest}, the fewest layers a stage holds"]


# Plan fields that take one of a few names: (field, how a refusal names it, the names).
ENUMERATED = (("recompute", "recompute", RECOMPUTE_MODES), ("precision", "precision", PRECISIONS),
              ("weight_casts", "weight_casts", WEIGHT_CASTS), ("fp8_recipe", "fp8 recipe", FP8_RECIPES),
              ("attention_kernel", "attention kernel", ATTENTION_KERNELS),
              ("cross_entropy", "cross entropy", CROSS_ENTROPY),
              ("zero3_gather_unit", "zero3_gather_unit", ZERO3_GATHER_UNITS),
              ("grad_reduce", "grad_reduce", GRAD_REDUCES))


def _choice_rules(model: Model, plan: Plan) -> list[str]:
    out = []
    if plan.zero_stage not in (0, 1, 2, 3):
        out.append(f"zero stage must be 0-3 (got {plan.zero_stage})")
    for name, label, names in ENUMERATED:
        if getattr(plan, name) not in names:
            out.append(f"{label} must be one of {', '.join(names)} (got {getattr(plan, name)})")
    if plan.projections not in PROJECTIONS:
        out.append(f"projections must be one of {', '.join(PROJECTIONS)} (got {plan.projections})")
    elif plan.projections == "separate" and plan.recompute == "op" and model.moe:
        out.append("per-op recompute of an MoE layer is modelled with one QKV GEMM (torchtitan's MoE models, "
                   "fused_qkv): projections separate is not modelled there; use fused_qkv")
    if plan.rank_order not in RANK_ORDERS:
        out.append(f"rank_order must be one of {', '.join(RANK_ORDERS)} (got {plan.rank_order})")
    elif plan.rank_order != RANK_ORDERS[0] and model.moe:
        out.append(f"rank_order {plan.rank_order} for a mixture-of-experts model is not modelled (the experts' groups "
                   f"are laid out over {RANK_ORDERS[0]}); use {RANK_ORDERS[0]}")
    if plan.bf16_layers_start < 0 or plan.bf16_layers_end < 0:
        out.append("bf16_layers_start/end must be >= 0")
    elif plan.bf16_layers_start + plan.bf16_layers_end > model.num_layers:
        out.append(f"bf16_layers_start + bf16_layers_end exceed num_layers ({model.num_layers})")
    elif (plan.bf16_layers_start or plan.bf16_layers_end) and not is_low(plan.precision):
        out.append(f"bf16_layers keep layers 16-bit under a low precision ({LOW_LIST}): under "
                   f"{plan.precision} every layer already is")
    if plan.grad_dtype and plan.grad_dtype not in GRAD_DTYPES:
        out.append(f"gradient dtype must be one of {', '.join(GRAD_DTYPES)} (got {plan.grad_dtype})")
    if plan.tp_comm_overlap and not plan.sequence_parallel:
        out.append("TP communication overlap splits the sequence-parallel all-gathers and reduce-scatters: it "
                   "needs sequence parallel")
    if plan.lowp_param_gather and not is_low(plan.precision):
        out.append(f"low-precision parameters need a low precision ({LOW_LIST})")
    if any(m not in RECOMPUTE_MODULES for m in plan.recompute_modules) or not plan.recompute_modules:
        out.append(f"recompute modules must be among {', '.join(RECOMPUTE_MODULES)}")
    elif "mla_up_proj" in plan.recompute_modules and model.mla is None:
        out.append("recompute module mla_up_proj replays multi-head latent attention's up-projections: this model "
                   "has none")
    elif plan.recompute_modules != ("core_attn",) and plan.recompute != "selective":
        out.append("recompute modules choose what selective recompute replays: they need recompute selective")
    if plan.ep_dispatch not in ("alltoall", "deepep"):
        out.append(f"ep_dispatch must be alltoall or deepep (got {plan.ep_dispatch})")
    out += _dispatch_dtype_rules(plan)
    if plan.fp8_attention and (not is_low(plan.precision) or not plan.flash_attention):
        out.append(f"FP8 attention needs a low precision ({LOW_LIST}) and fused (flash) attention")
    if plan.optimizer_states not in ("fp32", "bf16"):
        out.append(f"optimizer_states must be fp32 or bf16 (got {plan.optimizer_states})")
    if plan.offload_layers < 0:
        out.append("offload_layers must be >= 0")
    if plan.recompute_layers < 0:
        out.append("recompute_layers must be >= 0 (0: every layer)")
    out += _offload_module_rules(model, plan)
    if plan.layer_cuda_graphs and model.moe is not None:
        out.append("per-layer CUDA graphs are priced for dense models only (an MoE layer's capture and host syncs "
                   "are not modelled; moe_cuda_graphs prices the router and dispatch graphs)")
    if plan.layer_cuda_graphs and plan.full_iteration_graph:
        out.append("layer_cuda_graphs and full_iteration_graph are two captures of the same layers: give one")
    if plan.sequence_parallel and plan.tp == 1:
        out.append("sequence parallel needs tp > 1 (with tp = 1 it does nothing)")
    return out


def _offload_module_rules(model: Model, plan: Plan) -> list[str]:
    """Fine-grained offload moves inputs that no recompute or selective recompute keeps (stage.
    layer_offloaded_bytes); under full or per-op recompute a layer keeps other tensors, not modelled."""
    if not plan.offload_modules:
        return []
    if any(m not in OFFLOAD_MODULES for m in plan.offload_modules):
        return [f"offload modules must be among {', '.join(OFFLOAD_MODULES)}"]
    if plan.recompute in ("full", "op"):
        return [f"offloading module inputs is modelled with recompute none or selective (got {plan.recompute})"]
    moe_only = [m for m in plan.offload_modules if m in MOE_OFFLOAD_MODULES]
    if moe_only and model.moe is None:
        return [f"offload module {moe_only[0]} is an MoE layer's: this model is dense"]
    return []


def cluster_violations(cluster: Cluster, plan: Plan, model: Model | None = None) -> list[str]:
    """The rules that depend on the cluster (its GPU, NVLink domain, host link). A low-precision
    format needs tensor cores for it: the GPU's spec lists a dense peak for it
    (has_tensor_cores_for); FlashAttention-3 a Hopper GPU. Hierarchical CP (a2a+p2p) runs Ulysses over the CP ranks of
    one NVLink domain (costmodel/context.py), which split the KV heads of a TP rank as plain a2a does."""
    have = has_tensor_cores_for(cluster.gpu, plan.precision)
    out = []
    if is_low(plan.precision) and not have:
        out.append(f"{plan.precision} needs {plan.precision.upper()} tensor cores, which {cluster.gpu.name} does not have")
    if plan.flash_attention and plan.attention_kernel == "flash3" and cluster.gpu.generation != "hopper":
        out.append(f"FlashAttention-3's kernels are Hopper's (SM90: warpgroup MMA and TMA), and {cluster.gpu.name} "
                   f"is {cluster.gpu.generation}: another attention kernel runs there")
    if model is not None:
        out += _hierarchical_heads(model, cluster, plan)
    if (plan.offload_layers > 0 or plan.offload_modules) and cluster.host_link_bytes_per_second <= 0:
        out.append(f"activation offload needs the host link's bandwidth, which cluster '{cluster.name}' does not give "
                   "(host_link_gbytes_per_s)")
    if plan.offload_optimizer_states and cluster.host_link_bytes_per_second <= 0:
        out.append(f"optimizer-state offload needs the host link's bandwidth, which cluster '{cluster.name}' does not "
                   "give (host_link_gbytes_per_s)")
    return out


def has_tensor_cores_for(gpu, precision: str) -> bool:
    """Whether `gpu`'s spec lists a dense peak for `precision`. The plain fp4 rate counts for mxfp4 on any part
    (the OCP microscaling FP4 that AMD's CDNA4 peaks are quoted in, and that Blackwell's tensor cores run at their
    FP4 rate: PTX ISA 8.7 tcgen05.mma .kind::mxf4 and .kind::mxf4nvf4) and for nvfp4 (E4M3 scales per 16
    elements, NVIDIA's own format) on Blackwell only."""
    table = gpu.dense_flops_per_second
    if precision in table:
        return True
    return "fp4" in table and (precision == "mxfp4" or (precision == "nvfp4" and gpu.generation == "blackwell"))


def model_plan_violations(model: Model, plan: Plan) -> list[str]:
    """The rules that do not depend on the machine: degrees, divisibility, layer split, knob values."""
    return _degree_rules(model, plan) + _pipeline_rules(model, plan) + _choice_rules(model, plan)


def plan_violations(model: Model, cluster: Cluster, plan: Plan) -> list[str]:
    """All structural rules the plan breaks on `cluster`; empty when it is legal."""
    out = model_plan_violations(model, plan)
    if plan.num_gpus != cluster.num_gpus and not any(">= 1" in m for m in out):
        cp = f"*{plan.cp}" if plan.cp > 1 else ""
        out.insert(0, f"dp*tp{'*cp' if cp else ''}*pp = {plan.dp}*{plan.tp}{cp}*{plan.pp} = {plan.num_gpus} must equal "
                      f"the GPU count {cluster.num_gpus}")
    return out + cluster_violations(cluster, plan, model)
