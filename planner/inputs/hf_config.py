"""Map a Hugging Face `config.json` to a ModelSpec.

Dense models (Llama, Mistral, Qwen2, Qwen3, Gemma 1/2/3, GPT-2, GPT-NeoX style), mixtures of experts
(Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2/V3, Kimi K2, GLM-4.5, Llama 4, gpt-oss, OLMoE), multi-head
latent attention (DeepSeek-V2/V3, Kimi K2), multi-token prediction (DeepSeek-V3, Kimi K2, GLM-4.5) and
local attention (Mistral's sliding window, Gemma 2/3 and gpt-oss sliding layers, Llama 4 chunked layers).
A wrapper config that holds the language model under `text_config` (Llama 4, Gemma 3, Kimi K2.5) is read
from there; its vision tower is not modelled (said in the spec's `notes`). Any other model_type is
refused (KNOWN_MODEL_TYPES).

Any key that changes the arithmetic and that the cost model cannot represent is refused in one line
naming the key (PlannerError): state-space / linear-attention hybrids, MoE layer layouts other than
"the first k layers dense, then every f-th layer MoE", experts on a model type this module does not
map, an activation that is neither SiLU, a GeLU nor squared ReLU. A config with an expert count is never
read as dense, and a family whose MLP class is gated (`GATED_MODELS`) never as a 2-matrix MLP.

Defaults and semantics are those of the Transformers configuration and modeling classes, read at
transformers v4.57.1 (PyPI wheel; src/transformers/models/<name>/configuration_<name>.py and
modeling_<name>.py for mixtral, mistral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3,
llama4, gpt_oss, gemma, gemma2, gemma3, olmoe; glm4_moe at modular_glm4_moe.py @0e97420c). Where a
config.json omits a key, the class default applies (`CLASS_DEFAULTS`); a key given as null is None, as
the classes read it. The classes' facts are tables in hf_classes.py; the experts, their router, multi-head
latent attention and the MTP modules are read in hf_moe.py; typed reads of one key in hf_reader.py.
"""
from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.hf_classes import (
    ALIBI_MODELS, ALL_LAYERS_SLIDE, ATTENTION_BIAS_DEFAULTS, ATTENTION_LAYER_TYPES, BIAS_FREE_MODELS,
    CLASS_DEFAULTS, EXPERT_COUNT_KEYS, GATED_MODELS, GEGLU_MODELS, GELU_ACTIVATIONS, HYBRID_KEYS,
    HYBRID_MODEL_TYPES, HYBRID_PREFIXES, KEY_ALIASES, KNOWN_MODEL_TYPES, MAX_WINDOW_LAYERS_SLIDE, MLP_BIASED,
    MOE_FAMILIES, MOE_HINT_KEYS, MTP_FAMILIES, NORM_EPSILON_KEYS, QKV_BIAS_MODELS, QKV_ONLY_ATTENTION_BIAS,
    SPLIT_BIAS_KEYS,
    QK_NORM_MODELS, RMSNORM_MODELS, ROPE_THETA_DEFAULTS, ROTARY_PERCENT_DEFAULTS, SPARSE_ATTENTION_KEYS,
    SWIGLU_ACTIVATIONS, TEXT_CONFIG_TYPES, TIED_BY_DEFAULT, USE_QK_NORM_KINDS, USE_SLIDING_WINDOW_MODELS,
)
from planner.inputs.hf_moe import expert_count_key, mla_fields, moe_fields, mtp_layers
from planner.inputs.hf_reader import Reader, pick, show
from planner.inputs.hf_rope import full_attention_parameters, ignored_rope_keys, rope_scaling
from planner.inputs.reading import describe_validation_error


def looks_like_hf_config(data: Any) -> bool:
    return isinstance(data, dict) and ("model_type" in data or "architectures" in data)


def _label(name: str) -> str:
    """A model name from a file or folder name: characters a name may not hold become '-'."""
    cleaned = re.sub(r"[^A-Za-z0-9 ._+:@()/-]", "-", name).strip(" -._") or "model"
    return cleaned[:128]


# Dropout inside every layer (attention probabilities, the residual branches), which the activation memory
# counts (Korthikanti et al. 2022, eq. 1's masks): Llama's and Qwen's attention_dropout, GPT-2's and Phi's
# resid_pdrop and attn_pdrop, Falcon's and BLOOM's hidden_dropout, Seed-OSS's residual_dropout.
LAYER_DROPOUT_KEYS = ("attention_dropout", "resid_pdrop", "attn_pdrop", "hidden_dropout", "residual_dropout")


