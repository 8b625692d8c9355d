"""Best-first tabling: table only the layouts whose lower bound can still reach the top K.

Lower bound of every plan of a layout: its pipeline flush with no recompute and with sequence
parallel (when the layout allows them), over the other pipe keys (precision, weight casts, TP
overlap), plus the fixed overhead; the exposed DP sync and the optimizer step are >= 0. It holds because, in the cost model, for a fixed layout and precision:
  * recompute only adds time (stage.stage_cost: recompute_seconds >= 0, 6 instead of 4 TP
    collectives per layer under full recompute; compute and p2p do not depend on it);
  * sequence parallel never adds time (same TP ring cost, less elementwise HBM traffic), and the
    flush (pipeline.pipeline_seconds) grows with every stage's time.
tests/test_search_tables.py checks both facts on random plans. Layouts are tabled in increasing
bound order until the next bound exceeds the K-th best layout group's best fitting step time;
no layout left out can then enter the top K (its plans are all slower than K other groups' best).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from planner.search.space import Knobs, Space
from planner.search.tables import Candidate, LayoutTables, TableContext


@dataclass(frozen=True)
class Tabled:
    candidates: list[Candidate]
    layouts_tabled: int
    layouts_bounded: int


def lower_bound(tables: LayoutTables, knobs: tuple[Knobs, ...]) -> float:
    """A step time no plan of the layout beats (seconds). Only the fastest value of the knobs with
    one is tried: no recompute, sequence parallel, and TP and EP overlap on (an overlapped collective
    costs at most its whole length: overlap.decomposed_exposed_seconds, overlapped_cost_seconds)."""
    def best(values: set, fastest) -> set:
        return {fastest} if fastest in values else values

    rc_options = best({k.recompute for k in knobs}, "none")
    sp_options = best({k.sp for k in knobs}, True)
    tpo_options = best({k.tpo for k in knobs}, True)
    epo_options = best({k.epo for k in knobs}, True)
    keys = {(k.recompute, k.sp, k.precision, k.casts, k.tpo, k.cpc, k.epo) for k in knobs
            if k.recompute in rc_options and k.sp in sp_options and k.tpo in tpo_options and k.epo in epo_options}
    flush = min(tables.pipe(*key).flush_seconds for key in keys)
    return flush + tables.ctx.eff.step_overhead_seconds


def kth_best(best: dict[tuple, float], k: int) -> float:
    if len(best) < k:
        return math.inf
    return sorted(best.values())[k - 1]


def fitting_tables(space: Space, ctx: TableContext, capacity_bytes: float) -> dict:
    """Per layout with a plan that fits, (its LayoutTables, the knob combinations that fit), from
    peak memory alone (LayoutTables.peak_memory, no timing). A plan's peak never falls as the
    micro-batch grows with the rest of the layout and the knobs fixed (activations are
    b x min(in-flight, m) per sample with m = gbs / (b dp); states do not depend on b;
    tests/test_search_tables.py checks it), so once a knob combination does not fit at one
    micro-batch size, it is not tried at the larger ones."""
    families: dict[tuple, list] = {}
    for lay in space.knobs:
        families.setdefault((lay.tp, lay.cp, lay.ep, lay.etp, lay.pp, lay.dp, lay.vpp), []).append(lay)
    out = {}
    for lays in families.values():
        failed: set = set()  # knob combinations that did not fit at a smaller micro-batch
        for lay in sorted(lays, key=lambda x: x.mbs):
            t = LayoutTables(ctx, lay)
            fits = t.fitting(tuple(k for k in space.knobs[lay] if k not in failed), capacity_bytes)
            failed |= set(space.knobs[lay]) - set(fits)
            if fits:
                out[lay] = (t, fits)
    return out


def table_best_first(space: Space, ctx: TableContext, capacity_bytes: float, k: int) -> Tabled:
    """Candidates of every layout that may hold one of the K best layout groups' best fitting plans.

    Only plans that fit are timed (fitting_tables sorts them out from memory alone), and a layout's
    time bound is over its fitting knob combinations."""
    fitting = fitting_tables(space, ctx, capacity_bytes)
    order = sorted((lower_bound(t, knobs), lay) for lay, (t, knobs) in fitting.items())
    best: dict[tuple, float] = {}
    out: list[Candidate] = []
    threshold, tabled = math.inf, 0
    for bound, lay in order:
        if bound > threshold:
            break
        tabled += 1
        t, knobs = fitting[lay]
        for c in t.candidates(knobs):
            out.append(c)
            if c.peak_memory_bytes <= capacity_bytes and c.step_seconds < best.get(lay.group, math.inf):
                best[lay.group] = c.step_seconds
                threshold = kth_best(best, k)
    return Tabled(out, tabled, len(space.knobs))


def table_all(space: Space, ctx: TableContext) -> list[Candidate]:
    """Every plan of the space, tabled (no bound)."""
    return [c for lay, knobs in space.knobs.items() for c in LayoutTables(ctx, lay).candidates(knobs)]

