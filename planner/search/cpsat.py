"""CP-SAT over the tabled candidates: the K best distinct layouts in one solve.

Model (OR-Tools CP-SAT): a Boolean y per candidate plan; at most one per layout group (tp, cp, pp, dp, ep, etp);
for every group and memory-candidate stage, sum(memory_bytes * y) <= capacity; at most K chosen;
minimise sum((rank - M) * y), where a candidate's rank is its place in the exact (objective, other
measure, layout, knobs) order. Each chosen y lowers the objective by more than any plan costs
(M > every rank), so the solver picks min(K, groups that fit) groups, and among those the set with
the smallest total rank, which is the K groups whose best fitting plans are best: at most one plan
per group and a fit that is each plan's own make the answer depend only on the order, so the rank
stands for the objective exactly (no rounding, no overflow however long a step), ties break the
same way every run, and it is the same answer as K solves that each forbid the previous winner's
group, in one solve.

Presolve: within a group a candidate that is no faster and no smaller in peak memory than another
can never be chosen, so only each group's (objective, peak memory) Pareto front enters the model.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass

from costmodel import types as cm
from planner.search.objective import usd_per_step
from planner.search.tables import Candidate

SOLVER_SEED = 20240601
SOLVER_TIME_LIMIT_SECONDS = 60.0


@dataclass(frozen=True)
class SolveResult:
    chosen: list[Candidate]  # best first
    status: str
    literals: int
    wall_seconds: float


def sort_key(cluster: cm.Cluster, objective: str):
    def key(c: Candidate) -> tuple:
        step, usd = c.step_seconds, usd_per_step(cluster, c.step_seconds)
        main = (step, usd) if objective == "time" else (usd, step)
        return (*main, c.layout, c.knobs)
    return key


def pareto_front(cands: list[Candidate], key) -> list[Candidate]:
    """Per layout group, the candidates not dominated in (objective, peak memory)."""
    groups: dict[tuple, list[Candidate]] = defaultdict(list)
    for c in cands:
        groups[c.layout.group].append(c)
    kept = []
    for members in groups.values():
        smallest = math.inf
        for c in sorted(members, key=key):
            if c.peak_memory_bytes < smallest:
                kept.append(c)
                smallest = c.peak_memory_bytes
    return kept


def build_model(kept: list[Candidate], capacity_bytes: float, k: int):
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    n = len(kept)
    weights = list(range(n))  # kept is in the exact order (solve_top_k)
    big = n
    ys = [model.new_bool_var(f"y{i}") for i in range(n)]
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, c in enumerate(kept):
        groups[c.layout.group].append(i)
    cap = math.floor(capacity_bytes)
    for members in groups.values():
        model.add_at_most_one(ys[i] for i in members)
        for s in range(max(len(kept[i].memory_bytes) for i in members)):
            mem = [math.ceil(kept[i].memory_bytes[s]) if s < len(kept[i].memory_bytes) else 0 for i in members]
            model.add(cp_model.LinearExpr.weighted_sum([ys[i] for i in members], mem) <= cap)
    model.add(sum(ys) <= k)
    model.minimize(cp_model.LinearExpr.weighted_sum(ys, [w - big for w in weights]))
    return model, ys, weights


def solve_top_k(cands: list[Candidate], cluster: cm.Cluster, objective: str, capacity_bytes: float,
                k: int) -> SolveResult:
    """The best fitting plan of each of the K best layout groups, best first (empty if nothing fits)."""
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    kept = sorted(pareto_front(cands, sort_key(cluster, objective)), key=sort_key(cluster, objective))
    if not kept:
        return SolveResult([], "EMPTY", 0, time.perf_counter() - start)
    model, ys, weights = build_model(kept, capacity_bytes, k)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SOLVER_SEED
    solver.parameters.max_time_in_seconds = SOLVER_TIME_LIMIT_SECONDS
    status = solver.solve(model)
    chosen = []
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        chosen = [i for i, y in enumerate(ys) if solver.boolean_value(y)]
    ranked = [kept[i] for i in sorted(chosen, key=lambda i: weights[i])]
    return SolveResult(ranked, solver.status_name(status), len(kept), time.perf_counter() - start)
