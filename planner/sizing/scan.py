"""Pre-purchase sizing: which offering (GPU type, node shape, network, price) and how many GPUs.

For every priced cluster offering and GPU count (whole nodes), the best plan is found by the
plan search; its step time becomes time and dollars to train `tokens`, with checkpoint and
failure overheads (costmodel/runtime.py). The choice among (offering, count) options is a
CP-SAT model (`choose`) whose coefficients are those per-option totals; `pareto` and a plain
minimum are its oracles.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace
from typing import Callable, Optional

from costmodel import dollars, memory, runtime, step
from costmodel import types as cm
from costmodel.flops import total_parameters
from planner.analysis import diagnose, whatif
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


def _unit(values: list[float]) -> float:
    """The integer unit `choose` counts `values` in: a power of ten about a billionth of the largest, so
    the integers stay below about 1e10 whatever the scale (cents of a tiny job, millions of dollars)."""
    top = max(values)
    return 10.0 ** (math.floor(math.log10(top)) - 9) if top > 0 else 1.0


def choose(options: list[Option], minimize: str, deadline_days: float | None = None,
           budget_usd: float | None = None) -> Optional[Option]:
    """CP-SAT over the (offering, count) options: one is chosen; the deadline and budget bound
    its days and dollars; minimise dollars (or days), then the other. Coefficients are the
    options' own totals in integer units of a billionth of the largest (_unit): whole cents would
    tie a $0.0251 and a $0.0258 job, and pick the dearer one as the faster."""
    from ortools.sat.python import cp_model

    feasible = [o for o in options if o.feasible]
    if not feasible:
        return None
    usd_unit, sec_unit = _unit([o.usd for o in feasible]), _unit([o.days * DAY for o in feasible])
    money = [round(o.usd / usd_unit) for o in feasible]
    secs = [round(o.days * DAY / sec_unit) for o in feasible]
    primary, secondary = (money, secs) if minimize == "usd" else (secs, money)
    model = cp_model.CpModel()
    pick = [model.NewBoolVar(f"o{i}") for i in range(len(feasible))]
    model.AddExactlyOne(pick)  # exactly one offering and GPU count
    # The deadline bounds time to train, the budget total dollars: each only where some option breaks it (a
    # bound far above every option, in units of a billionth of the largest, would overflow CP-SAT's int64).
    for limit, unit, values in ((deadline_days and deadline_days * DAY, sec_unit, secs),
                                (budget_usd, usd_unit, money)):
        if limit is not None and limit / unit < max(values):
            model.Add(sum(p * v for p, v in zip(pick, values)) <= math.floor(limit / unit))
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


GIVEN_PRICE = "given: --prices FILE or --what-if price.NAME"


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
        if spec.name in prices or gpu.name in prices:  # the catalog's kind, date and source are not this price's
            spec = spec.model_copy(update={"usd_per_gpu_hour": price, "price_kind": None, "price_date": None,
                                           "price_source": GIVEN_PRICE})
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


# What step.step_seconds_floor counts, for the notes that name it.
FLOOR_TERMS = "weight GEMMs and attention at their best rates"


def min_gpus_for_deadline(model: ModelSpec, off: Offering, tokens: float, deadline_days: float | None,
                          wi: WhatIf | None = None) -> int:
    """Fewest GPUs that could finish `tokens` by the deadline at the cost model's step floor
    (step.step_seconds_floor: the weight GEMMs and the attention cores at their best rates, shared over
    all GPUs, nothing else); the floor goes as 1 / GPUs, so counts below this are skipped without a search."""
    if not deadline_days:
        return 1
    return max(1, math.floor(Floor.of(model, off, off.spec.gpus_per_node, tokens, wi).days
                             * off.spec.gpus_per_node / deadline_days))


@dataclass(frozen=True)
class Floor:
    """What an offering cannot beat at a GPU count: days and dollars at the step floor."""

    days: float
    usd: float

    @staticmethod
    def of(model: ModelSpec, off: Offering, count: int, tokens: float, wi: WhatIf | None) -> "Floor":
        cluster, eff = cluster_for(off, count, wi)
        seconds = dollars.steps_to_train(tokens, model.global_batch_size, model.seq_length) * step.step_seconds_floor(
            model.to_model(), cluster, model.global_batch_size, eff)
        return Floor(seconds / DAY, seconds / 3600.0 * count * off.usd_per_gpu_hour)


def dominator(options: list[Option], floor: Floor) -> Optional[Option]:
    """A found option at least as fast and as cheap as `floor`: then no option with that floor can
    be on the Pareto front, nor be the cheapest meeting a deadline or the fastest within a budget."""
    return next((o for o in options if o.feasible and o.days <= floor.days and o.usd <= floor.usd), None)


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


def shape_counts(model: ModelSpec, off: Offering, max_gpus: int, fine: bool, min_gpus: int) -> list[int]:
    """The whole-node counts to consider for one hardware shape: from what its memory can hold and
    the deadline allows; if the deadline rules every count out, still the largest, to say how close
    it gets."""
    least = min_gpus_for_states(model, off.gpu)
    counts = gpu_counts(off.spec.gpus_per_node, max_gpus, max(min_gpus, least), fine)
    return counts or gpu_counts(off.spec.gpus_per_node, max_gpus, least, fine)[-1:]


def _search_job(args) -> tuple[Optional[cm.Plan], float]:
    model, off, count, best_plan, wi = args
    found = best_plan(model, *cluster_for(off, count, wi))
    return (found.plan, found.est.step_time_seconds) if found else (None, math.inf)


def scan_counts(model: ModelSpec, off: Offering, counts: list[int], best_plan: BestPlan, min_gain: float,
                wi: WhatIf | None = None, pool=None, progress=None
                ) -> tuple[dict[int, Optional[cm.Plan]], list[str]]:
    """Best plan per GPU count for one hardware shape, smallest count first (searched in parallel on
    `pool` when given, read in count order). Stops when a count speeds the step up by less than
    `min_gain` over the previous one that fits: larger counts then cost more for almost no time, so
    they add (almost) nothing to the time/dollar Pareto front."""
    jobs = [(model, off, count, best_plan, wi) for count in counts]
    results = [pool.submit(_search_job, j) for j in jobs] if pool else None
    plans: dict[int, Optional[cm.Plan]] = {}
    last_step = math.inf
    for i, count in enumerate(counts):
        plan, step_seconds = results[i].result() if results else _search_job(jobs[i])
        plans[count] = plan
        if progress:
            progress(off.gpu.name, count)
        if plan is not None and step_seconds > last_step * (1 - min_gain):
            for later in results[i + 1:] if results else ():
                later.cancel()
            return plans, [(f"{off.gpu.name} ({off.spec.name}-like): scan stopped at {count} GPUs "
                            f"(under {100 * min_gain:.0f}% faster than the previous count)")]
        if plan is not None:
            last_step = step_seconds
    return plans, []


def dominates(a: Offering, b: Offering) -> bool:
    """`a` is never slower nor dearer than `b` at any GPU count: the same GPU and node shape, at
    least the bandwidth on every tier (the cost model never slows down with more bandwidth),
    RDMA if `b` has it, and no higher price; strictly better somewhere. A spot offering dominates only
    spot ones: its preemptions are not modelled, so its lower price does not make an on-demand or reserved
    offering (the comparison --include-spot asks for) pointless."""
    if a.spec.price_kind == "spot" and b.spec.price_kind != "spot":
        return False
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
            notes.append(f"{b.name}: not sized, {a.name} has the same GPUs, at least its bandwidth and no higher "
                         "price, and is better in one of them")
    return keep, notes


def scan(model: ModelSpec, offerings: list[Offering], max_gpus: int, tokens: float, best_plan: BestPlan,
         assumptions: RunAssumptions, min_gain: float = 0.05, fine: bool = False, workers: int = 2,
         deadline_days: float | None = None, wi: WhatIf | None = None, progress=None, prune: bool = True) -> Scan:
    """Every offering at every whole-node count that can matter. Each hardware shape is scanned once;
    offerings that differ only in price re-score its plans. Not searched: counts too small to meet
    the deadline even at the step floor, and (with `prune`) counts where an option already found is
    at least as fast and as cheap as the shape's floor there (`dominator`): they cannot change the
    Pareto front or either choice. Shapes go cheapest floor first, one after another, so what is
    pruned does not depend on timing; a shape's counts are searched in parallel over `workers`
    processes. `progress` (gpu name, count) is called after each search."""
    offerings, notes = undominated(offerings)
    shapes: dict[tuple, list[Offering]] = {}
    for off in offerings:
        shapes.setdefault(hardware_key(off.spec.to_cluster(off.gpu, off.spec.gpus_per_node)), []).append(off)
    groups = [sorted(g, key=lambda o: o.usd_per_gpu_hour) for g in shapes.values()]
    groups.sort(key=lambda g: (Floor.of(model, g[0], g[0].spec.gpus_per_node, tokens, wi).usd, g[0].name))
    options: list[Option] = []
    searched = 0
    with _pool(workers) as pool:
        for group in groups:
            off = group[0]  # the cheapest: its floor is the group's
            counts = shape_counts(model, off, max_gpus, fine, min_gpus_for_deadline(model, off, tokens, deadline_days, wi))
            too_slow = [c for c in shape_counts(model, off, max_gpus, fine, 1) if c < counts[0]]
            if too_slow:
                notes.append(f"{off.gpu.name} ({off.spec.name}-like) at {count_range(too_slow)} GPUs: not searched; "
                             f"even at its step floor ({FLOOR_TERMS}) it needs more than {deadline_days:g} days")
            floors = {c: Floor.of(model, off, c, tokens, wi) for c in counts}
            beaten = {c: dominator(options, floors[c]) for c in counts} if prune else {}
            pruned = [c for c in counts if beaten.get(c)]
            if pruned:
                notes.append(pruned_note(off, pruned, floors[pruned[-1]], beaten[pruned[-1]]))
            plans, stop_notes = scan_counts(model, off, [c for c in counts if c not in pruned], best_plan, min_gain,
                                            wi, pool, progress)
            notes += stop_notes
            searched += len(plans)
            for o in group:
                for count, plan in plans.items():
                    cluster, eff = cluster_for(o, count, wi)
                    best = score(model, cluster, plan, eff) if plan else None
                    options.append(evaluate(model, o, cluster, best, tokens, assumptions))
    return Scan(options, searched, notes)


def count_range(counts: list[int]) -> str:
    return f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def duration_text(days: float) -> str:
    """A time to train as people say it: days from one day up, hours from one hour, minutes below (a run of
    0.03 days read "0.0 days")."""
    hours = days * 24.0
    if round(hours, 1) >= 24.0 or not math.isfinite(days):  # 0.9999 days is "1.0 days", not "24.0 hours"
        return f"{days:.1f} days"
    return f"{hours:.1f} hours" if round(hours * 60.0) >= 60 else f"{hours * 60.0:.0f} minutes"


def pruned_note(off: Offering, counts: list[int], floor: Floor, by: Option) -> str:
    return (f"{off.gpu.name} ({off.spec.name}-like) at {count_range(counts)} GPUs: not searched; "
            f"at {counts[-1]} GPUs even its step floor ({FLOOR_TERMS}) takes "
            f"{duration_text(floor.days)} and ${floor.usd:,.0f}, and "
            f"{by.offering.name} x {by.num_gpus} is faster and cheaper ({duration_text(by.days)}, ${by.usd:,.0f})")


@contextlib.contextmanager
def _pool(workers: int):
    """A process pool (fork: the workers inherit the loaded catalogs) or None for one worker."""
    if workers <= 1:
        yield None
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        yield pool


def _search(model: ModelSpec, cluster: cm.Cluster, eff: cm.Efficiency | None):
    """`planner suggest`'s search (CP-SAT, any framework) for its best plan; PlannerError if none."""
    from planner.search import suggest
    from planner.search.space import SearchSpec

    return suggest.run(SearchSpec(model.to_model(), cluster, model.global_batch_size), suggest.Options(top_k=1), eff)


