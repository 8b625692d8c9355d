"""Human-readable `planner validate` output: predicted vs published per row, the summary (per source,
GPU generation and precision), and the out-of-sample checks (--fit-on, --leave-one-source-out)."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from planner.validation import runs as validation


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def apct(x) -> str:
    """An unsigned percentage (MAPE, max)."""
    return pct(x).lstrip("+")


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


def _stats_cells(s: dict) -> list[str]:
    st, mem = s["step_time"], s["memory"]
    return [str(st["n"]), apct(st["mape"]), apct(st["max_abs"]), pct(st["mean_signed"]), str(mem["n"]),
            apct(mem["mape"]), apct(mem["max_abs"])]


def summary_table(summary: dict, by_generation: dict | None = None, by_precision: dict | None = None,
                  title: str = "Summary") -> Table:
    """Per source group and overall; then per GPU generation and per plan precision when given."""
    table = Table(title=title, title_justify="left")
    for col in ("group", "rows", "step MAPE", "step max", "step mean signed", "mem rows", "mem MAPE", "mem max"):
        table.add_column(col, justify="left" if col == "group" else "right")
    for group, s in summary.items():
        table.add_row(group, *_stats_cells(s))
    for label, part in (("generation", by_generation), ("precision", by_precision)):
        if part:
            if table.row_count:
                table.add_section()
            for key, s in part.items():
                table.add_row(f"{label} {key}", *_stats_cells(s))
    return table


def print_floor(floor: dict, console: Console) -> None:
    """The error that equal-input rows force on any model, and the group that sets the largest one."""
    if not floor["groups"]:
        console.print("No two scored rows have equal inputs: the data set has no floor on the error.")
        return
    worst = floor["groups"][0]
    times = ", ".join(f"{t:g}" for t in worst["measured_step_time_s"])
    console.print(f"Floor: {floor['grouped_rows']} of {floor['rows']} rows share their inputs with another row "
                  f"({len(floor['groups'])} groups) whose measurements differ: no model can score below step MAPE "
                  f"{apct(floor['mape'])} over all rows, or max {apct(floor['max_abs'])} (widest: {worst['ids'][0]} and "
                  f"{len(worst['ids']) - 1} more measured {times} s).")


def print_generalisation(out: dict, console: Console | None = None) -> None:
    """`validate --fit-on`: the fit's error on its own rows and on the held-out rows."""
    console = console or Console()
    held = "-" if out["heldout_mape"] is None else f"{100 * out['heldout_mape']:.1f}%"
    console.print(f"fitted on {out['fit_on']} ({out['train_rows']} rows): step MAPE {100 * out['train_mape']:.1f}% "
                  f"(the fit's objective, the mean of each source's MAPE: {100 * out['train_objective']:.1f}%); "
                  f"held-out rows ({out['heldout_rows']}): step MAPE {held}")
    if out["train_memory_mape"] is not None:
        console.print(f"memory MAPE on the fitted rows with a published peak: {100 * out['train_memory_mape']:.1f}%")
    if out["heldout_memory_mape"] is not None:
        console.print(f"memory MAPE on the held-out rows with a published peak: {100 * out['heldout_memory_mape']:.1f}%")
    console.print("fitted constants: " + ", ".join(f"{k}={v:.4g}" for k, v in out["fitted"].items()))
    if out["heldout_rows"]:
        h = out["held_out"]
        console.print(summary_table({"held-out rows": h["overall"], **h["by_group"]}, h["by_generation"],
                                    h["by_precision"], title=f"Held-out rows, predicted by the fit on {out['fit_on']}"))


def _split_table(title: str, label: str, part: dict) -> Table:
    table = Table(title=title, title_justify="left")
    for col in (label, "rows", "fitted on", "step MAPE", "step max", "mean signed", "in-sample MAPE", "mem rows",
                "mem MAPE", "in-sample mem MAPE"):
        table.add_column(col, justify="left" if col == label else "right")
    for key, s in part["held_out"].items():
        st, mem = s["step_time"], s["memory"]
        table.add_row(key, str(st["n"]), str(s["train_rows"]), apct(st["mape"]), apct(st["max_abs"]),
                      pct(st["mean_signed"]), apct(s["in_sample"]["step_time"]["mape"]), str(mem["n"]),
                      apct(mem["mape"]), apct(s["in_sample"]["memory"]["mape"]))
    table.add_section()
    st, mem = part["overall"]["step_time"], part["overall"]["memory"]
    table.add_row("overall", str(st["n"]), "", apct(st["mape"]), apct(st["max_abs"]), pct(st["mean_signed"]), "",
                  str(mem["n"]), apct(mem["mape"]), "")
    return table


def worst_rows_table(part: dict, k: int = 8) -> Table:
    table = Table(title=f"Largest out-of-sample errors ({k})", title_justify="left")
    for col in ("row", "held out", "pred s", "meas s", "out-of-sample", "in-sample"):
        table.add_column(col, justify="left" if col in ("row", "held out") else "right")
    for r in sorted(part["rows"], key=lambda r: -abs(r["step_time_error"]))[:k]:
        table.add_row(r["id"], r["held_out"], f"{r['predicted_step_time_s']:.3f}", f"{r['measured_step_time_s']:.3f}",
                      pct(r["step_time_error"]), pct(r["in_sample_step_time_error"]))
    return table


def print_leave_one_out(out: dict, console: Console | None = None) -> None:
    """`validate --leave-one-source-out`: each source predicted by constants fitted on the others."""
    console = console or Console()
    src = out["leave_one_source_out"]
    st = src["overall"]["step_time"]
    ins = out["in_sample"]["overall"]["step_time"]
    console.print(f"Out of sample (each source predicted by constants fitted on the other sources): step MAPE "
                  f"{apct(st['mape'])}, max {apct(st['max_abs'])}, mean signed {pct(st['mean_signed'])} over "
                  f"{st['n']} rows; in sample (fitted on all rows): {apct(ins['mape'])}, max {apct(ins['max_abs'])}.")
    console.print(_split_table("Leave one source out (fit on the other sources, predict this one)", "held-out source",
                               src))
    console.print(summary_table({}, src["by_generation"], src["by_precision"],
                                title="Leave one source out, the same predictions per GPU generation and precision"))
    console.print(worst_rows_table(src))
    if "leave_one_generation_out" in out:
        console.print(_split_table("Leave one GPU generation out (fit on the other generations, predict this one)",
                                   "held-out generation", out["leave_one_generation_out"]))
    if "leave_one_moe_model_out" in out:
        console.print(_split_table("Leave one mixture-of-experts model out (fit on every other row, predict its rows: "
                                   "the MoE rows are one source, so leaving that source out fits no MoE row)",
                                   "held-out MoE model", out["leave_one_moe_model_out"]))
    i = out["in_sample"]
    console.print(summary_table({"overall": i["overall"], **i["by_group"]}, i["by_generation"], i["by_precision"],
                                title="In sample, for contrast: constants fitted on all rows, scored on the same rows"))
    console.print("fitted on all rows: " + ", ".join(f"{k}={v:.4g}" for k, v in i["fitted"].items()))
    console.print(f"{out['fits']} fits in {out['fit_seconds']:.1f} s")
