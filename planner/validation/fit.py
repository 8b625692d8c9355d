"""Fit the cost model's generation-independent efficiency constants on published runs.

Only physically meaningful, shared constants are fitted (one set for every row, no per-row or
per-model factor): the GEMM half-saturation dimension, HBM efficiency of elementwise kernels, a
per-layer kernel/synchronisation overhead and the fused attention kernels' long-sequence fraction
of peak per generation (Ampere, Hopper's cuDNN kernel, Blackwell) and their half-efficiency length,
all on step time; and, separately, the caching allocator's slack on the rows that publish a memory
peak. Measured figures are data, not fitted: large-GEMM fractions per generation, NCCL bus-bandwidth
fractions, FlashAttention-2's rate relative to cuDNN's on Hopper (types.Efficiency).

Method: cyclic coordinate descent on a bounded grid that refines around the best value
(derivative-free; the objective, the mean over source groups of their step-time MAPE, is piecewise
smooth with max() kinks), from five starts (HALF_SEQ_STARTS), then once more from the best of them with the grid's span
reset (RESTARTS): each descent shrinks its span threefold a round, so it stops on a point its last,
finest grid cannot leave even where a coarser step would (measured 2026-12-06 on the 234 fitted rows:
one restart took the objective from 0.04816 to 0.04788, a second to 0.04785). `fit` is the reference.
`fit_many` reaches the same result for several sets of rows at once (e.g. one per held-out source),
faster: its descents skip predictions they already made (Memo: the same row at the same values of the
constants it reads) and run in parallel processes.
"""
from __future__ import annotations

import os
from dataclasses import fields, replace

from costmodel import types as cm
from planner.validation.runs import Prepared, Run, evaluate, predict_prepared, prepare

# name: (low, high) bounds, each physically plausible
FIT_BOUNDS = {
    "matmul_half_dim": (8.0, 1024.0),
    "hbm_efficiency": (0.5, 0.95),
    "layer_overhead_seconds": (0.0, 2e-3),
    "flash_attention_peak_fraction_blackwell": (0.0, 0.9),
    "flash_attention_peak_fraction_cudnn_hopper": (0.1, 0.9),
    "flash_attention_peak_fraction_ampere": (0.1, 0.9),
    "moe_host_sync_seconds": (0.0, 5e-3),
    "flash_attention_half_seq": (0.0, 4096.0),
}


def prior() -> cm.Efficiency:
    """Unfitted starting point, from measurements and hardware facts only, so a fit on one
    generation cannot see the other through the defaults: one 128-wide GEMM tile at half
    efficiency (cuBLAS/CUTLASS 128 x 128 tiles), HBM at STREAM-copy efficiency (Azure
    AI-benchmarking-guide: A100 1.61/2.0, H100 2.90/3.35 TB/s, ~0.8), no per-layer overhead, cuDNN's
    attention on H100 at 631.3/989 TFLOP/s (pytorch#142132), attention on A100 at 136.4/312 (pytorch
    PR #192799), Blackwell's at FlashAttention-2's H100 figure, 327.9/989 (Azure ND H100 v5), no MoE
    host synchronisation. Blackwell has a measurement since (cuDNN on GB200, 1378/2500 forward at 4k,
    NVIDIA/cudnn-frontend's SDPA training benchmark); it is not the prior: from it the fit reaches the
    same Blackwell fraction, but a fit without Blackwell rows keeps it and then predicts them 14% fast
    (validation/README.md, "Attention kernel rates")."""
    return replace(cm.Efficiency(), matmul_half_dim=128.0, hbm_efficiency=0.8, layer_overhead_seconds=0.0,
                   flash_attention_peak_fraction_blackwell=0.33,
                   flash_attention_peak_fraction_cudnn_hopper=0.64, flash_attention_peak_fraction_ampere=0.44,
                   flash_attention_half_seq=128.0, moe_host_sync_seconds=0.0,
                   memory_fragmentation_fraction=0.0)


def step_mape(runs: list[Run], eff: cm.Efficiency) -> float:
    """Step-time MAPE over the scored rows, each row weighing the same (what `validate` reports)."""
    results = evaluate(runs, eff)
    return sum(abs(r.step_error) for r in results) / max(1, len(results))


