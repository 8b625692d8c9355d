"""Map a Hugging Face `config.json` (Llama, Mistral, Qwen2, GPT-2, GPT-NeoX style) to a ModelSpec."""
from __future__ import annotations

import re
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from planner.errors import PlannerError
from planner.inputs.reading import describe_validation_error

# Each spec key: the HF keys that carry it, first match wins.
KEY_ALIASES = {
    "num_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size",),
    "seq_length": ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"),
    "num_kv_heads": ("num_key_value_heads", "multi_query_group_num"),
    "ffn_hidden_size": ("intermediate_size", "n_inner", "ffn_hidden_size"),
}
SWIGLU_ACTIVATIONS = {"silu", "swish", "swiglu"}
ALIBI_MODELS = {"bloom", "mpt"}
QKV_BIAS_MODELS = {"qwen2", "qwen2_moe"}
BIAS_FREE_MODELS = {"llama", "mistral", "mixtral", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text"}


def looks_like_hf_config(data: Any) -> bool:
    return isinstance(data, dict) and ("model_type" in data or "architectures" in data)


def _pick(data: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def _label(name: str) -> str:
    """A model name from a file or folder name: characters a name may not hold become '-'."""
    cleaned = re.sub(r"[^A-Za-z0-9 ._+:@()/-]", "-", name).strip(" -._") or "model"
    return cleaned[:128]


class HfKeys(BaseModel):
    """The keys of a config.json this module reads besides the shape (which ModelSpec checks), typed
    as the Transformers config classes define them; others are ignored."""

    model_config = ConfigDict(extra="allow")

    model_type: Optional[Annotated[str, Field(strict=True, max_length=64)]] = None
    hidden_act: Optional[Annotated[str, Field(strict=True, max_length=64)]] = None
    activation_function: Optional[Annotated[str, Field(strict=True, max_length=64)]] = None
    tie_word_embeddings: Optional[StrictBool] = None
    attention_dropout: Optional[Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)]] = None
    resid_pdrop: Optional[Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)]] = None
    hidden_dropout: Optional[Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)]] = None
    attention_bias: Optional[StrictBool] = None
    mlp_bias: Optional[StrictBool] = None
    alibi: Optional[StrictBool] = None


def hf_to_spec_dict(data: dict, name: str, seq_length: int | None = None) -> dict:
    """Spec fields from an HF config; `seq_length` overrides the (often huge) max_position_embeddings."""
    try:
        HfKeys.model_validate(data)
    except ValidationError as err:
        raise PlannerError(describe_validation_error(err, f"{name} config.json")) from None
    spec = {"name": _label(name)}
    for field, keys in KEY_ALIASES.items():
        value = _pick(data, keys)
        if value is not None:
            spec[field] = value
    if seq_length:
        spec["seq_length"] = seq_length
    missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size", "seq_length") if k not in spec]
    if missing:
        raise PlannerError(f"{name}: Hugging Face config lacks {', '.join(missing)}")
    act = str(_pick(data, ("hidden_act", "activation_function")) or "gelu").lower()
    spec["mlp"] = "swiglu" if act in SWIGLU_ACTIVATIONS else "gelu"
    spec["tie_embeddings"] = bool(data.get("tie_word_embeddings", data.get("model_type") == "gpt2"))
    spec["dropout"] = any((data.get(k) or 0) > 0 for k in ("attention_dropout", "resid_pdrop", "hidden_dropout"))
    spec.update(architecture(data))
    return spec


def architecture(data: dict) -> dict:
    """Norm, position encoding and biases, from the keys the Transformers config classes define:
    `rms_norm_eps` only on RMSNorm models (LlamaConfig, MistralConfig, Qwen2Config), `rope_theta` /
    `rotary_emb_base` / `rotary_pct` / `partial_rotary_factor` on RoPE models, ALiBi for BLOOM and MPT,
    learned absolute positions otherwise (GPT-2's `n_positions`); `attention_bias` / `mlp_bias` where
    the class has them (LlamaConfig: both False), a QKV-only bias for Qwen2 (its q/k/v_proj have
    bias=True, o_proj and the MLP none), biases everywhere for GPT-2-style models."""
    model_type = str(data.get("model_type", ""))
    out: dict = {"normalization": "rmsnorm" if "rms_norm_eps" in data else "layernorm"}
    theta = _pick(data, ("rope_theta", "rotary_emb_base"))
    percent = _pick(data, ("rotary_pct", "partial_rotary_factor"))
    if theta is not None or percent is not None:
        out.update(position_embedding="rope", rope_theta=theta if theta is not None else 10000.0)
        if percent is not None:
            out["rotary_percent"] = percent
    elif model_type in ALIBI_MODELS or data.get("alibi"):
        out["position_embedding"] = "alibi"
    if model_type in QKV_BIAS_MODELS:
        out.update(linear_bias=False, qkv_bias=True)
    elif "attention_bias" in data or "mlp_bias" in data:
        out["linear_bias"] = bool(data.get("attention_bias")) or bool(data.get("mlp_bias"))
    elif model_type in BIAS_FREE_MODELS:
        out["linear_bias"] = False
    return out
