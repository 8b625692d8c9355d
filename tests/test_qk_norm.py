"""Query/key norms (ModelSpec.qk_norm): read from the configs that have them and written into the
Megatron-LM launch, never dropped (the cost model does not price them: validation/README.md).

Qwen3 and Qwen3-MoE (Qwen3Attention / Qwen3MoeAttention q_norm, k_norm) and Gemma 3 (Gemma3Attention)
normalise each head's queries and keys with a learned RMSNorm; Llama 4 with a weightless L2 norm when
its config's `use_qk_norm` is set (Llama4TextConfig default True: Scout sets it, Maverick does not).
Megatron-core d98e8a64 builds them from TransformerConfig.qk_layernorm / qk_l2_norm and, under MLA,
builds DeepSeek's latent RMSNorms from qk_layernorm (models/gpt/gpt_layer_specs.py).
"""
import json

import pytest
from emit_support import job, tiny

from planner.emit import megatron
from planner.errors import PlannerError
from planner.frameworks import torchtitan
from planner.inputs.loading import load_model_spec

HF = "tests/data/hf_configs"


@pytest.mark.parametrize("config, kind", [
    ("qwen3-8b", "learned"), ("qwen3-30b-a3b", "learned"), ("qwen3-235b-a22b", "learned"),
    ("gemma-3-27b", "learned"), ("gemma-3-1b", "learned"),
    ("llama4-scout-17b-16e", "l2"),  # "use_qk_norm": true
    ("llama4-maverick-17b-128e", "none"),  # "use_qk_norm": false
    ("gemma-2-27b", "none"), ("mistral-7b-v0.1", "none"), ("mixtral-8x7b", "none"), ("gpt-oss-20b", "none"),
    ("deepseek-v3", "none"),  # MLA: its latent norms are part of mla
])
def test_configs_import_their_query_key_norm(config, kind):
    assert load_model_spec(f"{HF}/{config}.json").qk_norm == kind


def test_llama4_without_the_key_takes_the_class_default(tmp_path):
    data = json.load(open(f"{HF}/llama4-scout-17b-16e.json"))
    data["text_config"].pop("use_qk_norm")
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert load_model_spec(str(tmp_path / "config.json")).qk_norm == "l2"


def test_a_non_boolean_use_qk_norm_is_one_line(tmp_path):
    data = json.load(open(f"{HF}/llama4-scout-17b-16e.json"))
    data["text_config"]["use_qk_norm"] = "yes"
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(PlannerError, match="use_qk_norm") as err:
        load_model_spec(str(tmp_path / "config.json"))
    assert "\n" not in str(err.value)


def test_qk_norm_beside_mla_is_refused():
    with pytest.raises(ValueError, match="qk_norm"):
        tiny(qk_norm="learned", mla={"q_lora_rank": 0, "kv_lora_rank": 64, "qk_nope_head_dim": 32,
                                      "qk_rope_head_dim": 32, "v_head_dim": 64})


def flags(model, **plan):
    return megatron.flat_args(job(model, **plan))


def test_megatron_launch_writes_the_norm_of_each_kind():
    dense = dict(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=64)
    qwen = flags(load_model_spec("qwen3-30b-a3b"), ep=8, **dense)
    assert "--qk-layernorm" in qwen and "--qk-l2-norm" not in qwen
    l2 = flags(tiny(qk_norm="l2", normalization="rmsnorm"), **dense)
    assert "--qk-l2-norm" in l2 and "--qk-layernorm" not in l2
    plain = flags(load_model_spec("llama3-8b"), **dense)
    assert not {"--qk-layernorm", "--qk-l2-norm"} & set(plain)


def test_megatron_launch_builds_deepseeks_latent_norms():
    """Without qk_layernorm Megatron-core's MLA has no q_a / kv_a RMSNorm (gpt_layer_specs.py)."""
    model = load_model_spec("deepseek-v3")
    args = flags(model, tp=1, pp=1, dp=64, ep=64, micro_batch_size=1, global_batch_size=1024,
                 stage_layers=None)
    assert "--multi-latent-attention" in args and "--qk-layernorm" in args


def test_torchtitan_llama3_has_no_query_key_norm():
    model = load_model_spec("llama3-8b").model_copy(update={"qk_norm": "learned"}).to_model()
    flavour, why = torchtitan.match_flavour(model)
    assert flavour is None and "qk_norm learned (torchtitan none)" in why
    assert torchtitan.match_flavour(load_model_spec("llama3-8b").to_model())[0] is not None
