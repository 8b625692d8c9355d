"""Fit the cost model's generation-independent efficiency constants on published runs.

Only physically meaningful, shared constants are fitted (one set for every row, no per-row or
per-model factor): the GEMM half-saturation dimension, HBM efficiency of elementwise kernels and
a per-layer kernel/synchronisation overhead. Measured figures are data, not fitted: large-GEMM
fractions per generation and NCCL bus-bandwidth fractions (types.Efficiency).

Method: cyclic coordinate descent on a bounded grid that refines around the best value
(derivative-free; the objective, step-time MAPE, is piecewise smooth with max() kinks).
"""
from __future__ import annotations

from dataclasses import replace

from costmodel import types as cm

from .validation import Run, evaluate

# name: (low, high) bounds, each physically plausible
FIT_BOUNDS = {
    "matmul_half_dim": (8.0, 1024.0),
    "hbm_efficiency": (0.5, 0.95),
    "layer_overhead_seconds": (0.0, 2e-3),
}


def step_mape(runs: list[Run], eff: cm.Efficiency) -> float:
    results = evaluate(runs, eff)
    return sum(abs(r.step_error) for r in results) / max(1, len(results))


def _candidates(value: float, low: float, high: float, span: float, points: int = 7) -> list[float]:
    step = (high - low) * span
    return sorted({min(high, max(low, value + step * (i - points // 2) / (points // 2))) for i in range(points)})


def fit(runs: list[Run], start: cm.Efficiency | None = None, rounds: int = 4) -> tuple[cm.Efficiency, float]:
    """Constants minimising step-time MAPE on `runs`; returns (efficiency, MAPE reached)."""
    eff = start or cm.Efficiency()
    best = step_mape(runs, eff)
    span = 0.5
    for _ in range(rounds):
        for name, (low, high) in FIT_BOUNDS.items():
            for value in _candidates(getattr(eff, name), low, high, span):
                trial = replace(eff, **{name: value})
                err = step_mape(runs, trial)
                if err < best - 1e-12:
                    eff, best = trial, err
        span /= 3
    return eff, best


def fitted_values(eff: cm.Efficiency) -> dict[str, float]:
    return {name: getattr(eff, name) for name in FIT_BOUNDS}
