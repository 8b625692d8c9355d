"""Inputs `planner calibrate` and `planner validate` used to take as given although they contradict
themselves or each other (a report-only audit, 2026-12-07): each is now refused in one line or warned of.

Logs are written by test_calibrate_synth.synth_log from the alpha-beta ring model (Thakur et al. 2005;
nccl-tests PERFORMANCE.md bus factors: all_reduce 2(n-1)/n, all_gather (n-1)/n)."""
import json
from pathlib import Path

import pytest
from test_calibrate import assert_one_line_error, run
from test_calibrate_synth import EXAMPLES, GIB, H100, MIB, doubling_sizes, ring_allreduce_seconds, synth_log

from planner.calibration.comm import product

LARGE = doubling_sizes(64 * MIB, 8 * GIB)


def all_gather_seconds(size, n=8, bandwidth=300e9, latency=5e-6):
    """Ring AllGather by hand: n-1 steps, (n-1)/n of the bytes through each link."""
    return (n - 1) * latency + (n - 1) / n * size / bandwidth


def test_an_all_gather_table_named_all_reduce_is_refused(capsys, tmp_path):
    """An all_gather table (busbw/algbw = 7/8 over 8 ranks) under an all_reduce name would be fitted with the
    all_reduce factor 2 x 7/8: twice the link's bandwidth. The file's name and a --collective both lose to the
    table's own ratio."""
    text = synth_log("all_gather", 8, 1, LARGE, all_gather_seconds, device=H100)
    text = text.replace("Collective test starting: all_gather_perf", "Collective test starting: ?")
    text = text.replace("Collective test concluded: all_gather_perf", "Collective test concluded: ?")
    log = tmp_path / "all_reduce_perf.node1.txt"
    log.write_text(text)
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert_one_line_error(code, err, "busbw/algbw 0.875 over 8 ranks) is all_gather")
    plain = tmp_path / "run1.txt"
    plain.write_text(text)
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", plain, "--collective", "all_reduce")
    assert_one_line_error(code, err, "not the all_reduce its collective says")
    code, out, _ = run(capsys, "calibrate", "dgx-h100", "--nccl", plain, "--collective", "all_gather")
    assert code == 0 and "busbw 300.0" in out


def test_the_same_log_twice_is_refused(capsys):
    log = EXAMPLES / "all_reduce_8gpu.txt"
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log, "--nccl", f"{log.parent}/./{log.name}")
    assert_one_line_error(code, err, "given twice")


@pytest.mark.parametrize("device,expected", [("Tesla P100-SXM2-16GB", "p100"), ("Tesla T4", "t4"),
                                             ("Tesla K80", "k80"), ("NVIDIA L4", "l4"), ("NVIDIA RTX A6000", "a6000"),
                                             ("NVIDIA GeForce RTX 4090", "rtx 4090"), ("NVIDIA H20", "h20"),
                                             ("NVIDIA H100 80GB HBM3", "h100"), ("AMD Instinct MI300X", "mi300x")])
def test_device_lines_name_their_product(device, expected):
    """The GPU-mismatch check reads the product from each device line: older and smaller parts too."""
    assert product(device) == expected


def test_a_p100_log_does_not_calibrate_an_h100_cluster(capsys):
    log = Path(__file__).parent / "data" / "nccl" / "all_reduce_perf.era2017_1node4gpu.synthetic.txt"
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log, "--min-size", "1M")
    assert_one_line_error(code, err, "the run was on Tesla P100")


def test_a_failed_legacy_check_refuses_the_log(capsys, tmp_path):
    """Before nccl-tests 2.13's #wrong column the table printed a deviation, and only the footer says the check
    failed: which rows are corrupt cannot be told, so the log is refused."""
    text = synth_log("all_reduce", 8, 1, LARGE, lambda s: ring_allreduce_seconds(s, 8, 300e9, 5e-6), device=H100)
    legacy = [ln.replace("#wrong", " error") for ln in text.splitlines()]
    assert any(" error" in ln for ln in legacy)
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text("\n".join(legacy).replace("Out of bounds values : 0 OK", "Out of bounds values : 2 FAILED"))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    if code == 0:  # the table parsed as a current-era one: its rows carry #wrong, nothing to refuse
        pytest.fail("a legacy table with a FAILED footer was calibrated from")
    assert_one_line_error(code, err, "out-of-bounds values (FAILED)")


