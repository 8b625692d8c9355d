"""The search space: every legal layout (tp, pp, dp, vpp, micro-batch) and, per layout, every knob
combination (ZeRO stage, recompute, sequence parallel, precision, gradient dtype) some framework runs.

Legal = the cost model's structural rules (costmodel/rules.plan_violations), TP inside one NVLink
domain (costmodel/topology.tp_crosses_network), the framework modules (planner/frameworks: layout rules, knob values, plan rules) and the user's
--fix values. dp follows from tp*pp*dp = GPUs; the global batch is fixed, so the micro-batch size
also fixes gradient accumulation (gas = gbs / (mbs*dp)). Layer splits are the cost model's default
(pipeline.default_chunk_layers: first/last chunk lighter when the layers do not divide).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import product
from typing import Iterator, Mapping

from costmodel import types as cm
from costmodel.lowp import LOW_PRECISIONS
from costmodel.rules import hardware_violations as rules_hardware
from costmodel.rules import plan_violations
from costmodel.topology import domain_size, tp_crosses_network
from planner.frameworks import NAMES, REGISTRY, base

ZERO_STAGES = (0, 1, 2, 3)
MAX_SEARCH_VPP = 16


@dataclass(frozen=True, order=True)
class Layout:
    tp: int
    pp: int
    dp: int
    vpp: int
    mbs: int

    @property
    def group(self) -> tuple[int, int, int]:
        """What makes two plans 'distinct layouts' in the top K: (tp, pp, dp)."""
        return (self.tp, self.pp, self.dp)


@dataclass(frozen=True, order=True)
class Knobs:
    zero: int
    recompute: str
    sp: bool
    precision: str
    grad: str  # gradient communication dtype; "" = the precision's default (Plan.grad_comm_dtype)
    # Low-precision weight casts (Plan.weight_casts), i.e. whose fp8 runs: "step" = Transformer Engine
    # (cached casts, the plan's fp8 recipe), "use" = torchao float8 (per-use casts, dynamic tensorwise scaling).
    casts: str = "step"
    reshard: bool = True  # ZeRO-3 weights freed after forward (Plan.zero3_reshard)
    tpo: bool = False  # TP collectives overlapped with the GEMMs beside them (Plan.tp_comm_overlap)


@dataclass(frozen=True)
class SearchSpec:
    """What to search: the job (model, cluster with its GPU count, global batch) and the user's limits."""

    model: cm.Model
    cluster: cm.Cluster
    global_batch_size: int
    frameworks: tuple[str, ...] = NAMES
    precisions: tuple[str, ...] = ("bf16",)
    grad_dtypes: tuple[str, ...] = ("",)
    fixed: Mapping[str, object] = field(default_factory=dict)  # Layout/Knobs field name -> value
    flash_attention: bool = True
    overlap_dp_comm: bool = True
    overlap_pp_comm: bool = True


@dataclass(frozen=True)
class Space:
    spec: SearchSpec
    knobs: dict[Layout, tuple[Knobs, ...]]  # every legal layout -> its legal knob combinations
    rejected: Counter  # reason -> how many (tp, pp) splits it excluded (for the "nothing is legal" line)

    @property
    def layouts(self) -> list[Layout]:
        return list(self.knobs)

    @property
    def size(self) -> int:
        """Number of plans in the space (layouts x their knob combinations)."""
        return sum(len(k) for k in self.knobs.values())


