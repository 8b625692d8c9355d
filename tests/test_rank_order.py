"""How ranks are numbered (costmodel Plan.rank_order): Megatron-LM's default tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with
--use-tp-pp-dp-mapping, which NVIDIA's MLPerf GB200 configs set (TP_PP_DP_MAPPING). Ranks per NVLink domain by hand
from the strides; the launch flag against Megatron-LM's own option table."""
from __future__ import annotations

import json
from dataclasses import replace

from costmodel import topology
from costmodel import types as cm
from costmodel.rules import plan_violations
from planner.commands.main import main
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.loading import load_cluster_spec

# 5,120 GB200 in NVL72 racks: 4 GPUs a tray, 16 trays (64 GPUs) of each rack's 18 used (topology.job_domain_size).
RACKS = load_cluster_spec("gb200-nvl72").to_cluster(resolve_gpu("gb200"), 5120)
# NVIDIA's MLPerf v5.1 Llama 3.1 405B layout on it: tp 4, cp 2, pp 8, dp 80.
MLPERF = cm.Plan(tp=4, pp=8, dp=80, cp=2, vpp=8, micro_batch_size=1, global_batch_size=1280)


def test_default_order_keeps_data_parallel_neighbours_in_a_rack():
    """dp x cp = 160 ranks of stride tp = 4: a 64-GPU domain holds 64 / 4 = 16 of them (gcd(160, 16)); the pipeline's
    stages are tp x cp x dp = 640 GPUs apart, so its neighbours are in different racks."""
    assert topology.domain_size(RACKS) == 64
    assert topology.dp_ranks_per_domain(MLPERF, RACKS) == 16
    assert not topology.pp_neighbours_share_domain(MLPERF, RACKS)


def test_tp_pp_dp_order_puts_a_replica_in_a_rack():
    """tp x cp x pp = 64 consecutive GPUs, one replica a rack: the stages exchange inside it, and the gradient-sync
    group keeps only the 2 CP ranks (stride 4) in a rack, its DP ranks being 64 GPUs apart."""
    plan = replace(MLPERF, rank_order="tp-cp-pp-dp")
    assert topology.dp_ranks_per_domain(plan, RACKS) == 2
    assert topology.pp_neighbours_share_domain(plan, RACKS)


def test_a_replica_straddling_racks_shares_none():
    """tp 4 x cp 2 x pp 16 = 128 GPUs: two racks a replica, so some stage boundaries cross the network."""
    plan = replace(MLPERF, pp=16, dp=40, rank_order="tp-cp-pp-dp")
    assert not topology.pp_neighbours_share_domain(plan, RACKS)


def test_strides_that_do_not_divide_the_rack_are_counted():
    """tp 1, cp 2, pp 8, dp 9 on 144 GB200 (two racks of 72): a group is the ranks c + 2p + 16d of one p (c < 2,
    d < 9). For p = 0 the first rack (ranks < 72) holds d = 0..4, 10 ranks, the second d = 5..8, 8; for p = 7
    (c + 14 + 16d) the first holds d = 0..3, 8 ranks. The fewest: 8."""
    racks = load_cluster_spec("gb200-nvl72").to_cluster(resolve_gpu("gb200"), 144)
    plan = cm.Plan(tp=1, pp=8, dp=9, cp=2, micro_batch_size=1, global_batch_size=72, rank_order="tp-cp-pp-dp")
    assert topology.domain_size(racks) == 72
    assert topology.dp_ranks_per_domain(plan, racks) == 8


def test_with_one_stage_both_orders_place_every_rank_alike():
    """tp 8, cp 2, pp 1, dp 36 on 576 GB200 (eight racks of 72): the 72 sync ranks of stride 8 span 576 GPUs, 72 / 8 =
    9 to a rack, in either order."""
    racks = load_cluster_spec("gb200-nvl72").to_cluster(resolve_gpu("gb200"), 576)
    for order in cm.RANK_ORDERS:
        plan = cm.Plan(tp=8, pp=1, dp=36, cp=2, micro_batch_size=1, global_batch_size=36, rank_order=order)
        assert topology.dp_ranks_per_domain(plan, racks) == 9


def test_on_eight_gpu_nodes_with_tp_8_the_order_changes_nothing():
    """tp 8 fills a DGX node: every other group crosses nodes in either order (one rank a node)."""
    dgx = load_cluster_spec("dgx-h100").to_cluster(resolve_gpu("h100-sxm-80gb"), 512)
    for order in cm.RANK_ORDERS:
        plan = cm.Plan(tp=8, pp=8, dp=4, cp=2, vpp=8, micro_batch_size=1, global_batch_size=1152, rank_order=order)
        assert topology.dp_ranks_per_domain(plan, dgx) == 1
        assert not topology.pp_neighbours_share_domain(plan, dgx)