class Memo:
    """Absolute step errors already computed, per row, by the values of the fitted constants that
    the row's prediction read.

    A prediction reads the constants through a _Tracked copy of the efficiency, which records which
    fitted constants it touched. The cost model is a pure function of its inputs, so another point
    that gives those constants the same values runs the same code on the same values and returns
    the same error, bit for bit: e.g. a row without FlashAttention never reads the FlashAttention
    constants, and the descent's sweeps over them reuse its error. Valid for descents that share
    every other Efficiency field (they start from the same prior and change only FIT_BOUNDS), over
    rows of one runs file (ids are unique there). The descents of several fits from one start (one
    per held-out source) also walk many of the same points and share one Memo."""

    def __init__(self) -> None:
        self.base: cm.Efficiency | None = None
        self.tables: dict[str, list[tuple[tuple[str, ...], dict[tuple, float]]]] = {}

    def admits(self, eff: cm.Efficiency) -> bool:
        """Whether `eff` differs from the Memo's base only in fitted constants (the first caller sets it)."""
        base = replace(eff, **{name: 0.0 for name in FIT_BOUNDS})
        if self.base is None:
            self.base = base
        return base == self.base

    def error(self, p: Prepared, eff: cm.Efficiency) -> float:
        tables = self.tables.setdefault(p.run.id, [])
        for names, table in tables:
            err = table.get(tuple(getattr(eff, n) for n in names))
            if err is not None:
                return err
        global _READS
        _READS = set()
        try:
            err = abs(predict_prepared(p, _tracked(eff)).step_error)
            names = tuple(sorted(_READS))
        finally:
            _READS = None
        key = tuple(getattr(eff, n) for n in names)
        for known, table in tables:
            if known == names:
                table[key] = err
                break
        else:
            tables.append((names, {key: err}))
        return err


# The fitted constants read while a Memo computes a prediction (None otherwise).
_READS: set[str] | None = None


def _recorded(name: str) -> property:
    slot = "_fit_" + name

    def get(self):
        if _READS is not None:
            _READS.add(name)
        return self.__dict__[slot]

    def put(self, value):
        self.__dict__[slot] = value
    return property(get, put)


# An Efficiency whose fitted constants record their reads (dataclasses.replace keeps the class).
_Tracked = type("_Tracked", (cm.Efficiency,), {name: _recorded(name) for name in FIT_BOUNDS})


def _tracked(eff: cm.Efficiency) -> cm.Efficiency:
    return _Tracked(**{f.name: getattr(eff, f.name) for f in fields(eff)})


def _prepared_mape(rows: list[Prepared], eff: cm.Efficiency, memo: Memo | None = None) -> float:
    """The fit's objective over rows whose inputs are already built: the mean over source groups of
    each group's step-time MAPE, so that every published source weighs the same whatever its number
    of rows (the 100-row Megatron-Bridge MoE table would otherwise outvote the papers)."""
    if memo is None:
        errors = [abs(predict_prepared(p, eff).step_error) for p in rows]
    else:
        errors = [memo.error(p, eff) for p in rows]
    groups: dict[str, list[float]] = {}
    for p, e in zip(rows, errors):
        groups.setdefault(p.run.group, []).append(e)
    return sum(sum(g) / len(g) for g in groups.values()) / max(1, len(groups))


