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


def building(names: tuple[str, ...], model) -> tuple[tuple[str, ...], dict[str, str]]:
    """The frameworks of `names` to search for `model` (a costmodel Model): those with a definition of
    it (Framework.cannot_build: torchtitan builds only its own), or all of them when none has one (the
    plans then follow their rules, and `suggest` warns that their launch files cannot build the model).
    Without this a plan only torchtitan's rules admit could win for a model only the others build, and
    no framework would launch it. Returns (the names kept, name -> why for each one left out)."""
    gaps = {n: REGISTRY[n].cannot_build(model) for n in names}
    kept = tuple(n for n in names if not gaps[n])
    if not kept:
        return names, {}
    return kept, {n: why for n, why in gaps.items() if why}


def refusals(model, plan, machine: Machine, names: tuple[str, ...] = NAMES) -> dict[str, list[str]]:
    """Each named framework's refusals of `plan` on `machine` (base.violations: empty where it runs it)."""
    return {name: violations(REGISTRY[name], model, plan, machine) for name in names}


def get(name: str) -> Framework:
    if name not in REGISTRY:
        raise PlannerError(f"unknown framework '{name}' (choose {', '.join(NAMES)})")
    return REGISTRY[name]


__all__ = ["Choice", "Framework", "Knobs", "Machine", "NAMES", "REGISTRY", "building", "get", "layout_violation",
           "refusals",
           "violations"]
