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
the classes read it.
"""
from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from planner.errors import PlannerError
from planner.inputs import limits as L
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
GELU_ACTIVATIONS = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_accurate"}
ALIBI_MODELS = {"bloom", "mpt"}
QKV_BIAS_MODELS = {"qwen2", "qwen2_moe"}
# Classes whose attention_bias puts a bias on q/k/v_proj only (Glm4MoeAttention: o_proj bias=False; its MLPs,
# DeepSeek-V3's, have none).
QKV_ONLY_ATTENTION_BIAS = {"glm4_moe"}
BIAS_FREE_MODELS = {"llama", "mistral", "mixtral", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi3"}
# Gemma's MLP is gated (GemmaMLP / Gemma2MLP / Gemma3MLP: gate_proj, up_proj, down_proj) with a GeLU
# activation (`hidden_activation` "gelu_pytorch_tanh"): GeGLU, 3 matrices (Gemma report, arXiv:2403.08295).
GEGLU_MODELS = {"gemma", "gemma2", "gemma3_text"}
# Model types whose MLP class always has gate, up and down projections, whatever activation the config
# names (Transformers v4.57.1 LlamaMLP, MistralMLP, MixtralBlockSparseTop2MLP, Qwen2MLP, Qwen2MoeMLP,
# Qwen3MLP, Qwen3MoeMLP, DeepseekV2MLP, DeepseekV3MLP, Llama4TextMLP / Llama4TextExperts, Phi3MLP's fused
# gate_up_proj, OLMoE's experts, the Gemma MLPs). Their activation
# only names the gate's function: SiLU is SwiGLU, a GeLU is GeGLU, any other is refused (not modelled).
GATED_MODELS = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2",
                "deepseek_v3", "kimi_k2", "llama4_text", "phi3", "olmoe", "glm4_moe", *GEGLU_MODELS}
# A learned RMSNorm on each head's queries and keys before RoPE (Transformers v4.57.1 Qwen3Attention,
# Qwen3MoeAttention, Gemma3Attention: q_norm / k_norm over head_dim; OlmoeAttention's span all heads, the same
# elementwise work); Llama 4's is a weightless L2 norm
# (Llama4TextL2Norm) when `use_qk_norm` is set, on its RoPE layers only.
QK_NORM_MODELS = {"qwen3", "qwen3_moe", "gemma3_text", "olmoe"}

# Transformers v4.57.1 class defaults of the keys read here, for config.json files that omit them
# (Gemma 3's nested text_config omits vocab_size, rope_theta, rms_norm_eps; Mistral's sliding_window
# defaults to 4096, Mixtral's to None). Kimi K2 ships DeepSeek-V3's configuration class (its config.json
# auto_map: configuration_deepseek.DeepseekV3Config), so it takes DeepSeek-V3's.
CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "mistral": {"tie_word_embeddings": False, "sliding_window": 4096, "hidden_act": "silu", "rms_norm_eps": 1e-6},
    "mixtral": {"tie_word_embeddings": False, "sliding_window": None, "hidden_act": "silu", "rms_norm_eps": 1e-5,
                "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 14336},
    "qwen2": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28},
    "qwen3": {"tie_word_embeddings": False, "head_dim": 128, "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28, "attention_bias": False},
    "qwen2_moe": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
                  "max_window_layers": 28, "decoder_sparse_step": 1, "moe_intermediate_size": 1408,
                  "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4, "num_experts": 60,
                  "mlp_only_layers": None, "intermediate_size": 5632, "norm_topk_prob": False},
    "qwen3_moe": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
                  "decoder_sparse_step": 1, "moe_intermediate_size": 768, "num_experts_per_tok": 8,
                  "num_experts": 128, "mlp_only_layers": None, "intermediate_size": 6144, "attention_bias": False,
                  "norm_topk_prob": False},
    "deepseek_v2": {"tie_word_embeddings": False, "first_k_dense_replace": 0, "kv_lora_rank": 512,
                    "q_lora_rank": 1536, "n_routed_experts": 64, "n_shared_experts": 2, "qk_nope_head_dim": 128,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "num_experts_per_tok": None,
                    "moe_intermediate_size": 1407, "attention_bias": False, "mlp_bias": False,
                    "topk_method": "greedy", "norm_topk_prob": False, "routed_scaling_factor": 1.0, "n_group": None,
                    "topk_group": None},
    "deepseek_v3": {"tie_word_embeddings": False, "first_k_dense_replace": 3, "kv_lora_rank": 512,
                    "q_lora_rank": 1536, "n_routed_experts": 256, "n_shared_experts": 1, "qk_nope_head_dim": 128,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "num_experts_per_tok": 8,
                    "moe_intermediate_size": 2048, "attention_bias": False, "topk_method": "noaux_tc",
                    "norm_topk_prob": True, "routed_scaling_factor": 2.5, "n_group": 8, "topk_group": 4},
    "llama4_text": {"tie_word_embeddings": False, "vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                    "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
                    "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
                    "num_experts_per_tok": 1, "num_local_experts": 16, "moe_layers": None,
                    "interleave_moe_layer_step": 1, "no_rope_layers": None, "no_rope_layer_interval": 4,
                    "attention_chunk_size": 8192, "attention_bias": False, "use_qk_norm": True},
    "gpt_oss": {"tie_word_embeddings": False, "num_local_experts": 128, "num_experts_per_tok": 4,
                "intermediate_size": 2880, "head_dim": 64, "sliding_window": 128, "hidden_act": "silu",
                "rms_norm_eps": 1e-5, "rope_theta": 150000.0},
    "olmoe": {"tie_word_embeddings": False},
    "gemma": {"tie_word_embeddings": True, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "rms_norm_eps": 1e-6,
              "rope_theta": 10000.0, "attention_bias": False},
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
               "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "attention_bias": False, "sliding_window": 4096,
               "max_position_embeddings": 8192, "vocab_size": 256000},
    "gemma3_text": {"tie_word_embeddings": True, "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8, "head_dim": 256,
                    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072,
                    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "attention_bias": False, "sliding_window": 4096,
                    "sliding_window_pattern": 6, "use_bidirectional_attention": False},
}
# num_key_value_heads, whatever num_attention_heads the file gives (LlamaConfig's None means one per attention
# head, which is how planner reads an absent key).
KV_HEAD_DEFAULTS = {"mistral": 8, "mixtral": 8, "gpt_oss": 8, "qwen3_moe": 4, "qwen2_moe": 16, "qwen2": 32, "qwen3": 32,
                    "gemma": 16, "gemma2": 4, "gemma3_text": 4}
for _kind, _kv in KV_HEAD_DEFAULTS.items():
    CLASS_DEFAULTS[_kind]["num_key_value_heads"] = _kv
CLASS_DEFAULTS["kimi_k2"] = CLASS_DEFAULTS["deepseek_v3"]
# GLM-4.5 (Glm4MoeConfig.__init__, transformers modular_glm4_moe.py @0e97420c: the defaults describe GLM-4.5-Air's
# shape; head_dim has no default, Glm4MoeAttention takes hidden_size / num_attention_heads when the file omits
# it). Its router is DeepSeek-V3's class (Glm4MoeTopkRouter(DeepseekV3TopkRouter)), which has no topk_method or
# scoring_func key: router_fields gives it DeepSeek-V3's noaux_tc sigmoid routing.
CLASS_DEFAULTS["glm4_moe"] = {
    "tie_word_embeddings": False, "vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 10944,
    "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8, "partial_rotary_factor": 0.5,
    "hidden_act": "silu", "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "attention_bias": False, "moe_intermediate_size": 1408, "num_experts_per_tok": 8, "n_shared_experts": 1,
    "n_routed_experts": 128, "routed_scaling_factor": 1.0, "n_group": 1, "topk_group": 1,
    "first_k_dense_replace": 1, "norm_topk_prob": True, "use_qk_norm": False}
# Wrapper configs whose language model sits under `text_config`, and that part's model_type when the
# nested dict does not say (Llama4Config -> Llama4TextConfig, Gemma3Config -> Gemma3TextConfig).
TEXT_CONFIG_TYPES = {"llama4": "llama4_text", "gemma3": "gemma3_text", "kimi_k25": "kimi_k2"}

MOE_FAMILIES = {"mixtral": "mixtral", "qwen2_moe": "qwen_moe", "qwen3_moe": "qwen_moe", "deepseek_v2": "deepseek",
                "deepseek_v3": "deepseek", "kimi_k2": "deepseek", "llama4_text": "llama4", "gpt_oss": "gpt_oss",
                "olmoe": "olmoe", "glm4_moe": "glm"}
# Families with DeepSeek-V3's multi-token prediction modules (num_nextn_predict_layers): GLM-4.5 keeps one
# (Glm4MoeModel skips layer 92 / 46 at load, as Transformers' DeepSeek-V3 skips layer 61).
MTP_FAMILIES = {"deepseek", "glm"}
# Keys that count routed experts, in any model family (and DBRX's nested ffn_config.moe_num_experts).
EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_moe_experts",
                     "n_experts", "num_routed_experts", "expert_num")
# Keys that only a mixture of experts sets (top-k, expert and shared-expert widths): on a model type not
# mapped as one (MOE_FAMILIES) they are refused like an expert count.
MOE_HINT_KEYS = ("num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
                 "n_shared_experts", "moe_top_k", "moe_k")
# Keys of state-space, linear-attention and other hybrid layer stacks, which the cost model (attention +
# MLP layers only) cannot represent: Nemotron-H, Jamba, Zamba, Bamba, Falcon-H1, Granite-4 hybrid,
# Qwen3-Next, MiniMax-01, Mamba/Mamba-2, RWKV, xLSTM, RecurrentGemma, LFM2.
HYBRID_KEYS = ("hybrid_override_pattern", "layers_block_type", "layer_block_types", "block_types",
               "attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset",
               "full_attention_interval", "attn_type_list", "mamba_d_state", "mamba_d_conv", "mamba_expand",
               "state_size", "time_step_rank", "conv_kernel", "ssm_cfg", "lru_width", "slstm_block_map",
               "full_attn_idxs")
HYBRID_PREFIXES = ("ssm_", "mamba_", "linear_", "lightning_")
# DeepSeek-V3.2's sparse attention (DSA): a lightning indexer picks index_topk keys per query
# (DeepSeek-V3.2-Exp config.json: index_n_heads 64, index_head_dim 128, index_topk 2048), so attention
# costs O(s x k), not the dense causal O(s^2 / 2) the cost model counts.
SPARSE_ATTENTION_KEYS = ("index_topk", "index_n_heads", "index_head_dim")
HYBRID_MODEL_TYPES = {"mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "nemotron_h",
                      "falcon_h1", "granitemoehybrid", "qwen3_next", "minimax", "rwkv", "recurrent_gemma", "xlstm",
                      "lfm2", "plamo2"}
# The model types whose every key this module reads by family (the classes cited above), plus the decoders
# the generic reading describes exactly (GPT-2, GPT-NeoX, Phi-3). Any other type is refused: read from its
# shape keys alone it was guessed wrong more often than right (Falcon's and StarCoder's multi_query read as
# one K/V head per query head, SmolLM3's and Cohere's tied output layer as untied, Nemotron-NAS's per-layer
# block_configs, Mllama's cross-attention layers and Qwen2.5-VL's vision tower dropped).
KNOWN_MODEL_TYPES = {*MOE_FAMILIES, *ALIBI_MODELS, *QKV_BIAS_MODELS, *BIAS_FREE_MODELS, *CLASS_DEFAULTS, "gpt2",
                     "gpt_neox", "phi3"}
# Classes that keep PretrainedConfig's tie_word_embeddings=True (GPT2Config, BloomConfig and MptConfig do
# not override it; BloomForCausalLM and MptForCausalLM tie lm_head to the embedding); every other mapped
# class sets False (LlamaConfig, GPTNeoXConfig, Phi3Config, CLASS_DEFAULTS).
TIED_BY_DEFAULT = {"gpt2", "bloom", "mpt"}
# The RoPE base of the mapped RoPE classes that config.json files may omit (Transformers v4.57.1
# configuration_<name>.py __init__ defaults; Llama 4, gpt-oss and Gemma's are in CLASS_DEFAULTS): a
# config without rope_theta is still a RoPE model, not one with learned positions.
ROPE_THETA_DEFAULTS = {"llama": 10000.0, "mistral": 10000.0, "mixtral": 1e6, "qwen2": 10000.0, "qwen3": 10000.0,
                       "qwen2_moe": 10000.0, "qwen3_moe": 10000.0, "deepseek_v2": 10000.0, "deepseek_v3": 10000.0,
                       "kimi_k2": 10000.0, "olmoe": 10000.0, "phi3": 10000.0, "gpt_neox": 10000.0}
# The mapped classes whose norms are RMSNorms whether or not the file gives rms_norm_eps (LlamaRMSNorm,
# MistralRMSNorm, Qwen2RMSNorm, ... Phi3RMSNorm, GemmaRMSNorm); GPT-2, GPT-NeoX, BLOOM and MPT use LayerNorm.
RMSNORM_MODELS = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "deepseek_v2",
                  "deepseek_v3", "kimi_k2", "llama4_text", "gpt_oss", "olmoe", "phi3", "glm4_moe", *GEGLU_MODELS}
# GPTNeoXConfig: rotary_pct 0.25 of each head's dimensions rotate.
ROTARY_PERCENT_DEFAULTS = {"gpt_neox": 0.25}
ATTENTION_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked"}
# Families whose sliding_window (when not null) applies to every layer: MistralAttention,
# MixtralAttention and Phi3Attention pass config.sliding_window to every layer; Qwen3MoeModel builds one sliding-window
# mask for all layers when use_sliding_window is set.
ALL_LAYERS_SLIDE = {"mistral", "mixtral", "qwen3_moe", "phi3"}
# Qwen2 / Qwen3 / Qwen2-MoE: with use_sliding_window, layers i >= max_window_layers slide.
MAX_WINDOW_LAYERS_SLIDE = {"qwen2", "qwen3", "qwen2_moe"}


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


def _show(value: Any) -> str:
    """A value for a one-line message: repr, newlines escaped by repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
    attention_bias: StrictBool | None = None
    mlp_bias: StrictBool | None = None
    alibi: StrictBool | None = None
    use_sliding_window: StrictBool | None = None
    use_qk_norm: StrictBool | None = None