class HfKeys(BaseModel):
    """The keys of a config.json this module reads besides the shape (which ModelSpec checks), typed
    as the Transformers config classes define them; others are ignored."""

    model_config = ConfigDict(extra="allow")

    model_type: Annotated[str, Field(strict=True, max_length=64)] | None = None
    hidden_act: Annotated[str, Field(strict=True, max_length=64)] | None = None
    hidden_activation: Annotated[str, Field(strict=True, max_length=64)] | None = None
    activation_function: Annotated[str, Field(strict=True, max_length=64)] | None = None
    tie_word_embeddings: StrictBool | None = None
    attention_dropout: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)] | None = None
    resid_pdrop: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)] | None = None
    hidden_dropout: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)] | None = None
    residual_dropout: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)] | None = None
    attn_pdrop: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)] | None = None
    embd_pdrop: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, lt=1)] | None = None
    attention_bias: StrictBool | None = None
    attention_out_bias: StrictBool | None = None
    mlp_bias: StrictBool | None = None
    alibi: StrictBool | None = None
    use_sliding_window: StrictBool | None = None
    use_qk_norm: StrictBool | None = None


# The config.json keys each spec field is read from (the first present is named), for errors the spec raises
# after the import: "num_kv_heads (7)" is text_config.num_key_value_heads in a Llama 4 file.
HF_KEYS_OF_FIELD = {
    **KEY_ALIASES, "rotary_percent": ("partial_rotary_factor", "rotary_pct"), "norm_epsilon": NORM_EPSILON_KEYS,
    "rope_theta": ("rope_theta", "rotary_emb_base"), "mtp_layers": ("num_nextn_predict_layers",),
    "num_experts": EXPERT_COUNT_KEYS, "experts_per_token": ("num_experts_per_tok",), "router_groups": ("n_group",),
    "router_group_topk": ("topk_group",), "expert_ffn_hidden_size": ("moe_intermediate_size",),
}


def with_hf_keys(message: str, data: dict) -> str:
    """A spec error on an imported config, naming the config.json keys behind the spec fields it names."""
    nested = data.get("text_config") if isinstance(data.get("text_config"), dict) else None
    text, prefix = (nested, "text_config.") if nested is not None else (data, "")
    named = []
    for field, keys in HF_KEYS_OF_FIELD.items():
        key = next((k for k in keys if k in text), None)
        if key and re.search(rf"(?<![\w.]){field}(?!\w)", message) and prefix + key != field:
            named.append(f"{field} is {prefix}{key}")
    message = message.replace("(top level): ", "")
    return f"{message} (config.json: {', '.join(named)})" if named else message


def _layers(text: dict) -> int | None:
    """The layer count when it is one the spec accepts; else None (ModelSpec then refuses it)."""
    value = pick(text, KEY_ALIASES["num_layers"])
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= L.MAX_LAYERS:
        return None
    return value


def _text_config(data: dict, name: str) -> tuple[dict, str, list[str]]:
    """The dict holding the language model (the config itself, or its `text_config`), with the class
    defaults of its model type filled in for absent keys, and notes on what is not modelled."""
    notes: list[str] = []
    model_type = data.get("model_type")
    text, prefix = data, ""
    nested = data.get("text_config")
    if nested is not None:
        if not isinstance(nested, dict):
            raise PlannerError(f"{name} config.json: text_config: must be an object (got {show(nested)})")
        text, prefix = dict(nested), "text_config."
        inner = text.get("model_type") or TEXT_CONFIG_TYPES.get(str(model_type))
        # some Llama 4 checkpoints repeat the wrapper's type ("llama4") inside text_config
        inner = TEXT_CONFIG_TYPES.get(str(inner), inner)
        # Llama4Config, Gemma3Config: the wrapper's tie_word_embeddings decides the output layer when the
        # text config does not say.
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in data:
            text["tie_word_embeddings"] = data["tie_word_embeddings"]
        text["model_type"] = inner
        for key in towers(data):
            notes.append(f"the {key.removesuffix('_config')} tower ({key}) and its projector are not modelled: this "
                         "is the language model alone")
    kind = text.get("model_type")
    defaults = CLASS_DEFAULTS.get(str(kind), {})
    text = {**{k: v for k, v in defaults.items() if k not in text}, **text}
    return text, prefix, notes


