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


def within_cases() -> dict[str, dict]:
    data = json.loads((RESULTS / "overlap_contention_h200_2026-12-04_within.json").read_text())
    return data["cases"][STEP]


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

