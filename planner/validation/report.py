"""`planner validate --json`'s object as a function: the scored rows and their summaries (runs.py) beside what
rows with equal inputs cost any model (floor.py)."""
from __future__ import annotations

from planner.validation.floor import measurement_floor
from planner.validation.runs import (Run, evaluate, result_to_dict, summarise, summarise_by_generation,
                                     summarise_by_precision)


def report(runs: list[Run], results: list | None = None) -> dict:
    """The object for `runs` (scored here unless their `results` are given): each row's predicted and measured
    figures, the summaries (overall and per group, per GPU generation, per precision), and the floor."""
    results = evaluate(runs) if results is None else results
    return {"rows": [result_to_dict(r) for r in results], "summary": summarise(results),
            "by_generation": summarise_by_generation(results), "by_precision": summarise_by_precision(results),
            "measurement_floor": measurement_floor(runs)}
