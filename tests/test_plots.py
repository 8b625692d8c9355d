"""The matplotlib pictures: sizing (`size --plot`) and calibration (`calibrate --plot`) SVG hold what
a reader needs (GPU-count labels, the two chosen options named, ticks inside the data, residuals);
tick and money helpers; matplotlib missing is one error line; commands that do not draw never import it."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from planner.commands.main import main
from planner.render import mpl, sizing_plot

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parent.parent
SMALL = ["llama2-7b", "--tokens", "1e11", "--gbs", "64", "--gpu-types", "h100-sxm-80gb", "--max-gpus", "64",
         "--workers", "1"]
MISSING = "needs matplotlib: pip install 'matplotlib>=3.7'"


def texts(svg: str) -> list[str]:
    return ["".join(t.itertext()).strip() for t in ET.fromstring(svg).iter(f"{SVG}text")]


def tick_labels(svg: str, axis: str) -> list[str]:
    """The labels of the major ticks of `axis` ('x' or 'y'), as matplotlib groups them (xtick_1, ...)."""
    root = ET.fromstring(svg)
    groups = [g for g in root.iter(f"{SVG}g") if re.fullmatch(f"{axis}tick_\\d+", g.get("id", ""))]
    return ["".join(t.itertext()).strip() for g in groups for t in g.iter(f"{SVG}text")]


def count_labels(svg: str) -> list[str]:
    """The GPU-count labels of the sizing picture."""
    return ["".join(g.itertext()).strip() for g in ET.fromstring(svg).iter(f"{SVG}g")
            if g.get("id", "").startswith("gpu-count-")]


def dollars(label: str) -> float:
    m = re.fullmatch(r"\$([\d.]+)([kMB]?)", label)
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "B": 1e9}[m.group(2)]


# --- helpers ----------------------------------------------------------------------------------------

def test_money_and_numbers_read_naturally():
    assert [mpl.money(v) for v in (950, 12e3, 3e5, 1e6, 1.5e6, 2e9)] == ["$950", "$12k", "$300k", "$1M", "$1.5M",
                                                                        "$2B"]
    assert [mpl.number(v) for v in (0.5, 3, 20, 1000, 3000)] == ["0.5", "3", "20", "1,000", "3,000"]
    assert mpl.distinct_labels([4010, 4015, 4020], mpl.money) == ["$4.01k", "$4.015k", "$4.02k"]


@pytest.mark.parametrize("lo, hi", [(8e5, 2e7), (1e5, 1e8), (3e5, 9e5), (4010, 4120), (2.9, 40), (0.7, 3000)])
def test_log_ticks_are_enough_and_inside_the_range(lo, hi):
    major, minor = mpl.log_ticks(lo, hi)
    assert 4 <= len(major) <= 10, major
    assert all(lo <= t <= hi for t in major + minor)
    assert not set(major) & set(minor)


def test_two_decades_get_one_and_three_steps():
    assert mpl.log_ticks(1e5, 1e7)[0] == [1e5, 3e5, 1e6, 3e6, 1e7]  # $100k, $300k, $1M, $3M, $10M


# --- sizing picture ---------------------------------------------------------------------------------

def option(gpu: str, n: int, days: float, usd: float):
    return SimpleNamespace(offering=SimpleNamespace(name=f"box-{gpu}", gpu=SimpleNamespace(name=gpu)),
                           num_gpus=n, days=days, usd=usd, feasible=True)


def fake_result(options, cheapest, fastest, deadline=None, budget=None) -> dict:
    front, best = [], float("inf")
    for o in sorted(options, key=lambda o: (o.days, o.usd)):
        if o.usd < best:
            front.append(o)
            best = o.usd
    return {"model": "m & <x>", "tokens": 2e12, "options": options, "pareto": front, "cheapest": cheapest,
            "fastest": fastest, "deadline_days": deadline, "budget_usd": budget}


def test_sizing_plot_marks_choices_and_reference_lines():
    opts = [option("h100", n, 400 / n, 2e4 * n ** 0.5) for n in (8, 16, 32, 64, 128)]
    opts += [option("b200", n, 250 / n, 5e4 * n ** 0.5) for n in (8, 16, 32)]
    svg = sizing_plot.plot_svg(fake_result(opts, opts[2], opts[4], deadline=20, budget=3e5))
    words = " ".join(texts(svg))
    assert "cheapest meeting the 20-day deadline and within the $300k budget" in words
    assert "fastest meeting the 20-day deadline" in words
    assert "deadline 20 days" in words and "budget $300k" in words
    assert "m & <x>" in words  # escaped in the file, read back as text
    labels = count_labels(svg)
    assert sorted(labels) == sorted(f"{o.num_gpus:,}" for o in opts)  # few points: every one labelled
    ids = {g.get("id") for g in ET.fromstring(svg).iter(f"{SVG}g")}
    assert {"choice-cheapest", "choice-fastest", "series-h100", "series-b200", "series-pareto"} <= ids


def test_crowded_sizing_plot_still_labels_the_front_and_the_choices():
    opts = [option(g, n, d * 300 / n, 1e4 * n * (1 + d / 4))
            for g, d in (("a", 1.0), ("b", 1.01), ("c", 1.02), ("d", 1.03)) for n in (4, 8, 16, 32, 64, 128, 256, 512)]
    r = fake_result(opts, min(opts, key=lambda o: o.usd), min(opts, key=lambda o: o.days))
    svg = sizing_plot.plot_svg(r)
    shown = count_labels(svg)
    for o in r["pareto"] + [r["cheapest"], r["fastest"]]:
        assert f"{o.num_gpus:,}" in shown
    assert len(shown) < len(opts)  # the rest only where there is room
    assert "cheapest:" in " ".join(texts(svg)) and "fastest:" in " ".join(texts(svg))


def test_sizing_notes_a_choice_nothing_meets_and_limits_off_the_chart():
    opts = [option("h100", n, 400 / n, 2e4 * n) for n in (8, 16)]
    words = " ".join(texts(sizing_plot.plot_svg(fake_result(opts, None, None, deadline=1, budget=1e9))))
    assert "no option is cheaper meeting the 1-day deadline" in words
    assert "budget $1B (above the chart)" in words


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    d = tmp_path_factory.mktemp("size")
    out = subprocess.run([sys.executable, "-m", "planner", "size", *SMALL, "--deadline-days", "30", "--budget-usd",
                          "1e4", "--plot", str(d / "s.svg"), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout), (d / "s.svg").read_text()


def test_size_cli_plot_labels_the_pareto_counts_and_names_the_choices(sized):
    r, svg = sized
    for o in r["pareto"]:
        assert f"{o['num_gpus']:,}" in count_labels(svg)
    joined = " ".join(texts(svg))
    assert "cheapest meeting the 30-day deadline and within the $10k budget:" in joined
    assert "fastest meeting the 30-day deadline and within the $10k budget:" in joined
    assert "budget $10k (above the chart)" in joined  # far above every option: drawn, it would squeeze them
    usd = [o["usd"] for o in r["options"] if o.get("finishes")]
    inside = [v for v in map(dollars, tick_labels(svg, "y")) if min(usd) <= v <= max(usd)]
    assert len(inside) >= 2, tick_labels(svg, "y")  # a span well under a decade still gets readable ticks
    days = [o["days"] for o in r["options"] if o.get("finishes")]
    assert any(min(days) <= float(t.replace(",", "")) <= max(days) for t in tick_labels(svg, "x"))


def test_size_plot_html_embeds_the_svg_inline(tmp_path, capsys):
    assert main(["size", *SMALL, "--plot", str(tmp_path / "s.html")]) == 0
    text = (tmp_path / "s.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "<?xml" not in text and "<script" not in text
    ET.fromstring(text[text.index("<svg"):text.index("</svg>") + 6])


# --- calibration picture ----------------------------------------------------------------------------

def test_calibrate_plot_has_a_residual_panel_and_the_cut(tmp_path, capsys):
    svg_path = tmp_path / "fit.svg"
    argv = ["calibrate", "dgx-h100", "--nccl", str(ROOT / "examples/nccl/all_reduce_8gpu.txt"), "--nccl",
            str(ROOT / "examples/nccl/all_reduce_2node16gpu.txt"), "--min-size", "512M", "--plot", str(svg_path),
            "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    svg = svg_path.read_text()
    words = texts(svg)
    assert "residual (model / measured - 1)" in words and "time (us)" in words
    assert "fit from 512M" in words
    assert {"128M", "1G", "8G"} <= set(tick_labels(svg, "x"))
    assert any(t.endswith("%") for t in words)
    ids = [g.get("id", "") for g in ET.fromstring(svg).iter(f"{SVG}g")]
    assert {"residuals-1-fitted", "residuals-1-unfitted", "residuals-2-fitted"} <= set(ids)
    assert "all_reduce_8gpu.txt (8 ranks, all_reduce)" in words


# --- matplotlib optional ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv, flag", [
    (["size", *SMALL, "--plot", "{d}/p.svg"], "--plot"),
    (["calibrate", "dgx-h100", "--nccl", str(ROOT / "examples/nccl/all_reduce_8gpu.txt"), "--plot", "{d}/p.svg"],
     "--plot"),
    (["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--report", "{d}/r.html"], "--report"),
])
def test_missing_matplotlib_is_one_line_before_any_work(tmp_path, capsys, monkeypatch, argv, flag):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    assert main([a.format(d=tmp_path) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert err == f"planner: error: {flag} {MISSING}\n" and out == ""
    assert not list(tmp_path.iterdir())


PROBE = """
import contextlib, io, json, sys
from planner.commands.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "matplotlib": "matplotlib" in sys.modules}))
"""


@pytest.mark.parametrize("argv", [
    ["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--top", "2"],
    ["size", *SMALL, "--max-gpus", "16", "--json"],
    ["calibrate", "dgx-h100", "--nccl", str(ROOT / "examples/nccl/all_reduce_8gpu.txt"), "--json"],
])
def test_commands_that_do_not_draw_do_not_import_matplotlib(argv):
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert json.loads(out.stdout) == {"code": 0, "matplotlib": False}


def test_size_plot_refuses_an_existing_file_before_the_scan(tmp_path, capsys):
    (tmp_path / "p.svg").write_text("keep")
    (tmp_path / "d.svg").mkdir()
    for name, words in (("p.svg", "refusing to overwrite"), ("d.svg", "is a folder")):
        assert main(["size", *SMALL, "--plot", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
    assert (tmp_path / "p.svg").read_text() == "keep"


def test_residuals_far_off_below_the_cut_go_on_a_symmetric_log_axis():
    from costmodel import topology
    from costmodel.types import Efficiency
    from planner.calibration.comm import collective_seconds
    from planner.inputs import loading
    from planner.render import calibrate_plot

    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8)
    fast, slow = topology.nvlink_link(cluster, Efficiency()), topology.network_link(cluster, Efficiency())

    def row(size):  # small messages 20x faster than the model says, large ones 1% slower
        t = collective_seconds("all_reduce", size, 8, 8, fast, slow) * 1e6
        return SimpleNamespace(size_bytes=size, out_of_place_time_us=t / 20 if size < 2**20 else t / 1.01,
                               in_place_time_us=None)
    log = SimpleNamespace(num_ranks=8, collective="all_reduce", rows=[row(2**k) for k in range(10, 34, 2)])
    svg = calibrate_plot.plot_svg([SimpleNamespace(name="x.txt", log=log, ranks_per_domain=8)], fast, slow, 2**26)
    ticks = tick_labels(svg, "y")
    assert "+1,000%" in ticks and "0%" in ticks  # +1,900% rows and +1% rows on one readable axis
    assert "fit from 64M" in texts(svg)
