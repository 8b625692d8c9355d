"""Rank stability of `suggest`: does the best plan stay best when an assumption changes?

For each value of one what-if key (e.g. network = 0.5 ... 1.0), the search runs again on the
modified cluster/efficiency; the table says which layout wins there, and how the baseline's best
plan does under that assumption (its step time and its rank among the new top K).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from costmodel import types as cm
from planner.analysis import score as report
from planner.analysis import diagnose, whatif
from planner.errors import PlannerError
from planner.inputs.specs import ModelSpec
from planner.search.space import plan_group


@dataclass(frozen=True)
class GridRow:
    label: str
    best: report.Scored
    baseline_plan_seconds: float  # the baseline winner re-scored under this assumption
    baseline_rank: int | None  # its layout's rank in the new top K (None: not in it)
    baseline_fits: bool = True  # within the search's memory limit (opts.max_memory_fraction) under the assumption


def parse_grid(text: str) -> tuple[str, list[whatif.WhatIf]]:
    """'network=0.5,0.6,1.0' -> ('network', [WhatIf(network=0.5), ...])."""
    key, sep, values = text.partition("=")
    if not sep or not values:
        raise PlannerError(f"--what-if-grid {text}: expected KEY=V1,V2,...")
    if any(not v.strip() for v in values.split(",")):
        raise PlannerError(f"--what-if-grid {text}: an empty value between commas")
    try:
        items = [whatif.parse([f"{key.strip()}={v.strip()}"]) for v in values.split(",")]
    except PlannerError as err:  # whatif.parse names --what-if; this is the grid's value
        raise PlannerError(str(err).replace("--what-if ", "--what-if-grid ", 1)) from None
    unique: dict[str, whatif.WhatIf] = {}  # a value given twice (0.5 and 0.50) is searched once
    for wi in items:
        unique.setdefault(wi.label(), wi)
    return key.strip(), list(unique.values())


def search_under(model: ModelSpec, spec, opts, wi: whatif.WhatIf) -> list[report.Scored]:
    """Top plans of the search with the assumption applied, scored by the cost model."""
    from planner.search import suggest

    cluster = whatif.apply_cluster(spec.cluster, wi)
    eff = whatif.apply_efficiency(cm.Efficiency(), wi)
    result = suggest.run(replace(spec, cluster=cluster), opts, eff)
    return [report.score(model, cluster, r.plan, eff) for r in result.ranked]


def grid(model: ModelSpec, spec, opts, baseline_best: cm.Plan, grid_items: list[whatif.WhatIf]) -> list[GridRow]:
    rows = []
    for wi in grid_items:
        ranked = search_under(model, spec, opts, wi)
        again = report.score(model, whatif.apply_cluster(spec.cluster, wi), baseline_best,
                             whatif.apply_efficiency(cm.Efficiency(), wi))
        layouts = [plan_group(s.plan) for s in ranked]  # the search's distinct-layout key
        rank = layouts.index(plan_group(baseline_best)) + 1 if plan_group(baseline_best) in layouts else None
        rows.append(GridRow(wi.label(), ranked[0], again.est.step_time_seconds, rank,
                            diagnose.fits(again, opts.max_memory_fraction)))
    return rows


def grid_dicts(rows: list[GridRow]) -> list[dict]:
    return [{"assumption": r.label, "best_plan": report.to_dict(r.best)["plan"],
             "best_step_time_s": r.best.est.step_time_seconds, "baseline_plan_step_time_s": r.baseline_plan_seconds,
             "baseline_rank": r.baseline_rank, "baseline_plan_fits": r.baseline_fits} for r in rows]
