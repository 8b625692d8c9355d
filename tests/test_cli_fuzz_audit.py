"""Inputs a command-line fuzz audit (2026-12-02, about 2,950 cases) found crashing with a traceback,
accepted in silence, or answered with advice that does not apply: each is now one line on stderr
and exit 2 (or, for one corrupted nccl-tests row, that row dropped with a warning)."""
import json

import pytest
from conftest import one_line_error

from planner.commands.main import main

M, C = "examples/llama3-70b.yaml", "examples/h100-64.yaml"
NCCL_JSON = "tests/data/nccl/all_reduce_perf.current_v2.19.1node8gpu.synthetic.json"


@pytest.fixture()
def estimate_file(tmp_path, capsys):
    assert main(["estimate", M, C, "--tp", "8", "--pp", "4", "--json"]) == 0
    path = tmp_path / "a.json"
    path.write_text(capsys.readouterr().out)
    return path


@pytest.mark.parametrize("key,value", [("model", None), ("fits", None), ("seq_length", None), ("gpu", "drop"),
                                       ("num_gpus", "drop")])
def test_compare_refuses_an_estimate_without_the_keys_it_prints(tmp_path, capsys, estimate_file, key, value):
    """`compare` without --json printed these and crashed (KeyError, NoneType format) when one was gone."""
    data = json.loads(estimate_file.read_text())
    if value == "drop":
        del data[key]
    else:
        data[key] = value
    broken = tmp_path / "b.json"
    broken.write_text(json.dumps(data))
    one_line_error(capsys, ["compare", str(estimate_file), str(broken)], key)


@pytest.mark.parametrize("flag,value", [("--deadline-days", "5e-324"), ("--deadline-days", "1e-300"),
                                        ("--budget-usd", "5e-324")])
def test_size_refuses_a_deadline_or_budget_below_86_seconds_or_a_cent(capsys, flag, value):
    """5e-324 days overflowed math.floor (traceback); 1e-300 printed a 300-digit GPU count."""
    one_line_error(capsys, ["size", M, "--max-gpus", "64", flag, value], flag)


def test_size_says_why_no_node_can_run_the_model(tmp_path, capsys):
    """A 1-layer, 1-head model at global batch 1 fits no whole node: 'try more GPUs' was the wrong advice."""
    model = tmp_path / "t.yaml"
    model.write_text("name: t\nnum_layers: 1\nhidden_size: 64\nnum_attention_heads: 1\nvocab_size: 256\n"
                     "seq_length: 128\nglobal_batch_size: 1\ntraining_tokens: 1000000\n")
    one_line_error(capsys, ["size", str(model), "--max-gpus", "64", "--gpu-types", "h100-sxm-80gb"],
                   "no legal layout for 8 GPUs", "global batch (1)")


def test_calibrate_min_size_too_large_for_a_float(capsys):
    one_line_error(capsys, ["calibrate", C, "--nccl", NCCL_JSON, "--min-size", "9" * 400], "--min-size")


@pytest.mark.parametrize("section,key", [(None, "size"), ("out_of_place", "time")])
def test_nccl_json_with_a_400_digit_number(tmp_path, capsys, section, key):
    doc = json.loads(open(NCCL_JSON).read())
    row = doc["results"][-1]
    (row if section is None else row[section])[key] = int("9" * 400)
    log = tmp_path / "n.json"
    log.write_text(json.dumps(doc))
    one_line_error(capsys, ["calibrate", C, "--nccl", str(log)], "results[")


def test_an_nccl_text_row_with_an_impossible_time_is_dropped(tmp_path, capsys):
    """1e300 us with a 288 GB/s busbw column entered the fit ('busbw 340.2 +- 88 GB/s')."""
    text = open("examples/nccl/all_reduce_8gpu.txt").read().splitlines()
    i = max(n for n, line in enumerate(text) if line.strip() and line.split()[0].isdigit())
    fields = text[i].split()
    fields[5] = "1e300"  # out-of-place time (size count type redop root time ...)
    text[i] = "  ".join(fields)
    log = tmp_path / "n.txt"
    log.write_text("\n".join(text) + "\n")
    assert main(["calibrate", C, "--nccl", str(log), "--json"]) == 0
    captured = capsys.readouterr()
    assert "skipped 1 data row(s) that cannot be a measurement" in captured.err and "1e+300 us" in captured.err
    assert "1e+300" not in captured.out and "e+300" not in captured.out


def test_what_if_power_has_the_cluster_files_floor(capsys):
    """power=1 W scored a 447 s step at 7% MFU; a cluster file's power_limit_watts must be >= 10."""
    one_line_error(capsys, ["estimate", M, C, "--tp", "8", "--pp", "4", "--what-if", "power=1"], "power")


@pytest.mark.parametrize("argv,needle", [(["--zero", "\u0661"], "--zero"), (["--stage-layers", ""], "--stage-layers"),
                                         (["--bf16-layers", ""], "--bf16-layers")])
def test_plan_flags_refuse_other_digits_and_empty_values(capsys, argv, needle):
    one_line_error(capsys, ["estimate", M, C, "--tp", "8", "--pp", "4", *argv], needle)


def test_a_failed_import_prints_its_error_alone(tmp_path, capsys):
    """A Hugging Face config's import note came before the error line: two lines for one failure."""
    folder = tmp_path / "scout"
    folder.mkdir()
    (folder / "config.json").write_text(open("tests/data/hf_configs/llama4-scout-17b-16e.json").read())
    from planner.inputs import loading

    loading._SAID.clear()
    one_line_error(capsys, ["suggest", str(folder / "config.json"), C, "--seq-length", "4096"], "global_batch_size")