def hf_to_spec_dict(data: dict, name: str, seq_length: int | None = None) -> dict:
    """Spec fields from an HF config; `seq_length` overrides the (often huge) max_position_embeddings."""
    try:
        HfKeys.model_validate(data)
        if isinstance(data.get("text_config"), dict):
            HfKeys.model_validate(data["text_config"])
    except ValidationError as err:
        raise PlannerError(describe_validation_error(err, f"{name} config.json")) from None
    text, prefix, notes = _text_config(data, name)
    model_type = str(text.get("model_type") or "")
    reader = Reader(text, name, prefix)
    if not model_type:
        raise reader.fail("model_type", "is missing or null: planner reads a config by the Transformers class its "
                                        "model_type names")
    refuse_unrepresentable(data, text, reader)
    if model_type not in KNOWN_MODEL_TYPES:
        known = ", ".join(sorted(KNOWN_MODEL_TYPES))
        raise reader.fail("model_type", f"{model_type!r} is not a family planner maps ({known}): "
                          "its attention layout, tied embeddings and other class defaults would be guessed; "
                          "write a model YAML instead (catalogs/models/*.yaml show the fields)")
    spec: dict = {"name": _label(name)}
    for field, keys in KEY_ALIASES.items():
        key = next((k for k in keys if text.get(k) is not None), None)
        if key is not None:  # every shape key is a count: name the file's key, not the spec's field
            spec[field] = reader.integer(key, 1)
    context = spec.get("seq_length")  # the longest context the model takes: checked even when not trained at
    if context is not None and (type(context) is not int or not 1 <= context <= L.MAX_SEQ_LENGTH):
        key = next((k for k in KEY_ALIASES["seq_length"] if k in text), KEY_ALIASES["seq_length"][0])
        raise PlannerError(f"{name}: {key} {context!r} is not a whole number of tokens between 1 and "
                           f"{L.MAX_SEQ_LENGTH}")
    if seq_length:
        spec["seq_length"] = seq_length
    needed = ("num_layers", "hidden_size", "num_attention_heads", "vocab_size", "seq_length")
    missing = [k for k in needed if k not in spec]
    if missing:
        raise PlannerError(f"{name}: Hugging Face config lacks {', '.join(missing)}")
    spec["mlp"] = mlp_kind(text, reader)
    if model_type == "gpt_oss":
        spec.update(gpt_oss_details(reader))
    spec["tie_embeddings"] = bool(text.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT))
    spec["dropout"] = any((text.get(k) or 0) > 0 for k in LAYER_DROPOUT_KEYS)
    notes += dropout_rate_notes(text)
    if (text.get("embd_pdrop") or 0) > 0 and not spec["dropout"]:  # GPT-2's, Phi's: on the embedding output only
        notes.append(f"embd_pdrop {text['embd_pdrop']}: the embedding output's dropout mask (one byte per element of "
                     "a micro-batch's embeddings, first stage) is not counted; the layers have no dropout")
    if model_type == "mpt":
        spec.update(mpt_details(reader, spec.get("hidden_size")))
    spec.update(architecture(text))
    spec.update(bias_fields(reader, model_type))
    if spec.get("position_embedding", "learned") == "learned" and context and spec["seq_length"] > context:
        key = next(k for k in KEY_ALIASES["seq_length"] if text.get(k) is not None)
        raise reader.fail(key, f"{context}: a table of {context} learned positions, so sequences of "
                               f"{spec['seq_length']} tokens do not fit this model")
    if spec.get("position_embedding") == "rope":
        spec.update(rope_scaling(reader))
        notes += ignored_rope_keys(reader)
    layers = _layers(text)
    head_dim = reader.integer("head_dim", 1)
    mla = mla_fields(reader, model_type)
    if mla:
        spec["mla"] = mla
    elif head_dim:
        hidden, heads = spec.get("hidden_size"), spec.get("num_attention_heads")
        if not (isinstance(hidden, int) and isinstance(heads, int) and hidden == head_dim * heads):
            spec["head_dim"] = head_dim
    moe, ffn, moe_notes = moe_fields(reader, model_type, layers)
    notes += moe_notes
    if moe:
        spec["moe"] = moe
    if ffn is not None:
        spec["ffn_hidden_size"] = ffn
    if model_type in GATED_MODELS and "ffn_hidden_size" not in spec:
        raise reader.fail("intermediate_size", "is missing or null: a gated MLP's width is not the 4 x hidden_size "
                                               "a missing width means")
    mtp = mtp_layers(reader, model_type)
    if mtp:
        spec["mtp_layers"] = mtp
    window, window_notes = local_attention(reader, model_type, layers)
    spec.update(window)
    spec.update(nope_every(reader, model_type, layers))
    if spec.get("nope_every") and model_type == "llama4_text":
        window_notes.append("Llama 4's NoPE layers' attention temperature tuning is not counted")
    notes += window_notes
    notes += ignored_details(text, model_type)
    if notes:
        spec["notes"] = (f"Imported from a Hugging Face config.json (model_type {model_type or 'unknown'}) by "
                         "planner/inputs/hf_config.py; " + "; ".join(notes) + ".")
    return spec


def gpt_oss_details(r: Reader) -> dict:
    """gpt-oss's MLP and attention as Transformers v4.57.1 builds them: GptOssExperts clamps the gate
    at swiglu_limit (above) and the up projection at +-swiglu_limit, then (up + 1) x gate x
    sigmoid(1.702 gate), Megatron-core's quick_gelu GLU with glu_linear_offset 1 and
    activation_func_clamp_value (Megatron-Bridge's GPTOSSProvider sets those three); GptOssAttention
    adds a learned sink logit per head to each softmax (Megatron-core softmax_type learnable)."""
    limit = r.number("swiglu_limit", 7.0, 1e6)
    return {"mlp": "quick_geglu", "glu_linear_offset": 1.0, "glu_clamp": limit, "attention_sinks": True}


