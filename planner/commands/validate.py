"""`planner validate`: predicted vs published step time and memory, per row and summarised.

Over planner.validation.runs (evaluate, summarise), planner.validation.floor (what rows with equal
inputs cost any model) and planner.validation.generalise (the out-of-sample checks: --fit-on,
--leave-one-source-out)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.commands.common import print_json
from planner.errors import PlannerError
from planner.inputs.argtypes import bounded_int


def cmd_validate(args: argparse.Namespace) -> int:
    from planner.render import validate as render
    from planner.render.estimate import make_console
    from planner.validation import runs as validation
    from planner.validation.fit import FIT_BOUNDS
    from planner.validation.generalise import generalisation, leave_one_out
    from planner.validation.report import report

    if args.holdout and (args.runs or args.fit_on or args.leave_one_source_out):
        raise PlannerError("--holdout scores the held-out rows with the shipped constants: it takes no --runs, "
                           "--fit-on or --leave-one-source-out")
    path = Path(args.runs) if args.runs else validation.default_holdout() if args.holdout else None
    runs = validation.load_runs(path)
    if args.group:
        known = sorted({r.group for r in runs})
        unknown = [g for g in args.group if g not in known]
        if unknown:
            raise PlannerError(f"--group {unknown[0]}: unknown; the runs have {', '.join(known)}")
        runs = [r for r in runs if r.group in args.group]
    if all(r.exclude for r in runs):
        which = "every row of the groups given" if args.group else "every row"
        raise PlannerError(f"{path or 'validation/runs.yaml'}: no row to score: {which} has `exclude:` set")
    if args.fit_on and args.leave_one_source_out:
        raise PlannerError("--fit-on and --leave-one-source-out: give one of them")
    if args.leave_one_source_out:
        out = leave_one_out(runs, args.workers)
        if args.json:
            print_json(out)
        else:
            render.print_leave_one_out(out, make_console())
        return 0
    if args.fit_on:
        out = generalisation(runs, args.fit_on, args.workers)
        if out["train_rows"] < len(FIT_BOUNDS):  # the audit saw "MAPE 0.0%" from one row
            print(f"planner: warning: --fit-on {args.fit_on}: {out['train_rows']} row(s) for {len(FIT_BOUNDS)} "
                  "shared constants: the fit can match them exactly, so its error on them says little",
                  file=sys.stderr)
        if args.json:
            print_json(out)
        else:
            render.print_generalisation(out, make_console())
        return 0
    results = validation.evaluate(runs)
    out = report(runs, results)
    if args.json:
        print_json(out)
        return 0
    console = make_console()
    console.print(render.rows_table(results))
    console.print(render.summary_table(out["summary"], out["by_generation"], out["by_precision"]))
    render.print_floor(out["measurement_floor"], console)
    return 0


def _generation(text: str) -> str:
    """A GPU generation name or 'all' (which generations the rows hold is checked once they are read)."""
    if not text or not text.isascii() or not text.replace("-", "").isalnum() or len(text) > 32:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a GPU generation (e.g. ampere, hopper) or all")
    return text


def register(sub) -> None:
    p = sub.add_parser("validate", help="compare predictions with published training runs (MAPE, max error)",
                       description="Run the cost model on every published run in validation/runs.yaml and report "
                                   "signed errors per row and MAPE / max error per source, GPU generation, "
                                   "precision and overall. --leave-one-source-out gives the out-of-sample error.")
    p.add_argument("--runs", help="validation YAML (default: validation/runs.yaml)")
    p.add_argument("--holdout", action="store_true",
                   help="score the held-out rows (validation/holdout.yaml), which no fit has seen, with the shipped "
                        "constants: the out-of-sample check by construction")
    p.add_argument("--group", action="append", help="only this source group (repeatable), e.g. megatron-2021")
    p.add_argument("--fit-on", type=_generation, metavar="GENERATION|all",
                   help="fit the shared efficiency constants on this GPU generation's rows (one the rows hold, "
                        "e.g. ampere, hopper) or on all rows, and report the error on the held-out rows")
    p.add_argument("--leave-one-source-out", action="store_true",
                   help="out-of-sample error: for each source group, fit the constants on the other groups and "
                        "predict its rows; the same per GPU generation; with the in-sample fit for contrast")
    p.add_argument("--workers", type=bounded_int(64), default=None,
                   help="processes for the fits (default: the CPU count, at most 8); the result does not depend on it")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    p.set_defaults(func=cmd_validate)
