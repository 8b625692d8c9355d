"""A job uses its NVLink domains in equal blocks of whole nodes (costmodel/topology.py job_domain_size).

On GB200/GB300 NVL72 racks (72 GPUs, 4 per tray) NVIDIA's Megatron-Bridge benchmarks run power-of-two
jobs 64 GPUs a rack (Slurm segments of 16 trays; validation/runs.yaml, nvlink_domain_size 64), so a
64-rank expert-parallel group of a 256-GPU job is one rack's NVLink, not 8 ranks a domain as consecutive
72-GPU domains would give (gcd(64, 72) = 8).
"""
import pytest

from costmodel.step import warnings_for
from costmodel.topology import domain_size, ep_ranks_per_domain, job_domain_size
from planner.inputs.catalogs import cluster_catalog, resolve_gpu
from planner.inputs.plans import build_plan
from planner.inputs.specs import PlanSpec


@pytest.mark.parametrize("gpus, domain, node, used", [
    (256, 72, 4, 64),  # 4 racks of 64: 64 | 256, 68 and 72 do not divide it
    (128, 72, 4, 64), (512, 72, 4, 64),
    (72, 72, 4, 72), (144, 72, 4, 72), (576, 72, 4, 72),  # whole racks
    (200, 72, 4, 40),  # 5 racks of 40 (10 trays)
    (48, 72, 4, 72),  # fewer GPUs than a domain: one domain
    (1024, 8, 8, 8), (12, 8, 8, 8),  # DGX/HGX: the node is the domain, unchanged
    (16, 2, 8, 2),  # NVLink-bridge pairs inside 8-GPU nodes
])
def test_job_domain_size_by_hand(gpus, domain, node, used):
    assert job_domain_size(gpus, domain, node) == used


def resolve_cluster(name, gpus):
    spec = cluster_catalog()[name]
    return spec.to_cluster(resolve_gpu(spec.gpu), gpus)


def test_a_64_rank_ep_group_of_256_gb200_stays_on_one_rack():
    cluster = resolve_cluster("gb200-nvl72", 256)
    plan = build_plan(PlanSpec(tp=1, pp=1, dp=256, ep=64, micro_batch_size=1, global_batch_size=256), None, 256)
    assert domain_size(cluster) == 64 and ep_ranks_per_domain(plan, cluster) == 64
    assert warnings_for(cluster, plan) == (
        "256 GPUs run as 4 NVLink domains of 64 of their 72 GPUs: place 16 nodes in each "
        "(topology.job_domain_size)",)
    whole = resolve_cluster("gb200-nvl72", 144)
    assert domain_size(whole) == 72 and warnings_for(whole, build_plan(
        PlanSpec(tp=1, pp=1, dp=144, micro_batch_size=1, global_batch_size=144), None, 144)) == ()


def test_emitted_readme_says_how_to_place_the_job(tmp_path):
    from planner.commands.main import main
    out = tmp_path / "out"
    assert main(["suggest", "qwen3-30b-a3b", "gb200-nvl72", "--gpus", "256", "--gbs", "1024", "--top", "1",
                 "--emit", "megatron", "--out", str(out)]) == 0
    assert "place 16 nodes in each" in (out / "README.txt").read_text()
