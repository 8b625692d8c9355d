"""Wall-clock time of a whole training run beyond its steps: checkpoint saves and failures.

Checkpoint/restart model: Young, "A first order approximation to the optimum checkpoint interval"
(CACM 1974) and Daly, "A higher order estimate of the optimum checkpoint interval for restart
dumps" (FGCS 2006): with checkpoint cost C and mean time between failures M, the first-order
optimal interval is sqrt(2 C M); each failure costs a restart R plus, on average, half an
interval of lost work.

Default failure rate: Meta's Llama 3 405B run saw 466 job interruptions in 54 days on 16,384
H100s (Llama 3 paper, arXiv:2407.21783, Sec 3.3.4): 466 / (54 * 24 * 16384) = 2.19e-5 per
GPU-hour, i.e. 0.53 per 1000 GPU-days.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .memory import state_bytes_per_param

LLAMA3_INTERRUPTIONS_PER_GPU_HOUR = 466 / (54 * 24 * 16384)
LLAMA3_INTERRUPTIONS_PER_1000_GPU_DAYS = LLAMA3_INTERRUPTIONS_PER_GPU_HOUR * 24 * 1000  # planner size's unit


@dataclass(frozen=True)
class RunOverheads:
    checkpoint_seconds: float  # one save
    checkpoint_interval_seconds: float
    expected_failures: float
    total_seconds: float  # steps + checkpoints + restarts + lost work

    def overhead_fraction(self, step_seconds_total: float) -> float:
        return self.total_seconds / step_seconds_total - 1.0


def checkpoint_bytes(params: float) -> float:
    """Bytes of one full checkpoint: the 16-bit weights and the optimizer states (fp32 master
    weights, Adam m and v) of memory.state_bytes_per_param, 2 + 12 B per parameter."""
    states = state_bytes_per_param("bf16", "bf16")
    return params * (states.parameters + states.optimizer_states)


def checkpoint_seconds(params: float, num_nodes: int, write_bytes_per_second_per_node: float) -> float:
    """One synchronous save, all nodes writing their shards in parallel at `write_bytes_per_second_per_node`
    (checkpoint_bytes: what is saved). Assumes a blocking save (no asynchronous checkpointing) and storage that
    scales with the nodes (a parallel file system or object store), so time is bytes over aggregate bandwidth."""
    return checkpoint_bytes(params) / (num_nodes * write_bytes_per_second_per_node)


def optimal_interval_seconds(checkpoint_cost_seconds: float, failures_per_second: float) -> float:
    """Young's first-order optimum sqrt(2 C M), M = 1 / failure rate (infinite without failures)."""
    if failures_per_second <= 0:
        return math.inf
    return math.sqrt(2.0 * checkpoint_cost_seconds / failures_per_second)


def run_wall_clock(
    step_seconds_total: float, num_gpus: int, checkpoint_cost_seconds: float,
    failures_per_gpu_second: float, restart_seconds: float, interval_seconds: float | None = None,
) -> RunOverheads:
    """Total wall clock for `step_seconds_total` of training.

    Checkpointing stretches useful time by (1 + C/I). Failures arrive at rate F = N x per-GPU
    rate over the whole (stretched) run, each costing R + I/2, so T = W (1 + C/I) + F T (R + I/2),
    solved for T. Requires F (R + I/2) < 1 (otherwise the run never finishes; returned as inf).
    """
    rate = num_gpus * failures_per_gpu_second
    interval = interval_seconds or optimal_interval_seconds(checkpoint_cost_seconds, rate)
    stretched = step_seconds_total * (1.0 + (checkpoint_cost_seconds / interval if math.isfinite(interval) else 0.0))
    loss_per_failure = restart_seconds + (interval / 2.0 if math.isfinite(interval) else 0.0)
    denominator = 1.0 - rate * loss_per_failure
    total = stretched / denominator if denominator > 0 else math.inf
    return RunOverheads(checkpoint_cost_seconds, interval, rate * total if math.isfinite(total) else math.inf, total)
