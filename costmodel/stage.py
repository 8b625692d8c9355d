"""Per-pipeline-stage cost: seconds per micro-batch and bytes held, for one GPU of that stage.

Combines compute.py (layer kernels), comm.py (TP collectives and PP p2p), memory.py. TP traffic
per layer follows Megatron-LM (Shoeybi et al. 2019, Sec 3, Fig. 4): two AllReduces of the b*s*h
activations in forward (after attention and after the MLP) and two in backward; with sequence
parallel each becomes a ReduceScatter + AllGather pair of the same ring cost (Korthikanti
Sec 4.2.2); a full-recompute forward replay repeats the forward two. Pipeline p2p uses the
scatter/gather optimisation (Narayanan et al. 2021 Sec 4.1): each TP rank sends 1/t of the
boundary activation, so every micro-batch and model chunk costs one send forward and one back.
An MoE layer's routed MLP does no TP collective (its tokens stay sequence-parallel; Megatron-core
MoE with the alltoall dispatcher), only its shared experts do; its expert-parallel exchanges are
`ep_layer_seconds`. Context parallelism keeps s/cp of each sequence on a GPU, so every
activation-sized transfer shrinks by cp; its K/V exchange is costmodel/context.py.

Layers differ by kind (dense or MoE MLP, global or local attention); a stage is costed as a
LayerMix, (representative layer index, count) per kind, the representative being the model's first
layer of that kind. Under block recompute (Plan.recompute_layers) its layers are two such mixes, those
that recompute and those that do not (recompute_parts).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from . import compute, context, lowp, memory, moe, overlap, pipeline, topology
from .comm import alltoall_seconds, hierarchical_allgather_seconds, hierarchical_allreduce_seconds, p2p_seconds
from .flops import (
    embedding_parameters,
    expert_parameters,
    layer_representatives,
    parameters_per_layer,
    tp_replicated_parameters,
)
from .layer import LayerTimes, layer_times
from .types import Cluster, Efficiency, Model, Plan, plan_with

# Bytes per activation element: the low precisions keep bf16 activations.
ACTIVATION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 2, "mxfp8": 2, "mxfp4": 2, "nvfp4": 2}


LayerMix = tuple  # ((representative layer index, count), ...)


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
    ep_comm_seconds: float = 0.0  # expert-parallel token exchanges
    moe_sync_seconds: float = 0.0  # MoE layers waiting on the host for their token counts (moe_sync_seconds)
    cp_comm_seconds: float = 0.0  # context-parallel K/V exchanges that attention does not hide
    # Per micro-batch and chunk: the p2p exchange the steady state hides (exposed_p2p_seconds) but a flush's
    # fill and drain wait for (step.pipeline_parts, pipeline.fill_drain_hops).
    pp_hidden_seconds: float = 0.0
    # Under block recompute (Plan.recompute_layers), the layers replayed and their (all, routed-expert)
    # parameters on one GPU (mix_params; 0 without bytes); None: the plan's recompute takes every layer alike.
    replayed: LayerMix | None = None
    replayed_params: tuple[float, float] = (0.0, 0.0)
    expert_params: float = 0.0  # of `params`, the routed experts' (synced over expert-DP)
    layer_params: float = 0.0  # of `params`, the transformer layers'
    mix: LayerMix = ()
    # of `params`, (all, routed-expert) of the layers kept 16-bit under a low precision (sixteen_bit_params)
    sixteen_bit_params: tuple[float, float] = (0.0, 0.0)

    @property
    def microbatch_seconds(self) -> float:
        return (self.compute_seconds + self.recompute_seconds + self.tp_comm_seconds + self.pp_comm_seconds
                + self.offload_seconds + self.ep_comm_seconds + self.moe_sync_seconds + self.cp_comm_seconds)


def local_model(model: Model, plan: Plan) -> Model:
    """The model as one GPU sees its sequences under context parallelism: s/cp tokens each."""
    return _model_at_cp(model, plan.cp) if plan.cp > 1 else model


@lru_cache(maxsize=1024)
def _model_at_cp(model: Model, cp: int) -> Model:
    return replace(model, seq_length=model.seq_length // cp)


def layer_mix(model: Model, indices) -> LayerMix:
    """The LayerMix of the layers `indices`."""
    reps = layer_representatives(model)
    counts: dict[int, int] = {}
    for i in indices:
        counts[reps[i]] = counts.get(reps[i], 0) + 1
    return tuple(sorted(counts.items()))


def as_mix(model: Model, layers) -> LayerMix:
    """A LayerMix as given, or `layers` layers of a model whose layers are all alike."""
    if isinstance(layers, tuple):
        return layers
    assert len(set(layer_representatives(model))) <= 1, "a model with several layer kinds needs a LayerMix"
    return ((0, layers),) if layers else ()


def mix_layers(mix: LayerMix) -> int:
    return sum(n for _, n in mix)


def recompute_parts(model: Model, plan: Plan, mix: LayerMix, stage: int) -> tuple[tuple[Plan, LayerMix], ...]:
    """The stage's layers as (plan, LayerMix) parts that each recompute alike: the whole mix under the plan, or
    under block recompute (Plan.recompute_layers) the layers it replays (pipeline.recomputed_layer_indices)
    under the plan, then the others under the plan without recompute. Only layer terms read the parts; the
    stage's own (logits, embedding, p2p) read the plan, and its MTP layers mtp_plan."""
    if not plan.recompute_layers:
        return ((plan, mix),)
    replayed, kept = _split_mix(model, pipeline.chunk_layers(model, plan), plan.pp, plan.vpp, plan.recompute_layers,
                                mix, stage)
    return ((plan, replayed), (_without_recompute(plan), kept))


def mtp_plan(plan: Plan) -> Plan:
    """The plan the MTP layers run under: the plan's own, but with no recompute under block recompute, which
    Megatron-core skips for them (multi_token_prediction.py, MultiTokenPredictionLayer: recompute_method
    "block" "is not supported for MTP yet. Skipping recompute."; uniform recomputes them)."""
    return _without_recompute(plan) if plan.recompute_layers else plan


def _without_recompute(plan: Plan) -> Plan:
    return plan_with(plan, {"recompute": "none", "recompute_layers": 0})


