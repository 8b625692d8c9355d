"""How far to trust a step time at a sequence length longer than any fitted run on the plan's GPU generation.

The cost model's attention rate per generation is fitted (Efficiency.flash_attention_peak_fraction_*,
flash_attention_half_seq) on the rows of validation/runs.yaml, whose sequences on Ampere and Blackwell
are at most 8,192 tokens. Beyond the longest fitted row the attention share of the step grows with the
sequence and the fitted rate is extrapolated. The held-out rows of validation/holdout.yaml that run
longer judge that extrapolation, per kind of model (dense or MoE), which lean opposite ways: on Hopper the
dense CP runs of 128k-1M tokens (NeMo's Llama 2 7B) come out fast and Megatron-core's Qwen3-235B runs slow;
on Blackwell the longer runs are all MoE (Qwen3-235B-A22B on GB200 at 131,072 tokens ran 1.77x faster than
predicted, the fitted Blackwell rate being about half what NVIDIA's cuDNN benchmark measures for the kernel;
validation/README.md, "Megatron-core MoE benchmarks"). planner/validation/longcontext.py computes the
figures at the shipped constants into validation/long_context_errors.yaml.
"""
from __future__ import annotations

from functools import lru_cache

FILE = "long_context_errors.yaml"


@lru_cache(maxsize=1)
def shipped() -> dict:
    """generation -> {"fitted_max_seq_length": the longest sequence of a scored runs.yaml row there,
    "beyond": runs.error_stats of the held-out rows longer than that, with worst_run, and "beyond_by_kind":
    the same for its dense and its MoE rows}."""
    from planner.inputs.catalogs import read_published

    return read_published(FILE)


def judge(generation: str, seq_length: int, moe: bool | None = None) -> dict | None:
    """For a plan whose sequences are longer than every fitted row on its generation, the longest fitted
    length with the held-out rows' errors beyond it: those of the plan's kind of model (`moe`; n 0 where none
    of its kind was judged, as no row of the other kind says how it would fare), or of both where the kind is
    not given (`kind` "all"); None within the fitted range, or for a generation with no fitted row (the MFU
    envelope already says none was published there)."""
    data = shipped().get(generation)
    if data is None or seq_length <= data["fitted_max_seq_length"]:
        return None
    kind = "all" if moe is None else ("moe" if moe else "dense")
    rows = data["beyond"] if kind == "all" else data["beyond_by_kind"][kind]
    return {"seq_length": seq_length, "generation": generation,
            "fitted_max_seq_length": data["fitted_max_seq_length"], "kind": kind, "beyond_rows": rows}


def caution(judged: dict | None, whose: str) -> str | None:
    """One line when `judge` found the plan beyond the fitted range, else None."""
    if judged is None:
        return None
    head = (f"{whose} sequences of {judged['seq_length']:,} tokens are longer than any run the cost model was fitted "
            f"on with {judged['generation']} GPUs ({judged['fitted_max_seq_length']:,} tokens), so its attention "
            f"time is extrapolated: ")
    rows = judged["beyond_rows"]
    of = {"dense": " dense", "moe": " mixture-of-experts"}.get(judged.get("kind", "all"), "")
    if not rows["n"]:
        return head + "no published run that long was judged there"
    sense = "slow" if rows["mean_signed"] > 0 else "fast"
    if rows["n"] == 1:
        return head + (f"the one published{of} run that long there was predicted {100 * rows['mape']:.1f}% {sense} "
                       f"({rows['worst_run']}; validation/holdout.yaml)")
    return head + (f"the {rows['n']} published{of} runs that long there are predicted {100 * rows['mape']:.1f}% off on "
                   f"average (up to {100 * rows['max_abs']:.1f}%, {rows['worst_run']}), "
                   f"{100 * abs(rows['mean_signed']):.1f}% {sense} on balance (validation/holdout.yaml)")
