"""Checkpoint and failure overheads of a whole run (costmodel/runtime.py), by hand."""
import math

import pytest

from costmodel import runtime


def test_llama3_failure_rate():
    # 466 interruptions, 54 days, 16,384 GPUs (Llama 3 paper Sec 3.3.4): ~0.53 per 1000 GPU-days.
    assert runtime.LLAMA3_INTERRUPTIONS_PER_GPU_HOUR * 24 * 1000 == pytest.approx(0.527, abs=0.002)


def test_young_optimal_interval():
    # C = 60 s, one failure per 10 h: sqrt(2 * 60 * 36000) = 2078 s.
    assert runtime.optimal_interval_seconds(60, 1 / 36000) == pytest.approx(math.sqrt(2 * 60 * 36000))
    assert runtime.optimal_interval_seconds(60, 0) == math.inf


def test_no_failures_no_checkpoint_cost_is_just_the_steps():
    r = runtime.run_wall_clock(1e6, 1024, 0.0, 0.0, 600.0)
    assert r.total_seconds == pytest.approx(1e6) and r.expected_failures == 0


def test_wall_clock_by_hand():
    # W = 100 h, N = 1000 GPUs at 1e-5 failures/GPU-hour -> F = 0.01/h; C = 0.1 h, I = 5 h, R = 0.5 h.
    # T = W (1 + C/I) / (1 - F (R + I/2)) = 100 * 1.02 / (1 - 0.01 * 3) = 105.15 h.
    hour = 3600.0
    r = runtime.run_wall_clock(100 * hour, 1000, 0.1 * hour, 1e-5 / hour, 0.5 * hour, interval_seconds=5 * hour)
    assert r.total_seconds / hour == pytest.approx(100 * 1.02 / 0.97)
    assert r.expected_failures == pytest.approx(0.01 * 100 * 1.02 / 0.97)


def test_checkpoint_seconds():
    # 70e9 params x 14 B = 980 GB over 8 nodes at 1 GB/s each: 122.5 s.
    assert runtime.checkpoint_seconds(70e9, 8, 1e9) == pytest.approx(122.5)
