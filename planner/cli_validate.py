"""`planner validate`: predicted vs published step time and memory, per row and summarised."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import validation


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def rows_table(results: list[validation.Result]) -> Table:
    table = Table(title="Predicted vs published (signed error: + = model slower / larger)", title_justify="left")
    for col in ("row", "gen", "pred s", "meas s", "error", "pred GiB", "meas GiB", "mem err"):
        table.add_column(col, justify="left" if col in ("row", "gen") else "right")
    for r in results:
        meas_mem = r.run.measured.peak_memory_gib
        table.add_row(r.run.id, r.generation, f"{r.predicted_step_seconds:.3f}", f"{r.run.measured.step_time_s:.3f}",
                      pct(r.step_error), f"{r.predicted_memory_gib:.1f}", "-" if meas_mem is None else f"{meas_mem:.1f}",
                      pct(r.memory_error))
    return table


def summary_table(summary: dict) -> Table:
    table = Table(title="Summary", title_justify="left")
    for col in ("group", "rows", "step MAPE", "step max", "step mean signed", "mem rows", "mem MAPE", "mem max"):
        table.add_column(col, justify="left" if col == "group" else "right")
    for group, s in summary.items():
        st, mem = s["step_time"], s["memory"]
        table.add_row(group, str(st["n"]), pct(st["mape"]).lstrip("+"), pct(st["max_abs"]).lstrip("+"),
                      pct(st["mean_signed"]), str(mem["n"]), pct(mem["mape"]).lstrip("+"), pct(mem["max_abs"]).lstrip("+"))
    return table


def cmd_validate(args: argparse.Namespace) -> int:
    runs = validation.load_runs(Path(args.runs)) if args.runs else validation.load_runs()
    if args.group:
        runs = [r for r in runs if r.group in args.group]
    results = validation.evaluate(runs)
    summary = validation.summarise(results)
    if args.json:
        print(json.dumps({"rows": [validation.result_to_dict(r) for r in results], "summary": summary}, indent=2))
        return 0
    console = Console()
    console.print(rows_table(results))
    console.print(summary_table(summary))
    return 0


def register(sub) -> None:
    p = sub.add_parser("validate", help="compare predictions with published training runs (MAPE, max error)",
                       description="Run the cost model on every published run in validation/runs.yaml and report "
                                   "signed errors per row and MAPE / max error per source and overall.")
    p.add_argument("--runs", help="validation YAML (default: validation/runs.yaml)")
    p.add_argument("--group", action="append", help="only this source group (repeatable), e.g. megatron-2021")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    p.set_defaults(func=cmd_validate)
