"""The collective's cost to the compute beside it (Efficiency.collective_sm_share, costmodel/overlap.py) against
what this project measured on a lent H200 (benchmarks/overlap_contention.py; its logs in benchmarks/results).

The step: four Llama 3 8B layers' forward and backward, three steps, bf16, at the card's 700 W limit. Beside it,
a kernel of 16 or 32 NCCL-like blocks (512 threads, one per channel) that either waits (a collective whose data
crosses the network) or copies at up to 1.5 TB/s of HBM (a ring over NVLink). Two designs: `held`, the kernel
launched first and outlasting the work, so the whole step ran beside it and the compute lost (T - T0) / T of
each second; `within`, the kernel half the work's length, so the compute lost (T - T0) / t_kernel of each
second the kernel ran. The shipped share is the mean of those eight figures (two modes, two block counts, two
designs), read here from the logs and recomputed by hand from their times.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from costmodel import types as cm

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
WITHIN = RESULTS / "overlap_contention_h200_2026-12-04_within.json"
CASES = ("wait/16", "copy-capped/16", "wait/32", "copy-capped/32")
STEP = "llama3_8b_4_layers_x3_steps"


def held_cases() -> dict[str, tuple[float, float]]:
    """(alone, beside) milliseconds of the step's held cases, read from the log's text."""
    lines = (RESULTS / "overlap_contention_h200_2026-12-04_held.log").read_text().splitlines()
    start = lines.index(STEP)
    out = {}
    for line in lines[start + 1:]:
        m = re.match(r"\s+(\S+)\s+alone\s+([\d.]+) ms\s+beside\s+([\d.]+) ms", line)
        if not m:
            break
        out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out


def within_cases(workload: str = STEP) -> dict[str, dict]:
    return json.loads(WITHIN.read_text())["cases"][workload]


def test_held_figures_by_hand():
    """wait/16: 257.284 ms alone, 305.506 beside: (305.506 - 257.284) / 305.506 = 0.158 of each second lost."""
    held = held_cases()
    assert set(CASES) <= set(held)
    alone, beside = held["wait/16"]
    assert (alone, beside) == (257.284, 305.506)
    assert (beside - alone) / beside == pytest.approx(0.1578, abs=1e-4)


def test_within_figures_by_hand():
    """wait/16: 268.704 ms alone, 282.424 beside a kernel that ran 134.83 ms: 13.72 / 134.83 = 0.102."""
    r = within_cases()["wait/16"]
    assert (r["alone_ms"], r["beside_ms"], r["standin_ms"]) == (268.704, 282.424, 134.83)
    assert (r["beside_ms"] - r["alone_ms"]) / r["standin_ms"] == pytest.approx(0.1018, abs=1e-4)
    assert not r["standin_outlasted_work"]


def test_shipped_share_is_the_mean_of_the_measured_cases():
    held, within = held_cases(), within_cases()
    figures = [(held[c][1] - held[c][0]) / held[c][1] for c in CASES]
    figures += [(within[c]["beside_ms"] - within[c]["alone_ms"]) / min(within[c]["standin_ms"], within[c]["beside_ms"])
                for c in CASES]
    assert len(figures) == 8 and min(figures) > 0.10 - 1e-3 and max(figures) < 0.28 + 1e-3
    assert cm.Efficiency().collective_sm_share == pytest.approx(sum(figures) / 8, abs=0.005)



# The same runs queued the stand-in as 1 ms kernels on its stream while the work held every SM (`wait-queued`):
# each kernel waited for SMs. The rule the model charges (layer.kernel_residual_seconds): the time left of the
# compute kernel running when it is launched, sum(d^2) / (2 sum(d)) over the work's kernels.


def queued_waits(workload: str) -> list[float]:
    """Milliseconds each 1 ms stand-in kernel waited: (its run - n) / n for the n = floor(nominal) kernels queued."""
    out = []
    for name, r in within_cases(workload).items():
        if name.startswith("wait-queued/"):
            n = int(r["standin_nominal_ms"])
            out.append((r["standin_ms"] - n) / n)
    return out


def test_queued_wait_in_the_step_is_the_time_left_of_the_running_kernel():
    """One Llama 3 8B layer's kernels as measured in that step (benchmarks/gemm_in_step.py, per layer): the GEMMs'
    14.21 ms split by their weights (qkv 25.2M, o 16.8M, gate_up 117.4M, down 58.7M of 218.1M) into forward, input-
    and weight-gradient kernels of 0.547, 0.365, 2.550 and 1.275 ms each; attention 0.975 ms forward and 2.925
    backward; 20.95 ms of kernels in all. sum(d^2) = 3 x 8.558 + 0.951 + 8.556 = 35.18 ms^2, over 2 x 20.95:
    0.84 ms. The stand-in's kernels waited 0.75-0.80 ms each (8-32 blocks)."""
    from costmodel.layer import kernel_residual_seconds

    rule = kernel_residual_seconds([0.547, 0.365, 2.550, 1.275], 0.975, 2.925, 20.95)
    assert rule == pytest.approx(0.840, abs=0.002)
    waits = queued_waits(STEP)
    assert len(waits) == 4 and all(0.85 * rule <= w <= rule for w in waits), waits


def test_queued_wait_beside_gemms_is_under_half_a_gemm():
    """Beside back-to-back 8192^3 GEMMs of 1.62-1.65 ms the rule gives half a GEMM, about 0.82 ms; the kernels
    waited 0.64-0.72 ms (78-88% of it: the next kernel's blocks are placed as the GEMM's last tiles retire)."""
    half_gemm = within_cases("gemm_8192_bf16_x40")["wait-queued/16"]["alone_ms"] / 40 / 2
    waits = queued_waits("gemm_8192_bf16_x40")
    assert len(waits) == 4 and all(0.75 * half_gemm <= w <= half_gemm for w in waits), (waits, half_gemm)


def test_beside_with_a_wait_by_hand():
    """A 1.0 s transfer whose kernels wait 0.5 s in all, beside 1.2 s of compute: it ends at 1.5 s, 0.3 s past the
    window, more than the 0.19 x 1.0 s it slows the compute; beside 2.0 s it hides and costs the slowdown only."""
    from costmodel import overlap

    assert overlap.beside_seconds(1.0, 1.2, 0.19, wait_seconds=0.5) == pytest.approx(0.3)
    assert overlap.beside_seconds(1.0, 2.0, 0.19, wait_seconds=0.5) == pytest.approx(0.19)
    assert overlap.beside_seconds(1.0, 1.2, 0.19) == pytest.approx(0.19)  # no wait: it hides in 1.2 s
