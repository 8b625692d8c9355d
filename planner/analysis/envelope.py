"""The MFU envelope of published runs: per catalog GPU, plan precision and kind of model (dense, or a
mixture of experts with coarse- or fine-grained experts: accuracy.kind_of), the highest MFU that a scored row
of validation/runs.yaml or holdout.yaml measured, and which row it is (computed by
planner/validation/envelope.py, shipped as validation/mfu_envelope.yaml).

A best plan above the envelope of its GPU, precision and kind is where the cost model was never judged
against a run (issue 14: the search lands where the model is most optimistic), and `suggest` says so.
The kind is part of the key because the two kinds reach different MFUs through different terms: a
mixture-of-experts step runs many small expert GEMMs, dispatches tokens and waits on its router, which a
dense run never judged (on GB200 in MXFP8 the best dense run measured 34.5%, the best MoE run 25.9%); as
the out-of-sample errors are kept per kind (planner/analysis/accuracy.py). Among mixtures of experts the
granularity splits them the same way (accuracy.kind_of): whole-MLP experts (Mixtral, Grok-1: 8 of them, top 2)
run a few large expert GEMMs, narrow ones (gpt-oss, Llama 4, Qwen3-MoE, DeepSeek-V3) many small GEMMs, each
expert seeing a small share of the tokens. On H100 in bf16 Grok-1 (coarse) measured 54.2%, the best fine-grained
run 39.3%: one MoE envelope set by a coarse-grained run held a fine-grained plan to nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from planner.analysis.accuracy import kind_of, kind_words

FILE = "mfu_envelope.yaml"


@dataclass(frozen=True)
class Envelope:
    gpu: str
    precision: str
    kind: str  # "dense", "moe-coarse" or "moe-fine" (accuracy.kind_of)
    mfu: float  # the highest measured MFU (causal attention) of the scored rows of this kind, GPU and precision
    run: str  # that row's id
    source: str  # and its citation
    file: str  # the validation file that holds it: runs.yaml or holdout.yaml


@lru_cache(maxsize=1)
def shipped() -> dict[tuple[str, str, str], Envelope]:
    """The precomputed envelope, by (GPU name, precision, kind)."""
    from planner.inputs.catalogs import read_published

    return {(e["gpu"], e["precision"], e["kind"]): Envelope(**e) for e in read_published(FILE)}


def judge(gpu: str, precision: str, mfu: float, model) -> dict:
    """The envelope a predicted MFU (causal attention: Estimate.mfu_causal) of a plan for `model` (its kind:
    accuracy.kind_of) is held against, and whether it is above it. Where no scored row of that kind ran that GPU in
    that precision, the envelope is empty (published_mfu, run, file and source None) and every MFU is above it:
    the cost model was never judged there at all (an AMD part, a dense model on B200 in bf16)."""
    kind = kind_of(model)
    env = shipped().get((gpu, precision, kind))
    if env is None:
        return {"gpu": gpu, "precision": precision, "kind": kind, "published_mfu": None, "run": None,
                "file": None, "source": None, "predicted_mfu": mfu, "above": True}
    return {"gpu": gpu, "precision": precision, "kind": kind, "published_mfu": env.mfu, "run": env.run,
            "file": env.file, "source": env.source, "predicted_mfu": mfu, "above": mfu > env.mfu}


def caution(judged: dict | None, whose: str, so: str = "the cost model was never judged there, so read it as "
                                                         "optimistic") -> str | None:
    """One line when a judged MFU (`judge`) is above its envelope, else None: whose MFU, the envelope and
    its row, then what follows (`so`); or, where no run was published on the GPU in the precision, that
    nothing there judged the cost model."""
    if not judged or not judged["above"]:
        return None
    kind = kind_words(judged["kind"])
    if judged["published_mfu"] is None:
        return (f"{whose} MFU {100 * judged['predicted_mfu']:.1f}% (attention's causal half) has no published "
                f"{kind} run to be held against: validation/ has none on {judged['gpu']} in {judged['precision']}, "
                f"so the cost model was never judged on a {kind} model on this GPU in this precision; read its "
                "figures as unvalidated")
    return (f"{whose} MFU {100 * judged['predicted_mfu']:.1f}% counting attention's causal half "
            f"(MFU elsewhere counts the full s x s square) is above every published {kind} run "
            f"on {judged['gpu']} in {judged['precision']} (highest {100 * judged['published_mfu']:.1f}%, "
            f"{judged['run']}; validation/{judged['file']}): {so}")
