"""Hugging Face configs an audit (2026-12-02) found read wrong or refused for the wrong reason: a wrapper's
audio tower dropped without a note, Phi-3 given biases, Gemma 3's class defaults missing, DeepSeek's sparse
attention read as dense, and two refusals that named a hybrid layer stack the file does not have."""
import json
from pathlib import Path

import pytest
from hf_support import refusal, write

from costmodel.flops import total_parameters
from planner.errors import PlannerError
from planner.inputs.hf_config import hf_to_spec_dict
from planner.inputs.loading import load_model_spec

HF = Path(__file__).resolve().parent / "data" / "hf_configs"


# mistralai/Voxtral-Mini-3B-2507 config.json (shape keys): a Whisper-style audio encoder beside a Llama decoder.
VOXTRAL_TEXT = {"model_type": "llama", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 30,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
                "rope_theta": 1e8, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "hidden_act": "silu"}
VOXTRAL = {"model_type": "voxtral", "architectures": ["VoxtralForConditionalGeneration"], "text_config": VOXTRAL_TEXT,
           "audio_config": {"model_type": "voxtral_encoder", "hidden_size": 1280, "intermediate_size": 5120,
                            "num_hidden_layers": 32, "num_attention_heads": 20}}


def test_an_audio_tower_is_named_like_a_vision_tower():
    """Voxtral's 640M audio encoder and its adapter (arXiv:2507.13264: 4.7B in all) are not modelled: the
    import says so, as it does for Gemma 3's vision_config, instead of dropping them without a word."""
    spec = hf_to_spec_dict(VOXTRAL, "voxtral", 4096)
    assert "the audio tower (audio_config) and its projector are not modelled" in spec["notes"]
    # a quantization_config (DeepSeek-V3's FP8 checkpoints carry one) is no tower
    plain = hf_to_spec_dict({**VOXTRAL_TEXT, "quantization_config": {"quant_method": "fp8"}}, "llama", 4096)
    assert "tower" not in plain.get("notes", "")


# microsoft/Phi-3-mini-4k-instruct config.json: no attention_bias key; Phi3Attention's qkv_proj / o_proj and
# Phi3MLP's gate_up_proj / down_proj are all bias=False in Transformers.
PHI3_MINI = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064, "hidden_act": "silu",
             "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "sliding_window": 2047, "tie_word_embeddings": False,
             "max_position_embeddings": 4096}


def test_phi3_has_no_linear_biases(tmp_path):
    spec = load_model_spec(write(tmp_path, PHI3_MINI), 4096)
    assert spec.linear_bias is False
    # model card: 3.8B parameters; 32 layers x (4 h^2 attention + 3 h x 8192 MLP) + 2 x 32064 h = 3.821B
    h = 3072
    assert total_parameters(spec.to_model()) == pytest.approx(32 * (4 * h * h + 3 * h * 8192 + 2 * h) + h
                                                              + 2 * 32064 * h, rel=1e-9)


def test_gemma3_text_takes_its_class_defaults_for_the_heads(tmp_path):
    """google/gemma-3-4b-it's text_config gives only the widths and the layer count; Gemma3TextConfig
    supplies 8 heads of 256, 4 K/V heads (Transformers v4.57.1). Gemma 3 report (arXiv:2503.19786,
    Table 1): 4B = 675M embedding + 3,209M non-embedding parameters."""
    text = {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}
    config = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "text_config": text,
              "vision_config": {"model_type": "siglip_vision_model", "num_hidden_layers": 27}}
    spec = load_model_spec(write(tmp_path, config), 4096)
    assert (spec.num_attention_heads, spec.num_kv_heads, spec.head_dim) == (8, 4, 256)
    assert total_parameters(spec.to_model()) == pytest.approx(675e6 + 3209e6, rel=0.002)


