"""What-if assumptions and plan comparison."""
import json

import pytest

from planner.analysis import explain, whatif
from planner.commands.main import main
from planner.errors import PlannerError

SEED = ["examples/seed-7b.yaml", "examples/seed-8gpu-ib200.yaml", "--no-overlap"]


def estimate_json(capsys, *argv):
    assert main(["estimate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_half_network_doubles_a_network_bound_sync(capsys):
    d = estimate_json(capsys, *SEED, "--what-if", "network=0.5")
    base, alt = d["time_breakdown_s"]["dp_comm"], d["what_if"]["estimate"]["time_breakdown_s"]["dp_comm"]
    assert alt == pytest.approx(2 * base, rel=1e-3)  # 8 GPUs, one per node: all of it on the network
    assert d["what_if"]["estimate"]["time_breakdown_s"]["compute"] == pytest.approx(d["time_breakdown_s"]["compute"])


def test_price_what_if_is_linear(capsys):
    d = estimate_json(capsys, *SEED, "--what-if", "price.a100-sxm-80gb=3.98")
    assert d["what_if"]["estimate"]["usd_per_step"] == pytest.approx(2 * d["usd_per_step"])  # 1.99 -> 3.98


def test_rdma_false_halves_nominal_network_bandwidth(capsys):
    args = ["llama2-7b", "dgx-a100", "--gpus", "16", "--gbs", "16", "--no-overlap", "--tp", "8"]
    d = estimate_json(capsys, *args, "--what-if", "rdma=false")
    # tp 8 x dp 2: the DP all-reduce runs between the two nodes, one GPU per rail: network only.
    assert d["what_if"]["estimate"]["time_breakdown_s"]["dp_comm"] == pytest.approx(
        2 * d["time_breakdown_s"]["dp_comm"], rel=0.02)


def test_rdma_what_if_moves_a_measured_network_rate_too(tmp_path, capsys):
    """A calibrated cluster's network rate was measured with its own RDMA, so rdma=false halves it as it
    halves a nominal one (the seed article's "doubles", Efficiency.no_rdma_bandwidth_factor); it used to
    leave the step unchanged; rdma=true on a cluster measured without RDMA doubles it back."""
    import yaml

    spec = {"name": "measured", "gpu": "a100-sxm-80gb", "gpus_per_node": 8, "nvlink_domain_size": 8,
            "network_bandwidth_gbits_per_s": 200, "network_busbw_gbytes_per_s": 20.0, "rdma": True}
    path = tmp_path / "measured.yaml"
    path.write_text(yaml.safe_dump(spec))
    args = ["llama2-7b", str(path), "--gpus", "16", "--gbs", "16", "--no-overlap", "--tp", "8"]
    d = estimate_json(capsys, *args, "--what-if", "rdma=false")
    assert d["what_if"]["estimate"]["time_breakdown_s"]["dp_comm"] == pytest.approx(
        2 * d["time_breakdown_s"]["dp_comm"], rel=0.02)
    path.write_text(yaml.safe_dump({**spec, "rdma": False}))
    d = estimate_json(capsys, *args, "--what-if", "rdma=true")
    assert d["what_if"]["estimate"]["time_breakdown_s"]["dp_comm"] == pytest.approx(
        d["time_breakdown_s"]["dp_comm"] / 2, rel=0.02)


def test_lower_matmul_efficiency_slows_compute(capsys):
    d = estimate_json(capsys, *SEED, "--what-if", "matmul_efficiency=0.5")
    assert d["what_if"]["estimate"]["time_breakdown_s"]["compute"] > 1.6 * d["time_breakdown_s"]["compute"]


def test_power_cap_slows_compute_by_the_cube_root_and_leaves_comm(capsys):
    # H100 SXM at 700 W TDP capped at 350 W: tensor clock (1/2)^(1/3) = 0.794; compute-bound
    # GEMMs take at most 1/0.794 = 1.26x longer, the DP sync not at all.
    args = ["llama2-7b", "dgx-h100", "--gpus", "8", "--no-overlap"]
    d = estimate_json(capsys, *args, "--what-if", "power=350")
    base, alt = d["time_breakdown_s"], d["what_if"]["estimate"]["time_breakdown_s"]
    assert base["compute"] * 1.1 < alt["compute"] <= base["compute"] / 0.5 ** (1 / 3) * 1.0001
    assert alt["dp_comm"] == pytest.approx(base["dp_comm"])


def test_power_cap_needs_a_tdp(tmp_path, capsys):
    cluster = tmp_path / "custom.yaml"  # a GPU written inline, without tdp_watts
    cluster.write_text("name: custom\nnum_gpus: 8\ngpus_per_node: 8\nnvlink_domain_size: 8\n"
                       "network_bandwidth_gbits_per_s: 200\ngpu:\n  name: x100\n  generation: hopper\n"
                       "  memory_gib: 80\n  dense_tflops: {bf16: 900}\n  hbm_bandwidth_gbytes_per_s: 3000\n"
                       "  nvlink_bandwidth_gbytes_per_s: 450\n")
    code = main(["estimate", "llama2-7b", str(cluster), "--what-if", "power=300"])
    err = capsys.readouterr().err
    assert code == 2 and "tdp_watts" in err and len(err.strip().splitlines()) == 1


def test_estimate_flags_reach_the_json_plan_and_the_label(capsys):
    args = ["llama2-7b", "dgx-h100", "--gpus", "16", "--zero", "3", "--zero3-gather-unit", "tensor",
            "--grad-reduce", "allreduce", "--cross-entropy", "eager"]
    plan = estimate_json(capsys, *args)["plan"]
    assert (plan["zero3_gather_unit"], plan["grad_reduce"], plan["cross_entropy"]) == ("tensor", "allreduce", "eager")
    assert main(["estimate", *args]) == 0
    out = capsys.readouterr().out
    assert "per-tensor gathers" in out and "gradient all-reduce" in out and "eager fp32 loss" in out


@pytest.mark.parametrize("bad", ["network", "network=abc", "network=-1", "speed=2", "rdma=maybe", "power=-5",
                                 "power=nan", "hbm=inf"])
def test_bad_what_if_is_one_clear_error(bad):
    with pytest.raises(PlannerError):
        whatif.parse([bad])


def test_compare_names_the_winner_and_the_part(tmp_path, capsys):
    common = ["llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "512", "--vpp", "5", "--zero", "1",
              "--recompute", "selective", "--sequence-parallel"]
    a = estimate_json(capsys, *common, "--tp", "8", "--pp", "4")
    b = estimate_json(capsys, *common, "--tp", "4", "--pp", "8")
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    faster, slower = (a, b) if a["step_time_s"] < b["step_time_s"] else (b, a)
    assert out["faster"] == ("A" if faster is a else "B")
    # By hand: tp 8 x pp 4 puts 20 of the 80 layers on each GPU, tp 4 x pp 8 only 10, and each layer's
    # TP all-reduces move 2 x 7/8 vs 2 x 3/4 of the activations through a ring of 8 vs 4 GPUs: a's TP
    # traffic per GPU is (20 x 7/4) / (10 x 3/2) = 2.33x b's (more with ring latency), so B is faster and
    # the part that decides is TP communication.
    assert out["faster"] == "B"
    gaps = {k: slower["time_breakdown_s"][k] - faster["time_breakdown_s"][k] for k in explain.PART_WORDS}
    assert max(gaps, key=gaps.get) == "tp_comm"
    assert a["time_breakdown_s"]["tp_comm"] > 2.33 * b["time_breakdown_s"]["tp_comm"]
    assert "TP communication" in out["why"]
    assert "tp 4 instead of 8" in out["why"] and "pp 8 instead of 4" in out["why"]


def test_what_if_that_breaks_the_fit_is_flagged(capsys):
    # Qwen3-235B-A22B on 256 H100 at tp 2, pp 8, ep 8: 76.2 GiB as given; routing 1.3x over balance puts
    # 1.3x the routed rows' activations on the busiest rank, past 80 GiB.
    argv = ["qwen3-235b-a22b", "dgx-h100", "--gpus", "256", "--tp", "2", "--pp", "8", "--ep", "8", "--mbs", "1",
            "--gbs", "1024", "--zero", "1", "--sequence-parallel", "--what-if", "imbalance=1.3"]
    assert main(["estimate", *argv]) == 0
    out, err = capsys.readouterr()
    assert "what if imbalance=1.3: the plan does not fit" in err
    row = next(line for line in out.splitlines() if "fits in memory" in line)
    assert [c.strip() for c in row.split("│")[2:4]] == ["yes", "no"]


def test_estimate_warns_when_no_framework_runs_the_plan(capsys):
    # Megatron-LM's 1F1B A2A overlap needs pp 1 or a virtual pipeline (megatron/training/arguments.py),
    # planner's DeepSpeed launch files carry no MoE and torchtitan has no EP overlap: no framework runs it.
    argv = ["qwen3-235b-a22b", "dgx-h100", "--gpus", "256", "--tp", "2", "--pp", "8", "--ep", "8", "--mbs", "1",
            "--gbs", "1024", "--zero", "1", "--sequence-parallel"]
    assert main(["estimate", *argv, "--json"]) == 0
    assert not [w for w in json.loads(capsys.readouterr().out)["warnings"] if "no framework" in w]
    assert main(["estimate", *argv, "--ep-overlap", "--json"]) == 0
    (warning,) = [w for w in json.loads(capsys.readouterr().out)["warnings"] if "no framework" in w]
    assert "megatron: Megatron-LM's expert-parallel A2A overlap needs pp 1 or a virtual pipeline" in warning