def test_a_row_timed_nan_is_warned_of(capsys, tmp_path):
    text = synth_log("all_reduce", 8, 1, LARGE, lambda s: ring_allreduce_seconds(s, 8, 300e9, 5e-6), device=H100)
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.split() and ln.split()[0] == str(GIB))
    cols = lines[i].split()
    cols[5] = cols[9] = "nan"  # out-of-place and in-place times
    lines[i] = "  ".join(cols)
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert code == 0 and f"skipped 1 row(s) with no usable time (nan; sizes {GIB} B)" in err
    assert f"{len(LARGE) - 1} rows" in out


def test_step_time_keys_with_hyphens_are_the_columns_they_name(capsys, tmp_path):
    """seq-length is the seq_length column (as sequence-parallel is that flag): read at 4096, not the model's
    8192. Both spellings at once name one setting twice."""
    row = ("- model: llama3-70b\n  gpus: 64\n  tp: 8\n  pp: 4\n  vpp: 5\n  mbs: 1\n  gbs: 512\n  zero: 1\n"
           "  recompute: selective\n  sequence_parallel: true\n  {key}: 4096\n  step_time_s: 72.13\n")
    scales = []
    for key in ("seq_length", "seq-length", " seq_length "):
        path = tmp_path / "steps.yaml"
        path.write_text(row.replace("{key}", f"'{key}'"))
        code, out, err = run(capsys, "calibrate", "dgx-h100", "--step-times", path, "--json")
        assert code == 0, err
        scales.append(json.loads(out)["compute"]["steps"][0]["before_s"])
    assert scales[0] == scales[1] == scales[2]  # the same model time before the fit: read at the same length
    path.write_text(row.replace("{key}", "seq_length") + "  seq-length: 4096\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--step-times", path)
    assert_one_line_error(code, err, "name the same setting")


def test_settings_beside_steps_are_refused(capsys, tmp_path):
    path = tmp_path / "steps.yaml"
    path.write_text("seq_length: 4096\nsteps:\n  - model: llama3-70b\n    gpus: 64\n    tp: 8\n    step_time_s: 70\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--step-times", path)
    assert_one_line_error(code, err, "key seq_length beside 'steps'")


def test_validate_with_every_row_excluded_is_refused(capsys, tmp_path):
    path = tmp_path / "runs.yaml"
    text = (Path(__file__).parent.parent / "validation" / "runs.yaml").read_text()
    import yaml
    row = yaml.safe_load(text)[0]
    row["exclude"] = "kept for reference"
    path.write_text(yaml.safe_dump([row]))
    code, _, err = run(capsys, "validate", "--runs", path)
    assert_one_line_error(code, err, "no row to score")
    del row["exclude"], row["cluster"]["num_gpus"]
    path.write_text(yaml.safe_dump([row]))
    code, _, err = run(capsys, "validate", "--runs", path)
    assert_one_line_error(code, err, "cluster.num_gpus is missing")


def test_recalibrating_keeps_the_provenance_of_what_it_keeps(capsys, tmp_path):
    """A second calibration from a two-node log refits the network tier only: the NVLink figures it keeps came
    from the first run's logs, and the compute scale it keeps keeps its error."""
    import yaml
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    one_node, two_nodes = EXAMPLES / "all_reduce_8gpu.txt", EXAMPLES / "all_reduce_2node16gpu.txt"
    steps = EXAMPLES.parent / "step_times_llama3-70b.csv"
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", one_node, "--step-times", steps, "--out", first)
    assert code == 0, err
    code, _, err = run(capsys, "calibrate", first, "--nccl", two_nodes, "--out", second)
    assert code == 0, err
    a, b = (yaml.safe_load(p.read_text()) for p in (first, second))
    assert b["nvlink_busbw_gbytes_per_s"] == a["nvlink_busbw_gbytes_per_s"]
    assert b["calibrated_from"]["nccl_logs"] == [str(two_nodes)]
    assert b["calibrated_from"]["earlier_nccl_logs"] == [str(one_node)]
    assert b["matmul_efficiency_scale"] == a["matmul_efficiency_scale"]
    kept = b["calibrated_from"]["matmul_efficiency_scale_stderr"]
    assert kept is not None and kept == a["calibrated_from"]["matmul_efficiency_scale_stderr"]
