"""Strict, bounded pydantic field types for the input specs (bounds from limits.py)."""
from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StringConstraints

from planner.inputs.limits import MAX_NAME_CHARS


def count(upper: int, lower: int = 1):
    """An integer (not a bool, not a float) in [lower, upper]."""
    return Annotated[int, Field(strict=True, ge=lower, le=upper)]


def quantity(upper: float, positive: bool = True):
    """A finite number (int or float, not a bool or string) in (0, upper], or [0, upper]."""
    bound = {"gt": 0} if positive else {"ge": 0}
    return Annotated[float, Field(strict=True, allow_inf_nan=False, le=upper, **bound)]


# A name: printable, one line, no shell or YAML metacharacters that could end a comment line.
Name = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=MAX_NAME_CHARS,
                                        pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._+:@()/-]*$")]
# Free text (sources, notes): one or more lines of printable text, bounded.
Text = Annotated[str, StringConstraints(strict=True, max_length=8192)]
Flag = StrictBool
