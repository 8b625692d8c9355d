"""What the search minimises: step time (then dollars per step), or dollars per step (then time).

With a fixed GPU count dollars per step are step time x GPUs x price (costmodel/dollars.py), so the
two orders agree; `cost` differs only in needing a price. CP-SAT's integer objective is each
plan's rank in the exact float order (cpsat.py).
"""
from __future__ import annotations

from costmodel import dollars
from costmodel import types as cm

OBJECTIVES = ("time", "cost")


def usd_per_step(cluster: cm.Cluster, step_seconds: float) -> float:
    return dollars.usd_per_step(step_seconds, cluster.num_gpus, cluster.usd_per_gpu_hour)


def primary_key(step_seconds: float, usd: float, objective: str) -> tuple[float, float]:
    """Lexicographic key: the objective first, the other measure second."""
    return (step_seconds, usd) if objective == "time" else (usd, step_seconds)


def primary_value(cluster: cm.Cluster, step_seconds: float, objective: str) -> float:
    return step_seconds if objective == "time" else usd_per_step(cluster, step_seconds)