def mpt_details(r: Reader, hidden: int | None) -> dict:
    """MPT as Transformers' Mpt classes build it (read at v4.57.1 and at main, 2026): MptMLP is 4 x d_model
    wide whatever expansion_ratio says, MptAttention is multi-head with no bias, MptModel always adds
    ALiBi; attention and residual dropout are attn_config.attn_pdrop. A file that asks for anything else
    (MosaicML's llm-foundry builds it; Transformers would load it wrongly) is refused naming the key."""
    ratio = r.data.get("expansion_ratio", 4)
    if ratio != 4:
        raise r.fail("expansion_ratio", f"{show(ratio)}: Transformers' MptMLP is 4 x d_model wide whatever this "
                     "says, so the class planner reads by is not this model")
    if r.data.get("no_bias", True) is not True:
        raise r.fail("no_bias", f"{show(r.data['no_bias'])}: Transformers' MPT layers have no biases")
    attn = r.data.get("attn_config") or {}
    if not isinstance(attn, dict):
        raise r.fail("attn_config", f"must be an object (got {show(attn)})")
    # (llm-foundry writes kv_n_heads into every attn_config; it counts only under grouped-query attn_type)
    unsupported = [("attn_type", attn.get("attn_type", "multihead_attention") != "multihead_attention"),
                   ("alibi", attn.get("alibi", True) is not True), ("qk_ln", bool(attn.get("qk_ln"))),
                   ("qk_gn", bool(attn.get("qk_gn"))), ("rope", bool(attn.get("rope"))),
                   ("sliding_window_size", attn.get("sliding_window_size", -1) not in (None, -1))]
    for key, bad in unsupported:
        if bad:
            raise r.fail(f"attn_config.{key}", f"{show(attn.get(key))}: Transformers' MptAttention runs full "
                         "multi-head attention with ALiBi and no query/key norm or RoPE, so the class planner "
                         "reads by is not this model")
    ffn = r.data.get("ffn_config") or {}
    if isinstance(ffn, dict) and ffn.get("ffn_type", "mptmlp") != "mptmlp":
        raise r.fail("ffn_config.ffn_type", f"{show(ffn.get('ffn_type'))}: Transformers' MptMLP is the plain "
                     "4 x d_model GeLU MLP")
    pdrop = attn.get("attn_pdrop") or 0
    out: dict = {"dropout": True} if isinstance(pdrop, (int, float)) and pdrop > 0 else {}
    if isinstance(hidden, int):
        out["ffn_hidden_size"] = 4 * hidden
    return out


def mlp_kind(text: dict, reader: Reader) -> str:
    """The MLP class of a config: gated (3 matrices) for GATED_MODELS whatever the activation, and for
    other model types when the activation is SiLU; its activation from the key the class reads (Gemma's
    `hidden_activation`, else `hidden_act` / `activation_function`; absent, the class default, SiLU for
    the gated classes but Gemma's; null is refused). SiLU -> SwiGLU, a GeLU -> GeGLU
    when gated, else a 2-matrix GeLU MLP; squared ReLU (`relu2`, Nemotron) -> relu2. Any other
    activation (ReLU, a gated squared ReLU, ...) is refused naming the key: planner does not model it,
    and reading it as GeLU or SwiGLU would miscount or mislabel the MLP."""
    model_type = str(text.get("model_type") or "")
    gated = model_type in GATED_MODELS
    keys = ("hidden_activation", "hidden_act") if model_type in GEGLU_MODELS else ("hidden_act", "activation_function")
    key = next((k for k in keys if k in text), None)
    if key is not None and text[key] is None:
        raise reader.fail(key, "is null, which names no activation")
    # absent: the class default (GemmaConfig's gelu_pytorch_tanh, SiLU for the other gated classes, GeLU else)
    default = "gelu_pytorch_tanh" if model_type in GEGLU_MODELS else "silu" if gated else "gelu"
    key = key or keys[0]
    act = str(text.get(key) or default).lower()
    if act in SWIGLU_ACTIVATIONS:
        return "swiglu"
    if act in GELU_ACTIVATIONS:
        return "geglu" if gated else "gelu"
    if act == "relu2" and not gated:
        return "relu2"
    mlp = f"a gated MLP ({model_type})" if gated else "an MLP"
    raise reader.fail(key, f"activation {show(act)} in {mlp} is not modelled (planner models SiLU / SwiGLU, GeLU / "
                           "GeGLU and squared ReLU)")




