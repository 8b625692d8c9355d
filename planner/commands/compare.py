"""`planner compare A.json B.json`: two scored plans side by side, and why the faster one wins."""
from __future__ import annotations

import argparse
from pathlib import Path

from planner.analysis import explain
from planner.commands.common import print_json
from planner.inputs.loading import load_estimate
from planner.render import estimate as render

REQUIRED = ("plan", "step_time_s", "time_breakdown_s", "memory_per_gpu_bytes", "usd_per_step", "mfu")


def load_scored(path: str) -> dict:
    """An estimate object (`planner estimate --json`), or the first plan of `suggest --json`."""
    return load_estimate(path, REQUIRED)


def cmd_compare(args: argparse.Namespace) -> int:
    a, b = load_scored(args.a), load_scored(args.b)
    fast, slow = (a, b) if a["step_time_s"] <= b["step_time_s"] else (b, a)
    tie = abs(a["step_time_s"] - b["step_time_s"]) <= 1e-9 * max(a["step_time_s"], b["step_time_s"])
    sentence = "the same step time" if tie else explain.why_faster(fast, slow)
    winner = "tie" if tie else ("A" if fast is a else "B")
    if args.json:
        print_json({"faster": winner, "why": sentence, "a": a, "b": b})
        return 0
    render.print_side_by_side(a, b, f"A ({Path(args.a).name})", f"B ({Path(args.b).name})")
    render.make_console().print("[bold]A and B tie[/bold]" if winner == "tie" else
                                f"[bold]{winner} is faster[/bold]: {sentence}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("compare", help="two plans (JSON from estimate/suggest) side by side, and why one wins",
                       description="Compare two scored plans part by part.")
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)
