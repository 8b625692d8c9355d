"""Hugging Face configs read by their Transformers class (v4.57.1 configuration_*.py defaults), and
model types planner does not map refused rather than guessed (an audit of real config.json files found
the shape-only reading wrong on most unmapped types)."""
import json
from pathlib import Path

import pytest
from hf_support import refusal, write

from costmodel.flops import total_parameters
from planner.inputs.loading import load_model_spec

HF = "tests/data/hf_configs"


def llama(**changes) -> dict:
    with open("tests/data/hf/llama-3-8b/config.json") as f:
        config = json.load(f)
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


# tiiuae/falcon-7b's config.json (model card: 7B parameters): multi_query true means ONE K/V head for
# its 71 query heads, and FalconConfig ties the output layer by default. Read by shape alone it came out
# as 8.52B (71 K/V heads, untied); refused instead.
FALCON_7B = {"model_type": "falcon", "architectures": ["FalconForCausalLM"], "alibi": False, "bias": False,
             "hidden_size": 4544, "n_head": 71, "n_layer": 32, "multi_query": True, "parallel_attn": True,
             "vocab_size": 65024, "layer_norm_epsilon": 1e-05, "attention_dropout": 0.0, "hidden_dropout": 0.0}


@pytest.mark.parametrize("model_type", ["falcon", "gpt_bigcode", "nemotron-nas", "mllama_text_model",
                                        "qwen2_5_vl", "cohere", "olmo2"])
def test_model_types_planner_does_not_map_are_refused(tmp_path, model_type):
    config = dict(FALCON_7B, model_type=model_type)
    message = refusal(tmp_path, config)
    assert f"model_type: '{model_type}' is not a family planner maps" in message
    assert "model YAML" in message


def test_bloom_and_mpt_tie_the_output_layer_when_the_file_is_silent(tmp_path):
    """BloomConfig and MptConfig keep PretrainedConfig's tie_word_embeddings=True (BloomForCausalLM and
    MptForCausalLM tie lm_head to the input embedding); LlamaConfig sets False."""
    shape = {"hidden_size": 256, "n_head": 4, "n_layer": 2, "vocab_size": 1000, "seq_length": 512}
    for kind in ("bloom", "mpt"):
        assert load_model_spec(write(tmp_path, dict(shape, model_type=kind), kind)).tie_embeddings
    assert not load_model_spec(write(tmp_path, llama(), "llama")).tie_embeddings


def test_a_llama_file_without_rope_theta_or_rms_norm_eps_is_still_rope_and_rmsnorm(tmp_path):
    """LlamaConfig defaults: rope_theta 10000.0, rms_norm_eps 1e-6, LlamaRMSNorm. Read as learned
    positions, the Megatron launch file would leave out --position-embedding-type rope."""
    spec = load_model_spec(write(tmp_path, llama(rope_theta=None, rms_norm_eps=None)))
    assert (spec.position_embedding, spec.rope_theta, spec.normalization) == ("rope", 10000.0, "rmsnorm")


def test_transformers_v5_rope_parameters(tmp_path):
    """Transformers v5 files move rope_theta (and partial_rotary_factor) under rope_parameters."""
    config = llama(rope_theta=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                                     "partial_rotary_factor": 0.5})
    spec = load_model_spec(write(tmp_path, config))
    assert (spec.position_embedding, spec.rope_theta, spec.rotary_percent) == ("rope", 1000000.0, 0.5)


def test_gpt_neox_rotates_a_quarter_of_each_head_by_default(tmp_path):
    """GPTNeoXConfig: rotary_pct 0.25, rotary_emb_base 10000."""
    shape = {"model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
             "vocab_size": 1000, "max_position_embeddings": 512, "intermediate_size": 1024, "layer_norm_eps": 1e-5}
    spec = load_model_spec(write(tmp_path, shape))
    assert (spec.position_embedding, spec.rotary_percent, spec.normalization) == ("rope", 0.25, "layernorm")


def test_phi3_sliding_window_covers_every_layer(tmp_path):
    """Phi3Attention passes config.sliding_window to every layer (modeling_phi3.py), as Mistral does."""
    config = llama(model_type="phi3", sliding_window=2047)
    spec = load_model_spec(write(tmp_path, config))
    assert (spec.attention_window, spec.global_attention_every) == (2047, 0)


def test_deepseek_without_an_expert_count_is_refused_not_dense(tmp_path):
    """DeepseekV2/V3DecoderLayer build an MoE layer from first_k_dense_replace on whatever
    n_routed_experts says (null does not build): never read as a 37B dense model."""
    with open(f"{HF}/deepseek-v3.json") as f:
        config = json.load(f)
    config["n_routed_experts"] = None
    assert "n_routed_experts: is 0 or null" in refusal(tmp_path, config)


def test_qwen3_moe_with_no_experts_is_dense_by_its_class(tmp_path):
    """Qwen3MoeDecoderLayer builds a dense MLP of intermediate_size when num_experts is 0."""
    with open(f"{HF}/qwen3-30b-a3b.json") as f:
        config = json.load(f)
    config["num_experts"] = 0
    spec = load_model_spec(write(tmp_path, config))
    assert spec.moe is None and spec.ffn_hidden_size == config["intermediate_size"]


@pytest.mark.parametrize("layers", [[99], [-1]])
def test_mlp_only_layers_outside_the_stack_are_refused(tmp_path, layers):
    with open(f"{HF}/qwen3-30b-a3b.json") as f:
        config = json.load(f)
    config["mlp_only_layers"] = layers
    assert "mlp_only_layers: holds a layer index outside 0..47" in refusal(tmp_path, config)


