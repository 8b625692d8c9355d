"""Print the README's accuracy tables (markdown) from `planner validate`, so they can be reproduced.

    python benchmarks/accuracy_tables.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner import validation  # noqa: E402
from planner.commands.validate import generalisation  # noqa: E402
from planner.validation import fit

TABLE1 = {"megatron-t1-1.7b": "1.7B, 32 GPUs", "megatron-t1-3.6b": "3.6B, 64 GPUs", "megatron-t1-7.5b": "7.5B, 128 GPUs",
          "megatron-t1-18b": "18B, 256 GPUs", "megatron-t1-39b": "39B, 512 GPUs", "megatron-t1-76b": "76B, 1024 GPUs",
          "megatron-t1-145b": "145B, 1536 GPUs", "megatron-t1-310b": "310B, 1920 GPUs",
          "megatron-t1-530b": "530B, 2520 GPUs", "megatron-t1-1t": "1T, 3072 GPUs"}


def pct(x, signed=False) -> str:
    return "-" if x is None else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def main() -> None:
    runs = validation.load_runs()
    results = validation.evaluate(runs)
    print("| source | rows | step-time MAPE | max | mean signed | memory rows | memory MAPE |\n|---|---|---|---|---|---|---|")
    for group, s in validation.summarise(results).items():
        st, mem = s["step_time"], s["memory"]
        print(f"| {group} | {st['n']} | {pct(st['mape'])} | {pct(st['max_abs'])} | {pct(st['mean_signed'], True)} "
              f"| {mem['n']} | {pct(mem['mape'])} |")
    print("\n| row | predicted s | published s | error |\n|---|---|---|---|")
    for r in results:
        if r.run.id in TABLE1:
            print(f"| {TABLE1[r.run.id]} | {r.predicted_step_seconds:.2f} | {r.run.measured.step_time_s:.2f} "
                  f"| {pct(r.step_error, True)} |")
    print("\n| fitted on | rows | MAPE there | held-out rows | held-out MAPE |\n|---|---|---|---|---|")
    for gen, label in (("ampere", "A100 (ampere)"), ("hopper", "H100/H200 (hopper)")):
        g = generalisation(runs, gen)
        print(f"| {label} | {g['train_rows']} | {pct(g['train_mape'])} | {g['heldout_rows']} | {pct(g['heldout_mape'])} |")
    allfit = generalisation(runs, "all")
    print("\nfitted on all rows: " + ", ".join(f"{k}={v:.4g}" for k, v in allfit["fitted"].items())
          + f" (MAPE {pct(allfit['train_mape'])}; prior: {fit.fitted_values(fit.prior())})")


if __name__ == "__main__":
    main()
