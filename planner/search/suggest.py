"""`planner suggest` without the printing: space -> tables (best first) -> CP-SAT -> ranked plans.

The enumerator (`solver="enumerate"`) scores every plan with step.estimate instead; both return the
best fitting plan of each of the K best layout groups (tp, pp, dp), best first.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from costmodel import types as cm
from planner.errors import PlannerError
from planner.frameworks import REGISTRY, building
from planner.inputs import limits as L
from planner.search import bounds, cpsat, enumerator, nofit
from planner.search.objective import OBJECTIVES
from planner.search.space import Knobs, Layout, SearchSpec, Space, build_space, plan_for
from planner.search.tables import TableContext

SOLVERS = ("cpsat", "enumerate")


@dataclass(frozen=True)
class Options:
    top_k: int = 5
    objective: str = "time"
    max_memory_fraction: float = L.MEMORY_FRACTION  # of the GPU's memory; the cost model already adds 2 GiB overhead
    solver: str = "cpsat"


@dataclass(frozen=True)
class Ranked:
    """One suggested plan with what the search believed of it (for the re-score check)."""

    layout: Layout
    knobs: Knobs
    plan: cm.Plan
    step_seconds: float
    peak_memory_bytes: float


@dataclass
class Result:
    ranked: list[Ranked]
    space_size: int
    layouts: int
    layouts_tabled: int
    candidates: int
    literals: int
    status: str
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # requested options no plan of the space uses


def check_options(spec: SearchSpec, opts: Options) -> None:
    if type(opts.top_k) is not int or opts.top_k < 1:  # not a bool, not 2.5 (Options built in Python)
        raise PlannerError(f"--top must be a whole number >= 1 (got {opts.top_k!r})")
    if opts.objective not in OBJECTIVES:
        raise PlannerError(f"--objective must be one of {', '.join(OBJECTIVES)} (got {opts.objective})")
    fraction = opts.max_memory_fraction
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise PlannerError(f"--max-memory-fraction must be in (0, 1] (got {opts.max_memory_fraction})")
    if opts.objective == "cost" and spec.cluster.usd_per_gpu_hour <= 0:
        raise PlannerError(f"--objective cost needs a price: cluster '{spec.cluster.name}' has no usd_per_gpu_hour")
    if opts.solver not in SOLVERS:
        raise PlannerError(f"--solver must be one of {', '.join(SOLVERS)} (got {opts.solver})")


def unused_options(space: Space) -> list[str]:
    """Precisions and gradient dtypes the user asked for that no selected framework runs."""
    used = {(k.precision, k.grad) for k in space.all_knobs()}
    out = [f"--precision {p}: no selected framework runs it on {space.spec.cluster.gpu.name}"
           for p in space.spec.precisions if space.knobs and p not in {u[0] for u in used}]
    out += [f"--grad-dtype {g}: no selected framework reduces gradients in {g}" for g in space.spec.grad_dtypes
            if g and space.knobs and g not in {u[1] for u in used}]
    return out


def _with_cpsat(space: Space, eff: cm.Efficiency, capacity_bytes: float, opts: Options, result: Result) -> None:
    start = time.perf_counter()
    tabled = bounds.table_best_first(space, TableContext(space.spec, eff), capacity_bytes, opts.top_k)
    result.seconds["tables"] = time.perf_counter() - start
    solved = cpsat.solve_top_k(tabled.candidates, space.spec.cluster, opts.objective, capacity_bytes, opts.top_k)
    result.seconds["solver"] = solved.wall_seconds
    result.layouts_tabled, result.candidates = tabled.layouts_tabled, len(tabled.candidates)
    result.literals, result.status = solved.literals, solved.status
    if not solved.chosen:
        raise PlannerError(nofit.nothing_fits(space, capacity_bytes, opts.max_memory_fraction, eff))
    result.ranked = [Ranked(c.layout, c.knobs, plan_for(space.spec, c.layout, c.knobs), c.step_seconds,
                            c.peak_memory_bytes) for c in solved.chosen]


def _with_enumerator(space: Space, eff: cm.Efficiency, capacity_bytes: float, opts: Options, result: Result) -> None:
    start = time.perf_counter()
    scored = enumerator.scored_plans(space, eff)
    best = enumerator.best_per_group(scored, capacity_bytes, opts.objective)[:opts.top_k]
    result.seconds["solver"] = time.perf_counter() - start
    result.layouts_tabled, result.candidates, result.status = len(space.knobs), len(scored), "ENUMERATED"
    if not best:
        raise PlannerError(nofit.nothing_fits_scored(space, scored, capacity_bytes, opts.max_memory_fraction, eff))
    result.ranked = [Ranked(s.layout, s.knobs, plan_for(space.spec, s.layout, s.knobs), s.est.step_time_seconds,
                            s.est.memory_per_gpu_bytes) for s in best]


def run(spec: SearchSpec, opts: Options, eff: cm.Efficiency | None = None) -> Result:
    """The top-K plans of `spec`, or a PlannerError saying in one line why there are none."""
    eff = eff or cm.Efficiency()
    check_options(spec, opts)
    start = time.perf_counter()
    names, left_out = building(spec.frameworks, spec.model)
    space = build_space(replace(spec, frameworks=names) if left_out else spec)
    notes = [f"{REGISTRY[n].title} not searched: {why}" for n, why in left_out.items()]
    result = Result([], space.size, len(space.knobs), 0, 0, 0, "", {"space": time.perf_counter() - start},
                    notes + unused_options(space))
    if not space.knobs:
        raise PlannerError(nofit.nothing_legal(space, tuple(REGISTRY[n].title for n in left_out)))
    capacity_bytes = spec.cluster.gpu.memory_bytes * opts.max_memory_fraction
    run_solver = _with_cpsat if opts.solver == "cpsat" else _with_enumerator
    run_solver(space, eff, capacity_bytes, opts, result)
    return result