def test_the_cost_model_refuses_what_it_does_not_model():
    model = cm.Model(name="moe", num_layers=4, hidden_size=1024, num_attention_heads=16, ffn_hidden_size=4096,
                     vocab_size=32000, seq_length=2048, moe=cm.Moe(num_experts=8, experts_per_token=2,
                                                                   ffn_hidden_size=1024))
    plan = cm.Plan(tp=1, pp=2, dp=8, ep=8, micro_batch_size=1, global_batch_size=64, rank_order="tp-cp-pp-dp")
    cluster = replace(RACKS, num_gpus=16)
    for ep in (8, 1):  # the experts' groups, expert-DP among them, are laid out in the default order only
        assert any("rank_order tp-cp-pp-dp for a mixture-of-experts model" in v
                   for v in plan_violations(model, cluster, replace(plan, ep=ep)))
    assert any("rank_order must be one of" in v
               for v in plan_violations(model, cluster, replace(plan, ep=1, rank_order="pp-dp-tp")))


def test_estimate_prices_the_sync_across_racks_and_megatron_writes_the_flag(capsys, tmp_path):
    """On 512 GB200 (eight racks) with tp 4, cp 2, pp 8, dp 8: the gradient-sync group (dp x cp = 16 ranks, stride
    4) spans 64 GPUs, one rack, in the default order, so its sync runs on NVLink; in the other it keeps 2 ranks a
    rack and crosses the network, and takes longer. The flag lands in Megatron-LM's launch file; torchtitan, whose
    device mesh puts pp outermost, refuses the plan."""
    base = ["estimate", "llama3-405b", "gb200-nvl72", "--gpus", "512", "--gbs", "1152", "--seq-length", "8192",
            "--precision", "nvfp4", "--tp", "4", "--pp", "8", "--cp", "2", "--vpp", "8", "--mbs", "1", "--zero", "1",
            "--sequence-parallel", "--json"]
    assert main(base) == 0
    default = json.loads(capsys.readouterr().out)
    assert main([*base, "--rank-order", "tp-cp-pp-dp"]) == 0
    mapped = json.loads(capsys.readouterr().out)
    assert (default["plan"]["rank_order"], mapped["plan"]["rank_order"]) == ("tp-cp-dp-pp", "tp-cp-pp-dp")
    assert mapped["time_breakdown_s"]["dp_comm"] > 3 * default["time_breakdown_s"]["dp_comm"]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(mapped))
    assert main(["emit", str(plan_file), "--format", "megatron", "--out", str(tmp_path / "m")]) == 0
    launch = (tmp_path / "m" / "megatron" / "launch.sh").read_text()
    # with cp 2 and pp 8 Megatron asserts etp x ep = tp x cp for the dense model's experts' grid too; NVIDIA's MLPerf
    # pretrain.py sets etp = tp * cp // ep = 8
    assert "--use-tp-pp-dp-mapping" in launch and "--expert-tensor-parallel-size 8" in launch
    capsys.readouterr()
    assert main(["emit", str(plan_file), "--format", "torchtitan", "--out", str(tmp_path / "t")]) == 2
    assert "rank order" in capsys.readouterr().err


def test_replicas_that_do_not_tile_a_rack_split_the_sync_evenly(capsys):
    """tp 4 x pp 4 replicas of 16 GPUs, dp 9, on 144 GPUs of NVL72 racks (domain 72) in the tp-cp-pp-dp order:
    the sync group of one (t, p) is ranks t + 4p + 16d, d = 0..8. Rack 0 (ranks 0..71) holds d <= 3 or d <= 4
    of them (t + 4p = 15: 15, 31, 47, 63; t + 4p = 0: 0 .. 64), so the fewest members in a rack is 4 (a placement
    fact, as Megatron-LM's groups give it: tests/test_rank_groups.py), which does not divide 9; the two-level
    collective is priced with 3 per rack, the even split no rack is short of (topology.even_split). estimate
    used to stop on an assertion there (an audit)."""
    assert topology.pp_last_dp_ranks_per_domain(4, 1, 4, 9, 72) == 4
    assert (topology.even_split(4, 9), topology.even_split(8, 18), topology.even_split(8, 16)) == (3, 6, 8)
    assert topology.even_split(16, 9) == 9 and topology.even_split(1, 7) == 1
    code = main(["estimate", "llama3-8b", "gb200-nvl72", "--gpus", "144", "--tp", "4", "--pp", "4",
                 "--rank-order", "tp-cp-pp-dp", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["step_time_s"] > 0
