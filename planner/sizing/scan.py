"""Pre-purchase sizing: which offering (GPU type, node shape, network, price) and how many GPUs.

For every priced cluster offering and GPU count (whole nodes), the best plan is found by the
plan search; its step time becomes time and dollars to train `tokens`, with checkpoint and
failure overheads (costmodel/runtime.py). The choice among (offering, count) options is a
CP-SAT model (`choose`) whose coefficients are those per-option totals; `pareto` and a plain
minimum are its oracles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Optional

from costmodel import dollars, memory, runtime
from costmodel import types as cm
from costmodel.compute import large_gemm_fraction
from costmodel.flops import total_parameters
from planner.analysis import whatif
from planner.analysis.score import Scored, score
from planner.analysis.whatif import WhatIf
from planner.inputs.specs import ClusterSpec, GpuSpec, ModelSpec

DAY = 86400.0
BestPlan = Callable[[ModelSpec, cm.Cluster, cm.Efficiency], Optional[Scored]]


@dataclass(frozen=True)
class Offering:
    spec: ClusterSpec
    gpu: GpuSpec
    usd_per_gpu_hour: float

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class RunAssumptions:
    """What a real run pays beyond its steps (stated in the output)."""

    failures_per_gpu_hour: float = runtime.LLAMA3_INTERRUPTIONS_PER_GPU_HOUR
    restart_seconds: float = 600.0  # detect, reschedule, reload: assumed 10 minutes
    checkpoint_write_bytes_per_second_per_node: float = 1e9  # ~Llama 3's 2 TB/s sustained over 2048 nodes


@dataclass(frozen=True)
class Option:
    offering: Offering
    num_gpus: int
    best: Optional[Scored]  # None: no plan fits
    steps: int
    step_seconds_total: float
    wall: Optional[runtime.RunOverheads]

    @property
    def feasible(self) -> bool:
        return self.best is not None and self.wall is not None and math.isfinite(self.wall.total_seconds)

    @property
    def days(self) -> float:
        return self.wall.total_seconds / DAY if self.feasible else math.inf

    @property
    def usd(self) -> float:
        if not self.feasible:
            return math.inf
        return self.wall.total_seconds / 3600.0 * self.num_gpus * self.offering.usd_per_gpu_hour


def gpu_counts(gpus_per_node: int, max_gpus: int, min_gpus: int = 1, fine: bool = False) -> list[int]:
    """Whole-node counts of at least `min_gpus` GPUs: 1, 2, 4, 8, ... nodes, and with `fine` also
    the 1.5x steps between (3, 6, 12, ... nodes)."""
    out, nodes = [], 1
    while nodes * gpus_per_node <= max_gpus:
        steps = (nodes, nodes * 3 // 2) if fine else (nodes,)
        out += [n * gpus_per_node for n in steps if n * gpus_per_node <= max_gpus]
        nodes *= 2
    return sorted(c for c in set(out) if c >= min_gpus)


def evaluate(model: ModelSpec, offering: Offering, cluster: cm.Cluster, best: Optional[Scored], tokens: float,
             assumptions: RunAssumptions) -> Option:
    """Time and dollars to train `tokens` with the best plan on `cluster`."""
    if best is None:
        return Option(offering, cluster.num_gpus, None, 0, math.inf, None)
    gbs = best.plan.global_batch_size
    steps = dollars.steps_to_train(tokens, gbs, model.seq_length)
    work = steps * best.est.step_time_seconds
    nodes = max(1, cluster.num_gpus // cluster.gpus_per_node)
    ckpt = runtime.checkpoint_seconds(total_parameters(model.to_model()), nodes,
                                      assumptions.checkpoint_write_bytes_per_second_per_node)
    wall = runtime.run_wall_clock(work, cluster.num_gpus, ckpt, assumptions.failures_per_gpu_hour / 3600.0,
                                  assumptions.restart_seconds)
    return Option(offering, cluster.num_gpus, best, steps, work, wall)


def pareto(options: list[Option]) -> list[Option]:
    """Options no other beats on both time and dollars, fastest first."""
    front, best_usd = [], math.inf
    for o in sorted((o for o in options if o.feasible), key=lambda o: (o.days, o.usd)):
        if o.usd < best_usd:
            front.append(o)
            best_usd = o.usd
    return front


def _key(o: Option, minimize: str) -> tuple[float, float]:
    return (o.usd, o.days) if minimize == "usd" else (o.days, o.usd)


def _allowed(o: Option, deadline_days: float | None, budget_usd: float | None) -> bool:
    return o.feasible and (deadline_days is None or o.days <= deadline_days) and (budget_usd is None or o.usd <= budget_usd)


def choose_plain(options: list[Option], minimize: str, deadline_days: float | None = None,
                 budget_usd: float | None = None) -> Optional[Option]:
    """Oracle for `choose`: the best allowed option by (primary, secondary), first on ties."""
    allowed = [o for o in options if _allowed(o, deadline_days, budget_usd)]
    return min(allowed, key=lambda o: _key(o, minimize)) if allowed else None


def choose(options: list[Option], minimize: str, deadline_days: float | None = None,
           budget_usd: float | None = None) -> Optional[Option]:
    """CP-SAT over the (offering, count) options: one is chosen; the deadline and budget bound
    its days and dollars; minimise dollars (or days), then the other. Coefficients are the
    options' own totals, in whole cents and seconds."""
    from ortools.sat.python import cp_model

    feasible = [o for o in options if o.feasible]
    if not feasible:
        return None
    cents = [round(o.usd * 100) for o in feasible]
    secs = [round(o.days * DAY) for o in feasible]
    primary, secondary = (cents, secs) if minimize == "usd" else (secs, cents)
    model = cp_model.CpModel()
    pick = [model.NewBoolVar(f"o{i}") for i in range(len(feasible))]
    model.AddExactlyOne(pick)  # exactly one offering and GPU count
    if deadline_days is not None:  # the deadline bounds time to train
        model.Add(sum(p * s for p, s in zip(pick, secs)) <= math.floor(deadline_days * DAY))
    if budget_usd is not None:  # the budget bounds total dollars
        model.Add(sum(p * c for p, c in zip(pick, cents)) <= math.floor(budget_usd * 100))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    model.Minimize(sum(p * v for p, v in zip(pick, primary)))
    if solver.Solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    model.Add(sum(p * v for p, v in zip(pick, primary)) == round(solver.ObjectiveValue()))
    model.Minimize(sum(p * (v * len(feasible) + i) for i, (p, v) in enumerate(zip(pick, secondary))))
    solver.Solve(model)
    return next(o for o, p in zip(feasible, pick) if solver.Value(p))