def test_llama_reads_exactly_after_the_class_defaults(tmp_path):
    """Meta-Llama-3-8B: 8,030,261,248 parameters (Hub model card), unchanged by the defaults above."""
    assert total_parameters(load_model_spec(write(tmp_path, llama(rope_theta=None))).to_model()) == 8_030_261_248


def test_smollm3_is_a_tied_llama_with_a_nope_layer_every_fourth():
    """HuggingFaceTB/SmolLM3-3B's config.json (tests/data/hf_configs): its file omits tie_word_embeddings, which
    SmolLM3Config defaults to True, and its no_rope_layers put NoPE on every 4th layer. By hand: embedding 128,256 x
    2,048 = 262,668,288 (tied, once); a layer's attention 2 x 2,048^2 + 2 x 2,048 x 4 x 128 = 10,485,760, its SwiGLU
    3 x 2,048 x 11,008 = 67,633,152, its norms 4,096: 78,123,008 x 36 = 2,812,428,288; the final norm 2,048. Total
    3,075,098,624, the parameter count of the model's safetensors index."""
    spec = load_model_spec(str(Path(__file__).parent / "data" / "hf_configs" / "smollm3-3b.json"))
    assert (spec.tie_embeddings, spec.nope_every, spec.num_kv_heads, spec.mlp) == (True, 4, 4, "swiglu")
    assert total_parameters(spec.to_model()) == 262_668_288 + 36 * 78_123_008 + 2_048 == 3_075_098_624
    assert "temperature tuning" not in (spec.notes or "")


SEED_OSS = str(Path(__file__).parent / "data" / "hf_configs" / "seed-oss-36b.json")


def test_seed_oss_is_a_llama_with_qkv_biases_and_dropout():
    """ByteDance-Seed/Seed-OSS-36B (tests/data/hf_configs): 64 layers, 80 query / 8 KV heads of 128, hidden 5,120,
    SwiGLU of 27,648, vocabulary 155,136, untied. By hand, biases left out as planner counts: embedding
    155,136 x 5,120 = 794,296,320, twice (untied); a layer's attention 2 x 5,120 x 10,240 + 2 x 5,120 x 1,024 =
    115,343,360, its SwiGLU 3 x 5,120 x 27,648 = 424,673,280, its norms 10,240: 540,026,880 x 64; the final norm
    5,120. Total 36,150,318,080 (with the 64 x 12,288 q/k/v biases 36,151,104,512), the README's 36B."""
    spec = load_model_spec(SEED_OSS)
    assert (spec.qkv_bias, spec.linear_bias, spec.dropout, spec.tie_embeddings) == (True, False, True, False)
    assert (spec.head_dim, spec.num_kv_heads, spec.mlp, spec.normalization) == (128, 8, "swiglu", "rmsnorm")
    total = 2 * 794_296_320 + 64 * 540_026_880 + 5_120
    assert total_parameters(spec.to_model()) == total == 36_150_318_080
    assert abs(total / 36e9 - 1) < 0.01


@pytest.mark.parametrize("biases, linear_bias", [((False, False, False), False), ((True, True, True), True)])
def test_seed_oss_biases_all_or_none_are_one_switch(tmp_path, biases, linear_bias):
    config = json.loads(Path(SEED_OSS).read_text())
    config.update(zip(("attention_bias", "attention_out_bias", "mlp_bias"), biases))
    spec = load_model_spec(write(tmp_path, config))
    assert (spec.linear_bias, spec.qkv_bias) == (linear_bias, False)


@pytest.mark.parametrize("biases, key", [((True, True, False), "attention_out_bias"),
                                         ((True, False, True), "mlp_bias"), ((False, False, True), "mlp_bias")])
def test_seed_oss_bias_mixes_planner_cannot_state_are_refused(tmp_path, biases, key):
    config = json.loads(Path(SEED_OSS).read_text())
    config.update(zip(("attention_bias", "attention_out_bias", "mlp_bias"), biases))
    message = refusal(tmp_path, config)
    assert f"config.json: {key}: true" in message and "--add-qkv-bias" in message


def test_seed_oss_dropout_is_its_class_default_when_the_file_is_silent(tmp_path):
    """SeedOssConfig's attention_dropout and residual_dropout default to 0.1; residual dropout alone counts."""
    config = {k: v for k, v in json.loads(Path(SEED_OSS).read_text()).items() if not k.endswith("dropout")}
    assert load_model_spec(write(tmp_path, config, "a")).dropout is True
    config.update(attention_dropout=0.0, residual_dropout=0.0)
    assert load_model_spec(write(tmp_path, config, "b")).dropout is False
    config.update(residual_dropout=0.1)
    assert load_model_spec(write(tmp_path, config, "c")).dropout is True


def test_dropout_rates_other_than_the_launch_files_are_said(tmp_path):
    """Megatron-LM's --attention-dropout and --hidden-dropout default to 0.1 (arguments.py), which the launch files
    keep: a config at 0.1 gets no note, one at 0.05 (or with attention dropout off) is told."""
    config = json.loads(Path(SEED_OSS).read_text())
    assert "dropout is read" not in (load_model_spec(write(tmp_path, config, "a")).notes or "")
    config.update(attention_dropout=0.0)
    notes = load_model_spec(write(tmp_path, config, "b")).notes
    assert "attention_dropout 0, residual_dropout 0.1" in notes and "--attention-dropout" in notes
    config.update(attention_dropout=0.05, residual_dropout=0.05)
    assert "attention_dropout 0.05" in load_model_spec(write(tmp_path, config, "c")).notes
    config.update(attention_dropout=0.0, residual_dropout=0.0)
    assert "dropout is read" not in (load_model_spec(write(tmp_path, config, "d")).notes or "")