def divisors(n: int) -> list[int]:
    """Divisors of n in increasing order, by trial division up to sqrt(n) (n is bounded by the input
    limits, so at most a few thousand steps)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def plan_for(spec: SearchSpec, lay: Layout, knobs: Knobs | None = None) -> cm.Plan:
    """The cost-model plan of a layout and knob combination (default knobs: ZeRO 0, no recompute)."""
    k = knobs or Knobs(0, "none", False, spec.precisions[0], "")
    return cm.Plan(tp=lay.tp, pp=lay.pp, dp=lay.dp, vpp=lay.vpp, micro_batch_size=lay.mbs,
                   global_batch_size=spec.global_batch_size, zero_stage=k.zero, recompute=k.recompute,
                   sequence_parallel=k.sp, precision=k.precision, grad_dtype=k.grad, weight_casts=k.casts,
                   fp8_recipe="rowwise" if k.casts == "use" else "delayed", zero3_reshard=k.reshard,
                   tp_comm_overlap=k.tpo,
                   flash_attention=spec.flash_attention, overlap_dp_comm=spec.overlap_dp_comm,
                   overlap_pp_comm=spec.overlap_pp_comm)


def _fixed_ok(spec: SearchSpec, obj: object) -> bool:
    return all(getattr(obj, name) == value for name, value in spec.fixed.items() if hasattr(obj, name))


def split_violations(spec: SearchSpec, tp: int, pp: int) -> list[str]:
    """Why the (tp, pp) split cannot run at all (checked on vpp 1, micro-batch 1), empty if it can."""
    n = spec.cluster.num_gpus
    lay = Layout(tp, pp, n // (tp * pp), 1, 1)
    plan = plan_for(spec, lay)
    broken = plan_violations(spec.model, spec.cluster, plan)
    if tp_crosses_network(plan, spec.cluster):
        broken.append(f"tp ({tp}) must stay inside one NVLink domain ({domain_size(spec.cluster)} GPUs)")
    return broken


def vpp_choices(spec: SearchSpec, pp: int) -> list[int]:
    """Virtual stages per pipeline rank: 1 to MAX_SEARCH_VPP (and at most one layer per chunk), or
    the --fix value. Past 16 chunks per rank the bubble is already under 1/16 of the 1F1B one, while
    every chunk adds its p2p exchanges; published schedules use 2-8 (Llama 3 405B: 8)."""
    if pp == 1:
        return [1]
    most = spec.model.num_layers // pp
    fixed = spec.fixed.get("vpp")
    if isinstance(fixed, int):
        return [fixed] if fixed <= most else []
    return list(range(1, min(most, MAX_SEARCH_VPP) + 1))


def candidate_layouts(spec: SearchSpec, tp: int, pp: int) -> Iterator[Layout]:
    """Every (vpp, micro-batch) for a legal (tp, pp) split, before framework rules."""
    dp = spec.cluster.num_gpus // (tp * pp)
    for vpp in vpp_choices(spec, pp):
        for mbs in divisors(spec.global_batch_size // dp):
            yield Layout(tp, pp, dp, vpp, mbs)


def layout_frameworks(spec: SearchSpec, lay: Layout) -> tuple[str, ...]:
    """Frameworks (among those selected) that can run the layout."""
    plan = plan_for(spec, lay)
    return tuple(f for f in spec.frameworks if base.layout_violation(REGISTRY[f], spec.model, plan) is None)


def gpu_runs(spec: SearchSpec, precision: str) -> bool:
    """A low-precision format needs tensor cores for it (costmodel.rules); every GPU runs the others."""
    probe = cm.Plan(precision=precision)
    return not rules_hardware(spec.cluster, probe)


def knob_combinations(spec: SearchSpec, fws: tuple[str, ...], tp: int, pp: int) -> tuple[Knobs, ...]:
    """Union over `fws` of the knob combinations each runs (its knob values and plan rules), within
    the user's options and fixes. Knob values and plan rules read the layout only through tp > 1
    and pp > 1 (planner/frameworks/base.py), so one probe plan of this (tp, pp) stands for all."""
    out: set[Knobs] = set()
    probe = plan_for(spec, Layout(tp, pp, spec.cluster.num_gpus // (tp * pp), 1, 1))
    for name in fws:
        fw = REGISTRY[name]
        ks = fw.knobs(tp > 1, pp > 1)
        for zero, rc, sp, prec in product(ks.zero_stage.values, ks.recompute.values, ks.sequence_parallel.values,
                                          ks.precision.values):
            if (sp and tp == 1) or prec not in spec.precisions or not gpu_runs(spec, prec):
                continue
            casts = ks.weight_casts.values if prec in LOW_PRECISIONS else ("step",)
            reshards = ks.zero3_reshard.values if zero == 3 else (True,)
            overlaps = ks.tp_comm_overlap.values if sp else (False,)  # TP overlap splits the SP collectives
            for grad, cast, reshard, tpo in product(spec.grad_dtypes, casts, reshards, overlaps):
                k = Knobs(zero, rc, sp, prec, grad, cast, reshard, tpo)  # grad "" = the precision's own dtype
                plan = replace(probe, zero_stage=zero, recompute=rc, sequence_parallel=sp, precision=prec,
                               grad_dtype=grad, weight_casts=cast, zero3_reshard=reshard, tp_comm_overlap=tpo)
                if plan.grad_comm_dtype in ks.grad_dtype(prec).values and not base.plan_violations(fw, spec.model, plan):
                    out.add(k)
    return tuple(sorted(k for k in out if _fixed_ok(spec, k)))


def _split_fixed_ok(spec: SearchSpec, tp: int, pp: int) -> bool:
    dp = spec.cluster.num_gpus // (tp * pp)
    return all(spec.fixed.get(name, value) == value for name, value in (("tp", tp), ("pp", pp), ("dp", dp)))


def build_space(spec: SearchSpec) -> Space:
    """All legal layouts with their knob combinations; `rejected` counts why (tp, pp) splits fell out."""
    n = spec.cluster.num_gpus
    knobs: dict[Layout, tuple[Knobs, ...]] = {}
    rejected: Counter = Counter()
    combos: dict[tuple, tuple[Knobs, ...]] = {}
    for tp in divisors(n):
        for pp in divisors(n // tp):
            if not _split_fixed_ok(spec, tp, pp):
                continue
            broken = split_violations(spec, tp, pp)
            if broken:
                rejected[broken[0]] += 1
                continue
            before = len(knobs)
            for lay in candidate_layouts(spec, tp, pp):
                if not _fixed_ok(spec, lay):
                    continue
                fws = layout_frameworks(spec, lay)
                key = (fws, tp > 1, pp > 1)
                if key not in combos:
                    combos[key] = knob_combinations(spec, fws, tp, pp)
                if combos[key]:
                    knobs[lay] = combos[key]
            if len(knobs) == before:
                rejected[f"no selected framework ({', '.join(spec.frameworks)}) runs tp {tp} x pp {pp} "
                         "with the allowed knobs"] += 1
    return Space(spec, knobs, rejected)
