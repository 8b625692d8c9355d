"""Print the README's accuracy tables (markdown) from `planner validate`, so they can be reproduced.

    python benchmarks/accuracy_tables.py [--workers N]

First the out-of-sample tables (`planner validate --leave-one-source-out`: each source group
predicted by constants fitted on the other groups; each GPU generation by constants fitted on the
other generation; each MoE model's rows by constants fitted on every other row), then the in-sample
ones (`planner validate`: the shipped constants, fitted on all rows, scored on the same rows).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation import fit  # noqa: E402
from planner.validation import runs as validation  # noqa: E402
from planner.validation.floor import measurement_floor  # noqa: E402
from planner.validation.generalise import leave_one_out  # noqa: E402

TABLE1 = {"megatron-t1-1.7b": "1.7B, 32 GPUs", "megatron-t1-3.6b": "3.6B, 64 GPUs", "megatron-t1-7.5b": "7.5B, 128 GPUs",
          "megatron-t1-18b": "18B, 256 GPUs", "megatron-t1-39b": "39B, 512 GPUs", "megatron-t1-76b": "76B, 1024 GPUs",
          "megatron-t1-145b": "145B, 1536 GPUs", "megatron-t1-310b": "310B, 1920 GPUs",
          "megatron-t1-530b": "530B, 2520 GPUs", "megatron-t1-1t": "1T, 3072 GPUs"}


def pct(x, signed=False) -> str:
    return "-" if x is None else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def split_table(part: dict, label: str) -> None:
    print(f"| {label} | rows | fitted on | step-time MAPE | max | mean signed | in sample | memory rows | memory MAPE |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key, s in part["held_out"].items():
        st, mem = s["step_time"], s["memory"]
        print(f"| {key} | {st['n']} | {s['train_rows']} | {pct(st['mape'])} | {pct(st['max_abs'])} "
              f"| {pct(st['mean_signed'], True)} | {pct(s['in_sample']['step_time']['mape'])} | {mem['n']} "
              f"| {pct(mem['mape'])} |")
    st, mem = part["overall"]["step_time"], part["overall"]["memory"]
    print(f"| **all rows** | {st['n']} | | **{pct(st['mape'])}** | {pct(st['max_abs'])} | {pct(st['mean_signed'], True)} "
          f"| | {mem['n']} | {pct(mem['mape'])} |")


def lines_table(first: dict, by_generation: dict, by_precision: dict, label: str) -> None:
    print(f"| {label} | rows | step-time MAPE | max | mean signed | memory rows | memory MAPE |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    named = list(first.items()) + [(f"{k} (generation)", s) for k, s in by_generation.items()] \
        + [(f"{k} (precision)", s) for k, s in by_precision.items()]
    for key, s in named:
        st, mem = s["step_time"], s["memory"]
        print(f"| {key} | {st['n']} | {pct(st['mape'])} | {pct(st['max_abs'])} | {pct(st['mean_signed'], True)} "
              f"| {mem['n']} | {pct(mem['mape'])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=None, help="processes for the fits")
    args = parser.parse_args()
    runs = validation.load_runs()
    start = time.perf_counter()
    out = leave_one_out(runs, args.workers)
    seconds = time.perf_counter() - start

    print("Out of sample, leave one source out (`planner validate --leave-one-source-out`):\n")
    split_table(out["leave_one_source_out"], "held-out source")
    print("\nThe same held-out predictions per GPU generation and per precision:\n")
    loo = out["leave_one_source_out"]
    lines_table({}, loo["by_generation"], loo["by_precision"], "held-out rows")
    worst = sorted(loo["rows"], key=lambda r: -abs(r["step_time_error"]))[:5]
    print("\nLargest out-of-sample errors:\n\n" + "\n".join(
        f"- `{r['id']}` {pct(r['step_time_error'], True)} (in sample {pct(r['in_sample_step_time_error'], True)})"
        for r in worst))
    print("\nLeave one GPU generation out:\n")
    split_table(out["leave_one_generation_out"], "held-out generation")
    print("\nLeave one mixture-of-experts model out (its rows only; fitted on every other row):\n")
    split_table(out["leave_one_moe_model_out"], "held-out MoE model")

    results = validation.evaluate(runs)
    print("\nIn sample (`planner validate`: the shipped constants, fitted on all rows, scored on the same rows):\n")
    lines_table(validation.summarise(results), validation.summarise_by_generation(results),
                validation.summarise_by_precision(results), "source")
    print("\n| row | predicted s | published s | error |\n|---|---|---|---|")
    for r in results:
        if r.run.id in TABLE1:
            print(f"| {TABLE1[r.run.id]} | {r.predicted_step_seconds:.2f} | {r.run.measured.step_time_s:.2f} "
                  f"| {pct(r.step_error, True)} |")
    held = validation.group_errors(validation.evaluate(validation.load_runs(validation.default_holdout())))
    step, memory = held["step_time"], held["memory"]
    print(f"\nHeld out (`planner validate --holdout`, no fit reads them): {step['n']} rows, step MAPE "
          f"{pct(step['mape'])}, max {pct(step['max_abs'])}; memory {memory['n']} rows, max {pct(memory['max_abs'])}")
    floor = measurement_floor(runs)
    print(f"\nFloor: {floor['grouped_rows']} of {floor['rows']} rows in {len(floor['groups'])} groups of equal inputs; "
          f"no model scores below MAPE {pct(floor['mape'])} or max {pct(floor['max_abs'])}")
    ins = out["in_sample"]
    print("\nfitted on all rows: " + ", ".join(f"{k}={v:.4g}" for k, v in ins["fitted"].items())
          + f" (MAPE {pct(ins['train_mape'])}; prior: {fit.fitted_values(fit.prior())})")
    for key, s in out["leave_one_source_out"]["held_out"].items():
        print(f"fitted without {key}: " + ", ".join(f"{k}={v:.4g}" for k, v in s["fitted"].items()))
    print(f"\n{out['fits']} fits in {seconds:.1f} s")


if __name__ == "__main__":
    main()
