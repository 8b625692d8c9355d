"""Command-line value types and a parser whose usage errors are one line, like every other error.

Every number flag is finite and bounded (planner/inputs/limits.py): nan, inf and values no real job
could have are usage errors, not inputs.
"""
from __future__ import annotations

import argparse
import math
import re
from typing import Callable

from planner.errors import PlannerError
from planner.inputs import limits as L


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is a PlannerError: 'planner: error: ...' on one line, exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        where = self.prog.removeprefix("planner").strip()
        raise PlannerError(f"{where + ': ' if where else ''}{message} (see --help)")


INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")
NUMBER = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*|\s*[+-]?(inf|infinity|nan)\s*", re.I)


def plain_int(text: str) -> int:
    """int(text) for ASCII digits only: Python's int() also takes '1_0' and other scripts' digits ('٨')."""
    if not INTEGER.fullmatch(text):
        raise ValueError(text)
    return int(text)


def plain_float(text: str) -> float:
    """float(text) for a plain decimal or exponent form only (not '1_0' or other scripts' digits); inf and
    nan parse, for the caller to refuse by name."""
    if not NUMBER.fullmatch(text):
        raise ValueError(text)
    return float(text)


def bounded_int(upper: int, lower: int = 1) -> Callable[[str], int]:
    """An integer in [lower, upper] (written as digits: '8', not '8.0' or '1e3')."""
    def parse(text: str) -> int:
        try:
            value = plain_int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
        if not lower <= value <= upper:
            raise argparse.ArgumentTypeError(f"must be between {lower} and {upper:,}, got {text[:40]}")
        return value
    return parse


def bounded_float(upper: float, lower: float = 0.0, strict: bool = True) -> Callable[[str], float]:
    """A finite number in (lower, upper] (or [lower, upper] when not `strict`)."""
    def parse(text: str) -> float:
        try:
            value = plain_float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text[:40]}")
        if value < lower or (strict and value == lower) or value > upper:
            bound = ">" if strict else ">="
            raise argparse.ArgumentTypeError(f"must be {bound} {lower:g} and <= {upper:g}, got {text[:40]}")
        return value
    return parse


def file_arg(text: str) -> str:
    """A file or folder name to write: not empty or blank (which would write nothing, or the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file name, got an empty one")
    return text


gpus_arg = bounded_int(L.MAX_GPUS)
degree_arg = bounded_int(L.MAX_DEGREE)
batch_arg = bounded_int(L.MAX_BATCH)
seq_length_arg = bounded_int(L.MAX_SEQ_LENGTH)
fraction_arg = bounded_float(1.0)
