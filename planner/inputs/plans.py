"""Turn user-given plan fields into a legal cost-model Plan, or one clear error line."""
from __future__ import annotations

from typing import get_args

from costmodel import types as cm
from costmodel import wellformed
from costmodel.compute import large_gemm_fraction
from costmodel.rules import plan_violations
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs import reading
from planner.inputs.specs import GpuSpec, ModelSpec, PlanSpec

GENERATIONS = get_args(GpuSpec.model_fields["generation"].annotation)  # what a GPU spec may name
SHIPPED = cm.Efficiency()  # the generations' measured GEMM rates, for check_inputs


def resolve_dp(spec: PlanSpec, num_gpus: int) -> int:
    if spec.dp is not None:
        return spec.dp
    split = spec.tp * spec.cp * spec.pp
    if num_gpus % split:
        what = f"tp*cp*pp = {spec.tp}*{spec.cp}*{spec.pp}" if spec.cp > 1 else f"tp*pp = {spec.tp}*{spec.pp}"
        raise PlannerError(f"{what} = {split} does not divide the GPU count {num_gpus}")
    return num_gpus // split


def resolve_global_batch(spec: PlanSpec, model: ModelSpec, dp: int) -> int:
    """--gbs, else micro batch x dp x --gas, else the model's published global batch."""
    per_step = spec.micro_batch_size * dp
    if spec.global_batch_size is not None:
        gbs = spec.global_batch_size
        if spec.grad_accum_steps is not None and gbs != per_step * spec.grad_accum_steps:
            raise PlannerError(f"global batch {gbs} != micro batch {spec.micro_batch_size} x dp {dp} x "
                               f"grad accumulation {spec.grad_accum_steps}")
        return gbs
    if spec.grad_accum_steps is not None:
        return per_step * spec.grad_accum_steps
    if model.global_batch_size:
        return model.global_batch_size
    return per_step


def projections_of(spec: PlanSpec) -> str:
    """The plan's projections (cm.Plan.projections): as given, else Megatron-core's fused ones, except under
    per-op recompute, which only torchtitan runs (frameworks/torchtitan.py), where torchtitan's own (fused_qkv):
    per-op recompute keeps every other matmul output, so the matmuls it is priced with must be a stack's."""
    if spec.projections is not None:
        return spec.projections
    return "fused_qkv" if spec.recompute == "op" else "fused"


def rope_fusion_of(spec: PlanSpec, model: ModelSpec | None) -> bool:
    """The plan's RoPE fusion (cm.Plan.rope_fusion): as given, else fused, except a YaRN RoPE without multi-latent
    attention (cm.Model.yarn_rope), which the one stack planner launches such models with, Megatron-LM, applies
    unfused (planner/frameworks/megatron.py runs_rope_fused)."""
    if spec.rope_fusion is not None:
        return spec.rope_fusion
    return model is None or not model.to_model().yarn_rope


def moe_act_prologue_of(spec: PlanSpec, model: ModelSpec | None) -> bool:
    """The plan's expert-activation prologue (cm.Plan.moe_act_prologue): as given, else as Megatron-LM, the one
    stack planner launches such models with, runs it: for routed experts of a biased quick-GEGLU
    (cm.Model.biased_quick_geglu_experts; planner/frameworks/megatron.py runs_act_prologue), except under a
    whole-iteration CUDA graph, which cannot capture it: a graphed run took another path (Transformer Engine's
    fused grouped MLP)."""
    if spec.moe_act_prologue is not None:
        return spec.moe_act_prologue
    return model is not None and not spec.full_iteration_graph and model.to_model().biased_quick_geglu_experts


