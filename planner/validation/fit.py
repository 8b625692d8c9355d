"""Fit the cost model's generation-independent efficiency constants on published runs.

Only physically meaningful, shared constants are fitted (one set for every row, no per-row or
per-model factor): the GEMM half-saturation dimension, HBM efficiency of elementwise kernels, a
per-layer kernel/synchronisation overhead and FlashAttention's long-sequence fraction of peak and
its half-efficiency length, all on step time; and, separately, the caching allocator's slack on
the rows that publish a memory peak. Measured figures are data, not fitted: large-GEMM fractions
per generation and NCCL bus-bandwidth fractions (types.Efficiency).

Method: cyclic coordinate descent on a bounded grid that refines around the best value
(derivative-free; the objective, step-time MAPE, is piecewise smooth with max() kinks).
"""
from __future__ import annotations

from dataclasses import replace

from costmodel import types as cm
from planner.validation.runs import Run, evaluate

# name: (low, high) bounds, each physically plausible
FIT_BOUNDS = {
    "matmul_half_dim": (8.0, 1024.0),
    "hbm_efficiency": (0.5, 0.95),
    "layer_overhead_seconds": (0.0, 2e-3),
    "flash_attention_peak_fraction": (0.1, 0.75),
    "flash_attention_half_seq": (0.0, 4096.0),
}


def prior() -> cm.Efficiency:
    """Unfitted starting point, from measurements and hardware facts only, so a fit on one
    generation cannot see the other through the defaults: one 128-wide GEMM tile at half
    efficiency (cuBLAS/CUTLASS 128 x 128 tiles), HBM at STREAM-copy efficiency (Azure
    AI-benchmarking-guide: A100 1.61/2.0, H100 2.90/3.35 TB/s, ~0.8), no per-layer overhead,
    FlashAttention-2 at 327.9/989 TFLOP/s (Azure ND H100 v5)."""
    return replace(cm.Efficiency(), matmul_half_dim=128.0, hbm_efficiency=0.8, layer_overhead_seconds=0.0,
                   flash_attention_peak_fraction=0.33, flash_attention_half_seq=128.0,
                   memory_fragmentation_fraction=0.0)


def step_mape(runs: list[Run], eff: cm.Efficiency) -> float:
    results = evaluate(runs, eff)
    return sum(abs(r.step_error) for r in results) / max(1, len(results))


def _candidates(value: float, low: float, high: float, span: float, points: int = 7) -> list[float]:
    step = (high - low) * span
    return sorted({min(high, max(low, value + step * (i - points // 2) / (points // 2))) for i in range(points)})


# The objective has several local minima along the attention pair; coordinate descent restarts from
# the prior with FlashAttention's half-efficiency length at 1, 8 and 16 tiles of 128 and keeps the best.
HALF_SEQ_STARTS = (128.0, 1024.0, 2048.0)


def fit(runs: list[Run], start: cm.Efficiency | None = None, rounds: int = 6) -> tuple[cm.Efficiency, float]:
    """Constants minimising step-time MAPE on `runs`; returns (efficiency, MAPE reached)."""
    if start is None:
        fits = [descend(runs, replace(prior(), flash_attention_half_seq=s), rounds) for s in HALF_SEQ_STARTS]
        return min(fits, key=lambda pair: pair[1])
    return descend(runs, start, rounds)


def descend(runs: list[Run], eff: cm.Efficiency, rounds: int) -> tuple[cm.Efficiency, float]:
    """Cyclic coordinate descent from `eff` (see the module docstring)."""
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


def memory_mape(runs: list[Run], eff: cm.Efficiency) -> float | None:
    errors = [abs(r.memory_error) for r in evaluate(runs, eff) if r.memory_error is not None]
    return sum(errors) / len(errors) if errors else None


def fit_memory(runs: list[Run], eff: cm.Efficiency) -> tuple[cm.Efficiency, float | None]:
    """The allocator slack (memory_fragmentation_fraction: reserved bytes over the analytic
    allocation, which is what published peaks such as torchtitan's reserved_bytes.all.peak
    measure) minimising memory MAPE on the rows that publish a peak; a 1-D grid, 0 to 25%."""
    rows = [r for r in runs if r.measured.peak_memory_gib is not None and not r.exclude]
    if not rows:
        return eff, None
    best = min((memory_mape(rows, replace(eff, memory_fragmentation_fraction=f / 400)), f / 400) for f in range(101))
    return replace(eff, memory_fragmentation_fraction=best[1]), best[0]


def fitted_values(eff: cm.Efficiency) -> dict[str, float]:
    names = list(FIT_BOUNDS) + ["memory_fragmentation_fraction"]
    return {name: getattr(eff, name) for name in names}
