"""How far the model was off on published runs like a plan's (planner/analysis/accuracy.py,
validation/step_errors_by_gpu.yaml; tests/test_fidelity.py checks the file against its own fits)."""
from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from types import SimpleNamespace

import pytest

from planner.analysis import accuracy
from planner.commands.main import main
from planner.validation.runs import default_holdout, evaluate, load_runs, prepare


# Models of each kind for judge(): dense; an MoE with Mixtral 8x7B's shape (h 4096, experts of 14336: granularity
# 4 x 4096 / 14336 = 1.14, coarse); one with Qwen3-235B-A22B's (h 4096, experts of 1536: 10.7, fine).
DENSE = SimpleNamespace(moe=None, hidden_size=4096)
COARSE = SimpleNamespace(moe=SimpleNamespace(ffn_hidden_size=14336), hidden_size=4096)
FINE = SimpleNamespace(moe=SimpleNamespace(ffn_hidden_size=1536), hidden_size=4096)

# The mixture-of-experts models of the published rows, each kind by hand from its config.json: granularity 4h over
# the expert width (Krajewski et al. 2024), fine from 2. Mixtral 8x22B 4 x 6144 / 16384 = 1.5 and Grok-1 4 x 6144 /
# 32768 = 0.75: coarse; Llama 4 Maverick 4 x 5120 / 8192 = 2.5, gpt-oss 4 x 2880 / 2880 = 4, Qwen3-30B-A3B 4 x 2048 /
# 768 = 10.7, Qwen3-235B-A22B 4 x 4096 / 1536 = 10.7, DeepSeek-V3 4 x 7168 / 2048 = 14: fine.
MOE_KINDS = {"mixtral-8x7b": "moe-coarse", "mixtral-8x22b": "moe-coarse", "grok-1-314b": "moe-coarse",
             "llama4-maverick": "moe-fine", "gpt-oss-120b": "moe-fine", "gpt-oss-20b-mlperf": "moe-fine",
             "qwen3-30b-a3b": "moe-fine", "qwen3-235b-a22b": "moe-fine", "deepseek-v3": "moe-fine"}


def kind_by_hand(model) -> str:
    """A row's or a catalog model's kind, from MOE_KINDS (a KeyError names an MoE model it lacks)."""
    return MOE_KINDS[model.name] if model.moe else "dense"


@lru_cache(maxsize=1)
def ids_by_kind() -> dict[tuple[str, str, str | None, str], set[str]]:
    """The scored rows of runs.yaml and holdout.yaml by (GPU, precision, fp8 scaling (per-tensor for delayed and
    tensorwise recipes, else the recipe; None for other precisions), kind (kind_by_hand)), read from the rows
    once."""
    out: dict[tuple[str, str, str | None, str], set[str]] = {}
    for run in load_runs() + load_runs(default_holdout()):
        if not run.exclude:
            p = prepare(run)
            recipe = p.plan.fp8_recipe if p.plan.precision == "fp8" else None
            scaling = "per-tensor" if recipe in ("delayed", "tensorwise") else recipe
            out.setdefault((p.cluster.gpu.name, p.plan.precision, scaling, kind_by_hand(p.model)), set()).add(run.id)
    return out


def scored_ids(gpu: str, precision: str, kind: str, scaling: str | None = None) -> set[str]:
    """The scored rows on `gpu` in `precision` (with `scaling` for fp8) of one kind."""
    return ids_by_kind().get((gpu, precision, scaling, kind), set())


