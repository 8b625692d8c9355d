"""One-line reasons when the search has nothing to suggest, and what would change that.

Either no layout is legal (a divisibility or framework rule excludes every (tp, pp) split), or
none fits in memory: then the line gives the smallest memory any plan needs against the usable
GPU memory, and what would make it fit (more GPUs, found by re-checking the space at 2x, 4x, ...
the GPU count; a larger GPU; ZeRO-3 or full recompute when the space excluded them).
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable

from costmodel import types as cm
from costmodel.rules import cluster_violations
from planner.inputs.limits import MAX_GPUS
from planner.search.bounds import memory_walk
from planner.search.space import PLAN_FIELDS, Knobs, Layout, SearchSpec, Space, build_space
from planner.search.tables import TableContext

GIB = 2**30
MAX_GPU_DOUBLINGS = 12


def label(lay: Layout, k: Knobs) -> str:
    vpp = f", vpp {lay.vpp}" if lay.vpp > 1 else ""
    cp = f", cp {lay.cp}" if lay.cp > 1 else ""
    ep = f", ep {lay.ep}" + (f", etp {lay.etp}" if lay.etp > 1 else "") if lay.ep > 1 or lay.etp > 1 else ""
    return (f"tp {lay.tp}{cp}, pp {lay.pp}, dp {lay.dp}{ep}{vpp}, mbs {lay.mbs}, ZeRO {k.zero}, "
            f"recompute {k.recompute}{', SP' if k.sp else ''}")


def rule_kinds(rejected) -> list[tuple[str, int]]:
    """Rejection reasons grouped by rule (numbers masked), most frequent first, with one example each."""
    kinds: dict[str, list] = {}
    for reason, count in rejected.items():
        entry = kinds.setdefault(re.sub(r"\d+", "N", reason), [0, reason])
        entry[0] += count
    return sorted(((example, n) for n, example in kinds.values()), key=lambda e: -e[1])


def nothing_legal(space: Space, left_out: tuple[str, ...] = ()) -> str:
    """Why no layout is legal; `left_out`: the frameworks the search left out as unable to build the
    model (frameworks.building), named so that their absence from the reasons is not a mystery."""
    spec = space.spec
    fixed = ", ".join(f"{PLAN_FIELDS.get(k, k)}={v}" for k, v in spec.fixed.items())
    where = f" with --fix {fixed}" if fixed else ""
    gap = f" ({', '.join(left_out)} not searched: no definition of this model)" if left_out else ""
    if not space.rejected:
        moe, ep = spec.model.moe, spec.fixed.get("ep")
        if moe is not None and isinstance(ep, int) and moe.num_experts % ep:
            return (f"no legal layout for {spec.cluster.num_gpus} GPUs{where}: the {moe.num_experts} experts do not "
                    f"divide over {ep} expert-parallel ranks{gap}")
        return (f"no legal layout for {spec.cluster.num_gpus} GPUs{where}: no (tp, cp, pp, dp, ep) split of the GPUs "
                f"matches{gap}")
    refused = refused_fixes(spec)
    if refused:
        return f"no legal layout for {spec.cluster.num_gpus} GPUs{where}: {refused}{gap}"
    kinds = "; ".join(f"{example} ({n} split{'s' if n > 1 else ''})" for example, n in rule_kinds(space.rejected)[:3])
    return (f"no legal layout for {spec.cluster.num_gpus} GPUs{where}: every (tp, pp) split breaks a rule: {kinds}"
            f"{gap}; try another GPU count, --gbs, --framework{' or fewer --fix' if fixed else ''}")


def refused_fixes(spec: SearchSpec) -> str | None:
    """The first --fix knob value that every searched framework refuses whatever the split (its Knobs Choice, for
    tp and pp 1 or more, and for the attention kernel the one it runs for this model on this machine:
    Framework.attention_kernels), with each framework's reason; or one the cluster refuses for every plan (an
    attention kernel another GPU generation's: rules.cluster_violations); None where some framework takes every
    fixed value (the splits' rules are then the cause)."""
    from planner import frameworks
    from planner.frameworks.base import Machine

    machine = Machine.of(spec.cluster)
    for key, value in spec.fixed.items():
        field = PLAN_FIELDS.get(key)
        if field is None:
            continue
        cluster = cluster_violations(spec.cluster, cm.Plan(**{field: value}))
        if cluster:
            return f"--fix {field}={value}: {cluster[0]}"
        reasons = []
        for name in spec.frameworks:
            fw = frameworks.get(name)
            choices = [fw.attention_kernels(spec.model, machine, fw.knobs(tp_split, pp_split))
                       if field == "attention_kernel" else getattr(fw.knobs(tp_split, pp_split), field, None)
                       for tp_split in (False, True) for pp_split in (False, True)]
            if any(not isinstance(c, frameworks.Choice) or value in c.values for c in choices):
                break
            reasons.append(f"{fw.title}: {choices[-1].why}")
        else:
            return f"--fix {field}={value} is refused by every framework searched ({'; '.join(reasons)})"
    return None


def smallest_plan(space: Space, ctx: TableContext, stop_below: float = 0.0) -> tuple[float, Layout, Knobs] | None:
    """(peak bytes, layout, knobs) of the plan with the least peak memory over the space, from memory
    alone (bounds.memory_walk: families by increasing memory floor, each knob combination at the
    smallest micro-batch that offers it), stopping at the first family whose floor is above the best
    found; with `stop_below`, the first found at or under that many bytes."""
    best = None
    for floor, lay, _, peaks in memory_walk(space, ctx):
        if best is not None and floor > best[0]:
            break
        for k, peak in peaks:
            if best is None or (peak, lay, k) < best:
                best = (peak, lay, k)
                if peak <= stop_below:
                    return best
    return best


def gpus_that_fit(spec: SearchSpec, capacity_bytes: float, eff: cm.Efficiency) -> int | None:
    """The first of 2x, 4x, ... the GPU count at which some plan fits (None within MAX_GPU_DOUBLINGS)."""
    fixed = {k: v for k, v in spec.fixed.items() if k != "dp"}
    for i in range(1, MAX_GPU_DOUBLINGS + 1):
        n = spec.cluster.num_gpus * 2**i
        if n > MAX_GPUS:
            return None
        bigger = replace(spec, cluster=replace(spec.cluster, num_gpus=n), fixed=fixed)
        space = build_space(bigger)
        if not space.knobs:
            continue
        found = smallest_plan(space, TableContext(bigger, eff), stop_below=capacity_bytes)
        if found is not None and found[0] <= capacity_bytes:
            return n
    return None


def remedies(space: Space, best: Knobs, need_bytes: float, capacity_bytes: float, fraction: float,
             eff: cm.Efficiency) -> list[str]:
    spec = space.spec
    gpu_bytes = spec.cluster.gpu.memory_bytes
    out = []
    n = gpus_that_fit(spec, capacity_bytes, eff)
    if n:
        out.append(f"{n} GPUs")
    out.append(f"a GPU with >= {need_bytes / fraction / GIB:.0f} GiB")
    knobs = space.all_knobs()
    if best.zero < 3 and not any(k.zero == 3 for k in knobs):
        out.append("ZeRO-3 (--framework/--fix exclude it)")
    if best.recompute != "full" and not any(k.recompute == "full" for k in knobs):
        out.append("full recompute (--framework/--fix exclude it)")
    if fraction < 1 and need_bytes <= gpu_bytes:
        out.append(f"--max-memory-fraction {need_bytes / gpu_bytes:.2f}")
    return out


def _message(space: Space, lay: Layout, k: Knobs, need_bytes: float, capacity_bytes: float, fraction: float,
             eff: cm.Efficiency) -> str:
    gpu = space.spec.cluster.gpu
    fix = ", ".join(remedies(space, k, need_bytes, capacity_bytes, fraction, eff))
    return (f"no plan fits in memory: the smallest needs {need_bytes / GIB:.1f} GiB per GPU ({label(lay, k)}) but "
            f"{gpu.name} gives {capacity_bytes / GIB:.1f} GiB ({gpu.memory_bytes / GIB:.0f} GiB x {fraction:g}); "
            f"it would fit with {fix}")


def nothing_fits(space: Space, capacity_bytes: float, fraction: float, eff: cm.Efficiency) -> str:
    """When no plan fits: the one with the least peak memory (smallest_plan) and the remedies."""
    need_bytes, lay, k = smallest_plan(space, TableContext(space.spec, eff))
    return _message(space, lay, k, need_bytes, capacity_bytes, fraction, eff)


def nothing_fits_scored(space: Space, scored: Iterable, capacity_bytes: float, fraction: float,
                        eff: cm.Efficiency) -> str:
    """For enumerated plans (enumerate.Scored)."""
    s = min(scored, key=lambda s: (s.est.memory_per_gpu_bytes, s.layout, s.knobs))
    return _message(space, s.layout, s.knobs, s.est.memory_per_gpu_bytes, capacity_bytes, fraction, eff)
