"""How far the model was off on published runs like a plan's (planner/analysis/accuracy.py,
validation/step_errors_by_gpu.yaml; tests/test_fidelity.py checks the file against its own fits)."""
from __future__ import annotations

import json
from functools import lru_cache

import pytest

from planner.analysis import accuracy
from planner.commands.main import main
from planner.validation.runs import default_holdout, evaluate, load_runs, prepare


@lru_cache(maxsize=1)
def ids_by_kind() -> dict[tuple[str, str, bool], set[str]]:
    """The scored rows of runs.yaml and holdout.yaml by (GPU, precision, MoE or not), read from the rows once."""
    out: dict[tuple[str, str, bool], set[str]] = {}
    for run in load_runs() + load_runs(default_holdout()):
        if not run.exclude:
            p = prepare(run)
            out.setdefault((p.cluster.gpu.name, p.plan.precision, p.model.moe is not None), set()).add(run.id)
    return out


def scored_ids(gpu: str, precision: str, moe: bool) -> set[str]:
    """The scored rows on `gpu` in `precision` of one kind."""
    return ids_by_kind().get((gpu, precision, moe), set())


def test_line_by_hand(monkeypatch):
    """Three rows off by +5%, +10% and -3% at the shipped constants: MAPE 6.0%, the worst 10.0%, the mean
    +4.0%: steps predicted longer; out of sample -2%, -12%, -4%: MAPE 6.0%, mean -6.0%, predicted shorter."""
    fitted = {"n": 3, "mape": 0.06, "max_abs": 0.10, "mean_signed": 0.04, "worst_run": "row-b"}
    held = {"n": 3, "mape": 0.06, "max_abs": 0.12, "mean_signed": -0.06, "worst_run": "row-b"}
    monkeypatch.setattr(accuracy, "shipped", lambda: {("gb300", "fp8", "dense"): {
        "left_out": "source", "shipped": fitted, "out_of_sample": held}})
    judged = accuracy.judge("gb300", "fp8", moe=False)
    assert judged == {"gpu": "gb300", "precision": "fp8", "kind": "dense", "left_out": "source", "shipped": fitted,
                      "out_of_sample": held}
    assert accuracy.line(judged) == (
        "on the 3 published dense runs on gb300 in fp8 the model's step time was off by 6.0% on average (mean +4.0%: "
        "steps predicted longer than measured; up to 10.0%, row-b), and by 6.0% (mean -6.0%: steps predicted "
        "shorter than measured) with each run's source left out of the fit (validation/step_errors_by_gpu.yaml)")
    assert accuracy.judge("gb300", "fp8", moe=True) is None  # no MoE row there
    assert accuracy.line(None) is None
    one = accuracy.line({**judged, "kind": "moe", "left_out": "model", "shipped": {**fitted, "n": 1}})
    assert one.startswith("on the 1 published mixture-of-experts run on gb300 in fp8 ")
    assert "with each run's model left out of the fit" in one


@pytest.fixture(scope="module")
def at_shipped_constants():
    """Every scored row's step-time error at the shipped constants, by id."""
    return {r.run.id: r.step_error for r in evaluate(load_runs() + load_runs(default_holdout()))}


def test_shipped_figures_are_the_rows_at_the_shipped_constants(at_shipped_constants):
    """Each (GPU, precision, kind) counts exactly its scored rows of runs.yaml and holdout.yaml, and its
    `shipped` statistics are theirs at the shipped constants, computed here from the rows."""
    found = accuracy.shipped()
    assert sum(e["shipped"]["n"] for e in found.values()) == len(at_shipped_constants)
    for (gpu, precision, kind), record in found.items():
        ids = scored_ids(gpu, precision, kind == "moe")
        errors = [at_shipped_constants[i] for i in ids]
        fitted = record["shipped"]
        assert fitted["n"] == record["out_of_sample"]["n"] == len(ids), (gpu, precision, kind)
        assert fitted["mape"] == pytest.approx(sum(abs(e) for e in errors) / len(errors), abs=1e-9)
        assert fitted["mean_signed"] == pytest.approx(sum(errors) / len(errors), abs=1e-9)
        assert fitted["max_abs"] == pytest.approx(max(abs(e) for e in errors), abs=1e-9)
        assert {fitted["worst_run"], record["out_of_sample"]["worst_run"]} <= ids
        assert record["left_out"] == ("model" if kind == "moe" else "source")


def test_estimate_and_suggest_say_how_far_off_the_model_was(capsys):
    """Llama 3 70B on 64 GB300 in FP8: --json carries the dense GB300 FP8 rows' figures, the text prints them;
    on an MI355X, where no run was published, there are none (the envelope says the model was never judged)."""
    base = ["estimate", "llama3-70b", "gb300-nvl72", "--gpus", "64", "--gbs", "512", "--tp", "2", "--pp", "1",
            "--mbs", "1", "--zero", "1", "--recompute", "full", "--sequence-parallel", "--precision", "fp8"]
    assert main([*base, "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["gpu"], judged["precision"], judged["kind"]) == ("gb300", "fp8", "dense")
    assert judged["shipped"]["n"] == len(scored_ids("gb300", "fp8", False)) > 0
    assert main(base) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"validation: on the {judged['shipped']['n']} published dense runs on gb300 in fp8" in text
    assert main(["suggest", "qwen3-30b-a3b", "dgx-b200", "--gpus", "8", "--gbs", "512", "--seq-length", "4096",
                 "--precision", "mxfp8", "--top", "1", "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["kind"], judged["shipped"]["n"]) == ("moe", len(scored_ids("b200-sxm-180gb", "mxfp8", True)))
    assert main(["estimate", "llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--gbs", "64", "--tp", "1",
                 "--pp", "1", "--mbs", "1", "--zero", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] is None