def test_line_by_hand(monkeypatch):
    """Three rows off by +5%, +10% and -3% at the shipped constants: MAPE 6.0%, the worst 10.0%, the mean
    +4.0%: steps predicted longer; out of sample -2%, -12%, -4%: MAPE 6.0%, mean -6.0%, predicted shorter."""
    fitted = {"n": 3, "mape": 0.06, "max_abs": 0.10, "mean_signed": 0.04, "worst_run": "row-b"}
    held = {"n": 3, "mape": 0.06, "max_abs": 0.12, "mean_signed": -0.06, "worst_run": "row-b"}
    none = {"n": 0, "mape": None, "max_abs": None, "mean_signed": None, "worst_run": None}
    monkeypatch.setattr(accuracy, "shipped", lambda: {("gb300", "fp8", "per-tensor", "dense"): {
        "generation": "blackwell", "left_out": "source", "shipped": fitted, "out_of_sample": held, "memory": none}})
    judged = accuracy.judge("gb300", "fp8", DENSE, fp8_recipe="tensorwise")
    assert judged == {"gpu": "gb300", "plan_gpu": "gb300", "precision": "fp8", "fp8_scaling": "per-tensor",
                      "kind": "dense", "left_out": "source", "shipped": fitted, "out_of_sample": held,
                      "memory": none}
    assert accuracy.line(judged) == (
        "on the 3 published dense runs on gb300 in fp8 with per-tensor scaling the model's step time was off by 6.0% "
        "on average (mean +4.0%: steps predicted longer than measured; up to 10.0%, row-b), and by 6.0% (mean -6.0%: "
        "steps predicted shorter than measured) with each run's source left out of the fit "
        "(validation/step_errors_by_gpu.yaml)")
    # delayed scaling is per-tensor too (Transformer Engine's default recipe, the search's): the same rows
    assert accuracy.judge("gb300", "fp8", DENSE, fp8_recipe="delayed") == judged
    for moe in (COARSE, FINE):
        assert accuracy.judge("gb300", "fp8", moe, fp8_recipe="tensorwise") is None  # no MoE row there
    assert accuracy.judge("gb300", "fp8", DENSE, fp8_recipe="rowwise") is None  # nor rowwise
    assert accuracy.line(None) is None
    one = accuracy.line({**judged, "kind": "moe-fine", "left_out": "model", "shipped": {**fitted, "n": 1}})
    assert one.startswith("on the 1 published fine-grained mixture-of-experts run on gb300 in fp8 with per-tensor "
                          "scaling ")
    assert "with each run's model left out of the fit" in one
    # two of the three print a peak, 40% and 60% above the model's: MAPE 50.0%, mean -50.0%, the worst 60.0%
    peaks = {"n": 2, "mape": 0.5, "max_abs": 0.6, "mean_signed": -0.5, "worst_run": "row-c"}
    assert accuracy.line({**judged, "memory": peaks}).endswith(
        "with each run's source left out of the fit; its peak memory per GPU was off by 50.0% on average on the 2 of "
        "them that print one (mean -50.0%: peaks predicted lower than measured; up to 60.0%, row-c) "
        "(validation/step_errors_by_gpu.yaml)")


def test_another_gpu_of_the_generation_with_the_most_rows(monkeypatch):
    """None on a B300: the rows of the Blackwell GPU with the most such rows (GB200's 5 over GB300's 3; a tie
    goes to the first name), named as another GPU's; none of another generation's."""
    def stats(n):
        return {"n": n, "mape": 0.05, "max_abs": 0.07, "mean_signed": -0.05, "worst_run": "row"}

    def entry(n, generation="blackwell"):
        return {"generation": generation, "left_out": "source", "shipped": stats(n), "out_of_sample": stats(n),
                "memory": {**stats(0), "mape": None, "max_abs": None, "mean_signed": None, "worst_run": None}}

    table = {("gb300", "mxfp8", None, "dense"): entry(3), ("gb200", "mxfp8", None, "dense"): entry(5),
             ("h100-sxm-80gb", "mxfp8", None, "dense"): entry(9, "hopper")}
    monkeypatch.setattr(accuracy, "shipped", lambda: table)
    other = accuracy.judge("b300", "mxfp8", DENSE, generation="blackwell")
    assert (other["gpu"], other["plan_gpu"], other["shipped"]["n"]) == ("gb200", "b300", 5)
    assert accuracy.line(other).startswith("on the 5 published dense runs on gb200 (none on b300) in mxfp8 the ")
    table[("gb300", "mxfp8", None, "dense")] = entry(5)
    assert accuracy.judge("b300", "mxfp8", DENSE, generation="blackwell")["gpu"] == "gb200"  # tie: by name
    assert accuracy.judge("b300", "mxfp8", DENSE) is None  # no generation given: no other GPU's rows
    assert accuracy.judge("a100-sxm-80gb", "mxfp8", DENSE, generation="ampere") is None


