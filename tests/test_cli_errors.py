"""Bad inputs give one clear line on stderr and exit code 2, never a traceback."""
import pytest

from planner.commands.main import main

MODEL = """name: tiny
num_layers: 4
hidden_size: 512
num_attention_heads: 8
vocab_size: 32000
seq_length: 1024
global_batch_size: 16
"""
CLUSTER = """name: box
gpu: a100-sxm-80gb
num_gpus: 8
gpus_per_node: 8
network_bandwidth_gbits_per_s: 200
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "m.yaml").write_text(MODEL)
    (tmp_path / "c.yaml").write_text(CLUSTER)
    return tmp_path


def assert_one_line_error(code, err, *needles):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_good_inputs_work(files, capsys):
    import json

    code, out, err = run(capsys, "estimate", str(files / "m.yaml"), str(files / "c.yaml"), "--json")
    assert code == 0 and '"step_time_s"' in out and err == ""
    d = json.loads(out)
    p, step = d["plan"], d["step_time_s"]
    # By hand: 8 GPUs of plain DP, 16 sequences -> micro-batch 1 and 2 accumulation steps.
    assert (p["tp"], p["pp"], p["dp"], p["micro_batch_size"], p["grad_accum_steps"]) == (1, 1, 8, 1, 2)
    # Korthikanti et al. 2022 eq. 7: 72 B L s h^2 (1 + s/6h + V/12hL) model FLOPs per step; A100 bf16 312 TFLOP/s.
    flops = 72 * 16 * 4 * 1024 * 512**2 * (1 + 1024 / (6 * 512) + 32000 / (12 * 512 * 4))
    assert d["model_tflops_per_gpu"] * 1e12 == pytest.approx(flops / step / 8)
    assert d["mfu"] == pytest.approx(flops / step / (8 * 312e12))
    assert d["tokens_per_s"] == pytest.approx(16 * 1024 / step)
    # ZeRO paper Sec 3.1 (ZeRO 0): 2 B weights + 2 B gradients + 12 B Adam states per parameter, for
    # N = 4 x (12 h^2 + 2 h norms) + 2 V h (untied) + h = 4 x 3,146,752 + 32,768,000 + 512 = 45,355,520.
    n = 45_355_520
    mem = d["memory_breakdown_bytes"]
    assert (mem["parameters"], mem["gradients"], mem["optimizer_states"]) == (2 * n, 2 * n, 12 * n)
    assert d["memory_capacity_bytes"] == 80 * 2**30 and d["fits"]


def test_missing_file(files, capsys):
    code, _, err = run(capsys, "estimate", str(files / "nope.yaml"), str(files / "c.yaml"))
    assert_one_line_error(code, err, "nope.yaml", "no such file")


def test_malformed_yaml(files, capsys):
    (files / "bad.yaml").write_text("name: x\nnum_layers: [1, 2\n")
    code, _, err = run(capsys, "estimate", str(files / "bad.yaml"), str(files / "c.yaml"))
    assert_one_line_error(code, err, "bad.yaml", "not valid YAML", "line")


def test_unknown_key_is_named(files, capsys):
    (files / "m2.yaml").write_text(MODEL + "hidden_sise: 12\n")
    code, _, err = run(capsys, "estimate", str(files / "m2.yaml"), str(files / "c.yaml"))
    assert_one_line_error(code, err, "hidden_sise", "unknown key")


def test_negative_size_is_named(files, capsys):
    (files / "m3.yaml").write_text(MODEL.replace("num_layers: 4", "num_layers: -4"))
    code, _, err = run(capsys, "estimate", str(files / "m3.yaml"), str(files / "c.yaml"))
    assert_one_line_error(code, err, "num_layers", "greater than or equal to 1")


def test_missing_required_key_is_named(files, capsys):
    (files / "m4.yaml").write_text(MODEL.replace("vocab_size: 32000\n", ""))
    code, _, err = run(capsys, "estimate", str(files / "m4.yaml"), str(files / "c.yaml"))
    assert_one_line_error(code, err, "vocab_size", "required")


def test_unknown_gpu_suggests_close_names(files, capsys):
    (files / "c2.yaml").write_text(CLUSTER.replace("a100-sxm-80gb", "h100-sxm-80g"))
    code, _, err = run(capsys, "estimate", str(files / "m.yaml"), str(files / "c2.yaml"))
    assert_one_line_error(code, err, "unknown GPU 'h100-sxm-80g'", "did you mean", "h100-sxm-80gb")


def test_a_gpu_name_given_as_the_cluster_names_its_clusters(files, capsys):
    # catalogs/clusters.yaml: dgx-b300 is the one cluster of b300-sxm-270gb
    code, _, err = run(capsys, "estimate", str(files / "m.yaml"), "b300-sxm-270gb")
    assert_one_line_error(code, err, "'b300-sxm-270gb' is a GPU, not a cluster", "dgx-b300")


def test_unknown_catalog_model(files, capsys):
    code, _, err = run(capsys, "estimate", "llama3-7Ob", str(files / "c.yaml"))
    assert_one_line_error(code, err, "unknown model")


@pytest.mark.parametrize("flags,needle", [
    (["--tp", "3"], "does not divide the GPU count"),
    (["--tp", "8", "--dp", "2"], "must equal the GPU count 8"),
    (["--tp", "8", "--dp", "1", "--gbs", "16"], ""),
    (["--pp", "8", "--dp", "1"], "num_layers (4) must be >= pp*vpp"),
    (["--gbs", "12"], "global batch (12) must be divisible"),
    (["--sequence-parallel"], "sequence parallel needs tp > 1"),
])
def test_illegal_plans_name_the_rule(files, capsys, flags, needle):
    code, out, err = run(capsys, "estimate", str(files / "m.yaml"), str(files / "c.yaml"), *flags)
    if not needle:  # a legal control case
        assert code == 0, err
        return
    assert_one_line_error(code, err, needle)


def test_heads_not_divisible_by_tp(files, capsys):
    (files / "c8.yaml").write_text(CLUSTER.replace("num_gpus: 8", "num_gpus: 16"))
    (files / "m6.yaml").write_text(MODEL.replace("num_attention_heads: 8", "num_attention_heads: 4").replace(
        "hidden_size: 512", "hidden_size: 512"))
    code, _, err = run(capsys, "estimate", str(files / "m6.yaml"), str(files / "c8.yaml"), "--tp", "8")
    assert_one_line_error(code, err, "attention heads (4) must be divisible by tp (8)")


def test_bad_flag_value_is_a_one_line_usage_error(files, capsys):
    """A usage error returns 2 from main() (no SystemExit), with argparse's own reason on one line."""
    code = main(["estimate", str(files / "m.yaml"), str(files / "c.yaml"), "--zero", "5"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "argument --zero: must be between 0 and 3, got 5" in err and err.startswith("planner: error: estimate: ")


def test_inline_gpu_mapping_in_a_cluster(files, capsys):
    import json

    (files / "c3.yaml").write_text("""name: mine
gpu:
  name: my-gpu
  generation: hopper
  memory_gib: 96
  dense_tflops: {bf16: 800}
  hbm_bandwidth_gbytes_per_s: 3000
  nvlink_bandwidth_gbytes_per_s: 450
num_gpus: 8
network_bandwidth_gbits_per_s: 400
""")
    code, out, err = run(capsys, "estimate", str(files / "m.yaml"), str(files / "c3.yaml"), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["gpu"] == "my-gpu" and d["memory_capacity_bytes"] == 96 * 2**30


def test_inline_gpu_with_a_bad_field_is_named(files, capsys):
    (files / "c4.yaml").write_text(CLUSTER.replace("gpu: a100-sxm-80gb", "gpu: {name: g, generation: hopper, "
                                                   "memory_gib: -1, dense_tflops: {bf16: 1}, hbm_bandwidth_gbytes_per_s: 1}"))
    code, _, err = run(capsys, "estimate", str(files / "m.yaml"), str(files / "c4.yaml"))
    assert_one_line_error(code, err, "memory_gib")


@pytest.mark.parametrize("extra, needle", [
    ("  derived_attention_bf16_tflops: {forward: 500}",
     "derived_attention_bf16_tflops needs both forward and backward"),
    ("  power_limit_watts: 500", "power_limit_watts needs tdp_watts"),
])
def test_an_inline_gpus_own_check_is_the_message(capsys, files, extra, needle):
    """A cluster's `gpu` is a catalog name or a mapping: given a mapping that fails its own check, the line
    says that check, not the name alternative's "should be a valid string", and without pydantic's prefix."""
    (files / "c.yaml").write_text(CLUSTER.replace("gpu: a100-sxm-80gb", "gpu:\n  name: g\n  generation: blackwell\n"
                                                  "  memory_gib: 80\n  dense_tflops: {bf16: 1000}\n"
                                                  f"  hbm_bandwidth_gbytes_per_s: 3000\n{extra}"))
    code, _, err = run(capsys, "estimate", str(files / "m.yaml"), str(files / "c.yaml"))
    assert_one_line_error(code, err, f"gpu: {needle}")
    assert "valid string" not in err and "Value error" not in err
