"""Dollars and wall-clock time from step time: GPU-hours times the hourly price."""
from __future__ import annotations

import math

SECONDS_PER_HOUR = 3600.0


def usd_per_step(step_time_seconds: float, num_gpus: int, usd_per_gpu_hour: float) -> float:
    """Every GPU of the job is paid for the whole step."""
    return step_time_seconds * num_gpus * usd_per_gpu_hour / SECONDS_PER_HOUR


def steps_to_train(training_tokens: float, global_batch_size: int, seq_length: int) -> int:
    """Optimizer steps to consume `training_tokens` (the last partial batch counts as a step)."""
    return math.ceil(training_tokens / (global_batch_size * seq_length))


def time_to_train_seconds(training_tokens: float, global_batch_size: int, seq_length: int, step_time_seconds: float) -> float:
    """Steps to train times the step time: no checkpoints, failures or restarts (runtime.run_wall_clock adds them)."""
    return steps_to_train(training_tokens, global_batch_size, seq_length) * step_time_seconds


def usd_to_train(training_tokens: float, global_batch_size: int, seq_length: int, step_usd: float) -> float:
    """Steps to train times the dollars of one step (usd_per_step)."""
    return steps_to_train(training_tokens, global_batch_size, seq_length) * step_usd