def test_line_without_a_scaling_names_the_precision_alone(monkeypatch):
    stats = {"n": 2, "mape": 0.05, "max_abs": 0.07, "mean_signed": -0.05, "worst_run": "row-a"}
    monkeypatch.setattr(accuracy, "shipped", lambda: {("gb200", "mxfp8", None, "moe-fine"): {
        "generation": "blackwell", "left_out": "model", "shipped": stats, "out_of_sample": stats,
        "memory": {**stats, "n": 0}}})
    judged = accuracy.judge("gb200", "mxfp8", FINE, fp8_recipe="delayed")  # the recipe is an fp8 setting
    assert judged["fp8_scaling"] is None
    assert accuracy.line(judged).startswith("on the 2 published fine-grained mixture-of-experts runs on gb200 in "
                                            "mxfp8 the model")
    assert accuracy.judge("gb200", "mxfp8", COARSE) is None  # a coarse-grained MoE is not judged by these rows


def test_torchtitan_float8_plans_cite_the_rowwise_rows(capsys):
    """A float8 torchtitan plan on DGX H100 (rowwise, the only float8 torchtitan runs) cites the held-out rowwise
    rows, run on another H100 (torchtitan's June 2025 page: the model 31% and 42% fast), not the Transformer
    Engine fp8 rows of its own GPU."""
    assert main(["suggest", "llama3-70b", "dgx-h100", "--gpus", "256", "--gbs", "512", "--framework", "torchtitan",
                 "--precision", "fp8", "--top", "1", "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["gpu"], judged["plan_gpu"], judged["fp8_scaling"]) == (
        "h100-sxm-96gb-500w", "h100-sxm-80gb", "rowwise")
    assert judged["shipped"]["n"] == len(scored_ids("h100-sxm-96gb-500w", "fp8", "dense", "rowwise")) == 2
    assert judged["shipped"]["mean_signed"] < -0.3


@pytest.fixture(scope="module")
def results_at_shipped_constants():
    return evaluate(load_runs() + load_runs(default_holdout()))


@pytest.fixture(scope="module")
def at_shipped_constants(results_at_shipped_constants):
    """Every scored row's step-time error at the shipped constants, by id."""
    return {r.run.id: r.step_error for r in results_at_shipped_constants}


def test_memory_figures_are_the_printed_peaks_against_the_model(results_at_shipped_constants):
    """Each record's `memory` statistics are those of its rows that print a peak: measured and predicted peaks read
    here, the relative error computed here; a record whose rows print none has n 0."""
    rows = {r.run.id: r for r in results_at_shipped_constants}
    for (gpu, precision, scaling, kind), record in accuracy.shipped().items():
        printed = [rows[i] for i in scored_ids(gpu, precision, kind, scaling)
                   if rows[i].run.measured.peak_memory_gib is not None]
        errors = [r.predicted_memory_gib / r.run.measured.peak_memory_gib - 1 for r in printed]
        memory = record["memory"]
        assert memory["n"] == len(errors), (gpu, precision, scaling, kind)
        if errors:
            assert memory["mape"] == pytest.approx(sum(abs(e) for e in errors) / len(errors), abs=1e-9)
            assert memory["mean_signed"] == pytest.approx(sum(errors) / len(errors), abs=1e-9)
        else:
            assert memory["mape"] is None and memory["worst_run"] is None


def test_an_moe_plan_on_b200_says_the_published_peaks_were_above_the_model(capsys):
    """Qwen3-30B-A3B under FSDP x EP 8 on 8 B200 in bf16, the layout of the six torchtitan DeepEP rows that print a
    peak (holdout.yaml; 114.78-167.93 GiB, every one above the model's): --json carries their memory figures, the
    text says the peaks were predicted lower than measured."""
    base = ["estimate", "qwen3-30b-a3b", "dgx-b200", "--gpus", "8", "--gbs", "64", "--tp", "1", "--pp", "1", "--ep",
            "8", "--mbs", "8", "--zero", "3", "--recompute", "full", "--precision", "bf16"]
    assert main([*base, "--json"]) == 0
    memory = json.loads(capsys.readouterr().out)["accuracy"]["memory"]
    assert memory["n"] == 6 and memory["mean_signed"] < -0.4
    assert memory["worst_run"].startswith("torchtitan-deepep-qwen3-30b-a3b-b200-")
    assert main(base) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "its peak memory per GPU was off by" in text and "peaks predicted lower than measured" in text


def test_shipped_figures_are_the_rows_at_the_shipped_constants(at_shipped_constants):
    """Each (GPU, precision, kind) counts exactly its scored rows of runs.yaml and holdout.yaml, and its
    `shipped` statistics are theirs at the shipped constants, computed here from the rows."""
    found = accuracy.shipped()
    assert sum(e["shipped"]["n"] for e in found.values()) == len(at_shipped_constants)
    for (gpu, precision, scaling, kind), record in found.items():
        ids = scored_ids(gpu, precision, kind, scaling)
        errors = [at_shipped_constants[i] for i in ids]
        fitted = record["shipped"]
        assert fitted["n"] == record["out_of_sample"]["n"] == len(ids), (gpu, precision, scaling, kind)
        assert fitted["mape"] == pytest.approx(sum(abs(e) for e in errors) / len(errors), abs=1e-9)
        assert fitted["mean_signed"] == pytest.approx(sum(errors) / len(errors), abs=1e-9)
        assert fitted["max_abs"] == pytest.approx(max(abs(e) for e in errors), abs=1e-9)
        assert {fitted["worst_run"], record["out_of_sample"]["worst_run"]} <= ids
        assert record["left_out"] == ("source" if kind == "dense" else "model")


def test_estimate_and_suggest_say_how_far_off_the_model_was(capsys):
    """Llama 3 70B on 64 GB300 in FP8 with Transformer Engine's default delayed scaling: --json carries the dense
    GB300 FP8 rows' figures (current scaling, per-tensor as delayed is), the text prints them; on an MI355X, where
    no run was published, none (the envelope says the model was never judged)."""
    base = ["estimate", "llama3-70b", "gb300-nvl72", "--gpus", "64", "--gbs", "512", "--tp", "2", "--pp", "1",
            "--mbs", "1", "--zero", "1", "--recompute", "full", "--sequence-parallel", "--precision", "fp8"]
    assert main([*base, "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["gpu"], judged["precision"], judged["fp8_scaling"], judged["kind"]) == (
        "gb300", "fp8", "per-tensor", "dense")
    assert judged["shipped"]["n"] == len(scored_ids("gb300", "fp8", "dense", "per-tensor")) > 0
    assert main(base) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"validation: on the {judged['shipped']['n']} published dense runs on gb300 in fp8 with per-tensor" in text
    assert main(["suggest", "qwen3-30b-a3b", "dgx-b200", "--gpus", "8", "--gbs", "512", "--seq-length", "4096",
                 "--precision", "mxfp8", "--top", "1", "--json"]) == 0
    judged = json.loads(capsys.readouterr().out)["accuracy"]
    assert (judged["kind"], judged["shipped"]["n"]) == ("moe-fine",
                                                        len(scored_ids("b200-sxm-180gb", "mxfp8", "moe-fine")))
    assert main(["estimate", "llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--gbs", "64", "--tp", "1",
                 "--pp", "1", "--mbs", "1", "--zero", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] is None


# --- the runs of the plan's own model (planner/analysis/bymodel.py, validation/step_errors_by_model.yaml) ---


def test_shipped_errors_by_model_are_what_the_model_gives():
    """validation/step_errors_by_model.yaml is generated from the rows at the shipped constants (python -m
    planner.validation.bymodel --write): a model change or refit that moves it must regenerate it."""
    from planner.analysis import bymodel
    from planner.validation import bymodel as computed

    assert list(bymodel.shipped().values()) == computed.compute()


def test_a_catalog_model_finds_the_rows_of_its_architecture():
    """The catalog's llama3-405b and the rows' llama3.1-405b are one architecture (126 layers, hidden 16384, 128
    query and 8 KV heads of 128, SwiGLU of 53248, vocab 128256, padded to a multiple of 1,024: 129024), so its plans
    cite those rows; gpt-oss-120b's are the 27 held-out Megatron-Bridge rows, none fitted, judged at the shipped
    constants. The catalog's gpt3-175b (vocab 51200, the Megatron-LM paper's padded size) is the model of every GPT-3
    row: the 8 fitted Megatron-LM and Korthikanti rows that print 51200, and those that give the GPT-2 tokenizer's
    50257, NeMo 24.07's 2 and MLPerf's 3 fitted, the DGX Cloud (10) and NeMo 25.x (2) rows held out."""
    from planner.analysis import bymodel
    from planner.inputs.loading import load_model_spec

    llama = bymodel.judge(load_model_spec("llama3-405b").to_model())
    assert llama["architecture"] == ("126 layers, hidden 16384, 128/8 heads of 128, swiglu ffn 53248, "
                                     "vocab 129024 padded")
    assert llama["model"] == "llama3.1-405b"
    assert bymodel.padded_vocab(50257) == bymodel.padded_vocab(51200) == 51200 != bymodel.padded_vocab(51201)
    gpt3 = bymodel.judge(load_model_spec("gpt3-175b").to_model())
    assert (gpt3["fitted_runs"], gpt3["held_out_runs"]) == (8 + 2 + 3, 10 + 2)
    gpt_oss = bymodel.judge(load_model_spec("gpt-oss-120b").to_model())
    held = [r for r in load_runs(default_holdout()) if r.group == "mbridge-gpt-oss"]
    assert (gpt_oss["fitted_runs"], gpt_oss["held_out_runs"], gpt_oss["shipped"]["n"]) == (0, 27, len(held))
    errors = [r.step_error for r in evaluate(held)]
    assert gpt_oss["shipped"]["mape"] == pytest.approx(sum(abs(e) for e in errors) / len(errors))
    assert gpt_oss["shipped"]["mean_signed"] == pytest.approx(sum(errors) / len(errors))
    # Mixtral 8x7B's only runs are NeMo's two held-out performance-summary rows (nemo-2025, forty-ninth session);
    # the same model one layer shorter has no published run at all.
    mixtral = load_model_spec("mixtral-8x7b").to_model()
    judged = bymodel.judge(mixtral)
    assert (judged["fitted_runs"], judged["held_out_runs"]) == (0, 2)
    assert bymodel.judge(replace(mixtral, num_layers=31)) is None


def test_model_line_by_hand():
    """Two rows, one fitted and one held out, off by -10% and -30%: MAPE 20.0%, mean -20.0%, the worst 30.0%."""
    from planner.analysis import bymodel

    judged = {"model": "m", "architecture": "a", "fitted_runs": 1, "held_out_runs": 1, "gpus": ["gb200", "h100"],
              "shipped": {"n": 2, "mape": 0.2, "max_abs": 0.3, "mean_signed": -0.2, "worst_run": "row-b"}}
    assert bymodel.line(judged) == (
        "on the 2 published runs of this model (m; 1 fitted, 1 held out; on gb200, h100) the model's step time was "
        "off by 20.0% on average (mean -20.0%: steps predicted shorter than measured; up to 30.0%, row-b) "
        "(validation/step_errors_by_model.yaml)")
    assert bymodel.line(None) is None


def test_estimate_gives_the_model_line(capsys):
    base = ["estimate", "gpt-oss-120b", "gb200-nvl72", "--gpus", "64", "--tp", "1", "--pp", "1", "--ep", "64",
            "--mbs", "4", "--gbs", "1280", "--zero", "1", "--precision", "bf16"]
    assert main([*base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model_accuracy"]["model"] == "gpt-oss-120b" and out["model_accuracy"]["held_out_runs"] == 27
    assert main(base) == 0
    assert "on the 27 published runs of this model (gpt-oss-120b; 0 fitted, 27 held out;" in \
        " ".join(capsys.readouterr().out.split())