def build_plan(spec: PlanSpec, model: ModelSpec, num_gpus: int) -> cm.Plan:
    """A cm.Plan from the spec; dp and the global batch are derived when not given."""
    dp = resolve_dp(spec, num_gpus)
    return cm.Plan(
        tp=spec.tp, pp=spec.pp, dp=dp, vpp=spec.vpp, micro_batch_size=spec.micro_batch_size,
        global_batch_size=resolve_global_batch(spec, model, dp), zero_stage=spec.zero_stage,
        recompute=spec.recompute, recompute_layers=spec.recompute_layers,
        sequence_parallel=spec.sequence_parallel, precision=spec.precision,
        grad_dtype=spec.grad_dtype or "", overlap_dp_comm=spec.overlap_dp_comm,
        overlap_pp_comm=spec.overlap_pp_comm,
        flash_attention=spec.flash_attention, fused_elementwise=spec.fused_elementwise,
        rope_fusion=rope_fusion_of(spec, model), moe_act_prologue=moe_act_prologue_of(spec, model),
        expert_sizes_on_device=spec.expert_sizes_on_device,
        cross_entropy=spec.cross_entropy, zero3_gather_unit=spec.zero3_gather_unit,
        grad_reduce=spec.grad_reduce,
        stage_layers=tuple(spec.stage_layers or ()),
        fp8_recipe=spec.fp8_recipe, bf16_layers_start=spec.bf16_layers_start, bf16_layers_end=spec.bf16_layers_end,
        weight_casts=spec.weight_casts, zero3_reshard=spec.zero3_reshard, tp_comm_overlap=spec.tp_comm_overlap,
        tp_async_grad=spec.tp_async_grad,
        offload_layers=spec.offload_layers, offload_modules=tuple(dict.fromkeys(spec.offload_modules)),
        offload_optimizer_states=spec.offload_optimizer_states,
        lowp_param_gather=spec.lowp_param_gather,
        cp=spec.cp, cp_comm=spec.cp_comm, pipeline_buffers=spec.pipeline_buffers, grad_sync=spec.grad_sync,
        grad_bucket_elements=spec.grad_bucket_elements,
        repeat_kv=spec.repeat_kv, sp_gathered=spec.sp_gathered, projections=projections_of(spec),
        rank_order=spec.rank_order, ep=spec.ep,
        etp=spec.etp,
        recompute_modules=tuple(dict.fromkeys(spec.recompute_modules)), ep_overlap=spec.ep_overlap,
        optimizer_states=spec.optimizer_states, fp8_attention=spec.fp8_attention, ep_dispatch=spec.ep_dispatch,
        ep_dispatch_dtype=spec.ep_dispatch_dtype,
        moe_cuda_graphs=spec.moe_cuda_graphs, full_iteration_graph=spec.full_iteration_graph,
        layer_cuda_graphs=spec.layer_cuda_graphs,
        attention_kernel=spec.attention_kernel,
    )


def check_inputs(model: cm.Model, cluster: cm.Cluster) -> None:
    """Raise PlannerError naming every field of a model or cluster built in Python (not read from a checked
    file) that is not a number the cost model can price (costmodel/wellformed.py), and a GPU count past the
    limits (the search factors it)."""
    broken = wellformed.model_field_violations(model) + wellformed.cluster_field_violations(cluster)
    if not broken and cluster.num_gpus > L.MAX_GPUS:
        broken.append(f"cluster.num_gpus must be at most {L.MAX_GPUS} (got {cluster.num_gpus})")
    generation = cluster.gpu.generation
    if not broken and generation not in GENERATIONS:
        broken.append(f"cluster.gpu.generation must be one of {', '.join(GENERATIONS)} (got {generation!r})")
    if broken:
        raise PlannerError("; ".join(broken))
    try:  # the cost model's own refusal: no GEMM rate measured on the GPU or its generation
        large_gemm_fraction(cluster.gpu, "bf16", SHIPPED)
    except ValueError as err:
        raise PlannerError(f"cluster.{err}") from None


def check_legal(model: cm.Model, cluster: cm.Cluster, plan: cm.Plan) -> None:
    """Raise PlannerError naming every rule the plan breaks (and first every input that is not a number)."""
    check_inputs(model, cluster)
    check_plan(model, cluster, plan)


def check_plan(model: cm.Model, cluster: cm.Cluster, plan: cm.Plan) -> None:
    """check_legal for a model and cluster check_inputs has passed: the plan's fields, then its rules."""
    broken = wellformed.field_violations(plan, "plan")
    if broken:
        raise PlannerError("; ".join(broken))
    broken = plan_violations(model, cluster, plan)
    if broken:
        raise PlannerError("illegal plan: " + "; ".join(broken))


def recompute_label(plan: dict) -> str:
    """A plan's recompute (plan_to_dict's keys) as the outputs write it: the mode, the modules selective
    replays when not the default, and under block recompute the layers of each chunk it takes."""
    modules = plan.get("recompute_modules") or ["core_attn"]
    if plan["recompute"] == "selective" and modules != ["core_attn"]:
        return f"selective ({'+'.join(modules)})"
    if plan["recompute"] == "full" and plan.get("recompute_layers"):
        return f"full ({plan['recompute_layers']} per chunk)"
    return plan["recompute"]


