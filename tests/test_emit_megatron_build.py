"""The models Megatron-LM itself built from planner's launch arguments (tests/tools/megatron_build.py, run by hand
with Megatron-LM d98e8a64: parse_args, validate_args, core_transformer_config_from_args, gpt_builder on the
meta device) against planner's model: the architecture its TransformerConfig holds, each decoder layer's kind,
and the parameters it built. If the argument test fails after an emitter change, rerun the tool with --write.
"""
from __future__ import annotations

import json

import pytest
from emit_support import DATA, ROOT, job

from costmodel.flops import embedding_parameters, mtp_parameters, total_parameters
from planner.emit import megatron
from planner.inputs.loading import load_model_spec

BUILT = json.loads((DATA / "megatron" / "build_results.json").read_text())
ONE_GPU = dict(tp=1, pp=1, dp=1, micro_batch_size=1, global_batch_size=1)  # as the tool emits them


def spec_of(ref: str):
    return load_model_spec(str(ROOT / ref) if ref.startswith("tests/") else ref)


@pytest.mark.parametrize("ref", sorted(BUILT))
def test_the_stored_build_is_of_todays_arguments(ref):
    """The launch planner writes today for the one-GPU plan is the one Megatron-LM built (and launch.sh's
    mock-data tokenizer of the model's vocabulary)."""
    j = job(spec_of(ref), **ONE_GPU)
    assert megatron.flat_args(j) + megatron.data_args(j) == BUILT[ref]["args"]


@pytest.mark.parametrize("ref", sorted(BUILT))
def test_megatron_built_planners_architecture(ref):
    """Megatron-core's config of the launch is the model planner priced, field by field."""
    s, c = spec_of(ref), BUILT[ref]["config"]
    m = s.to_model()
    assert (c["num_layers"], c["hidden_size"], c["num_attention_heads"]) == (m.num_layers, m.hidden_size,
                                                                               m.num_attention_heads)
    assert (c["seq_length"], c["vocab_size"]) == (m.seq_length, m.vocab_size)
    assert c["ffn_hidden_size"] == m.ffn and c["untie_embeddings_and_output_weights"] == (not m.tie_embeddings)
    assert c["normalization"] == {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}[m.normalization]
    assert c["layernorm_epsilon"] == (s.norm_epsilon or 1e-5)  # unstated: Megatron-LM's default, 1e-5
    assert c["gated_linear_unit"] == m.gated_mlp and c["add_bias_linear"] == m.linear_bias
    assert c["add_qkv_bias"] == (m.linear_bias or m.qkv_bias)
    assert (c["hidden_dropout"] > 0) == m.dropout
    assert c["activation_func"] == {"swiglu": "silu", "quick_geglu": "quick_gelu", "relu2": "squared_relu",
                                    "gelu": "gelu"}[m.mlp]
    assert (c["glu_linear_offset"], c["activation_func_clamp_value"]) == (s.glu_linear_offset, s.glu_clamp)
    assert c["softmax_type"] == ("learnable" if m.attention_sinks else "vanilla")
    windowed = m.attention_window and m.attention_window < m.seq_length  # w keys, the query's own among them
    assert c["window_size"] == ([m.attention_window - 1, 0] if windowed else None)
    if m.mla is None:
        assert (c["num_query_groups"], c["kv_channels"]) == (m.kv_heads, m.head_dim)
        assert c["qk_layernorm"] == (m.qk_norm == "learned")
    else:
        mla = m.mla
        assert (c["q_lora_rank"] or 0, c["kv_lora_rank"], c["qk_head_dim"], c["qk_pos_emb_head_dim"],
                c["v_head_dim"]) == (mla.q_lora_rank, mla.kv_lora_rank, mla.qk_nope_head_dim, mla.qk_rope_head_dim,
                                     mla.v_head_dim)
    if m.position_embedding == "rope":
        assert c["position_embedding_type"] in ("rope", "yarn") and c["rotary_percent"] == m.rotary_percent
        assert c["rotary_base"] == m.rope_theta
    else:
        assert c["position_embedding_type"] == "learned_absolute"
    assert (c["mtp_num_layers"] or 0) == m.mtp_layers
    if m.moe is None:
        assert c["num_moe_experts"] is None
    else:
        assert (c["num_moe_experts"], c["moe_router_topk"], c["moe_ffn_hidden_size"]) == (
            m.moe.num_experts, m.moe.experts_per_token, m.moe.ffn_hidden_size)
        assert (c["moe_shared_expert_intermediate_size"] or 0) == m.moe.shared_ffn_hidden_size
        assert c["moe_shared_expert_gate"] == s.moe.shared_expert_gate
        r = s.moe  # the router (MoeSpec router*) in TransformerConfig's terms
        assert c["moe_router_score_function"] == ("sigmoid" if r.router == "sigmoid" else "softmax")
        assert c["moe_router_pre_softmax"] == (r.router == "softmax_topk")
        assert c["moe_router_enable_expert_bias"] == r.router_expert_bias
        assert (c["moe_router_num_groups"] or 0, c["moe_router_group_topk"] or 0) == (r.router_groups,
                                                                                     r.router_group_topk)
        assert (c["moe_router_topk_scaling_factor"] or 1.0) == r.router_scaling_factor
        assert c["moe_apply_probs_on_input"] == r.router_probs_on_input
        assert (c["moe_expert_capacity_factor"] or 0) == (r.capacity_factor or 0)


