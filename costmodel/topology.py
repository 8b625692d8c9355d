"""Where each parallel group's traffic runs: NVLink domain or network, and how many ranks per domain.

Rank order is Megatron-LM's default (`RankGenerator` order "tp-cp-ep-dp-pp"): a TP group is `tp`
consecutive GPUs, a CP group has stride `tp`, a DP group stride `tp*cp`, a PP group stride
`tp*cp*dp`. With Plan.rank_order "tp-cp-pp-dp" (Megatron-LM --use-tp-pp-dp-mapping, order
"tp-cp-ep-pp-dp" in megatron/training/initialize.py) a PP group has stride `tp*cp` and a DP group
`tp*cp*pp`: a whole replica sits in consecutive GPUs, so on NVL72 racks the stages exchange over
NVLink and the gradient sync crosses the network (NVIDIA's MLPerf GB200 configs, TP_PP_DP_MAPPING).
The experts fold (default order only: rules.py refuses the other for MoE models) over the same tp*cp*dp
ranks of a stage as etp, ep, expert-DP (etp
innermost; megatron/core/parallel_state.py, expert RankGenerator "tp-ep-dp-pp" with tp = etp).
An NVLink domain is `nvlink_domain_size` consecutive GPUs (8 on DGX/HGX,
72 on GB200 NVL72, 2 for PCIe NVLink-bridge pairs, 1 with no NVLink at all), of which a job uses equal
blocks of whole nodes (job_domain_size: 64 of an NVL72 rack's 72 for a power-of-two job).
"""
from __future__ import annotations

from functools import lru_cache
from math import gcd

from .comm import Link
from .types import Cluster, Efficiency, Gpu, Plan


def nvlink_link(cluster: Cluster, eff: Efficiency, ranks: int = 0) -> Link:
    """Achievable NVLink tier: measured bus bandwidth if the cluster has one, else nominal
    per-direction bandwidth times NCCL's reachable fraction. On a point-to-point mesh (Gpu.
    peer_link_bytes_per_second: AMD's xGMI, one 64-76.5 GB/s link to each of 7 peers) a collective of `ranks`
    GPUs of the board runs over the (ranks - 1) links between them (RCCL rings each take one link; the 448 GB/s
    aggregate is reached only by all 8: AMD's MI300X datasheet, "64 GB/s peer-to-peer, 448 GB/s all-to-all"), so
    its bandwidth is that share of the aggregate, whether the aggregate is nominal, measured for 8 GPUs (planner
    calibrate) or scaled by a what-if; `ranks` 0 (unknown) or a switched fabric keep the whole rate. A ring's step
    sends to one neighbour, so a ring of any size over the mesh takes `ranks` 2 (one link)."""
    if cluster.nvlink_bandwidth_bytes_per_second <= 0:
        return network_link(cluster, eff)
    bandwidth_bytes_per_second = (cluster.nvlink_busbw_bytes_per_second
                                  or cluster.nvlink_bandwidth_bytes_per_second * eff.nvlink_efficiency)
    # the links the group uses, of a rate nominal, measured or what-if
    bandwidth_bytes_per_second *= mesh_share(cluster.gpu, ranks)
    return Link(bandwidth_bytes_per_second, cluster.nvlink_latency_seconds or eff.nvlink_latency_seconds)


def mesh_share(gpu: Gpu, ranks: int) -> float:
    """Share of a point-to-point mesh's aggregate rate that a collective of `ranks` GPUs of the board reaches:
    min(1, (ranks - 1) peer / aggregate) (see nvlink_link); 1 on a switched fabric or with `ranks` unknown (0)."""
    peer, aggregate = gpu.peer_link_bytes_per_second, gpu.nvlink_bandwidth_bytes_per_second
    if peer > 0 and aggregate > 0 and ranks >= 2:
        return min(1.0, (ranks - 1) * peer / aggregate)
    return 1.0


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
    """GPUs of the job sharing one NVLink domain; 1 when the GPU has no NVLink (job_domain_size)."""
    if cluster.nvlink_bandwidth_bytes_per_second <= 0:
        return 1
    return job_domain_size(cluster.num_gpus, max(1, cluster.nvlink_domain_size), cluster.gpus_per_node)


@lru_cache(maxsize=1024)  # domain_size is read for every group of every plan the search scores
def job_domain_size(num_gpus: int, domain: int, gpus_per_node: int) -> int:
    """The GPUs a job uses in each NVLink domain, placed in equal blocks of whole nodes: the largest
    divisor of `num_gpus` that fits in a domain and is a multiple of min(gpus_per_node, domain); the
    domain itself when none is (a job of fewer GPUs than a domain keeps them in one).
    Equal to the domain wherever the domain is a node (DGX/HGX) or divides the job; on NVL72 racks a
    power-of-two job runs 64 GPUs a rack, 16 of its 18 trays, as NVIDIA's Megatron-Bridge GB200/GB300
    benchmarks do (Slurm segments of 16 trays, validation/runs.yaml), rather than groups straddling
    racks."""
    if num_gpus <= domain:
        return domain
    unit = max(1, min(gpus_per_node, domain))
    fits = [d for d in range(unit, domain + 1, unit) if num_gpus % d == 0]
    return fits[-1] if fits else domain


