"""How far the model was off out of sample on published runs like a plan's (planner/analysis/accuracy.py,
validation/step_errors_by_gpu.yaml; tests/test_fidelity.py checks the file is what its fits give)."""
from __future__ import annotations

import json

from planner.analysis import accuracy
from planner.commands.main import main
from planner.validation.runs import default_holdout, load_runs, prepare


def scored_ids(gpu: str, precision: str, moe: bool) -> set[str]:
    """The scored rows of runs.yaml and holdout.yaml on `gpu` in `precision` of one kind, read from the rows."""
    out = set()
    for run in load_runs() + load_runs(default_holdout()):
        if run.exclude:
            continue
        p = prepare(run)
        if (p.cluster.gpu.name, p.plan.precision, p.model.moe is not None) == (gpu, precision, moe):
            out.add(run.id)
    return out


def test_line_by_hand(monkeypatch):
    """Three rows off by +5%, +10% and -3%: MAPE 6.0%, the worst 10.0%, the mean +4.0%: predicted longer."""
    rows = {"n": 3, "mape": 0.06, "max_abs": 0.10, "mean_signed": 0.04, "worst_run": "row-b"}
    monkeypatch.setattr(accuracy, "shipped", lambda: {("gb300", "fp8", "dense"): rows})
    judged = accuracy.judge("gb300", "fp8", moe=False)
    assert judged == {"gpu": "gb300", "precision": "fp8", "kind": "dense", "rows": rows}
    assert accuracy.line(judged) == (
        "on the 3 published dense runs on gb300 in fp8, predicted out of sample, the model's step time was off by "
        "6.0% on average (up to 10.0%, row-b); on the mean it predicted steps 4.0% longer than measured "
        "(validation/step_errors_by_gpu.yaml)")
    assert accuracy.judge("gb300", "fp8", moe=True) is None  # no MoE row there
    assert accuracy.line(None) is None
    shorter = accuracy.line({**judged, "kind": "moe", "rows": {**rows, "n": 1, "mean_signed": -0.04}})
    assert "on the 1 published mixture-of-experts run on gb300" in shorter and "4.0% shorter than measured" in shorter


def test_every_scored_row_is_counted_once():
    """The shipped file's counts are the scored rows of each GPU, precision and kind of runs.yaml and holdout.yaml."""
    shipped = accuracy.shipped()
    rows = [r for r in load_runs() + load_runs(default_holdout()) if not r.exclude]
    assert sum(e["n"] for e in shipped.values()) == len(rows)
    for (gpu, precision, kind), stats in shipped.items():
        ids = scored_ids(gpu, precision, kind == "moe")
        assert stats["n"] == len(ids) and stats["worst_run"] in ids, (gpu, precision, kind)


def test_estimate_and_suggest_say_how_far_off_the_model_was(capsys):
    """Llama 3 70B on 64 GB300 in FP8: --json carries the dense GB300 FP8 rows' figures, the text prints them;
    on an MI355X, where no run was published, there are none (the envelope says the model was never judged)."""
    base = ["estimate", "llama3-70b", "gb300-nvl72", "--gpus", "64", "--gbs", "512", "--tp", "2", "--pp", "1",
            "--mbs", "1", "--zero", "1", "--recompute", "full", "--sequence-parallel", "--precision", "fp8"]
    assert main([*base, "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["gpu"], judged["precision"], judged["kind"]) == ("gb300", "fp8", "dense")
    assert judged["rows"]["n"] == len(scored_ids("gb300", "fp8", False)) > 0
    assert main(base) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"validation: on the {judged['rows']['n']} published dense runs on gb300 in fp8" in text
    assert main(["suggest", "qwen3-30b-a3b", "dgx-b200", "--gpus", "8", "--gbs", "512", "--seq-length", "4096",
                 "--precision", "mxfp8", "--top", "1", "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["kind"], judged["rows"]["n"]) == ("moe", len(scored_ids("b200-sxm-180gb", "mxfp8", True)))
    assert main(["estimate", "llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--gbs", "64", "--tp", "1",
                 "--pp", "1", "--mbs", "1", "--zero", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] is None
