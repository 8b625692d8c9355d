"""Shared machinery for framework rules: each rule is `rule(job) -> message or None`.

An emitter runs every rule of its framework first and refuses the plan, naming each broken
rule and the framework source it mirrors, before it writes anything.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from ..errors import PlannerError
from .job import Job

Rule = Callable[[Job], Optional[str]]


def violations(job: Job, rules: Iterable[Rule]) -> list[str]:
    return [msg for rule in rules if (msg := rule(job))]


def enforce(framework: str, job: Job, rules: Iterable[Rule]) -> None:
    """Raise one PlannerError line listing every rule of `framework` the plan breaks."""
    broken = violations(job, rules)
    if broken:
        raise PlannerError(f"{framework} would reject this plan: " + "; ".join(broken))


def batch_divisible(job: Job) -> Optional[str]:
    """global batch = micro batch x dp x accumulation steps exactly. DeepSpeed:
    runtime/config.py _batch_assertion; Megatron-LM: training/arguments.py (eval_global_batch_size
    assert) and core/num_microbatches_calculator.py."""
    p = job.plan
    if p.global_batch_size % (p.micro_batch_size * p.dp):
        return (f"global batch {p.global_batch_size} is not a multiple of micro batch x dp = "
                f"{p.micro_batch_size}x{p.dp}")
    return None
