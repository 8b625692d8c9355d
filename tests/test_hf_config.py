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

    assert main(["estimate", f"{HF}/llama-3-8b/config.json", "dgx-h100", "--gpus", "8", "--gbs", "8",
                 "--seq-length", "8192", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"model": "llama-3-8b"' in out
    assert json.loads(out)["seq_length"] == 8192
    # the estimate is of that model: 8 GPUs of plain DP (ZeRO 0) each hold all 8,030,261,248 weights in bf16
    d = json.loads(out)
    assert (d["plan"]["tp"], d["plan"]["pp"], d["plan"]["dp"], d["plan"]["zero_stage"]) == (1, 1, 8, 0)
    assert d["memory_breakdown_bytes"]["parameters"] == 2 * 8_030_261_248


def test_dense_configs_import_as_before():
    """A dense Llama or GPT-2 config gains none of the mixture-of-experts, latent-attention or
    local-attention fields, and no notes."""
    for path in (f"{HF}/llama-3-8b/config.json", f"{HF}/gpt2/config.json"):
        spec = load_model_spec(path)
        assert spec.moe is None and spec.mla is None and spec.mtp_layers == 0, path
        assert spec.attention_window is None and spec.head_dim is None and spec.notes is None, path


def test_gemma_2_27b_is_no_longer_read_as_20_9b():
    """The issue: Gemma 2's GeGLU MLP, head_dim 128 and tied embeddings were ignored (20.9B)."""
    spec = load_model_spec("tests/data/hf_configs/gemma-2-27b.json")
    assert round(total_parameters(spec.to_model()) / 1e9, 1) == 27.2


def test_the_command_line_asks_for_the_sequence_length_of_a_config_json(capsys):
    """A config.json says how long a context the model takes (Llama 3.1 8B: max_position_embeddings
    131,072), not what it trains at: every command refuses it without --seq-length, in one line."""
    from planner.commands.main import main

    for argv in (["estimate", f"{HF}/llama-3-8b/config.json", "dgx-h100", "--gpus", "8", "--gbs", "8"],
                 ["suggest", f"{HF}/llama-3-8b/config.json", "dgx-h100", "--gpus", "8", "--gbs", "8"],
                 ["size", f"{HF}/llama-3-8b/config.json", "--tokens", "1e9", "--gbs", "8"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--seq-length" in err[0] and "max_position_embeddings" in err[0], err
