"""`planner size MODEL --tokens T`: which GPUs and how many, for a token budget, deadline and budget."""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from rich.table import Table

from . import loading, render, report, sizing, whatif
from .argtypes import non_negative_float, positive_float, positive_int
from .errors import PlannerError
from .specs import ClusterSpec


def load_offerings(args: argparse.Namespace, extra_prices: dict[str, float] | None = None
                   ) -> tuple[list[sizing.Offering], list[str]]:
    table = loading.cluster_catalog()
    if args.catalog:
        rows = loading.read_data(Path(args.catalog)) or []
        if not isinstance(rows, list):
            raise PlannerError(f"{args.catalog}: expected a list of cluster offerings")
        table = {r.get("name", str(i)): loading.parse(ClusterSpec, r, f"{args.catalog} [{r.get('name', i)}]")
                 for i, r in enumerate(rows)}
    prices = {**(load_prices(args.prices) if args.prices else {}), **(extra_prices or {})}
    gpu_types = [g.strip() for g in args.gpu_types.split(",")] if args.gpu_types else None
    for name in gpu_types or []:
        loading.resolve_gpu(name)  # unknown names: one line with close matches
    gpus = {name: loading.resolve_gpu(spec.gpu) for name, spec in table.items()}
    offerings, skipped = sizing.priced_offerings(table, {g.name: g for g in gpus.values()}, gpu_types, prices,
                                                 args.include_spot)
    if not offerings:
        raise PlannerError("no priced cluster offering matches (add usd_per_gpu_hour, or --prices FILE)")
    return offerings, skipped


def load_prices(path: str) -> dict[str, float]:
    """A YAML/JSON mapping of cluster or GPU name to usd_per_gpu_hour, overriding the catalog."""
    data = loading.read_data(Path(path))
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) and v > 0 for v in data.values()):
        raise PlannerError(f"{path}: expected a mapping of cluster or GPU name to a positive usd_per_gpu_hour")
    return {str(k): float(v) for k, v in data.items()}


def option_dict(o: sizing.Option) -> dict:
    s = o.offering.spec
    out = {"offering": o.offering.name, "gpu": o.offering.gpu.name, "num_gpus": o.num_gpus,
           "usd_per_gpu_hour": o.offering.usd_per_gpu_hour, "price_kind": s.price_kind, "price_date": s.price_date,
           "price_source": s.price_source, "fits": o.feasible}
    if o.feasible:
        out.update({"days": o.days, "usd": o.usd, "steps": o.steps, "step_time_s": o.best.est.step_time_seconds,
                    "checkpoint_s": o.wall.checkpoint_seconds, "checkpoint_interval_s": o.wall.checkpoint_interval_seconds,
                    "expected_failures": o.wall.expected_failures,
                    "overhead_fraction": o.wall.overhead_fraction(o.step_seconds_total),
                    "estimate": report.to_dict(o.best)})
    return out


def option_row(o: sizing.Option) -> list[str]:
    p = o.best.plan
    return [o.offering.name, o.offering.gpu.name, str(o.num_gpus), f"tp{p.tp} pp{p.pp} dp{p.dp} z{p.zero_stage}",
            f"{o.best.est.step_time_seconds:.2f}", f"{100 * o.best.est.mfu:.0f}%", f"{o.days:.1f}", f"${o.usd:,.0f}",
            f"${o.offering.usd_per_gpu_hour:.2f} {o.offering.spec.price_kind or ''} {o.offering.spec.price_date or ''}"]


