"""planner.svgplot: valid standalone SVG, one group per series, log axes, ticks, reference lines."""
import xml.etree.ElementTree as ET

import pytest

from planner.render import svgplot as sp

NS = "{http://www.w3.org/2000/svg}"


def series_groups(svg: str) -> list:
    return ET.fromstring(svg).findall(f".//{NS}g[@class='series']")


def test_valid_xml_with_one_group_per_series_and_escaped_text():
    plot = sp.Plot("cost & <time>", [sp.Series("a <1>", [(1, 2), (2, 4), (3, 9)]),
                                     sp.Series("b", [(1, 1), (3, 3)], line=False, marker="square"),
                                     sp.Series("c", [(2, 5)], marker="triangle", point_labels=["tp8 & pp4"])],
                   x=sp.Axis("x"), y=sp.Axis("y"))
    svg = sp.render(plot)
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    groups = series_groups(svg)
    assert [g.get("data-label") for g in groups] == ["a <1>", "b", "c"]
    assert len(groups[0].findall(f"{NS}polyline")) == 1 and len(groups[0].findall(f"{NS}circle")) == 3
    assert groups[1].findall(f"{NS}polyline") == [] and len(groups[1].findall(f"{NS}rect")) == 2
    assert groups[2].find(f".//{NS}title").text == "tp8 & pp4"
    assert root.find(f"{NS}title").text == "cost & <time>"


def test_log_axes_leave_out_points_they_cannot_show():
    plot = sp.Plot("t", [sp.Series("s", [(0, 1), (1, 10), (10, -5), (100, 1000)], marker="diamond")],
                   x=sp.Axis(log=True), y=sp.Axis(log=True))
    (group,) = series_groups(sp.render(plot))
    assert len(group.findall(f"{NS}polygon")) == 2  # (1, 10) and (100, 1000)


def test_log_scale_maps_decades_evenly():
    scale = sp._Scale(1.0, 1000.0, True, 0.0, 300.0)
    assert [scale(v) for v in (1, 10, 100, 1000)] == pytest.approx([0, 100, 200, 300])


def test_ticks():
    assert sp.linear_ticks(0, 1) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert sp.linear_ticks(-3, 47) == [0, 10, 20, 30, 40]
    assert sp.log_ticks(0.5, 2000) == [1, 10, 100, 1000]
    assert sp.log_ticks(3, 40) == [5, 10, 20]  # under three powers of ten: 1-2-5
    assert sp.log_ticks(700, 90000) == [1000, 2000, 5000, 10000, 20000, 50000]
    assert sp.log_ticks(2**20, 2**33, base=2) == [2.0**e for e in range(20, 34, 2)]


def test_reference_lines_and_legend_below():
    plot = sp.Plot("t", [sp.Series("s", [(1, 1), (10, 10)])], x=sp.Axis(log=True), y=sp.Axis(limits=(0, 20)),
                   ref_lines=[sp.RefLine("x", 3, "min"), sp.RefLine("y", 5, "target"), sp.RefLine("y", 500)],
                   legend="below", height=300)
    root = ET.fromstring(sp.render(plot))
    refs = root.findall(f".//{NS}g[@class='ref-line']")
    assert len(refs) == 2  # y = 500 lies outside the fixed limits (others widen the range to show them)
    assert [r.find(f"{NS}text").text for r in refs] == ["min", "target"]
    assert int(root.get("height")) > 300 and root.find(f".//{NS}g[@class='legend']") is not None


def test_rejects_unknown_marker_and_legend_and_is_deterministic():
    with pytest.raises(ValueError, match="marker"):
        sp.render(sp.Plot("t", [sp.Series("s", [(1, 1)], marker="star")]))
    with pytest.raises(ValueError, match="legend"):
        sp.render(sp.Plot("t", [sp.Series("s", [(1, 1)])], legend="middle"))
    plot = sp.Plot("same", [sp.Series("s", [(1, 2), (3, 4)], marker="cross")])
    assert sp.render(plot) == sp.render(plot)
