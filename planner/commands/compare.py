"""`planner compare A.json B.json`: two scored plans side by side, and why the faster one wins; says when
the plans are for different jobs or one does not fit."""
from __future__ import annotations

import argparse
from pathlib import Path

from planner.commands.common import print_json
from planner.errors import PlannerError


def load_scored(path: str) -> dict:
    """An estimate object (`planner estimate --json`), or the first plan of `suggest --json`."""
    from planner.analysis.compare import REQUIRED
    from planner.inputs.loading import load_estimate

    return load_estimate(path, REQUIRED)


def cmd_compare(args: argparse.Namespace) -> int:
    """Over planner.analysis.compare.compare."""
    from planner.analysis.compare import compare

    if args.a == "-" and args.b == "-":
        raise PlannerError("A and B are both '-': standard input holds one plan; give the other as a file")
    result = compare(load_scored(args.a), load_scored(args.b))
    if args.json:
        print_json(result)
        return 0
    from planner.render import estimate as render

    console = render.make_console()
    for warning in result["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    for name, d in (("A", result["a"]), ("B", result["b"])):
        degrees = ", ".join(f"{k} {d['plan'][k]}" for k in ("tp", "cp", "pp", "dp", "ep", "vpp") if k in d["plan"])
        console.print(f"{name}: {d['model']} on {d['num_gpus']} x {d['gpu']}, sequences of {d['seq_length']:,} tokens; "
                      f"{degrees}")
    render.print_side_by_side(result["a"], result["b"], f"A ({Path(args.a).name})", f"B ({Path(args.b).name})")
    winner = result["faster"]
    console.print(f"[bold]A and B tie[/bold]: {result['why']}" if winner == "tie"
                  else f"[bold]{winner} is faster[/bold]: {result['why']}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("compare", help="two plans (JSON from estimate/suggest) side by side, and why one wins",
                       description="Compare two scored plans part by part.")
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)
