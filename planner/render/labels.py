"""Point labels that do not overlap: each label goes to the first of a few spots around its point
whose box is clear of the labels placed before it and of every marker (greedy, in pixels).

Call after the axes' limits and the figure's layout are final (`freeze_layout`)."""
from __future__ import annotations

# Offsets in points (dx, dy, horizontal alignment, vertical alignment), nearest first.
_NEAR = ((5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
         (-5, -3, "right", "top"), (7, 0, "left", "center"), (-7, 0, "right", "center"),
         (0, 7, "center", "bottom"), (0, -7, "center", "top"))
SPOTS = _NEAR + tuple((2.2 * dx, 2.2 * dy, ha, va) for dx, dy, ha, va in _NEAR)  # then further out, past rings
MARKER_PX = 4.5  # half the side of the box a marker occupies
SAME_PX = 24  # a label is not repeated for a point this close (pixels, Manhattan) to one that says the same


def freeze_layout(fig) -> None:
    """Lay the figure out once and keep it, so pixel positions measured now stay true."""
    fig.draw_without_rendering()
    fig.set_layout_engine("none")


def _clear(box, taken: list) -> bool:
    return not any(box.overlaps(t) for t in taken)


def _is_own_marker(box, xy) -> bool:
    """Whether `box` is the plain marker box centred on pixel `xy` (a label may touch its own point)."""
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    return abs(cx - xy[0]) < 0.5 and abs(cy - xy[1]) < 0.5 and box.width <= 2 * MARKER_PX + 0.01


def _marker_boxes(ax, points, half: float = MARKER_PX) -> list:
    """Pixel boxes of markers at data points (x, y), or (x, y, half side in pixels)."""
    from matplotlib.transforms import Bbox

    boxes = []
    for p in points:
        (x, y), h = ax.transData.transform([p[:2]])[0], p[2] if len(p) > 2 else half
        boxes.append(Bbox.from_extents(x - h, y - h, x + h, y + h))
    return boxes


def place(ax, labels: list[tuple[float, float, str, bool]], markers: list[tuple], **text_kw) -> int:
    """Annotate (x, y, text, must) in data coordinates, clear of `markers` ((x, y) or (x, y, half
    side in pixels); must-labels first. A label that fits nowhere near its point is dropped, unless
    `must`: then it tries spots further out, and else takes the first spot anyway. Returns how many
    were drawn."""
    gid = text_kw.pop("gid", "label")  # each label's group id: gid-1, gid-2, ...
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken, drawn, said = _marker_boxes(ax, markers), 0, []
    for x, y, text, must in sorted(labels, key=lambda lab: not lab[3]):
        xy = ax.transData.transform([(x, y)])[0]
        if not must and any(t == text and abs(px - xy[0]) + abs(py - xy[1]) < SAME_PX for t, px, py in said):
            continue  # the same text is already there for a point next to this one
        others = [t for t in taken if not _is_own_marker(t, xy)]
        for dx, dy, ha, va in SPOTS if must else _NEAR:  # only a must-label moves out past a ring
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
        said.append((text, *xy))
        drawn += 1
        ann.set_gid(f"{gid}-{drawn}")
    return drawn