def qk_norm_kind(data: dict, model_type: str) -> str:
    """ModelSpec.qk_norm of a config: QK_NORM_MODELS' learned norms; USE_QK_NORM_KINDS' when use_qk_norm."""
    if model_type in QK_NORM_MODELS:
        return QK_NORM_MODELS[model_type]
    return USE_QK_NORM_KINDS.get(model_type, "none") if data.get("use_qk_norm") else "none"




def architecture(data: dict) -> dict:
    """Norm, position encoding and biases, from the keys the Transformers config classes define:
    `rms_norm_eps` only on RMSNorm models (LlamaConfig, MistralConfig, Qwen2Config), `rope_theta` /
    `rotary_emb_base` / `rotary_pct` / `partial_rotary_factor` on RoPE models (in `rope_parameters` in
    Transformers v5 files; the class default where a RoPE class's file omits them), ALiBi for BLOOM and MPT,
    learned absolute positions otherwise (GPT-2's `n_positions`); query/key norms (QK_NORM_MODELS,
    Llama 4's `use_qk_norm`). The biases are bias_fields'."""
    model_type = str(data.get("model_type", ""))
    out: dict = {"normalization": "rmsnorm" if "rms_norm_eps" in data or model_type in RMSNORM_MODELS else "layernorm"}
    params = data.get("rope_parameters")  # Transformers v5 files: rope_theta and its partial factor move here
    params = params if isinstance(params, dict) else {}
    params = full_attention_parameters(params) or params  # v5's per-layer-type form: the global layers' RoPE
    theta = pick(params, ("rope_theta",))
    theta = theta if theta is not None else pick(data, ("rope_theta", "rotary_emb_base"))
    percent = pick(params, ("partial_rotary_factor",))
    percent = percent if percent is not None else pick(data, ("rotary_pct", "partial_rotary_factor"))
    theta = theta if theta is not None else ROPE_THETA_DEFAULTS.get(model_type)
    percent = percent if percent is not None else ROTARY_PERCENT_DEFAULTS.get(model_type)
    if theta is not None or percent is not None:
        out.update(position_embedding="rope", rope_theta=theta if theta is not None else 10000.0)
        if percent is not None:
            out["rotary_percent"] = percent
    elif model_type in ALIBI_MODELS or data.get("alibi"):
        out["position_embedding"] = "alibi"
    if (qk := qk_norm_kind(data, model_type)) != "none":
        out["qk_norm"] = qk
    eps = pick(data, NORM_EPSILON_KEYS)
    if eps is not None:
        out["norm_epsilon"] = eps
    return out


def bias_fields(reader: Reader, model_type: str) -> dict:
    """linear_bias / qkv_bias as the family's classes build their linear layers (Transformers v4.57.1): a
    bias on q/k/v only for Qwen2 (hard-coded) and GLM-4.5 (`attention_bias`); for the classes whose
    `attention_bias` switches the biases of all four attention projections (ATTENTION_BIAS_DEFAULTS) and
    whose MLP has its own rule (MLP_BIASED: Llama's `mlp_bias`, gpt-oss's and GPT-NeoX's always-biased
    MLPs), one switch for both when they agree; none for the bias-free classes, whatever keys their
    files carry (MistralAttention, Phi3Attention, MptAttention hard-code bias=False); every linear
    layer biased otherwise (GPT-2, BLOOM). Attention biased and MLP not, or the reverse, is refused:
    planner's one switch (Megatron-LM --add-bias-linear) biases every linear layer or none."""
    data = reader.data
    if model_type in SPLIT_BIAS_KEYS:
        return split_bias_fields(reader, model_type)
    if model_type in QKV_BIAS_MODELS:
        return {"linear_bias": False, "qkv_bias": True}
    if model_type in QKV_ONLY_ATTENTION_BIAS:
        return {"linear_bias": False, "qkv_bias": bool(data.get("attention_bias"))}
    if model_type in ATTENTION_BIAS_DEFAULTS:
        attention = data.get("attention_bias")
        attention = ATTENTION_BIAS_DEFAULTS[model_type] if attention is None else attention
        mlp_key = MLP_BIASED.get(model_type)
        mlp = bool(data.get(mlp_key)) if isinstance(mlp_key, str) else bool(mlp_key)
        if attention != mlp:
            where = f"mlp_bias {str(mlp).lower()}" if isinstance(mlp_key, str) else (
                "an MLP that always has biases" if mlp else "an MLP without biases")
            raise reader.fail("attention_bias", f"{str(attention).lower()} with {where} ({model_type}): biases on "
                              "the attention's projections but not the MLP's, or the reverse, which planner's one "
                              "bias switch for every linear layer (Megatron-LM --add-bias-linear) does not represent")
        return {"linear_bias": attention}
    if model_type in BIAS_FREE_MODELS:
        return {"linear_bias": False}
    return {}


# The rate the launch files train at when a model has dropout: Megatron-LM's --attention-dropout and
# --hidden-dropout defaults (arguments.py), which planner/emit/megatron.py leaves as they are.
LAUNCH_DROPOUT_RATE = 0.1


