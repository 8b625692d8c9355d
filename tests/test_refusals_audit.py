"""Inputs a hostile-input audit (2026-12-01) found accepted in silence or answered from nonsense: each is
now one line on stderr and exit 2, or (a routing imbalance past what routing allows) bounded by arithmetic."""
import json
import re

import pytest
from conftest import one_line_error

from costmodel import moe
from planner.commands.main import main
from planner.inputs.loading import load_model_spec

M, C = "examples/llama3-70b.yaml", "examples/h100-64.yaml"
DENSE = ["estimate", M, C, "--tp", "8", "--pp", "4", "--mbs", "1"]


def test_the_largest_routing_imbalance_a_layout_allows():
    """Each token picks k distinct experts; the busiest of ep ranks (E/ep experts each) gets at most
    min(k, E/ep) copies of every token of the group, over a balanced k x tokens / ep:
    ep x min(k, E/ep) / k. Mixtral 8x7B (E 8, k 2): 1 at ep 1, 8 x 1 / 2 = 4 at ep 8; Qwen3-30B-A3B
    (E 128, k 8): 8 x 8 / 8 = 8 at ep 8, 32 x 4 / 8 = 16 at ep 32."""
    mixtral = load_model_spec("mixtral-8x7b").to_model()
    qwen = load_model_spec("qwen3-30b-a3b").to_model()
    assert moe.max_imbalance(mixtral, moe.ExpertLayout(ep=1)) == 1
    assert moe.max_imbalance(mixtral, moe.ExpertLayout(ep=8)) == 4
    assert moe.max_imbalance(qwen, moe.ExpertLayout(ep=8)) == 8
    assert moe.max_imbalance(qwen, moe.ExpertLayout(ep=32)) == 16
    # beyond it the what-if is that ceiling, not a rank that receives more tokens than exist
    assert moe.row_factor(mixtral, moe.ExpertLayout(ep=8, imbalance=64)) == 4
    assert moe.row_factor(mixtral, moe.ExpertLayout(ep=8, imbalance=2)) == 2


