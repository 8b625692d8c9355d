"""Fit a cluster's compute efficiency scale to measured step times.

One number, Cluster.matmul_efficiency_scale, multiplies the achievable large-GEMM fraction of
peak (costmodel.compute.gemm_seconds). The modelled step time falls monotonically as the scale
grows (compute shrinks; exposed DP sync grows by at most the overlap window it loses), so each
measured step implies one scale, found by bisection in log space. The fitted scale is the
geometric mean of the implied ones and its standard error the delta-method error of that mean,
scale * sd(log s_i) / sqrt(n) (undefined for one step). A step whose modelled time barely moves
when the scale rises further (elasticity d log t / d log s above the implied scale below
MIN_ELASTICITY: exposed communication hides any compute change) only bounds the scale from below
and is left out of the fit. Pure functions; no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from costmodel import types as cm
from costmodel.step import estimate
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.step_times import TimedStep

SCALE_BOUNDS = (L.MIN_EFFICIENCY_SCALE, L.MAX_EFFICIENCY_SCALE)  # what a cluster file may state
MIN_ELASTICITY = 0.05  # a 10% faster matmul must move the step by at least ~0.5%


@dataclass(frozen=True)
class ScaleFit:
    scale: float
    stderr: float | None
    implied: tuple[float, ...]  # scale each step alone implies
    used: tuple[bool, ...]  # False: the step barely depends on compute, left out of the fit
    before_seconds: tuple[float, ...]  # predicted with the cluster as given
    after_seconds: tuple[float, ...]  # predicted with the calibrated cluster and the fitted scale
    warnings: tuple[str, ...] = ()  # steps whose plan the memory model puts over the GPU's memory (over_memory)


def predicted_seconds(step: TimedStep, cluster: cm.Cluster, eff: cm.Efficiency, scale: float | None = None) -> float:
    """Modelled step time on `cluster` (with `scale` as its matmul efficiency scale if given)."""
    c = replace(cluster, num_gpus=step.num_gpus)
    if scale is not None:
        c = replace(c, matmul_efficiency_scale=scale)
    return estimate(step.model, c, step.plan, eff).step_time_seconds


def over_memory(step: TimedStep, cluster: cm.Cluster, eff: cm.Efficiency) -> str | None:
    """A line when the memory model puts the step's plan over the GPU's memory: a wrong flag in the row
    (recompute, ZeRO stage, GPU count) would fit the time of another plan; or the plan ran and the memory
    model overshoots it, or the row leaves out a setting that saved memory (Nemotron-4 340B's NeMo layout on 128
    H100, written with the CSV's columns alone, is put at 86 of 80 GiB). So the step is fitted and the line
    says which to check. Not a refusal: the memory model is an estimate."""
    e = estimate(step.model, replace(cluster, num_gpus=step.num_gpus), step.plan, eff)
    if e.fits:
        return None
    return (f"step '{step.label}': the memory model puts its plan at {e.memory_per_gpu_bytes / 2**30:.1f} GiB per "
            f"GPU, over the {e.memory_capacity_bytes / 2**30:.0f} GiB of {cluster.gpu.name}: if it ran as given, the "
            "model overestimates its memory; else check the row's plan flags (its time is fitted as given)")


def implied_scale(step: TimedStep, cluster: cm.Cluster, eff: cm.Efficiency, iterations: int = 48) -> float:
    """The scale at which the model predicts exactly the measured time (bisection on log scale)."""
    lo, hi = SCALE_BOUNDS
    m = step.measured_seconds
    fastest = predicted_seconds(step, cluster, eff, hi)
    if fastest > m:
        raise PlannerError(f"step '{step.label}': measured {m:.4g} s is faster than the model allows at any compute "
                           f"efficiency ({fastest:.4g} s at {hi:g}x, {fastest / m:.3g}x the time): communication or "
                           "the bubble dominate; check the plan, the GPU count, the network calibration and the units "
                           "(seconds: a time 1000x too small was divided by 1000 once too often)")
    slowest = predicted_seconds(step, cluster, eff, lo)
    if slowest < m:
        raise PlannerError(f"step '{step.label}': measured {m:.4g} s is slower than the model at {lo:g}x the matmul "
                           f"efficiency ({slowest:.4g} s); check the plan, the GPU count and the units (seconds)")
    for _ in range(iterations):
        mid = math.sqrt(lo * hi)
        if predicted_seconds(step, cluster, eff, mid) > m:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def elasticity(step: TimedStep, cluster: cm.Cluster, eff: cm.Efficiency, scale: float, ratio: float = 1.05) -> float:
    """-d log t / d log scale just above `scale`: how much of the step responds to compute speed."""
    here, above = predicted_seconds(step, cluster, eff, scale), predicted_seconds(step, cluster, eff, scale * ratio)
    return math.log(here / above) / math.log(ratio)


def geometric_mean_and_stderr(values: list[float]) -> tuple[float, float | None]:
    """exp(mean log v) and its delta-method standard error g * sd(log v) / sqrt(n)."""
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    g = math.exp(mean)
    if len(logs) < 2:
        return g, None
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    return g, g * sd / math.sqrt(len(logs))


def fit_scale(steps: list[TimedStep], calibrated: cm.Cluster, original: cm.Cluster,
              eff: cm.Efficiency | None = None) -> ScaleFit:
    """Fit the scale on `calibrated` (links already fitted); `original` gives the 'before' times."""
    if not steps:
        raise PlannerError("no timed steps to fit")
    eff = eff or cm.Efficiency()
    lines = tuple(line for s in steps if (line := over_memory(s, calibrated, eff)))
    implied = [implied_scale(s, calibrated, eff) for s in steps]
    used = [elasticity(s, calibrated, eff, k) >= MIN_ELASTICITY for s, k in zip(steps, implied)]
    if not any(used):
        scales = ", ".join(f"{k:.3g}" for k in implied)
        raise PlannerError(f"no timed step's modelled time moves with compute speed at the scale it implies "
                           f"({scales}): communication or the bubble hides the compute there, or the GEMMs already "
                           "run at the GPU's peak (times near or below what the peak allows); time steps of "
                           "compute-bound plans, and check the plan and GPU count")
    scale, stderr = geometric_mean_and_stderr([k for k, u in zip(implied, used) if u])
    return ScaleFit(
        scale=scale,
        stderr=stderr,
        implied=tuple(implied),
        used=tuple(used),
        before_seconds=tuple(predicted_seconds(s, original, eff) for s in steps),
        after_seconds=tuple(predicted_seconds(s, calibrated, eff, scale) for s in steps),
        warnings=lines,
    )


def mape(predicted: tuple[float, ...], steps: list[TimedStep]) -> float:
    """Mean absolute relative error of `predicted` against the measured times."""
    return sum(abs(p / s.measured_seconds - 1.0) for p, s in zip(predicted, steps)) / len(steps)
