"""Fit a cluster's link tiers (bus bandwidth, latency per step) to nccl-tests measurements.

Model: the cost model's own collectives (costmodel.comm), alpha-beta per ring step (Hockney 1994;
Thakur, Rabenseifner & Gropp 2005): a ring collective over n ranks takes
    t = steps * alpha + S * factor / B
(all_reduce: 2(n-1) steps, factor 2(n-1)/n; reduce_scatter / all_gather: n-1, (n-1)/n;
sendrecv: 1, 1), the factors nccl-tests uses for busbw (nccl-tests doc/PERFORMANCE.md). Runs
spanning several NVLink domains follow costmodel.comm.hierarchical_*: a ring inside each domain of
k ranks on NVLink, then the 1/k shard across domains on the network, k placed as the cost model places
a job of that many GPUs (ranks_per_domain).

Every model time is linear in (alpha, 1/B) of each tier, so the regressors of a row are read off
the cost model itself by evaluating it with unit links (latency 1 s and infinite bandwidth gives
the step count; zero latency and 1 B/s gives the bytes term). The NVLink tier is fitted on
intra-domain runs; the network tier on multi-domain runs after subtracting their intra-domain
part, priced with the fitted NVLink tier or the cluster file's measured one (with neither, refused:
check_nvlink_measured). Least squares on relative errors, so every message size weighs the same.
Pure functions; no I/O.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from math import gcd

from costmodel import comm, topology
from costmodel import types as cm
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.nccl_logs import NcclLog, bus_factor, large_message_rows

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "sendrecv")
_HIERARCHICAL = {
    "all_reduce": comm.hierarchical_allreduce_seconds,
    "all_gather": comm.hierarchical_allgather_seconds,
    "reduce_scatter": comm.hierarchical_reduce_scatter_seconds,
}
_UNIT_LATENCY = comm.Link(math.inf, 1.0)  # t = number of latency steps
_UNIT_BYTES = comm.Link(1.0, 0.0)  # t = bytes through the link (S * factor)
_NOTHING = comm.Link(math.inf, 0.0)  # a tier that costs nothing


@dataclass(frozen=True)
class Sample:
    """One large-message row of one log, with where it runs."""

    log: str
    collective: str
    ranks: int
    ranks_per_domain: int  # == ranks: all on NVLink; < ranks: hierarchical over the network
    size_bytes: int
    measured_seconds: float

    @property
    def tier(self) -> str:
        return "nvlink" if self.ranks_per_domain == self.ranks else "network"


@dataclass(frozen=True)
class TierFit:
    """Fitted link of one tier, with standard errors (None with fewer than 3 rows)."""

    tier: str
    link: comm.Link
    latency_fitted: bool  # False: the fit gave a negative latency, so `link` keeps the prior one
    bandwidth_stderr: float | None
    latency_stderr: float | None
    samples: tuple[Sample, ...]


@dataclass(frozen=True)
class FitRow:
    sample: Sample
    model_seconds: float

    @property
    def error(self) -> float:
        """Signed relative error of the model (+ = the model predicts slower)."""
        return self.model_seconds / self.sample.measured_seconds - 1.0


@dataclass(frozen=True)
class CommFit:
    nvlink: TierFit | None
    network: TierFit | None
    rows: tuple[FitRow, ...]


def collective_seconds(collective: str, size_bytes: float, ranks: int, per_domain: int,
                       fast: comm.Link, slow: comm.Link, gpu: cm.Gpu | None = None) -> float:
    """Cost-model time of one nccl-tests collective (ranks packed per_domain to an NVLink domain). `fast` is
    the whole domain's rate; on a point-to-point mesh (`gpu`'s peer links, AMD xGMI) the ranks of a domain
    reach their share of it (topology.mesh_share, as the cost model prices a group of that size), a
    sendrecv one link."""
    in_domain = 2 if collective == "sendrecv" else per_domain
    share = topology.mesh_share(gpu, in_domain) if gpu is not None else 1.0
    fast = comm.Link(fast.bandwidth_bytes_per_second * share, fast.latency_seconds)
    if collective == "sendrecv":  # each rank sends to the next; the slowest hop sets the time
        return comm.p2p_seconds(size_bytes, fast if per_domain == ranks else slow)
    return _HIERARCHICAL[collective](size_bytes, ranks, per_domain, fast, slow)


def row_seconds(row) -> float | None:
    """Out-of-place time of an nccl-tests row in seconds, else in-place; None if neither is usable."""
    for us in (row.out_of_place_time_us, row.in_place_time_us):
        if us is not None and math.isfinite(us) and us > 0:
            return us * 1e-6
    return None


def ranks_per_domain(ranks: int, num_nodes: int | None, cluster: cm.Cluster) -> int:
    """Ranks of an nccl-tests run sharing one NVLink domain, ranks packed in order (as mpirun -N).

    All of them when the run fits one domain on one node, or in a domain spanning nodes (NVL72);
    else the ranks per node (hosts in the log, else the cluster's GPUs per node) that share a
    domain; 1 without NVLink, where the cost model prices every transfer on the network tier.
    A domain spanning nodes holds what the cost model places in it for a job of `ranks` GPUs
    (topology.domain_size, as `planner estimate` prices it): 128 ranks on NVL72 racks run 64 a rack, not
    gcd(128, 72) = 8."""
    d = topology.domain_size(replace(cluster, num_gpus=ranks))
    if d == 1:
        return 1
    spans_nodes = d > cluster.gpus_per_node
    if ranks <= d and (num_nodes == 1 or spans_nodes):
        return ranks
    if spans_nodes:
        return gcd(ranks, d)  # d divides ranks unless no block of whole nodes does (topology.job_domain_size)
    if num_nodes and ranks % num_nodes:
        raise PlannerError(f"{ranks} ranks on {num_nodes} nodes is uneven; calibrate from runs with the same "
                           "number of GPUs on each node")
    per_node = ranks // num_nodes if num_nodes else min(ranks, cluster.gpus_per_node)
    return gcd(ranks, gcd(per_node, d))


# GPU product names as device lines (nvidia-smi / rocm names) and catalog names both carry them: the letter
# and number of a data-centre part (K80, P100, T4, V100, A100, L4, L40S, H100, B200; RTX A6000), an RTX card,
# a Grace superchip, an AMD Instinct.
_PRODUCT_RE = re.compile(
    r"(?<![a-z0-9])(gh200|gb200|gb300|rtx ?\d{4}|[abhlvpkt]\d{1,4}[a-z]?|mi\d{3}[a-z]?)(?![a-z0-9])")


def product(gpu_name: str) -> str | None:
    """The GPU product a device or catalog name names ("NVIDIA H100 80GB HBM3", "h100-sxm-80gb": h100),
    None when it names none this recognises."""
    m = _PRODUCT_RE.search(gpu_name.lower())
    return m.group(1) if m else None


def check_hosts(log: NcclLog, name: str, cluster: cm.Cluster) -> None:
    """The device lines must name the cluster's GPU product, and their hosts hold the same number of ranks
    each, no more than a node of the cluster has GPUs: otherwise the run's links are not the cluster's (a
    V100 log calibrating an H100 cluster, 16 ranks on one host fitted as a two-node network run)."""
    counts = log.ranks_per_host
    other = [d for d in log.devices if product(d) and product(d) != product(cluster.gpu.name)]
    if other and product(cluster.gpu.name):
        raise PlannerError(f"{name}: the run was on {other[0]}, but {cluster.name} has {cluster.gpu.name}; "
                           "are the logs from it?")
    if len(set(counts)) > 1:
        raise PlannerError(f"{name}: ranks are spread unevenly over its hosts ({', '.join(map(str, counts))} per "
                           "host); calibrate from runs with the same number of GPUs on each node")
    if counts and counts[0] > cluster.gpus_per_node:
        raise PlannerError(f"{name}: the run put {counts[0]} ranks on one host, but {cluster.name} has "
                           f"{cluster.gpus_per_node} GPUs per node; are the logs from it?")


def log_samples(log: NcclLog, name: str, cluster: cm.Cluster, min_size_bytes: int) -> list[Sample]:
    """The rows of `log` to calibrate from: large messages with a usable time and no wrong elements."""
    if log.collective not in COLLECTIVES:
        raise PlannerError(f"{name}: {log.collective} cannot be calibrated; use all_reduce, all_gather, "
                           "reduce_scatter or sendrecv runs")
    if not log.num_ranks:
        raise PlannerError(f"{name}: the log does not say how many ranks ran (no '#  Rank' device lines)")
    if log.num_ranks < 2:
        raise PlannerError(f"{name}: a run on one rank moves nothing between GPUs; run on 2 or more")
    check_hosts(log, name, cluster)
    k = ranks_per_domain(log.num_ranks, log.num_nodes, cluster)
    one_node = log.num_nodes == 1 or (log.num_nodes is None and log.num_ranks <= cluster.gpus_per_node)
    if k < log.num_ranks and one_node:
        raise PlannerError(f"{name}: a run on one node reaches past its NVLink domain ({k} GPU(s) of "
                           f"{cluster.name}) over the node's PCIe, not over the network between nodes that the cost "
                           "model's network tier is; calibrate the network from a run across 2 or more nodes")
    large = large_message_rows(log, min_size_bytes)
    samples = [Sample(name, log.collective, log.num_ranks, k, r.size_bytes, t)
               for r in large if (t := row_seconds(r)) is not None and not r.wrong]
    if not samples:
        raise PlannerError(no_rows_message(log, name, large, min_size_bytes))
    check_in_switch_reduction(samples, name, cluster)
    return samples


def no_rows_message(log: NcclLog, name: str, large: tuple, min_size_bytes: int) -> str:
    """Why a log leaves no row to fit: no size reaches --min-size, or every one that does is untimed (nan in
    both sections, as nccl-tests prints a failed timer) or has wrong elements."""
    if not large:
        sizes = f"{log.rows[0].size_bytes}..{log.rows[-1].size_bytes} B" if log.rows else "none"
        return (f"{name}: no usable rows of at least {min_size_bytes} B (sizes in the log: {sizes}); "
                "run with larger messages (-e 8G) or lower --min-size")
    wrong = sum(1 for r in large if r.wrong)
    why = f"{len(large) - wrong} untimed (nan)" + (f", {wrong} with wrong elements (#wrong)" if wrong else "")
    return (f"{name}: none of its {len(large)} row(s) of at least {min_size_bytes} B has a usable time ({why}): "
            "the run failed or its timer overflowed; rerun it")


def bus_bandwidth(s: Sample) -> float:
    """nccl-tests' busbw of a sample in B/s: size / time x its bus factor (doc/PERFORMANCE.md; nccl_logs.bus_factor)."""
    return s.size_bytes / s.measured_seconds * bus_factor(s.collective, s.ranks)


def check_in_switch_reduction(samples: list[Sample], name: str, cluster: cm.Cluster) -> None:
    """One line when an NVLink-domain all_reduce moves more bus bandwidth than the NVLink carries each way: NCCL
    reduced in the NVSwitch (NVLS, its default all_reduce on 8 H100: ~480 GB/s busbw against 450 GB/s per
    direction, where rings and the other collectives reach ~370; nccl-tests issue #212). Fitted as the link's rate
    it would price every ring collective (all_gather, reduce_scatter, TP) too fast."""
    nominal = cluster.nvlink_bandwidth_bytes_per_second
    rows = [s for s in samples if s.collective == "all_reduce" and s.tier == "nvlink"]
    top = max((bus_bandwidth(s) for s in rows), default=0.0)
    # far past it (over L.MAX_BUSBW_OVER_NOMINAL x) is no switch's doing: check_plausible asks whether the logs are
    # of this cluster
    if nominal > 0 and nominal < top <= L.MAX_BUSBW_OVER_NOMINAL * nominal:
        raise PlannerError(f"{name}: all_reduce busbw up to {top / 1e9:.0f} GB/s, above the {nominal / 1e9:.0f} GB/s "
                           f"per direction of {cluster.gpu.name}'s NVLink: NCCL reduced in the switch (NVLS), not "
                           "over the links the cost model's NVLink tier is; rerun with NCCL_ALGO=Ring, or calibrate "
                           "from all_gather / reduce_scatter logs")


def _regressors(s: Sample, tier: str, fast: comm.Link, gpu: cm.Gpu) -> tuple[float, float, float]:
    """(latency steps, bytes, time already explained) of a sample for the tier being fitted. On a mesh the
    NVLink bytes are over the share of the domain's rate the sample's ranks reach: the fitted rate is the
    whole domain's, as the cluster file's nvlink_busbw is."""
    def at(f: comm.Link, n: comm.Link) -> float:
        return collective_seconds(s.collective, s.size_bytes, s.ranks, s.ranks_per_domain, f, n, gpu)
    if tier == "nvlink":
        return at(_UNIT_LATENCY, _NOTHING), at(_UNIT_BYTES, _NOTHING), 0.0
    return at(_NOTHING, _UNIT_LATENCY), at(_NOTHING, _UNIT_BYTES), at(fast, _NOTHING)


def least_squares_2(rows: list[tuple[float, float, float]]) -> tuple[float, float, float | None, float | None]:
    """Fit y = p*a + q*b by ordinary least squares on (a, b, y) rows; return p, q and their standard
    errors from the residual variance (None with fewer than 3 rows). Columns are scaled to unit
    RMS before solving the 2x2 normal equations, so mixed units stay well conditioned."""
    na = math.sqrt(sum(a * a for a, _, _ in rows) / len(rows)) or 1.0
    nb = math.sqrt(sum(b * b for _, b, _ in rows) / len(rows)) or 1.0
    saa = sum((a / na) ** 2 for a, _, _ in rows)
    sbb = sum((b / nb) ** 2 for _, b, _ in rows)
    sab = sum(a / na * b / nb for a, b, _ in rows)
    det = saa * sbb - sab * sab
    if det <= 1e-12 * saa * sbb:
        raise PlannerError("cannot separate bandwidth from latency: need at least two different message sizes")
    say = sum(a / na * y for a, _, y in rows)
    sby = sum(b / nb * y for _, b, y in rows)
    p, q = (sbb * say - sab * sby) / det, (saa * sby - sab * say) / det
    if len(rows) < 3:
        return p / na, q / nb, None, None
    rss = sum((y - p * a / na - q * b / nb) ** 2 for a, b, y in rows)
    var = rss / (len(rows) - 2)
    return p / na, q / nb, math.sqrt(var * sbb / det) / na, math.sqrt(var * saa / det) / nb


def fit_tier(samples: list[Sample], tier: str, fast: comm.Link, prior: comm.Link, gpu: cm.Gpu) -> TierFit:
    """Fit one tier's (latency, 1/bandwidth) on relative errors (each row divided by its time).

    A negative latency (noise at large sizes, where latency is a small part of the time) is not
    kept: the tier keeps `prior`'s latency and only the bandwidth is fitted."""
    regs = [_regressors(s, tier, fast, gpu) for s in samples]
    rows = [(a / s.measured_seconds, b / s.measured_seconds, (s.measured_seconds - known) / s.measured_seconds)
            for s, (a, b, known) in zip(samples, regs)]
    alpha, inv_bw, se_alpha, se_inv = least_squares_2(rows)
    fitted = alpha >= 0
    if not fitted:
        alpha, se_alpha = prior.latency_seconds, None
        inv_bw = sum(b * (y - a * alpha) for a, b, y in rows) / sum(b * b for _, b, _ in rows)
        se_inv = None
    if inv_bw <= 0:
        why = ("the times do not grow with message size" if tier == "nvlink" else "what the NVLink part of each "
               "time leaves does not grow with message size (the NVLink tier's rate explains the whole time at "
               "these sizes: check it, or fit on larger messages with --min-size)")
        raise PlannerError(f"{tier} fit gave a non-positive bandwidth: {why}")
    se_bw = None if se_inv is None else se_inv / inv_bw**2
    return TierFit(tier, comm.Link(1.0 / inv_bw, alpha), fitted, se_bw, se_alpha, tuple(samples))


def calibrate_comm(samples: list[Sample], cluster: cm.Cluster, eff: cm.Efficiency | None = None) -> CommFit:
    """Fit the NVLink tier on intra-domain samples, then the network tier on the rest; all logs of
    a tier (any mix of collectives and rank counts) share one least-squares fit."""
    eff = eff or cm.Efficiency()
    fast, slow = topology.nvlink_link(cluster, eff), topology.network_link(cluster, eff)
    intra = [s for s in samples if s.tier == "nvlink"]
    inter = [s for s in samples if s.tier == "network"]
    if not intra:
        check_nvlink_measured(inter, cluster)
    nvlink = fit_tier(intra, "nvlink", fast, fast, cluster.gpu) if intra else None
    if nvlink:
        fast = nvlink.link
    network = fit_tier(inter, "network", fast, slow, cluster.gpu) if inter else None
    if network:
        slow = network.link
    check_plausible(nvlink, cluster.nvlink_bandwidth_bytes_per_second, cluster)
    check_plausible(network, cluster.network_bandwidth_bytes_per_second, cluster)
    rows = tuple(FitRow(s, collective_seconds(s.collective, s.size_bytes, s.ranks, s.ranks_per_domain, fast, slow,
                                              cluster.gpu)) for s in intra + inter)
    return CommFit(nvlink, network, rows)


def check_nvlink_measured(inter: list[Sample], cluster: cm.Cluster) -> None:
    """One line when multi-domain runs would fit the network with nothing measuring the NVLink tier. Their times
    of a ring collective hold an NVLink part (the cost model's hierarchical collective; a sendrecv between nodes
    runs on the network alone, collective_seconds), which would be priced at nominal x efficiency
    and the default latency (Efficiency.nvlink_latency_seconds, 10 us a ring step, fitted on A100), the network
    fit absorbing the difference (a 2-node H100 log made at 46 GB/s and 5 us came out 76 GB/s). A cluster file
    whose NVLink was calibrated before has it measured; runs of one GPU per domain, and clusters without
    NVLink, have no NVLink part."""
    if cluster.nvlink_busbw_bytes_per_second > 0 or all(s.ranks_per_domain == 1 or s.collective == "sendrecv"
                                                         for s in inter):
        return
    raise PlannerError(f"no log measures the NVLink tier of {cluster.name} alone, and a multi-node ring collective's "
                       "time holds an NVLink part, which would be priced at a default and skew the network fit: add a "
                       "single-node (one NVLink domain) nccl-tests log, of the same collective or any of all_reduce, "
                       "all_gather, reduce_scatter, so the NVLink tier is measured")


def check_plausible(fit: TierFit | None, nominal_bytes_per_second: float, cluster: cm.Cluster) -> None:
    """One line when a tier's fitted bandwidth is over L.MAX_BUSBW_OVER_NOMINAL x the cluster's nominal
    rate for it: logs of other hardware (more GPUs per node, another fabric) fitted to this cluster, or, for
    the network, real ring logs (hierarchy_note)."""
    if fit is not None and fit.link.bandwidth_bytes_per_second < L.MIN_LINK_GBYTES_PER_S * 1e9:
        raise PlannerError(f"the {fit.tier} fit gives {fit.link.bandwidth_bytes_per_second / 1e9:.4g} GB/s, under the "
                           f"{L.MIN_LINK_GBYTES_PER_S:g} GB/s a cluster file can state: a failed or stalled run, or "
                           "times in the wrong unit?")
    if fit is None or nominal_bytes_per_second <= 0:
        return
    if fit.link.bandwidth_bytes_per_second > L.MAX_BUSBW_OVER_NOMINAL * nominal_bytes_per_second:
        layout = f"{cluster.gpus_per_node} GPUs per node, NVLink domain {cluster.nvlink_domain_size}"
        why = (hierarchy_note(layout) if any(s.ranks_per_domain > 1 for s in fit.samples) and fit.tier == "network"
               else f"are the logs from it ({layout})?")
        raise PlannerError(f"the {fit.tier} fit gives {fit.link.bandwidth_bytes_per_second / 1e9:.0f} GB/s, over "
                           f"{L.MAX_BUSBW_OVER_NOMINAL:g}x the nominal {nominal_bytes_per_second / 1e9:.0f} GB/s "
                           f"of cluster '{cluster.name}': {why}")


def hierarchy_note(layout: str) -> str:
    """Why a real multi-node ring log fits a network rate above the link's: the cost model prices the collective
    as its NVLink phase, then the network phase on a 1/k shard (costmodel.comm.hierarchical_*, 2D ring), one after
    the other, where NCCL's ring pipelines the two, so what the NVLink phase leaves of the time is short for the
    bytes the network phase moves."""
    return ("the cost model prices a multi-node collective as an NVLink phase, then a network phase on a 1/k shard, "
            "where NCCL's ring pipelines the two, so a ring log fits an effective network rate above the link's; a "
            "log of one GPU per node (-g 1, one rank per node) measures the network tier directly (or are the logs "
            f"from another cluster than {layout}?)")


def max_abs_error(rows: tuple[FitRow, ...] | list[FitRow]) -> float:
    return max((abs(r.error) for r in rows), default=0.0)


def poor_fit_lines(fit: CommFit) -> list[str]:
    """One warning per tier whose worst row the fit misses by over L.MAX_CALIBRATION_ROW_ERROR, naming the row."""
    lines = []
    for tier in ("nvlink", "network"):
        rows = [r for r in fit.rows if r.sample.tier == tier]
        worst = max(rows, key=lambda r: abs(r.error), default=None)
        if worst and abs(worst.error) > L.MAX_CALIBRATION_ROW_ERROR:
            measured_us = 1e6 * worst.sample.measured_seconds
            lines.append(f"the {tier} fit misses {worst.sample.log} at {worst.sample.size_bytes} B by "
                         f"{100 * worst.error:+.0f}% (measured {measured_us:.4g} us): a failed or disturbed "
                         "measurement, or logs of other links? the fitted figures include it")
    return lines