def priced_offerings(table: dict[str, ClusterSpec], gpus: dict[str, GpuSpec], gpu_types: list[str] | None,
                     prices: dict[str, float] | None = None, include_spot: bool = False
                     ) -> tuple[list[Offering], list[str]]:
    """Catalog rows with a price (a `prices` entry by cluster or GPU name overrides it), optionally
    only some GPU types; also the names skipped for want of a price. Spot capacity is left out
    unless asked for: a weeks-long run on preemptible GPUs pays preemptions the failure model
    (a reserved cluster's interruption rate) does not include."""
    prices = prices or {}
    out, skipped = [], []
    for spec in table.values():
        gpu = gpus[spec.gpu] if isinstance(spec.gpu, str) else spec.gpu
        if gpu_types and gpu.name not in gpu_types:
            continue
        if spec.price_kind == "spot" and not include_spot:
            skipped.append(f"{spec.name} (spot)")
            continue
        price = prices.get(spec.name, prices.get(gpu.name, spec.usd_per_gpu_hour))
        if not price:
            skipped.append(f"{spec.name} (no price)")
            continue
        out.append(Offering(spec, gpu, price))
    return out, skipped


def hardware_key(cluster: cm.Cluster) -> tuple:
    """Everything that sets step time, not the name or price: equal keys have the same best plans."""
    c = cluster
    return (c.gpu.name, c.num_gpus, c.gpus_per_node, c.nvlink_domain_size, c.nvlink_bandwidth_bytes_per_second,
            c.network_bandwidth_bytes_per_second, c.rdma, c.nvlink_busbw_bytes_per_second,
            c.network_busbw_bytes_per_second, c.nvlink_latency_seconds, c.network_latency_seconds,
            c.matmul_efficiency_scale)