class _Reader:
    """Typed reads of one config dict; every failure is one PlannerError line naming the key."""

    def __init__(self, data: dict, name: str, prefix: str = ""):
        self.data, self.name, self.prefix = data, name, prefix

    def fail(self, key: str, why: str) -> PlannerError:
        return PlannerError(f"{self.name} config.json: {self.prefix}{key}: {why}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(self, key: str, lower: int = 0) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer (got {_show(value)})")
        if value < lower:
            raise self.fail(key, f"must be >= {lower} (got {value})")
        return value

    def number(self, key: str, default: float, upper: float) -> float:
        """A finite number in (0, upper], `default` when the key is absent (null is refused)."""
        if key not in self.data:
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= upper:
            raise self.fail(key, f"must be a number in (0, {upper:g}] (got {_show(value)})")
        return float(value)

    def need_int(self, key: str, lower: int = 0, why: str = "") -> int:
        value = self.integer(key, lower)
        if value is None:
            raise self.fail(key, f"is missing or null{why}")
        return value

    def int_list(self, key: str) -> list[int] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self.fail(key, f"must be a list of integers (got {_show(value)})")
        return value


def _layers(text: dict) -> int | None:
    """The layer count when it is one the spec accepts; else None (ModelSpec then refuses it)."""
    value = _pick(text, KEY_ALIASES["num_layers"])
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
            raise PlannerError(f"{name} config.json: text_config: must be an object (got {_show(nested)})")
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
    reader = _Reader(text, name, prefix)
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
        raise PlannerError(f"{name}: {key} {context!r} is not a whole number of tokens between 1 and {L.MAX_SEQ_LENGTH}")
    if seq_length:
        spec["seq_length"] = seq_length
    missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads", "vocab_size", "seq_length") if k not in spec]
    if missing:
        raise PlannerError(f"{name}: Hugging Face config lacks {', '.join(missing)}")
    spec["mlp"] = mlp_kind(text, reader)
    if model_type == "gpt_oss":
        spec.update(gpt_oss_details(reader))
    spec["tie_embeddings"] = bool(text.get("tie_word_embeddings", model_type in TIED_BY_DEFAULT))
    spec["dropout"] = any((text.get(k) or 0) > 0 for k in ("attention_dropout", "resid_pdrop", "hidden_dropout"))
    spec.update(architecture(text))
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
    if spec.get("nope_every"):
        window_notes.append("Llama 4's NoPE layers' attention temperature tuning is not counted")
    notes += window_notes
    notes += ignored_details(text, model_type)
    if notes:
        spec["notes"] = (f"Imported from a Hugging Face config.json (model_type {model_type or 'unknown'}) by "
                         "planner/inputs/hf_config.py; " + "; ".join(notes) + ".")
    return spec


