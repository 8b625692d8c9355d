"""Collective communication times under the alpha-beta model, flat and hierarchical.

Source: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
MPICH" (IJHPCA 2005): ring ReduceScatter / AllGather move (n-1)/n of the buffer through each link
in n-1 latency steps; ring AllReduce = ReduceScatter + AllGather, 2 (n-1)/n of the buffer. These
are the same factors nccl-tests uses for "bus bandwidth" (NVIDIA nccl-tests doc/PERFORMANCE.md),
so a measured busbw is the `bandwidth` argument below. The seed article's estimate
t = 2 * bytes * (N-1) / (N * bandwidth) is `ring_allreduce_seconds` with zero latency.

Hierarchical collectives (NCCL's tree/NVLS-SHARP aside) follow the 2D scheme of Jia et al.
("Highly Scalable Deep Learning Training System with Mixed-Precision", 2018) and Horovod's
hierarchical allreduce: reduce-scatter inside the fast domain, allreduce the 1/k shard across
domains (each of the k GPUs on its own NIC rail), all-gather inside the domain.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    """One link tier as seen by one GPU: achievable bandwidth (one direction) and latency per step."""

    bandwidth_bytes_per_second: float
    latency_seconds: float


def ring_transfer_seconds(size_bytes: float, ranks: int, bandwidth_bytes_per_second: float) -> float:
    """Bandwidth term of a ring ReduceScatter/AllGather: (n-1)/n of the buffer through each link (Thakur et al.
    2005, the module's source)."""
    return size_bytes * (ranks - 1) / ranks / bandwidth_bytes_per_second


def ring_reduce_scatter_seconds(size_bytes: float, ranks: int, link: Link) -> float:
    """Ring ReduceScatter of a `size_bytes` buffer (the full, unsharded size) over `ranks` GPUs."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    transfer_seconds = ring_transfer_seconds(size_bytes, ranks, link.bandwidth_bytes_per_second)
    return (ranks - 1) * link.latency_seconds + transfer_seconds


def ring_allgather_seconds(size_bytes: float, ranks: int, link: Link) -> float:
    """Ring AllGather producing a `size_bytes` buffer on every rank; same cost as ReduceScatter."""
    return ring_reduce_scatter_seconds(size_bytes, ranks, link)


def ring_allreduce_seconds(size_bytes: float, ranks: int, link: Link) -> float:
    """Ring AllReduce = ReduceScatter + AllGather (Thakur et al. 2005): 2 (n-1)/n * size / bandwidth
    + 2 (n-1) * latency."""
    return 2.0 * ring_reduce_scatter_seconds(size_bytes, ranks, link)


def p2p_seconds(size_bytes: float, link: Link) -> float:
    """One point-to-point send of `size_bytes` (pipeline activations or their gradients)."""
    if size_bytes <= 0:
        return 0.0
    return link.latency_seconds + size_bytes / link.bandwidth_bytes_per_second


def _split(ranks: int, ranks_per_domain: int) -> tuple[int, int]:
    inner = max(1, min(ranks, ranks_per_domain))
    assert ranks % inner == 0, "group must tile whole domains"
    return inner, ranks // inner


def hierarchical_reduce_scatter_seconds(
    size_bytes: float, ranks: int, ranks_per_domain: int, fast: Link, slow: Link
) -> float:
    """ReduceScatter over `ranks` GPUs, `ranks_per_domain` of them in each fast (NVLink) domain.

    Bandwidth: inside the domain a ring RS of the whole buffer on `fast`; across domains a ring RS
    of the 1/k shard on `slow`, the k GPUs of a domain working in parallel on their own rails.
    Latency: NCCL's rings span every rank, so a ring collective takes ranks - 1 steps, of which
    one per extra domain crosses the network (NCCL src/graph/tuning.cc, ncclTopoTuneModel: nsteps
    = nRanks - 1, nInterSteps = nNodes - 1, latency = (nsteps - nInterSteps) * intraLat +
    nInterSteps * interLat).
    """
    inner, outer = _split(ranks, ranks_per_domain)
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    bandwidth = (ring_transfer_seconds(size_bytes, inner, fast.bandwidth_bytes_per_second)
                 + ring_transfer_seconds(size_bytes / inner, outer, slow.bandwidth_bytes_per_second))
    return bandwidth + ring_latency_seconds(ranks, outer, fast, slow)


def ring_latency_seconds(ranks: int, domains: int, fast: Link, slow: Link) -> float:
    """Latency of one ring ReduceScatter/AllGather over `ranks` GPUs in `domains` NVLink domains:
    ranks - domains steps on `fast`, domains - 1 on `slow` (see hierarchical_reduce_scatter_seconds)."""
    return (ranks - domains) * fast.latency_seconds + (domains - 1) * slow.latency_seconds


def hierarchical_allgather_seconds(
    size_bytes: float, ranks: int, ranks_per_domain: int, fast: Link, slow: Link
) -> float:
    """AllGather, the mirror image of `hierarchical_reduce_scatter_seconds` (same cost)."""
    return hierarchical_reduce_scatter_seconds(size_bytes, ranks, ranks_per_domain, fast, slow)


def hierarchical_allreduce_seconds(
    size_bytes: float, ranks: int, ranks_per_domain: int, fast: Link, slow: Link
) -> float:
    """AllReduce = hierarchical ReduceScatter + AllGather (2D ring, Jia et al. 2018)."""
    return 2.0 * hierarchical_reduce_scatter_seconds(size_bytes, ranks, ranks_per_domain, fast, slow)


def alltoall_seconds(size_bytes: float, ranks: int, ranks_per_domain: int, fast: Link, slow: Link) -> float:
    """All-to-all in which each of `ranks` GPUs holds a `size_bytes` buffer and sends 1/ranks of it to
    every other rank (MoE token dispatch, Ulysses head exchange). NCCL runs it as concurrent
    point-to-point sends to every peer (nccl-tests alltoall; its busbw counts (n-1)/n of the
    buffer): the (r-1)/n share for peers in the GPU's own domain goes over `fast`, the (n-r)/n share
    for the others over its own NIC on `slow`, both at once, so the slower of the two sets the time,
    plus one step's latency on each tier it uses."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    inner = max(1, min(ranks, ranks_per_domain))
    near_seconds = size_bytes * (inner - 1) / ranks / fast.bandwidth_bytes_per_second
    far_seconds = size_bytes * (ranks - inner) / ranks / slow.bandwidth_bytes_per_second
    latency_seconds = (fast.latency_seconds if inner > 1 else 0.0) + (slow.latency_seconds if ranks > inner else 0.0)
    return max(near_seconds, far_seconds) + latency_seconds
