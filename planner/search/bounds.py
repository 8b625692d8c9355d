"""Best-first tabling: table only the layouts whose lower bound can still reach the top K.

Memory first: layout families (a split and vpp, over its micro-batch sizes) whose activation floor
(activation_floor_bytes: what the first stage must hold under any micro-batch size and knobs) is
over the capacity are skipped whole; the rest are sorted into what fits by LayoutTables.peak_memory.

Block recompute's counts (Knobs.rcl, searched with SearchSpec.block_recompute) are sized late: a layout
carries them unsized where every layer's recompute fits and no recompute does not (with_block_counts), its
compute-only bound taking the fewest layers any count replays; the first time it leaves the heap the counts
below the least that fits in any family go (least_fitting_blocks) and it goes back under its compute-only bound
taken again; before its tight bound each family keeps only its own fewest that fit (fewest_fitting_blocks). Most
layouts never get that far, and the least costs about one peak per family where the fewest cost a bisection each.

Then time. Lower bound of every plan of a layout: its pipeline flush with no recompute (when every knob
recomputes in full, with the fewest layers any of them replays), sequence parallel and TP overlap on, over
the other pipe keys (precision, weight casts, CP exchange, the EP overlap as the knobs set it), plus the fixed
overhead; the exposed DP sync and the optimizer step are >= 0. It holds because, in the cost model, for a fixed
layout and precision:
  * recompute only adds time (stage.stage_cost: recompute_seconds >= 0, 6 instead of 4 TP
    collectives per layer under full recompute, each layer block recompute replays adds its own; compute and
    p2p do not depend on it), and so does
    activation offload (stage.offload_seconds >= 0; nothing else reads it), which the bounds leave off;
  * sequence parallel never adds time (same TP ring cost, less elementwise HBM traffic), an
    overlapped TP collective never costs more than the collective (the EP overlap can: its exchanges wait for
    the SMs the other micro-batch's kernels hold, stage.ep_exposed_seconds, so each knob's own is taken), and the
    flush (pipeline.pipeline_seconds) grows with every stage's time;
  * fused projections (the bounds' default, Plan.projections) are never slower than the same FLOPs split into
    narrower GEMMs (compute.gemm_seconds is subadditive in the output width: both its saturation and its
    memory terms), but under per-op recompute, which replays what the projections' own outputs do not keep (a
    split QKV keeps more, so replays less: the tight bound takes the knob's own there), and a fused RoPE (the
    bounds' default, Plan.rope_fusion) never slower than an unfused one (compute.unfused_rope_bytes >= 0), nor
    the experts' activation without its prologue (the bounds' default, Plan.moe_act_prologue:
    moe.prologue_bytes >= 0, stage.activation_syncs >= 0).
tests/test_search_tables.py checks these facts on random plans. Layouts are tabled in increasing
bound order (a compute-only bound first, then the loose bound, then the tight one over the knobs
that fit) until the next
bound exceeds the K-th best layout group's best fitting step time; no layout left out can then
enter the top K (its plans are all slower than K other groups' best).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterator

from costmodel.context import kernel_span_divisor
from costmodel.pipeline import default_chunk_layers, pipeline_seconds, stage_layer_counts
from costmodel.stage import parts_replay_seconds, recompute_parts, stage_compute_seconds, stage_replay_seconds
from planner.search.space import (Knobs, Layout, SearchSpec, Space, knob_variant, offload_counts, plan_over,
                                  vpp_choices)
from planner.search.tables import Candidate, LayoutTables, TableContext


@dataclass(frozen=True)
class Tabled:
    candidates: list[Candidate]
    layouts_tabled: int
    layouts_bounded: int


def lower_bound(tables: LayoutTables, knobs: tuple[Knobs, ...], tight: bool = False) -> float:
    """A step time no plan of the layout with these knobs beats (seconds): the pipeline flush with
    the fastest value of each knob that has one (no recompute, TP overlap on: an overlapped TP
    collective costs at most its whole length, overlap.decomposed_exposed_seconds and
    overlapped_cost_seconds, where the EP overlap, whose exchanges wait for SMs, may cost more, so each knob's
    own EP overlap is taken; cuDNN's attention, never slower than FlashAttention-2's, space.undominated;
    MoE CUDA graphs on, which only take away host synchronisation (and the expert GEMMs' token counts on the
    device where some knob's framework reads them there: a fact of its code, not a choice); under SP the
    inputs saved gathered,
    which spares the backward's re-gather, stage.backward_tp_comm_seconds; the fused loss, the fewest bytes
    a logit, compute.LOSS_BYTES_PER_LOGIT), over the knobs' precisions, weight
    casts, CP exchanges, EP overlaps and MoE dispatchers, plus the fixed overhead. Sequence parallelism has no
    fastest value: it shards the elementwise work but exposes the output gradient's all-gather in the
    backward, where without it the whole all-reduce can hide beside the weight-gradient GEMMs
    (stage.backward_tp_comm_seconds), so a small model at tp 8 runs about 7% faster without it unless
    the TP overlap hides the SP collectives; each value the knobs offer is taken. Loose (the default):
    those fastest values whether the knobs offer them or not, one pipe per (SP, precision, casts, CP
    exchange, dispatcher), TP overlap on with SP, except full recompute when it is all the knobs offer
    (the common case where nothing else fits: a bound with no recompute would sit a third below every
    plan and table nothing out); `tight`: per knob, its own SP and each fastest value only where some
    knob with that SP offers it (else the knob's own, which it never beats; TP and EP overlap as a
    pair, which a machine rule may not offer together), with the knob's own precision, casts,
    exchange, dispatcher and attention kernel (frameworks differ in it): a few more pipes. (It once
    kept only knobs offering every fastest value at once, and had none to take when two frameworks
    each offered some of them; it once took SP on as the fastest, above the best plan by up to 5%
    with --fix tp_comm_overlap=false.)"""
    tp_split, moe = tables.lay.tp > 1, tables.ctx.spec.model.moe is not None
    offered, (none, least_rcl) = {k.recompute for k in knobs}, bound_recompute(knobs)
    if tight:  # per knob: each fastest value where some knob offers it, else the knob's own (never slower)
        mcgs, spgs, xents, esds = {k.mcg for k in knobs}, {k.spg for k in knobs}, {k.xent for k in knobs}, \
            {k.esd for k in knobs}
        overlaps = {(k.sp, k.tpo, k.epo) for k in knobs}  # TP and EP overlap together: a machine rule may
                                                          # offer either one but not the pair (megatron.
                                                          # overlap_connections); TP overlap only with SP

        def best(values: set, fast, own):
            return fast if fast in values else own

        keys = set()
        for k in knobs:
            _, tpo, epo = best(overlaps, (k.sp, tp_split and k.sp, k.epo), (k.sp, k.tpo, k.epo))
            rc, rcl = ("none", 0) if "none" in offered else (k.recompute, k.rcl)  # else the knob's own, as before
            keys.add((rc, k.sp, k.precision, k.casts, tpo, k.cpc,
                      epo, k.attn, k.epd, best(mcgs, moe, k.mcg), k.sp and best(spgs, True, k.spg),
                      best(xents, "fused", k.xent), rcl, best(esds, moe, k.esd), k.proj if rc == "op" else "fused"))
    else:
        sps = {k.sp for k in knobs}
        esd = any(k.esd for k in knobs)  # a framework's fact, not a choice: on only where some knob has it
        keys = {(none, sp, k.precision, k.casts, sp, k.cpc, k.epo, "cudnn", k.epd, moe, sp, "fused", least_rcl, esd,
                 "fused") for k in knobs for sp in sps}
    flush = min(tables.flush(*key[:7], attn=key[7], epd=key[8], mcg=key[9], spg=key[10], xent=key[11], rcl=key[12],
                             esd=key[13], proj=key[14])
                for key in fastest_exchanges(tables, keys))
    return flush + tables.ctx.eff.step_overhead_seconds


def bound_recompute(knobs: tuple[Knobs, ...]) -> tuple[str, int]:
    """The recompute mode and block recompute layers (Knobs.rcl) the bounds take: none, the fastest, unless full
    recompute is all the knobs offer (the common case where nothing else fits: a bound with no recompute would
    sit a third below every plan), then with the fewest layers any of them replays (0, every layer, only when
    none replays fewer: stage_replay_seconds grows with the layers replayed)."""
    if {k.recompute for k in knobs} != {"full"}:
        return "none", 0
    return "full", min((k.rcl for k in knobs if k.rcl), default=0)


def compute_bound(tables: LayoutTables, knobs: tuple[Knobs, ...]) -> float:
    """A step time no plan of the layout beats, from compute alone (seconds): the pipeline flush
    (costmodel.pipeline.pipeline_seconds) of each stage's compute seconds (stage.stage_compute_seconds)
    under the fastest knobs the loose bound takes (SP on where tp > 1: it shards the elementwise work,
    so the compute is least with it), over the knobs' precisions and weight casts, plus the
    fixed overhead; with the loose bound's recompute, so the forward replayed (stage_cost's
    recompute_seconds) when full recompute is all the knobs offer (a third of the step the bound
    would otherwise leave out where nothing else fits: on Mixtral 8x22B over 128 H100 it then leaves 79 of
    the 3,020 layouts that fit for the loose bound, not 2,519). Below the loose bound: a stage's
    micro-batch seconds are its compute and recompute plus parts that are >= 0, and the flush never falls
    when a stage's time grows. The CP exchange enters through the span of keys its attention kernel sweeps
    (context.kernel_span_divisor): over the knobs' exchanges too. Cheap (the kernels are shared by every layout
    with one kernel key, tables.KernelCache), so it goes first."""
    spec = tables.ctx.spec
    best = math.inf
    rc, rcl = bound_recompute(knobs)
    of_rank, reps = tables.classes_of(rcl)
    for precision, casts, cpc in {(k.precision, k.casts, k.cpc) for k in knobs}:
        plan = tables.plan(Knobs(0, rc, tables.lay.tp > 1, precision, "", casts, cpc=cpc, rcl=rcl))
        kernels = tables.ctx.kernels.get(plan)
        per_class = [stage_compute_seconds(spec.model, plan, kernels, mix, rank)
                     + (parts_replay_seconds(kernels, recompute_parts(spec.model, plan, mix, rank)) if rcl
                        else stage_replay_seconds(plan, kernels, mix))
                     for mix, rank in reps]
        busy, bubble = pipeline_seconds(tuple(per_class[i] for i in of_rank), plan.num_microbatches, plan.vpp)
        best = min(best, busy + bubble)
    return best + tables.ctx.eff.step_overhead_seconds


def fastest_exchanges(tables: LayoutTables, keys: set[tuple]) -> set[tuple]:
    """`keys` (pipe keys) less those whose CP exchange another key that differs only in it beats
    on every layer kind, forward and backward, with its attention kernels over a span no shorter: the
    exchange enters a stage's time through StageKernels.cp_seconds (stage.cp_layer_seconds) and the span
    (context.kernel_span_divisor; a longer one is never slower, compute.flash_attention_fraction), so that
    key's flush is never longer."""
    if tables.lay.cp <= 1 or len({key[5] for key in keys}) <= 1:
        return keys
    seconds = {key: tables.cp_exposed(key[1], key[2], key[3], key[5], key[7]) for key in keys}
    span = {key[5]: kernel_span_divisor(plan_over(tables.base, {"cp_comm": key[5]})) for key in keys}

    def beats(a: tuple, b: tuple) -> bool:
        return (a[:5] + a[6:] == b[:5] + b[6:] and a[5] != b[5] and span[a[5]] <= span[b[5]]
                and all(seconds[a][r][0] <= seconds[b][r][0] and seconds[a][r][1] <= seconds[b][r][1]
                        for r in seconds[b]))

    return {b for b in keys if not any(beats(a, b) and (seconds[a] != seconds[b] or a[5] < b[5]) for a in keys)}