def gpt_oss_details(r: _Reader) -> dict:
    """gpt-oss's MLP and attention as Transformers v4.57.1 builds them: GptOssExperts clamps the gate
    at swiglu_limit (above) and the up projection at +-swiglu_limit, then (up + 1) x gate x
    sigmoid(1.702 gate), Megatron-core's quick_gelu GLU with glu_linear_offset 1 and
    activation_func_clamp_value (Megatron-Bridge's GPTOSSProvider sets those three); GptOssAttention
    adds a learned sink logit per head to each softmax (Megatron-core softmax_type learnable)."""
    limit = r.number("swiglu_limit", 7.0, 1e6)
    return {"mlp": "quick_geglu", "glu_linear_offset": 1.0, "glu_clamp": limit, "attention_sinks": True}


def mlp_kind(text: dict, reader: _Reader) -> str:
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
    raise reader.fail(key, f"activation {_show(act)} in {mlp} is not modelled (planner models SiLU / SwiGLU, GeLU / "
                           "GeGLU and squared ReLU)")


# The classes whose query/key norm is switched by `use_qk_norm`, and its kind: GLM-4.5's learned RMSNorms over
# head_dim (Glm4MoeAttention q_norm / k_norm), Llama 4's weightless L2 norm.
USE_QK_NORM_KINDS = {"glm4_moe": "learned", "llama4_text": "l2"}


