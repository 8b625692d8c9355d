"""Strict, bounded pydantic field types for the input specs (bounds from limits.py)."""
from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictBool, StringConstraints

from planner.inputs.limits import MAX_NAME_CHARS


def count(upper: int, lower: int = 1):
    """An integer (not a bool, not a float) in [lower, upper]."""
    return Annotated[int, Field(strict=True, ge=lower, le=upper)]


def quantity(upper: float, lower: float = 0.0, positive: bool = True):
    """A finite number (int or float, not a bool or string) at most `upper` and at least `lower`
    (above 0 when `lower` is 0). With `positive` False, 0 is also allowed (a link that is absent,
    a free GPU-hour): 0, or a value in [lower, upper]."""
    def check(value: float) -> float:
        if value == 0 and not positive:
            return value
        if value < lower or value <= 0:
            raise ValueError(f"must be {'0 or ' if not positive else ''}"
                             f"{'at least ' + format(lower, 'g') if lower else 'greater than 0'}")
        return value
    return Annotated[float, Field(strict=True, allow_inf_nan=False, le=upper), AfterValidator(check)]


# A name: printable, one line, no shell or YAML metacharacters that could end a comment line.
Name = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=MAX_NAME_CHARS,
                                        pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._+:@()/-]*$")]
# Free text (sources, notes): one or more lines of printable text, bounded.
Text = Annotated[str, StringConstraints(strict=True, max_length=8192)]
Flag = StrictBool
