"""`planner validate`: predicted vs published step time and memory, per row and summarised."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.table import Table

from . import render, validation
from .errors import PlannerError


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


def generalisation(runs: list[validation.Run], fit_on: str) -> dict:
    """Fit the shared constants on rows of one GPU generation ('all' = every row) and report the
    step-time MAPE on those rows and on the held-out rest."""
    from . import fit

    gen = {r.id: validation.generation_of(r) for r in runs}
    train = [r for r in runs if fit_on == "all" or gen[r.id] == fit_on]
    held = [r for r in runs if fit_on != "all" and gen[r.id] != fit_on and not r.exclude]
    if not train:
        raise PlannerError(f"--fit-on {fit_on}: no validation rows of that generation")
    eff, train_mape = fit.fit(train)
    eff, train_memory_mape = fit.fit_memory(train, eff)
    return {"fit_on": fit_on, "fitted": fit.fitted_values(eff), "train_rows": len(train), "train_mape": train_mape,
            "train_memory_mape": train_memory_mape,
            "heldout_rows": len(held), "heldout_mape": fit.step_mape(held, eff) if held else None,
            "heldout_memory_mape": fit.memory_mape(held, eff) if held else None}


def cmd_validate(args: argparse.Namespace) -> int:
    runs = validation.load_runs(Path(args.runs)) if args.runs else validation.load_runs()
    if args.group:
        known = sorted({r.group for r in runs})
        unknown = [g for g in args.group if g not in known]
        if unknown:
            raise PlannerError(f"--group {unknown[0]}: unknown; the runs have {', '.join(known)}")
        runs = [r for r in runs if r.group in args.group]
    if args.fit_on:
        out = generalisation(runs, args.fit_on)
        if args.json:
            print(json.dumps(out, indent=2))
        else:
            held = "-" if out["heldout_mape"] is None else f"{100 * out['heldout_mape']:.1f}%"
            print(f"fitted on {out['fit_on']} ({out['train_rows']} rows): step MAPE {100 * out['train_mape']:.1f}%; "
                  f"held-out rows ({out['heldout_rows']}): step MAPE {held}")
            if out["train_memory_mape"] is not None:
                print(f"memory MAPE on the fitted rows with a published peak: {100 * out['train_memory_mape']:.1f}%")
            if out["heldout_memory_mape"] is not None:
                print(f"memory MAPE on the held-out rows with a published peak: {100 * out['heldout_memory_mape']:.1f}%")
            print("fitted constants: " + ", ".join(f"{k}={v:.4g}" for k, v in out["fitted"].items()))
        return 0
    results = validation.evaluate(runs)
    summary = validation.summarise(results)
    if args.json:
        print(json.dumps({"rows": [validation.result_to_dict(r) for r in results], "summary": summary}, indent=2))
        return 0
    console = render.make_console()
    console.print(rows_table(results))
    console.print(summary_table(summary))
    return 0


def register(sub) -> None:
    p = sub.add_parser("validate", help="compare predictions with published training runs (MAPE, max error)",
                       description="Run the cost model on every published run in validation/runs.yaml and report "
                                   "signed errors per row and MAPE / max error per source and overall.")
    p.add_argument("--runs", help="validation YAML (default: validation/runs.yaml)")
    p.add_argument("--group", action="append", help="only this source group (repeatable), e.g. megatron-2021")
    p.add_argument("--fit-on", choices=["ampere", "hopper", "all"],
                   help="fit the shared efficiency constants on this GPU generation's rows and report the "
                        "error on the held-out rows (generalisation check)")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    p.set_defaults(func=cmd_validate)
