"""How far the cost model's step times were off on published runs like the plan's: same GPU, precision
and kind of model (dense or mixture of experts), out of sample.

Each runs.yaml row counts with the error of its leave-one-source-out prediction (constants fitted on
every other source, `planner validate --leave-one-source-out`), each holdout.yaml row with its error at
the shipped constants (no fit saw it): no row is judged by constants that were fitted on it. The figures
are computed by planner/validation/accuracy.py and shipped as validation/step_errors_by_gpu.yaml.

The signed mean says which way the model leans there: GB300's dense rows, for one, run faster than it
predicts (issue 14; validation/README.md), which the MFU envelope, a ceiling, cannot say.
"""
from __future__ import annotations

from functools import lru_cache

FILE = "step_errors_by_gpu.yaml"


def kind_of(moe: bool) -> str:
    return "moe" if moe else "dense"


@lru_cache(maxsize=1)
def shipped() -> dict[tuple[str, str, str], dict]:
    """The precomputed errors by (GPU name, precision, kind): runs.worst_stats of the rows' step-time errors."""
    from planner.inputs.catalogs import read_published

    return {(e["gpu"], e["precision"], e["kind"]): e["rows"] for e in read_published(FILE)}


def judge(gpu: str, precision: str, moe: bool) -> dict | None:
    """The out-of-sample step-time errors of the published runs on `gpu` in `precision` of the plan's kind of
    model; None where there is none (envelope.judge then says that nothing judged the model there, when no
    run of either kind was published)."""
    rows = shipped().get((gpu, precision, kind_of(moe)))
    if rows is None:
        return None
    return {"gpu": gpu, "precision": precision, "kind": kind_of(moe), "rows": rows}


def line(judged: dict | None) -> str | None:
    """One line with those errors and the way the model leans there, else None."""
    if judged is None:
        return None
    rows = judged["rows"]
    kind = "mixture-of-experts" if judged["kind"] == "moe" else "dense"
    lean = rows["mean_signed"]
    way = "longer" if lean > 0 else "shorter"
    return (f"on the {rows['n']} published {kind} run{'s' if rows['n'] != 1 else ''} on {judged['gpu']} in "
            f"{judged['precision']}, predicted out of sample, the model's step time was off by "
            f"{100 * rows['mape']:.1f}% on average (up to {100 * rows['max_abs']:.1f}%, {rows['worst_run']}); "
            f"on the mean it predicted steps {100 * abs(lean):.1f}% {way} than measured "
            "(validation/step_errors_by_gpu.yaml)")
