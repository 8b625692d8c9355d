"""`planner suggest --report FILE.html`: one self-contained page with the ranked plans, a stacked time
bar and a memory bar per plan, why #1 wins and the diagnosis; every name escaped; nothing to fetch.
(The page in a real browser: tests/test_report_browser.py.)"""
from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET

import pytest

from planner.commands.main import main
from planner.render import report

SUGGEST = ["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--top", "3"]
SVG = "{http://www.w3.org/2000/svg}"
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def inline_svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r"<svg .*?</svg>", html, flags=re.DOTALL)]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(the suggest JSON object, the page written alongside it)."""
    path = tmp_path_factory.mktemp("report") / "r.html"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        assert main([*SUGGEST, "--json", "--report", str(path)]) == 0
    return json.loads(buf.getvalue()), path.read_text()


def test_page_has_the_plans_the_charts_and_the_diagnosis(made):
    out, html = made
    assert html.startswith("<!DOCTYPE html>")
    table = html[html.index("<h2>Ranked plans</h2>"):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + len(out["plans"]) == 4
    time_svg, memory_svg = inline_svgs(html)
    ids = {g.get("id") for g in time_svg.iter(f"{SVG}g")}
    assert "part-compute" in ids
    assert {"capacity", "part-activations", "part-parameters"} <= {g.get("id") for g in memory_svg.iter(f"{SVG}g")}
    words = [" ".join(t.itertext()) for svg in (time_svg, memory_svg) for t in svg.iter(f"{SVG}text")]
    p = out["plans"][0]["plan"]
    assert f"#1 tp {p['tp']}, pp {p['pp']}, dp {p['dp']}, ZeRO {p['zero_stage']}" in words
    assert "seconds per step" in words and "GiB on the fullest GPU" in words
    assert any(w.startswith(f"{out['plans'][0]['step_time_s']:.3g} s, MFU") for w in words)
    assert any(re.fullmatch(r"[\d.]+ of 80 GiB", w) for w in words)
    assert "<h2>Diagnosis of #1</h2>" in html and "#1 vs #2:" in html


def test_page_is_self_contained(made):
    _, html = made
    assert not re.search(r"<script|<link|<img|<iframe|<object|@import|src=", html, flags=re.IGNORECASE)
    assert set(re.findall(r"https?://[^\s\"'<>)]+", html)) <= NAMESPACES  # SVG namespace names, never fetched
    assert not re.search(r"url\((?!#)", html)
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', html))
    # Every id a chart refers to (markers, clip paths) is defined once in the whole page.
    refs = set(re.findall(r'href="#([^"]+)"', html)) | set(re.findall(r"url\(#([^)]+)\)", html))
    for ref in refs:
        assert html.count(f'id="{ref}"') == 1, ref


def test_every_name_is_escaped(made):
    out = copy.deepcopy(made[0])
    evil = "<script>alert(1)</script> & co"
    out["plans"][0]["model"] = evil
    out["why"] = evil
    out["plans"][0]["warnings"] = [evil]
    out["diagnosis"]["levers"] = [{"lever": evil, "caveat": evil, "step_time_s": 1.0, "per_sample_speedup": 1.2,
                                   "exposed_comm_share": 0.1, "memory_per_gpu_bytes": 2**34, "usd_per_step": 0.5}]
    html = report.page(out)
    assert "<script" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co") >= 5  # title, h1, why, warning, lever row


def test_report_refuses_an_existing_file_before_searching(tmp_path, capsys):
    page = tmp_path / "r.html"
    page.write_text("keep")
    assert main([*SUGGEST, "--report", str(page)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err and page.read_text() == "keep"
    assert main([*SUGGEST, "--report", str(page), "--force"]) == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert f"planner: wrote {page}" in capsys.readouterr().err


def test_report_must_be_html(tmp_path, capsys):
    assert main([*SUGGEST, "--report", str(tmp_path / "r.txt")]) == 2
    assert "--report" in capsys.readouterr().err and not (tmp_path / "r.txt").exists()