def test_an_imbalance_on_one_expert_rank_changes_nothing(capsys):
    """With ep 1 every routed copy is on the one rank whatever the router does (the audit saw 2.0 s
    become 4.7 s and 742 GiB become 930 GiB at imbalance=8)."""
    argv = ["estimate", "mixtral-8x7b", "dgx-h100", "--gpus", "64", "--tp", "8", "--ep", "1", "--mbs", "1", "--json"]
    assert main(argv + ["--what-if", "imbalance=8"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["what_if"]["estimate"]["step_time_s"] == d["step_time_s"]
    assert d["what_if"]["estimate"]["memory_per_gpu_bytes"] == d["memory_per_gpu_bytes"]


@pytest.mark.parametrize("extra, needle", [
    (["--ep-overlap"], "ep_overlap applies only to mixture-of-experts models"),
    (["--ep-dispatch", "deepep", "--moe-cuda-graphs"], "ep_dispatch deepep, moe_cuda_graphs apply only"),
    (["--recompute", "selective", "--recompute-modules", "moe_act"], "recompute module moe_act applies only"),
    (["--recompute", "selective", "--recompute-modules", "mla_up_proj"], "mla_up_proj replays multi-head latent"),
    (["--what-if", "imbalance=1.3"], "routing imbalance applies only to mixture-of-experts"),
    (["--what-if", "price.a100-sxm-80gb=0.01"], "the cluster has no a100-sxm-80gb"),
    (["--what-if", "matmul_efficiency=3"], "must be between 0.01 and 2"),
    (["--what-if", "network=1_0"], "expected a number"),
])
def test_a_dense_plan_refuses_what_only_moe_or_another_cluster_has(capsys, extra, needle):
    one_line_error(capsys, DENSE + extra, needle)


@pytest.mark.parametrize("argv, needle", [
    (["suggest", M, C, "--fix", "ep=2"], "--fix ep=2: expert parallelism applies only to mixture-of-experts"),
    (["suggest", M, C, "--fix", "ep_overlap=true"], "--fix ep_overlap=true: expert parallelism"),
    (["suggest", M, C, "--fix", "tp=\u0668"], "expected an integer"),  # an Arabic-Indic eight
    (["estimate", M, C, "--tp", "\u0668", "--mbs", "1"], "expected an integer"),
    (["suggest", M, C, "--what-if-grid", "network=0.5,1", "--what-if-grid", "hbm=0.5,1"], "given twice"),
    (["suggest", M, C, "--what-if-grid", "network=0.5,,1"], "an empty value between commas"),
    (["suggest", M, C, "--report", ""], "expected a file name"),
    (["size", M, "--tokens", "1e12", "--seq-length", "8192", "--plot", " "], "expected a file name"),
    (["size", M, "--tokens", "1e12", "--seq-length", "8192", "--what-if", "imbalance=2"], "routing imbalance"),
    (["calibrate", "dgx-h100", "--nccl", "examples/nccl/all_reduce_8gpu.txt", "--out", ""], "expected a file name"),
    (["calibrate", "dgx-h100", "--nccl", "examples/nccl/all_reduce_8gpu.txt", "--plot", "fit.png"], "write .svg"),
])
def test_commands_refuse_what_would_be_dropped_or_misread(capsys, argv, needle):
    one_line_error(capsys, argv, needle)


def test_calibrate_refuses_logs_of_other_hardware(capsys, tmp_path):
    """An 8-GPU NVLink all-reduce log (340 GB/s) fitted to a cluster of 4 L40S per node on 200 Gb/s
    (25 GB/s): its device lines name the H100s it ran on, and 8 ranks on one host where the cluster has 4
    GPUs per node; with neither (no GPU named, 4 ranks on each of two hosts), its rate is over twice the
    nominal network rate: not this cluster's links whichever way it is told."""
    one_line_error(capsys, ["calibrate", "l40s-4gpu-mlperf", "--nccl", "examples/nccl/all_reduce_8gpu.txt"],
                   "the run was on NVIDIA H100 80GB HBM3, but l40s-4gpu-mlperf has l40s-48gb")
    lines = open("examples/nccl/all_reduce_8gpu.txt").read().splitlines()
    log = tmp_path / "all_reduce_perf.txt"
    ranks = [i for i, line in enumerate(lines) if line.startswith("#  Rank ")]
    for k, i in enumerate(ranks):
        lines[i] = lines[i].replace("NVIDIA H100 80GB HBM3", "NVIDIA GPU").replace("node-01", f"node-0{1 + k // 4}")
    log.write_text("\n".join(lines) + "\n")
    one_line_error(capsys, ["calibrate", "l40s-4gpu-mlperf", "--nccl", str(log)],
                   "the network fit gives 340 GB/s, over 2x the nominal 25 GB/s")


@pytest.mark.parametrize("old, new, needle", [
    ("gpus_per_node: 8", "gpus_per_node: 3", "nvlink_domain_size 8 must divide gpus_per_node (3"),
    ("network_bandwidth_gbits_per_s: 400", "network_bandwidth_gbits_per_s: 400\nnetwork_busbw_gbytes_per_s: 1000",
     "1000 GB/s is over 2x the 50 GB/s of network_bandwidth_gbits_per_s"),
])
def test_a_cluster_file_that_contradicts_itself(capsys, tmp_path, old, new, needle):
    text = open(C).read()
    assert old in text
    (tmp_path / "c.yaml").write_text(text.replace(old, new))
    one_line_error(capsys, ["estimate", M, str(tmp_path / "c.yaml"), "--tp", "8", "--pp", "4", "--mbs", "1"], needle)


@pytest.mark.parametrize("edit, needle", [
    ({"seq_length": 4096}, "gives 8192 tokens per sequence, not its seq_length 4096"),
    ({"tokens_per_s": 1}, "not its seq_length 8192"),
    ({"model_spec": "x"}, "model_spec: Input should be a valid dictionary"),
    ({"nvlink_domain_size": 0}, "nvlink_domain_size"),
    ({"num_gpus": 7}, "num_gpus 7 is not the plan's tp x cp x pp x dp = 8x1x4x2"),
    ({"schema_version": "999"}, "schema_version"),
])
def test_an_edited_plan_file_is_refused_by_emit_and_compare(capsys, tmp_path, edit, needle):
    """emit and compare read PLAN.json as an input: a key that contradicts the rest (Llama 3 70B is scored
    at 8192 tokens, tp 8 x pp 4 x dp 2 = 64 GPUs) is one line, not a file written from the other keys."""
    assert main([*DENSE, "--gbs", "512", "--json"]) == 0
    plan = {**json.loads(capsys.readouterr().out), **edit}
    (tmp_path / "p.json").write_text(json.dumps(plan))
    one_line_error(capsys, ["emit", str(tmp_path / "p.json"), "--format", "megatron", "--out", str(tmp_path / "o")],
                   needle)
    if "seq_length" not in needle:  # compare reads no sequence length
        one_line_error(capsys, ["compare", str(tmp_path / "p.json"), str(tmp_path / "p.json")], needle)
    assert not (tmp_path / "o").exists()


def test_force_without_anything_to_overwrite(capsys):
    one_line_error(capsys, ["suggest", M, C, "--force"], "--force overwrites what --emit or --report write")


@pytest.mark.parametrize("extra, needle", [
    (["--bf16-layers", "1"], "--bf16-layers expects START,END integers"),
    (["--bf16-layers", "1,1"], "under bf16 every layer already is"),
])
def test_bf16_layers_are_two_ends_under_a_low_precision(capsys, extra, needle):
    one_line_error(capsys, DENSE + extra, needle)


def test_a_union_field_error_names_the_key_not_pydantic_tags(capsys, tmp_path):
    (tmp_path / "c.yaml").write_text("name: x\ngpu: [a]\nnum_gpus: 8\nnetwork_bandwidth_gbits_per_s: 400\n")
    one_line_error(capsys, ["estimate", M, str(tmp_path / "c.yaml"), "--tp", "8", "--mbs", "1"], "c.yaml: gpu: ")
    assert "constrained" not in capsys.readouterr().err


@pytest.mark.parametrize("old, new, needle", [
    ("run1,llama3-70b,64,", "run1,llama3-70b,0,", "gpus must be a positive integer"),
    # STEP: the second run's step time, whatever the cost model made it (tests/test_calibrate_synth.py)
    ("selective,true,STEP", "selective,true,inf", "step_time_s must be between 1e-06 and 1e+09 seconds"),
    ("selective,true,STEP", "selective,true,7_5.42", "step_time_s must be a number of seconds"),
    ("sequence_parallel,step_time_s", "mb,step_time_s", "unknown column: mb"),  # not read as --mbs
    ("sequence_parallel,step_time_s", "sequence_parallel,step_time_s,bogus_col", "unknown column: bogus_col"),
])
def test_step_time_rows_say_what_is_wrong_with_them(capsys, tmp_path, old, new, needle):
    text = open("examples/step_times_llama3-70b.csv").read()
    if old.endswith("STEP"):
        old = re.search(r"selective,true,[0-9.]+", text).group(0)
    assert old in text
    text = text.replace(old, new, 1)
    if "bogus" in new:  # every row gets a value in the new column
        text = "\n".join(line + ",1" if line and line[0].isalnum() and not line.startswith("name") else line
                         for line in text.splitlines())
    (tmp_path / "s.csv").write_text(text)
    one_line_error(capsys, ["calibrate", "dgx-h100", "--step-times", str(tmp_path / "s.csv")], needle)


def test_a_fit_on_fewer_rows_than_constants_is_flagged(capsys, tmp_path):
    """Eight shared constants on one row can match it exactly (the audit saw 'MAPE 0.0%'): the output
    stands, with a warning that it says little."""
    import yaml

    rows = yaml.safe_load(open("validation/runs.yaml"))
    (tmp_path / "one.yaml").write_text(yaml.safe_dump([r for r in rows if not r.get("exclude")][:1]))
    assert main(["validate", "--runs", str(tmp_path / "one.yaml"), "--fit-on", "all", "--json", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "1 row(s) for 8 shared constants: the fit can match them exactly" in err


@pytest.mark.parametrize("value", [True, "7_5.42", 10 ** 400, "1e400", "١٢", 0, None, [75.42]])
def test_a_step_time_must_be_a_plain_number_of_seconds(value):
    """A YAML `true` was read as 1 s and fitted; '7_5.42' as 75.42 s; a 400-digit integer crashed."""
    from planner.errors import PlannerError
    from planner.inputs.step_times import seconds_of

    with pytest.raises(PlannerError, match="step_time_s must be" if value is not None else "step_time_s is missing"):
        seconds_of({"step_time_s": value})
    assert seconds_of({"step_time_s": "75.42"}) == seconds_of({"step_time_s": 75.42}) == 75.42
