"""Map a Hugging Face `config.json` (Llama, Mistral, Qwen2, GPT-2, GPT-NeoX style) to a ModelSpec."""
from __future__ import annotations

from typing import Any

from planner.errors import PlannerError

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


def looks_like_hf_config(data: Any) -> bool:
    return isinstance(data, dict) and ("model_type" in data or "architectures" in data)


def _pick(data: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def hf_to_spec_dict(data: dict, name: str, seq_length: int | None = None) -> dict:
    """Spec fields from an HF config; `seq_length` overrides the (often huge) max_position_embeddings."""
    spec = {"name": name}
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
    spec["dropout"] = any(float(data.get(k) or 0) > 0 for k in ("attention_dropout", "resid_pdrop", "hidden_dropout"))
    return spec
