"""How much of a left-out accuracy figure is the fit's optimiser rather than the cost model.

    python benchmarks/fit_noise.py [--workers N] [--variants NAME,NAME]

The fit (planner/validation/fit.py) is a cyclic coordinate descent on a grid laid over each constant's
bounds (FIT_BOUNDS), so it stops at one of several nearby local optima, and the grid's steps follow
the bounds. This script reruns the leave-one-out computation of `planner validate
--leave-one-source-out` (generalise.leave_one_out) with the bounds nudged in ways that change no
physics, and prints per source and per GPU generation left out the MAPE of each variant and their
spread. A mechanism whose change to a left-out figure lies inside that spread has not been shown to
help (validation/README.md, "Per-layer CUDA graphs and the fit's restarts"). Each variant is one
leave-one-out computation: about 6 minutes on 8 workers.

Variants (the shipped bounds are always run first):
  upper1    every upper bound 1% higher
  lower1    every lower bound 1% of its range higher
  blackwell the Blackwell attention fraction's lower bound at 0.1 instead of 0 (0 is the value
            compute.flash_attention_fraction reads as "use the generic fraction")
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation import fit  # noqa: E402
from planner.validation import runs as validation  # noqa: E402
from planner.validation.generalise import leave_one_out  # noqa: E402

SHIPPED = dict(fit.FIT_BOUNDS)
VARIANTS = {
    "upper1": {name: (low, high * 1.01) for name, (low, high) in SHIPPED.items()},
    "lower1": {name: (low + 0.01 * (high - low), high) for name, (low, high) in SHIPPED.items()},
    "blackwell": {**SHIPPED, "flash_attention_peak_fraction_blackwell": (0.1, 0.9)},
}


def left_out_mapes(runs, bounds: dict, workers: int | None) -> dict[str, float]:
    """{"source <group>" / "generation <gen>" / "all sources" / "all generations": left-out step MAPE}."""
    report = leave_one_out(runs, workers, bounds=bounds)
    out = {}
    for part, label in (("leave_one_source_out", "source"), ("leave_one_generation_out", "generation")):
        for key, split in report[part]["held_out"].items():
            out[f"{label} {key}"] = split["step_time"]["mape"]
        out[f"all {label}s"] = report[part]["overall"]["step_time"]["mape"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    args = parser.parse_args()
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"fit_noise.py: unknown variant(s) {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    runs = validation.load_runs()
    columns = {"shipped": left_out_mapes(runs, SHIPPED, args.workers)}
    for name in names:
        columns[name] = left_out_mapes(runs, VARIANTS[name], args.workers)
    print("| left out | " + " | ".join(columns) + " | spread |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for key in columns["shipped"]:
        values = [c[key] for c in columns.values()]
        cells = " | ".join(f"{100 * v:.2f}%" for v in values)
        print(f"| {key} | {cells} | {100 * (max(values) - min(values)):.2f} |")


if __name__ == "__main__":
    main()
