"""Typed reads of one Hugging Face config dict, for planner/inputs/hf_config.py and hf_moe.py: every
failure is one PlannerError line naming the file and the key."""
from __future__ import annotations

from typing import Any

from planner.errors import PlannerError


def pick(data: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def show(value: Any) -> str:
    """A value for a one-line message: repr, newlines escaped by repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Reader:
    """Typed reads of one config dict; every failure is one PlannerError line naming the key."""

    def __init__(self, data: dict, name: str, prefix: str = ""):
        self.data, self.name, self.prefix = data, name, prefix

    def fail(self, key: str, why: str) -> PlannerError:
        return PlannerError(f"{self.name} config.json: {self.prefix}{key}: {why}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(self, key: str, lower: int = 0) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer (got {show(value)})")
        if value < lower:
            raise self.fail(key, f"must be >= {lower} (got {value})")
        return value

    def number(self, key: str, default: float, upper: float) -> float:
        """A finite number in (0, upper], `default` when the key is absent (null is refused)."""
        if key not in self.data:
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= upper:
            raise self.fail(key, f"must be a number in (0, {upper:g}] (got {show(value)})")
        return float(value)

    def need_int(self, key: str, lower: int = 0, why: str = "") -> int:
        value = self.integer(key, lower)
        if value is None:
            raise self.fail(key, f"is missing or null{why}")
        return value

    def int_list(self, key: str) -> list[int] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self.fail(key, f"must be a list of integers (got {show(value)})")
        return value
