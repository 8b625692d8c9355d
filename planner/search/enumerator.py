"""The plain enumerator: step.estimate on every plan of the space. The test oracle for the CP-SAT
search (same space, no tables, no solver), and a fallback (`--solver enumerate`) for small spaces."""
from __future__ import annotations

from dataclasses import dataclass

from costmodel import types as cm
from costmodel.step import Estimate, estimate
from planner.search.objective import primary_key
from planner.search.space import Knobs, Layout, Space, plan_for


@dataclass(frozen=True)
class Scored:
    layout: Layout
    knobs: Knobs
    est: Estimate


def scored_plans(space: Space, eff: cm.Efficiency) -> list[Scored]:
    """Every plan of the space, scored by the cost model (no memory filter)."""
    spec = space.spec
    return [Scored(lay, k, estimate(spec.model, spec.cluster, plan_for(spec, lay, k), eff))
            for lay, knobs in space.knobs.items() for k in knobs]


def best_per_group(scored: list[Scored], capacity_bytes: float, objective: str) -> list[Scored]:
    """The best plan that fits of each distinct layout group (tp, pp, dp), best group first.
    Ties on the objective go to the smaller (layout, knobs), as in the CP-SAT search."""
    best: dict[tuple, Scored] = {}
    for s in scored:
        if s.est.memory_per_gpu_bytes > capacity_bytes:
            continue
        key = (primary_key(s.est.step_time_seconds, s.est.usd_per_step, objective), s.layout, s.knobs)
        cur = best.get(s.layout.group)
        if cur is None or key < (primary_key(cur.est.step_time_seconds, cur.est.usd_per_step, objective),
                                 cur.layout, cur.knobs):
            best[s.layout.group] = s
    return sorted(best.values(), key=lambda s: (primary_key(s.est.step_time_seconds, s.est.usd_per_step,
                                                            objective), s.layout, s.knobs))


def top_k(space: Space, eff: cm.Efficiency, capacity_bytes: float, objective: str, k: int) -> list[Scored]:
    return best_per_group(scored_plans(space, eff), capacity_bytes, objective)[:k]
