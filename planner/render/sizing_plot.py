"""The sizing picture (`planner size --plot`): days to train against total dollars, log-log.

One marker and colour per GPU type; each point labelled with its GPU count where there is room
(the Pareto front and the two chosen options always); the Pareto front as a line; the deadline and
budget as reference lines; the cheapest option meeting the limits and the fastest within them
ringed, each with a legend entry that names it. SVG, or that SVG inline in a self-contained page.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from planner.files import write_files
from planner.render import labels, mpl
from planner.sizing.scan import duration_text

GPU_COLORS = ("#1f77b4", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728")
GPU_MARKERS = "osD^vp<>"
CHOICE_STYLE = {"cheapest": {"marker": "o", "s": 330, "color": "#2ca02c"},
                "fastest": {"marker": "s", "s": 300, "color": "#9467bd"}}
REF_COLOR = "#555555"


def limits_phrase(r: dict) -> str:
    """'meeting the 30-day deadline and within the $1M budget', or '' without limits."""
    parts = [f"meeting the {r['deadline_days']:g}-day deadline"] if r["deadline_days"] else []
    parts += [f"within the {mpl.money(r['budget_usd'])} budget"] if r["budget_usd"] else []
    return " and ".join(parts)


def choice_label(kind: str, o, r: dict) -> str:
    """Two lines: 'cheapest meeting the 30-day deadline:' and
    '1,024 × h100-sxm-80gb (dgx-h100-reserved), 20.3 days, $897k'."""
    where = f"{o.num_gpus:,} × {o.offering.gpu.name} ({o.offering.name})"
    return f"{kind} {limits_phrase(r)}".strip() + f":\n{where}, {duration_text(o.days)}, {mpl.money(o.usd)}"


def draw_points(ax, feasible: list) -> None:
    for i, gpu in enumerate(sorted({o.offering.gpu.name for o in feasible})):
        mine = [o for o in feasible if o.offering.gpu.name == gpu]
        ax.scatter([o.days for o in mine], [o.usd for o in mine], s=34, zorder=3, label=gpu,
                   marker=GPU_MARKERS[i % len(GPU_MARKERS)], color=GPU_COLORS[i % len(GPU_COLORS)],
                   edgecolors="white", linewidths=0.6, gid=f"series-{gpu}")


def draw_front(ax, front: list) -> None:
    pts = sorted((o.days, o.usd) for o in front)
    ax.plot([p[0] for p in pts], [p[1] for p in pts], color="#222222", lw=1.1, alpha=0.75, zorder=2,
            label="Pareto front (nothing else is both faster and cheaper)", gid="series-pareto")


def draw_choices(ax, r: dict) -> list[str]:
    """Ring the chosen options; return a note for each choice that nothing satisfies."""
    missing = []
    for kind, style in CHOICE_STYLE.items():
        o = r[kind]
        if o is None:
            missing.append(f"no option is {kind.replace('est', 'er')} {limits_phrase(r)}".strip())
            continue
        ax.scatter([o.days], [o.usd], facecolors="none", edgecolors=style["color"], linewidths=2.2, s=style["s"],
                   marker=style["marker"], zorder=4, label=choice_label(kind, o, r), gid=f"choice-{kind}")
    return missing


def axis_limits(values: list[float], ref: float | None) -> tuple[tuple[float, float], str]:
    """Log limits around the data, widened to show `ref` when it is within 1.5x of the data (further
    out it would squeeze the points together); and '' when it shows, else 'above' or 'below'."""
    lo, hi = min(values), max(values)
    where = "" if not ref or lo / 1.5 <= ref <= hi * 1.5 else "above" if ref > hi else "below"
    return mpl.padded(values + ([ref] if ref and not where else [])), where


def draw_limits(ax, r: dict, feasible: list) -> list[str]:
    """Axis limits and ticks, the deadline and budget lines; notes for limits off the chart."""
    (x0, x1), off_x = axis_limits([o.days for o in feasible], r["deadline_days"])
    (y0, y1), off_y = axis_limits([o.usd for o in feasible], r["budget_usd"])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    mpl.set_log_ticks(ax.xaxis, x0, x1, mpl.number)
    mpl.set_log_ticks(ax.yaxis, y0, y1, mpl.money)
    notes = []
    if r["deadline_days"]:
        text = f"deadline {r['deadline_days']:g} days"
        if off_x:
            notes.append(f"{text} ({'right of' if off_x == 'above' else 'left of'} the chart)")
        else:
            ax.axvline(r["deadline_days"], color=REF_COLOR, ls="--", lw=1.1, zorder=1, label=text)
            ax.annotate(text, (r["deadline_days"], 1), xycoords=("data", "axes fraction"), xytext=(-3, -4),
                        textcoords="offset points", rotation=90, ha="right", va="top", fontsize=8, color=REF_COLOR)
    if r["budget_usd"]:
        text = f"budget {mpl.money(r['budget_usd'])}"
        if off_y:
            notes.append(f"{text} ({off_y} the chart)")
        else:
            ax.axhline(r["budget_usd"], color=REF_COLOR, ls="-.", lw=1.1, zorder=1, label=text)
            ax.annotate(text, (1, r["budget_usd"]), xycoords=("axes fraction", "data"), xytext=(-4, 3),
                        textcoords="offset points", ha="right", va="bottom", fontsize=8, color=REF_COLOR)
    return notes


def point_labels(feasible: list, r: dict) -> list[tuple[float, float, str, bool]]:
    """(days, usd, GPU count, must): the Pareto front and the chosen options must be labelled."""
    keep = {id(o) for o in r["pareto"]} | {id(r[k]) for k in CHOICE_STYLE if r[k] is not None}
    return [(o.days, o.usd, f"{o.num_gpus:,}", id(o) in keep) for o in feasible]


def marker_boxes(feasible: list, r: dict) -> list[tuple]:
    """Where labels must not go: every point, and the rings around the chosen ones (half side in pixels)."""
    rings = [(o.days, o.usd, CHOICE_STYLE[k]["s"] ** 0.5 * 0.75) for k in CHOICE_STYLE if (o := r[k]) is not None]
    return [(o.days, o.usd) for o in feasible] + rings


def shrink_legend_markers(legend, size: float = 70) -> None:
    """Legend swatches at a readable size, however large the rings they stand for."""
    for handle in legend.legend_handles:
        if hasattr(handle, "set_sizes"):
            handle.set_sizes([min(size, handle.get_sizes()[0])])


def tokens_text(tokens: float) -> str:
    """2e12 -> '2T', 1.5e11 -> '150B'."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if tokens >= scale:
            return f"{tokens / scale:.3g}{unit}"
    return f"{tokens:,.0f}"