def qk_norm_kind(data: dict, model_type: str) -> str:
    """ModelSpec.qk_norm of a config: QK_NORM_MODELS' learned norms; USE_QK_NORM_KINDS' when use_qk_norm."""
    if model_type in QK_NORM_MODELS:
        return "learned"
    return USE_QK_NORM_KINDS.get(model_type, "none") if data.get("use_qk_norm") else "none"


# The norms' epsilon by the name each class gives it (LlamaConfig rms_norm_eps, GPTNeoXConfig layer_norm_eps,
# GPT2Config / BloomConfig layer_norm_epsilon): a launch detail Megatron-LM states as --norm-epsilon.
NORM_EPSILON_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon")


def architecture(data: dict) -> dict:
    """Norm, position encoding and biases, from the keys the Transformers config classes define:
    `rms_norm_eps` only on RMSNorm models (LlamaConfig, MistralConfig, Qwen2Config), `rope_theta` /
    `rotary_emb_base` / `rotary_pct` / `partial_rotary_factor` on RoPE models (in `rope_parameters` in
    Transformers v5 files; the class default where a RoPE class's file omits them), ALiBi for BLOOM and MPT,
    learned absolute positions otherwise (GPT-2's `n_positions`); `attention_bias` / `mlp_bias` where
    the class has them (LlamaConfig: both False), a QKV-only bias for Qwen2 (its q/k/v_proj have
    bias=True, o_proj and the MLP none), biases everywhere for GPT-2-style models; query/key norms
    (QK_NORM_MODELS, Llama 4's `use_qk_norm`)."""
    model_type = str(data.get("model_type", ""))
    out: dict = {"normalization": "rmsnorm" if "rms_norm_eps" in data or model_type in RMSNORM_MODELS else "layernorm"}
    params = data.get("rope_parameters")  # Transformers v5 files: rope_theta and its partial factor move here
    params = params if isinstance(params, dict) else {}
    theta = _pick(params, ("rope_theta",))
    theta = theta if theta is not None else _pick(data, ("rope_theta", "rotary_emb_base"))
    percent = _pick(params, ("partial_rotary_factor",))
    percent = percent if percent is not None else _pick(data, ("rotary_pct", "partial_rotary_factor"))
    theta = theta if theta is not None else ROPE_THETA_DEFAULTS.get(model_type)
    percent = percent if percent is not None else ROTARY_PERCENT_DEFAULTS.get(model_type)
    if theta is not None or percent is not None:
        out.update(position_embedding="rope", rope_theta=theta if theta is not None else 10000.0)
        if percent is not None:
            out["rotary_percent"] = percent
    elif model_type in ALIBI_MODELS or data.get("alibi"):
        out["position_embedding"] = "alibi"
    if model_type in QKV_BIAS_MODELS:
        out.update(linear_bias=False, qkv_bias=True)
    elif model_type in QKV_ONLY_ATTENTION_BIAS:
        out.update(linear_bias=False, qkv_bias=bool(data.get("attention_bias")))
    elif "attention_bias" in data or "mlp_bias" in data:
        out["linear_bias"] = bool(data.get("attention_bias")) or bool(data.get("mlp_bias"))
    elif model_type in BIAS_FREE_MODELS:
        out["linear_bias"] = False
    if (qk := qk_norm_kind(data, model_type)) != "none":
        out["qk_norm"] = qk
    eps = _pick(data, NORM_EPSILON_KEYS)
    if eps is not None:
        out["norm_epsilon"] = eps
    return out


