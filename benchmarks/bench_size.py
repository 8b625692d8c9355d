"""Time `planner size` over the whole shipped catalog, median of several runs, end to end in process.

    python benchmarks/bench_size.py [--reps 3]

Cases: the README example (Llama 3 70B, 2T tokens, 30-day deadline, global batch 512), the same
without a deadline (every count from the memory bound up to 16,384 GPUs that an option found does
not beat at its step floor is searched), and Llama 3
405B over the whole catalog (target: under 10 s), and DeepSeek-V3 over the catalog (a mixture-of-experts
model: each search also walks expert parallelism, so each takes longer).
Prints wall-time medians, the number of (hardware, count) plan searches and of options sized.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.commands.main import main  # noqa: E402

BASE = ["size", "llama3-70b", "--tokens", "2e12", "--gbs", "512"]
CASES = [("README example, 30-day deadline", BASE + ["--deadline-days", "30"]),
         ("no deadline (full count range)", BASE),
         ("Llama 3 405B, 15T tokens, catalog", ["size", "llama3-405b", "--tokens", "15e12", "--gbs", "2048"]),
         ("DeepSeek-V3, 1T tokens, catalog", ["size", "deepseek-v3", "--tokens", "1e12"])]


def run(argv: list[str]) -> tuple[float, dict]:
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        main(argv + ["--json"])
    return time.perf_counter() - start, json.loads(out.getvalue())


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    reps = parser.parse_args().reps
    print(f"{'case':34s} {'median s':>9s} {'min s':>7s} {'searches':>9s} {'options':>8s}")
    for name, argv in CASES:
        times, last = [], {}
        for _ in range(reps):
            seconds, last = run(argv)
            times.append(seconds)
        print(f"{name:34s} {statistics.median(times):9.2f} {min(times):7.2f} {last['searched']:9d} "
              f"{len(last['options']):8d}")


if __name__ == "__main__":
    main_bench()
