"""suggest: what-if, rank stability, diagnosis of the best plan, and --emit."""
import json

import pytest

from planner.commands.main import main

BASE = ["suggest", "gpt3-175b", "dgx-a100", "--gpus", "128", "--gbs", "256", "--top", "3"]


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_what_if_network_half_flips_the_best_plan_to_a_deeper_pipeline(capsys):
    # GPT-3 175B on 16 DGX A100 nodes: halving the network makes cross-node DP traffic dearer, so the
    # winner trades data parallelism for pipeline depth (fewer bytes over the network per step).
    d = run_json(capsys, *BASE, "--what-if-grid", "network=0.5,1.0")
    half, full = d["stability"]
    assert full["baseline_rank"] == 1  # at 1.0 the baseline plan is the best by construction
    assert half["best_plan"]["pp"] > full["best_plan"]["pp"] and half["best_plan"]["dp"] < full["best_plan"]["dp"]
    assert half["baseline_rank"] != 1
    assert half["baseline_plan_step_time_s"] > half["best_step_time_s"]


def test_what_if_grid_searches_a_repeated_value_once():
    """network=0.5,0.50,1.0,0.5 names two assumptions: one row each, in the order first given."""
    from planner.search.stability import parse_grid

    key, items = parse_grid("network=0.5,0.50,1.0,0.5")
    assert key == "network" and [wi.label() for wi in items] == ["network=0.5", "network=1"]


def test_what_if_searches_under_the_assumption(capsys):
    base = run_json(capsys, *BASE)
    slow = run_json(capsys, *BASE, "--what-if", "network=0.5")
    assert slow["what_if"] == "network=0.5"
    assert slow["plans"][0]["step_time_s"] >= base["plans"][0]["step_time_s"]


def test_suggest_reports_a_diagnosis_of_the_best(capsys):
    d = run_json(capsys, *BASE)
    diag = d["diagnosis"]
    assert abs(sum(diag["shares"].values()) - 1) < 1e-9 and 0 <= diag["exposed_comm_share"] < 1
    # It diagnoses the best plan (#1), not another: its shares are #1's parts over #1's step, and the
    # exposed communication is TP + PP + exposed DP sync of that step.
    best = d["plans"][0]
    parts, step = best["time_breakdown_s"], best["step_time_s"]
    assert diag["shares"] == pytest.approx({k: parts[k] / step for k in diag["shares"]}, rel=1e-9)
    assert diag["exposed_comm_share"] == pytest.approx(
        (parts["tp_comm"] + parts["pp_comm"] + parts["dp_comm_exposed"]) / step, rel=1e-9)
    assert diag["comm_bound"] == (diag["exposed_comm_share"] > 0.30)  # the seed's 30% threshold


def test_emit_writes_launch_files_for_the_best_plan(tmp_path, capsys):
    out = tmp_path / "launch"
    assert main(["suggest", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--framework", "megatron",
                 "--emit", "megatron", "--out", str(out)]) == 0
    capsys.readouterr()
    script = (out / "megatron" / "launch.sh").read_text()
    assert "pretrain_gpt.py" in script and (out / "README.txt").exists()
    # the files are the best plan's: its layout and batch appear as Megatron-LM flags
    best = run_json(capsys, "suggest", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "64",
                    "--framework", "megatron")["plans"][0]["plan"]
    for flag, key in (("--tensor-model-parallel-size", "tp"), ("--pipeline-model-parallel-size", "pp"),
                      ("--micro-batch-size", "micro_batch_size"), ("--global-batch-size", "global_batch_size")):
        assert f"  {flag} {best[key]}\n" in script, flag
    # and never overwrites without --force
    assert main(["suggest", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--framework", "megatron",
                 "--emit", "megatron", "--out", str(out)]) == 2


def test_emit_for_a_framework_without_the_model_is_refused_before_a_search(tmp_path, capsys):
    """torchtitan has no GPT-3 definition (its emitter refuses every plan of it): suggest --emit torchtitan used
    to search torchtitan's rules anyway, report "its own best is ... 27.5 s", then fail in the emitter (an audit).
    It now says in the refusal why no torchtitan file is written; --emit all (DeepSpeed and Megatron-LM) writes."""
    assert main(["suggest", "gpt3-175b", "dgx-h100", "--gpus", "256", "--emit", "torchtitan",
                 "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "no plan for --emit torchtitan: torchtitan: planner's torchtitan flavours (Llama 3, Qwen3" in err
    assert "DeepSeek-V3, gpt-oss; not torchtitan's Llama 4 or Kimi models) have no 'gpt3-175b'" in err
    assert "its own best" not in err and not (tmp_path / "t").exists()


def test_emit_keeps_to_the_frameworks_searched(tmp_path, capsys):
    """--framework megatron --emit torchtitan searched torchtitan anyway for its files (an audit): refused in one
    line before any search; --emit all writes only the searched frameworks' files."""
    argv = ["suggest", "llama3-8b", "dgx-h100", "--gpus", "64", "--gbs", "512", "--framework", "megatron"]
    assert main([*argv, "--emit", "torchtitan", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("planner: error: --emit torchtitan: torchtitan not searched (--framework megatron); add it to "
                   "--framework, or emit a framework searched")
    assert main([*argv, "--emit", "all", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert (tmp_path / "a" / "megatron" / "launch.sh").exists() and not (tmp_path / "a" / "deepspeed").exists()
