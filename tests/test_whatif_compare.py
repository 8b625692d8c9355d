"""What-if assumptions and plan comparison."""
import json

import pytest

from planner import explain, whatif
from planner.cli import main
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


def test_lower_matmul_efficiency_slows_compute(capsys):
    d = estimate_json(capsys, *SEED, "--what-if", "matmul_efficiency=0.5")
    assert d["what_if"]["estimate"]["time_breakdown_s"]["compute"] > 1.6 * d["time_breakdown_s"]["compute"]


@pytest.mark.parametrize("bad", ["network", "network=abc", "network=-1", "speed=2", "rdma=maybe"])
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
    part, fast_s, slow_s = explain.biggest_part_gap(faster, slower)
    assert slow_s > fast_s and explain.PART_WORDS[part] in out["why"]
    assert "tp " in out["why"] and "pp " in out["why"]