@lru_cache(maxsize=16384)  # the search asks per stage class and knob combination
def _split_mix(model: Model, chunks: tuple[int, ...], pp: int, vpp: int, per_chunk: int, mix: LayerMix,
               stage: int) -> tuple[LayerMix, LayerMix]:
    """(replayed, kept) LayerMix of rank `stage`'s `mix` under block recompute of `per_chunk` layers."""
    replayed = _replayed_mixes(model, chunks, pp, vpp, per_chunk)[stage]
    left = dict(mix)
    for rep, n in replayed:
        left[rep] -= n
    assert min(left.values(), default=0) >= 0, "the stage's LayerMix must hold the layers its chunks replay"
    return replayed, tuple((rep, n) for rep, n in sorted(left.items()) if n)


def replayed_mix(model: Model, plan: Plan, stage: int) -> LayerMix:
    """The LayerMix of the layers pipeline rank `stage` replays under block recompute (Plan.recompute_layers)."""
    return _replayed_mixes(model, pipeline.chunk_layers(model, plan), plan.pp, plan.vpp, plan.recompute_layers)[stage]


@lru_cache(maxsize=4096)
def _replayed_mixes(model: Model, chunks: tuple[int, ...], pp: int, vpp: int, per_chunk: int) -> tuple[LayerMix, ...]:
    return tuple(layer_mix(model, rank) for rank in pipeline.recomputed_layer_indices(chunks, pp, vpp, per_chunk))


