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


def _edited(tmp_path, source: str, drop: tuple[str, ...] = (), **changes) -> str:
    """A copy of a shipped config.json with keys dropped or changed, as a user might hand-edit one."""
    import json

    data = json.load(open(source))
    for key in drop:
        data.pop(key)
    data.update(changes)
    folder = tmp_path / f"edit{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_gated_family_stays_gated_whatever_activation_it_names(tmp_path):
    """MixtralBlockSparseTop2MLP has w1, w2, w3 whatever `hidden_act` says: a GeLU there is GeGLU (3
    matrices), not a 2-matrix MLP. Mixtral 8x7B is 46.7B (model card) either way; read as 2 matrices
    it lost 32 layers x 8 experts x 4096 x 14336 = 15.03B."""
    spec = load_model_spec(_edited(tmp_path, "tests/data/hf_configs/mixtral-8x7b.json", hidden_act="gelu"))
    assert spec.mlp == "geglu"
    assert round(total_parameters(spec.to_model()) / 1e9, 1) == 46.7


def test_an_activation_planner_does_not_model_is_refused_naming_the_key(tmp_path, capsys):
    """A Llama-type model with ReLU (ReGLU, e.g. ReluLLaMA) or a ReLU GPT-style MLP is neither SwiGLU
    nor GeLU: one line naming `hidden_act`, exit 2, rather than a miscounted or mislabelled MLP."""
    from planner.commands.main import main

    for source, act in ((f"{HF}/llama-3-8b/config.json", "relu"), ("tests/data/hf_configs/qwen3-30b-a3b.json", "relu"),
                        (f"{HF}/gpt2/config.json", "relu")):
        key = "activation_function" if "gpt2" in source else "hidden_act"
        path = _edited(tmp_path, source, **{key: act})
        assert main(["estimate", path, "dgx-h100", "--gpus", "8", "--seq-length", "1024"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{key}: activation 'relu'" in err[0] and "not modelled" in err[0], err


def test_squared_relu_of_a_non_gated_family_is_relu2(tmp_path):
    """Nemotron's `hidden_act: relu2` (squared ReLU, 2 matrices) keeps its name, which the Megatron
    emitter writes as --squared-relu."""
    spec = load_model_spec(_edited(tmp_path, f"{HF}/gpt2/config.json", activation_function="relu2"))
    assert spec.mlp == "relu2"


def test_an_absent_kv_head_count_takes_the_class_default(tmp_path):
    """MixtralConfig and Qwen3MoeConfig default num_key_value_heads to 8 and 4 (not one per head), so
    a file without the key is still Mixtral 8x7B (46.7B) and Qwen3-30B-A3B (30.5B, model cards)."""
    for source, kv, total in (("tests/data/hf_configs/mixtral-8x7b.json", 8, 46.7),
                              ("tests/data/hf_configs/qwen3-30b-a3b.json", 4, 30.5)):
        spec = load_model_spec(_edited(tmp_path, source, drop=("num_key_value_heads",)))
        assert spec.num_kv_heads == kv
        assert round(total_parameters(spec.to_model()) / 1e9, 1) == total


def test_a_shape_key_of_the_wrong_type_is_named_as_the_file_names_it(tmp_path, capsys):
    """Gemma 3n's per-layer list of `intermediate_size`: the line names the config's key, not the spec's."""
    from planner.commands.main import main

    path = _edited(tmp_path, "tests/data/hf_configs/qwen3-8b.json", intermediate_size=[12288] * 36)
    assert main(["estimate", path, "dgx-h100", "--gpus", "8", "--seq-length", "4096"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "config.json: intermediate_size: must be an integer" in err[0], err


def test_a_gated_family_without_an_activation_key_is_swiglu(tmp_path):
    """LlamaConfig, Qwen3Config and DeepseekV3Config default hidden_act to "silu": a file without the key
    is SwiGLU (Qwen3-8B 8.19B, model card 8.2B), not GeGLU and not a 2-matrix MLP."""
    spec = load_model_spec(_edited(tmp_path, "tests/data/hf_configs/qwen3-8b.json", drop=("hidden_act",)))
    assert spec.mlp == "swiglu"
    assert round(total_parameters(spec.to_model()) / 1e9, 1) == 8.2


def test_what_a_config_cannot_leave_out_or_add_is_one_line(tmp_path, capsys):
    """A null activation, no model_type, a gated family without its width, and a MoE top-k on a dense
    model type: each one line naming the key, exit 2, never a guess."""
    from planner.commands.main import main

    qwen3 = "tests/data/hf_configs/qwen3-8b.json"
    cases = ((_edited(tmp_path, qwen3, hidden_act=None), "hidden_act: is null"),
             (_edited(tmp_path, qwen3, drop=("model_type",)), "model_type: is missing"),
             (_edited(tmp_path, qwen3, drop=("intermediate_size",)), "intermediate_size: is missing"),
             (_edited(tmp_path, qwen3, num_experts_per_tok=2), "num_experts_per_tok: 2: a mixture-of-experts"))
    for path, expected in cases:
        assert main(["estimate", path, "dgx-h100", "--gpus", "8", "--seq-length", "4096"]) == 2, expected
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], (expected, err)


def test_what_an_import_leaves_out_is_said_on_stderr(tmp_path, capsys):
    """The notes of an import (Llama 4's vision tower not modelled; a model type read without its
    family's rules) reach the user as 'planner: note:' lines, not only the spec's `notes` field; a
    plain Llama config has none."""
    from planner.commands.main import main

    from planner.inputs import loading

    loading._SAID.clear()  # each note is printed once per process
    scout = "tests/data/hf_configs/llama4-scout-17b-16e.json"
    assert main(["estimate", scout, "dgx-h100", "--gpus", "64", "--seq-length", "8192", "--json"]) == 0
    err = capsys.readouterr().err
    assert "planner: note:" in err and "the vision tower (vision_config) and its projector are not modelled" in err
    load_model_spec(scout)
    assert capsys.readouterr().err == ""  # said once
    load_model_spec(f"{HF}/llama-3-8b/config.json")
    assert capsys.readouterr().err == ""
