"""matplotlib for planner's pictures, loaded only when a command draws (`--plot`, `--report`).

matplotlib is the optional extra `plots`; `require` turns its absence into one PlannerError line.
Figures are plain `matplotlib.figure.Figure`s on an Agg canvas (no pyplot, no global state) and
leave as SVG text with real <text> elements (searchable, selectable), no date and no creator, and
ids salted per picture, so several pictures can sit inline in one HTML page and a re-run writes
the same bytes. Also: log-axis ticks at 1-3 / 1-2-5 / ... steps, dollar and byte labels, and a
self-contained HTML page around inline SVG.
"""
from __future__ import annotations

import io
import math
import re
from html import escape

from planner.errors import PlannerError

INSTALL_HINT = "pip install 'matplotlib>=3.7'"
RC = {"svg.fonttype": "none", "text.parse_math": False, "font.size": 9.5, "axes.titlesize": 11,
      "axes.titleweight": "bold", "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
      "grid.color": "#e4e4e4", "grid.linewidth": 0.7, "legend.fontsize": 8.5, "legend.framealpha": 0.92}
# Mantissas per decade, coarse to fine: the first set that gives enough ticks inside the range is used.
TICK_STEPS = ((1,), (1, 3), (1, 2, 5), (1, 2, 3, 5, 7), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9))


def require(flag: str) -> None:
    """Fail in one line, before any work, when `flag` needs matplotlib and it is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlannerError(f"{flag} needs matplotlib: {INSTALL_HINT}") from None


def figure(width: float, height: float, **kwargs):
    """A Figure (inches) with an Agg canvas, so text extents can be measured before saving."""
    require("drawing")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained", **kwargs)
    FigureCanvasAgg(fig)
    return fig


def style(salt: str):
    """The rc settings every picture is drawn and saved under; `salt` keeps its SVG ids its own."""
    import matplotlib

    return matplotlib.rc_context({**RC, "svg.hashsalt": salt})


def svg_text(fig) -> str:
    """The figure as a standalone SVG document (no date, no metadata block)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return buf.getvalue()


def inline(svg: str) -> str:
    """SVG for inside HTML: without the XML declaration and DOCTYPE, scaling to the page width."""
    body = svg[svg.index("<svg"):]
    return re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', r'<svg \1class="chart"', body, count=1)


def html_page(title: str, body: str, css: str = "") -> str:
    """A self-contained page: inline CSS, no scripts, nothing fetched."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{escape(title)}</title>\n"
            f"<style>\nbody{{font-family:system-ui,'DejaVu Sans',sans-serif;margin:2em auto;max-width:72em;"
            f"padding:0 1em;color:#222}}\nsvg.chart{{max-width:100%;height:auto}}\n{css}</style>\n"
            f"</head><body>\n{body}\n</body></html>\n")


def log_ticks(lo: float, hi: float, at_least: int = 4, at_most: int = 10) -> tuple[list[float], list[float]]:
    """(labelled, unlabelled) ticks inside [lo, hi] on a log axis: the coarsest mantissa set of
    TICK_STEPS with `at_least` ticks in range (at most `at_most`), and the finest set as minor ticks."""
    def ticks(steps):
        return [m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                for m in steps if lo <= m * 10.0**e <= hi]
    major = next((t for t in map(ticks, TICK_STEPS) if len(t) >= at_least), None)
    if major is None:  # well under a decade: evenly spaced round numbers
        return linear_ticks(lo, hi), []
    if len(major) > at_most:  # a range of many decades: every k-th power of ten
        powers = ticks((1,))
        major = powers[::math.ceil(len(powers) / at_most)]
    return major, [t for t in ticks(TICK_STEPS[-1]) if t not in major]


def linear_ticks(lo: float, hi: float, at_least: int = 4) -> list[float]:
    """Multiples of 1, 2 or 5 x 10^k inside [lo, hi]: the widest step that gives `at_least` of them."""
    k = math.floor(math.log10(hi - lo))
    for step in sorted((m * 10.0**e for e in (k - 2, k - 1, k) for m in (1, 2, 5)), reverse=True):
        ticks = [round(i * step, 12) for i in range(math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) + 1)]
        if len(ticks) >= at_least:
            return ticks
    return [lo, hi]


def distinct_labels(values: list[float], fmt) -> list[str]:
    """fmt(v, digits) for each value with the fewest digits (3 or more) that tells them apart."""
    for digits in range(3, 10):
        texts = [fmt(v, digits) for v in values]
        if len(set(texts)) == len(texts):
            return texts
    return texts


def set_log_ticks(axis, lo: float, hi: float, fmt) -> None:
    """Fixed labelled and minor ticks on a log `axis` (ax.xaxis / ax.yaxis) over [lo, hi]."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    major, minor = log_ticks(lo, hi)
    texts = dict(zip(major, distinct_labels(major, fmt)))
    axis.set_major_locator(FixedLocator(major))
    axis.set_minor_locator(FixedLocator(minor))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: texts.get(v, fmt(v))))
    axis.set_minor_formatter(NullFormatter())


def padded(values: list[float], pad: float = 0.06) -> tuple[float, float]:
    """Log-axis limits around positive `values`, padded by `pad` of their decades (a third of one if flat)."""
    a, b = math.log10(min(values)), math.log10(max(values))
    d = pad * (b - a) if b > a else 0.15
    return 10 ** (a - d), 10 ** (b + d)


def money(v: float, digits: int = 3) -> str:
    """$950, $12k, $300k, $1.5M, $2B (`digits` significant digits at most)."""
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"${v / scale:.{digits}g}{unit}"
    return f"${v:.{digits}g}"


def number(v: float, digits: int = 3) -> str:
    """0.5, 3, 20, 1.25; whole numbers with thousands separators from 1,000 up."""
    return f"{v:.{digits}g}" if v < 1e3 else f"{v:,.0f}"