def kth_best(best: dict[tuple, float], k: int) -> float:
    if len(best) < k:
        return math.inf
    return sorted(best.values())[k - 1]


def activation_floor_bytes(spec: SearchSpec, tp: int, cp: int, pp: int, dp: int) -> float:
    """Activation bytes the first pipeline stage holds at least under every vpp, micro-batch size and
    knob combination of a (tp, cp, pp, dp) split.

    In flight: b x min(pp, gbs / (b dp)) >= min(pp, gbs / dp) sequences for any micro-batch size b
    (memory.inflight_microbatches; interleaving only adds to the first stage's). Layers: the first
    stage's under the split the search uses (pipeline.default_chunk_layers, which may give it fewer
    than L / pp), the least over the searched vpp. Per
    layer and sequence: full recompute's layer input, 2 (s / cp) h / tp bytes, the least any
    recompute mode keeps (memory.layer_activation_bytes; sequence parallel shards it over tp).
    Without pipeline parallelism a framework may offload layers to host (space.offload_counts): the stage
    then keeps the others and one offloaded layer's copy in flight (stage.stage_activation_bytes)."""
    model = spec.model
    layers = min(stage_layer_counts(default_chunk_layers(model.num_layers, pp, v), pp, v)[0]
                 for v in vpp_choices(spec, pp) or [1])
    if pp == 1:
        layers = min(layers, layers - max(offload_counts(spec)) + 1)
    sequences = min(pp, spec.global_batch_size / dp)
    return sequences * layers * 2.0 * (model.seq_length // cp) * model.hidden_size / tp


def families(space: Space) -> list[tuple[float, list[Layout]]]:
    """The space's layouts grouped by all but the micro-batch size, each group by increasing
    micro-batch, with its split's activation floor (bytes); groups by increasing floor."""
    out: dict[tuple, list[Layout]] = {}
    for lay in space.knobs:
        out.setdefault((lay.tp, lay.cp, lay.ep, lay.etp, lay.pp, lay.dp, lay.vpp), []).append(lay)
    split_floors: dict[tuple, float] = {}  # the floor reads the split only, not vpp or the expert degrees
    for tp, cp, _, _, pp, dp, _ in out:
        if (tp, cp, pp, dp) not in split_floors:
            split_floors[tp, cp, pp, dp] = activation_floor_bytes(space.spec, tp, cp, pp, dp)
    floors = {key: split_floors[key[0], key[1], key[4], key[5]] for key in out}
    return [(floors[key], sorted(lays, key=lambda x: x.mbs)) for key, lays in sorted(out.items(), key=lambda e: floors[e[0]])]


def memory_walk(space: Space, ctx: TableContext, capacity_bytes: float = math.inf) -> Iterator[tuple]:
    """(memory floor, layout, its LayoutTables, [(knobs, peak bytes)]) for every layout with a knob
    combination still to try, from memory alone (LayoutTables.peak_memory, no timing), layout
    families by increasing floor (the slope x activation_floor_bytes of their split, below every
    plan's peak). A family whose floor exceeds `capacity_bytes` is skipped whole, as is one whose
    first stage cannot hold that floor beside its least model states (LayoutTables.
    first_stage_states_floor: the peak is at least the first stage's states plus its activations,
    step.memory_breakdown being affine in them). A plan's peak
    never falls as the micro-batch grows with the rest of the layout and the knobs fixed
    (activations are b x min(in-flight, m) per sample with m = gbs / (b dp); states do not depend on
    b; tests/test_search_tables.py checks it), so a knob combination is not tried at larger
    micro-batches once it does not fit in `capacity_bytes` (with the default, once it has been tried
    at all), and a layout with nothing left to try is skipped without building its tables."""
    blocks = space.sizes_blocks_late  # then sized in table_best_first, not here
    for floor_bytes, lays in families(space):
        floor = ctx.slope * floor_bytes
        if floor > capacity_bytes:
            continue
        done: set[int] = set()  # ids: build_space interns its Knobs
        first = LayoutTables(ctx, lays[0])
        if capacity_bytes < math.inf:
            combos = {id(space.knobs[lay]): space.knobs[lay] for lay in lays}  # build_space shares these tuples
            if first.first_stage_least_states({k.states for ks in combos.values() for k in ks}) + floor > capacity_bytes:
                continue
        for lay in lays:
            todo = [k for k in space.knobs[lay] if id(k) not in done and not (blocks and k.rcl)]  # layout_peaks
            if not todo:
                continue
            t = first if lay == lays[0] else LayoutTables(ctx, lay)
            peaks = layout_peaks(t, todo, capacity_bytes)
            done |= {id(k) for k, peak in peaks if peak > capacity_bytes or capacity_bytes == math.inf}
            yield floor, lay, t, peaks


# Recompute modes whose activations never exceed another's, per layer and so per stage (costmodel
# memory.layer_activation_bytes: selective and per-op recompute keep a subset of what no recompute
# keeps). Full recompute is not ordered: its re-materialised layer can outweigh what it saves when a
# stage holds a single layer pass.
SMALLER_RECOMPUTE = {("selective", "none"), ("op", "none")}


def no_larger(a: Knobs, b: Knobs) -> bool:
    """Whether `a`'s peak memory is at most `b`'s on every layout: the same model states and CP
    exchange, and activations that differ only by a smaller recompute set, sequence parallel on where
    `b` has it off, pipeline buffers freed where `b` keeps them, sequence-parallel inputs saved as
    the shard where `b` saves them gathered, at least as many layers offloaded to host, or the EP overlap
    off where `b` has it on (each shrinks every stage's activations: memory.layer_activation_bytes,
    memory.pipeline_buffer_units, stage.stage_activation_bytes; the overlap's schedule holds one chunk more
    under an interleaved pipeline, memory.inflight_microbatches). Per-op recompute keeps the outputs of the
    stack's own matmuls, so under it the projections must match."""
    return (_states(a) == _states(b) and (a.proj == b.proj or "op" not in (a.recompute, b.recompute))
            and ((a.recompute, a.rcl) == (b.recompute, b.rcl) or (a.recompute, b.recompute) in SMALLER_RECOMPUTE)
            and a.sp >= b.sp and (a.pbuf == b.pbuf or a.pbuf == "freed") and a.spg <= b.spg and a.offl >= b.offl
            and a.epo <= b.epo)


def _states(k: Knobs) -> tuple:
    """What, besides the activations' knobs no_larger orders, a combination's peak depends on: the model states,
    the CP exchange, the experts' activation prologue (what its clamps keep) and the loss (what an eager one keeps
    of the logits): every field of Knobs.memory that no_larger does not compare otherwise. (It once left out the
    last two, so a Megatron-LM gpt-oss combination with the prologue that did not fit marked a torchtitan one
    without it as not fitting either: 7 fitting combinations lost on 128 H100.)"""
    return (*k.states, k.cpc, k.actp, k.xent)


def layout_peaks(t: LayoutTables, knobs: list[Knobs], capacity_bytes: float) -> list[tuple[Knobs, float]]:
    """(knobs, peak bytes) of a layout, by _memory_order; a combination that some combination no
    larger than it already exceeds `capacity_bytes` is not sized (its peak is reported as infinite).
    Combinations with one memory key (Knobs.memory: they differ only in what memory does not read)
    are judged once, by their first: no_larger reads only that key. Block recompute's counts (Knobs.rcl) are
    not among `knobs` (memory_walk): fitting_tables adds them unsized, table_best_first sizes them
    (least_fitting_blocks, then fewest_fitting_blocks)."""
    ordered = sorted(knobs, key=_memory_order)
    over: dict[tuple, list[Knobs]] = {}  # by _states: only those can bound each other
    peaks: dict[tuple, float] = {}
    for k in ordered:
        if k.memory in peaks:
            continue
        group = over.setdefault(_states(k), [])
        if any(no_larger(o, k) for o in group):
            peaks[k.memory] = math.inf
            continue
        peak = t.peak_memory(k)
        if peak > capacity_bytes:
            group.append(k)
        peaks[k.memory] = peak
    return [(k, peaks[k.memory]) for k in ordered]


def with_block_counts(fits: tuple[Knobs, ...], offered: tuple[Knobs, ...]) -> tuple[Knobs, ...]:
    """`fits` (the layout's fitting combinations, sized) and the block recompute counts `offered` has for each
    fitting full recompute of every layer whose combination without recompute does not fit (then each count is
    slower: it replays layers), unsized: they hold more than every layer's recompute and less than none
    (stage.stage_activation_bytes), so only those may fit, and the bounds take the fewest layers any of them
    replays (bound_recompute) until table_best_first sizes them."""
    blocks = [k for k in offered if k.rcl]
    if not blocks:
        return fits
    sized = {k.values for k in fits}
    return fits + tuple(k for k in blocks if k.block_family in sized and k.unrecomputed not in sized)


def least_fitting_blocks(t: LayoutTables, knobs: tuple[Knobs, ...], capacity_bytes: float) -> tuple[Knobs, ...]:
    """`knobs` less the block recompute counts below the fewest layers per chunk that any family (the combination
    of every layer's recompute, which fits) fits with: none of those fits, the rest are left unsized. A family
    is sized only below the least count found so far (a count that does not fit bounds every smaller one, which
    holds more), so where the first family fits with one layer the others cost nothing."""
    least = math.inf
    for counts in _block_families(knobs):
        below = [k for k in counts if k.rcl < least]
        if below and t.peak_memory(below[-1]) <= capacity_bytes:
            least = below[_first_fitting(t, below, capacity_bytes)].rcl
    return tuple(k for k in knobs if k.rcl >= least or not k.rcl)


def fewest_fitting_blocks(t: LayoutTables, knobs: tuple[Knobs, ...], capacity_bytes: float) -> tuple[Knobs, ...]:
    """`knobs` with their block recompute counts sized: per family (the combination of every layer's recompute,
    which fits) the fewest layers per chunk that fit, in its place, or none of them (fewest_recomputed)."""
    chosen = []
    for counts in _block_families(knobs):
        first = _first_fitting(t, counts, capacity_bytes)
        chosen += counts[first:first + 1]
    return fewest_recomputed(tuple(k for k in knobs if not k.rcl) + tuple(chosen))


def _block_families(knobs: tuple[Knobs, ...]) -> list[list[Knobs]]:
    """`knobs`' block recompute counts (Knobs.rcl > 0) by family (Knobs.block_family), each by increasing count."""
    families: dict[tuple, list[Knobs]] = {}
    for k in sorted((k for k in knobs if k.rcl), key=lambda k: k.rcl):
        families.setdefault(k.block_family, []).append(k)
    return list(families.values())


def _first_fitting(t: LayoutTables, counts: list[Knobs], capacity_bytes: float) -> int:
    """The index of the first of a family's `counts` (increasing) whose peak fits, len(counts) where none does: fewer
    layers replayed hold more (stage.stage_activation_bytes), so by bisection."""
    low, high = 0, len(counts)
    while low < high:
        mid = (low + high) // 2
        if t.peak_memory(counts[mid]) <= capacity_bytes:
            high = mid
        else:
            low = mid + 1
    return low


def _memory_order(k: Knobs) -> tuple:
    """Smaller activations first, so that a combination that does not fit is met before those it bounds."""
    return (k.recompute == "none", not k.sp, k.pbuf != "freed", k.spg, -k.offl, k.epo)


def fitting_tables(space: Space, ctx: TableContext, capacity_bytes: float) -> dict:
    """Per layout with a plan that fits, (its LayoutTables, the knob combinations that fit, less those
    that offload more layers than a fitting one that is otherwise the same: fewest_offloaded)."""
    out = {}
    for _, lay, t, peaks in memory_walk(space, ctx, capacity_bytes):
        fits = fewest_offloaded(tuple(k for k, peak in peaks if peak <= capacity_bytes))
        if space.sizes_blocks_late:
            fits = with_block_counts(fits, space.knobs[lay])
        if fits:
            out[lay] = (t, fits)
    return out


def fewest_offloaded(knobs: tuple[Knobs, ...]) -> tuple[Knobs, ...]:
    """Of fitting combinations that differ only in the layers they offload to host, the one that offloads
    fewest: offload only adds time (stage.offload_seconds grows with the count and nothing else reads it),
    so it is never slower, and it holds the least in host memory, which the cost model does not count."""
    return _least_of_count(knobs, "offl", lambda n: n)


def fewest_recomputed(knobs: tuple[Knobs, ...]) -> tuple[Knobs, ...]:
    """Of fitting combinations that differ only in the layers block recompute replays (Knobs.rcl; 0: every
    layer), the one that replays fewest: replaying a layer only adds time (its forward again, its TP and CP
    exchanges and ZeRO-3 gather again: stage.recompute_parts, dataparallel.dp_sync_seconds) and frees memory,
    which has been checked."""
    return _least_of_count(knobs, "rcl", lambda n: n or math.inf)


def _least_of_count(knobs: tuple[Knobs, ...], name: str, cost) -> tuple[Knobs, ...]:
    """Of combinations that differ only in the count knob `name` (offl, rcl), those whose count has the least
    `cost(count)`; all of them when none sets it."""
    if all(getattr(k, name) == 0 for k in knobs):
        return knobs
    keys = [knob_variant(k.values, **{name: 0}) for k in knobs]
    least: dict[tuple, float] = {}
    for key, k in zip(keys, knobs):
        least[key] = min(least.get(key, math.inf), cost(getattr(k, name)))
    return tuple(k for key, k in zip(keys, knobs) if cost(getattr(k, name)) == least[key])


def table_best_first(space: Space, ctx: TableContext, capacity_bytes: float, k: int) -> Tabled:
    """Candidates of every layout that may hold one of the K best layout groups' best fitting plans.

    Only plans that fit are timed (fitting_tables sorts them out from memory alone). Layouts leave a
    heap in increasing bound order: first by the compute-only bound (compute_bound, the cheapest), then,
    re-queued, by the loose bound, then by the tight one over their fitting knobs (block recompute's counts
    sized in two steps on the way: the module's docstring); a layout is tabled
    when its tight bound is the least in the heap, and the search ends when the least bound exceeds
    the K-th best group's best step time."""
    fitting = fitting_tables(space, ctx, capacity_bytes)
    heap = [(compute_bound(t, knobs), 0, lay) for lay, (t, knobs) in fitting.items()]
    heapq.heapify(heap)
    best: dict[tuple, float] = {}
    out: list[Candidate] = []
    threshold, tabled = math.inf, 0
    least: set = set()  # layouts whose least fitting block recompute count is known (least_fitting_blocks)
    while heap and heap[0][0] <= threshold:
        _, level, lay = heapq.heappop(heap)
        t, knobs = fitting[lay]
        if level == 0 and lay not in least and any(k.rcl for k in knobs):  # block counts: the least that fits,
            least.add(lay)  # then the compute bound again, which read the fewest any count replays
            fitting[lay] = t, least_fitting_blocks(t, knobs, capacity_bytes)
            heapq.heappush(heap, (compute_bound(*fitting[lay]), 0, lay))
            continue
        if level == 1 and any(k.rcl for k in knobs):  # each family's fewest, for the tight bound (the loose one
            knobs = fewest_fitting_blocks(t, knobs, capacity_bytes)  # read the least: it still holds)
            fitting[lay] = t, knobs
        if level < 2:  # 0: compute only, 1: loose, 2: tight (then tabled)
            heapq.heappush(heap, (lower_bound(t, knobs, tight=level == 1), level + 1, lay))
            continue
        tabled += 1
        for c in t.candidates(knobs):
            out.append(c)
            if c.peak_memory_bytes <= capacity_bytes and c.step_seconds < best.get(lay.group, math.inf):
                best[lay.group] = c.step_seconds
                threshold = kth_best(best, k)
    return Tabled(out, tabled, len(space.knobs))


def table_all(space: Space, ctx: TableContext) -> list[Candidate]:
    """Every plan of the space, tabled (no bound)."""
    return [c for lay, knobs in space.knobs.items() for c in LayoutTables(ctx, lay).candidates(knobs)]

