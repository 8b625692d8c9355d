"""Point labels that do not overlap: each label goes to the first of a few spots around its point
whose box is clear of the labels placed before it and of every marker (greedy, in pixels).

Call after the axes' limits and the figure's layout are final (`freeze_layout`)."""
from __future__ import annotations

# Offsets in points (dx, dy, horizontal alignment, vertical alignment), nearest first.
SPOTS = ((5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
         (-5, -3, "right", "top"), (7, 0, "left", "center"), (-7, 0, "right", "center"),
         (0, 7, "center", "bottom"), (0, -7, "center", "top"))
MARKER_PX = 4.5  # half the side of the box a marker occupies


def freeze_layout(fig) -> None:
    """Lay the figure out once and keep it, so pixel positions measured now stay true."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def _clear(box, taken: list) -> bool:
    return not any(box.overlaps(t) for t in taken)


def _marker_boxes(ax, points) -> list:
    from matplotlib.transforms import Bbox

    xy = ax.transData.transform(points) if points else []
    return [Bbox.from_extents(x - MARKER_PX, y - MARKER_PX, x + MARKER_PX, y + MARKER_PX) for x, y in xy]


def place(ax, labels: list[tuple[float, float, str, bool]], markers: list[tuple[float, float]], **text_kw) -> int:
    """Annotate (x, y, text, must) in data coordinates. A label that fits nowhere is dropped unless
    `must`, when it takes its first spot anyway. Returns how many were drawn."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken, drawn = _marker_boxes(ax, markers), 0
    for x, y, text, must in sorted(labels, key=lambda lab: not lab[3]):
        own = _marker_boxes(ax, [(x, y)])[0]
        others = [t for t in taken if t.bounds != own.bounds]
        for i, (dx, dy, ha, va) in enumerate(SPOTS):
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, **text_kw)
            box = ann.get_window_extent(renderer)
            inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            if inside and _clear(box, others):
                break
            ann.remove()
        else:
            if not must:
                continue
            dx, dy, ha, va = SPOTS[0]
            ann = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, **text_kw)
            box = ann.get_window_extent(renderer)
        taken.append(box)
        drawn += 1
    return drawn
