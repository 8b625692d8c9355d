"""Cost-model tables for the search: every number comes from a costmodel.step function.

For one layout, each term is evaluated over the knobs it depends on (step.py's own split):
  pipeline flush   step.pipeline_parts(stage costs)          layout x (recompute, SP, precision, casts, TP overlap)
  DP/ZeRO total    step.dp_sync_total_seconds(critical)      layout x (ZeRO, precision, grad, recompute)
  unhideable tail  step.dp_tail_seconds(critical, total)     the same key
  tied embedding   step.embedding_sync_seconds               layout x (precision, grad)
  overlap window   step.dp_overlap_window_seconds(critical, bubble)  layout x all knobs (cheap)
  exposed          step.dp_exposed_with_contention(total, window, tail) + tied, as step.dp_costs composes it
  optimizer        step.optimizer_step_seconds(critical)     layout x knobs (cheap)
  memory           step.memory_breakdown per memory-candidate stage (step.memory_candidate_stages):
                   model states + gather buffers over (ZeRO, precision, grad, casts) with the stage's
                   activations set to 0, plus the activations x d(memory)/d(activations)
and composed as step.estimate composes them (step = flush + exposed + optimizer + overhead).
Facts of the cost model that make this fast; tests/test_search_tables.py checks each against
step.estimate / step.stage_costs on random plans, so a cost-model change that breaks one fails there:
  * a stage's time parts, parameters and layers depend on its rank only through its layer mix (how
    many layers of each kind) and whether it is the first or last stage (stage.stage_cost), so one
    stage_cost per such class
    stands for all ranks of the class, and the class's lowest rank is exactly the rank
    step.memory_candidate_stages picks for memory;
  * stage.stage_kernels reads only tp, cp, ep, etp, the CP exchange, micro-batch, SP, flash,
    precision and its casts, so one per such combination serves every layout (KernelCache);
  * memory_breakdown's total is affine in the stage's activation bytes (the overhead term), and
    its other parts read only ZeRO, precision, gradient dtype and the weight casts from the knobs
    (not with Plan.offload_optimizer_states, the larger of two phases, which the search never offers:
    frameworks.base.Knobs.optimizer_offload).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from costmodel import step
from costmodel.context import exchange_buffer_bytes
from costmodel.memory import cp_activation_class
from costmodel import types as cm
from costmodel.stage import (
    StageCost,
    StageKernels,
    replayed_mix,
    sixteen_bit_mix,
    sixteen_bit_params,
    stage_activation_bytes,
    stage_cost,
    stage_kernels,
    stage_params,
)
from planner.search.space import Knobs, Layout, SearchSpec, knob_plan_fields, plan_for, plan_over


@dataclass(frozen=True)
class Candidate:
    """One plan of the space with its tabled step time (by part) and memory per candidate stage."""

    layout: Layout
    knobs: Knobs
    flush_seconds: float  # pipeline_parts summed: compute, recompute, TP, PP p2p, bubble
    dp_exposed_seconds: float
    optimizer_seconds: float
    overhead_seconds: float
    memory_bytes: tuple[float, ...]  # one entry per memory-candidate stage

    @property
    def step_seconds(self) -> float:
        return self.flush_seconds + self.dp_exposed_seconds + self.optimizer_seconds + self.overhead_seconds

    @property
    def peak_memory_bytes(self) -> float:
        return max(self.memory_bytes)


@dataclass(frozen=True)
class PipeEntry:
    """Stage costs of one layout for one (recompute, SP, precision, weight casts)."""

    flush_seconds: float
    bubble_seconds: float  # step.pipeline_parts' pp_bubble, part of the DP overlap window
    critical: StageCost  # step.dp_critical_stage
    slots: tuple[StageCost, ...]  # the memory-candidate stages


class KernelCache:
    """stage.stage_kernels per (tp, cp, ep, etp, cp_comm, micro-batch, SP, flash, precision, casts, FP8
    attention, attention kernel, token dispatch and its wire format, projections, RoPE fusion, the experts'
    activation prologue, the loss): the only plan fields it reads."""

    def __init__(self, spec: SearchSpec, eff: cm.Efficiency):
        self.spec, self.eff, self.table = spec, eff, {}

    def get(self, plan: cm.Plan) -> StageKernels:
        key = (plan.tp, plan.cp, plan.ep, plan.etp, plan.cp_comm, plan.micro_batch_size, plan.sequence_parallel,
               plan.flash_attention, plan.precision, plan.weight_casts, plan.fp8_attention, plan.attention_kernel,
               plan.ep_dispatch, plan.ep_dispatch_dtype, plan.projections, plan.rope_fusion, plan.moe_act_prologue,
               plan.cross_entropy)
        if key not in self.table:
            self.table[key] = stage_kernels(self.spec.model, self.spec.cluster, plan, self.eff)
        return self.table[key]


def rank_classes(model: cm.Model, plan: cm.Plan) -> tuple[tuple[int, ...], list[tuple[tuple, int]]]:
    """Per rank, the index of its (layer mix, first, last) class; per class, (layer mix, lowest rank). Under
    block recompute (Plan.recompute_layers) the layers a rank replays enter the class too, and with layers kept
    16-bit (Plan.bf16_layers_start/end, which may fall on middle ranks: stage.sixteen_bit_mix) those it keeps."""
    replayed = tuple(replayed_mix(model, plan, r) for r in range(plan.pp)) if plan.recompute_layers else ()
    if plan.bf16_layers_start or plan.bf16_layers_end:
        kept = tuple(sixteen_bit_mix(model, plan, r) for r in range(plan.pp))
        replayed = tuple(zip(replayed or ((),) * plan.pp, kept))
    return _rank_classes(step.stage_mixes(model, plan), plan.pp, replayed)


@lru_cache(maxsize=4096)
def _rank_classes(mixes: tuple, pp: int, replayed: tuple = ()) -> tuple[tuple[int, ...], list[tuple[tuple, int]]]:
    index: dict[tuple, int] = {}
    reps: list[tuple[tuple, int]] = []
    of_rank = []
    for r, mix in enumerate(mixes):
        key = (mix, r == 0, r == pp - 1, replayed[r] if replayed else ())
        if key not in index:
            index[key] = len(reps)
            reps.append((mix, r))
        of_rank.append(index[key])
    return tuple(of_rank), reps


def class_stage_costs(model: cm.Model, cluster: cm.Cluster, plan: cm.Plan, eff: cm.Efficiency,
                      kernels: StageKernels | None = None, classes: tuple | None = None,
                      with_bytes: bool = True) -> list[StageCost]:
    """step.stage_costs, with one stage_cost call per (layer mix, first, last) class of ranks (its lowest rank)."""
    of_rank, reps = classes or rank_classes(model, plan)
    kernels = kernels or stage_kernels(model, cluster, plan, eff)
    costs = [stage_cost(model, cluster, plan, mix, r, eff, kernels, with_bytes) for mix, r in reps]
    return [costs[i] for i in of_rank]


def activation_slope(spec: SearchSpec, eff: cm.Efficiency) -> float:
    """d(memory_breakdown total)/d(activation bytes), measured on the cost model (affine in them)."""
    plan = cm.Plan(global_batch_size=1)
    probe = StageCost(1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    gen = spec.cluster.gpu.generation
    low = sum(step.memory_breakdown(spec.model, plan, probe, eff, gen).values())
    high = sum(step.memory_breakdown(spec.model, plan, replace(probe, activation_bytes=2.0**30), eff, gen).values())
    return (high - low) / 2.0**30


class TableContext:
    """What all layouts of one search share: the spec, efficiencies, kernels, the memory slope, and
    model-state bytes per stage class (they do not depend on the micro-batch or interleaving)."""

    def __init__(self, spec: SearchSpec, eff: cm.Efficiency):
        self.spec, self.eff = spec, eff
        self.kernels = KernelCache(spec, eff)
        self.slope = activation_slope(spec, eff)
        self._states: dict[tuple, float] = {}
        self.cp_seconds: dict[tuple, dict] = {}  # LayoutTables.cp_exposed, shared by layouts with one kernel key
        self.held_kv: dict[tuple, float] = {}  # LayoutTables.exchange_held, by (tp, cp, micro-batch, exchange)
        self.block_classes: dict[tuple, tuple] = {}  # LayoutTables.classes_of, by (pp, vpp, block recompute count)

    def bare_memory(self, plan: cm.Plan, stage: StageCost) -> float:
        """step.memory_breakdown total of `stage` with its activations left out (the slope adds them back)."""
        bare, generation = replace(stage, activation_bytes=0.0), self.spec.cluster.gpu.generation
        return sum(step.memory_breakdown(self.spec.model, plan, bare, self.eff, generation).values())

    def states_bytes(self, base: cm.Plan, mix: tuple, rank: int, knob: tuple) -> float:
        """step.memory_breakdown total of a stage with no activations, for the knobs space.Knobs.states names."""
        zero, precision, grad, casts, reshard, gsync, gbuf, dpo = knob
        first, last = rank == 0, rank == base.pp - 1
        # with layers kept 16-bit (fixed for a search) which ones a rank holds follows its rank and the interleaving
        kept = (rank, base.vpp) if base.bf16_layers_start or base.bf16_layers_end else None
        key = (base.tp, base.cp, base.ep, base.etp, base.pp, base.dp, mix, first, last, zero, precision, grad, casts,
               reshard, gsync, gbuf, dpo, kept)
        if key not in self._states:  # the memory walk asks tens of thousands of times: build the plan once a key
            plan = plan_over(base, {"zero_stage": zero, "precision": precision, "grad_dtype": grad,
                                    "weight_casts": casts, "zero3_reshard": reshard, "grad_sync": gsync,
                                    "grad_bucket_elements": gbuf, "overlap_dp_comm": dpo})
            wide = sixteen_bit_params(self.spec.model, plan, rank)  # 0 but for a low precision with 16-bit layers
            params, experts, in_layers = stage_params(self.spec.model, plan, mix, rank)
            probe = StageCost(sum(n for _, n in mix), 0.0, 0.0, 0.0, 0.0, params, 0.0, expert_params=experts,
                              layer_params=in_layers, mix=mix, sixteen_bit_params=wide)
            self._states[key] = self.bare_memory(plan, probe)
        return self._states[key]


class LayoutTables:
    """Memoised cost-model terms of one layout, keyed by the knobs each term depends on."""

    def __init__(self, ctx: TableContext, lay: Layout):
        self.ctx, self.lay = ctx, lay
        self.base = plan_for(ctx.spec, lay)
        self.classes = rank_classes(ctx.spec.model, self.base)
        self.peaks: dict[tuple, float] = {}
        self.pipes: dict[tuple, PipeEntry] = {}
        self.flushes: dict[tuple, float] = {}  # flush: bounds' flush seconds, from stage costs without bytes
        self.totals: dict[tuple, tuple[float, float]] = {}  # (total, tail)
        self.tied: dict[tuple, float] = {}
        self.states: dict[tuple, tuple[float, ...]] = {}
        self.acts: dict[tuple, tuple[float, ...]] = {}
        self.held: dict[tuple, tuple[float, ...]] = {}  # class_states

    def plan(self, k: Knobs) -> cm.Plan:
        """plan_for(spec, layout, k), from the layout's base plan: knob_plan_fields sets every field the
        knobs own, so the base's default knobs are all overwritten (tests/test_search_tables.py checks it)."""
        return plan_over(self.base, knob_plan_fields(k))

    def classes_of(self, rcl: int) -> tuple:
        """rank_classes of the layout under block recompute of `rcl` layers per chunk (Knobs.rcl; 0: every
        layer, the layout's own classes): the layers a rank replays split its class further."""
        if not rcl:
            return self.classes
        key, table = (self.lay.pp, self.lay.vpp, rcl), self.ctx.block_classes  # the split of layers reads only these
        if key not in table:
            table[key] = rank_classes(self.ctx.spec.model, plan_over(self.base, {"recompute": "full",
                                                                              "recompute_layers": rcl}))
        return table[key]

    def activations(self, rc: str, sp: bool, precision: str, casts: str = "step", cpc: str = "p2p",
                    pbuf: str = "freed", spg: bool = False, offl: int = 0, proj: str = "fused",
                    xent: str = "fused", rcl: int = 0, epo: bool = False, actp: bool = False) -> tuple[float, ...]:
        """stage.stage_activation_bytes of each (layer mix, first, last) class of ranks. The precision
        and weight casts enter through the element size (stage.ACTIVATION_BYTES) and the bytes of the
        GEMM inputs kept for backward (stage.saved_gemm_input_bytes: the quantized copy under cached
        casts), the pipeline runtime through the buffers it keeps, the CP exchange through the K/V it
        holds, the same on every stage (context.exchange_buffer_bytes), added to the bytes without it, and what
        attention keeps for it (memory.cp_exchange_terms), so the exchanges that keep the same share one stage
        pass (memory.cp_activation_class); the layers offloaded to host
        through what the stage keeps (stage.stage_activation_bytes); the projections through the matmul outputs
        per-op recompute keeps; the loss through the logits an eager one keeps on the last stage; the EP overlap
        through the chunk more its schedule warms up under an interleaved pipeline (memory.inflight_microbatches);
        the experts' activation prologue through what its clamps keep (memory.layer_activation_terms). Every
        field of Knobs.memory but the model states' is an argument (tests/test_search_tables.py checks the peak
        against the timed candidate's on MoE plans with both)."""
        cpc = cpc if self.lay.cp > 1 else "p2p"
        key = (rc, sp, precision, casts, cpc, pbuf, spg, offl, proj, xent, rcl, epo, actp)
        if key not in self.acts:
            kept = cp_activation_class(cpc)
            plain = (rc, sp, precision, casts, kept, pbuf, spg, offl, proj, xent, rcl, epo, actp, "plain")
            if plain not in self.acts:
                base = self.plan(Knobs(0, rc, sp, precision, "", casts, cpc=kept, pbuf=pbuf, spg=spg, offl=offl,
                                       rcl=rcl, proj=proj, xent=xent, epo=epo, actp=actp))
                self.acts[plain] = tuple(stage_activation_bytes(self.ctx.spec.model, base, mix, rank,
                                                                self.ctx.eff.moe_routing_imbalance)
                                         - (exchange_buffer_bytes(self.ctx.spec.model, base) if self.lay.cp > 1 else 0)
                                         for mix, rank in self.classes_of(rcl)[1])
            held = self.exchange_held(cpc) if self.lay.cp > 1 else 0.0
            self.acts[key] = tuple(a + held for a in self.acts[plain])
        return self.acts[key]

    def exchange_held(self, cpc: str) -> float:
        """context.exchange_buffer_bytes of the layout under the CP exchange `cpc`: it reads tp, cp, the
        micro-batch, the exchange and repeat_kv (no search knob), so one value per such key, shared by the
        layouts of the search (TableContext.held_kv)."""
        lay = self.lay
        key = (lay.tp, lay.cp, lay.mbs, cpc)
        table = self.ctx.held_kv
        if key not in table:
            table[key] = exchange_buffer_bytes(self.ctx.spec.model, plan_over(self.base, {"cp_comm": cpc}))
        return table[key]

    def peak_memory(self, k: Knobs) -> float:
        """The plan's peak memory per GPU without timing it: max over the classes of ranks of
        states(ZeRO, precision, grad) + slope x activations, which is step.memory_breakdown at the
        memory-candidate stages (they are the classes' lowest ranks). Knobs that differ only in what
        does not change memory (TP/EP overlap) share one value."""
        key = k.memory
        if key not in self.peaks:
            acts = self.activations(k.recompute, k.sp, k.precision, k.casts, k.cpc, k.pbuf, k.spg, k.offl, k.proj,
                                    k.xent, k.rcl, k.epo, k.actp)
            slope = self.ctx.slope
            held = self.class_states(k.states, k.rcl)
            self.peaks[key] = max(h + slope * act for h, act in zip(held, acts, strict=True))
        return self.peaks[key]

    def class_states(self, states: tuple, rcl: int = 0) -> tuple[float, ...]:
        """TableContext.states_bytes of each (layer mix, first, last) class of ranks (classes_of(rcl)), for one
        Knobs.states."""
        key = (states, rcl) if rcl else states
        if key not in self.held:
            self.held[key] = tuple(self.ctx.states_bytes(self.base, mix, rank, states)
                                   for mix, rank in self.classes_of(rcl)[1])
        return self.held[key]

    def first_stage_states_floor(self, knobs) -> float:
        """The least model-state bytes (states_bytes: no activations) the first pipeline stage holds
        under any of `knobs`; with the slope x its activation floor, below every plan's peak."""
        return self.first_stage_least_states({k.states for k in knobs})

    def first_stage_least_states(self, states) -> float:
        """first_stage_states_floor over the states keys (Knobs.states) `states`."""
        mix = next(mix for mix, rank in self.classes[1] if rank == 0)
        return min(self.ctx.states_bytes(self.base, mix, 0, s) for s in states)

    def cp_exposed(self, sp: bool, precision: str, casts: str, cpc: str, attn: str = "cudnn") -> dict:
        """StageKernels.cp_seconds of the layout under these kernel knobs: per layer kind, the exposed
        (forward, backward) seconds of the CP exchange `cpc`."""
        lay = self.lay
        key = (lay.tp, lay.cp, lay.ep, lay.etp, lay.mbs, sp, precision, casts, cpc, attn)  # KernelCache's, by layout
        table = self.ctx.cp_seconds
        if key not in table:
            plan = self.plan(Knobs(0, "none", sp, precision, "", casts, cpc=cpc, attn=attn))
            table[key] = self.ctx.kernels.get(plan).cp_seconds or {}
        return table[key]

    def min_memory(self, knobs: tuple[Knobs, ...]) -> float:
        """The least peak memory of the layout's plans."""
        return min(self.peak_memory(k) for k in knobs)

    def pipe(self, rc: str, sp: bool, precision: str, casts: str = "step", tpo: bool = False,
             cpc: str = "p2p", epo: bool = False, pbuf: str = "freed", attn: str = "cudnn",
             spg: bool = False, epd: str = "alltoall", mcg: bool = False, offl: int = 0,
             tpa: bool = True, proj: str = "fused", rof: bool = True, actp: bool = False,
             xent: str = "fused", rcl: int = 0, esd: bool = False) -> PipeEntry:
        """Pipeline flush, DP-critical stage and memory-candidate stages for (recompute, SP, precision,
        casts, TP overlap, CP exchange, EP overlap, pipeline buffers, attention kernel, SP inputs
        gathered, MoE dispatch, MoE CUDA graphs, layers offloaded, backward TP collectives beside the GEMMs,
        projections, RoPE fused, the experts' activation prologue, the loss)."""
        key = (rc, sp, precision, casts, tpo, cpc, epo, pbuf, attn, spg, epd, mcg, offl, tpa, proj, rof, actp, xent,
               rcl, esd)
        if key not in self.pipes:
            plan, stages = self.stage_costs(key, with_bytes=True)
            parts = step.pipeline_parts(plan, stages)
            flush = sum(parts.values())
            slots = tuple(stages[r] for r in step.memory_candidate_stages(stages))
            self.pipes[key] = PipeEntry(flush, parts["pp_bubble"], step.dp_critical_stage(stages), slots)
        return self.pipes[key]

    def flush(self, rc: str, sp: bool, precision: str, casts: str = "step", tpo: bool = False,
              cpc: str = "p2p", epo: bool = False, pbuf: str = "freed", attn: str = "cudnn",
              spg: bool = False, epd: str = "alltoall", mcg: bool = False, offl: int = 0,
              tpa: bool = True, proj: str = "fused", rof: bool = True, actp: bool = False,
              xent: str = "fused", rcl: int = 0, esd: bool = False) -> float:
        """PipeEntry.flush_seconds of the same key, from stage costs without their bytes (the bounds
        need the flush only); the tabled pipe's when it is already there."""
        key = (rc, sp, precision, casts, tpo, cpc, epo, pbuf, attn, spg, epd, mcg, offl, tpa, proj, rof, actp, xent,
               rcl, esd)
        if key in self.pipes:
            return self.pipes[key].flush_seconds
        if key not in self.flushes:
            plan, stages = self.stage_costs(key, with_bytes=False)
            self.flushes[key] = sum(step.pipeline_parts(plan, stages).values())
        return self.flushes[key]

    def stage_costs(self, key: tuple, with_bytes: bool) -> tuple[cm.Plan, list[StageCost]]:
        """The plan of a pipe key (pipe's and flush's) and its stages' costs (class_stage_costs)."""
        (rc, sp, precision, casts, tpo, cpc, epo, pbuf, attn, spg, epd, mcg, offl, tpa, proj, rof, actp, xent, rcl,
         esd) = key
        spec = self.ctx.spec
        plan = self.plan(Knobs(0, rc, sp, precision, "", casts, True, tpo, cpc, epo, pbuf, attn, spg=spg, epd=epd,
                               mcg=mcg, offl=offl, rcl=rcl, tpa=tpa, proj=proj, rof=rof, actp=actp, xent=xent, esd=esd))
        return plan, class_stage_costs(spec.model, spec.cluster, plan, self.ctx.eff, self.ctx.kernels.get(plan),
                                       self.classes_of(rcl), with_bytes)

    def exposed(self, k: Knobs, plan: cm.Plan, critical: StageCost, bubble_seconds: float) -> float:
        """step.dp_costs' exposed part, from tabled totals and the window."""
        spec, eff = self.ctx.spec, self.ctx.eff
        tkey = (k.zero, k.precision, k.grad, k.recompute, k.rcl, k.reshard, k.gsync)
        if tkey not in self.totals:
            total = step.dp_sync_total_seconds(spec.cluster, plan, critical, eff)
            self.totals[tkey] = total, step.dp_tail_seconds(spec.model, spec.cluster, plan, critical, eff, total)
        gkey = (k.precision, k.grad)
        if gkey not in self.tied:
            self.tied[gkey] = step.embedding_sync_seconds(spec.model, spec.cluster, plan, eff)
        window = step.dp_overlap_window_seconds(plan, critical, bubble_seconds)
        total, tail = self.totals[tkey]
        return step.dp_exposed_with_contention(total, plan, window, tail, eff) + self.tied[gkey]

    def memory(self, k: Knobs, plan: cm.Plan, slots: tuple[StageCost, ...]) -> tuple[float, ...]:
        """memory_breakdown totals of the memory-candidate stages: states (activations 0) + slope x activations."""
        key = (k.states, k.rcl)  # block recompute may add candidate stages (step.memory_candidate_stages)
        if key not in self.states:
            self.states[key] = tuple(self.ctx.bare_memory(plan, s) for s in slots)
        return tuple(x + self.ctx.slope * s.activation_bytes for x, s in zip(self.states[key], slots, strict=True))

    def candidate(self, k: Knobs) -> Candidate:
        spec, eff = self.ctx.spec, self.ctx.eff
        plan = self.plan(k)
        pipe = self.pipe(k.recompute, k.sp, k.precision, k.casts, k.tpo, k.cpc, k.epo, k.pbuf, k.attn, k.spg, k.epd,
                         k.mcg, k.offl, k.tpa, k.proj, k.rof, k.actp, k.xent, k.rcl, k.esd)
        opt = step.optimizer_step_seconds(spec.cluster, plan, pipe.critical, eff)
        return Candidate(self.lay, k, pipe.flush_seconds, self.exposed(k, plan, pipe.critical, pipe.bubble_seconds), opt,
                         eff.step_overhead_seconds, self.memory(k, plan, pipe.slots))

    def candidates(self, knobs: tuple[Knobs, ...]) -> list[Candidate]:
        return [self.candidate(k) for k in knobs]
