"""Family rules of the Hugging Face import that a new user's configs broke (2026-12-06): MPT's own key
names and fixed layout, the Qwen families' use_sliding_window switch over layer_types, which classes'
attention_bias reaches which layers, and learned positions that cannot cover a longer sequence."""
import json

import pytest
from hf_support import refusal, write

from costmodel.flops import total_parameters
from planner.inputs.loading import load_model_spec

HF = "tests/data/hf_configs"

# mosaicml/mpt-7b config.json (Hugging Face Hub, main), the keys MptConfig reads.
MPT_7B = {"architectures": ["MPTForCausalLM"], "model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
          "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432, "no_bias": True, "resid_pdrop": 0,
          "emb_pdrop": 0, "learned_pos_emb": True, "norm_type": "low_precision_layernorm",
          "attn_config": {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                          "attn_type": "multihead_attention", "clip_qkv": None, "qk_ln": False, "softmax_scale": None}}


def test_mpt_reads_its_own_keys_and_counts_as_its_classes_build_it(tmp_path):
    spec = load_model_spec(write(tmp_path, MPT_7B))
    assert (spec.num_layers, spec.hidden_size, spec.num_attention_heads, spec.seq_length) == (32, 4096, 32, 2048)
    assert spec.ffn_hidden_size == 4 * 4096 and spec.mlp == "gelu" and not spec.linear_bias
    assert spec.position_embedding == "alibi" and spec.tie_embeddings and not spec.dropout
    # By hand: tied embedding 50432 x 4096; per layer 4 h^2 (Wqkv, out_proj) + 2 x 4h x h (up, down) and two
    # bias-free LayerNorms of h; a final norm of h. 6,649,286,656 is the count the Hub reports for MPT-7B.
    h = 4096
    hand = 50432 * h + 32 * (4 * h * h + 8 * h * h + 2 * h) + h
    assert hand == 6_649_286_656
    assert total_parameters(spec.to_model()) == hand


@pytest.mark.parametrize("edit, key", [
    ({"expansion_ratio": 8}, "expansion_ratio"),
    ({"no_bias": False}, "no_bias"),
    ({"attn_config": {**MPT_7B["attn_config"], "attn_type": "grouped_query_attention", "kv_n_heads": 8}},
     "attn_config.attn_type"),
    ({"attn_config": {**MPT_7B["attn_config"], "sliding_window_size": 2048}}, "attn_config.sliding_window_size"),
    ({"attn_config": {**MPT_7B["attn_config"], "alibi": False}}, "attn_config.alibi"),
    ({"attn_config": {**MPT_7B["attn_config"], "qk_ln": True}}, "attn_config.qk_ln"),
    ({"ffn_config": {"ffn_type": "mptglu"}}, "ffn_config.ffn_type"),
])
def test_mpt_layouts_the_transformers_classes_cannot_build_are_refused(tmp_path, edit, key):
    assert key in refusal(tmp_path, {**MPT_7B, **edit})


def test_an_mpt_export_with_llm_foundrys_unused_kv_heads_is_still_multi_head(tmp_path):
    # llm-foundry writes kv_n_heads (default 1) into every attn_config; under multihead_attention it is unused
    config = {**MPT_7B, "attn_config": {**MPT_7B["attn_config"], "kv_n_heads": 1, "sliding_window_size": -1}}
    spec = load_model_spec(write(tmp_path, config))
    assert (spec.num_kv_heads or spec.num_attention_heads) == 32


def _qwen3_8b() -> dict:
    return json.load(open(f"{HF}/qwen3-8b.json"))


def test_qwen_sliding_layer_types_without_use_sliding_window_are_full_attention(tmp_path):
    # Qwen3Config: sliding_window = sliding_window if use_sliding_window else None, and a "sliding_attention"
    # layer takes that None: every layer attends to the whole sequence.
    config = {**_qwen3_8b(), "layer_types": ["sliding_attention"] * 36, "sliding_window": 4096,
              "use_sliding_window": False}
    assert load_model_spec(write(tmp_path, config), 32768).attention_window is None
    config["use_sliding_window"] = True
    assert load_model_spec(write(tmp_path, config, "on"), 32768).attention_window == 4096


def test_attention_bias_reaches_only_the_classes_that_read_it(tmp_path):
    mistral = json.load(open(f"{HF}/mistral-7b-v0.1.json"))
    # MistralAttention hard-codes bias=False: the key changes nothing.
    assert not load_model_spec(write(tmp_path, {**mistral, "attention_bias": True}, "m")).linear_bias
    llama = json.load(open("tests/data/hf/llama-3-8b/config.json"))
    # LlamaAttention and LlamaMLP both biased: every linear layer, as --add-bias-linear states.
    assert load_model_spec(write(tmp_path, {**llama, "attention_bias": True, "mlp_bias": True}, "l")).linear_bias
    # Attention biased and the MLP not (Llama's mlp_bias false, Qwen3's MLP never): refused, naming the key.
    assert "attention_bias" in refusal(tmp_path, {**llama, "attention_bias": True, "mlp_bias": False})
    assert "attention_bias" in refusal(tmp_path, {**_qwen3_8b(), "attention_bias": True})
    # gpt-oss's experts always carry biases: unbiased attention beside them is refused, not read as bias-free.
    gpt_oss = json.load(open(f"{HF}/gpt-oss-20b.json"))
    assert load_model_spec(write(tmp_path, gpt_oss, "g")).linear_bias
    assert "attention_bias" in refusal(tmp_path, {**gpt_oss, "attention_bias": False})


def test_learned_positions_do_not_stretch_to_a_longer_sequence(tmp_path):
    gpt2 = "tests/data/hf/gpt2/config.json"
    assert load_model_spec(gpt2, 1024).seq_length == 1024
    message = refusal(tmp_path, json.load(open(gpt2)), seq_length=4096)
    assert "n_positions" in message and "1024" in message
    # RoPE models are not bound by max_position_embeddings (long-context training extends them).
    assert load_model_spec(f"{HF}/qwen3-8b.json", 65536).seq_length == 65536


def test_llama4_top_k_above_one_is_refused_by_its_config_key(tmp_path):
    # used to surface as the spec's internal moe.router_probs_on_input rule
    config = json.load(open(f"{HF}/llama4-scout-17b-16e.json"))
    config["text_config"]["num_experts_per_tok"] = 2
    message = refusal(tmp_path, config)
    assert "text_config.num_experts_per_tok" in message and "top-1" in message
