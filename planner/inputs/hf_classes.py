"""What the Transformers configuration and modeling classes that planner maps do, as data: which keys carry
the shape, which classes are gated, biased, tied, RMS-normed or query/key-normed, their defaults for keys a
config.json omits, which keys only a mixture of experts, a hybrid stack or sparse attention sets. Read at
transformers v4.57.1 (glm4_moe at modular_glm4_moe.py @0e97420c); each table cites its classes. The reading
itself is planner/inputs/hf_config.py (dense fields, attention layers) and hf_moe.py (experts, MLA, MTP).
"""
from __future__ import annotations

from typing import Any

# Each spec key: the HF keys that carry it, first match wins (MptConfig's attribute_map names n_layers,
# n_heads and d_model; its context is max_seq_len).
KEY_ALIASES = {
    "num_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_attention_heads": ("num_attention_heads", "n_head", "n_heads"),
    "vocab_size": ("vocab_size",),
    "seq_length": ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "seq_length"),
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
# Classes with one switch per bias (SeedOssAttention: q/k/v_proj by `attention_bias`, o_proj by
# `attention_out_bias`; SeedOssMLP by `mlp_bias`), each key with its class default.
SPLIT_BIAS_KEYS = {"seed_oss": {"attention_bias": True, "attention_out_bias": False, "mlp_bias": False}}
# Classes whose linear layers have no bias whatever the file says (MistralAttention, MixtralAttention,
# Phi3Attention and MptAttention / MptMLP hard-code bias=False); the families in ATTENTION_BIAS_DEFAULTS
# are read by their keys instead.
BIAS_FREE_MODELS = {"mistral", "mixtral", "phi3", "mpt"}
# Classes whose `attention_bias` switches the biases of q/k/v/o_proj (LlamaAttention, Qwen3Attention,
# Qwen3MoeAttention, GemmaAttention .. Gemma3Attention, OlmoeAttention, Llama4TextAttention,
# GptOssAttention, GPTNeoXAttention's query_key_value and dense; DeepseekV2/V3Attention's q_a_proj,
# kv_a_proj_with_mqa and o_proj), with the class default for a file that omits it.
ATTENTION_BIAS_DEFAULTS = {"llama": False, "smollm3": False, "qwen3": False, "qwen3_moe": False, "gemma": False,
                           "gemma2": False, "gemma3_text": False, "olmoe": False, "llama4_text": False,
                           "deepseek_v2": False, "deepseek_v3": False, "kimi_k2": False, "gpt_oss": True,
                           "gpt_neox": True}
