"""Human-readable `planner size` output: the Pareto front, the two choices, why other GPUs lose."""
from __future__ import annotations

from rich.table import Table

from planner.render.estimate import causal_apart, make_console
from planner.sizing import scan as sizing


def option_row(o: sizing.Option) -> list[str]:
    return [o.offering.name, o.offering.gpu.name, str(o.num_gpus), plan_text(o.best.plan),
            f"{o.best.est.step_time_seconds:.2f}", mfu_text(o), sizing.duration_text(o.days),
            f"${o.usd:,.0f}", price_label(o)]


def plan_text(p) -> str:
    """The layout, with what else moves its time most where it is on: the virtual pipeline, recompute, layers
    offloaded (the whole plan is the JSON's)."""
    words = [f"tp{p.tp}", *([f"cp{p.cp}"] if p.cp > 1 else []), f"pp{p.pp}",
             *([f"vpp{p.vpp}"] if p.vpp > 1 else []), f"dp{p.dp}", *([f"ep{p.ep}"] if p.ep > 1 else []),
             f"z{p.zero_stage}", *([f"rc:{p.recompute}"] if p.recompute != "none" else []),
             *([f"offl{p.offload_layers}"] if p.offload_layers else [])]
    return " ".join(words)


def mfu_text(o: sizing.Option) -> str:
    """MFU with attention as the full s x s square, and its causal half beside it where the two part (long
    sequences: render.estimate.causal_apart)."""
    full, causal = o.best.est.mfu, o.best.est.mfu_causal
    return f"{100 * full:.0f}% ({100 * causal:.0f}% causal)" if causal_apart(full, causal) else f"{100 * full:.0f}%"


def options_table(title: str, options: list[sizing.Option]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("offering", "GPU", "GPUs", "best plan", "step s", "MFU (s x s)", "time", "total $", "price"):
        table.add_column(col, justify="left" if col in ("offering", "GPU", "best plan", "price") else "right")
    for o in options:
        table.add_row(*option_row(o))
    return table


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 option', '3 options' (`many` where adding an s is not the plural)."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def print_size(r: dict, deadline_days: float | None) -> None:
    console = make_console()
    a = r["assumptions"]
    console.print(f"[bold]{r['model']}[/bold], {r['tokens']:.3g} tokens, global batch {r['global_batch_size']} "
                  f"sequences of {r['seq_length']:,} tokens: "
                  f"{plural(len(r['options']), 'option')}, {plural(r['searched'], 'plan search', 'plan searches')}, "
                  f"{r['seconds']:.1f} s")
    rate = a["failures_per_1000_gpu_days"]
    # the default, Llama 3 405B's, or the rounded 0.53 its help text shows
    llama = abs(rate / sizing.runtime.LLAMA3_INTERRUPTIONS_PER_1000_GPU_DAYS - 1) < 0.01
    console.print(f"run overheads: {rate:.3g} interruptions per 1000 GPU-days"
                  f"{' (Llama 3 405B run)' if llama else ''}, {a['restart_minutes']:g} min per restart, "
                  + (f"checkpoints at {a['checkpoint_gbytes_per_s_per_node']:g} GB/s per node every Young-optimal "
                     "interval" if rate > 0 else "no checkpoints (no interruptions to recover from)"))
    scope = ""
    if r["pareto_scope"] == "meeting_deadline":
        scope = f" (options meeting {r['deadline_days']:g} days)"
    elif r["pareto_scope"] == "sized":
        scope = " (of the counts sized: none meets the deadline, and counts that cannot were not sized)"
    console.print(options_table("Pareto front: time to train vs total dollars" + scope, r["pareto"]))
    given = (("the deadline", r["deadline_days"]), ("the budget", r["budget_usd"]))
    limits = " and ".join(name for name, value in given if value)
    for label, key in (("cheapest" + (f" meeting {limits}" if limits else ""), "cheapest"),
                       ("fastest" + (f" within {limits}" if limits else ""), "fastest")):
        o = r[key]
        if o is not None:
            console.print(f"[bold green]{label}[/bold green]: {o.offering.name}, {o.num_gpus} x {o.offering.gpu.name}, "
                          f"{sizing.duration_text(o.days)}, ${o.usd:,.0f} (plan {option_row(o)[3]}, "
                          f"{100 * o.wall.overhead_fraction(o.step_seconds_total):.1f}% checkpoint/failure overhead, "
                          f"{o.wall.expected_failures:.1f} expected interruptions)")
    if r["other_gpus"]:
        console.print("other GPU types, each at its best count sized (a count that an option found beats even at "
                      "its step floor is not sized, so a type's best may lie at a count not shown):")
    for o, why in r["other_gpus"]:
        console.print(f"  {o.offering.gpu.name} ({o.offering.name}, {o.num_gpus} GPUs, {sizing.duration_text(o.days)}, "
                      f"${o.usd:,.0f}): {why}")
    for note in r["notes"]:
        console.print(f"[yellow]note:[/yellow] {note}")
    if r["skipped_unpriced"]:
        console.print(f"[dim]not sized: {', '.join(r['skipped_unpriced'])}[/dim]")


def print_stability(rows: list[dict]) -> None:
    table = Table(title="Do the choices stay best?", title_justify="left")
    for col in ("assumption", "cheapest meeting the deadline", "same", "fastest within budget", "same"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["assumption"], r["cheapest"], "yes" if r["cheapest_stays"] else "[red]no[/red]",
                      r["fastest"], "yes" if r["fastest_stays"] else "[red]no[/red]")
    make_console().print(table)


def price_label(o) -> str:
    """The price with its catalog kind and date, or 'given' for one from --prices or --what-if."""
    s = o.offering.spec
    if s.price_source == sizing.GIVEN_PRICE:
        return f"${o.offering.usd_per_gpu_hour:.2f} given"
    return f"${o.offering.usd_per_gpu_hour:.2f} {s.price_kind or ''} {s.price_date or ''}"