def search_best_plan(model: ModelSpec, cluster: cm.Cluster, eff: cm.Efficiency | None = None) -> Optional[Scored]:
    """The fastest fitting plan of `planner suggest` (CP-SAT, any framework), or None."""
    from planner.errors import PlannerError

    try:
        result = _search(model, cluster, eff)
    except PlannerError:
        return None
    return score(model, cluster, result.ranked[0].plan, eff)


def why_no_plan(model: ModelSpec, cluster: cm.Cluster, eff: cm.Efficiency | None = None) -> Optional[str]:
    """The search's own reason that no plan runs or fits (the refusal search_best_plan swallows), or None."""
    from planner.errors import PlannerError

    try:
        _search(model, cluster, eff)
    except PlannerError as err:
        return str(err)
    return None


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
        return (f"misses the deadline: fastest is {duration_text(loser.days)} on {loser.num_gpus} GPUs "
                f"(scan limit or scaling)")
    price = loser.offering.usd_per_gpu_hour / winner.offering.usd_per_gpu_hour
    speed = (winner.best.est.tokens_per_second / winner.num_gpus) / (loser.best.est.tokens_per_second / loser.num_gpus)
    if price >= speed:
        # speed: the winner's tokens/s per GPU over the loser's; above 1 the loser is slower per GPU too
        versus = (f"and {speed:.2f}x fewer tokens/s per GPU" if speed > 1 else "at the same tokens/s per GPU"
                  if speed == 1 else f"outweighs its {1 / speed:.2f}x the tokens/s per GPU")
        return (f"price: ${loser.offering.usd_per_gpu_hour:.2f} vs ${winner.offering.usd_per_gpu_hour:.2f} per "
                f"GPU-hour ({price:.2f}x) {versus}")
    comm = sum(loser.best.est.time_breakdown_seconds[k] for k in diagnose.COMM_PARTS)
    share = comm / loser.best.est.step_time_seconds
    if share > 0.2:
        return f"network: exposed communication is {100 * share:.0f}% of its step"
    return (f"throughput: {speed:.2f}x fewer tokens/s per GPU ({100 * loser.best.est.mfu:.0f}% MFU on a "
            f"{loser.offering.gpu.dense_tflops.get('bf16', 0):.0f} TFLOP/s GPU)")