def options_table(title: str, options: list[sizing.Option]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("offering", "GPU", "GPUs", "best plan", "step s", "MFU", "days", "total $", "price"):
        table.add_column(col, justify="left" if col in ("offering", "GPU", "best plan", "price") else "right")
    for o in options:
        table.add_row(*option_row(o))
    return table


def impossible_lines(options: list[sizing.Option], args: argparse.Namespace) -> list[str]:
    """What the closest options would need when the deadline or budget cannot be met."""
    feasible = [o for o in options if o.feasible]
    lines = []
    if args.deadline_days and not any(o.days <= args.deadline_days for o in feasible):
        f = min(feasible, key=lambda o: (o.days, o.usd))
        need = math.ceil(f.num_gpus * f.days / args.deadline_days)
        lines.append(f"no offering meets {args.deadline_days:g} days: the fastest is {f.offering.name} with "
                     f"{f.num_gpus} GPUs, {f.days:.1f} days (${f.usd:,.0f}); meeting the deadline needs about "
                     f"{need} GPUs if scaling held (raise --max-gpus) or fewer tokens")
    if args.budget_usd and not any(o.usd <= args.budget_usd for o in feasible):
        c = min(feasible, key=lambda o: (o.usd, o.days))
        scope = " sized for this deadline" if args.deadline_days else ""
        lines.append(f"no option fits ${args.budget_usd:,.0f}: the cheapest{scope} is {c.offering.name} with "
                     f"{c.num_gpus} GPUs, ${c.usd:,.0f} ({c.days:.1f} days); the budget would need "
                     f"${c.usd - args.budget_usd:,.0f} more, or buys about {args.budget_usd / c.usd:.2%} of the tokens")
    return lines


def run_size(args: argparse.Namespace, wi: whatif.WhatIf | None = None) -> dict:
    model = loading.load_model_spec(args.model, args.seq_length, args.gbs)
    if not model.global_batch_size:
        raise PlannerError(f"model '{model.name}' has no global_batch_size; pass --gbs SEQUENCES")
    if not args.tokens:
        if not model.training_tokens:
            raise PlannerError(f"model '{model.name}' has no training_tokens; pass --tokens T")
        args.tokens = model.training_tokens
    offerings, skipped = load_offerings(args, wi.prices if wi else None)
    assumptions = sizing.RunAssumptions(args.failures_per_1000_gpu_days / 1000 / 24, args.restart_minutes * 60,
                                        args.checkpoint_gbytes_per_s_per_node * 1e9)
    start = time.perf_counter()
    scan = sizing.scan(model, offerings, args.max_gpus, args.tokens, sizing.search_best_plan, assumptions,
                       fine=args.fine, deadline_days=args.deadline_days, workers=args.workers, wi=wi)
    if not any(o.feasible for o in scan.options):
        raise PlannerError(f"no offering fits {model.name} within --max-gpus {args.max_gpus} (try more GPUs)")
    cheapest = sizing.choose(scan.options, "usd", args.deadline_days, args.budget_usd)
    fastest = sizing.choose(scan.options, "days", args.deadline_days, args.budget_usd)
    return {"model": model.name, "tokens": args.tokens, "global_batch_size": model.global_batch_size,
            "deadline_days": args.deadline_days, "budget_usd": args.budget_usd,
            "assumptions": {"failures_per_1000_gpu_days": args.failures_per_1000_gpu_days,
                            "restart_minutes": args.restart_minutes,
                            "checkpoint_gbytes_per_s_per_node": args.checkpoint_gbytes_per_s_per_node},
            "searched": scan.searched, "seconds": time.perf_counter() - start,
            "skipped_unpriced": skipped, "notes": scan.notes + impossible_lines(scan.options, args),
            "options": scan.options, "pareto": sizing.pareto(scan.options), "cheapest": cheapest, "fastest": fastest,
            "what_if": wi.label() if wi else None}


def print_size(r: dict, args: argparse.Namespace) -> None:
    console = render.make_console()
    a = r["assumptions"]
    console.print(f"[bold]{r['model']}[/bold], {r['tokens']:.3g} tokens, global batch {r['global_batch_size']}: "
                  f"{len(r['options'])} options, {r['searched']} plan searches, {r['seconds']:.1f} s")
    console.print(f"run overheads: {a['failures_per_1000_gpu_days']:g} interruptions per 1000 GPU-days "
                  f"(Llama 3 405B run), {a['restart_minutes']:g} min per restart, checkpoints at "
                  f"{a['checkpoint_gbytes_per_s_per_node']:g} GB/s per node every Young-optimal interval")
    console.print(options_table("Pareto front: time to train vs total dollars", r["pareto"]))
    for label, key in (("cheapest meeting the deadline and budget", "cheapest"),
                       ("fastest within the deadline and budget", "fastest")):
        o = r[key]
        if o is not None:
            console.print(f"[bold green]{label}[/bold green]: {o.offering.name}, {o.num_gpus} x {o.offering.gpu.name}, "
                          f"{o.days:.1f} days, ${o.usd:,.0f} (plan {option_row(o)[3]}, "
                          f"{100 * o.wall.overhead_fraction(o.step_seconds_total):.1f}% checkpoint/failure overhead, "
                          f"{o.wall.expected_failures:.1f} expected interruptions)")
    winner = r["cheapest"] or r["fastest"]
    if winner is not None:
        for gpu, o in sizing.best_by_gpu(r["options"], args.deadline_days).items():
            if gpu != winner.offering.gpu.name:
                console.print(f"  {gpu} ({o.offering.name}, {o.num_gpus} GPUs, {o.days:.1f} days, ${o.usd:,.0f}): "
                              f"{sizing.why_loses(o, winner, args.deadline_days)}")
    for note in r["notes"]:
        console.print(f"[yellow]note:[/yellow] {note}")
    if r["skipped_unpriced"]:
        console.print(f"[dim]not sized: {', '.join(r['skipped_unpriced'])}[/dim]")


def choice_label(o: sizing.Option | None) -> str:
    return "-" if o is None else f"{o.offering.name} x {o.num_gpus}: {o.days:.1f} days, ${o.usd:,.0f}"


def stability_rows(args: argparse.Namespace, base: dict) -> list[dict]:
    """The sizing again under each value of --what-if-grid: do the choices stay the same?"""
    from .stability import parse_grid

    same = lambda a, b: a is not None and b is not None and (a.offering.name, a.num_gpus) == (b.offering.name, b.num_gpus)  # noqa: E731
    rows = []
    for wi in parse_grid(args.what_if_grid)[1]:
        r = run_size(args, wi)
        rows.append({"assumption": wi.label(), "cheapest": choice_label(r["cheapest"]),
                     "fastest": choice_label(r["fastest"]), "cheapest_stays": same(r["cheapest"], base["cheapest"]),
                     "fastest_stays": same(r["fastest"], base["fastest"])})
    return rows


def print_stability(rows: list[dict]) -> None:
    table = Table(title="Do the choices stay best?", title_justify="left")
    for col in ("assumption", "cheapest meeting the deadline", "same", "fastest within budget", "same"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["assumption"], r["cheapest"], "yes" if r["cheapest_stays"] else "[red]no[/red]",
                      r["fastest"], "yes" if r["fastest_stays"] else "[red]no[/red]")
    render.make_console().print(table)


def cmd_size(args: argparse.Namespace) -> int:
    if args.plot and Path(args.plot).suffix.lower() not in (".svg", ".html", ".htm"):
        raise PlannerError(f"--plot {args.plot}: write .svg or .html (the picture is SVG)")
    r = run_size(args, whatif.parse(args.what_if) if args.what_if else None)
    rows = stability_rows(args, r) if args.what_if_grid else []
    if args.plot:
        from .sizing_plot import write_plot

        write_plot(Path(args.plot), r, args.force)
    if args.json:
        out = dict(r)
        for key in ("cheapest", "fastest"):
            out[key] = option_dict(r[key]) if r[key] else None
        out["pareto"] = [option_dict(o) for o in r["pareto"]]
        out["options"] = [option_dict(o) for o in r["options"]]
        out["stability"] = rows
        print(json.dumps(out, indent=2))
    else:
        if r["what_if"]:
            print(f"what if {r['what_if']}:")
        print_size(r, args)
        if rows:
            print_stability(rows)
    return 0


def register(sub) -> None:
    p = sub.add_parser("size", help="which GPU type and how many: time and dollars to train, Pareto front",
                       description="Search cluster offerings (GPU type, node shape, network, price) and GPU counts "
                                   "with the best plan for each; report the time/dollar Pareto front, the cheapest "
                                   "option meeting the deadline and the fastest within the budget.")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--tokens", type=positive_float, help="tokens to train on, e.g. 2e12 (default: the model's training_tokens)")
    p.add_argument("--gbs", type=positive_int, help="global batch in sequences (default: the model's)")
    p.add_argument("--seq-length", type=positive_int)
    p.add_argument("--deadline-days", type=positive_float)
    p.add_argument("--budget-usd", type=positive_float)
    p.add_argument("--gpu-types", help="comma-separated GPU names to consider (default: all priced)")
    p.add_argument("--max-gpus", type=positive_int, default=16384, help="largest GPU count to consider (default 16384)")
    p.add_argument("--catalog", help="cluster offerings YAML (default catalogs/clusters.yaml)")
    p.add_argument("--prices", help="YAML mapping cluster or GPU name -> usd_per_gpu_hour, overriding the catalog")
    p.add_argument("--include-spot", action="store_true",
                   help="also size spot (preemptible) offerings; preemptions are not modelled")
    p.add_argument("--fine", action="store_true", help="also try 1.5x node counts (3, 6, 12, ... nodes)")
    p.add_argument("--failures-per-1000-gpu-days", type=non_negative_float,
                   default=sizing.runtime.LLAMA3_INTERRUPTIONS_PER_GPU_HOUR * 24 * 1000,
                   help="job interruptions (default 0.53: Llama 3 405B, 466 in 54 days on 16,384 GPUs)")
    p.add_argument("--restart-minutes", type=non_negative_float, default=10.0, help="time lost per restart (default 10)")
    p.add_argument("--checkpoint-gbytes-per-s-per-node", type=positive_float, default=1.0,
                   help="checkpoint write bandwidth per node (default 1 GB/s)")
    p.add_argument("--what-if", action="append", metavar="KEY=VALUE",
                   help="size under an assumption (repeatable): network=0.5, nvlink=0.8, hbm=0.9, "
                        "matmul_efficiency=0.9, price.GPU=2.10, rdma=false")
    p.add_argument("--what-if-grid", metavar="KEY=V1,V2,...",
                   help="size again for each value and show whether the chosen options stay best")
    p.add_argument("--workers", type=positive_int, default=2, help="processes for the scan (default 2)")
    p.add_argument("--plot", help="write the Pareto front as SVG (FILE.svg) or self-contained HTML (FILE.html)")
    p.add_argument("--force", action="store_true", help="overwrite --plot FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_size)
