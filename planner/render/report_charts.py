"""The charts of the `planner suggest --report` page, one bar per ranked plan (#1 on top):
where the step goes (stacked seconds) and the memory of the fullest GPU (stacked GiB) against the
GPU's capacity. Each returns SVG text."""
from __future__ import annotations

from planner.render import mpl
from planner.render.estimate import GIB, TIME_LABELS, human_seconds
from planner.render.suggest import layout_words

TIME_COLORS = {"compute": "#4c78a8", "recompute": "#9ecae9", "tp_comm": "#f58518", "pp_comm": "#ffbf79",
               "offload": "#d6a5c9", "cp_comm": "#72b7b2", "ep_comm": "#b279a2",
               "moe_sync": "#ff9da6",
               "pp_bubble": "#bab0ac", "dp_comm_exposed": "#e45756", "optimizer": "#54a24b", "overhead": "#79706e"}
MEMORY_COLORS = ("#4c78a8", "#72b7b2", "#54a24b", "#f58518", "#b279a2", "#9d755d", "#bab0ac", "#eeca3b")


def short_label(i: int, d: dict) -> str:
    """'#1 tp 4, pp 1, dp 16, ep 8, vpp 2, ZeRO 3': the degrees that make the layout distinct (cp, ep, etp
    where not 1), so two bars are never labelled alike."""
    p = d["plan"]
    vpp = f", vpp {p['vpp']}" if p["vpp"] > 1 else ""
    return f"#{i} {layout_words(p)}{vpp}, ZeRO {p['zero_stage']}"


def stacked(ax, plans: list[dict], parts: list[tuple[str, str, str]], values) -> None:
    """Horizontal stacked bars: `parts` (key, label, colour), values(plan, key) the segment length."""
    rows = range(len(plans))
    left = [0.0] * len(plans)
    for key, label, color in parts:
        widths = [values(d, key) for d in plans]
        ax.barh(rows, widths, left=left, height=0.62, color=color, label=label, edgecolor="white", linewidth=0.5,
                gid=f"part-{key}")
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(list(rows), [short_label(i, d) for i, d in enumerate(plans, 1)])
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    ax.set_axisbelow(True)


def bar_notes(ax, ends: list[float], notes: list[str]) -> None:
    for row, (end, note) in enumerate(zip(ends, notes)):
        ax.annotate(note, (end, row), xytext=(5, 0), textcoords="offset points", va="center", fontsize=8.5)


def time_chart(plans: list[dict]) -> str:
    """Seconds per step by part, with the step time and MFU at the end of each bar."""
    keys = [k for k in TIME_LABELS if any(d["time_breakdown_s"].get(k, 0) > 0 for d in plans)]
    with mpl.style("report-time"):
        fig = mpl.figure(10, 1.6 + 0.5 * len(plans))
        ax = fig.add_subplot()
        stacked(ax, plans, [(k, TIME_LABELS[k], TIME_COLORS[k]) for k in keys],
                lambda d, k: d["time_breakdown_s"].get(k, 0.0))
        bar_notes(ax, [d["step_time_s"] for d in plans],
                  [f"{human_seconds(d['step_time_s'])}, MFU {100 * d['mfu']:.1f}%" for d in plans])
        ax.set_xlim(0, 1.22 * max(d["step_time_s"] for d in plans))
        ax.set_xlabel("seconds per step")
        ax.set_title("Where the step goes", loc="left")
        fig.legend(loc="outside lower center", ncols=min(4, len(keys)), frameon=False)
        return mpl.svg_text(fig)


def memory_chart(plans: list[dict]) -> str:
    """GiB per part on the fullest GPU, each bar's capacity marked, used/capacity at the end."""
    keys = list(dict.fromkeys(k for d in plans for k, v in d["memory_breakdown_bytes"].items() if v > 0))
    with mpl.style("report-memory"):
        fig = mpl.figure(10, 1.6 + 0.5 * len(plans))
        ax = fig.add_subplot()
        parts = [(k, k.replace("_", " "), MEMORY_COLORS[i % len(MEMORY_COLORS)]) for i, k in enumerate(keys)]
        stacked(ax, plans, parts, lambda d, k: d["memory_breakdown_bytes"].get(k, 0.0) / GIB)
        caps = [d["memory_capacity_bytes"] / GIB for d in plans]
        ax.vlines(caps, [r - 0.42 for r in range(len(plans))], [r + 0.42 for r in range(len(plans))],
                  colors="#222222", linewidths=2, label="GPU memory", gid="capacity")
        ends = [max(d["memory_per_gpu_bytes"] / GIB, c) for d, c in zip(plans, caps)]
        bar_notes(ax, ends, [f"{d['memory_per_gpu_bytes'] / GIB:.1f} of {c:.0f} GiB"
                             + ("" if d["fits"] else ", does NOT fit") for d, c in zip(plans, caps)])
        ax.set_xlim(0, 1.25 * max(ends))
        ax.set_xlabel("GiB on the fullest GPU")
        ax.set_title("Memory per GPU against its capacity", loc="left")
        fig.legend(loc="outside lower center", ncols=min(4, len(keys) + 1), frameon=False)
        return mpl.svg_text(fig)
