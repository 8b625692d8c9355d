"""Per-pipeline-stage cost: seconds per micro-batch and bytes held, for one GPU of that stage.

Combines compute.py (layer kernels), comm.py (TP collectives and PP p2p), memory.py. TP traffic
per layer follows Megatron-LM (Shoeybi et al. 2019, Sec 3, Fig. 4): two AllReduces of the b*s*h
activations in forward (after attention and after the MLP) and two in backward; with sequence
parallel each becomes a ReduceScatter + AllGather pair of the same ring cost (Korthikanti
Sec 4.2.2); a full-recompute forward replay repeats the forward two. Pipeline p2p uses the
scatter/gather optimisation (Narayanan et al. 2021 Sec 4.1): each TP rank sends 1/t of the
boundary activation, so every micro-batch and model chunk costs one send forward and one back.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import compute, lowp, memory, overlap, topology
from .comm import hierarchical_allreduce_seconds, p2p_seconds
from .flops import embedding_parameters, parameters_per_layer
from .types import Cluster, Efficiency, Model, Plan

ACTIVATION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 2, "mxfp8": 2, "nvfp4": 2}  # low precision keeps bf16


@dataclass(frozen=True)
class StageCost:
    layers: int
    compute_seconds: float  # forward + backward, per micro-batch
    recompute_seconds: float
    tp_comm_seconds: float
    pp_comm_seconds: float
    params: float  # parameters on one GPU of this stage
    activation_bytes: float
    offload_seconds: float = 0.0  # activation copies to and from host that compute does not hide

    @property
    def microbatch_seconds(self) -> float:
        return (self.compute_seconds + self.recompute_seconds + self.tp_comm_seconds + self.pp_comm_seconds
                + self.offload_seconds)


def tp_allreduce_seconds(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> float:
    """One TP AllReduce (or RS+AG pair) of a micro-batch's b*s*h activations."""
    if plan.tp <= 1:
        return 0.0
    size = plan.micro_batch_size * model.seq_length * model.hidden_size * ACTIVATION_BYTES[plan.precision]
    per_domain = topology.tp_ranks_per_domain(plan, cluster)
    fast, slow = topology.nvlink_link(cluster, eff), topology.network_link(cluster, eff)
    return hierarchical_allreduce_seconds(size, plan.tp, per_domain, fast, slow)


