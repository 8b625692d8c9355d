"""Self-contained SVG line / scatter plots, written by hand (no plotting dependency).

A Plot has a title, two axes (linear or log, optional tick formatter and fixed limits), series
(points joined by a line and/or drawn as markers, optional per-point tooltips), horizontal and
vertical reference lines, and a legend. `render` returns the SVG text; every series is one
`<g class="series">` element, so tools and tests can find them. Ticks are at 1-2-5 multiples of a
power of ten (linear) or at powers of ten (log; 1-2-5 within a decade when the range is short).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence
from xml.sax.saxutils import escape, quoteattr

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "none")
LEGEND_PLACES = ("top-left", "top-right", "bottom-left", "bottom-right", "below", "none")
_MARGIN = {"left": 78, "right": 24, "top": 44, "bottom": 56}
_CHAR_PX = 6.6  # average glyph width of 11 px sans-serif, for sizing the legend box


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float]]
    line: bool = True
    marker: str = "circle"
    color: str = ""  # "" = the next palette colour
    dashed: bool = False
    point_labels: Sequence[str] = ()  # optional tooltip per point


@dataclass(frozen=True)
class RefLine:
    axis: str  # "x": a vertical line at x = value; "y": a horizontal line at y = value
    value: float
    label: str = ""
    color: str = "#777777"


@dataclass(frozen=True)
class Axis:
    label: str = ""
    log: bool = False
    tick_format: Callable[[float], str] | None = None
    limits: tuple[float, float] | None = None
    log_base: int = 10  # log axes: ticks at powers of this (2 suits byte sizes)


@dataclass(frozen=True)
class Plot:
    title: str
    series: Sequence[Series]
    x: Axis = field(default_factory=Axis)
    y: Axis = field(default_factory=Axis)
    ref_lines: Sequence[RefLine] = ()
    width: int = 720
    height: int = 450
    legend: str = "top-left"


@dataclass(frozen=True)
class _Scale:
    lo: float
    hi: float
    log: bool
    px_lo: float
    px_hi: float

    def __call__(self, v: float) -> float:
        f = math.log10 if self.log else (lambda t: t)
        return self.px_lo + (f(v) - f(self.lo)) / (f(self.hi) - f(self.lo)) * (self.px_hi - self.px_lo)


def usable(v: float, log: bool) -> bool:
    return math.isfinite(v) and (v > 0 or not log)


def data_range(values: list[float], axis: Axis) -> tuple[float, float]:
    """Axis limits: the given ones, else the data extent padded by 5% (of the decades on log axes)."""
    if axis.limits:
        return axis.limits
    vals = [v for v in values if usable(v, axis.log)] or ([1.0, 10.0] if axis.log else [0.0, 1.0])
    lo, hi = min(vals), max(vals)
    if axis.log:
        a, b = math.log10(lo), math.log10(hi)
        pad = 0.05 * (b - a) if b > a else 0.3
        return 10 ** (a - pad), 10 ** (b + pad)
    pad = 0.05 * (hi - lo) if hi > lo else (abs(lo) * 0.1 or 1.0)
    return lo - pad, hi + pad


def linear_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Multiples of 1, 2 or 5 x 10^k inside [lo, hi], about `target` of them."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(1, target - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [round(i * step, 12) for i in range(first, math.floor(hi / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float, base: int = 10) -> list[float]:
    """Powers of `base` inside [lo, hi] (every k-th if more than 8); if fewer than three, 1-2-5
    multiples of powers of ten."""
    a, b = math.floor(math.log(lo, base)), math.ceil(math.log(hi, base))
    powers = [float(base) ** e for e in range(a, b + 1) if lo <= float(base) ** e <= hi]
    if len(powers) >= 3:
        every = max(1, math.ceil(len(powers) / 8))
        return powers[::every]
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [m * 10.0**e for e in range(a, b + 1) for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
    return ticks if len(ticks) >= 2 else linear_ticks(lo, hi)


def default_format(v: float) -> str:
    return f"{v:g}"


def _svg_text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def axes_svg(plot: Plot, sx: _Scale, sy: _Scale) -> list[str]:
    """Frame, grid lines, tick labels and axis titles."""
    left, right, top, bottom = sx.px_lo, sx.px_hi, sy.px_hi, sy.px_lo
    out = [f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" height="{bottom - top:.1f}" '
           'fill="none" stroke="#333333"/>']
    fx, fy = plot.x.tick_format or default_format, plot.y.tick_format or default_format
    xt = log_ticks(sx.lo, sx.hi, plot.x.log_base) if sx.log else linear_ticks(sx.lo, sx.hi)
    yt = log_ticks(sy.lo, sy.hi, plot.y.log_base) if sy.log else linear_ticks(sy.lo, sy.hi)
    for v in xt:
        px = sx(v)
        out.append(f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{bottom:.1f}" stroke="#e5e5e5"/>')
        out.append(_svg_text(px, bottom + 16, fx(v)))
    for v in yt:
        py = sy(v)
        out.append(f'<line x1="{left:.1f}" y1="{py:.1f}" x2="{right:.1f}" y2="{py:.1f}" stroke="#e5e5e5"/>')
        out.append(_svg_text(left - 6, py + 4, fy(v), "end"))
    out.append(_svg_text((left + right) / 2, plot.height - 14, plot.x.label))
    cy = (top + bottom) / 2
    out.append(_svg_text(18, cy, plot.y.label, extra=f' transform="rotate(-90 18 {cy:.1f})"'))
    return out


def marker_svg(kind: str, x: float, y: float, color: str, r: float = 3.5) -> str:
    """One marker centred on (x, y)."""
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}"/>'
    if kind == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" fill="{color}"/>'
    if kind == "cross":
        return (f'<path d="M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},{y + r:.1f}'
                f'L{x + r:.1f},{y - r:.1f}" stroke="{color}" stroke-width="1.5"/>')
    pts = {"triangle": ((0, -r * 1.2), (r * 1.1, r * 0.8), (-r * 1.1, r * 0.8)),
           "diamond": ((0, -r * 1.3), (r * 1.1, 0), (0, r * 1.3), (-r * 1.1, 0))}.get(kind)
    if pts is None:
        return ""
    return '<polygon points="' + " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in pts) + f'" fill="{color}"/>'


def series_svg(s: Series, color: str, sx: _Scale, sy: _Scale, clip_id: str) -> str:
    """One <g class="series"> with its polyline and markers (points a log axis cannot show are left out)."""
    pts = [(x, y, i) for i, (x, y) in enumerate(s.points) if usable(x, sx.log) and usable(y, sy.log)]
    if s.line:
        pts.sort(key=lambda p: p[0])
    parts = [f'<g class="series" data-label={quoteattr(s.label)} clip-path="url(#{clip_id})">']
    if s.line and len(pts) > 1:
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _ in pts)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.8"{dash}/>')
    for x, y, i in pts:
        mark = marker_svg(s.marker, sx(x), sy(y), color)
        if mark and i < len(s.point_labels):
            mark = f"<g>{mark}<title>{escape(s.point_labels[i])}</title></g>"
        parts.append(mark)
    parts.append("</g>")
    return "".join(p for p in parts if p)


def ref_line_svg(r: RefLine, sx: _Scale, sy: _Scale) -> str:
    """A dashed reference line across the plot area with its label at the end."""
    if r.axis == "x":
        if not usable(r.value, sx.log) or not min(sx.px_lo, sx.px_hi) <= sx(r.value) <= max(sx.px_lo, sx.px_hi):
            return ""
        x = sx(r.value)
        line = f'<line x1="{x:.1f}" y1="{sy.px_lo:.1f}" x2="{x:.1f}" y2="{sy.px_hi:.1f}"'
        label = _svg_text(x + 4, sy.px_hi + 12, r.label, "start")
    else:
        if not usable(r.value, sy.log) or not min(sy.px_lo, sy.px_hi) <= sy(r.value) <= max(sy.px_lo, sy.px_hi):
            return ""
        y = sy(r.value)
        line = f'<line x1="{sx.px_lo:.1f}" y1="{y:.1f}" x2="{sx.px_hi:.1f}" y2="{y:.1f}"'
        label = _svg_text(sx.px_hi - 4, y - 5, r.label, "end")
    body = f'{line} stroke="{r.color}" stroke-dasharray="3 3"/>' + (label if r.label else "")
    return f'<g class="ref-line">{body}</g>'


def legend_svg(plot: Plot, colors: list[str], sx: _Scale, sy: _Scale) -> str:
    """A boxed legend (swatch line and marker, label) in the chosen corner of the plot area."""
    if plot.legend == "none" or not plot.series:
        return ""
    w = 40 + _CHAR_PX * max(len(s.label) for s in plot.series)
    h = 8 + 16 * len(plot.series)
    if plot.legend == "below":  # under the x-axis title, in the extra height render() adds
        x0, y0 = sx.px_lo, plot.height
    else:
        x0 = sx.px_lo + 8 if plot.legend.endswith("left") else sx.px_hi - 8 - w
        y0 = sy.px_hi + 8 if plot.legend.startswith("top") else sy.px_lo - 8 - h
    out = [f'<g class="legend"><rect x="{x0:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h}" '
           'fill="white" fill-opacity="0.85" stroke="#bbbbbb"/>']
    for i, (s, c) in enumerate(zip(plot.series, colors)):
        y = y0 + 12 + 16 * i
        if s.line:
            dash = ' stroke-dasharray="6 4"' if s.dashed else ""
            out.append(f'<line x1="{x0 + 6:.1f}" y1="{y:.1f}" x2="{x0 + 28:.1f}" y2="{y:.1f}" stroke="{c}" '
                       f'stroke-width="1.8"{dash}/>')
        out.append(marker_svg(s.marker, x0 + 17, y, c))
        out.append(_svg_text(x0 + 34, y + 4, s.label, "start"))
    out.append("</g>")
    return "".join(out)


def scales(plot: Plot) -> tuple[_Scale, _Scale]:
    xs = [p[0] for s in plot.series for p in s.points] + [r.value for r in plot.ref_lines if r.axis == "x"]
    ys = [p[1] for s in plot.series for p in s.points] + [r.value for r in plot.ref_lines if r.axis == "y"]
    (x0, x1), (y0, y1) = data_range(xs, plot.x), data_range(ys, plot.y)
    m = _MARGIN
    return (_Scale(x0, x1, plot.x.log, m["left"], plot.width - m["right"]),
            _Scale(y0, y1, plot.y.log, plot.height - m["bottom"], m["top"]))


def render(plot: Plot) -> str:
    """The plot as a standalone SVG document."""
    if plot.legend not in LEGEND_PLACES:
        raise ValueError(f"legend must be one of {LEGEND_PLACES}")
    bad = [s.marker for s in plot.series if s.marker not in MARKERS]
    if bad:
        raise ValueError(f"unknown marker {bad[0]!r}; expected one of {MARKERS}")
    sx, sy = scales(plot)
    colors = [s.color or PALETTE[i % len(PALETTE)] for i, s in enumerate(plot.series)]
    clip = f"plot-area-{zlib.crc32(plot.title.encode()):08x}"
    height = plot.height + (16 + 16 * len(plot.series) if plot.legend == "below" else 0)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{plot.width}" height="{height}" '
            f'viewBox="0 0 {plot.width} {height}" font-family="sans-serif" font-size="11">')
    body = [f'<rect width="{plot.width}" height="{height}" fill="white"/>',
            f'<defs><clipPath id="{clip}"><rect x="{sx.px_lo:.1f}" y="{sy.px_hi:.1f}" '
            f'width="{sx.px_hi - sx.px_lo:.1f}" height="{sy.px_lo - sy.px_hi:.1f}"/></clipPath></defs>',
            f'<title>{escape(plot.title)}</title>',
            _svg_text(plot.width / 2, 24, plot.title, extra=' font-size="14" font-weight="bold"')]
    body += axes_svg(plot, sx, sy)
    body += [ref_line_svg(r, sx, sy) for r in plot.ref_lines]
    body += [series_svg(s, c, sx, sy, clip) for s, c in zip(plot.series, colors)]
    body.append(legend_svg(plot, colors, sx, sy))
    return head + "\n" + "\n".join(b for b in body if b) + "\n</svg>\n"