def tp_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """TP ranks that share a domain: all of them when tp divides the domain size."""
    return gcd(plan.tp, domain_size(cluster))


def tp_crosses_network(plan: Plan, cluster: Cluster) -> bool:
    """True when a TP group does not fit inside one NVLink domain (reported, priced at network speed)."""
    return tp_ranks_per_domain(plan, cluster) < plan.tp


def ranks_per_domain(size: int, stride: int, cluster: Cluster) -> int:
    """Ranks of a group of `size` GPUs spaced `stride` apart that share an NVLink domain: all of them
    when the whole job fits in one domain or the group's span divides the domain; 1 when the stride
    already reaches across it; else the share every group keeps whatever its alignment."""
    if cluster.num_gpus <= domain_size(cluster):
        return size
    return ranks_in_domain(size, stride, domain_size(cluster))


def ranks_in_domain(size: int, stride: int, domain: int) -> int:
    """ranks_per_domain for a domain of `domain` consecutive GPUs."""
    if stride >= domain:
        return 1
    return gcd(size, domain // stride)


def dp_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """Ranks of the gradient-sync group of the dense weights, dp x cp (the CP ranks of a sequence hold
    the same weights), that land in one NVLink domain: stride tp in the default order (and under
    "tp-cp-pp-dp" with pp 1, where both orders place every rank alike); else counted rank by rank
    (pp_last_dp_ranks_per_domain)."""
    if plan.rank_order == "tp-cp-dp-pp" or plan.pp == 1 or cluster.num_gpus <= domain_size(cluster):
        return ranks_per_domain(plan.dp * plan.cp, plan.tp, cluster)
    return pp_last_dp_ranks_per_domain(plan.tp, plan.cp, plan.pp, plan.dp, domain_size(cluster))


@lru_cache(maxsize=256)
def pp_last_dp_ranks_per_domain(tp: int, cp: int, pp: int, dp: int, domain: int) -> int:
    """Under "tp-cp-pp-dp" rank r = t + tp (c + cp (p + pp d)): a gradient-sync group is the ranks of one
    (t, p), its cp x dp members at strides tp and tp*cp*pp. The fewest of a group's members that share a
    domain of `domain` consecutive GPUs, over every group and domain it touches (a count, not a formula:
    the strides need not divide the domain)."""
    counts: dict[tuple[int, int, int], int] = {}
    for rank in range(tp * cp * pp * dp):
        t, p = rank % tp, (rank // (tp * cp)) % pp
        key = (t, p, rank // domain)
        counts[key] = counts.get(key, 0) + 1
    return min(counts.values())


def even_split(ranks_per_domain: int, group: int) -> int:
    """The ranks per domain a two-level collective over `group` ranks is priced with (comm.hierarchical_*,
    which splits the group into equal domain parts): `ranks_per_domain` taken down to a divisor of the group.
    Where the replicas do not tile the domains (tp-cp-pp-dp order, a 16-GPU replica in a 72-GPU NVL72 rack,
    dp 9) a group's fewest members in one domain need not divide it (4 of 9): priced as 3, the nearest even
    split that no domain is short of."""
    return max(k for k in range(1, max(1, min(ranks_per_domain, group)) + 1) if group % k == 0)


def cp_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """CP ranks (stride tp) in one NVLink domain."""
    return ranks_per_domain(plan.cp, plan.tp, cluster)


def ep_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """EP ranks (stride etp) in one NVLink domain."""
    return ranks_per_domain(plan.ep, plan.etp, cluster)


def expert_dp_ranks_per_domain(plan: Plan, cluster: Cluster) -> int:
    """Expert-DP ranks (stride etp x ep) in one NVLink domain: the experts' gradient-sync group."""
    return ranks_per_domain(plan.expert_dp, plan.etp * plan.ep, cluster)


def pp_neighbours_share_domain(plan: Plan, cluster: Cluster) -> bool:
    """True when every pipeline boundary stays inside an NVLink domain: the whole job in one domain, or
    under "tp-cp-pp-dp" each replica (tp*cp*pp consecutive GPUs) in one."""
    domain = domain_size(cluster)
    if plan.rank_order == "tp-cp-dp-pp":
        return plan.tp * plan.cp * plan.dp * plan.pp <= domain
    replica = plan.tp * plan.cp * plan.pp
    return replica <= domain and (cluster.num_gpus <= domain or domain % replica == 0)