def plot_svg(r: dict) -> str:
    feasible = [o for o in r["options"] if o.feasible]
    with mpl.style("sizing"):
        fig = mpl.figure(9.0, 7.0)
        ax = fig.add_subplot()
        draw_points(ax, feasible)
        draw_front(ax, r["pareto"])
        notes = draw_choices(ax, r) + draw_limits(ax, r, feasible)
        fig.suptitle(f"{r['model']}, {tokens_text(r['tokens'])} tokens: time to train vs total cost", fontweight="bold")
        ax.set_title("; ".join(["point labels: GPU count", *notes]), fontsize=9, fontweight="normal", color="#444444")
        ax.set_xlabel("days to train (with checkpoints and restarts)")
        ax.set_ylabel("total cost (USD)")
        ax.grid(True, which="minor", color="#f2f2f2", lw=0.5)
        shrink_legend_markers(fig.legend(loc="outside lower center", ncols=2, frameon=False))
        labels.freeze_layout(fig)
        labels.place(ax, point_labels(feasible, r), marker_boxes(feasible, r), fontsize=7.5, color="#333333",
                     gid="gpu-count")
        return mpl.svg_text(fig)


def write_plot(path: Path, r: dict, force: bool) -> None:
    mpl.require("--plot")
    svg = plot_svg(r)
    if path.suffix.lower() in (".html", ".htm"):
        text = mpl.html_page(f"{r['model']} sizing", f"<h1>{escape(r['model'])}: which GPUs and how many</h1>\n"
                             + mpl.inline(svg))
    else:
        text = svg
    write_files(path.parent, {path.name: (text, False)}, force)
