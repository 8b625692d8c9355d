"""Human-readable `planner validate` output: predicted vs published per row, and the summary."""
from __future__ import annotations

from rich.table import Table

from planner.validation import runs as validation


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


def print_generalisation(out: dict) -> None:
    """`validate --fit-on`: the fit's error on its own rows and on the held-out rows."""
    held = "-" if out["heldout_mape"] is None else f"{100 * out['heldout_mape']:.1f}%"
    print(f"fitted on {out['fit_on']} ({out['train_rows']} rows): step MAPE {100 * out['train_mape']:.1f}%; "
          f"held-out rows ({out['heldout_rows']}): step MAPE {held}")
    if out["train_memory_mape"] is not None:
        print(f"memory MAPE on the fitted rows with a published peak: {100 * out['train_memory_mape']:.1f}%")
    if out["heldout_memory_mape"] is not None:
        print(f"memory MAPE on the held-out rows with a published peak: {100 * out['heldout_memory_mape']:.1f}%")
    print("fitted constants: " + ", ".join(f"{k}={v:.4g}" for k, v in out["fitted"].items()))
