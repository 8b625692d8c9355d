"""Command-line value types and a parser whose usage errors are one line, like every other error."""
from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is 'planner: error: ...' on one line and exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        where = self.prog.removeprefix("planner").strip()
        print(f"planner: error: {where + ': ' if where else ''}{message} (see --help)", file=sys.stderr)
        sys.exit(2)


def _number(kind, text: str, low: float, strict: bool):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a{'n integer' if kind is int else ' number'}, got {text!r}") from None
    if value < low or (strict and value == low):
        raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low:g}, got {text}")
    return value


def positive_int(text: str) -> int:
    return _number(int, text, 0, True)


def positive_float(text: str) -> float:
    return _number(float, text, 0.0, True)


def non_negative_float(text: str) -> float:
    return _number(float, text, 0.0, False)
