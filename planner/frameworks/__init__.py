"""The training frameworks planner plans for, one module each (what it runs, refuses, and why).

The search (planner/search/space.py) and the emitters (planner/emit) both read these modules; see
base.py for the shape every module fills in.
"""
from __future__ import annotations

from planner.errors import PlannerError
from planner.frameworks import deepspeed, megatron, torchtitan
from planner.frameworks.base import Choice, Framework, Knobs, Machine, layout_violation, violations

REGISTRY: dict[str, Framework] = {m.FRAMEWORK.name: m.FRAMEWORK for m in (megatron, deepspeed, torchtitan)}
NAMES: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Framework:
    if name not in REGISTRY:
        raise PlannerError(f"unknown framework '{name}' (choose {', '.join(NAMES)})")
    return REGISTRY[name]


__all__ = ["Choice", "Framework", "Knobs", "Machine", "NAMES", "REGISTRY", "get", "layout_violation", "violations"]