def _candidates(value: float, low: float, high: float, span: float, points: int = 7) -> list[float]:
    step = (high - low) * span
    return sorted({min(high, max(low, value + step * (i - points // 2) / (points // 2))) for i in range(points)})


# The objective has several local minima along the attention pair; coordinate descent restarts from
# the prior with FlashAttention's half-efficiency length at 1, 8, 16, 24 and 32 tiles of 128 and keeps the
# best (the fourth since 2026-12-02: with three, the fold without the FSDP rows stopped at a training
# objective of 0.05510 where the all-rows point scores 0.05497 on the same rows; the fifth, the bound's top,
# since 2026-12-07: with the fill and drain hops and per-layer CUDA graphs the four stopped at 0.0489 where it
# reaches 0.0472; validation/README.md).
HALF_SEQ_STARTS = (128.0, 1024.0, 2048.0, 3072.0, 4096.0)
# Descents again from the best start's point, each with the span reset (see the module docstring).
RESTARTS = 1


Bounds = dict[str, tuple[float, float]]


def checked_bounds(bounds: Bounds | None) -> Bounds:
    """FIT_BOUNDS, or `bounds` when given: the same constants (the Memo and _Tracked read FIT_BOUNDS'
    names), each with low <= high. Other bounds move the descent's grid, not what is fitted."""
    if bounds is None:
        return FIT_BOUNDS
    if list(bounds) != list(FIT_BOUNDS):
        raise ValueError(f"fit bounds must name {', '.join(FIT_BOUNDS)} in that order (got {', '.join(bounds)})")
    bad = [name for name, (low, high) in bounds.items() if not low <= high]
    if bad:
        raise ValueError(f"fit bounds with low above high: {', '.join(bad)}")
    return bounds


def fit(runs: list[Run], start: cm.Efficiency | None = None, rounds: int = 6) -> tuple[cm.Efficiency, float]:
    """Constants minimising the fit's objective on `runs` (the mean over source groups of each
    group's step-time MAPE, see _prepared_mape); returns (efficiency, objective reached). The
    objective is not the rows' MAPE: step_mape gives that."""
    if start is None:
        fits = [descend(runs, replace(prior(), flash_attention_half_seq=s), rounds) for s in HALF_SEQ_STARTS]
        return restart(runs, min(fits, key=lambda pair: pair[1])[0], rounds)
    return descend(runs, start, rounds)


def restart(runs: list[Run], eff: cm.Efficiency, rounds: int,
            bounds: Bounds | None = None) -> tuple[cm.Efficiency, float]:
    """RESTARTS descents from `eff`, each from where the last stopped, the span reset."""
    for _ in range(RESTARTS):
        eff, best = descend(runs, eff, rounds, bounds=bounds)
    return eff, best


def descend(runs: list[Run], eff: cm.Efficiency, rounds: int, memo: Memo | None = None,
            bounds: Bounds | None = None) -> tuple[cm.Efficiency, float]:
    """Cyclic coordinate descent from `eff` (see the module docstring) on the grid over `bounds`
    (default FIT_BOUNDS); `memo` shares predictions with other descents (see Memo), which changes no
    result."""
    rows = [prepare(r) for r in runs if not r.exclude]
    bounds = checked_bounds(bounds)
    if memo is not None and not memo.admits(eff):
        memo = None
    best = _prepared_mape(rows, eff, memo)
    span = 0.5
    for _ in range(rounds):
        for name, (low, high) in bounds.items():
            for value in _candidates(getattr(eff, name), low, high, span):
                if value == getattr(eff, name):
                    continue  # the current point: its error is `best`, which it cannot beat
                trial = replace(eff, **{name: value})
                err = _prepared_mape(rows, trial, memo)
                if err < best - 1e-12:
                    eff, best = trial, err
        span /= 3
    return eff, best


def _restart_job(job: tuple[list[Run], cm.Efficiency, int, Bounds]) -> tuple[cm.Efficiency, float]:
    runs, eff, rounds, bounds = job
    return restart(runs, eff, rounds, bounds=bounds)


def _chunk_job(job: tuple[float, list[list[Run]], int, Bounds]) -> list[tuple[cm.Efficiency, float]]:
    """The descents from one start over several sets of rows, sharing one Memo."""
    half_seq, sets, rounds, bounds = job
    memo = Memo()
    return [descend(runs, replace(prior(), flash_attention_half_seq=half_seq), rounds, memo, bounds) for runs in sets]


def default_workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def fit_many(train_sets: list[list[Run]], workers: int | None = None, rounds: int = 6,
             bounds: Bounds | None = None) -> list[tuple[cm.Efficiency, float, float | None]]:
    """`fit` then `fit_memory` on each set of rows (subsets of one runs file): (efficiency, the
    step-time objective reached (mean over source groups), memory MAPE) per set. Each set's result
    is the one `fit` reaches: the same descents from the same starts (HALF_SEQ_STARTS), the best taken in the
    same order, restarted from it. The descents run in `workers` forked processes, those from one start over similar
    sets together, sharing their predictions (Memo). `bounds` replaces FIT_BOUNDS' grid (checked_bounds:
    benchmarks/fit_noise.py nudges it to measure the optimiser's share of a left-out figure)."""
    bounds = checked_bounds(bounds)
    if not train_sets:
        return []
    ids: dict[str, Run] = {}
    for train in train_sets:
        for r in train:
            if ids.setdefault(r.id, r) is not r and ids[r.id] != r:
                raise ValueError(f"fit_many: row id {r.id} names two different rows")
    workers = default_workers() if workers is None else workers
    # Sets by size, largest first: neighbours differ by few rows, so their descents meet most often.
    order = sorted(range(len(train_sets)), key=lambda k: -len(train_sets[k]))
    # One chunk per start (its descents share a Memo); split further only when workers outnumber starts.
    groups = max(1, min(len(order), workers // len(HALF_SEQ_STARTS)))
    size = -(-len(order) // groups)
    chunks = [(s, order[i:i + size]) for s in HALF_SEQ_STARTS for i in range(0, len(order), size)]
    jobs = [(s, [train_sets[k] for k in ks], rounds, bounds) for s, ks in chunks]
    results = _mapped(_chunk_job, jobs, workers)
    done: dict[tuple[int, float], tuple[cm.Efficiency, float]] = {}
    for (s, ks), fits in zip(chunks, results):
        done.update({(k, s): f for k, f in zip(ks, fits)})
    starts = [min((done[(k, s)] for s in HALF_SEQ_STARTS), key=lambda pair: pair[1])[0] for k in range(len(train_sets))]
    restarted = _mapped(_restart_job, [(train, eff, rounds, bounds) for train, eff in zip(train_sets, starts)], workers)
    out = []
    for train, (eff, mape) in zip(train_sets, restarted):
        eff, memory = fit_memory(train, eff)
        out.append((eff, mape, memory))
    return out


def _mapped(job, args: list, workers: int) -> list:
    """[job(a) for a in args], in up to `workers` forked processes."""
    if workers <= 1 or len(args) <= 1:
        return [job(a) for a in args]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(min(workers, len(args)), mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(job, args))


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
