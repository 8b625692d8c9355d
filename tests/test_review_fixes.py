"""Edge cases a new-user review found: each must be one clear line and a non-zero exit, or a sane number."""
import json

import pytest

from planner.commands.main import main


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,needle", [
    (["estimate", "llama2-7b", "dgx-h100", "--gpus", "0"], "--gpus: must be between 1 and 1,048,576, got 0"),
    (["estimate", "llama2-7b", "dgx-h100", "--tp", "abc"], "--tp: expected an integer"),
    (["suggest", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "0"], "--gbs: must be between 1 and"),
    (["suggest", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "8", "--fix", "zero=5"], "--fix zero=5: must be between 0 and 3"),
    (["suggest", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "8", "--out", "x"], "--out is the folder for --emit"),
    (["size", "llama2-7b", "--tokens", "-1", "--gbs", "8"], "--tokens: must be >= 1 and <= 1e+17, got -1"),
    (["size", "llama2-7b", "--tokens", "1e9", "--gbs", "8", "--deadline-days", "0"],
     "--deadline-days: must be >= 0.001 and"),
    (["size", "llama2-7b", "--tokens", "1e9", "--gbs", "8", "--plot", "x.png"], "write .svg or .html"),
    (["estimate", "llama2-7b", "dgx-h100", "--gpus", "8", "--what-if", "price.h100=2"], "unknown GPU 'h100'"),
    (["validate", "--group", "bogus"], "--group bogus: unknown"),
    (["estimate", "/tmp", "dgx-h100"], "is a folder"),
    (["estimate", "llama2-7b", "dgx-a100", "--gpus", "8", "--precision", "fp8"], "FP8 tensor cores"),
])
def test_bad_requests_are_one_line(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("planner: error:") and needle in lines[0], err


def test_validate_runs_must_be_a_list(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text("foo: 1\n")
    code, _, err = run(capsys, "validate", "--runs", str(tmp_path / "r.yaml"))
    assert code == 2 and "expected a non-empty list of runs" in err


def test_matmul_what_if_cannot_push_mfu_past_one(capsys):
    # 2 is the largest scale accepted (a cluster file's bound too): H100's 0.80 large-GEMM fraction x 2 > 1
    code, out, _ = run(capsys, "estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "8", "--zero", "3",
                       "--what-if", "matmul_efficiency=2", "--json")
    assert code == 0 and json.loads(out)["what_if"]["estimate"]["mfu"] <= 1.0


def test_fp32_doubles_activation_memory(capsys):
    args = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "8", "--no-flash-attention", "--json"]
    bf16 = json.loads(run(capsys, *args)[1])["memory_breakdown_bytes"]["activations"]
    fp32 = json.loads(run(capsys, *args, "--precision", "fp32")[1])["memory_breakdown_bytes"]["activations"]
    assert 1.8 < fp32 / bf16 <= 2.0  # every tensor doubles; the fp32 logits term was fp32 already


def test_compare_a_plan_with_itself_is_a_tie(tmp_path, capsys):
    _, out, _ = run(capsys, "estimate", "llama2-7b", "dgx-h100", "--gpus", "8", "--gbs", "8", "--zero", "1", "--json")
    (tmp_path / "a.json").write_text(out)
    code, out, _ = run(capsys, "compare", str(tmp_path / "a.json"), str(tmp_path / "a.json"), "--json")
    assert code == 0 and json.loads(out)["faster"] == "tie"


def test_estimate_warns_when_the_plan_does_not_fit(capsys):
    code, _, err = run(capsys, "estimate", "llama2-70b", "dgx-h100", "--gpus", "8", "--gbs", "8")
    assert code == 0 and "warning: the plan does not fit" in err