@pytest.mark.parametrize("ref", sorted(BUILT))
def test_megatron_built_each_layer_as_planner_has_it(ref):
    """Per decoder layer, from the built model: MoE or dense MLP, sliding-window or global attention, RoPE or
    none, as planner's model says (Model.is_moe_layer, Model.is_local_attention_layer, ModelSpec.nope_every)."""
    s, layers = spec_of(ref), BUILT[ref]["layers"]
    m, n = s.to_model(), s.num_layers
    assert layers["mlp"] == "".join("M" if m.is_moe_layer(i) else "D" for i in range(n))
    assert layers["attention"] == "".join("W" if m.is_local_attention_layer(i) else "G" for i in range(n))
    assert layers["rope"] == "".join("N" if s.nope_every and (i + 1) % s.nope_every == 0 else "R" for i in range(n))


@pytest.mark.parametrize("ref", sorted(BUILT))
def test_planner_counts_the_parameters_megatron_built(ref):
    """The built model's parameters, less what planner's count leaves out by design (costmodel/flops.py: biases,
    learned position embeddings, per-head query/key norms, attention sinks) and the tokenizer's padded rows
    (Megatron pads the vocabulary to a multiple of 128 x tp), are total_parameters; the multi-token prediction
    modules are mtp_parameters less the embedding and output copies a checkpoint stores and training shares."""
    s, built = spec_of(ref), BUILT[ref]
    m = s.to_model()
    p, c = built["parameters"], built["config"]
    padded_rows = (c["padded_vocab_size"] - m.vocab_size) * m.hidden_size * (1 if m.tie_embeddings else 2)
    assert p["main"] - padded_rows == total_parameters(m)
    assert p.get("mtp", 0) == mtp_parameters(m) - m.mtp_layers * 2 * embedding_parameters(m)
    # What is left out, by hand: learned positions s x h; two norms of head_dim a layer (the MTP block's too);
    # one sink per head a layer; the shared experts' gate, h weights an MoE layer
    gated = m.moe is not None and s.moe.shared_expert_gate
    left_out = {"position_embeddings": m.seq_length * m.hidden_size if m.position_embedding == "learned" else 0,
                "qk_norm": 2 * m.head_dim * (m.num_layers + m.mtp_layers) if m.qk_norm == "learned" else 0,
                "sinks": m.num_attention_heads * m.num_layers if m.attention_sinks else 0,
                "shared_expert_gate": m.hidden_size * m.moe_layers if gated else 0}
    assert {k: p.get(k, 0) for k in left_out} == left_out
    assert (p.get("bias", 0) > 0) == (m.linear_bias or m.qkv_bias or m.normalization == "layernorm")


@pytest.mark.parametrize("ref", sorted(BUILT))
def test_megatron_scaled_the_rope_as_the_model_does(ref):
    """The RoPE scaling Megatron-LM set from the launch (its config's YaRN fields, the arguments of Llama 3.1's
    and linear scaling) is the model's rope_scaling; none where the model has none."""
    s, rope = spec_of(ref), BUILT[ref]["rope"]
    r, mla = s.rope_scaling, s.mla is not None
    linear = rope["rotary_seq_len_interpolation_factor"]
    assert rope["use_rope_scaling"] == (r is not None and r.rope_type == "llama3")
    if r is not None and r.rope_type == "llama3":
        assert rope["rope_scaling_factor"] == r.factor
    assert linear == (int(r.factor) if r is not None and r.rope_type == "linear" else None)
    yarn = r is not None and r.rope_type == "yarn"
    if mla:  # multi-latent attention's YaRN fields; unscaled is factor 1
        assert rope["rotary_scaling_factor"] == (r.factor if yarn else 1.0)
        if yarn:
            assert (rope["mscale"], rope["mscale_all_dim"]) == (r.mscale or 1.0, r.mscale_all_dim or 0.0)
    else:
        assert rope["yarn_rotary_scaling_factor"] == (r.factor if yarn else None)
        if yarn:
            assert (rope["yarn_original_max_position_embeddings"], rope["yarn_beta_fast"], rope["yarn_beta_slow"]) == (
                r.original_max_position_embeddings, r.beta_fast, r.beta_slow)