def test_deepseek_sparse_attention_is_refused_by_its_keys(tmp_path):
    """DeepSeek-V3.2-Exp's indexer keys (index_topk 2048 keys per query) make attention O(s x k): refused by
    name whatever the model_type says, not read as V3's dense attention."""
    with open("tests/data/hf_configs/deepseek-v3.json") as f:
        v3 = json.load(f)
    for model_type in ("deepseek_v32", "deepseek_v3"):
        config = {**v3, "model_type": model_type, "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048}
        assert "sparse attention (DeepSeek Sparse Attention" in refusal(tmp_path, config, 4096)


def test_refusals_name_the_real_reason(tmp_path):
    """MiniMax-M2's attn_type_list is all 1 (softmax attention on every layer): refused as an unmapped
    mixture of experts, not as a linear-attention hybrid. A granitemoehybrid file whose layers are all
    attention (Granite-4.0-micro) is refused for its unmapped family, not as a state-space stack it lacks."""
    minimax = {"model_type": "minimax_m2", "hidden_size": 3072, "num_hidden_layers": 62, "num_attention_heads": 48,
               "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 200064, "intermediate_size": 1536,
               "num_local_experts": 256, "num_experts_per_tok": 8, "attn_type_list": [1] * 62}
    msg = refusal(tmp_path, minimax, 4096)
    assert "num_local_experts 256: a mixture of experts on model_type 'minimax_m2'" in msg and "hybrid" not in msg
    hybrid = {**minimax, "attn_type_list": [0, 0, 0, 1] * 15 + [0, 1]}
    assert "linear-attention hybrid" in refusal(tmp_path, hybrid, 4096)
    granite = {"model_type": "granitemoehybrid", "hidden_size": 2560, "num_hidden_layers": 40,
               "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 100352, "intermediate_size": 8192,
               "layer_types": ["attention"] * 40}
    assert "model_type 'granitemoehybrid': a family of state-space / recurrent hybrids" in refusal(tmp_path, granite,
                                                                                                   4096)


def test_dual_chunk_attention_is_noted():
    """Qwen2.5-7B-Instruct-1M's dual_chunk_attention_config is an inference mechanism: noted, attention counted
    as full causal attention."""
    qwen = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
            "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "rope_theta": 1e7,
            "rms_norm_eps": 1e-5, "dual_chunk_attention_config": {"chunk_size": 262144, "local_size": 8192}}
    assert "dual_chunk_attention_config" in hf_to_spec_dict(qwen, "qwen", 4096)["notes"]


def test_llama4_nope_layers_do_not_depend_on_chunked_attention(tmp_path):
    """Llama4TextConfig's no_rope_layers put NoPE on every 4th layer whether or not attention is chunked
    (attention_chunk_size null): the spec says so (nope_every 4), so the launch writes --no-rope-freq 4."""
    with open("tests/data/hf_configs/llama4-scout-17b-16e.json") as f:
        config = json.load(f)
    config["text_config"] = {**config["text_config"], "attention_chunk_size": None}
    spec = load_model_spec(write(tmp_path, config), 8192)
    assert spec.nope_every == 4 and spec.attention_window is None


def test_a_quantized_checkpoints_config_is_no_layer_stack():
    """AQLM's and SpQR's quantization_config lists `linear_weights_not_to_quantize` (the weights kept in 16 bits),
    which the hybrid-layer scan read as a linear-attention key (an audit, 2026-12-06): the quantization config
    says how the checkpoint stores its weights, not which layers it has; the model is Llama's, read as such."""
    quantized = {**VOXTRAL_TEXT, "quantization_config": {
        "quant_method": "aqlm", "in_group_size": 8, "out_group_size": 1, "num_codebooks": 1,
        "nbits_per_codebook": 16, "linear_weights_not_to_quantize": ["model.embed_tokens.weight", "lm_head.weight"]}}
    assert hf_to_spec_dict(quantized, "llama", 4096) == hf_to_spec_dict(VOXTRAL_TEXT, "llama", 4096)
    hybrid = {**VOXTRAL_TEXT, "linear_attn_config": {"kda_layers": [1, 2]}}  # outside it, the key is still refused
    with pytest.raises(PlannerError, match="linear_attn_config: a state-space / linear-attention hybrid"):
        hf_to_spec_dict(hybrid, "llama", 4096)


