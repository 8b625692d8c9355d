"""Where each parallel group's traffic runs: NVLink domain or network, and how many ranks per domain.

Rank order is Megatron-LM's default (TP innermost, then DP, then PP; `RankGenerator` order
"tp-cp-ep-dp-pp"): a TP group is `tp` consecutive GPUs, a DP group has stride `tp`, a PP group
stride `tp*dp`. An NVLink domain is `nvlink_domain_size` consecutive GPUs (8 on DGX/HGX,
72 on GB200 NVL72, 2 for PCIe NVLink-bridge pairs, 1 with no NVLink at all).
"""
from __future__ import annotations

from math import gcd

from .comm import Link
from .types import Cluster, Efficiency, Plan


def nvlink_link(cluster: Cluster, eff: Efficiency) -> Link:
    """Achievable NVLink tier: measured bus bandwidth if the cluster has one, else nominal
    per-direction bandwidth times NCCL's reachable fraction."""
    if cluster.nvlink_bandwidth_bytes_per_second <= 0:
        return network_link(cluster, eff)
    bw = cluster.nvlink_busbw_bytes_per_second or cluster.nvlink_bandwidth_bytes_per_second * eff.nvlink_efficiency
    return Link(bw, cluster.nvlink_latency_seconds or eff.nvlink_latency_seconds)


def network_link(cluster: Cluster, eff: Efficiency) -> Link:
    """Achievable network tier per GPU (one NIC rail each): measured bus bandwidth if given, else
    nominal times efficiency; without RDMA, times `no_rdma_bandwidth_factor` (measured figures
    already include it)."""
    bw = cluster.network_busbw_bytes_per_second
    if not bw:
        bw = cluster.network_bandwidth_bytes_per_second * eff.network_efficiency
        if not cluster.rdma:
            bw *= eff.no_rdma_bandwidth_factor
    return Link(bw, cluster.network_latency_seconds or eff.network_latency_seconds)


def domain_size(cluster: Cluster) -> int:
    """GPUs sharing one NVLink domain; 1 when the GPU has no NVLink."""
    if cluster.nvlink_bandwidth_bytes_per_second <= 0:
        return 1
    return max(1, cluster.nvlink_domain_size)


def tp_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """TP ranks that share a domain: all of them when tp divides the domain size."""
    return gcd(plan.tp, domain_size(cluster))


def tp_crosses_network(plan: Plan, cluster: Cluster) -> bool:
    """True when a TP group does not fit inside one NVLink domain (reported, priced at network speed)."""
    return tp_ranks_per_domain(plan, cluster) < plan.tp


def dp_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """DP ranks (stride tp) that land in the same NVLink domain."""
    d = domain_size(cluster)
    if plan.tp >= d:
        return 1
    return gcd(plan.dp, d // plan.tp)


def pp_neighbours_share_domain(plan: Plan, cluster: Cluster) -> bool:
    """True when every pipeline boundary stays inside an NVLink domain (whole pipeline in one domain)."""
    return plan.tp * plan.dp * plan.pp <= domain_size(cluster)