def min_gpus_for_states(model: ModelSpec, gpu: GpuSpec) -> int:
    """Fewest GPUs whose memory can hold the model states at all: the cost model's mixed-precision
    Adam states (16 B per parameter, ZeRO Sec 3.1; every expert's for a mixture of experts) fully sharded, with nothing left for
    activations. A necessary condition, so smaller counts are skipped without a search."""
    states = memory.state_bytes_per_param("bf16", "bf16")
    need = (states.parameters + states.gradients + states.optimizer_states) * total_parameters(model.to_model())
    return max(1, math.ceil(need / (gpu.memory_gib * 2**30)))


def min_gpus_for_deadline(model: ModelSpec, gpu: GpuSpec, tokens: float, deadline_days: float | None,
                          eff: cm.Efficiency | None = None) -> int:
    """Fewest GPUs that could finish `tokens` by the deadline even at the best GEMM efficiency the
    cost model allows (dense bf16 peak x the generation's large-GEMM fraction) with no overhead:
    model FLOPs 6 N D (Kaplan et al. 2020; N the parameters a token uses, its top-k experts for a
    mixture of experts) over that rate. A lower bound, so counts below it are skipped without a search."""
    if not deadline_days:
        return 1
    eff = eff or cm.Efficiency()
    flops = 6.0 * total_parameters(model.to_model(), active=True) * tokens
    g = gpu.to_gpu()
    rate = g.peak_flops_per_second("bf16") * large_gemm_fraction(g, "bf16", eff)
    return max(1, math.floor(flops / (deadline_days * DAY * rate)))


@dataclass(frozen=True)
class Scan:
    options: list[Option]
    searched: int  # (hardware, count) searches run
    notes: list[str]


def cluster_for(off: Offering, count: int, wi: WhatIf | None) -> tuple[cm.Cluster, cm.Efficiency]:
    """The offering at `count` GPUs, priced, with the what-if assumptions applied."""
    cluster = replace(off.spec.to_cluster(off.gpu, count), usd_per_gpu_hour=off.usd_per_gpu_hour)
    if wi is None:
        return cluster, cm.Efficiency()
    return whatif.apply_cluster(cluster, wi), whatif.apply_efficiency(cm.Efficiency(), wi)


def scan_hardware(model: ModelSpec, off: Offering, max_gpus: int, best_plan: BestPlan, min_gain: float,
                  fine: bool, min_gpus: int = 1, wi: WhatIf | None = None
                  ) -> tuple[dict[int, Optional[cm.Plan]], list[str]]:
    """Best plan per GPU count for one hardware shape, smallest count first. Stops when the next
    count speeds the step up by less than `min_gain`: larger counts then cost more for almost no
    time, so they add (almost) nothing to the time/dollar Pareto front."""
    plans: dict[int, Optional[cm.Plan]] = {}
    last_step = math.inf
    counts = gpu_counts(off.spec.gpus_per_node, max_gpus, max(min_gpus, min_gpus_for_states(model, off.gpu)), fine)
    if not counts:  # the deadline rules every count out: still size the largest, to say how close it gets
        counts = gpu_counts(off.spec.gpus_per_node, max_gpus, min_gpus_for_states(model, off.gpu), fine)[-1:]
    for count in counts:
        found = best_plan(model, *cluster_for(off, count, wi))
        plans[count] = found.plan if found else None
        _report(off.gpu.name, count)
        if found is None:
            continue
        if found.est.step_time_seconds > last_step * (1 - min_gain):
            return plans, [f"{off.gpu.name} ({off.spec.name}-like): scan stopped at {count} GPUs "
                           f"(under {100 * min_gain:.0f}% faster than the previous count)"]
        last_step = found.est.step_time_seconds
    return plans, []


