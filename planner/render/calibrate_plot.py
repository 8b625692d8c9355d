"""The calibration picture (`planner calibrate --plot`): how well the fitted links explain the logs.

Top: time per message size, log-log, one colour per nccl-tests log: measured rows used in the fit
(dots), measured rows under --min-size (hollow), the calibrated model (dashed line). Bottom, on the
same sizes: the residual model / measured - 1 in percent. The --min-size cut is a vertical line
on both, with the unfitted sizes shaded.
"""
from __future__ import annotations

import math
from pathlib import Path

from costmodel import comm
from planner.calibration.comm import collective_seconds, row_seconds
from planner.render import mpl
from planner.render.calibrate import format_bytes

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def log_points(pl, fast: comm.Link, slow: comm.Link, gpu=None) -> list[tuple[int, float, float]]:
    """(size in bytes, measured us, model us) per usable row of one plotted log; `gpu` as in collective_seconds."""
    n, k, coll = pl.log.num_ranks, pl.ranks_per_domain, pl.log.collective
    return [(r.size_bytes, t * 1e6, collective_seconds(coll, r.size_bytes, n, k, fast, slow, gpu) * 1e6)
            for r in pl.log.rows if (t := row_seconds(r))]


def draw_log(top, bottom, i: int, pl, pts, min_size: int) -> None:
    """One log: measured (fitted and not) and model on top, residuals below."""
    color, tag = COLORS[i % len(COLORS)], f"{i + 1}"
    for fitted, style in ((True, {"color": color}), (False, {"facecolors": "none", "edgecolors": color})):
        mine = [p for p in pts if (p[0] >= min_size) == fitted]
        if not mine:
            continue
        top.scatter([p[0] for p in mine], [p[1] for p in mine], s=22, zorder=3,
                    gid=f"series-{tag}-{'fitted' if fitted else 'unfitted'}", **style)
        bottom.scatter([p[0] for p in mine], [100 * (p[2] / p[1] - 1) for p in mine], s=18, zorder=3,
                       gid=f"residuals-{tag}-{'fitted' if fitted else 'unfitted'}", **style)
    top.plot([p[0] for p in pts], [p[2] for p in pts], ls="--", lw=1.3, color=color, gid=f"series-{tag}-model")
    bottom.plot([p[0] for p in pts], [100 * (p[2] / p[1] - 1) for p in pts], lw=0.8, color=color, alpha=0.6)


def legend_handles(logs: list, min_size: int) -> list:
    """One colour per log (its file name and ranks), then what each mark means."""
    from matplotlib.lines import Line2D

    logs_ = [Line2D([], [], color=COLORS[i % len(COLORS)], marker="o", ls="-", lw=4, alpha=0.8,
                    label=f"{Path(pl.name).name} ({pl.log.num_ranks} ranks, {pl.log.collective})")
             for i, pl in enumerate(logs)]
    return logs_ + [Line2D([], [], color="#444444", marker="o", ls="none", label="measured, fitted"),
                    Line2D([], [], color="#444444", marker="o", mfc="none", ls="none",
                           label=f"measured, under --min-size {format_bytes(min_size)} (not fitted)"),
                    Line2D([], [], color="#444444", ls="--", label="calibrated model")]


def mark_cut(ax, min_size: int, lo: float, label: bool) -> None:
    """The --min-size line, the unfitted sizes shaded, and (on one panel) its label."""
    ax.axvline(min_size, color="#555555", ls=":", lw=1.2)
    if lo < min_size:
        ax.axvspan(lo, min_size, color="#eeeeee", zorder=0)
    if label:
        ax.annotate(f"fit from {format_bytes(min_size)}", (min_size, 1), xycoords=("data", "axes fraction"),
                    xytext=(4, -4), textcoords="offset points", ha="left", va="top", fontsize=8, color="#555555")


def size_ticks(ax, lo: float, hi: float) -> None:
    """Powers of two in binary units (8M, 32M, 128M, ...), at most nine labelled."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    powers = [2.0**e for e in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1)]
    ax.xaxis.set_major_locator(FixedLocator(powers[::math.ceil(len(powers) / 9)] if powers else [lo, hi]))
    ax.xaxis.set_minor_locator(FixedLocator(powers))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_bytes(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def residual_axis(ax, residuals: list[float], fitted: list[float]) -> None:
    """Percent residuals around a zero line; symmetric-log (linear within the fitted rows' reach)
    when the unfitted rows are far off."""
    from matplotlib.ticker import FuncFormatter

    ax.axhline(0, color="#333333", lw=0.8)
    near, low, high = max([abs(r) for r in fitted] + [0.5]), min(residuals), max(residuals)
    if max(-low, high) > 20 * near:
        linthresh = 10.0 ** math.ceil(math.log10(2 * near))
        ax.set_yscale("symlog", linthresh=linthresh, linscale=1.5)
        ax.set_ylim(min(2 * low, -linthresh), max(2 * high, linthresh))
    else:
        reach = max(-low, high) * 1.25 or 1.0
        ax.set_ylim(-reach, reach)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: "0%" if abs(v) < 1e-9 else
                                               f"{v:+,.0f}%" if abs(v) >= 10 else f"{v:+.3g}%"))
    ax.set_ylabel("residual (model / measured - 1)")


def plot_svg(logs: list, fast: comm.Link, slow: comm.Link, min_size_bytes: int, gpu=None) -> str:
    """Both panels as SVG text."""
    per_log = [log_points(pl, fast, slow, gpu) for pl in logs]
    every = [p for pts in per_log for p in pts]
    with mpl.style("calibrate"):
        fig = mpl.figure(8.5, 8.5)
        top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
        for i, (pl, pts) in enumerate(zip(logs, per_log)):
            draw_log(top, bottom, i, pl, pts, min_size_bytes)
        top.set_xscale("log", base=2)
        top.set_yscale("log")
        (x0, x1), (y0, y1) = mpl.padded([p[0] for p in every]), mpl.padded([v for p in every for v in p[1:]])
        top.set_xlim(x0, x1)
        top.set_ylim(y0, y1)
        mpl.set_log_ticks(top.yaxis, y0, y1, mpl.number)
        size_ticks(bottom, x0, x1)
        for ax, label in ((top, True), (bottom, False)):
            mark_cut(ax, min_size_bytes, x0, label)
        residual_axis(bottom, [100 * (p[2] / p[1] - 1) for p in every],
                      [100 * (p[2] / p[1] - 1) for p in every if p[0] >= min_size_bytes])
        top.set_ylabel("time (us)")
        bottom.set_xlabel("message size (bytes, binary units as nccl-tests -b/-e)")
        top.set_title("nccl-tests: measured vs calibrated model")
        fig.legend(handles=legend_handles(logs, min_size_bytes), loc="outside lower center", ncols=2, frameon=False)
        return mpl.svg_text(fig)
