"""Hugging Face config.json files are accepted wherever a model YAML is."""

from costmodel.flops import total_parameters
from planner.inputs.loading import load_model_spec

HF = "tests/data/hf"


def test_llama3_8b_config_maps_to_the_spec():
    spec = load_model_spec(f"{HF}/llama-3-8b/config.json")
    assert spec.name == "llama-3-8b"
    assert (spec.num_layers, spec.hidden_size, spec.num_attention_heads, spec.num_kv_heads) == (32, 4096, 32, 8)
    assert (spec.ffn_hidden_size, spec.vocab_size, spec.seq_length) == (14336, 128256, 8192)
    assert spec.mlp == "swiglu" and not spec.tie_embeddings and not spec.dropout
    # Meta-Llama-3-8B has 8,030,261,248 parameters (Hub model card).
    assert total_parameters(spec.to_model()) == 8_030_261_248


def test_gpt2_config_maps_to_the_spec():
    spec = load_model_spec(f"{HF}/gpt2/config.json")
    assert (spec.num_layers, spec.hidden_size, spec.num_attention_heads, spec.vocab_size, spec.seq_length) == (
        12, 768, 12, 50257, 1024)
    assert spec.mlp == "gelu" and spec.tie_embeddings and spec.dropout
    assert spec.ffn_hidden_size is None  # 4h default, as GPT-2's n_inner = null


def test_seq_length_override():
    assert load_model_spec(f"{HF}/llama-3-8b/config.json", seq_length=4096).seq_length == 4096


def test_estimate_accepts_a_config_json(capsys):
    import json

    from planner.commands.main import main

    assert main(["estimate", f"{HF}/llama-3-8b/config.json", "dgx-h100", "--gpus", "8", "--gbs", "8", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"model": "llama-3-8b"' in out
    # the estimate is of that model: 8 GPUs of plain DP (ZeRO 0) each hold all 8,030,261,248 weights in bf16
    d = json.loads(out)
    assert (d["plan"]["tp"], d["plan"]["pp"], d["plan"]["dp"], d["plan"]["zero_stage"]) == (1, 1, 8, 0)
    assert d["memory_breakdown_bytes"]["parameters"] == 2 * 8_030_261_248
