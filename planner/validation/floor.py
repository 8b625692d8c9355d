"""How well any model could score on the published rows: the floor set by rows whose inputs are equal.

Some sources publish the same model, cluster and plan more than once (Megatron-Bridge's tables repeat a
layout across releases) with different step times. A cost model has one answer per input, so for a group
of equal-input rows measured m_1 <= ... <= m_k:
- the smallest possible largest error is (m_k - m_1) / (m_k + m_1), at the prediction p = 2 m_1 m_k /
  (m_1 + m_k), where p / m_1 - 1 = 1 - p / m_k;
- the smallest possible sum of absolute errors sum_i |p / m_i - 1| is reached at one of the m_i (the sum
  is convex and piecewise linear in p, with its corners at the m_i).
Rows are equal when the cost model's inputs built from them are (planner.validation.runs.prepare), so
a setting that a row records but the cost model ignores does not tell two rows apart.
"""
from __future__ import annotations

from planner.validation.runs import Run, prepare


def equal_input_groups(runs: list[Run]) -> list[list[Run]]:
    """The scored rows whose cost-model inputs (model, cluster, plan) are equal, in groups of two or more,
    each in row order, the groups in order of their first row."""
    # The inputs hold dicts (unhashable), so rows are compared with ==, only within a bucket of a few
    # hashable fields that equal inputs share.
    buckets: dict[tuple, list[tuple[tuple, list[Run]]]] = {}
    groups: list[list[Run]] = []
    for run in runs:
        if run.exclude:
            continue
        p = prepare(run)
        key = (p.model, p.cluster, p.plan)
        bucket = buckets.setdefault((p.model.name, p.cluster.num_gpus, p.plan.tp, p.plan.pp, p.plan.dp), [])
        same = next((g for k, g in bucket if k == key), None)
        if same is None:
            bucket.append((key, [run]))
            groups.append(bucket[-1][1])
        else:
            same.append(run)
    return [g for g in groups if len(g) > 1]


def best_max_error(measured: list[float]) -> float:
    """The smallest largest |p / m - 1| any single prediction p reaches over these measurements."""
    lo, hi = min(measured), max(measured)
    return (hi - lo) / (hi + lo)


def best_error_sum(measured: list[float]) -> float:
    """The smallest sum of |p / m - 1| any single prediction p reaches over these measurements."""
    return min(sum(abs(p / m - 1.0) for m in measured) for p in measured)


def measurement_floor(runs: list[Run]) -> dict:
    """The lower bounds on step-time MAPE and largest error that equal-input rows put on any model, over
    the scored rows, with the groups that set them (largest spread first)."""
    scored = [r for r in runs if not r.exclude]
    floors = [{"ids": [r.id for r in g], "measured_step_time_s": [r.measured.step_time_s for r in g]}
              for g in equal_input_groups(runs)]
    for f in floors:
        f["best_max_abs"] = best_max_error(f["measured_step_time_s"])
    floors.sort(key=lambda f: -f["best_max_abs"])
    total = sum(best_error_sum(f["measured_step_time_s"]) for f in floors)
    return {"rows": len(scored), "grouped_rows": sum(len(f["ids"]) for f in floors),
            "mape": total / len(scored) if scored else 0.0,
            "max_abs": max((f["best_max_abs"] for f in floors), default=0.0), "groups": floors}
