"""How far the cost model's step times were off on the published runs of the plan's own model: the scored rows of
validation/runs.yaml and holdout.yaml whose architecture is the plan's (architecture_of: layers, widths, heads,
vocabulary as Megatron pads it, experts, latent attention, windows; not the sequence length or the
multi-token-prediction depth, which runs choose), on any GPU and in any precision, at the shipped constants.

The accuracy line by GPU (planner/analysis/accuracy.py) pools the runs of every model of the plan's kind; a model
unlike the fitted ones can sit far from that pool: NVIDIA's GPT-OSS 120B runs, held out, are 15-41% faster in the
model than measured where the fitted MoE rows on the same GPUs (fine-grained: another kind since 2026-12-06,
accuracy.kind_of) are within 8% on average (validation/README.md,
"GPT-OSS 120B in Megatron-Bridge's tables"). Computed by planner/validation/bymodel.py, shipped as
validation/step_errors_by_model.yaml.
"""
from __future__ import annotations

from functools import lru_cache

from planner.analysis import accuracy

FILE = "step_errors_by_model.yaml"


# Megatron pads the vocabulary to a multiple of 128 x TP (--make-vocab-size-divisible-by, default 128), so to 1,024
# at TP 8: GPT-3's tokenizer has 50,257 tokens and the Megatron-LM paper's configuration prints the padded 51,200.
VOCAB_PADDING = 1024


def padded_vocab(vocab_size: int) -> int:
    """The vocabulary padded as Megatron pads it at TP 8: a tokenizer's size and the padded size a paper or catalog
    prints name one model."""
    return -(-vocab_size // VOCAB_PADDING) * VOCAB_PADDING


def architecture_of(model) -> str:
    """A costmodel Model's architecture as one string, the key of the shipped records (the vocabulary padded:
    padded_vocab)."""
    parts = [f"{model.num_layers} layers", f"hidden {model.hidden_size}",
             f"{model.num_attention_heads}/{model.kv_heads} heads" + ("" if model.mla else f" of {model.head_dim}"),
             f"{model.mlp} ffn {model.ffn}",
             f"vocab {padded_vocab(model.vocab_size)} padded"]
    if model.attention_window:
        parts.append(f"window {model.attention_window} ({model.window_kind}, global every "
                     f"{model.global_attention_every or 'none'})")
    if model.mla is not None:
        a = model.mla
        parts.append(f"latent q {a.q_lora_rank} kv {a.kv_lora_rank}, heads {a.qk_nope_head_dim}+{a.qk_rope_head_dim}/"
                     f"{a.v_head_dim}")
    if model.moe is not None:
        m = model.moe
        parts.append(f"{m.num_experts} experts top {m.experts_per_token} of {m.ffn_hidden_size}, shared "
                     f"{m.shared_ffn_hidden_size}, first {m.first_dense_layers} dense, every {m.layer_freq}")
    return ", ".join(parts)


@lru_cache(maxsize=1)
def shipped() -> dict[str, dict]:
    """The precomputed records by architecture (see planner/validation/bymodel.py compute)."""
    from planner.inputs.catalogs import read_published

    return {e["architecture"]: e for e in read_published(FILE)}


def judge(model) -> dict | None:
    """The shipped record of the plan's model architecture; None where no published run trained it."""
    return shipped().get(architecture_of(model))


def line(judged: dict | None) -> str | None:
    """One line on the runs of the plan's own model, else None."""
    if judged is None:
        return None
    s = judged["shipped"]
    runs = f"{s['n']} published run{'s' if s['n'] != 1 else ''}"
    split = (f"{judged['fitted_runs']} fitted, {judged['held_out_runs']} held out" if judged["held_out_runs"]
             else "all fitted")
    return (f"on the {runs} of this model ({judged['model']}; {split}; on {', '.join(judged['gpus'])}) the model's "
            f"step time was off by {100 * s['mape']:.1f}% on average ({accuracy.leaning(s)}; up to "
            f"{100 * s['max_abs']:.1f}%, {s['worst_run']}) (validation/step_errors_by_model.yaml)")


def validation_lines(by_gpu: dict | None, by_model: dict | None) -> list[str]:
    """The accuracy lines of a plan that have something to say: the runs like it on its GPU (accuracy.judge's
    record) and those of its own model (judge's record)."""
    return [text for text in (accuracy.line(by_gpu), line(by_model)) if text]
