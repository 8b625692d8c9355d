"""How far the cost model's step times were off on published runs like the plan's: same GPU, precision
and kind of model (dense or mixture of experts).

Two figures per such set of rows. `shipped`: each row's error at the shipped constants, which were fitted
on runs.yaml's rows (holdout.yaml's never were). `out_of_sample`: no row judged by constants fitted on it. A
dense runs.yaml row's error when its source is left out of the fit (constants fitted on every other source,
`planner validate --leave-one-source-out`); an MoE row's when its model's rows are (the MoE rows of runs.yaml
are one source, NVIDIA's Megatron-Bridge tables: leaving it out would fit the MoE constants on no MoE row, not
the case of a user whose MoE model the validation lacks); a holdout.yaml row's at the shipped constants.
Computed by planner/validation/accuracy.py, shipped as validation/step_errors_by_gpu.yaml.

The signed mean says which way the model leans there: GB300's dense rows, for one, run faster than it
predicts (issue 14; validation/README.md), which the MFU envelope, a ceiling, cannot say.
"""
from __future__ import annotations

from functools import lru_cache

FILE = "step_errors_by_gpu.yaml"


# What each kind's runs.yaml rows leave out of the fit to be predicted out of sample.
LEFT_OUT = {"dense": "source", "moe": "model"}


def kind_of(moe: bool) -> str:
    return "moe" if moe else "dense"


@lru_cache(maxsize=1)
def shipped() -> dict[tuple[str, str, str], dict]:
    """The precomputed errors by (GPU name, precision, kind): {"left_out": what the fits left out, "shipped":
    ..., "out_of_sample": ...}, the last two runs.worst_stats of the rows' step-time errors."""
    from planner.inputs.catalogs import read_published

    return {(e["gpu"], e["precision"], e["kind"]): {k: e[k] for k in ("left_out", "shipped", "out_of_sample")}
            for e in read_published(FILE)}


def judge(gpu: str, precision: str, moe: bool) -> dict | None:
    """The step-time errors of the published runs on `gpu` in `precision` of the plan's kind of model; None
    where there is none (envelope.judge then says that nothing judged the model there, when no run of
    either kind was published)."""
    found = shipped().get((gpu, precision, kind_of(moe)))
    if found is None:
        return None
    return {"gpu": gpu, "precision": precision, "kind": kind_of(moe), **found}


def leaning(stats: dict) -> str:
    """'mean +4.0%: steps predicted longer than measured' from worst_stats."""
    mean = stats["mean_signed"]
    return f"mean {100 * mean:+.1f}%: steps predicted {'longer' if mean > 0 else 'shorter'} than measured"


def line(judged: dict | None) -> str | None:
    """One line with both figures and the way the model leans, else None."""
    if judged is None:
        return None
    fitted, held = judged["shipped"], judged["out_of_sample"]
    kind = "mixture-of-experts" if judged["kind"] == "moe" else "dense"
    return (f"on the {fitted['n']} published {kind} run{'s' if fitted['n'] != 1 else ''} on {judged['gpu']} in "
            f"{judged['precision']} the model's step time was off by {100 * fitted['mape']:.1f}% on average "
            f"({leaning(fitted)}; up to {100 * fitted['max_abs']:.1f}%, {fitted['worst_run']}), and by "
            f"{100 * held['mape']:.1f}% ({leaning(held)}) with each run's {judged['left_out']} left out of the fit "
            "(validation/step_errors_by_gpu.yaml)")
