"""What `planner calibrate` shows: the fit tables and lines (the plot: planner/render/calibrate_plot.py).

Sizes print in binary units as nccl-tests takes them (-b 128M = 128 MiB); GB/s = 1e9 B/s.
"""
from __future__ import annotations

from rich.table import Table

from costmodel import comm
from planner.calibration.comm import FitRow, TierFit, max_abs_error
from planner.calibration.steps import ScaleFit, mape
from planner.inputs.step_times import TimedStep

TIER_NAMES = {"nvlink": "NVLink", "network": "network"}


def format_bytes(n: float) -> str:
    """1073741824 -> '1G', 67108864 -> '64M' (binary units, as nccl-tests -b/-e take them)."""
    for unit, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"


def pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def log_index(rows: tuple[FitRow, ...]) -> dict[str, int]:
    """1-based number of each log, in order of first appearance."""
    index: dict[str, int] = {}
    for r in rows:
        index.setdefault(r.sample.log, len(index) + 1)
    return index


def logs_legend(rows: tuple[FitRow, ...]) -> list[str]:
    """'log 1: PATH (all_reduce, 8 ranks, 8 per NVLink domain)' per log."""
    first = {r.sample.log: r.sample for r in reversed(rows)}
    return [f"log {i}: {log} ({first[log].collective}, {first[log].ranks} ranks, "
            f"{first[log].ranks_per_domain} per NVLink domain)" for log, i in log_index(rows).items()]


def fit_table(rows: tuple[FitRow, ...]) -> Table:
    table = Table(title="nccl-tests: measured vs model (+ = model slower)", title_justify="left")
    for col in ("log", "tier", "size", "measured us", "model us", "error"):
        table.add_column(col, justify="left" if col == "tier" else "right")
    index = log_index(rows)
    for r in rows:
        s = r.sample
        table.add_row(str(index[s.log]), s.tier, format_bytes(s.size_bytes), f"{s.measured_seconds * 1e6:.1f}",
                      f"{r.model_seconds * 1e6:.1f}", pct(r.error))
    return table


def tier_line(fit: TierFit, nominal: comm.Link, rows: tuple[FitRow, ...]) -> str:
    """'NVLink tier: busbw 340.1 +- 0.2 GB/s, latency 9.00 +- 0.05 us per ring step ...'."""
    bw, lat = fit.link.bandwidth_bytes_per_second / 1e9, fit.link.latency_seconds * 1e6
    bw_se = f" +- {fit.bandwidth_stderr / 1e9:.2g}" if fit.bandwidth_stderr is not None else ""
    lat_se = f" +- {fit.latency_stderr * 1e6:.2g}" if fit.latency_stderr is not None else ""
    lat_txt = f"latency {lat:.2f}{lat_se} us per ring step" if fit.latency_fitted else \
        f"latency not determined (fit < 0), kept {lat:.2f} us"
    mine = [r for r in rows if r.sample.tier == fit.tier]
    return (f"{TIER_NAMES[fit.tier]} tier: busbw {bw:.1f}{bw_se} GB/s, {lat_txt} "
            f"(before: {nominal.bandwidth_bytes_per_second / 1e9:.1f} GB/s, {nominal.latency_seconds * 1e6:.2f} us); "
            f"{len(mine)} rows, max |error| {100 * max_abs_error(mine):.1f}%")


def steps_table(steps: list[TimedStep], fit: ScaleFit) -> Table:
    table = Table(title="Timed steps: measured vs model before and after calibration", title_justify="left")
    for col in ("step", "measured s", "before s", "error", "after s", "error", "implied scale"):
        table.add_column(col, justify="left" if col == "step" else "right")
    for s, b, a, k, u in zip(steps, fit.before_seconds, fit.after_seconds, fit.implied, fit.used):
        m = s.measured_seconds
        implied = f"{k:.3f}" if u else f">= {k:.3f} (not used)"
        table.add_row(s.label, f"{m:.3f}", f"{b:.3f}", pct(b / m - 1), f"{a:.3f}", pct(a / m - 1), implied)
    return table


def scale_line(steps: list[TimedStep], fit: ScaleFit, peak_fraction: float) -> str:
    """The fitted scale, its error, the MAPE before/after; a warning when it implies matmul above peak
    (`peak_fraction`: the published large-GEMM fraction of peak of the cluster's GPU)."""
    se = f" +- {fit.stderr:.3f}" if fit.stderr is not None else " (one step: no uncertainty)"
    unused = len(steps) - sum(fit.used)
    skipped = f" ({unused} communication-bound step(s) left out)" if unused else ""
    above = (f"; warning: {fit.scale:.3f} x {peak_fraction:.2f} puts large GEMMs above the GPU's peak, so the steps "
             "likely gain from something the model does not see") if fit.scale * peak_fraction > 1 else ""
    return (f"compute efficiency scale {fit.scale:.3f}{se} from {sum(fit.used)} step(s){skipped}; step-time MAPE "
            f"{100 * mape(fit.before_seconds, steps):.1f}% before, {100 * mape(fit.after_seconds, steps):.1f}% after"
            + above)


def print_report(cluster, comm_fit, steps, scale_fit) -> None:
    """The fit tables and one line per fitted tier and for the compute scale."""
    from costmodel import topology
    from costmodel.compute import large_gemm_fraction
    from costmodel.types import Efficiency
    from planner.render.estimate import make_console

    console = make_console()
    if comm_fit:
        for line in logs_legend(comm_fit.rows):
            print(line)
        console.print(fit_table(comm_fit.rows))
        eff = Efficiency()
        before = {"nvlink": topology.nvlink_link(cluster, eff), "network": topology.network_link(cluster, eff)}
        for tier in (comm_fit.nvlink, comm_fit.network):
            if tier:
                print(tier_line(tier, before[tier.tier], comm_fit.rows))
    if scale_fit:
        console.print(steps_table(steps, scale_fit))
        peak = large_gemm_fraction(cluster.gpu, "bf16", Efficiency())
        print(scale_line(steps, scale_fit, peak))