def test_embedding_dropout_is_said_and_layer_dropout_read():
    """Phi-3's and GPT-2's files carry embd_pdrop (dropout on the embedding output only) beside their layers'
    resid_pdrop / attn_pdrop. Layer dropout keeps a mask per layer (Korthikanti et al. 2022, eq. 1), so any of
    those keys sets `dropout`; the embedding's one mask is not counted, and a file with only it says so (it was
    read without a word, an audit found)."""
    embd = hf_to_spec_dict({**PHI3_MINI, "embd_pdrop": 0.1}, "phi3", 4096)
    assert embd["dropout"] is False and "embd_pdrop 0.1: the embedding output's dropout mask" in embd["notes"]
    assert "notes" not in hf_to_spec_dict(PHI3_MINI, "phi3", 4096)
    for key in ("resid_pdrop", "attn_pdrop", "attention_dropout"):
        assert hf_to_spec_dict({**PHI3_MINI, key: 0.1}, "phi3", 4096)["dropout"] is True
    with pytest.raises(PlannerError, match="embd_pdrop"):
        hf_to_spec_dict({**PHI3_MINI, "embd_pdrop": 1.5}, "phi3", 4096)


def test_spec_errors_on_an_import_name_the_config_keys(tmp_path):
    """The spec checks an imported model by its own field names; the error also names the config.json keys they
    were read from (an audit: "(top level): ... num_kv_heads (7)" for Llama 4's text_config.num_key_value_heads,
    "experts_per_token (300)" for DeepSeek's num_experts_per_tok)."""
    scout = json.load(open(f"{HF}/llama4-scout-17b-16e.json"))
    scout["text_config"]["num_key_value_heads"] = 7
    line = refusal(tmp_path, scout, 4096)
    assert "(top level)" not in line
    assert line.endswith("(config.json: num_attention_heads is text_config.num_attention_heads, "
                         "num_kv_heads is text_config.num_key_value_heads)")
    deepseek = {**json.load(open(f"{HF}/deepseek-v3.json")), "num_experts_per_tok": 300}
    line = refusal(tmp_path, deepseek, 4096)
    assert "experts_per_token (300) exceeds num_experts (256)" in line
    assert "num_experts is n_routed_experts, experts_per_token is num_experts_per_tok" in line


def test_a_checkpoint_folder_reads_its_config(tmp_path):
    """A Hugging Face checkpoint is a folder holding config.json: the folder names the model as the file does
    (it was refused, "is a folder, expected a file", an audit found)."""
    folder = Path(write(tmp_path, json.load(open(f"{HF}/qwen3-8b.json")), "qwen3-8b")).parent
    assert load_model_spec(str(folder), 4096) == load_model_spec(str(folder / "config.json"), 4096)


def test_storage_and_encoder_keys_are_no_hybrid_layer_stack():
    """llm-compressor's compression_config (a W8A8 checkpoint's `config_groups.linear_w8a8`) says how weights are
    stored, and a Conformer audio encoder's `linear_units` (Phi-4-multimodal's audio_processor) is a feed-forward
    width: neither is a linear-attention layer stack. Qwen3-Next's `linear_num_key_heads` still is."""
    stored = {**VOXTRAL_TEXT, "compression_config": {"config_groups": {"linear_w8a8": {"targets": ["Linear"]}}}}
    assert hf_to_spec_dict(stored, "llama", 4096)["num_layers"] == 30
    encoder = {**VOXTRAL_TEXT, "audio_processor": {"config": {"linear_units": 1536, "num_blocks": 24}}}
    assert hf_to_spec_dict(encoder, "llama", 4096)["num_layers"] == 30
    with pytest.raises(PlannerError, match="linear_num_key_heads: a state-space / linear-attention hybrid"):
        hf_to_spec_dict({**VOXTRAL_TEXT, "linear_num_key_heads": 16}, "llama", 4096)
