"""Start-up cost of the commands: wall time of whole `planner ...` processes (median of N runs), and
which heavy libraries each one imports (`python -X importtime`). Commands that do not search must
not import OR-Tools; with --json nothing imports rich.

    python benchmarks/bench_startup.py [--runs 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python itself": ["-c", "pass"],
    "--help": ["-m", "planner", "--help"],
    "catalog gpus --json": ["-m", "planner", "catalog", "gpus", "--json"],
    "estimate --json": ["-m", "planner", "estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--gbs", "64",
                        "--json"],
    "estimate (tables)": ["-m", "planner", "estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--gbs",
                          "64"],
    "suggest --json": ["-m", "planner", "suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--json"],
}
HEAVY = ("ortools", "rich", "pydantic", "yaml", "matplotlib")


def wall(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def imported(argv: list[str]) -> dict[str, float]:
    """Cumulative import seconds of each heavy top-level package the command imports."""
    err = subprocess.run([sys.executable, "-X", "importtime", *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr
    out = {}
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() in HEAVY:
            out[parts[2].strip()] = int(parts[1]) / 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print(f"{'command':24} {'median s':>9}  heavy imports (cumulative s)")
    for name, argv in COMMANDS.items():
        heavy = imported(argv)
        libs = ", ".join(f"{k} {v:.3f}" for k, v in sorted(heavy.items())) or "-"
        print(f"{name:24} {wall(argv, runs):9.3f}  {libs}")


if __name__ == "__main__":
    main()
