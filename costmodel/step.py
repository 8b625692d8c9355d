"""One training step end to end: time breakdown, memory on the fullest GPU, throughput, MFU, dollars.

Step time = pipeline flush (m micro-batches through the slowest stage, plus fill/drain bubble)
+ exposed DP/ZeRO sync + optimizer update + fixed overhead, taking the worst stage for the
per-stage terms. MFU is model FLOPs (no recompute) per second over the dense peak of the plan's
precision (Chowdhery et al., PaLM, 2022, Appendix B); HFU counts recompute too.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from math import inf

from . import compute, dataparallel, dollars, lowp, memory, overlap, pipeline, topology
from .flops import (
    embedding_parameters,
    expert_parameters,
    hardware_flops_per_step,
    layer_attention_flops,
    layer_kind_counts,
    model_flops_per_step,
)
from .pipeline import chunk_layers
from .stage import StageCost, layer_mix, stage_cost, stage_kernels
from .types import ATTENTION_KERNELS, Cluster, Efficiency, Gpu, Model, Plan

TIME_PARTS = ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "moe_sync", "pp_comm", "offload", "pp_bubble",
              "dp_comm_exposed", "optimizer", "overhead")
MEMORY_PARTS = ("parameters", "gradients", "optimizer_states", "activations", "zero3_gather_buffers", "overhead")


@dataclass(frozen=True)
class Estimate:
    step_time_seconds: float
    time_breakdown_seconds: dict[str, float]
    dp_comm_seconds: float  # whole DP/ZeRO sync, hidden or not
    memory_per_gpu_bytes: float
    memory_breakdown_bytes: dict[str, float]
    memory_capacity_bytes: float
    tokens_per_second: float
    model_flops_per_step: float
    hardware_flops_per_step: float
    model_flops_per_gpu_per_second: float
    mfu: float  # model FLOPs counting the full s x s attention square, as the papers do
    hfu: float
    bubble_fraction: float
    usd_per_step: float
    stage_layers: tuple[int, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    mfu_causal: float = 0.0  # model FLOPs counting causal attention only (newer Megatron-Bridge tables)
    model_flops_per_step_causal: float = 0.0

    @property
    def fits(self) -> bool:
        return self.memory_per_gpu_bytes <= self.memory_capacity_bytes


def stage_mixes(model: Model, plan: Plan) -> tuple:
    """Each pipeline rank's layers as a stage.LayerMix."""
    return _stage_mixes(model, chunk_layers(model, plan), plan.pp, plan.vpp)


@lru_cache(maxsize=4096)
def _stage_mixes(model: Model, chunks: tuple[int, ...], pp: int, vpp: int) -> tuple:
    return tuple(layer_mix(model, rank) for rank in pipeline.stage_layer_indices(chunks, pp, vpp))


def recomputed_layers(model: Model, plan: Plan) -> tuple | None:
    """Under block recompute (Plan.recompute_layers), the (representative layer, count) of the layers every
    rank replays, summed over the pipeline; None when recompute takes every layer alike."""
    if not plan.recompute_layers:
        return None
    ranks = pipeline.recomputed_layer_indices(chunk_layers(model, plan), plan.pp, plan.vpp, plan.recompute_layers)
    return layer_mix(model, (i for rank in ranks for i in rank))