def towers(data: dict) -> list[str]:
    """The wrapper's sub-configs other than the language model's that describe a network of their own (a
    vision, audio or speech encoder: a dict with a model_type or a layer count), e.g. Gemma 3's
    vision_config, Voxtral's audio_config; quantization_config and the like are not towers."""
    return [key for key, value in data.items()
            if key != "text_config" and key.endswith("_config") and isinstance(value, dict)
            and ("model_type" in value or _pick(value, KEY_ALIASES["num_layers"] + ("depth", "encoder_layers"))
                 is not None)]


def _dicts(node: Any, path: str = ""):
    """Every dict in a parsed config, with its dotted path ('' for the top level)."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _dicts(value, f"{path}{key}.")
    elif isinstance(node, list):
        for value in node:
            yield from _dicts(value, path)


def refuse_unrepresentable(data: dict, text: dict, reader: _Reader) -> None:
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
                raise PlannerError(f"{name} config.json: {shown} {_show(value)}: a mixture of experts on model_type "
                                   f"{model_type or '(none)'!r}, which planner does not map (it maps mixtral, qwen2_moe, "
                                   "qwen3_moe, deepseek_v2, deepseek_v3, kimi_k2, glm4_moe, llama4, gpt_oss, "
                                   "olmoe); it will not be read as dense")
            raise PlannerError(f"{name} config.json: {shown} {_show(value)}: experts outside the language model's "
                               f"{expert_count_key(model_type) or 'expert count'}, which planner does not model")
    if not own:
        for key in MOE_HINT_KEYS:
            if reader.has(key) and text[key] != 0:
                raise reader.fail(key, f"{_show(text[key])}: a mixture-of-experts setting on model_type "
                                       f"{model_type!r}, which planner does not map as one; it will not be read as dense")
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


def expert_count_key(model_type: str) -> str | None:
    return {"mixtral": "num_local_experts", "qwen_moe": "num_experts", "deepseek": "n_routed_experts",
            "glm": "n_routed_experts",
            "llama4": "num_local_experts", "gpt_oss": "num_local_experts",
            "olmoe": "num_experts"}.get(MOE_FAMILIES.get(model_type, ""))


def fit_moe_layout(moe_layers: list[int], num_layers: int) -> tuple[int, int] | None:
    """(first_dense_layers k, layer_freq f) such that layer i is MoE exactly when i >= k and
    (i + 1) % f == 0 (costmodel/types.py Model.is_moe_layer), or None when no such pair gives the set."""
    wanted = sorted(set(moe_layers))
    if not wanted:
        return None
    first = wanted[0]
    candidates = [wanted[1] - wanted[0]] if len(wanted) > 1 else range(1, num_layers + 1)
    for freq in candidates:
        if freq < 1 or (first + 1) % freq:
            continue
        if [i for i in range(first, num_layers) if (i + 1) % freq == 0] == wanted:
            return max(0, first - freq + 1), freq
    return None


def moe_fields(reader: _Reader, model_type: str, layers: int | None) -> tuple[dict | None, int | None, list[str]]:
    """The `moe` spec (or None for a dense family), the dense MLP width when it is not
    `intermediate_size`, and notes. Per family, from the Transformers classes (v4.57.1):

    - mixtral (MixtralConfig, modeling_mixtral.py MixtralSparseMoeBlock): every layer MoE;
      num_local_experts experts of intermediate_size, top num_experts_per_tok; no shared expert.
    - qwen2_moe / qwen3_moe (Qwen2MoeDecoderLayer, Qwen3MoeDecoderLayer): layer i is MoE when i is not in
      mlp_only_layers and (i + 1) % decoder_sparse_step == 0; experts of moe_intermediate_size, dense
      layers of intermediate_size; Qwen2-MoE adds one shared expert of shared_expert_intermediate_size
      (its sigmoid gate, h weights, is not counted); Qwen3-MoE has none.
    - deepseek_v2 / deepseek_v3 / kimi_k2 (DeepseekV2/V3DecoderLayer): layer i is MoE when
      i >= first_k_dense_replace; n_routed_experts of moe_intermediate_size plus n_shared_experts shared
      ones of the same width (DeepseekV3MoE: shared_experts = MLP(intermediate_size = moe_intermediate_size
      x n_shared_experts)); dense layers of intermediate_size. DeepSeek's own modeling_deepseek.py also
      reads moe_layer_freq (MoE when i % moe_layer_freq == 0), which Transformers ignores: only 1 maps.
      glm4_moe (Glm4MoeDecoderLayer is DeepseekV3DecoderLayer, Glm4MoeMoE DeepseekV3MoE) reads the same keys.
    - llama4_text (Llama4TextConfig.__init__: moe_layers defaults to range(interleave_moe_layer_step - 1,
      num_hidden_layers, interleave_moe_layer_step); Llama4TextMoe: num_local_experts experts of
      intermediate_size, top num_experts_per_tok, and one shared_expert of intermediate_size; dense
      layers Llama4TextMLP(intermediate_size_mlp)).
    - gpt_oss (GptOssMLP): every layer MoE; num_local_experts experts of intermediate_size, top
      num_experts_per_tok (config.json also carries experts_per_token, the same number); no shared
      expert. Expert and router biases are not counted.
    - olmoe (OlmoeSparseMoeBlock, Mixtral's experts): every layer MoE; num_experts experts of
      intermediate_size, top num_experts_per_tok; no shared expert.
    """
    family = MOE_FAMILIES.get(model_type)
    if family is None:
        return None, None, []
    counts = experts_and_top_k(reader, model_type, family)
    if counts is None:
        return None, None, []
    moe: dict = {"num_experts": counts[0], "experts_per_token": counts[1]}
    notes: list[str] = []
    read_layout = FAMILY_LAYOUTS.get(family, plain_moe_layout)
    dense_ffn, moe_layers, layout_key = read_layout(reader, model_type, layers, moe, notes)
    if moe_layers is not None:
        moe.update(layout_fields(reader, moe_layers, layers, layout_key))
    router, router_notes = router_fields(reader, model_type, counts[1])
    moe.update(router)
    return moe, dense_ffn, notes + router_notes


def experts_and_top_k(r: _Reader, model_type: str, family: str) -> tuple[int, int] | None:
    """(routed experts, experts per token), or None where the class builds a dense MLP (Qwen2/3-MoE with
    no experts); refusals for counts that make no mixture."""
    key = expert_count_key(model_type)
    experts = r.integer(key, 0)
    if experts == 0 and family == "qwen_moe":  # Qwen2/3MoeDecoderLayer: num_experts > 0 or a dense MLP
        return None
    if not experts:  # DeepseekV2/V3DecoderLayer build experts from first_k_dense_replace on, whatever this says
        raise r.fail(key, "is 0 or null: a mixture-of-experts class without experts")
    if experts == 1:
        raise r.fail(key, "is 1: a one-expert layer is not a mixture planner represents")
    top_k = r.integer("num_experts_per_tok", 1)
    if family == "gpt_oss":
        alt = r.integer("experts_per_token", 1)
        if top_k is not None and alt is not None and alt != top_k:
            raise r.fail("experts_per_token", f"{alt} disagrees with num_experts_per_tok {top_k}")
        top_k = top_k or alt
    if top_k is None:
        raise r.fail("num_experts_per_tok", "is missing or null: how many experts each token uses is unknown")
    return experts, top_k


# Each family's reading of its expert width, shared experts and MoE layers (moe_fields' docstring): it fills
# `moe` and `notes` and returns (dense MLP width or None, MoE layer indices or None for all, the key they
# come from).
def plain_moe_layout(r: _Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    """Mixtral, gpt-oss, OLMoE: every layer MoE, experts of intermediate_size; no dense layer, so the
    dense width stays the expert width."""
    moe["ffn_hidden_size"] = r.need_int("intermediate_size", 1)
    return moe["ffn_hidden_size"], None, expert_count_key(model_type)


def qwen_moe_layout(r: _Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    moe["ffn_hidden_size"] = r.need_int("moe_intermediate_size", 1)
    shared = r.integer("shared_expert_intermediate_size", 0) or 0
    if shared and model_type == "qwen3_moe":
        raise r.fail("shared_expert_intermediate_size", "Qwen3-MoE has no shared expert (Qwen3MoeSparseMoeBlock); "
                     "the key would be ignored by Transformers")
    if shared:
        moe["shared_ffn_hidden_size"] = shared
        notes.append("the shared expert's sigmoid gate (h weights a layer) is not counted")
    step = r.need_int("decoder_sparse_step", 1)
    dense = r.int_list("mlp_only_layers") or []
    if layers and any(not 0 <= i < layers for i in dense):
        raise r.fail("mlp_only_layers", f"holds a layer index outside 0..{layers - 1}")
    moe_layers = [i for i in range(layers) if i not in dense and (i + 1) % step == 0] if layers else None
    return None, moe_layers, "mlp_only_layers" if dense else "decoder_sparse_step"


def deepseek_layout(r: _Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    moe["ffn_hidden_size"] = r.need_int("moe_intermediate_size", 1)
    shared = r.integer("n_shared_experts", 0) or 0
    if shared:
        moe["shared_ffn_hidden_size"] = shared * moe["ffn_hidden_size"]
    freq = r.data.get("moe_layer_freq", 1)
    if isinstance(freq, bool) or not isinstance(freq, int):
        raise r.fail("moe_layer_freq", f"must be an integer (got {_show(freq)}); a per-layer MoE pattern "
                     "is not one planner represents")
    if freq != 1:
        raise r.fail("moe_layer_freq", f"{freq}: DeepSeek's modeling code puts experts on layers with "
                     "i % moe_layer_freq == 0 while Transformers' DeepseekV2/V3 classes ignore the key; "
                     "planner represents only 1")
    first = r.integer("first_k_dense_replace", 0) or 0
    return None, list(range(first, layers)) if layers else None, "first_k_dense_replace"


def llama4_layout(r: _Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    moe["ffn_hidden_size"] = r.need_int("intermediate_size", 1)
    moe["shared_ffn_hidden_size"] = moe["ffn_hidden_size"]  # Llama4TextMoe.shared_expert
    dense_ffn = r.integer("intermediate_size_mlp", 1)
    explicit = r.int_list("moe_layers")
    step = r.need_int("interleave_moe_layer_step", 1)
    moe_layers = None
    if layers:
        moe_layers = explicit if explicit is not None else list(range(step - 1, layers, step))
        if any(not 0 <= i < layers for i in moe_layers):
            raise r.fail("moe_layers", f"holds a layer index outside 0..{layers - 1}")
    return dense_ffn, moe_layers, "moe_layers" if explicit is not None else "interleave_moe_layer_step"


FAMILY_LAYOUTS = {"qwen_moe": qwen_moe_layout, "deepseek": deepseek_layout, "glm": deepseek_layout,
                  "llama4": llama4_layout}


def layout_fields(r: _Reader, moe_layers: list[int], layers: int | None, layout_key: str) -> dict:
    """The spec's first_dense_layers / layer_freq for the MoE layer set, or a refusal naming `layout_key`
    when the set is not 'the first k dense, then every f-th layer'."""
    fit = fit_moe_layout(moe_layers, layers)
    if fit is None:
        if not moe_layers:
            raise r.fail(layout_key, "leaves no MoE layer in a mixture-of-experts model")
        raise r.fail(layout_key, f"puts experts on layers {_show(sorted(moe_layers))}: not 'the first k dense, "
                     "then every f-th layer', the only layouts planner represents")
    first, freq = fit
    return {**({"first_dense_layers": first} if first else {}), **({"layer_freq": freq} if freq != 1 else {})}


def router_fields(reader: _Reader, model_type: str, top_k: int) -> tuple[dict, list[str]]:
    """The router (specs.MoeSpec router*) per family, from the Transformers classes (v4.57.1) and
    DeepSeek's own modeling_deepseek.py MoEGate, which the DeepSeek keys describe:

    - mixtral, gpt_oss: softmax over the k chosen logits (MixtralSparseMoeBlock renormalises the top-k
      of a full softmax, the same weights; GptOssTopKRouter takes the softmax of the top-k logits).
    - qwen2_moe / qwen3_moe, olmoe (Qwen2-MoE's top-k router): a softmax over all experts, the top-k
      renormalised when norm_topk_prob.
    - deepseek_v2 / deepseek_v3 / kimi_k2: scoring_func (V3: sigmoid; DeepseekV3TopkRouter always, and
      glm4_moe's Glm4MoeTopkRouter, a DeepseekV3TopkRouter, whatever the file says),
      topk_method noaux_tc (V3: a per-expert bias on the scores that choose, and groups scored by their
      top-2) or group_limited_greedy (V2: groups scored by their best expert; Megatron-core scores them
      by the sum of their top k/group_topk, which the launch uses), n_group / topk_group,
      norm_topk_prob, routed_scaling_factor.
    - llama4_text: sigmoid of the top-k logits, not renormalised (Llama4Router; top 1)."""
    r, family = reader, MOE_FAMILIES.get(model_type)
    if family in ("mixtral", "gpt_oss"):
        return {}, []
    if family == "llama4":  # Llama4TextMoe scales the routed expert's input by its weight
        return {"router": "sigmoid", "router_probs_on_input": True}, []
    normalised = r.data.get("norm_topk_prob")
    if not isinstance(normalised, bool):
        raise r.fail("norm_topk_prob", f"must be true or false (got {_show(normalised)})")
    if family in ("qwen_moe", "olmoe"):
        return {"router": "topk_softmax" if normalised else "softmax_topk"}, []
    if family == "glm":  # Glm4MoeTopkRouter is DeepseekV3TopkRouter, which reads no scoring or method key
        return deepseek_router(r, top_k, normalised, fixed=("sigmoid", "noaux_tc"))
    return deepseek_router(r, top_k, normalised)


def deepseek_router(r: _Reader, top_k: int, normalised: bool,
                    fixed: tuple[str, str] | None = None) -> tuple[dict, list[str]]:
    """DeepSeek's MoEGate keys (router_fields) onto the spec; one line naming the key otherwise. `fixed`:
    the (scoring, method) of a class that reads neither key (GLM-4.5)."""
    score, method = fixed or (r.data.get("scoring_func", "sigmoid" if r.data.get("model_type") != "deepseek_v2"
                                         else "softmax"), r.data.get("topk_method"))
    if score not in ("softmax", "sigmoid"):
        raise r.fail("scoring_func", f"{_show(score)}: planner maps softmax and sigmoid routers")
    if method not in ("greedy", "group_limited_greedy", "noaux_tc"):
        raise r.fail("topk_method", f"{_show(method)}: planner maps greedy, group_limited_greedy and noaux_tc")
    if score == "sigmoid":
        if not normalised and top_k > 1:
            raise r.fail("norm_topk_prob", "false with a sigmoid router: planner maps sigmoid weights renormalised "
                         "over the top-k (DeepSeek-V3), as Megatron-core runs them")
        router = "sigmoid"
    else:
        router = "topk_softmax" if normalised else "softmax_topk"
    out: dict = {"router": router}
    if method == "noaux_tc":
        if router != "sigmoid":
            raise r.fail("topk_method", "noaux_tc (a balancing bias on the scores) with a softmax router, which "
                         "planner does not map (Megatron-core's expert bias needs sigmoid scores)")
        out["router_expert_bias"] = True
    notes = []
    if method != "greedy":
        groups, top = r.integer("n_group", 1), r.integer("topk_group", 1)
        if groups is None or top is None:
            raise r.fail("n_group" if groups is None else "topk_group", f"is missing or null with topk_method {method}")
        if groups > 1:
            out.update(router_groups=groups, router_group_topk=top)
        if method == "group_limited_greedy" and groups > 1:
            notes.append("DeepSeek-V2 picks its groups by their best expert; Megatron-core, whose launch planner "
                         "writes, by the sum of their top k/topk_group")
    factor = r.number("routed_scaling_factor", 1.0, L.MAX_ROUTER_SCALE)
    if factor != 1.0:
        out["router_scaling_factor"] = factor
    if "router_groups" in out:
        notes.append("routing limited to groups of experts is priced as unrestricted routing (an upper bound on "
                     "the dispatch's spread over expert-parallel ranks)")
    return out, notes


def mla_fields(reader: _Reader, model_type: str) -> dict | None:
    """Multi-head latent attention (DeepseekV2/V3Attention): q_lora_rank null means queries projected
    straight from the hidden state (DeepSeek-V2-Lite), which the spec writes as 0."""
    if MOE_FAMILIES.get(model_type) != "deepseek":
        return None
    r = reader
    return {"q_lora_rank": r.integer("q_lora_rank", 0) or 0, "kv_lora_rank": r.need_int("kv_lora_rank", 1),
            "qk_nope_head_dim": r.need_int("qk_nope_head_dim", 1), "qk_rope_head_dim": r.need_int("qk_rope_head_dim", 1),
            "v_head_dim": r.need_int("v_head_dim", 1)}


def mtp_layers(reader: _Reader, model_type: str) -> int:
    """DeepSeek-V3's multi-token prediction modules (num_nextn_predict_layers; README_WEIGHTS.md of
    deepseek-ai/DeepSeek-V3: layer 61 holds the one MTP module). Transformers drops them at load; a
    training run trains them, so the spec keeps them (mtp_layers)."""
    if MOE_FAMILIES.get(model_type) not in MTP_FAMILIES:
        return 0
    return reader.integer("num_nextn_predict_layers", 0) or 0


def llama4_rope_layers(r: _Reader, layers: int) -> list[int]:
    """Llama4TextConfig.no_rope_layers: 1 where the layer applies RoPE, 0 where it does not (NoPE); by
    default a NoPE layer every no_rope_layer_interval (4) layers (Transformers treats [] like None)."""
    rope = r.int_list("no_rope_layers")
    if not rope:
        interval = r.need_int("no_rope_layer_interval", 1)
        return [int((i + 1) % interval != 0) for i in range(layers)]
    if len(rope) < layers:
        raise r.fail("no_rope_layers", f"has {len(rope)} entries for {layers} layers")
    return rope[:layers]


def nope_every(reader: _Reader, model_type: str, layers: int | None) -> dict:
    """ModelSpec.nope_every: Llama 4's NoPE layers, whatever its attention chunking, when they fall every
    n-th layer (Megatron-LM's --no-rope-freq n); another pattern is refused, not launched with RoPE."""
    if model_type != "llama4_text" or not layers:
        return {}
    nope = [i for i, rope in enumerate(llama4_rope_layers(reader, layers)) if not rope]
    if not nope:
        return {}
    every = nope[0] + 1
    if nope != list(range(every - 1, layers, every)) or layers % every:
        raise reader.fail("no_rope_layers", f"puts NoPE layers at {_show(nope)}: not every n-th layer of "
                          f"{layers}, the only pattern planner's launch states (--no-rope-freq)")
    return {"nope_every": every}


def _layer_kinds(reader: _Reader, model_type: str, layers: int) -> tuple[list[str], str] | None:
    """Per layer 'full', 'sliding' or 'chunked', and the key the pattern came from; None when every
    layer is full attention."""
    r, text = reader, reader.data
    types = text.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise r.fail("layer_types", f"must be a list of {layers} layer types (got {_show(types)})")
        unknown = [t for t in types if t not in ATTENTION_LAYER_TYPES]
        if unknown:
            raise r.fail("layer_types", f"holds {_show(unknown[0])}: only full, sliding and chunked attention "
                         "layers are represented (not linear attention, state-space or convolution layers)")
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
    if text.get("use_sliding_window") is False:
        return None  # Qwen2/Qwen3 family: sliding_window only takes effect with use_sliding_window
    if model_type in ALL_LAYERS_SLIDE:
        if model_type == "qwen3_moe" and not text.get("use_sliding_window"):
            return None
        return ["sliding"] * layers, "sliding_window"
    if model_type in MAX_WINDOW_LAYERS_SLIDE:
        if not text.get("use_sliding_window"):
            return None
        start = r.need_int("max_window_layers", 0)
        return ["sliding" if i >= start else "full" for i in range(layers)], "max_window_layers"
    raise r.fail("sliding_window", f"{_show(text['sliding_window'])} on model_type {model_type!r}: which layers "
                 "use it is not known to planner (it maps Mistral, Mixtral, Phi-3, Qwen2/3, Gemma 2/3, gpt-oss, "
                 "Llama 4)")


def local_attention(reader: _Reader, model_type: str, layers: int | None) -> tuple[dict, list[str]]:
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
    if qk == "learned" and model_type == "olmoe":
        notes.append("OLMoE's query/key RMSNorms span all heads (h + kv heads x head_dim weights per layer, not "
                     "counted); Megatron-LM's --qk-layernorm, which the launch files write, normalises each head")
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