def dropout_rate_notes(text: dict) -> list[str]:
    """A note when the layers' dropout rates are not the ones the launch files train at: planner keeps whether
    a model has dropout (its masks are activation memory), not its rate."""
    rates = {key: text[key] for key in LAYER_DROPOUT_KEYS if isinstance(text.get(key), (int, float))}
    if not any(rates.values()) or all(rate == LAUNCH_DROPOUT_RATE for rate in rates.values()):
        return []
    shown = ", ".join(f"{key} {rate:g}" for key, rate in rates.items())
    return [f"dropout is read as on or off ({shown}): Megatron-LM's launch files train at its default "
            f"{LAUNCH_DROPOUT_RATE:g} for attention and hidden dropout; edit --attention-dropout and "
            "--hidden-dropout there for other rates"]


def split_bias_fields(reader: Reader, model_type: str) -> dict:
    """linear_bias / qkv_bias of a class with a switch per bias (SPLIT_BIAS_KEYS: Seed-OSS's attention_bias on
    q/k/v_proj, attention_out_bias on o_proj, mlp_bias on the MLP): every bias or none is one switch
    (Megatron-LM --add-bias-linear), q/k/v alone is --add-qkv-bias; any other mix is refused by its key."""
    keys = SPLIT_BIAS_KEYS[model_type]
    qkv, out, mlp = (bool(reader.data.get(key, default)) for key, default in keys.items())
    if qkv == out == mlp:
        return {"linear_bias": qkv}
    if qkv and not out and not mlp:
        return {"linear_bias": False, "qkv_bias": True}
    key = "attention_out_bias" if out else "mlp_bias"
    raise reader.fail(key, f"true with attention_bias {str(qkv).lower()} ({model_type}): planner biases every "
                           "linear layer, none, or q/k/v alone (Megatron-LM --add-bias-linear, --add-qkv-bias)")


def towers(data: dict) -> list[str]:
    """The wrapper's sub-configs other than the language model's that describe a network of their own (a
    vision, audio or speech encoder: a dict with a model_type or a layer count), e.g. Gemma 3's
    vision_config, Voxtral's audio_config; quantization_config and the like are not towers."""
    return [key for key, value in data.items()
            if key != "text_config" and key.endswith("_config") and isinstance(value, dict)
            and ("model_type" in value or pick(value, KEY_ALIASES["num_layers"] + ("depth", "encoder_layers"))
                 is not None)]


# Sub-configs that describe how weights are stored, not the layer stack: a quantized checkpoint's
# `quantization_config` (DeepSeek-V3's fp8 blocks; AQLM's and SpQR's `linear_weights_not_to_quantize`, which
# the hybrid scan read as linear-attention keys) and llm-compressor's `compression_config` (its config_groups,
# e.g. linear_w8a8). The plan's precision sets what training runs in.
NOT_ARCHITECTURE = frozenset({"quantization_config", "compression_config"})


