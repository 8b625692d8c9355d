"""costmodel/topology.py against Megatron-LM's own process groups (tests/tools/megatron_groups.py, run by hand
with Megatron-LM d98e8a64's RankGenerator, as initialize_model_parallel builds the dense and the folded expert
grids): for each layout and its job's NVLink domain, the fewest ranks of a TP, CP, gradient-sync (dp x cp), EP
and expert-DP group that share one domain, and whether every pipeline neighbour pair does."""
from __future__ import annotations

import json

import pytest
from emit_support import DATA

from costmodel import topology
from costmodel import types as cm
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.loading import load_cluster_spec

GROUPS = json.loads((DATA / "megatron" / "rank_groups.json").read_text())


def cluster_of(world: int, domain: int) -> cm.Cluster:
    """DGX H100 nodes for a domain of 8; GB200 NVL72 racks (64 of 72 GPUs used by a power-of-two job) else."""
    name, gpu = ("dgx-h100", "h100-sxm-80gb") if domain == 8 else ("gb200-nvl72", "gb200")
    return load_cluster_spec(name).to_cluster(resolve_gpu(gpu), world)


@pytest.mark.parametrize("cid", sorted(GROUPS))
def test_topology_places_groups_as_megatron_does(cid):
    lay, megatron = GROUPS[cid]["layout"], GROUPS[cid]["megatron"]
    cluster = cluster_of(lay["world"], lay["domain"])
    assert topology.domain_size(cluster) == lay["domain"]
    plan = cm.Plan(tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], cp=lay["cp"], ep=lay["ep"], etp=lay["etp"],
                   micro_batch_size=1, global_batch_size=lay["dp"],
                   rank_order=lay["order"].replace("-ep", ""))
    assert topology.tp_ranks_per_domain(plan, cluster) == megatron["tp"]
    assert topology.cp_ranks_per_domain(plan, cluster) == megatron["cp"]
    assert topology.dp_ranks_per_domain(plan, cluster) == megatron["dp_cp"]
    if lay["pp"] > 1:  # (with one stage there is no neighbour to send to)
        assert topology.pp_neighbours_share_domain(plan, cluster) == megatron["pp_neighbours_share_domain"]
    if lay["ep"] > 1:  # the expert grid matters to MoE layouts only (and takes the default order only)
        assert topology.ep_ranks_per_domain(plan, cluster) == megatron["ep"]
        assert topology.expert_dp_ranks_per_domain(plan, cluster) == megatron["expert_dp"]