# Where a scan reports each finished search (GPU name, count): None, or a callable in this process,
# or a multiprocessing queue inherited by the forked workers.
_PROGRESS = None


def _report(gpu: str, count: int) -> None:
    if _PROGRESS is None:
        return
    if callable(_PROGRESS):
        _PROGRESS(gpu, count)
    else:
        _PROGRESS.put((gpu, count))


def _scan_job(args):
    return scan_hardware(*args)


def dominates(a: Offering, b: Offering) -> bool:
    """`a` is never slower nor dearer than `b` at any GPU count: the same GPU and node shape, at
    least the bandwidth on every tier (the cost model never slows down with more bandwidth),
    RDMA if `b` has it, and no higher price; strictly better somewhere."""
    ca, cb = a.spec.to_cluster(a.gpu, 8), b.spec.to_cluster(b.gpu, 8)
    same = (ca.gpu.name == cb.gpu.name and ca.gpus_per_node == cb.gpus_per_node
            and ca.nvlink_domain_size == cb.nvlink_domain_size and ca.matmul_efficiency_scale == cb.matmul_efficiency_scale)
    at_least = (ca.nvlink_bandwidth_bytes_per_second >= cb.nvlink_bandwidth_bytes_per_second
                and ca.network_bandwidth_bytes_per_second >= cb.network_bandwidth_bytes_per_second
                and not (cb.rdma and not ca.rdma) and not ca.network_busbw_bytes_per_second
                and not cb.network_busbw_bytes_per_second and not ca.nvlink_busbw_bytes_per_second
                and not cb.nvlink_busbw_bytes_per_second
                and ca.network_latency_seconds == cb.network_latency_seconds and a.usd_per_gpu_hour <= b.usd_per_gpu_hour)
    return same and at_least and hardware_key(ca) + (a.usd_per_gpu_hour,) != hardware_key(cb) + (b.usd_per_gpu_hour,)


def undominated(offerings: list[Offering]) -> tuple[list[Offering], list[str]]:
    """Offerings no other one dominates, and a note for each left out."""
    keep, notes = [], []
    for b in offerings:
        a = next((a for a in offerings if a is not b and dominates(a, b)), None)
        if a is None:
            keep.append(b)
        else:
            notes.append(f"{b.name}: not sized, {a.name} has the same GPUs, at least its bandwidth and a lower price")
    return keep, notes


def scan(model: ModelSpec, offerings: list[Offering], max_gpus: int, tokens: float, best_plan: BestPlan,
         assumptions: RunAssumptions, min_gain: float = 0.05, fine: bool = False, workers: int = 2,
         deadline_days: float | None = None, wi: WhatIf | None = None, progress=None) -> Scan:
    """Every offering at every whole-node count. Each hardware shape is scanned once (in parallel
    over `workers` processes); offerings that differ only in price re-score its plans. With a
    deadline, counts too small to meet it even at peak efficiency are not searched. `progress`
    (gpu name, count) is called after each search, in this process."""
    offerings, dominated = undominated(offerings)
    shapes: dict[tuple, list[Offering]] = {}
    for off in offerings:
        shapes.setdefault(hardware_key(off.spec.to_cluster(off.gpu, off.spec.gpus_per_node)), []).append(off)
    jobs = [(model, group[0], max_gpus, best_plan, min_gain, fine,
             min_gpus_for_deadline(model, group[0].gpu, tokens, deadline_days), wi) for group in shapes.values()]
    results = _run_jobs(jobs, workers, progress)
    options, notes, searched = [], dominated, 0
    for group, (plans, shape_notes) in zip(shapes.values(), results):
        notes += shape_notes
        searched += len(plans)
        for off in group:
            for count, plan in plans.items():
                cluster, eff = cluster_for(off, count, wi)
                best = score(model, cluster, plan, eff) if plan else None
                options.append(evaluate(model, off, cluster, best, tokens, assumptions))
    return Scan(options, searched, notes)


