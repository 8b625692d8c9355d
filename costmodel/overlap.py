"""What overlapping communication (or host copies) with compute hides, and what it costs the compute.

Hiding is not free: a collective kernel that runs beside a GEMM occupies SMs (NCCL runs one thread
block per channel; Transformer Engine's userbuffers run the pipelined reduce-scatter on a set number
of SMs) and HBM bandwidth, so the compute it hides behind slows down. The model: while a transfer of
`t` seconds overlaps compute, the compute loses `sm_share` of each second, so it falls t x sm_share
behind; the step ends when the later of the two ends. NCCL runs collectives in up to 32 channels (one
block each, NCCL_MAX_NCHANNELS; nccl-tests logs on 8-GPU NVSwitch nodes report 16-32), and the
userbuffers configs NVIDIA ships for Megatron (NeMo tp_overlap configs) run the pipelined
reduce-scatter on 16-24 SMs. The share (Efficiency.collective_sm_share) is measured: a training step
beside 16-32 such blocks, waiting or copying HBM, lost 0.10-0.28 of each second on an H200
(benchmarks/overlap_contention.py), more than the blocks' share of the SMs where they also move HBM;
Lee et al. 2025 (arXiv 2507.03114) report compute slowed 18.9% on average by overlapped collectives.
A collective whose kernels queue behind compute that holds every SM waits instead: 1 ms kernels ran
1.6-1.8x their length in the same measurement, each waiting about as long as the compute kernel then running
had left (beside_seconds' wait, charged on the expert-parallel exchanges, which the 1F1B overlap launches
into the other micro-batch's compute; the DP/ZeRO, TP and CP collectives are not charged it). Wang et al.,
"Overlap Communication with Dependent Computation via Decomposition in Large Deep Learning Models"
(ASPLOS 2023) decompose a collective into per-chunk transfers so that only the first chunk waits.
"""
from __future__ import annotations


def hidden_and_exposed(transfer_seconds: float, window_seconds: float) -> tuple[float, float]:
    """(hidden, exposed) seconds of a transfer that may overlap `window_seconds` of compute."""
    hidden = max(0.0, min(transfer_seconds, window_seconds))
    return hidden, transfer_seconds - hidden


def overlapped_cost_seconds(exposed_seconds: float, hidden_seconds: float, sm_share: float) -> float:
    """Seconds a transfer adds to the step when `hidden_seconds` of it run beside compute and
    `exposed_seconds` after the compute ends.

    While the transfer runs, the compute keeps 1 - sm_share of its speed, so `hidden_seconds` of
    transfer cost the compute sm_share x hidden_seconds. Whichever ends last sets the step: the
    compute (stretched by that slowdown) or the transfer (its exposed tail). Hence
    max(exposed, sm_share x hidden): a transfer longer than the window costs exactly its tail, since
    the slowed compute still finishes under it; a short one costs only the slowdown."""
    slowdown = sm_share * hidden_seconds if hidden_seconds > 0 and sm_share > 0 else 0.0
    return max(exposed_seconds, slowdown)


def decomposed_exposed_seconds(comm_seconds: float, gemm_seconds: float, chunks: int, sm_share: float) -> float:
    """Time a collective decomposed into `chunks` pieces and overlapped with the GEMM that consumes
    (all-gather) or produces (reduce-scatter) it adds: the first (or last) piece cannot overlap, the
    rest hide behind the GEMM up to its length (overlapped_cost_seconds)."""
    if comm_seconds <= 0:
        return 0.0
    first = comm_seconds / max(1, chunks)
    return first + beside_seconds(comm_seconds - first, gemm_seconds, sm_share)


def beside_seconds(transfer_seconds: float, window_seconds: float, sm_share: float, wait_seconds: float = 0.0) -> float:
    """Seconds a transfer started beside `window_seconds` of compute that does not wait for it adds:
    what outlasts the window, or the compute's slowdown (overlapped_cost_seconds). `wait_seconds`: what the
    transfer's kernels, launched while the compute holds every SM, wait in all for their blocks to be placed
    (each the time left of the compute kernel then running: layer.kernel_residual_seconds); the transfer
    ends that much later, which shows where it outlasts the window; the compute slows only while it runs."""
    hidden, exposed = hidden_and_exposed(transfer_seconds + max(0.0, wait_seconds), window_seconds)
    return overlapped_cost_seconds(exposed, min(transfer_seconds, hidden), sm_share)
