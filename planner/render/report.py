"""`planner suggest --report FILE.html`: the suggest result as one self-contained page.

Built from the JSON object of planner.search.report.suggest_report: the ranked plans (a table, a
stacked time bar and a memory bar per plan), why #1 beats #2, and the diagnosis of #1 with its
levers. Inline CSS and inline SVG charts (matplotlib); no scripts, fonts, images or links to fetch;
every name from the input is escaped.
"""
from __future__ import annotations

from html import escape
from pathlib import Path

from planner.analysis import bymodel, coverage
from planner.errors import PlannerError
from planner.files import check_targets, write_files
from planner.render import mpl
from planner.render.estimate import GIB, diagnosis_lines, human_seconds, plan_label, step_usd
from planner.render.suggest import header, layout_words

CSS = """h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;margin-top:1.6em}
p.lead{color:#444;margin-top:0} table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
th,td{padding:.3em .6em;border-bottom:1px solid #ddd;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f4f4f4} td.l,th.l{text-align:left;white-space:normal}
.warn{color:#a15c00} .bad{color:#b00020;font-weight:bold}
.chart-box{margin:1em 0}
"""


def check_target(path: str, force: bool) -> None:
    """Refuse before the search: no matplotlib, not .html, or an existing file without --force."""
    mpl.require("--report")
    target = Path(path)
    if target.suffix.lower() not in (".html", ".htm"):
        raise PlannerError(f"--report {path}: write .html (the report is one HTML page)")
    check_targets(target.parent, {target.name: ("", False)}, force)


def plain(markup: str) -> str:
    """Rich console markup ('[red]x[/red]') as plain text."""
    from rich.text import Text

    return Text.from_markup(markup).plain


def table(heads: list[str], rows: list[list[str]], left: tuple[str, ...] = ()) -> str:
    """An HTML table of already-escaped cells; columns named in `left` align left."""
    cls = [' class="l"' if h in left else "" for h in heads]
    head = "".join(f"<th{c}>{escape(h)}</th>" for h, c in zip(heads, cls))
    body = "".join("<tr>" + "".join(f"<td{c}>{cell}</td>" for cell, c in zip(row, cls)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def plan_row(i: int, d: dict) -> list[str]:
    mem = f"{d['memory_per_gpu_bytes'] / GIB:.1f} / {d['memory_capacity_bytes'] / GIB:.0f} GiB"
    t = d.get("training")
    return [str(i), escape(plan_label(d["plan"])), human_seconds(d["step_time_s"]), f"{d['tokens_per_s']:,.0f}",
            f"{100 * d['mfu']:.1f}%", mem if d["fits"] else f'<span class="bad">{mem}</span>',
            step_usd(d["usd_per_step"]) if d["usd_per_gpu_hour"] else "-",
            human_seconds(t["time_to_train_s"]) if t else "-",
            f"${t['usd_to_train']:,.0f}" if t and d["usd_per_gpu_hour"] else "-"]


def plans_html(plans: list[dict]) -> str:
    heads = ["#", "plan", "step", "tokens/s", "MFU", "memory/GPU", "$/step", "time to train", "$ to train"]
    return "<h2>Ranked plans</h2>\n" + table(heads, [plan_row(i, d) for i, d in enumerate(plans, 1)], ("plan",))


def levers_html(diag: dict) -> str:
    if not diag["levers"]:
        return "<p>No lever re-scores faster for this plan.</p>"
    rows = [[escape(lv["lever"]), f"{lv['step_time_s']:.3f}", f"{lv['per_sample_speedup']:.2f}x",
             f"{100 * lv['exposed_comm_share']:.0f}%", f"{lv['memory_per_gpu_bytes'] / GIB:.1f}",
             step_usd(lv["usd_per_step"]), escape(lv["caveat"])] for lv in diag["levers"]]
    heads = ["lever", "step s", "per-sample speedup", "exposed comm", "GiB/GPU", "$/step", "what it costs"]
    return "<h3>Levers (each re-scored on this cluster)</h3>\n" + table(heads, rows, ("lever", "what it costs"))


def diagnosis_html(out: dict) -> str:
    diag, best = out["diagnosis"], out["plans"][0]
    lines = [escape(plain(line)) for line in diagnosis_lines(diag)]
    cls = ' class="bad"' if diag["comm_bound"] else ""
    cautions = coverage.cautions(out.get("envelope"), out.get("unvalidated_settings") or [], "#1",
                                 host_wait=out.get("host_wait"), long_context=out.get("long_context"))
    warnings = "".join(f'<li class="warn">{escape(w)}</li>'
                       for w in best["warnings"] + out.get("warnings", []) + cautions)
    for judged in bymodel.validation_lines(out.get("accuracy"), out.get("model_accuracy")):
        warnings += f"<li>validation: {escape(judged)}</li>"
    return (f"<h2>Diagnosis of #1</h2>\n<p{cls}>{lines[0]}</p>\n<p>{'<br>'.join(lines[1:])}</p>\n"
            + (f"<ul>{warnings}</ul>\n" if warnings else "") + levers_html(diag))


def stability_html(out: dict) -> str:
    if not out.get("stability"):
        return ""
    rows = [[escape(r["assumption"]), escape(f"{layout_words(r['best_plan'])}, ZeRO {r['best_plan']['zero_stage']}"),
             f"{r['best_step_time_s']:.2f}",
             f"{r['baseline_plan_step_time_s']:.2f}" + ("" if r["baseline_plan_fits"] else " (does not fit)"),
             "-" if r["baseline_rank"] is None else f"#{r['baseline_rank']}",
             "yes" if r["baseline_rank"] == 1 else "no"] for r in out["stability"]]
    heads = ["assumption", "best there", "its step s", "#1's step s there", "#1's rank there", "#1 stays best"]
    return "<h2>Rank stability</h2>\n" + table(heads, rows, ("assumption", "best there"))


def page(out: dict) -> str:
    """The whole HTML document."""
    from planner.render.report_charts import memory_chart, time_chart

    plans, best = out["plans"], out["plans"][0]
    title = f"{best['model']} on {best['num_gpus']} x {best['gpu']}: best plans"
    what_if = f"<p class=\"warn\">what if {escape(out['what_if'])}</p>\n" if out.get("what_if") else ""
    why = f"<p><b>#1 vs #2:</b> {escape(out['why'])}</p>\n" if out.get("why") else ""
    charts = "".join(f'<div class="chart-box">{mpl.inline(svg)}</div>\n' for svg in (time_chart(plans),
                                                                                    memory_chart(plans)))
    body = (f"<h1>{escape(title)}</h1>\n<p class=\"lead\">{escape(plain(header(plans, out['search'])))}</p>\n"
            f"{what_if}{plans_html(plans)}\n{why}<h2>Time and memory per plan</h2>\n{charts}"
            f"{diagnosis_html(out)}\n{stability_html(out)}")
    return mpl.html_page(title, body, CSS)


def write_report(path: str, out: dict, force: bool) -> Path:
    target = Path(path)
    write_files(target.parent, {target.name: (page(out), False)}, force)
    return target