def stage_costs(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> list[StageCost]:
    kernels = stage_kernels(model, cluster, plan, eff)
    return [stage_cost(model, cluster, plan, mix, r, eff, kernels) for r, mix in enumerate(stage_mixes(model, plan))]


def model_states(plan: Plan, stage: StageCost, per_param: memory.StateBytesPerParam,
                 edge_per_param: memory.StateBytesPerParam | None = None) -> memory.StateBytesPerParam:
    """Model-state bytes on one GPU of `stage`: the dense weights sharded over the dp x cp ranks that
    hold them (Megatron's distributed optimizer uses the data-parallel group with context parallel),
    the routed experts' over expert-DP. With `edge_per_param`, the weights outside the transformer
    layers (embedding, output layer, final norm) and those of the layers kept 16-bit (StageCost.
    sixteen_bit_params) are held at those bytes instead."""
    edge = stage.params - stage.layer_params if edge_per_param is not None else 0.0
    wide, wide_experts = stage.sixteen_bit_params if edge_per_param is not None else (0.0, 0.0)
    dense = stage.params - stage.expert_params - edge - (wide - wide_experts)
    parts = [memory.sharded_state_bytes(dense, per_param, plan.zero_stage, plan.dp * plan.cp),
             memory.sharded_state_bytes(stage.expert_params - wide_experts, per_param, plan.zero_stage,
                                        plan.expert_dp)]
    if edge + wide - wide_experts > 0:
        parts.append(memory.sharded_state_bytes(edge + wide - wide_experts, edge_per_param, plan.zero_stage,
                                                plan.dp * plan.cp))
    if wide_experts > 0:
        parts.append(memory.sharded_state_bytes(wide_experts, edge_per_param, plan.zero_stage, plan.expert_dp))
    return memory.StateBytesPerParam(sum(p.parameters for p in parts), sum(p.gradients for p in parts),
                                     sum(p.optimizer_states for p in parts))


def edge_state_bytes_per_param(plan: Plan) -> memory.StateBytesPerParam | None:
    """Under a low precision, the state bytes of the weights outside the transformer layers, which stay
    16-bit: Transformer Engine quantizes its own modules only (Megatron's embedding and output layer
    are megatron.core.tensor_parallel layers, so no fp8 copies and no low-precision parameter gather),
    and torchao's float8 conversion swaps nn.Linear in the blocks, skipping the output layer
    (torchtitan's converter filters lm_head) and the embedding. None in 16-bit or fp32 training."""
    if not lowp.is_low(plan.precision):
        return None
    return memory.state_bytes_per_param("bf16", plan.grad_comm_dtype, optimizer_states=plan.optimizer_states)


def stage_states(plan: Plan, stage: StageCost,
                 generation: str) -> tuple[memory.StateBytesPerParam, memory.StateBytesPerParam]:
    """(bytes per parameter, model-state bytes on one GPU of `stage`); `generation` (the GPU's) sets the layouts
    Transformer Engine keeps of its cached weight casts (lowp.te_layouts)."""
    layouts = lowp.cast_layouts(plan.precision, plan.fp8_recipe, generation, plan.weight_casts)
    per_param = memory.state_bytes_per_param(plan.precision, plan.grad_comm_dtype, plan.fp8_recipe, plan.weight_casts,
                                             plan.lowp_param_gather, plan.optimizer_states, layouts)
    return per_param, model_states(plan, stage, per_param, edge_state_bytes_per_param(plan))


def memory_breakdown(model: Model, plan: Plan, stage: StageCost, eff: Efficiency, generation: str) -> dict[str, float]:
    """Bytes on one GPU of `stage` by part (ZeRO Sec 3.1 states, Korthikanti activations), at its fullest moment.
    The gradients include the buckets a runtime stages them through for their reduction (Plan.grad_bucket_elements).
    With the optimizer's states offloaded (Plan.offload_optimizer_states) the GPU holds them only from the reload
    at the end of backward through the optimizer step, when the activations and gathered weights are freed, so
    the fuller of the two phases is given: forward and backward without the states, or the step without those."""
    per_param, states = stage_states(plan, stage, generation)
    parts = {
        "parameters": states.parameters,
        "gradients": (states.gradients + gradient_shard_copy_bytes(plan, stage, per_param)
                      + dataparallel.allreduce_bucket_bytes(stage.params, plan)
                      + dataparallel.staging_bucket_bytes(plan)),
        "optimizer_states": states.optimizer_states,
        "activations": stage.activation_bytes,
        "zero3_gather_buffers": zero3_gather_bytes(model, plan, stage),
    }
    if not plan.offload_optimizer_states:
        return with_overhead(plan, parts, eff)
    passes = with_overhead(plan, {**parts, "optimizer_states": 0.0}, eff)
    update = with_overhead(plan, {**parts, "activations": 0.0, "zero3_gather_buffers": 0.0}, eff)
    return max(passes, update, key=lambda d: sum(d.values()))


def with_overhead(plan: Plan, parts: dict[str, float], eff: Efficiency) -> dict[str, float]:
    """`parts` with the fixed overhead and the allocator's slack on what the step allocates and frees."""
    slack = eff.memory_fragmentation_fraction * step_allocated_bytes(plan, parts)
    return {**parts, "overhead": eff.memory_overhead_bytes + slack}


def optimizer_offload_seconds(cluster: Cluster, plan: Plan, stages: list[StageCost],
                              dp_exposed_seconds: float) -> float:
    """Step time the optimizer-state offload adds (Plan.offload_optimizer_states; Megatron-LM dev 0a2e01fd,
    2026-01-19, #2987: training.py offload_states / release_offloaded_gpu_states / a finalize_model_grads
    wrapper that calls reload_offloaded_states; cpu_offloading/optimizer_state_offloader.py): the states and
    master weights of this GPU's shard go to host on a copy stream at the start of the step, behind the
    forward, and come back on another once backward ends, beside the gradient reduction that the step waits
    for anyway; the optimizer step waits for the reload (sync_before_step). So the reload is exposed for as
    long as it outlasts the exposed gradient sync, at the host link's one-way bandwidth, on the stage that
    holds the most states (the step's gradient-norm reduction spans every stage). Assumed: the copy out is
    hidden whole (the forward is longer), and neither copy slows the compute beside it. The cost model takes
    it at any ZeRO stage (at ZeRO 0 the whole replicated states move); Megatron-LM's offloader is the
    distributed optimizer's (ZeRO 1)."""
    if not plan.offload_optimizer_states:
        return 0.0
    states = max(stage_states(plan, s, cluster.gpu.generation)[1].optimizer_states for s in stages)
    return max(0.0, states / cluster.host_link_bytes_per_second - dp_exposed_seconds)


def step_allocated_bytes(plan: Plan, parts: dict[str, float]) -> float:
    """The bytes a step allocates and frees again, which is where the caching allocator's slack
    (Efficiency.memory_fragmentation_fraction) comes from: a freed block can be re-split for a later
    request of another size, and blocks still alive pin the splits around them, while memory allocated
    once and kept does neither (E. Yang, "When does fragmentation occur in the CUDA caching
    allocator?", pytorch/devlogs content/eager/2026-06-01-cuda-caching-allocator.md, "Segments,
    blocks, and splitting" and "Expandable segments don't eliminate all fragmentation").
    Allocated per step: the activations and the gathered ZeRO-3 weights, and with grad_sync
    "chunk_end" (FSDP2 under a pipeline) the unsharded weights gathered at the first micro-batch and
    freed at the reshard after the last, and the unsharded gradients accumulated and freed after their
    reduce-scatter (Plan.grad_sync). Kept: Megatron-core's and DDP's contiguous parameter and gradient
    buffers, ZeRO shards and optimizer states, allocated once and updated in place.
    Assumption: the slack is the same fraction of these bytes whatever their sizes and order."""
    allocated = parts["activations"] + parts["zero3_gather_buffers"]
    if plan.grad_sync == "chunk_end":
        allocated += parts["parameters"] + parts["gradients"]
    return allocated


def zero3_gather_bytes(model: Model, plan: Plan, stage: StageCost) -> float:
    """Gathered weights ZeRO-3 holds beside its shards, the non-local part. Per layer (FSDP2's
    per-block fully_shard, DeepSpeed's prefetch): the current and the prefetched layer, or the whole
    stage when the forward's gather is kept (zero3_reshard False). Per weight tensor
    (`zero3_gather_unit` "tensor", DeepSpeed ZeRO-3 of 2021, dataparallel.TENSOR_GATHERS_PER_LAYER):
    one tensor at a time, gathered synchronously and released after its module runs, so the layer's
    largest weight twice: the gathered tensor and the flat buffer PyTorch's list all_gather fills
    first (ProcessGroupNCCL::allgather, as cited there); the prefetch of 5e7 elements
    (stage3_prefetch_bucket_size) is left out. A routed expert's weights are sharded over the expert
    data-parallel ranks instead (model_states, as torchtitan's FSDP2 over its expert mesh, Megatron's and
    DeepSpeed's expert-DP groups), so the gathered layers hold their non-local (edp - 1)/edp: none at edp 1."""
    group, egroup = plan.dp * plan.cp, plan.expert_dp
    if plan.zero_stage != 3 or not stage.layers or (group <= 1 and egroup <= 1):
        return 0.0
    gathered = dataparallel.param_gather_bytes_per_param(plan.precision, plan.lowp_param_gather)
    if plan.zero3_gather_unit == "tensor":  # DeepSpeed's unit; its Megatron-DeepSpeed stack fuses (Plan.projections)
        resident = 2.0 * max(n * k for _, n, k, _ in compute.weight_gemms(model, 1, plan.tp))
        return resident * gathered * (group - 1) / group
    layers = min(2, stage.layers) if plan.zero3_reshard else stage.layers
    dense, experts = stage.layer_params - stage.expert_params, stage.expert_params
    return (layers / stage.layers) * gathered * (dense * (group - 1) / group + experts * (egroup - 1) / egroup)


def gradient_shard_copy_bytes(plan: Plan, stage: StageCost, per_param: memory.StateBytesPerParam) -> float:
    """With grad_sync "chunk_end" (ZeRO-1 as FSDP2 runs it under a pipeline) the reduce-scatter writes
    the gradient shards into new storage beside the unsharded accumulation, allocated on FSDP2's
    reduce-scatter stream (foreach_reduce: reduce_output) and kept as the sharded parameters' .grad
    until the optimizer's zero_grad frees them into that stream's cache, which the default stream's
    allocations cannot reuse: a shard's worth of gradients (1/(dp x cp) of the stage's) reserved
    through the next step's peak. Nothing when gradients are reduced in place ("buckets")."""
    if plan.grad_sync != "chunk_end" or plan.zero_stage != 1:
        return 0.0
    return model_states(replace(plan, zero_stage=2), stage, per_param).gradients


def dp_critical_stage(stages: list[StageCost]) -> StageCost:
    """The stage whose DP/ZeRO sync and optimizer step are largest: most parameters (first on ties).

    All stages sync concurrently after the flush; the one holding the most weights (usually the
    first or last, with the embedding or output layer) finishes last.
    """
    return max(stages, key=lambda s: s.params)


def dp_group_links(cluster: Cluster, plan: Plan, eff: Efficiency):
    """(DP ranks per NVLink domain, NVLink tier, network tier) of the plan's dp x cp sync group, the ranks per
    domain an even split of the group (topology.even_split)."""
    per_domain = topology.even_split(topology.dp_ranks_per_domain(plan, cluster), plan.dp * plan.cp)
    return per_domain, topology.nvlink_link(cluster, eff, per_domain), topology.network_link(cluster, eff)


def dp_sync_total_seconds(cluster: Cluster, plan: Plan, stage: StageCost, eff: Efficiency) -> float:
    """Whole DP/ZeRO sync per step for one GPU of `stage` (depends on layout, ZeRO, dtypes, recompute):
    the dense weights over the dp x cp ranks holding them, then the routed experts over expert-DP
    (Megatron-core syncs the two buffers in turn)."""
    hbm = compute.elementwise_bytes_per_second(cluster.gpu, eff)
    return over_sync_groups(cluster, plan, stage, eff, lambda params, group, per_domain, fast, slow, experts: (
        dataparallel.dp_sync_seconds(params, group, per_domain, fast, slow, plan.num_microbatches, stage.layers, hbm,
                                     replay_share(stage, experts))))


def replay_share(stage: StageCost, experts: bool) -> float:
    """Of a sync group's parameters on `stage` (the routed experts' or the rest), the share full recompute
    gathers again under ZeRO-3 for its replay: all, or under block recompute its replayed layers' own."""
    if stage.replayed is None:
        return 1.0
    total, routed = stage.replayed_params
    held, replayed = (stage.expert_params, routed) if experts else (stage.params - stage.expert_params, total - routed)
    return replayed / held if held else 0.0


def over_sync_groups(cluster: Cluster, plan: Plan, stage: StageCost, eff: Efficiency, seconds) -> float:
    """`seconds(params, group plan, DP ranks per NVLink domain, NVLink tier, network tier, experts)` summed over
    the stage's two gradient-sync groups: the dense weights over the dp x cp ranks holding them, the
    routed experts (`experts` True) over expert-DP."""
    per_domain, fast, slow = dp_group_links(cluster, plan, eff)
    total = seconds(stage.params - stage.expert_params, with_sync_group(plan, plan.dp * plan.cp), per_domain, fast,
                    slow, False)
    if stage.expert_params:
        expert_domain = topology.expert_dp_ranks_per_domain(plan, cluster)
        total += seconds(stage.expert_params, with_sync_group(plan, plan.expert_dp), expert_domain,
                         topology.nvlink_link(cluster, eff, expert_domain), slow, True)
    return total


def with_sync_group(plan: Plan, ranks: int) -> Plan:
    """The plan as dataparallel.py sees one gradient-sync group: `ranks` ranks in place of dp (it reads
    the group size from plan.dp)."""
    return plan if ranks == plan.dp else replace(plan, dp=ranks)


def dp_overlap_window_seconds(plan: Plan, stage: StageCost, bubble_seconds: float = 0.0) -> float:
    """Time the sync can hide behind: ZeRO-0's gradient AllReduce only the last micro-batch's
    backward (2/3 of its fwd+bwd); ZeRO-1 also the next step's first forward (parameter AllGather);
    ZeRO-2/3 communicate every micro-batch, so every micro-batch; ZeRO 0 with grad_sync "microbatch"
    (an all-reduce after each) every micro-batch's backward, as DDP and FSDP2 wait for each backward's
    reduction before the next forward (DDP's reducer finalize_backward). A micro-batch counts with its whole
    wall time (StageCost.microbatch_seconds): the sync runs on its own stream while the compute stream
    computes or waits on the TP, EP and CP exchanges that compute does not hide; counting compute
    alone charged lost cover twice when compute got faster (the TP/EP exposure grew, then the DP
    exposure again: 2x the dense peak made a DeepSeek-V3 step 9% slower). With a pipeline, the
    fill and drain bubbles add to it: a stage's gradients are final once its last backward is
    done, while later stages still drain (Megatron-core starts each chunk's reduce-scatter then,
    and its parameter all-gathers during the next fill)."""
    one_mb = stage.microbatch_seconds
    if plan.zero_stage >= 2:
        return plan.num_microbatches * one_mb + bubble_seconds
    if plan.grad_sync == "microbatch":  # DDP / FSDP2 wait for each backward's reduction before the next forward
        return plan.num_microbatches * one_mb * 2 / 3 + bubble_seconds
    return (one_mb * 2 / 3 if plan.zero_stage == 0 else one_mb) + bubble_seconds


def embedding_sync_seconds(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> float:
    """Tied-embedding gradient AllReduce between the pipeline's ends (0 when untied or pp = 1)."""
    if not model.tie_embeddings:
        return 0.0
    same = topology.pp_neighbours_share_domain(plan, cluster)
    link = topology.nvlink_link(cluster, eff, 2) if same else topology.network_link(cluster, eff)
    return dataparallel.tied_embedding_sync_seconds(embedding_parameters(model), plan, link)


def dp_tail_seconds(model: Model, cluster: Cluster, plan: Plan, stage: StageCost, eff: Efficiency,
                    total_seconds: float) -> float:
    """The part of the sync no compute can hide: the last layer's share, ready only when backward
    ends, or under ZeRO-3 the gather and reduction of the weights outside the layers (the
    embedding and output on this stage), or, with grad_sync "chunk_end", the reduction of the
    stage's last chunk, issued only once that chunk's last backward is done (FSDP2 under
    torch.distributed.pipelining, _post_backward), whichever is larger."""
    edge = stage.params - stage.layer_params
    per_domain, fast, slow = dp_group_links(cluster, plan, eff)
    edge_seconds = dataparallel.zero3_edge_seconds(edge, with_sync_group(plan, plan.dp * plan.cp), per_domain, fast,
                                                   slow, plan.num_microbatches)
    chunk_seconds = last_chunk_reduce_seconds(cluster, plan, stage, eff) if plan.grad_sync == "chunk_end" else 0.0
    return max(total_seconds / max(1, stage.layers), edge_seconds, chunk_seconds)


def last_chunk_reduce_seconds(cluster: Cluster, plan: Plan, stage: StageCost, eff: Efficiency) -> float:
    """The gradient reduction of one of the stage's vpp chunks (no weight gather), over the sync groups
    dp_sync_total_seconds uses."""
    return over_sync_groups(cluster, plan, stage, eff, lambda params, group, per_domain, fast, slow, _: (
        dataparallel.gradient_reduce_seconds(params, group, per_domain, fast, slow))) / plan.vpp


def dp_costs(model: Model, cluster: Cluster, plan: Plan, stage: StageCost, eff: Efficiency,
             bubble_seconds: float = 0.0) -> tuple[float, float]:
    """(total, exposed) DP/ZeRO sync seconds for one GPU of `stage`, including the tied-embedding
    AllReduce, which runs after the flush and never hides."""
    total = dp_sync_total_seconds(cluster, plan, stage, eff)
    window = dp_overlap_window_seconds(plan, stage, bubble_seconds)
    tail = dp_tail_seconds(model, cluster, plan, stage, eff, total)
    tied = embedding_sync_seconds(model, cluster, plan, eff)
    return total + tied, dp_exposed_with_contention(total, plan, window, tail, eff) + tied


def dp_exposed_with_contention(total_seconds: float, plan: Plan, window_seconds: float, tail_seconds: float,
                               eff: Efficiency) -> float:
    """What the sync adds to the step: its exposed part (dataparallel.dp_exposed_seconds) or the
    slowdown its hidden part causes the compute it ran beside, whichever ends later
    (overlap.overlapped_cost_seconds)."""
    exposed = dataparallel.dp_exposed_seconds(total_seconds, plan, window_seconds, tail_seconds,
                                              eff.dp_overlap_fraction)
    return overlap.overlapped_cost_seconds(exposed, total_seconds - exposed, eff.collective_sm_share)


def optimizer_step_seconds(cluster: Cluster, plan: Plan, stage: StageCost, eff: Efficiency) -> float:
    """Adam update of the parameters this GPU owns (its shard under ZeRO >= 1), and under a low
    precision the once-per-step cast of this GPU's weights to it (costmodel/lowp.py)."""
    sharded = plan.zero_stage >= 1
    owned = (stage.params - stage.expert_params) / (plan.dp * plan.cp if sharded else 1)
    owned += stage.expert_params / (plan.expert_dp if sharded else 1)
    layouts = lowp.cast_layouts(plan.precision, plan.fp8_recipe, cluster.gpu.generation, plan.weight_casts)
    cast = (stage.params * lowp.weight_cast_bytes_per_param(plan.precision, plan.fp8_recipe, layouts)
            if lowp.cached_casts(plan.weight_casts) else 0.0)
    hbm = compute.elementwise_bytes_per_second(cluster.gpu, eff)
    states = 12.0 if plan.optimizer_states == "fp32" else 6.0
    return compute.optimizer_seconds(owned, cluster.gpu, eff, states) + cast / hbm


def pipeline_parts(plan: Plan, stages: list[StageCost]) -> dict[str, float]:
    """Seconds of the pipeline flush by part: the slowest stage's per-micro-batch parts times m, and the bubble.
    PP p2p adds the exchanges the steady state hides but the fill and drain wait for
    (pipeline.fill_drain_hops times StageCost.pp_hidden_seconds, the largest of the stages': every stage
    exchanges the same bytes, and the one whose chunks compute longest hides most of them)."""
    m = plan.num_microbatches
    _, bubble = pipeline.pipeline_seconds(tuple(s.microbatch_seconds for s in stages), m, plan.vpp)
    slowest = max(stages, key=lambda s: s.microbatch_seconds)
    waited = pipeline.fill_drain_hops(plan.pp, plan.vpp) * max(s.pp_hidden_seconds for s in stages)
    return {
        "compute": m * slowest.compute_seconds,
        "recompute": m * slowest.recompute_seconds,
        "tp_comm": m * slowest.tp_comm_seconds,
        "cp_comm": m * slowest.cp_comm_seconds,
        "ep_comm": m * slowest.ep_comm_seconds,
        "moe_sync": m * slowest.moe_sync_seconds,
        "pp_comm": m * slowest.pp_comm_seconds + waited,
        "offload": m * slowest.offload_seconds,
        "pp_bubble": bubble,
    }


def memory_candidate_stages(stages: list[StageCost]) -> list[int]:
    """Stages that can hold the most memory: first, last, and for each distinct layer mix (and the layers of it
    block recompute replays) among the middle stages its lowest rank (in-flight micro-batches only fall with
    the rank, and middle stages with equal layers hold equal weights). Exact: no other stage can exceed these."""
    picked, seen = {0, len(stages) - 1}, set()
    for r in range(1, len(stages) - 1):
        if (stages[r].mix, stages[r].replayed) not in seen:
            seen.add((stages[r].mix, stages[r].replayed))
            picked.add(r)
    return sorted(picked)


def warnings_for(cluster: Cluster, plan: Plan) -> tuple[str, ...]:
    out = []
    used = topology.domain_size(cluster)
    if 1 < used < cluster.nvlink_domain_size < cluster.num_gpus:
        out.append(f"{cluster.num_gpus} GPUs run as {cluster.num_gpus // used} NVLink domains of {used} of their "
                   f"{cluster.nvlink_domain_size} GPUs: place {used // max(1, cluster.gpus_per_node)} nodes in each "
                   "(topology.job_domain_size)")
    if topology.tp_crosses_network(plan, cluster):
        out.append(f"TP group of {plan.tp} spans more than one NVLink domain ({used} GPUs): TP traffic crosses "
                   "the network")
    if plan.cp > 1 and plan.cp_comm == "a2a+p2p":
        inner = topology.cp_ranks_per_domain(plan, cluster)
        if inner in (1, plan.cp):
            same = "the p2p ring" if inner == 1 else "Ulysses (a2a)"
            out.append(f"cp_comm a2a+p2p: the {plan.cp} CP ranks sit {inner} to an NVLink domain, so the all-to-all "
                       f"group is {'one rank' if inner == 1 else 'all of them'} and the exchange is {same} by another "
                       "name (priced so; Megatron's --hierarchical-context-parallel-sizes say the same)")
    uneven = pipeline.uneven_chunks(plan)
    if uneven is not None:
        rank, layers = uneven
        out.append(f"pipeline rank {rank}'s model chunks hold {', '.join(map(str, layers))} layers: the interleaved "
                   "bubble is priced for equal chunks ((total - slowest) / vpp), and Megatron's schedule with chunks "
                   "this unequal can wait several times longer or much less (validation/README.md, \"The interleaved "
                   "bubble with unequal chunks\")")
    return tuple(out)


def estimate(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency | None = None) -> Estimate:
    """Score one plan. The plan must be legal (see rules.plan_violations)."""
    eff = eff or Efficiency()
    stages = stage_costs(model, cluster, plan, eff)
    critical = dp_critical_stage(stages)
    parts = pipeline_parts(plan, stages)
    dp_total, dp_exposed = dp_costs(model, cluster, plan, critical, eff, parts["pp_bubble"])
    parts["dp_comm_exposed"] = dp_exposed
    parts["offload"] += optimizer_offload_seconds(cluster, plan, stages, dp_exposed)
    parts["optimizer"] = optimizer_step_seconds(cluster, plan, critical, eff)
    parts["overhead"] = eff.step_overhead_seconds
    step = sum(parts.values())
    gen = cluster.gpu.generation
    mems = [memory_breakdown(model, plan, stages[r], eff, gen) for r in memory_candidate_stages(stages)]
    worst = max(mems, key=lambda d: sum(d.values()))
    mflops = model_flops_per_step(model, plan.global_batch_size)
    causal = model_flops_per_step(model, plan.global_batch_size, causal=True)
    hflops = hardware_flops_per_step(model, plan.global_batch_size, plan.recompute, plan.recompute_modules,
                                     plan.projections, recomputed_layers(model, plan))
    peak = cluster.gpu.peak_flops_per_second(plan.precision) * plan.num_gpus
    return Estimate(
        step_time_seconds=step,
        time_breakdown_seconds=parts,
        dp_comm_seconds=dp_total,
        memory_per_gpu_bytes=sum(worst.values()),
        memory_breakdown_bytes=worst,
        memory_capacity_bytes=cluster.gpu.memory_bytes,
        tokens_per_second=plan.global_batch_size * model.seq_length / step,
        model_flops_per_step=mflops,
        hardware_flops_per_step=hflops,
        model_flops_per_gpu_per_second=mflops / step / plan.num_gpus,
        mfu=mflops / step / peak,
        hfu=hflops / step / peak,
        bubble_fraction=parts["pp_bubble"] / step,
        usd_per_step=dollars.usd_per_step(step, plan.num_gpus, cluster.usd_per_gpu_hour),
        stage_layers=chunk_layers(model, plan),
        warnings=warnings_for(cluster, plan),
        mfu_causal=causal / step / peak,
        model_flops_per_step_causal=causal,
    )


def step_seconds_floor(model: Model, cluster: Cluster, global_batch_size: int, eff: Efficiency | None = None,
                       precisions: tuple[str, ...] = ("bf16",)) -> float:
    """A step time that no plan of `model` on `cluster` beats (seconds), whatever its layout.

    Every plan runs, for each of the global batch's gbs x s tokens, each layer's weight GEMMs forward
    and twice backward (compute.layer_times: backward = 2 x the forward GEMMs); counted here are only
    those no plan can shrink, layer by layer: the attention projections and the dense MLP, or an MoE
    layer's shared and routed experts (routed_expert_rows_floor). A TP rank gets floor(width / tp) of a
    split dimension, so each GEMM is counted at n x k - (d - 1) x max(n, k) for d the NVLink domain size
    (TP stays inside it). No GEMM runs faster than compute.gemm_seconds' best rate, the sustained peak x
    min(1, large-GEMM fraction x efficiency scales), the fastest over `precisions`. Each layer also runs its
    attention core (attention_seconds_floor). The work is shared over all GPUs; the rest of the step
    (elementwise work, communication, bubble) is >= 0 and left out.
    """
    eff = compute.scale_matmul_efficiency(eff or Efficiency(), cluster.matmul_efficiency_scale)
    d = topology.domain_size(cluster)
    tokens = global_batch_size * model.seq_length

    def gemm_flops(m: int, n: int, k: int, count: int) -> float:
        return 2.0 * m * count * max(0, n * k - (d - 1) * max(n, k))

    def layer_flops(index: int) -> float:  # fused shapes: separate ones (Plan.projections) split the same FLOPs
        gemms, routed = compute.attention_gemms(model, tokens, 1), 0.0
        if not model.is_moe_layer(index):
            gemms += compute.mlp_gemms(model, tokens, 1, model.ffn)
        else:
            if model.moe.shared_ffn_hidden_size:
                gemms += compute.mlp_gemms(model, tokens, 1, model.moe.shared_ffn_hidden_size)
            # etp divides the expert width (rules._expert_rules): no rank loses a column
            routed = 2.0 * routed_expert_rows_floor(model, tokens) * expert_parameters(model)
        return 3.0 * (sum(gemm_flops(*g) for g in gemms) + routed)

    rate = max(gemm_rate_ceiling(cluster.gpu, p, eff) for p in precisions)

    def layer_seconds(index: int) -> float:
        return layer_flops(index) / rate + attention_seconds_floor(model, cluster.gpu, eff, index, global_batch_size)

    return sum(n * layer_seconds(rep) for rep, n in layer_kind_counts(model)) / cluster.num_gpus


def gemm_rate_ceiling(gpu: Gpu, precision: str, eff: Efficiency) -> float:
    """The fastest compute.gemm_seconds runs any GEMM in `precision` (FLOP/s): the sustained peak x min(1,
    large-GEMM fraction x efficiency scale), the shape factor at most 1."""
    fraction = compute.large_gemm_fraction(gpu, precision, eff) * eff.matmul_efficiency_scale
    return compute.sustained_flops_per_second(gpu, precision) * min(1.0, fraction)


def attention_seconds_floor(model: Model, gpu: Gpu, eff: Efficiency, index: int, batch: int) -> float:
    """Fewest seconds the cost model gives layer `index`'s attention core, forward and backward, for `batch`
    sequences, whatever the plan (compute.attention_core_seconds, compute.layer_times). Unfused: two GEMMs
    over the whole s x s square (flops.layer_attention_flops, full), at no more than the 16-bit GEMM
    ceiling, and a backward twice the forward: 3 x those FLOPs at that rate. Fused: the causal FLOPs (the
    kernel skips masked blocks and, in a local layer, those outside the window) at the kernel's fraction for
    the longest block it can work on (s / cp for a global layer, at most the window for a local one;
    compute.flash_attention_fraction grows with it; the better kernel), times the part's measured rate scale
    and the FP8 speedup, each the larger of forward and backward, and a backward 2.5 x the forward: 3.5 x the
    causal FLOPs at that rate. The smaller of the two."""
    span = compute.attention_block_span(model, index)  # the longest: cp 1
    fused = max(compute.flash_attention_fraction(span, eff, gpu.generation, kernel) for kernel in ATTENTION_KERNELS)
    fused *= max(compute.attention_rate_scale(gpu, eff)) * max(1.0, *compute.fp8_attention_speedup(gpu, eff))
    fused_rate = compute.sustained_flops_per_second(gpu, "bf16") * fused
    causal = layer_attention_flops(model, batch, index, causal=True)
    fused_seconds = 3.5 * causal / fused_rate if fused_rate > 0 else inf
    unfused_seconds = 3.0 * layer_attention_flops(model, batch) / gemm_rate_ceiling(gpu, "bf16", eff)
    return min(fused_seconds, unfused_seconds)


def routed_expert_rows_floor(model: Model, tokens: int) -> float:
    """Fewest token rows the routed experts of one MoE layer process over every GPU, for `tokens` tokens,
    whatever the plan: each token's k copies at the smallest row factor (moe.row_factor: the capacity
    factor when experts are padded, else the routing imbalance, which is at least 1), times 2/3. The
    2/3: a GPU runs each local expert on max(1, round(x)) rows for its share x (moe.expert_gemms), and
    max(1, x - 1/2) / x is at least 2/3 for every x > 0 (at x = 3/2)."""
    moe = model.moe
    least = moe.capacity_factor if moe.capacity_factor > 0 else 1.0
    return tokens * moe.experts_per_token * least * 2.0 / 3.0