def plan_to_dict(plan: cm.Plan) -> dict:
    """The `plan` object of the JSON output (stable keys; PlanSpec reads it back)."""
    return {
        "tp": plan.tp, "pp": plan.pp, "dp": plan.dp, "cp": plan.cp, "cp_comm": plan.cp_comm, "ep": plan.ep,
        "etp": plan.etp, "vpp": plan.vpp,
        "zero_stage": plan.zero_stage, "micro_batch_size": plan.micro_batch_size,
        "global_batch_size": plan.global_batch_size, "grad_accum_steps": plan.grad_accum_steps,
        "recompute": plan.recompute, "recompute_layers": plan.recompute_layers,
        "recompute_modules": list(plan.recompute_modules),
        "ep_overlap": plan.ep_overlap, "ep_dispatch": plan.ep_dispatch, "ep_dispatch_dtype": plan.ep_dispatch_dtype,
        "moe_cuda_graphs": plan.moe_cuda_graphs,
        "full_iteration_graph": plan.full_iteration_graph, "layer_cuda_graphs": plan.layer_cuda_graphs,
        "optimizer_states": plan.optimizer_states, "fp8_attention": plan.fp8_attention,
        "sequence_parallel": plan.sequence_parallel,
        "precision": plan.precision, "grad_dtype": plan.grad_comm_dtype,
        "overlap_dp_comm": plan.overlap_dp_comm, "overlap_pp_comm": plan.overlap_pp_comm,
        "flash_attention": plan.flash_attention, "fused_elementwise": plan.fused_elementwise,
        "rope_fusion": plan.rope_fusion, "moe_act_prologue": plan.moe_act_prologue,
        "expert_sizes_on_device": plan.expert_sizes_on_device, "cross_entropy": plan.cross_entropy,
        "zero3_gather_unit": plan.zero3_gather_unit,
        "grad_reduce": plan.grad_reduce,
        "stage_layers": list(plan.stage_layers) or None,
        "fp8_recipe": plan.fp8_recipe, "bf16_layers_start": plan.bf16_layers_start,
        "bf16_layers_end": plan.bf16_layers_end, "weight_casts": plan.weight_casts,
        "zero3_reshard": plan.zero3_reshard, "tp_comm_overlap": plan.tp_comm_overlap,
        "tp_async_grad": plan.tp_async_grad,
        "offload_layers": plan.offload_layers, "offload_modules": list(plan.offload_modules),
        "offload_optimizer_states": plan.offload_optimizer_states,
        "lowp_param_gather": plan.lowp_param_gather,
        "pipeline_buffers": plan.pipeline_buffers, "grad_sync": plan.grad_sync, "repeat_kv": plan.repeat_kv,
        "grad_bucket_elements": plan.grad_bucket_elements,
        "sp_gathered": plan.sp_gathered, "projections": plan.projections, "rank_order": plan.rank_order,
        "attention_kernel": plan.attention_kernel,
    }


def plan_of_estimate(estimate: dict, model: ModelSpec, ref: str = "PLAN.json") -> tuple[cm.Plan, int]:
    """The estimate's plan as a cm.Plan, and its GPU count (checked against tp*cp*pp*dp); `ref` names the file
    in errors (emit's PLAN.json, compare's A and B)."""
    raw = estimate.get("plan")
    if not isinstance(raw, dict):
        raise PlannerError(f"{ref}: no 'plan' object (expected one estimate from `planner estimate --json`)")
    raw = {k: v for k, v in raw.items() if k != "grad_accum_steps"}  # derived; rules check the batch
    if raw.get("dp") is None:
        raise PlannerError(f"{ref}: plan.dp is missing")
    spec = reading.parse(PlanSpec, raw, f"{ref} plan")
    plan = build_plan(spec, model, spec.tp * spec.cp * spec.pp * spec.dp)
    num_gpus = estimate.get("num_gpus", plan.num_gpus)
    if num_gpus != plan.num_gpus:
        raise PlannerError(f"{ref}: num_gpus {num_gpus} != tp*cp*pp*dp = {plan.tp}*{plan.cp}*{plan.pp}*{plan.dp}")
    return plan, num_gpus
