"""Human-readable `planner suggest` output: the ranked plans, why the best wins, its breakdowns."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from planner.analysis import coverage
from planner.analysis.bymodel import validation_lines
from planner.inputs.plans import recompute_label
from planner.render import estimate as render

GIB = 2**30


def plans_table(plans: list[dict]) -> Table:
    training = any(d.get("training") for d in plans)
    priced = any(d["usd_per_gpu_hour"] for d in plans)
    cp = any(d["plan"].get("cp", 1) > 1 for d in plans)
    ep = any(d["plan"].get("ep", 1) > 1 or d["plan"].get("etp", 1) > 1 for d in plans)
    causal = any(render.causal_apart(d["mfu"], d["mfu_causal"]) for d in plans)
    title = "Best plans (distinct layouts; MFU counts attention as the full s x s square" + (
        ", causal MFU its causal half, as newer tables do)" if causal else ")")
    table = Table(title=title, title_justify="left")
    heads = ["#", "tp"] + (["cp"] if cp else []) + ["pp", "dp"] + (["ep"] if ep else []) + [
        "vpp", "ZeRO", "mbs x gas", "recompute", "SP", "precision", "step", "MFU"] + (
        ["causal MFU"] if causal else []) + ["mem/GPU"]
    heads += ["$/step"] if priced else []
    heads += ["time to train"] + (["$ to train"] if priced else []) if training else []
    for h in heads:
        table.add_column(h, justify="left" if h in ("recompute", "precision") else "right")
    for i, d in enumerate(plans, 1):
        p = d["plan"]
        row = [str(i), str(p["tp"])] + ([f"{p['cp']} {p['cp_comm']}" if p["cp"] > 1 else "1"] if cp else []) + [
            str(p["pp"]), str(p["dp"])] + ([str(p["ep"]) + (f" x etp {p['etp']}" if p["etp"] > 1 else "")] if ep else []) + [
            str(p["vpp"]), str(p["zero_stage"]),
               f"{p['micro_batch_size']} x {p['grad_accum_steps']}", recompute_label(p),
               "yes" if p["sequence_parallel"] else "-", p["precision"], render.human_seconds(d["step_time_s"]),
               f"{100 * d['mfu']:.1f}%"] + ([f"{100 * d['mfu_causal']:.1f}%"] if causal else []) + [
               f"{d['memory_per_gpu_bytes'] / GIB:.1f} GiB"]
        row += [render.step_usd(d["usd_per_step"])] if priced else []
        t = d.get("training")
        if training:
            row += [render.human_seconds(t["time_to_train_s"]) if t else "-"]
            row += [f"${t['usd_to_train']:,.0f}" if t else "-"] if priced else []
        table.add_row(*row)
    return table


def header(plans: list[dict], search: dict) -> str:
    d = plans[0]
    solver = search["solver"]
    how = (f"CP-SAT {search['status'].lower()} over the {search['literals']:,} of {search['candidates']:,} candidates "
           "that no other beats in both time and memory" if solver == "cpsat"
           else f"enumerated {search['candidates']:,} plans")
    return (f"[bold]{d['model']}[/bold] ({render.parameters_line(d)}) on {d['num_gpus']} x {d['gpu']} "
            f"({d['cluster']}), sequences of {d['seq_length']:,} tokens: "
            f"{search['space_size']:,} plans in {search['layouts']:,} layouts; {how}, "
            f"{1e3 * sum(search['seconds'].values()):.0f} ms")


def published_fixes(unvalidated: list[dict]) -> list[str]:
    """`--fix` options that pin each unvalidated setting the search chooses (a knob's plan field,
    planner/search/space.py PLAN_FIELDS) to the one value published runs used, where there is one."""
    from planner.search.space import PLAN_FIELDS

    return [f"--fix {u['setting']}={u['published_values'][0]}" for u in unvalidated
            if u["setting"] in PLAN_FIELDS.values() and len(u["published_values"]) == 1]


def print_suggestions(plans: list[dict], why: str | None, search: dict, console: Console | None = None,
                      envelope: dict | None = None, unvalidated: list[dict] | None = None,
                      host_wait: dict | None = None, long_context: dict | None = None,
                      accuracy: dict | None = None, model_accuracy: dict | None = None) -> None:
    console = console or render.make_console()
    console.print(header(plans, search))
    if search.get("context_parallel"):
        console.print(f"[bold]context parallelism:[/bold] {search['context_parallel']}")
    console.print(plans_table(plans))
    if why:
        console.print(f"[bold]#1 vs #2:[/bold] {why}")
    console.print(f"[bold]#1:[/bold] {render.plan_label(plans[0]['plan'])}")
    if "frameworks" in plans[0]:
        launchers = plans[0]["frameworks"]
        console.print("  runs on: " + (", ".join(launchers) + " (--emit NAME writes its launch files)" if launchers
                                       else "none of the frameworks searched (see the warnings)"))
    for w in plans[0]["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    for line in coverage.cautions(envelope, unvalidated or [], "#1", host_wait=host_wait, long_context=long_context):
        console.print(f"[yellow]caution:[/yellow] {line}")
    if fixes := published_fixes(unvalidated or []):
        console.print(f"  to search only what published runs used there: {' '.join(fixes)}")
    for judged in validation_lines(accuracy, model_accuracy):
        console.print(f"[bold]validation:[/bold] {judged}")
    console.print(render.time_table(plans[0]))
    console.print(render.memory_table(plans[0]))


def layout_words(p: dict) -> str:
    """'tp 2, pp 1, dp 8, ep 8': the degrees that make a distinct layout (cp, ep, etp where not 1)."""
    words = [f"tp {p['tp']}"] + ([f"cp {p['cp']}"] if p.get("cp", 1) > 1 else []) + [f"pp {p['pp']}", f"dp {p['dp']}"]
    return ", ".join(words + [f"{k} {p[k]}" for k in ("ep", "etp") if p.get(k, 1) > 1])


def print_stability(rows: list[dict], baseline: dict, console: Console | None = None) -> None:
    """One row per assumption (search.stability.grid_dicts): the winning layout there, and how the
    baseline winner fares."""
    console = console or render.make_console()
    table = Table(title=f"Rank stability of the best plan ({layout_words(baseline['plan'])})", title_justify="left")
    for col in ("assumption", "best there", "its step s", "baseline plan step s", "baseline rank", "stays best"):
        table.add_column(col, justify="left" if col in ("assumption", "best there") else "right")
    for r in rows:
        p = r["best_plan"]
        stays = r["baseline_rank"] == 1
        baseline_s = f"{r['baseline_plan_step_time_s']:.2f}" + ("" if r["baseline_plan_fits"] else " (does not fit)")
        table.add_row(r["assumption"], f"{layout_words(p)}, ZeRO {p['zero_stage']}",
                      f"{r['best_step_time_s']:.2f}", baseline_s,
                      "-" if r["baseline_rank"] is None else f"#{r['baseline_rank']}",
                      "[green]yes[/green]" if stays else "[red]no[/red]")
    console.print(table)
