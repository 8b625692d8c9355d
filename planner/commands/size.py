"""`planner size MODEL --tokens T`: which GPUs and how many, for a token budget, deadline and budget.

Over planner.sizing.run.size."""
from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

from costmodel import runtime
from planner.commands.common import add_what_if, add_what_if_grid, print_json
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.argtypes import batch_arg, bounded_float, bounded_int, file_arg, gpus_arg, seq_length_arg


def request_of(args: argparse.Namespace):
    from planner.sizing.run import SizeRequest

    return SizeRequest(args.model, args.tokens, args.gbs, args.seq_length, args.deadline_days, args.budget_usd,
                       args.gpu_types, args.max_gpus, args.catalog, args.prices, args.include_spot, args.fine,
                       args.failures_per_1000_gpu_days, args.restart_minutes, args.checkpoint_gbytes_per_s_per_node,
                       args.workers)


@contextmanager
def progress_bar(quiet: bool):
    """A rich spinner on stderr counting the plan searches, only on a terminal and without --json;
    yields the callback sizing.run.size reports each finished search to (or None)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sizing: searching plans ...", total=None)
        done = 0

        def report(gpu: str, count: int) -> None:
            nonlocal done
            done += 1
            bar.update(task, description=f"sizing: {done} plan searches, last {count} x {gpu}")

        yield report


def cmd_size(args: argparse.Namespace) -> int:
    from planner.analysis import whatif
    from planner.render import size as render
    from planner.sizing.run import size, size_dict, stability_rows

    if args.plot and Path(args.plot).suffix.lower() not in (".svg", ".html", ".htm"):
        raise PlannerError(f"--plot {args.plot}: write .svg or .html (the picture is SVG)")
    if args.plot:  # refuse before the scan: no matplotlib, a folder, or a file there without --force
        from planner.files import check_targets
        from planner.render.mpl import require

        require("--plot")
        check_targets(Path(args.plot).parent, {Path(args.plot).name: ("", False)}, args.force)
    request = request_of(args)
    assumed = whatif.parse(args.what_if) if args.what_if else None
    grid = []
    if args.what_if_grid:  # merged (and a key in both refused) before the scan
        from planner.search.stability import parse_grid

        grid = whatif.beside(assumed or whatif.WhatIf(), parse_grid(args.what_if_grid)[1])
    with progress_bar(args.json) as progress:
        r = size(request, assumed, progress)
    rows = stability_rows(request, r, grid)
    if args.plot:
        from planner.render.sizing_plot import write_plot

        write_plot(Path(args.plot), r, args.force)
    if args.json:
        print_json(size_dict(r, rows))
    else:
        if r["what_if"]:
            print(f"what if {r['what_if']}:")
        render.print_size(r, args.deadline_days)
        if rows:
            render.print_stability(rows)
    return unmet_status(r)


def unmet_status(r: dict) -> int:
    """1, with the reason on stderr, where no option meets the deadline and budget given (the report, with the
    closest options and what they would need, is printed all the same); else 0."""
    if not (r["deadline_days"] or r["budget_usd"]) or r["cheapest"] is not None:
        return 0
    from planner.sizing.run import usd_text

    limits = " and ".join(([f"{r['deadline_days']:g} days"] if r["deadline_days"] else [])
                          + ([usd_text(r["budget_usd"])] if r["budget_usd"] else []))
    print(f"planner: no option meets {limits} (the report gives the closest options and what they would need)",
          file=sys.stderr)
    return 1


def register(sub) -> None:
    p = sub.add_parser("size", help="which GPU type and how many: time and dollars to train, Pareto front",
                       description="Search cluster offerings (GPU type, node shape, network, price) and GPU counts "
                                   "with the best plan for each; report the time/dollar Pareto front, the cheapest "
                                   "option meeting the deadline and the fastest within the budget. A count is "
                                   "not searched when an option already found is faster and cheaper than it could "
                                   "be even at its step floor (a note names it and what beats it).")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--tokens", type=bounded_float(L.MAX_TOKENS, L.MIN_TOKENS, strict=False), help="tokens to train on, e.g. 2e12 (default: the model's training_tokens)")
    p.add_argument("--gbs", type=batch_arg, help="global batch in sequences (default: the model's)")
    p.add_argument("--seq-length", type=seq_length_arg)
    p.add_argument("--deadline-days", type=bounded_float(L.MAX_DAYS, L.MIN_DAYS, strict=False))
    p.add_argument("--budget-usd", type=bounded_float(L.MAX_USD, L.MIN_USD, strict=False))
    p.add_argument("--gpu-types", help="comma-separated GPU names to consider (default: all priced)")
    p.add_argument("--max-gpus", type=gpus_arg, default=16384, help="largest GPU count to consider (default 16384)")
    p.add_argument("--catalog", help="cluster offerings YAML (default catalogs/clusters.yaml)")
    p.add_argument("--prices", help="YAML mapping cluster or GPU name -> usd_per_gpu_hour, overriding the catalog")
    p.add_argument("--include-spot", action="store_true",
                   help="also size spot (preemptible) offerings; preemptions are not modelled")
    p.add_argument("--fine", action="store_true", help="also try 1.5x node counts (3, 6, 12, ... nodes)")
    p.add_argument("--failures-per-1000-gpu-days", type=bounded_float(L.MAX_FAILURES_PER_1000_GPU_DAYS, strict=False),
                   default=runtime.LLAMA3_INTERRUPTIONS_PER_1000_GPU_DAYS,
                   help="job interruptions (default 0.53: Llama 3 405B, 466 in 54 days on 16,384 GPUs)")
    p.add_argument("--restart-minutes", type=bounded_float(L.MAX_RESTART_MINUTES, strict=False), default=10.0,
                   help="time lost per restart (default 10)")
    checkpoint_rate = bounded_float(L.MAX_CHECKPOINT_GBYTES_PER_S, L.MIN_CHECKPOINT_GBYTES_PER_S, strict=False)
    p.add_argument("--checkpoint-gbytes-per-s-per-node", type=checkpoint_rate, default=1.0,
                   help="checkpoint write bandwidth per node (default 1 GB/s)")
    add_what_if(p, "size")
    add_what_if_grid(p, "size again for each value and show whether the chosen options stay best")
    p.add_argument("--workers", type=bounded_int(L.MAX_SCAN_WORKERS), default=2,
                   help="processes for the scan (default 2)")
    p.add_argument("--plot", type=file_arg,
                   help="draw every option, the Pareto front and the chosen options as SVG (FILE.svg) or "
                        "self-contained HTML (FILE.html); needs matplotlib: pip install 'matplotlib>=3.7'")
    p.add_argument("--force", action="store_true", help="overwrite --plot FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_size)