def _dicts(node: Any, path: str = ""):
    """Every dict in a parsed config, with its dotted path ('' for the top level), but NOT_ARCHITECTURE's."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key not in NOT_ARCHITECTURE:
                yield from _dicts(value, f"{path}{key}.")
    elif isinstance(node, list):
        for value in node:
            yield from _dicts(value, path)


def refuse_unrepresentable(data: dict, text: dict, reader: Reader) -> None:
    """One PlannerError line for the first key that changes the arithmetic in a way the cost model
    cannot represent: hybrid (state-space, linear-attention) layer stacks, experts on a model type this
    module does not map (or anywhere but the language model), MLA or MTP outside DeepSeek's layout."""
    name = reader.name
    model_type = str(text.get("model_type") or "")
    for path, node in _dicts(data):
        for key, value in node.items():
            if value is None or value is False or value == [] or value == {}:
                continue
            if key in SPARSE_ATTENTION_KEYS:
                raise PlannerError(f"{name} config.json: {path}{key}: sparse attention (DeepSeek Sparse Attention's "
                                   "indexer picks the keys each query attends to), which planner's dense causal "
                                   "attention cost does not represent")
            if key == "attn_type_list" and isinstance(value, list) and value and all(v == 1 for v in value):
                continue  # MiniMax: 1 = softmax attention on every layer, no linear-attention layer
            if key in HYBRID_KEYS or key.startswith(HYBRID_PREFIXES):
                raise PlannerError(f"{name} config.json: {path}{key}: a state-space / linear-attention hybrid "
                                   "layer stack, which planner's cost model (attention + MLP layers) cannot represent")
    for kind in (model_type, str(data.get("model_type") or "")):
        if kind in HYBRID_MODEL_TYPES:
            raise PlannerError(f"{name} config.json: model_type {kind!r}: a family of state-space / recurrent "
                               "hybrids, which planner does not map (its cost model has attention and MLP layers)")
    if reader.has("use_bidirectional_attention") and text["use_bidirectional_attention"] is not False:
        raise reader.fail("use_bidirectional_attention", "an encoder (bidirectional attention), not the causal "
                          "decoder planner models")
    own = MOE_FAMILIES.get(model_type)
    for path, node in _dicts(data):
        is_text = node is data if reader.prefix == "" else path == reader.prefix
        for key in EXPERT_COUNT_KEYS:
            value = node.get(key)
            if value is None or value == 0:
                continue
            if is_text and own and key == expert_count_key(model_type):
                continue
            shown = reader.prefix + key if is_text else path + key
            if not own:
                raise PlannerError(f"{name} config.json: {shown} {show(value)}: a mixture of experts on model_type "
                                   f"{model_type or '(none)'!r}, which planner does not map (it maps "
                                   f"{', '.join(MOE_FAMILIES)}); it will not be read as dense")
            raise PlannerError(f"{name} config.json: {shown} {show(value)}: experts outside the language model's "
                               f"{expert_count_key(model_type) or 'expert count'}, which planner does not model")
    if not own:
        for key in MOE_HINT_KEYS:
            if reader.has(key) and text[key] != 0:
                raise reader.fail(key, f"{show(text[key])}: a mixture-of-experts setting on model_type "
                                       f"{model_type!r}, which planner does not map as one; it will not be read "
                                       "as dense")
    if own != "deepseek":
        for key in ("kv_lora_rank", "q_lora_rank"):
            if reader.has(key):
                raise reader.fail(key, f"multi-head latent attention on model_type {model_type!r}, whose layout "
                                       "planner does not map (it maps DeepSeek-V2/V3 and Kimi K2)")
    for key in ("num_nextn_predict_layers", "num_mtp_modules", "mtp_num_layers"):
        if not reader.has(key) or text[key] == 0:
            continue
        if own not in MTP_FAMILIES:
            raise reader.fail(key, f"multi-token prediction modules on model_type {model_type!r}, whose "
                                   "layout planner does not map (it maps DeepSeek-V3's and GLM-4.5's)")
        if key != "num_nextn_predict_layers":  # mtp_layers reads only the key DeepSeek's and GLM's files use
            raise reader.fail(key, f"model_type {model_type!r} counts its multi-token prediction modules in "
                                   "num_nextn_predict_layers; this key would be ignored")


def llama4_rope_layers(r: Reader, layers: int) -> list[int]:
    """Llama4TextConfig.no_rope_layers: 1 where the layer applies RoPE, 0 where it does not (NoPE); by
    default a NoPE layer every no_rope_layer_interval (4) layers (Transformers treats [] like None)."""
    rope = r.int_list("no_rope_layers")
    if not rope:
        interval = r.need_int("no_rope_layer_interval", 1)
        return [int((i + 1) % interval != 0) for i in range(layers)]
    if len(rope) < layers:
        raise r.fail("no_rope_layers", f"has {len(rope)} entries for {layers} layers")
    return rope[:layers]


# no_rope_layers: 1 where the layer applies RoPE (Llama4TextConfig, SmolLM3Config)
NOPE_MODELS = {"llama4_text", "smollm3"}


def nope_every(reader: Reader, model_type: str, layers: int | None) -> dict:
    """ModelSpec.nope_every: Llama 4's and SmolLM3's NoPE layers, whatever Llama 4's attention chunking, when they
    fall every n-th layer (Megatron-LM's --no-rope-freq n); another pattern is refused, not launched with RoPE."""
    if model_type not in NOPE_MODELS or not layers:
        return {}
    nope = [i for i, rope in enumerate(llama4_rope_layers(reader, layers)) if not rope]
    if not nope:
        return {}
    every = nope[0] + 1
    if nope != list(range(every - 1, layers, every)) or layers % every:
        raise reader.fail("no_rope_layers", f"puts NoPE layers at {show(nope)}: not every n-th layer of "
                          f"{layers}, the only pattern planner's launch states (--no-rope-freq)")
    return {"nope_every": every}


