"""`planner validate`: predicted vs published step time and memory, per row and summarised.

Over planner.validation.runs (evaluate, summarise) and planner.validation.generalise."""
from __future__ import annotations

import argparse
from pathlib import Path

from planner.commands.common import print_json
from planner.errors import PlannerError


def cmd_validate(args: argparse.Namespace) -> int:
    from planner.render import validate as render
    from planner.render.estimate import make_console
    from planner.validation import runs as validation
    from planner.validation.generalise import generalisation

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
            print_json(out)
        else:
            render.print_generalisation(out)
        return 0
    results = validation.evaluate(runs)
    summary = validation.summarise(results)
    if args.json:
        print_json({"rows": [validation.result_to_dict(r) for r in results], "summary": summary})
        return 0
    console = make_console()
    console.print(render.rows_table(results))
    console.print(render.summary_table(summary))
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