def tp_allreduce_seconds(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> float:
    """One TP AllReduce (or RS+AG pair) of a micro-batch's b*s*h activations."""
    if plan.tp <= 1:
        return 0.0
    tokens = plan.micro_batch_size * local_model(model, plan).seq_length
    size = tokens * model.hidden_size * ACTIVATION_BYTES[plan.precision]
    per_domain = topology.tp_ranks_per_domain(plan, cluster)
    fast, slow = topology.nvlink_link(cluster, eff, per_domain), topology.network_link(cluster, eff)
    return hierarchical_allreduce_seconds(size, plan.tp, per_domain, fast, slow)


def pp_p2p_seconds(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> float:
    """Send + receive-gradient of one boundary activation for one micro-batch and chunk."""
    if plan.pp <= 1:
        return 0.0
    tokens = plan.micro_batch_size * local_model(model, plan).seq_length
    size = tokens * model.hidden_size * ACTIVATION_BYTES[plan.precision] / plan.tp
    same = topology.pp_neighbours_share_domain(plan, cluster)
    link = topology.nvlink_link(cluster, eff, 2) if same else topology.network_link(cluster, eff)
    return 2.0 * p2p_seconds(size, link)


def exposed_p2p_seconds(plan: Plan, p2p_seconds: float, chunk_compute_seconds: float) -> float:
    """Of a chunk's p2p exchange (pp_p2p_seconds), the seconds on the critical path. Megatron-LM's interleaved
    schedule with --overlap-p2p-communication posts a chunk's sends/receives while the next chunk computes, so
    only what exceeds that compute shows in the steady state (the rest is waited for in the flush's fill
    and drain: StageCost.pp_hidden_seconds, step.pipeline_parts); the plain 1F1B schedule blocks on each
    exchange."""
    if plan.overlap_pp_comm and plan.vpp > 1:
        return max(0.0, p2p_seconds - chunk_compute_seconds)
    return p2p_seconds


def sixteen_bit_indices(model: Model, plan: Plan, stage: int) -> tuple[int, ...]:
    """The layers of pipeline rank `stage` kept 16-bit under a low precision: Megatron's --first-last-layers-bf16
    counts the first bf16_layers_start and the last bf16_layers_end of the whole stack, so each rank keeps those
    of its own layers (pipeline.stage_layer_indices: its model chunks, in Megatron's layer order) that fall among
    them: 32 of 32 layers on 4 ranks are 8 on each."""
    held = pipeline.stage_layer_indices(pipeline.chunk_layers(model, plan), plan.pp, plan.vpp)[stage]
    last = model.num_layers - plan.bf16_layers_end
    return tuple(i for i in held if i < plan.bf16_layers_start or i >= last)


def sixteen_bit_mix(model: Model, plan: Plan, stage: int) -> LayerMix:
    """The LayerMix of sixteen_bit_indices: each kept layer of its own kind (a MoE model's first layers may be
    dense, Llama 4's alternate)."""
    return layer_mix(model, sixteen_bit_indices(model, plan, stage))


def keeps_sixteen_bit_layers(plan: Plan) -> bool:
    return lowp.is_low(plan.precision) and bool(plan.bf16_layers_start or plan.bf16_layers_end)


def sixteen_bit_params(model: Model, plan: Plan, stage: int) -> tuple[float, float]:
    """(all, routed-expert) parameters on one GPU of the layers rank `stage` keeps 16-bit under a low precision
    (sixteen_bit_mix). Megatron builds them outside the low-precision contexts (fp8_utils.py get_fp8_context and
    fp8_model_init return nullcontext for them: transformer_block.py @d98e8a64), so they keep 16-bit states and
    no quantized copies (step.model_states)."""
    if not keeps_sixteen_bit_layers(plan):
        return 0.0, 0.0
    return mix_params(model, plan, sixteen_bit_mix(model, plan, stage))


def sixteen_bit_activation_bytes(model: Model, plan: Plan, stage: int, imbalance: float = 1.0) -> float:
    """Per micro-batch, what the layers rank `stage` keeps 16-bit hold for backward beyond the same layers in the
    low precision: their saved GEMM inputs in 16 bits, not quantized (saved_gemm_input_bytes). A layer the rank
    replays under block recompute keeps its input alone either way. Its largest layer replayed whole under full
    recompute (mix_activation_terms' rematerialised) is taken in the low precision."""
    if not keeps_sixteen_bit_layers(plan):
        return 0.0
    chunks, reps = pipeline.chunk_layers(model, plan), layer_representatives(model)
    wide = replace(plan, precision=lowp.sixteen_bit(plan.precision))
    replayed = (set(pipeline.recomputed_layer_indices(chunks, plan.pp, plan.vpp, plan.recompute_layers)[stage])
                if plan.recompute_layers else None)
    total = 0.0
    for i in sixteen_bit_indices(model, plan, stage):
        rep = reps[i]
        mode = plan.recompute if replayed is None or i in replayed else "none"
        total += sum(b for _, b in cached_layer_terms(model, rep, *activation_args(wide, mode, imbalance)))
        total -= sum(b for _, b in cached_layer_terms(model, rep, *activation_args(plan, mode, imbalance)))
    return total


def layer_params_split(model: Model, plan: Plan, index: int) -> tuple[float, float]:
    """(all, routed-expert) parameters of layer `index` on one GPU: attention, dense MLP and shared
    experts split over TP, the norms, router and MLA down projections whole on every TP rank
    (flops.tp_replicated_parameters); routed experts over ep x etp."""
    moe = model.is_moe_layer(index)
    whole = tp_replicated_parameters(model, moe)
    if not moe:
        return (parameters_per_layer(model) - whole) / plan.tp + whole, 0.0
    routed = model.moe.num_experts * expert_parameters(model)
    experts = routed / (plan.ep * plan.etp)
    return (parameters_per_layer(model, True) - routed - whole) / plan.tp + whole + experts, experts


def mtp_params_split(model: Model, plan: Plan) -> tuple[float, float]:
    """The multi-token prediction modules on the last stage: (all, routed-expert) parameters on one GPU,
    their layers plus the 2h x h projection (embedding and output layer are shared)."""
    if not model.mtp_layers:
        return 0.0, 0.0
    total, experts = layer_params_split(model, plan, mtp_representative(model))
    proj = 2 * model.hidden_size * model.hidden_size / plan.tp
    return model.mtp_layers * (total + proj), model.mtp_layers * experts


def mtp_representative(model: Model) -> int:
    """The layer an MTP module's transformer layer costs like: an MoE layer when the model has them."""
    if model.moe is not None:
        return next(i for i in range(model.num_layers) if model.is_moe_layer(i))
    return 0


def stage_params(model: Model, plan: Plan, layers, stage: int) -> tuple[float, float, float]:
    """(all, routed-expert, transformer-layer) parameters on one GPU of `stage`: its layers, plus the
    embedding on the first stage and the output layer on the last (Megatron keeps a tied copy there too
    when pp > 1, and an embedding copy for the MTP modules there), plus the MTP modules, whose
    transformer layers count among the stage's transformer-layer parameters, and the final norm where
    final_norm_stage puts it. The embedding and output layer are split over TP (vocabulary-parallel),
    the final norm is not."""
    total, experts = mix_params(model, plan, as_mix(model, layers))
    in_layers = total
    edges = embedding_parameters(model) if stage == 0 else 0.0
    if stage == plan.pp - 1:
        if not (model.tie_embeddings and plan.pp == 1):
            edges += embedding_parameters(model)
        if model.mtp_layers and plan.pp > 1:
            edges += embedding_parameters(model)
        t, e = mtp_params_split(model, plan)
        total, experts, in_layers = total + t, experts + e, in_layers + t
    if stage == final_norm_stage(model, plan):
        total += model.hidden_size  # whole on every TP rank
    return total + edges / plan.tp, experts, in_layers


def final_norm_stage(model: Model, plan: Plan) -> int:
    """The pipeline rank holding the final norm (Megatron-core transformer_block.py
    has_final_layernorm_in_this_stage): the last one, or with MTP modules the one holding the last transformer
    layer, which a layout can put before a last chunk of the MTP block and the loss alone."""
    if not model.mtp_layers:
        return plan.pp - 1
    return max(i for i, n in enumerate(pipeline.chunk_layers(model, plan)) if n) % plan.pp


@lru_cache(maxsize=256)
def _kv_repeated(model: Model) -> Model:
    return replace(model, num_kv_heads=model.num_attention_heads)


def activation_args(plan: Plan, recompute: str, imbalance: float) -> tuple:
    """The plan's fields a layer's kept activations read, in the order mix_activation_terms and
    cached_layer_terms take them after the model and the layers: micro-batch, tp, sequence parallel,
    `recompute`, flash attention, element bytes, cp, ep, etp, `imbalance` (Efficiency.moe_routing_imbalance:
    the busiest expert rank's routed rows), recompute modules, bytes of the saved GEMM inputs, K/V repeated to
    the query heads (Plan.repeat_kv, saved at that width), sequence parallel's inputs saved gathered, the
    projections (which matmul outputs per-op recompute keeps), the experts' activation prologue (what its
    clamps keep) and the CP exchange (what attention keeps for it: memory.cp_exchange_terms)."""
    return (plan.micro_batch_size, plan.tp, plan.sequence_parallel, recompute, plan.flash_attention,
            ACTIVATION_BYTES[plan.precision], plan.cp, plan.ep, plan.etp, imbalance, plan.recompute_modules,
            saved_gemm_input_bytes(plan), plan.repeat_kv, plan.sp_gathered, plan.projections, plan.moe_act_prologue,
            plan.cp_comm if plan.cp > 1 else "p2p")


def layer_activation_terms(model: Model, plan: Plan, rep: int, recompute: str, imbalance: float = 1.0) -> dict:
    """memory.layer_activation_terms of layer `rep` under the plan with `recompute`, by tensor."""
    return dict(cached_layer_terms(model, rep, *activation_args(plan, recompute, imbalance)))


@lru_cache(maxsize=65536)  # the search asks for it per layout (MTP layers, offloaded modules)
def cached_layer_terms(model: Model, rep: int, batch: int, tp: int, sequence_parallel: bool, recompute: str,
                       flash: bool, element_bytes: int, cp: int, ep: int, etp: int, imbalance: float,
                       modules: tuple[str, ...], gemm_input_bytes: float, repeat_kv: bool,
                       sp_gathered: bool, projections: str, prologue: bool,
                       cp_comm: str) -> tuple[tuple[str, float], ...]:
    """memory.layer_activation_terms from activation_args' fields."""
    if repeat_kv and not model.mla:
        model = _kv_repeated(model)
    return memory.layer_activation_terms(model, batch, tp, sequence_parallel, recompute, flash, element_bytes, rep,
                                         cp, moe.ExpertLayout(ep, etp, imbalance, prologue), modules,
                                         gemm_input_bytes, sp_gathered, projections, cp_comm)


def layer_activations(model: Model, plan: Plan, rep: int, recompute: str, imbalance: float = 1.0) -> float:
    """memory.layer_activation_bytes of layer `rep` under the plan with `recompute` (its
    layer_activation_terms summed)."""
    held, _ = mix_activation_terms(model, ((rep, 1),), *activation_args(plan, recompute, imbalance))
    return held


def layer_offloaded_bytes(model: Model, plan: Plan, rep: int, imbalance: float = 1.0) -> float:
    """What layer `rep`'s offloaded modules (Plan.offload_modules) move to host per micro-batch: the input of
    each (Megatron-LM d98e8a64, docs/user-guide/features/fine_grained_activation_offloading.md, "each module
    offloads its input activation"), the layer_activation_terms of that name, so nothing recompute already
    drops is moved (the norm's output under layernorm, the routed rows under moe). Megatron skips tensors under
    2^20 elements (min_offloaded_tensor_size): not modelled, every term is larger at the shapes people train."""
    if not plan.offload_modules:
        return 0.0
    terms = layer_activation_terms(model, plan, rep, plan.recompute, imbalance)
    return sum(terms.get(m, 0.0) for m in plan.offload_modules)


def saved_gemm_input_bytes(plan: Plan) -> float:
    """Bytes per element of the GEMM inputs a layer keeps for backward: the quantized copy under a
    low precision with Transformer Engine (cached casts), 16-bit otherwise (torchao's Float8Linear
    keeps its high-precision input)."""
    if lowp.is_low(plan.precision) and lowp.cached_casts(plan.weight_casts):
        return lowp.quantized_bytes_per_element(plan.precision, plan.fp8_recipe)
    return 2.0


@lru_cache(maxsize=65536)  # the search asks for the same layer mix under many layouts
def mix_activation_terms(model: Model, mix: LayerMix, batch: int, tp: int, sequence_parallel: bool, recompute: str,
                         flash: bool, element_bytes: int, cp: int, ep: int, etp: int, imbalance: float,
                         modules: tuple[str, ...], gemm_input_bytes: float, repeat_kv: bool,
                         sp_gathered: bool, projections: str, prologue: bool, cp_comm: str) -> tuple[float, float]:
    """(bytes one micro-batch leaves on the mix's layers, the largest layer re-materialised whole during
    backward under full recompute, else 0): layer_activations summed over the mix, and its max with
    nothing recomputed; the fields after the mix are activation_args'."""
    def one(rep: int, mode: str) -> float:  # memory.layer_activation_bytes: the terms summed in their order
        terms = cached_layer_terms(model, rep, batch, tp, sequence_parallel, mode, flash, element_bytes, cp, ep, etp,
                                   imbalance, modules, gemm_input_bytes, repeat_kv, sp_gathered, projections,
                                   prologue, cp_comm)
        return sum(b for _, b in terms)

    held = sum(n * one(rep, recompute) for rep, n in mix)
    rematerialised = max(one(rep, "none") for rep, _ in mix) if recompute == "full" else 0.0
    return held, rematerialised


def stage_activation_bytes(model: Model, plan: Plan, layers, stage: int, imbalance: float = 1.0) -> float:
    """Activation bytes held at the stage's peak (in-flight micro-batches times its layers), on the
    busiest expert rank when routing is imbalanced."""
    mix = as_mix(model, layers)
    if not mix:
        return 0.0
    if plan.recompute_layers:  # block recompute: its replayed layers' terms and the others'
        held, rematerialised = 0.0, 0.0
        for part, layers in recompute_parts(model, plan, mix, stage):
            h, r = mix_activation_terms(model, layers, *activation_args(part, part.recompute, imbalance))
            held, rematerialised = held + h, max(rematerialised, r)
    else:
        held, rematerialised = mix_activation_terms(model, mix, *activation_args(plan, plan.recompute, imbalance))
    held += sixteen_bit_activation_bytes(model, plan, stage, imbalance)
    inflight = memory.inflight_microbatches(plan.pp, plan.vpp, plan.num_microbatches, stage, int(plan.ep_overlap))
    count = mix_layers(mix)
    offloaded = offloaded_layers(plan, count)
    in_flight = 0.0
    if plan.offload_modules:  # the offloaded modules' inputs are on host, one layer's in flight
        moved = {rep: layer_offloaded_bytes(model, plan, rep, imbalance) for rep, _ in mix}
        held -= sum(n * moved[rep] for rep, n in mix)
        in_flight = max(moved.values())
    total = inflight * held * (count - offloaded) / count + (held / count if offloaded else 0.0)  # one copy in flight
    total += in_flight
    total += rematerialised
    if plan.cp > 1:
        total += context.exchange_buffer_bytes(model, plan)  # one layer's attention at a time
    buffers = memory.pipeline_buffer_units(plan.pp, plan.vpp, plan.num_microbatches, stage, inflight,
                                           plan.pipeline_buffers)
    if buffers:
        total += buffers * boundary_activation_bytes(model, plan)
    if stage == 0 or stage == plan.pp - 1:
        total += edge_stage_activation_bytes(model, plan, stage, inflight, imbalance)
    return total


def edge_stage_activation_bytes(model: Model, plan: Plan, stage: int, inflight: float, imbalance: float) -> float:
    """What the first stage (embedding output masks) and the last (loss inputs, logits, MTP layers)
    hold besides their transformer layers."""
    local, b, t = local_model(model, plan), plan.micro_batch_size, plan.tp
    total = 0.0
    if stage == 0:
        total += memory.first_stage_extra_bytes(local, b, t, inflight)
    if stage == plan.pp - 1:
        total += memory.last_stage_extra_bytes(local, b, t, plan.cross_entropy, ACTIVATION_BYTES[plan.precision])
        if plan.pp > 1:
            total += memory.last_stage_kept_logits_bytes(local, b, t, plan.num_microbatches, plan.pipeline_buffers,
                                                         ACTIVATION_BYTES[plan.precision])
        if model.mtp_layers:
            total += model.mtp_layers * (layer_activations(model, plan, mtp_representative(model),
                                                           mtp_plan(plan).recompute,
                                                           imbalance)
                                         + memory.last_stage_extra_bytes(local, b, t, plan.cross_entropy,
                                                                         ACTIVATION_BYTES[plan.precision]))
    return total


def boundary_activation_bytes(model: Model, plan: Plan) -> float:
    """One micro-batch's stage output on one GPU: b x s/cp x h, split over tp under sequence parallel."""
    tokens = plan.micro_batch_size * local_model(model, plan).seq_length
    return tokens * model.hidden_size * ACTIVATION_BYTES[plan.precision] / (plan.tp if plan.sequence_parallel else 1)


def expert_layout(plan: Plan, imbalance: float = 1.0) -> moe.ExpertLayout:
    return moe.ExpertLayout(plan.ep, plan.etp, imbalance, plan.moe_act_prologue)


@dataclass(frozen=True)
class StageKernels:
    """What every stage of one plan shares; step.stage_costs computes it once per plan.

    Reads only plan.tp, cp, ep, etp, cp_comm, micro_batch_size, sequence_parallel, flash_attention,
    fused_elementwise, precision and its recipe and casts, fp8_attention, attention_kernel, ep_dispatch,
    ep_dispatch_dtype, projections, rope_fusion and moe_act_prologue (and the cluster), so the plan search
    (planner/search/tables.py) reuses one per such combination."""

    eff: Efficiency  # with the cluster's matmul_efficiency_scale applied
    layers: dict  # representative layer index -> LayerTimes
    logits_seconds: float
    tp_allreduce_seconds: float
    layers_16bit: dict  # representative index -> LayerTimes in 16-bit, for layers kept 16-bit
    ep_pass_seconds: float = 0.0  # one MoE layer's expert-parallel exchanges in one pass (forward or backward)
    cp_seconds: dict | None = None  # representative index -> (forward, backward) exposed CP exchanges

    @property
    def layer(self) -> LayerTimes:
        """The first layer's times (a dense model's only kind)."""
        return self.layers[min(self.layers)]


def stage_kernels(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency) -> StageKernels:
    gpu, b, t = cluster.gpu, plan.micro_batch_size, plan.tp
    eff = compute.scale_matmul_efficiency(eff, cluster.matmul_efficiency_scale)
    layout = expert_layout(plan, eff.moe_routing_imbalance)

    def times(precision: str, rep: int) -> LayerTimes:
        return layer_times(model, b, t, plan.sequence_parallel, plan.flash_attention, gpu, precision, eff,
                           plan.fused_elementwise, plan.fp8_recipe, plan.weight_casts, rep, plan.cp, layout,
                           plan.fp8_attention and lowp.is_low(precision), plan.attention_kernel,
                           plan.projections, plan.rope_fusion, context.kernel_span_divisor(plan))

    reps = sorted(set(layer_representatives(model)) | ({mtp_representative(model)} if model.mtp_layers else set()))
    layers = {rep: times(plan.precision, rep) for rep in reps}
    sixteen = {}
    if keeps_sixteen_bit_layers(plan):
        kinds = layer_representatives(model)  # the kinds of the stack's first and last layers
        kept = kinds[:plan.bf16_layers_start] + kinds[model.num_layers - plan.bf16_layers_end:]
        sixteen = {rep: times(lowp.sixteen_bit(plan.precision), rep) for rep in set(kept)}
    local = local_model(model, plan)
    logits = compute.logits_seconds(local, b, t, gpu, plan.precision, eff, plan.cross_entropy)
    cp = {rep: context.layer_exposed_seconds(model, cluster, plan, layers[rep], eff) for rep in reps}
    return StageKernels(eff, layers, logits, tp_allreduce_seconds(model, cluster, plan, eff), sixteen,
                        ep_pass_seconds(model, cluster, plan, eff, layout), cp)


def ep_pass_seconds(model: Model, cluster: Cluster, plan: Plan, eff: Efficiency, layout: moe.ExpertLayout) -> float:
    """One MoE layer's expert-parallel exchanges in one pass of one micro-batch: the dispatch and
    combine all-to-alls (forward; their mirror in backward, again in a full recompute's replay), and
    with etp > 1 the routed rows' all-gather over the etp ranks before the experts and reduce-scatter
    after. Priced on the links the EP group spans (topology.ep_ranks_per_domain); not overlapped. Each
    pass sends one exchange towards the experts (the dispatch forward, the combine's gradient backward),
    in Plan.ep_dispatch_dtype, and one back from them in bf16; the etp exchanges stay bf16."""
    if model.moe is None or plan.ep * plan.etp <= 1:
        return 0.0
    tokens = plan.micro_batch_size * local_model(model, plan).seq_length
    per_domain = topology.ep_ranks_per_domain(plan, cluster)
    fast, slow = topology.nvlink_link(cluster, eff, per_domain), topology.network_link(cluster, eff)

    def a2a(element_bytes: float) -> float:
        if plan.ep_dispatch == "deepep" and plan.ep > 1:
            latency = fast.latency_seconds + (slow.latency_seconds if per_domain < plan.ep else 0)
            return moe.deduplicated_dispatch_seconds(model, tokens, plan.tp, layout, per_domain,
                                                     fast.bandwidth_bytes_per_second, slow.bandwidth_bytes_per_second,
                                                     latency, element_bytes)
        return alltoall_seconds(moe.dispatch_bytes(model, tokens, plan.tp, layout, element_bytes), plan.ep, per_domain,
                                fast, slow)

    etp_domain = topology.ranks_per_domain(plan.etp, 1, cluster)
    gather = hierarchical_allgather_seconds(moe.etp_gather_bytes(model, tokens, plan.tp, layout), plan.etp,
                                            etp_domain, topology.nvlink_link(cluster, eff, etp_domain), slow)
    return a2a(dispatch_element_bytes(plan)) + a2a(2.0) + 2 * gather


def dispatch_element_bytes(plan: Plan) -> float:
    """Bytes per element of the exchanges towards the experts (Plan.ep_dispatch_dtype): 2 in bf16, or an
    MXFP8 element and its share of the scales (1 + 1/32, OCP Microscaling spec v1.0; lowp.SCALE_BYTES)."""
    return 2.0 if plan.ep_dispatch_dtype == "bf16" else lowp.quantized_bytes_per_element(plan.ep_dispatch_dtype)


def tp_exchanges(model: Model, rep: int) -> int:
    """All-reduce-sized TP exchanges of layer `rep` per forward: attention's and the MLP's (an MoE
    layer's routed experts do none; its shared experts do)."""
    if model.is_moe_layer(rep) and not model.moe.shared_ffn_hidden_size:
        return 1
    return 2


def replayed_tp_exchanges(model: Model, plan: Plan, rep: int) -> int:
    """Of layer `rep`'s forward TP exchanges (tp_exchanges), how many its recompute runs again: all
    under full recompute; under selective, the MLP's when a module that holds it replays (a dense
    layer's mlp, an MoE layer's moe or shared_experts when it has shared experts: Megatron checkpoints
    the module's forward, its sequence-parallel gather and reduce-scatter included)."""
    exchanges = tp_exchanges(model, rep)
    if plan.recompute == "full":
        return exchanges
    if plan.recompute != "selective" or exchanges < 2:
        return 0
    holders = {"mlp"} if not model.is_moe_layer(rep) else {"moe", "shared_experts"}
    return 1 if holders & set(plan.replayed_modules) else 0


def moe_forward_passes(plan: Plan) -> int:
    """Forward passes of an MoE layer's token exchange per micro-batch: one, and one more under full
    recompute or with the moe module replayed (moe_layer.py checkpoints route, dispatch, experts and
    combine together, Megatron-LM d98e8a64)."""
    return context.passes(plan) + (1 if "moe" in plan.replayed_modules else 0)


def stage_cost(model: Model, cluster: Cluster, plan: Plan, layers, stage: int, eff: Efficiency,
               kernels: StageKernels | None = None, with_bytes: bool = True) -> StageCost:
    """Seconds per micro-batch and bytes for one GPU of pipeline stage `stage` holding `layers` (a
    count for a model whose layers are alike, else a LayerMix). `with_bytes` False leaves the
    parameters and activation bytes 0 (no time part reads them): what a bound on the flush needs."""
    k = kernels or stage_kernels(model, cluster, plan, eff)
    eff, mix = k.eff, as_mix(model, layers)
    count = mix_layers(mix)
    compute_s = stage_compute_seconds(model, plan, k, mix, stage)
    parts = recompute_parts(model, plan, mix, stage)
    replay = parts_replay_seconds(k, parts)
    tp = sum(n * layer_tp_comm_seconds(part, k.layers[r], k.tp_allreduce_seconds, eff, tp_exchanges(model, r),
                                       replayed_tp_exchanges(model, part, r))
             for part, layers in parts for r, n in layers)
    edge_ar = (stage == 0) + (stage == plan.pp - 1)  # vocab-parallel embedding / output layer
    moe_layers = [sum(n for r, n in layers if model.is_moe_layer(r)) for _, layers in parts]
    if stage == plan.pp - 1 and model.moe is not None:
        moe_layers[-1] += model.mtp_layers  # the part without recompute under block recompute: mtp_plan's
    p2p = pp_p2p_seconds(model, cluster, plan, eff)
    exposed = exposed_p2p_seconds(plan, p2p, compute_s / plan.vpp)
    params, experts, in_layers = stage_params(model, plan, mix, stage) if with_bytes else (0.0, 0.0, 0.0)
    activations = stage_activation_bytes(model, plan, mix, stage, eff.moe_routing_imbalance) if with_bytes else 0.0
    return StageCost(
        layers=count,
        compute_seconds=compute_s,
        recompute_seconds=replay,
        tp_comm_seconds=tp + edge_ar * k.tp_allreduce_seconds,
        pp_comm_seconds=plan.vpp * exposed,
        pp_hidden_seconds=p2p - exposed,
        params=params,
        activation_bytes=activations,
        offload_seconds=offload_seconds(model, cluster, plan, k, mix),
        ep_comm_seconds=sum(ep_exposed_seconds(model, part, k, eff, layers, n)
                            for (part, layers), n in zip(parts, moe_layers)),
        moe_sync_seconds=sum(moe_sync_seconds(part, eff, n) for (part, _), n in zip(parts, moe_layers)),
        cp_comm_seconds=sum(n * cp_layer_seconds(part, k, r) for part, layers in parts for r, n in layers),
        replayed=parts[0][1] if plan.recompute_layers else None,
        replayed_params=mix_params(model, plan, parts[0][1]) if plan.recompute_layers and with_bytes else (0.0, 0.0),
        expert_params=experts,
        layer_params=in_layers,
        mix=mix,
        sixteen_bit_params=sixteen_bit_params(model, plan, stage) if with_bytes else (0.0, 0.0),
    )


def mix_params(model: Model, plan: Plan, mix: LayerMix) -> tuple[float, float]:
    """(all, routed-expert) parameters on one GPU of the layers `mix` (layer_params_split summed)."""
    total = experts = 0.0
    for rep, n in mix:
        t, e = layer_params_split(model, plan, rep)
        total, experts = total + n * t, experts + n * e
    return total, experts


def stage_compute_seconds(model: Model, plan: Plan, k: StageKernels, mix: LayerMix, stage: int) -> float:
    """StageCost.compute_seconds: the stage's layers forward and backward with the per-layer overhead,
    the extra of the layers kept 16-bit, and on the last stage the logits and the MTP layers. Of the
    plan's recompute, overlap and communication settings it reads only the MTP layers' replay, which
    recompute "none" makes 0 (the search's compute-only bound, planner/search/bounds.py, uses that), and
    of its CUDA graphs the whole-iteration and per-layer ones (layer_overhead_seconds), which the search never
    sets."""
    overhead = layer_overhead_seconds(plan, k.eff)
    compute_s = sum(n * (k.layers[r].forward_seconds + k.layers[r].backward_seconds + overhead) for r, n in mix)
    compute_s += sixteen_bit_delta(model, plan, k, stage)
    if stage == plan.pp - 1:
        compute_s += k.logits_seconds * (1 + model.mtp_layers)
        compute_s += mtp_layer_seconds(model, plan, k, k.eff)
    return compute_s


def ep_exposed_seconds(model: Model, plan: Plan, k: StageKernels, eff: Efficiency, mix: LayerMix,
                       moe_layers: int) -> float:
    """The stage's expert-parallel exchanges per micro-batch that show: all of them, or with ep_overlap
    (Megatron's 1F1B A2A overlap, which runs one micro-batch's dispatch and combine beside another's
    forward and backward; a_to_a_overlap in megatron/core/pipeline_parallel) only what the MoE layers'
    compute (forward, backward and replay) cannot cover, plus its SM cost (overlap.py); each dispatch and
    combine, launched while the other micro-batch's kernels hold every SM, starts only when the kernel then
    running ends (layer.kernel_residual_seconds; overlap.beside_seconds' wait). The schedule pairs
    one micro-batch's backward with the next one's forward (combined_1f1b.py, Megatron-LM d98e8a64), so a
    pipeline rank with a single micro-batch hides nothing. Not modelled: with m >= 2 the first forward
    and the last backward run alone too, so one micro-batch's exchanges in m show, which this hides
    (optimistic by at most total / m per micro-batch; priced and scored 2026-12-04, not shipped:
    validation/README.md, "The overlap's unpaired chunks")."""
    total = moe_layers * (moe_forward_passes(plan) + 1) * k.ep_pass_seconds
    if not plan.ep_overlap or total <= 0 or plan.num_microbatches <= 1:
        return total
    window = sum(n * (k.layers[r].forward_seconds + k.layers[r].backward_seconds + replay_seconds(plan, k.layers[r]))
                 for r, n in mix if model.is_moe_layer(r))
    launches = 2 * (moe_forward_passes(plan) + 1)  # a dispatch and a combine per pass
    waits = sum(n * launches * k.layers[r].kernel_residual_seconds for r, n in mix if model.is_moe_layer(r))
    return overlap.beside_seconds(total, window, eff.collective_sm_share, waits)


def moe_sync_seconds(plan: Plan, eff: Efficiency, moe_layers: int) -> float:
    """Per micro-batch, the stage's MoE layers waiting on the host: the fitted Efficiency.moe_host_sync_seconds
    each time one waits. The dispatcher waits per forward pass (host_synced_dispatch; moe_forward_passes: a
    replayed dispatch waits again; the backward reuses the forward's split sizes), and the activation's
    prologue once more per forward pass of the activation (activation_syncs). No token crosses a link in
    it, so it is not ep_comm (an MoE layer syncs at ep 1 too)."""
    waits = moe_forward_passes(plan) if host_synced_dispatch(plan) else 0
    return moe_layers * (waits + activation_syncs(plan)) * eff.moe_host_sync_seconds


def activation_syncs(plan: Plan) -> int:
    """Times per micro-batch an MoE layer's expert activation waits on the host (Plan.moe_act_prologue): once
    per forward pass of the activation, the replay of a recompute included (the whole layer's, the moe
    module's or the moe_act module's, which checkpoints the activation function with its prologue).
    Megatron-core's prologue makes its linear offset a GPU tensor with torch.tensor(value, device=...),
    which copies from pageable host memory without non_blocking: PyTorch's copy_kernel_cuda then calls
    memcpy_and_sync, a cudaMemcpyAsync followed by cudaStreamSynchronize (aten/src/ATen/native/cuda/Copy.cu,
    c10/cuda/CUDAFunctions.h), so the host waits for every kernel queued before it, as the all-to-all
    dispatcher's copy of its split sizes does; its cost is taken to be that wait's, the fitted
    moe_host_sync_seconds (no published row isolates it). Inside a captured graph PyTorch refuses the copy
    (an unpinned host tensor during capture), so a whole-iteration graph has none."""
    if not plan.moe_act_prologue or plan.full_iteration_graph:
        return 0
    replayed = {"moe", "moe_act"} & set(plan.replayed_modules)
    return context.passes(plan) + (1 if replayed else 0)


def host_synced_dispatch(plan: Plan) -> bool:
    """Whether each MoE layer waits for its token counts on the host. Megatron-core's dropless
    all-to-all dispatcher always does: the split sizes of its all-to-all (or, with one EP and TP
    rank, the tokens per local expert) must reach the CPU (token_dispatcher.py
    MoEAlltoAllTokenDispatcher.preprocess, sync point "before_ep_alltoall" / "before_finish"), and
    CUDA graphs of the router and preprocessing only move the copy earlier (cuda_dtoh_point). Only
    a dispatcher with fixed-size buffers (DeepEP / HybridEP, Plan.ep_dispatch "deepep") lets the
    graphs (Plan.moe_cuda_graphs) take the whole layer with no host round trip.
    Experts padded to a capacity (a capacity factor) skip the copy in Megatron-core (drop_and_pad:
    preprocess returns early, _maybe_dtoh_and_synchronize does nothing; core_v0.14.0), yet they are
    charged too: without it the twelve padded rows (validation/runs.yaml, 25.09 token drop) came out
    15-37% fast and the refit raised the MoE rows' MAPE from 9.5% to 10.1%, so the fitted
    Efficiency.moe_host_sync_seconds also stands for per-layer time those layers have as well (not
    identified; see validation/README.md). Under a whole-iteration graph nothing waits on the host, and
    padded layers lose that unidentified time with the wait: no published row tests that case.
    Without expert parallelism a stack whose grouped GEMMs take the token counts as a device tensor
    (Plan.expert_sizes_on_device: torchtitan's LocalTokenDispatcher sorts the tokens on the GPU and
    torch._grouped_mm reads the offsets there, models/common/token_dispatcher.py and moe.py @4f9e9a47) has
    nothing to copy; its all-to-all dispatcher does wait at ep > 1 (AllToAllTokenDispatcher: the split sizes'
    .tolist()). As under a whole-iteration graph, such a layer loses with the wait whatever unidentified per-layer
    time the fitted constant also stands for: every fitted MoE row runs ep >= 8, so no row tests that case
    (planner/analysis/coverage.py names the setting as never published)."""
    if plan.full_iteration_graph:  # nothing inside a captured graph can wait on the host
        return False
    if plan.ep == 1 and plan.expert_sizes_on_device:
        return False
    return not plan.moe_cuda_graphs or plan.ep_dispatch == "alltoall"


def cp_layer_seconds(plan: Plan, k: StageKernels, rep: int) -> float:
    """One layer's exposed CP exchanges per micro-batch: forward (twice under full recompute) and backward.
    Selective recompute of core attention replays the exchange too (Megatron-core checkpoints Transformer
    Engine's DotProductAttention, the ring inside): not priced, validation/README.md "Context parallelism as
    each stack runs it"."""
    forward, backward = (k.cp_seconds or {}).get(rep, (0.0, 0.0))
    regather = forward if plan.cp_comm == "all_gather_saved" and context.regathers(plan) else 0.0
    return context.passes(plan) * forward + backward + regather


def parts_replay_seconds(k: StageKernels, parts: tuple[tuple[Plan, LayerMix], ...]) -> float:
    """StageCost.recompute_seconds of a stage's recompute_parts."""
    return sum(stage_replay_seconds(part, k, layers) for part, layers in parts)


def stage_replay_seconds(plan: Plan, k: StageKernels, mix: LayerMix) -> float:
    """StageCost.recompute_seconds: the forward seconds the stage's layers replay in backward per micro-batch."""
    return sum(n * replay_seconds(plan, k.layers[r]) for r, n in mix)


def replay_seconds(plan: Plan, lt: LayerTimes) -> float:
    """Forward seconds one layer replays in backward: the whole forward (full), the selective modules,
    or torchtitan's per-op choice."""
    if plan.recompute == "selective":
        return lt.replay_seconds(plan.recompute_modules)
    return {"full": lt.forward_seconds, "op": lt.op_replay_seconds}.get(plan.recompute, 0.0)


def sixteen_bit_delta(model: Model, plan: Plan, k: StageKernels, stage: int) -> float:
    """Extra seconds of the stage's layers kept 16-bit under a low precision (sixteen_bit_mix: those of the
    stack's first and last layers that the rank holds, each of its own kind)."""
    if not k.layers_16bit:
        return 0.0
    out = 0.0
    for rep, n in sixteen_bit_mix(model, plan, stage):
        low, high = k.layers[rep], k.layers_16bit[rep]
        out += n * (high.forward_seconds + high.backward_seconds - low.forward_seconds - low.backward_seconds)
    return out


def mtp_layer_seconds(model: Model, plan: Plan, k: StageKernels, eff: Efficiency) -> float:
    """The MTP modules' transformer layers on the last stage (their output-layer passes are counted
    with the logits), plus the 2h x h projection's GEMM, small against them and left out."""
    if not model.mtp_layers:
        return 0.0
    lt = k.layers[mtp_representative(model)]
    return model.mtp_layers * (lt.forward_seconds + lt.backward_seconds + layer_overhead_seconds(plan, eff)
                               + replay_seconds(mtp_plan(plan), lt))


def layer_overhead_seconds(plan: Plan, eff: Efficiency) -> float:
    """Per layer and micro-batch, what the host adds to the kernels' own time (Efficiency.
    layer_overhead_seconds, fitted: launches, stream synchronisation, the gaps they leave). A step captured
    as one CUDA graph (Plan.full_iteration_graph), or each of its dense layers (Plan.layer_cuda_graphs),
    launches no kernel of a layer from the host: the GPU replays the recorded work back to back (CUDA
    Programming Guide, "CUDA Graphs": a graph's launch submits all its work at once and removes the
    per-kernel CPU launch cost). Assumes the replay leaves no gap of its own, nor the one launch per layer."""
    return 0.0 if plan.full_iteration_graph or plan.layer_cuda_graphs else eff.layer_overhead_seconds


def layer_tp_comm_seconds(plan: Plan, lt: LayerTimes, allreduce_seconds: float, eff: Efficiency, exchanges: int,
                          replayed: int) -> float:
    """One layer's TP collectives per micro-batch, as they show: `exchanges` all-reduce-sized ones in
    forward (tp_exchanges; 2 for a dense layer: attention and MLP), their backward's
    (backward_tp_comm_seconds), and `replayed` of them again in the recompute's replay
    (replayed_tp_exchanges). With tp_comm_overlap each is split into tp chunks and overlapped with the
    GEMMs beside it (forward GEMMs; the backward's dgrad and wgrad, twice as long), at the SM cost of
    overlap.decomposed_exposed_seconds; a replayed exchange shows as its share of the forward's."""
    if plan.tp <= 1:
        return 0.0
    if not plan.tp_comm_overlap:
        return (exchanges + replayed) * allreduce_seconds + backward_tp_comm_seconds(plan, lt, allreduce_seconds, eff,
                                                                                  exchanges)
    share, g = eff.collective_sm_share, lt.gemm_forward_seconds
    forward = overlap.decomposed_exposed_seconds(exchanges * allreduce_seconds, g, plan.tp, share)
    backward = overlap.decomposed_exposed_seconds(exchanges * allreduce_seconds, 2 * g, plan.tp, share)
    return (1 + replayed / exchanges) * forward + backward


def backward_tp_comm_seconds(plan: Plan, lt: LayerTimes, allreduce_seconds: float, eff: Efficiency,
                             exchanges: int) -> float:
    """One layer's backward TP collectives per micro-batch without tp_comm_overlap, as they show. Each
    exchange pairs a column-parallel linear (QKV, the MLP's up) with a row-parallel one (the output
    projection, the MLP's down); Korthikanti et al. 2022 Sec 4.2.2 (f and g, their conjugates under
    sequence parallel). Without SP: the column-parallel input gradient's all-reduce. With SP: the
    row-parallel output gradient's all-gather (its GEMMs wait for it), the column-parallel input gradient's
    reduce-scatter, and, when the input was saved as its sequence shard (not sp_gathered), that input's
    all-gather again for the weight gradient; each half an all-reduce.
    With tp_async_grad (Megatron-LM, Transformer Engine) the reduction runs beside the weight-gradient
    GEMMs and the re-gather beside the input-gradient GEMMs (overlap.beside_seconds; each as long as the
    layer's forward GEMMs, lt.gemm_forward_seconds, the window the TP overlap above takes too);
    otherwise every one shows whole."""
    total = exchanges * allreduce_seconds
    if plan.sequence_parallel:
        waited, reduced = total / 2, total / 2
        regather = 0.0 if plan.sp_gathered else total / 2
    else:
        waited, reduced, regather = 0.0, total, 0.0
    if not plan.tp_async_grad:
        return waited + reduced + regather
    g, share = lt.gemm_forward_seconds, eff.collective_sm_share
    return waited + overlap.beside_seconds(reduced, g, share) + overlap.beside_seconds(regather, g, share)


def offloaded_layers(plan: Plan, layers: int) -> int:
    """Layers of a stage whose activations go to host: the plan's count, keeping at least one on GPU."""
    return max(0, min(plan.offload_layers, layers - 1))


def offload_seconds(model: Model, cluster: Cluster, plan: Plan, k: StageKernels, mix: LayerMix) -> float:
    """Per micro-batch, the part of the activation copies to host (forward) and back (backward) that
    the layer computing beside them does not hide: copy engines move them on their own stream
    (Megatron's CPU offload context), so a layer's copy overlaps the next layer's compute. The
    stage's most common layer kind stands for the offloaded layers. Plus the fine-grained offload's
    copies (module_offload_seconds)."""
    n = offloaded_layers(plan, mix_layers(mix))
    out = module_offload_seconds(model, cluster, plan, k, mix)
    if n == 0:
        return out
    rep = max(mix, key=lambda rn: rn[1])[0]
    lt = k.layers[rep]
    copy = layer_activations(model, plan, rep, plan.recompute, k.eff.moe_routing_imbalance) / cluster.host_link_bytes_per_second
    return out + n * exposed_copy_seconds(copy, lt)


def exposed_copy_seconds(copy_seconds: float, lt: LayerTimes) -> float:
    """One layer's copy to host in forward and back in backward, each beside that pass's compute on the
    copy engines' own stream: what the pass does not cover shows."""
    return max(0.0, copy_seconds - lt.forward_seconds) + max(0.0, copy_seconds - lt.backward_seconds)


def module_offload_seconds(model: Model, cluster: Cluster, plan: Plan, k: StageKernels, mix: LayerMix) -> float:
    """Per micro-batch, the exposed part of the fine-grained offload's copies (Plan.offload_modules): each
    layer's offloaded inputs (layer_offloaded_bytes) to host in forward and back before its backward,
    asynchronously on their own stream (Megatron's fine-grained offload manager), beside the layer."""
    if not plan.offload_modules:
        return 0.0
    link = cluster.host_link_bytes_per_second
    return sum(n * exposed_copy_seconds(layer_offloaded_bytes(model, plan, r, k.eff.moe_routing_imbalance) / link,
                                        k.layers[r]) for r, n in mix)
