"""The sizing picture: time to train against total dollars, one marker per GPU type, the Pareto
front as a line, the deadline and budget as reference lines (SVG, or SVG inside a small HTML page)."""
from __future__ import annotations

from html import escape
from pathlib import Path

from planner.files import write_files
from planner.render import svgplot
from planner.sizing.scan import pareto


def money(v: float) -> str:
    return f"${v / 1e6:g}M" if v >= 1e6 else f"${v / 1e3:g}k" if v >= 1e3 else f"${v:g}"


def plot_for(r: dict) -> svgplot.Plot:
    feasible = [o for o in r["options"] if o.feasible]
    series = []
    for i, gpu in enumerate(sorted({o.offering.gpu.name for o in feasible})):
        mine = [o for o in feasible if o.offering.gpu.name == gpu]
        series.append(svgplot.Series(
            gpu, [(o.days, o.usd) for o in mine], line=False, marker=svgplot.MARKERS[i % 5],
            point_labels=[f"{o.offering.name}: {o.num_gpus} GPUs, {o.days:.1f} days, ${o.usd:,.0f}" for o in mine]))
    front = pareto(feasible)
    series.append(svgplot.Series("Pareto front", [(o.days, o.usd) for o in front], marker="none", color="#000000",
                                 dashed=True))
    refs = []
    if r["deadline_days"]:
        refs.append(svgplot.RefLine("x", r["deadline_days"], f"deadline {r['deadline_days']:g} days", "#d62728"))
    if r["budget_usd"]:
        refs.append(svgplot.RefLine("y", r["budget_usd"], f"budget ${r['budget_usd']:,.0f}", "#2ca02c"))
    return svgplot.Plot(
        f"{r['model']}: {r['tokens']:.3g} tokens, time to train vs total cost", series,
        x=svgplot.Axis("days to train (incl. checkpoints and restarts)", log=True),
        y=svgplot.Axis("total USD", log=True, tick_format=money),
        ref_lines=refs, legend="below")


def write_plot(path: Path, r: dict, force: bool) -> None:
    svg = svgplot.render(plot_for(r))
    if path.suffix.lower() in (".html", ".htm"):
        text = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{escape(r['model'])} sizing</title>"
                f"</head><body>\n{svg}</body></html>\n")
    else:
        text = svg
    write_files(path.parent, {path.name: (text, False)}, force)