def _run_jobs(jobs: list, workers: int, progress=None) -> list:
    global _PROGRESS
    if workers <= 1 or len(jobs) <= 1:
        _PROGRESS = progress
        try:
            return [_scan_job(j) for j in jobs]
        finally:
            _PROGRESS = None
    import multiprocessing
    import queue
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork")
    _PROGRESS = ctx.Queue() if progress else None  # the forked workers inherit it
    try:
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            futures = [pool.submit(_scan_job, j) for j in jobs]
            while _PROGRESS is not None and not all(f.done() for f in futures):
                try:
                    progress(*_PROGRESS.get(timeout=0.1))
                except queue.Empty:
                    pass
            return [f.result() for f in futures]
    finally:
        _PROGRESS = None


def search_best_plan(model: ModelSpec, cluster: cm.Cluster, eff: cm.Efficiency | None = None) -> Optional[Scored]:
    """The fastest fitting plan of `planner suggest` (CP-SAT, any framework), or None."""
    from planner.errors import PlannerError
    from planner.search import suggest
    from planner.search.space import SearchSpec

    try:
        result = suggest.run(SearchSpec(model.to_model(), cluster, model.global_batch_size), suggest.Options(top_k=1),
                             eff)
    except PlannerError:
        return None
    return score(model, cluster, result.ranked[0].plan, eff)


def best_by_gpu(options: list[Option], deadline_days: float | None) -> dict[str, Option]:
    """Per GPU type, its cheapest option meeting the deadline, else its fastest."""
    out: dict[str, Option] = {}
    for gpu in sorted({o.offering.gpu.name for o in options}):
        mine = [o for o in options if o.offering.gpu.name == gpu and o.feasible]
        if not mine:
            continue
        meets = [o for o in mine if deadline_days is None or o.days <= deadline_days]
        out[gpu] = min(meets, key=lambda o: (o.usd, o.days)) if meets else min(mine, key=lambda o: (o.days, o.usd))
    return out


def why_loses(loser: Option, winner: Option, deadline_days: float | None) -> str:
    """One line: the main reason `loser` (another GPU type's best) loses to `winner`."""
    if deadline_days is not None and loser.days > deadline_days:
        return (f"misses the deadline: fastest is {loser.days:.1f} days on {loser.num_gpus} GPUs "
                f"(scan limit or scaling)")
    price = loser.offering.usd_per_gpu_hour / winner.offering.usd_per_gpu_hour
    speed = (winner.best.est.tokens_per_second / winner.num_gpus) / (loser.best.est.tokens_per_second / loser.num_gpus)
    if price >= speed:
        return (f"price: ${loser.offering.usd_per_gpu_hour:.2f} vs ${winner.offering.usd_per_gpu_hour:.2f} per "
                f"GPU-hour ({price:.2f}x) outweighs its per-GPU speed")
    comm = sum(loser.best.est.time_breakdown_seconds[k] for k in ("tp_comm", "pp_comm", "dp_comm_exposed"))
    share = comm / loser.best.est.step_time_seconds
    if share > 0.2:
        return f"network: exposed communication is {100 * share:.0f}% of its step"
    return (f"throughput: {speed:.2f}x fewer tokens/s per GPU ({100 * loser.best.est.mfu:.0f}% MFU on a "
            f"{loser.offering.gpu.dense_tflops.get('bf16', 0):.0f} TFLOP/s GPU)")