# Their MLPs' biases: LlamaMLP's by `mlp_bias` (default False); GptOssExperts (gate_up_proj_bias,
# down_proj_bias) and GPTNeoXMLP (nn.Linear defaults) always; the other classes' never.
MLP_BIASED: dict[str, bool | str] = {"llama": "mlp_bias", "smollm3": "mlp_bias", "gpt_oss": True, "gpt_neox": True}
# Gemma's MLP is gated (GemmaMLP / Gemma2MLP / Gemma3MLP: gate_proj, up_proj, down_proj) with a GeLU
# activation (`hidden_activation` "gelu_pytorch_tanh"): GeGLU, 3 matrices (Gemma report, arXiv:2403.08295).
GEGLU_MODELS = {"gemma", "gemma2", "gemma3_text"}
# Model types whose MLP class always has gate, up and down projections, whatever activation the config
# names (Transformers v4.57.1 LlamaMLP, MistralMLP, MixtralBlockSparseTop2MLP, Qwen2MLP, Qwen2MoeMLP,
# Qwen3MLP, Qwen3MoeMLP, DeepseekV2MLP, DeepseekV3MLP, Llama4TextMLP / Llama4TextExperts, Phi3MLP's fused
# gate_up_proj, OLMoE's experts, the Gemma MLPs). Their activation
# only names the gate's function: SiLU is SwiGLU, a GeLU is GeGLU, any other is refused (not modelled).
GATED_MODELS = {"llama", "smollm3", "seed_oss", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                "deepseek_v2", "deepseek_v3", "kimi_k2", "llama4_text", "phi3", "olmoe", "glm4_moe", *GEGLU_MODELS}
# A learned RMSNorm on the queries and keys before RoPE, by its span (Transformers v4.57.1): each head's over
# head_dim (Qwen3Attention, Qwen3MoeAttention, Gemma3Attention q_norm / k_norm), or all heads' queries and all
# heads' keys at once (OlmoeAttention: q_norm over hidden_size, k_norm over kv_heads x head_dim; another
# model, the same elementwise work). Llama 4's is a weightless L2 norm (Llama4TextL2Norm) when `use_qk_norm`
# is set, on its RoPE layers only.
QK_NORM_MODELS = {"qwen3": "learned", "qwen3_moe": "learned", "gemma3_text": "learned",
                  "olmoe": "learned_all_heads"}

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
    # SmolLM3Config (transformers models/smollm3/modular_smollm3.py): a Llama decoder that ties its output layer
    # and skips RoPE on a layer every no_rope_layer_interval (no_rope_layers, 1 = RoPE, as Llama 4's); its
    # sliding window, off unless use_sliding_window, would take the NoPE layers only
    "smollm3": {"tie_word_embeddings": True, "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
                "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4, "hidden_act": "silu",
                "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 2000000.0,
                "use_sliding_window": False, "sliding_window": None, "no_rope_layers": None,
                "no_rope_layer_interval": 4, "attention_bias": False, "mlp_bias": False},
    # SeedOssConfig (transformers models/seed_oss/configuration_seed_oss.py, added in v4.56): a Llama decoder
    # whose q/k/v projections are biased and whose attention probabilities and both residual branches drop out
    # at 0.1 unless the file says otherwise (SeedOssAttention, SeedOssMLP, SeedOssDecoderLayer)
    "seed_oss": {"tie_word_embeddings": False, "vocab_size": 155136, "hidden_size": 4096, "intermediate_size": 27648,
                 "num_hidden_layers": 64, "num_attention_heads": 80, "num_key_value_heads": 8, "head_dim": 128,
                 "hidden_act": "silu", "max_position_embeddings": 524288, "rms_norm_eps": 1e-6,
                 "rope_theta": 10000000.0, "attention_dropout": 0.1, "residual_dropout": 0.1,
                 **SPLIT_BIAS_KEYS["seed_oss"]},
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
# "linear_" names linear attention's own shapes (Qwen3-Next's linear_num_key_heads, linear_key_head_dim,
# linear_conv_kernel_dim; Kimi Linear's linear_attn_config), not any key starting so: Phi-4-multimodal's audio
# encoder has a Conformer's linear_units, a feed-forward width, and is no hybrid.
HYBRID_PREFIXES = ("ssm_", "mamba_", "linear_num_", "linear_key", "linear_value", "linear_conv", "linear_attn",
                   "linear_attention", "linear_silu", "linear_rope", "linear_backend", "lightning_")
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
# block_configs, Mllama's cross-attention layers and Qwen2.5-VL's vision tower dropped); SmolLM3 is mapped
# since (CLASS_DEFAULTS).
KNOWN_MODEL_TYPES = {*MOE_FAMILIES, *ALIBI_MODELS, *QKV_BIAS_MODELS, *BIAS_FREE_MODELS, *ATTENTION_BIAS_DEFAULTS,
                     *CLASS_DEFAULTS, "gpt2", "gpt_neox", "phi3"}
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
RMSNORM_MODELS = {"llama", "smollm3", "seed_oss", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe",
                  "deepseek_v2", "deepseek_v3", "kimi_k2", "llama4_text", "gpt_oss", "olmoe", "phi3", "glm4_moe",
                  *GEGLU_MODELS}
# GPTNeoXConfig: rotary_pct 0.25 of each head's dimensions rotate.
ROTARY_PERCENT_DEFAULTS = {"gpt_neox": 0.25}
ATTENTION_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked"}
# Families whose sliding_window (when not null) applies to every layer: MistralAttention,
# MixtralAttention and Phi3Attention pass config.sliding_window to every layer; Qwen3MoeModel builds one sliding-window
# mask for all layers when use_sliding_window is set.
ALL_LAYERS_SLIDE = {"mistral", "mixtral", "qwen3_moe", "phi3"}
# Qwen2 / Qwen3 / Qwen2-MoE: with use_sliding_window, layers i >= max_window_layers slide.
MAX_WINDOW_LAYERS_SLIDE = {"qwen2", "qwen3", "qwen2_moe"}
# The classes whose sliding_window (and so any "sliding_attention" layer) takes effect only with
# use_sliding_window (Qwen2Config ... Qwen3MoeConfig: sliding_window if use_sliding_window else None).
USE_SLIDING_WINDOW_MODELS = {*MAX_WINDOW_LAYERS_SLIDE, "qwen3_moe", "smollm3"}

# The classes whose query/key norm is switched by `use_qk_norm`, and its kind: GLM-4.5's learned RMSNorms over
# head_dim (Glm4MoeAttention q_norm / k_norm), Llama 4's weightless L2 norm.
USE_QK_NORM_KINDS = {"glm4_moe": "learned", "llama4_text": "l2"}

# The norms' epsilon by the name each class gives it (LlamaConfig rms_norm_eps, GPTNeoXConfig layer_norm_eps,
# GPT2Config / BloomConfig layer_norm_epsilon): a launch detail Megatron-LM states as --norm-epsilon.
NORM_EPSILON_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon")