def _layer_kinds(reader: Reader, model_type: str, layers: int) -> tuple[list[str], str] | None:
    """Per layer 'full', 'sliding' or 'chunked', and the key the pattern came from; None when every
    layer is full attention."""
    r, text = reader, reader.data
    types = text.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise r.fail("layer_types", f"must be a list of {layers} layer types (got {show(types)})")
        unknown = [t for t in types if t not in ATTENTION_LAYER_TYPES]
        if unknown:
            raise r.fail("layer_types", f"holds {show(unknown[0])}: only full, sliding and chunked attention "
                         "layers are represented (not linear attention, state-space or convolution layers)")
    if model_type in USE_SLIDING_WINDOW_MODELS and not text.get("use_sliding_window"):
        # Qwen2Config / Qwen3Config / Qwen2MoeConfig / Qwen3MoeConfig set sliding_window to None unless
        # use_sliding_window, and a layer that layer_types makes "sliding_attention" then takes None: full.
        return None
    if types is not None:
        return [ATTENTION_LAYER_TYPES[t] for t in types], "layer_types"
    if model_type == "llama4_text":
        # Llama4TextConfig: no_rope_layers[i] == 1 (RoPE) -> chunked_attention, 0 (NoPE) -> full_attention.
        rope = llama4_rope_layers(r, layers)
        if not r.has("attention_chunk_size"):
            return None
        return ["chunked" if rope[i] else "full" for i in range(layers)], "no_rope_layers"
    if model_type == "gemma2" or model_type == "gpt_oss":
        # Gemma2Config / GptOssConfig: layer i slides when (i + 1) % 2 != 0.
        return ["sliding" if (i + 1) % 2 else "full" for i in range(layers)], "sliding_window"
    if model_type == "gemma3_text":
        # Gemma3TextConfig: sliding_window_pattern (the older int form, default 6): layer i is global when
        # (i + 1) % pattern == 0.
        pattern = r.need_int("sliding_window_pattern", 1)
        return ["sliding" if (i + 1) % pattern else "full" for i in range(layers)], "sliding_window_pattern"
    if not r.has("sliding_window"):
        return None
    if model_type in ALL_LAYERS_SLIDE:
        return ["sliding"] * layers, "sliding_window"
    if model_type in MAX_WINDOW_LAYERS_SLIDE:
        start = r.need_int("max_window_layers", 0)
        return ["sliding" if i >= start else "full" for i in range(layers)], "max_window_layers"
    raise r.fail("sliding_window", f"{show(text['sliding_window'])} on model_type {model_type!r}: which layers "
                 "use it is not known to planner (it maps Mistral, Mixtral, Phi-3, Qwen2/3, Gemma 2/3, gpt-oss, "
                 "Llama 4)")


def local_attention(reader: Reader, model_type: str, layers: int | None) -> tuple[dict, list[str]]:
    """attention_window, global_attention_every and window_kind (costmodel/types.py Model) from the
    per-layer attention kinds: layer i global exactly when (i + 1) % n == 0 (n = 0: every layer local)."""
    r = reader
    if model_type != "llama4_text" and r.has("attention_chunk_size"):
        raise r.fail("attention_chunk_size", f"chunked attention on model_type {model_type!r}, whose layer "
                     "pattern planner does not map (it maps Llama 4's)")
    if not layers:
        return {}, []
    found = _layer_kinds(r, model_type, layers)
    if found is None or all(k == "full" for k in found[0]):
        return {}, []
    kinds, source = found
    local = {k for k in kinds if k != "full"}
    if len(local) > 1:
        raise r.fail(source, "mixes sliding and chunked layers, which planner does not represent")
    kind = local.pop()
    window_key = "attention_chunk_size" if kind == "chunked" else "sliding_window"
    window = r.integer(window_key, 1)
    if window is None:
        raise r.fail(window_key, f"is missing or null while {source} makes layers {kind}")
    if all(k != "full" for k in kinds):
        every = 0
    else:
        every = kinds.index("full") + 1
        if any((k == "full") != ((i + 1) % every == 0) for i, k in enumerate(kinds)):
            raise r.fail(source, "places global layers other than every n-th layer, the only pattern "
                         "planner represents")
    out = {"attention_window": window, "window_kind": kind}
    if every:
        out["global_attention_every"] = every
    return out, []


def ignored_details(text: dict, model_type: str) -> list[str]:
    """What the config holds that the cost model leaves out, by design (under 0.1% of weights/FLOPs)."""
    notes = []
    if model_type == "gpt_oss":
        notes.append("the attention sinks' weights (one logit per head per layer) and the attention, router and "
                     "expert biases are not counted (about 0.04% of the weights)")
    qk = qk_norm_kind(text, model_type)
    if qk == "learned_all_heads":
        notes.append("the query/key RMSNorms span all heads (h + kv heads x head_dim weights per layer, not counted; "
                     "Megatron-LM's --qk-layernorm normalises each head, so its launch is refused)")
    elif qk == "learned":
        notes.append("the query/key norms' weights (2 x head_dim per layer) are not counted")
    elif qk == "l2":
        notes.append("Llama 4's query/key L2 norm runs on its RoPE layers only; the activations it keeps are "
                     "counted on every layer")
    if text.get("dual_chunk_attention_config"):
        notes.append("dual_chunk_attention_config (Qwen2.5-1M's chunked attention for long-context inference) is "
                     "not a training setting: attention is counted as full causal attention")
    if model_type in ("gemma2", "gemma3_text"):
        notes.append("Gemma's extra post-attention / post-MLP norms, logit soft-capping and embedding "
                     "scaling are not counted (no weights beyond the norms)")
    return notes
