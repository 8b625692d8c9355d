"""For long sequences, one sentence on why the best plan does or does not use context parallelism.

The best plan is re-scored with half its context-parallel ranks (cp > 1; an odd cp folded into data parallelism
whole) and with twice them, the data-parallel degree keeping the GPU count, or with two of its data-parallel ranks
turned into a CP pair (cp = 1): the same layout otherwise, so the difference is what CP costs or saves (activation
memory / cp, the K/V exchange, a larger DP group). A variant the cost model's rules or every searched framework's
refuse is said to be not legal, with the first rule.
"""
from __future__ import annotations

from dataclasses import replace

from costmodel import types as cm
from costmodel.rules import plan_violations
from planner import frameworks
from planner.analysis.score import Scored, score

# Context parallelism is searched (and offered as a lever) down to 4k tokens per rank: the shortest split
# any validation row runs (NeMo 24.07's Llama 3 8B and 70B at 8k with cp 2; Llama 3 405B ran 131k over
# cp 16, 8k per rank), so the model is not asked to rank splits no published run backs; shorter ring
# blocks also hide their K/V transfer less and run attention further from its peak. --fix cp=N goes lower.
MIN_CP_TOKENS = 4096
LONG_SEQUENCE_TOKENS = 16384  # from here on published runs reach for CP (Llama 3: 131,072 with cp 16)
GIB = 2**30


def _outcome(alt: Scored, best: Scored, capacity_bytes: float) -> str:
    mem = alt.est.memory_per_gpu_bytes
    if mem > capacity_bytes:
        return f"needs {mem / GIB:.1f} GiB per GPU, over the {capacity_bytes / GIB:.1f} GiB usable"
    ratio = alt.est.step_time_seconds / best.est.step_time_seconds
    return (f"fits ({mem / GIB:.1f} GiB) but takes {alt.est.step_time_seconds:.3g} s per step, "
            f"{ratio:.2f}x the best plan's {best.est.step_time_seconds:.3g} s")


def _variant(label: str, alt: cm.Plan, best: Scored, model: cm.Model, capacity_bytes: float,
             eff: cm.Efficiency | None, names: tuple[str, ...] = ()) -> str:
    """One sentence on the best plan with another cp (and the dp that keeps the GPU count): the rule it breaks
    (the cost model's, or the first of each framework in `names` where none of them runs it), or what it needs
    and takes."""
    broken = plan_violations(model, best.cluster, alt)
    if not broken and names:
        refused = list(frameworks.refusals(model, alt, frameworks.Machine.of(best.cluster), names).values())
        broken = refused[0] if all(refused) else []
    if broken:
        return f"{label} the plan would not be legal: {broken[0]}."
    return f"{label} the same plan " + _outcome(score(best.model, best.cluster, alt, eff), best, capacity_bytes) + "."


def context_parallel_note(best: Scored, capacity_bytes: float, eff: cm.Efficiency | None = None,
                          names: tuple[str, ...] = ()) -> str | None:
    """None for sequences under LONG_SEQUENCE_TOKENS; else why the best plan's cp is what it is (`names`: the
    frameworks searched, whose rules a variant must pass too)."""
    plan, seq = best.plan, best.model.seq_length
    if seq < LONG_SEQUENCE_TOKENS:
        return None
    model = best.model.to_model()
    if plan.cp > 1:
        share = best.est.time_breakdown_seconds.get("cp_comm", 0.0) / best.est.step_time_seconds
        head = (f"cp {plan.cp} ({plan.cp_comm}) splits each {seq:,}-token sequence over {plan.cp} GPUs in "
                f"{2 * plan.cp} chunks; its exposed K/V exchange is {100 * share:.0f}% of the step. ")
        half = plan.cp // 2 if plan.cp % 2 == 0 else 1  # an odd cp folds into data parallelism whole
        fewer = replace(plan, cp=half, dp=plan.dp * plan.cp // half, cp_comm=plan.cp_comm if half > 1 else "p2p")
        what = "Folded into data parallelism" if half == 1 else "Halved"
        out = head + _variant(f"{what} (cp {half}, dp {fewer.dp})", fewer, best, model, capacity_bytes, eff, names)
        if plan.dp % 2 == 0:
            more = replace(plan, cp=plan.cp * 2, dp=plan.dp // 2)
            out += " " + _variant(f"Doubled (cp {more.cp}, dp {more.dp})", more, best, model, capacity_bytes, eff,
                                  names)
        return out
    head = f"the best plan keeps each {seq:,}-token sequence on one tensor-parallel group (cp 1). "
    alt = replace(plan, cp=2, dp=plan.dp // 2)
    if plan.dp % 2 or seq % 4:
        return head + "It has no data-parallel pair to turn into a CP pair."
    return head + _variant("With cp 2 taken from its data-parallel ranks", alt, best, model, capacity_bytes, eff,
                           names)