def pp_p2p_seconds(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> float:
    """Send + receive-gradient of one boundary activation for one micro-batch and chunk."""
    if plan.pp <= 1:
        return 0.0
    size = plan.micro_batch_size * model.seq_length * model.hidden_size * ACTIVATION_BYTES[plan.precision] / plan.tp
    same = topology.pp_neighbours_share_domain(plan, cluster)
    link = topology.nvlink_link(cluster, eff) if same else topology.network_link(cluster, eff)
    return 2.0 * p2p_seconds(size, link)


def exposed_p2p_seconds(model: Model, cluster: Cluster, plan: Plan, chunk_compute_seconds: float, eff: Efficiency) -> float:
    """p2p seconds per chunk on the critical path. Megatron-LM's interleaved schedule with
    --overlap-p2p-communication posts a chunk's sends/receives while the next chunk computes, so
    only what exceeds that compute shows; the plain 1F1B schedule blocks on each exchange."""
    p2p = pp_p2p_seconds(model, cluster, plan, eff)
    if plan.overlap_pp_comm and plan.vpp > 1:
        return max(0.0, p2p - chunk_compute_seconds)
    return p2p


def sixteen_bit_layers(plan: Plan, layers: int, stage: int) -> int:
    """Layers of `stage` kept 16-bit under a low precision: the first bf16_layers_start of the stack sit
    on the first stage, the last bf16_layers_end on the last (they are in its first and last model
    chunk, Megatron's layer order), at most the stage's layers."""
    count = (plan.bf16_layers_start if stage == 0 else 0) + (plan.bf16_layers_end if stage == plan.pp - 1 else 0)
    return min(layers, count)


def stage_params(model: Model, plan: Plan, layers: int, stage: int) -> float:
    """Parameters on one GPU of `stage`: its layers, plus the embedding on the first stage and the
    output layer on the last (Megatron keeps a tied copy there too when pp > 1)."""
    params = layers * parameters_per_layer(model)
    if stage == 0:
        params += embedding_parameters(model)
    if stage == plan.pp - 1 and not (model.tie_embeddings and plan.pp == 1):
        params += embedding_parameters(model) + model.hidden_size
    return params / plan.tp


def stage_activation_bytes(model: Model, plan: Plan, layers: int, stage: int) -> float:
    """Activation bytes held at the stage's peak (in-flight micro-batches times its layers)."""
    b, t = plan.micro_batch_size, plan.tp
    act = ACTIVATION_BYTES[plan.precision]
    per_layer = memory.layer_activation_bytes(model, b, t, plan.sequence_parallel, plan.recompute, plan.flash_attention,
                                              act)
    inflight = memory.inflight_microbatches(plan.pp, plan.vpp, plan.num_microbatches, stage)
    offloaded = offloaded_layers(plan, layers)
    total = inflight * (layers - offloaded) * per_layer + (per_layer if offloaded else 0.0)  # one copy in flight
    if plan.recompute == "full":  # one layer re-materialised at a time during backward
        total += memory.layer_activation_bytes(model, b, t, plan.sequence_parallel, "none", plan.flash_attention, act)
    if stage == 0:
        total += memory.first_stage_extra_bytes(model, b, t, inflight)
    if stage == plan.pp - 1:
        total += memory.last_stage_extra_bytes(model, b, t, plan.fused_cross_entropy, act)
    return total


@dataclass(frozen=True)
class StageKernels:
    """What every stage of one plan shares; step.stage_costs computes it once per plan.

    Reads only plan.tp, micro_batch_size, sequence_parallel, flash_attention, fused_elementwise and
    precision (and the
    cluster), so the plan search (planner/search/tables.py) reuses one per such combination."""

    eff: Efficiency  # with the cluster's matmul_efficiency_scale applied
    layer: compute.LayerTimes
    logits_seconds: float
    tp_allreduce_seconds: float
    layer_16bit: compute.LayerTimes | None = None  # layers kept 16-bit under a low precision


def stage_kernels(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> StageKernels:
    gpu, b, t = cluster.gpu, plan.micro_batch_size, plan.tp
    eff = compute.scale_matmul_efficiency(eff, cluster.matmul_efficiency_scale)
    def times(precision: str) -> compute.LayerTimes:
        return compute.layer_times(model, b, t, plan.sequence_parallel, plan.flash_attention, gpu, precision, eff,
                                   plan.fused_elementwise, plan.fp8_recipe, plan.weight_casts)

    sixteen = None
    if lowp.is_low(plan.precision) and plan.bf16_layers_start + plan.bf16_layers_end > 0:
        sixteen = times(lowp.sixteen_bit(plan.precision))
    return StageKernels(eff, times(plan.precision), compute.logits_seconds(model, b, t, gpu, plan.precision, eff),
                        tp_allreduce_seconds(model, cluster, plan, eff), sixteen)


def stage_cost(model: Model, cluster: Cluster, plan: Plan, layers: int, stage: int, eff: Efficiency,
               kernels: StageKernels | None = None) -> StageCost:
    """Seconds per micro-batch and bytes for one GPU of pipeline stage `stage` holding `layers` layers."""
    k = kernels or stage_kernels(model, cluster, plan, eff)
    eff, lt = k.eff, k.layer
    compute_s = layers * (lt.forward_seconds + lt.backward_seconds + eff.layer_overhead_seconds)
    sixteen = sixteen_bit_layers(plan, layers, stage)
    if sixteen and k.layer_16bit:
        delta = k.layer_16bit.forward_seconds + k.layer_16bit.backward_seconds - lt.forward_seconds - lt.backward_seconds
        compute_s += sixteen * delta
    if stage == plan.pp - 1:
        compute_s += k.logits_seconds
    replay = {"full": lt.forward_seconds, "selective": lt.attention_forward_seconds,
              "op": lt.op_replay_seconds}.get(plan.recompute, 0.0)
    edge_ar = (stage == 0) + (stage == plan.pp - 1)  # vocab-parallel embedding / output layer
    return StageCost(
        layers=layers,
        compute_seconds=compute_s,
        recompute_seconds=layers * replay,
        tp_comm_seconds=layers * layer_tp_comm_seconds(plan, lt, k.tp_allreduce_seconds, eff)
        + edge_ar * k.tp_allreduce_seconds,
        pp_comm_seconds=plan.vpp * exposed_p2p_seconds(model, cluster, plan, compute_s / plan.vpp, eff),
        params=stage_params(model, plan, layers, stage),
        activation_bytes=stage_activation_bytes(model, plan, layers, stage),
        offload_seconds=offload_seconds(model, cluster, plan, lt, layers),
    )


def layer_tp_comm_seconds(plan: Plan, lt: compute.LayerTimes, ar: float, eff: Efficiency) -> float:
    """One layer's TP collectives per micro-batch, as they show: two all-reduce-sized exchanges in
    forward, two in backward, two more in a full recompute's replay (Megatron, see the module
    docstring). With tp_comm_overlap each is split into tp chunks and overlapped with the GEMMs beside
    it (forward GEMMs; the backward's dgrad and wgrad, twice as long), at the SM cost of
    overlap.decomposed_exposed_seconds."""
    replays = 1 if plan.recompute == "full" else 0
    if not plan.tp_comm_overlap or plan.tp <= 1:
        return (4 + 2 * replays) * ar
    share, g = eff.collective_sm_share, lt.gemm_forward_seconds
    forward = overlap.decomposed_exposed_seconds(2 * ar, g, plan.tp, share)
    backward = overlap.decomposed_exposed_seconds(2 * ar, 2 * g, plan.tp, share)
    return (1 + replays) * forward + backward


def offloaded_layers(plan: Plan, layers: int) -> int:
    """Layers of a stage whose activations go to host: the plan's count, keeping at least one on GPU."""
    return max(0, min(plan.offload_layers, layers - 1))


def offload_seconds(model: Model, cluster: Cluster, plan: Plan, lt: compute.LayerTimes, layers: int) -> float:
    """Per micro-batch, the part of the activation copies to host (forward) and back (backward) that
    the layer computing beside them does not hide: copy engines move them on their own stream
    (Megatron's CPU offload context), so a layer's copy overlaps the next layer's compute."""
    n = offloaded_layers(plan, layers)
    if n == 0:
        return 0.0
    per_layer = memory.layer_activation_bytes(model, plan.micro_batch_size, plan.tp, plan.sequence_parallel,
                                              plan.recompute, plan.flash_attention, ACTIVATION_BYTES[plan.precision])
    copy = per_layer / cluster.host_link_bytes_per_second
    return n * (max(0.0, copy - lt.forward_seconds) + max(0.0, copy - lt.backward_seconds))
