"""The mixture-of-experts part of a Hugging Face config.json, per family as the Transformers classes build it:
routed and shared experts, which layers are MoE, the router, multi-head latent attention and multi-token
prediction modules (moe_fields, mla_fields, mtp_layers; hf_config.py calls them). A layout or router the
spec cannot represent is refused in one line naming the key.
"""
from __future__ import annotations

from planner.inputs import limits as L
from planner.inputs.hf_classes import MOE_FAMILIES, MTP_FAMILIES
from planner.inputs.hf_reader import Reader, show


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


def moe_fields(reader: Reader, model_type: str, layers: int | None) -> tuple[dict | None, int | None, list[str]]:
    """The `moe` spec (or None for a dense family), the dense MLP width when it is not
    `intermediate_size`, and notes. Per family, from the Transformers classes (v4.57.1):

    - mixtral (MixtralConfig, modeling_mixtral.py MixtralSparseMoeBlock): every layer MoE;
      num_local_experts experts of intermediate_size, top num_experts_per_tok; no shared expert.
    - qwen2_moe / qwen3_moe (Qwen2MoeDecoderLayer, Qwen3MoeDecoderLayer): layer i is MoE when i is not in
      mlp_only_layers and (i + 1) % decoder_sparse_step == 0; experts of moe_intermediate_size, dense
      layers of intermediate_size; Qwen2-MoE adds one shared expert of shared_expert_intermediate_size
      behind a sigmoid gate (shared_expert_gate; its h weights are not counted); Qwen3-MoE has none.
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
    moe.update(balancing_fields(reader, family))
    return moe, dense_ffn, notes + router_notes


def balancing_fields(r: Reader, family: str) -> dict:
    """The load-balancing loss (specs.MoeSpec aux_loss_*) where config.json states one: router_aux_loss_coef
    (Transformers' load_balancing_loss_func over a forward's tokens: Megatron's aux_loss), or DeepSeek's
    aux_loss_alpha, per sequence when seq_aux (modeling_deepseek.py MoEGate: Megatron's seq_aux_loss). A key the
    file leaves out stays out: a Transformers class default is not what the model was trained with."""
    deepseek = family in ("deepseek", "glm")
    key = "aux_loss_alpha" if deepseek else "router_aux_loss_coef"
    value = r.data.get(key)
    if value is None:
        return {}
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= L.MAX_AUX_LOSS_COEFF:
        raise r.fail(key, f"must be a number in [0, {L.MAX_AUX_LOSS_COEFF:g}] (got {show(value)})")
    seq = r.data.get("seq_aux", False) if deepseek else False
    if not isinstance(seq, bool):
        raise r.fail("seq_aux", f"must be true or false (got {show(seq)})")
    return {"aux_loss_coeff": float(value), "aux_loss_scope": "sequence" if seq else "micro_batch"}


def experts_and_top_k(r: Reader, model_type: str, family: str) -> tuple[int, int] | None:
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
def plain_moe_layout(r: Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    """Mixtral, gpt-oss, OLMoE: every layer MoE, experts of intermediate_size; no dense layer, so the
    dense width stays the expert width."""
    moe["ffn_hidden_size"] = r.need_int("intermediate_size", 1)
    return moe["ffn_hidden_size"], None, expert_count_key(model_type)


def qwen_moe_layout(r: Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    moe["ffn_hidden_size"] = r.need_int("moe_intermediate_size", 1)
    shared = r.integer("shared_expert_intermediate_size", 0) or 0
    if shared and model_type == "qwen3_moe":
        raise r.fail("shared_expert_intermediate_size", "Qwen3-MoE has no shared expert (Qwen3MoeSparseMoeBlock); "
                     "the key would be ignored by Transformers")
    if shared:  # Qwen2MoeSparseMoeBlock scales the shared expert's output by sigmoid(shared_expert_gate(x))
        moe.update(shared_ffn_hidden_size=shared, shared_expert_gate=True)
        notes.append("the shared expert's sigmoid gate (h weights a layer) is not counted")
    step = r.need_int("decoder_sparse_step", 1)
    dense = r.int_list("mlp_only_layers") or []
    if layers and any(not 0 <= i < layers for i in dense):
        raise r.fail("mlp_only_layers", f"holds a layer index outside 0..{layers - 1}")
    moe_layers = [i for i in range(layers) if i not in dense and (i + 1) % step == 0] if layers else None
    return None, moe_layers, "mlp_only_layers" if dense else "decoder_sparse_step"


def deepseek_layout(r: Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
    moe["ffn_hidden_size"] = r.need_int("moe_intermediate_size", 1)
    shared = r.integer("n_shared_experts", 0) or 0
    if shared:
        moe["shared_ffn_hidden_size"] = shared * moe["ffn_hidden_size"]
    freq = r.data.get("moe_layer_freq", 1)
    if isinstance(freq, bool) or not isinstance(freq, int):
        raise r.fail("moe_layer_freq", f"must be an integer (got {show(freq)}); a per-layer MoE pattern "
                     "is not one planner represents")
    if freq != 1:
        raise r.fail("moe_layer_freq", f"{freq}: DeepSeek's modeling code puts experts on layers with "
                     "i % moe_layer_freq == 0 while Transformers' DeepseekV2/V3 classes ignore the key; "
                     "planner represents only 1")
    first = r.integer("first_k_dense_replace", 0) or 0
    return None, list(range(first, layers)) if layers else None, "first_k_dense_replace"


def llama4_layout(r: Reader, model_type: str, layers: int | None, moe: dict, notes: list) -> tuple:
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


def layout_fields(r: Reader, moe_layers: list[int], layers: int | None, layout_key: str) -> dict:
    """The spec's first_dense_layers / layer_freq for the MoE layer set, or a refusal naming `layout_key`
    when the set is not 'the first k dense, then every f-th layer'."""
    fit = fit_moe_layout(moe_layers, layers)
    if fit is None:
        if not moe_layers:
            raise r.fail(layout_key, "leaves no MoE layer in a mixture-of-experts model")
        raise r.fail(layout_key, f"puts experts on layers {show(sorted(moe_layers))}: not 'the first k dense, "
                     "then every f-th layer', the only layouts planner represents")
    first, freq = fit
    return {**({"first_dense_layers": first} if first else {}), **({"layer_freq": freq} if freq != 1 else {})}


def router_fields(reader: Reader, model_type: str, top_k: int) -> tuple[dict, list[str]]:
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
        k = r.data.get("num_experts_per_tok", 1)
        if k != 1:
            raise r.fail("num_experts_per_tok", f"{show(k)}: Llama 4's experts scale their input by the router "
                         "weight (Llama4TextMoe), which Megatron-core runs with top-1 routing only "
                         "(moe_apply_probs_on_input)")
        return {"router": "sigmoid", "router_probs_on_input": True}, []
    normalised = r.data.get("norm_topk_prob")
    if not isinstance(normalised, bool):
        raise r.fail("norm_topk_prob", f"must be true or false (got {show(normalised)})")
    if family in ("qwen_moe", "olmoe"):
        return {"router": "topk_softmax" if normalised else "softmax_topk"}, []
    if family == "glm":  # Glm4MoeTopkRouter is DeepseekV3TopkRouter, which reads no scoring or method key
        return deepseek_router(r, top_k, normalised, fixed=("sigmoid", "noaux_tc"))
    return deepseek_router(r, top_k, normalised)


def deepseek_router(r: Reader, top_k: int, normalised: bool,
                    fixed: tuple[str, str] | None = None) -> tuple[dict, list[str]]:
    """DeepSeek's MoEGate keys (router_fields) onto the spec; one line naming the key otherwise. `fixed`:
    the (scoring, method) of a class that reads neither key (GLM-4.5)."""
    score, method = fixed or (r.data.get("scoring_func", "sigmoid" if r.data.get("model_type") != "deepseek_v2"
                                         else "softmax"), r.data.get("topk_method"))
    if score not in ("softmax", "sigmoid"):
        raise r.fail("scoring_func", f"{show(score)}: planner maps softmax and sigmoid routers")
    if method not in ("greedy", "group_limited_greedy", "noaux_tc"):
        raise r.fail("topk_method", f"{show(method)}: planner maps greedy, group_limited_greedy and noaux_tc")
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


def mla_fields(reader: Reader, model_type: str) -> dict | None:
    """Multi-head latent attention (DeepseekV2/V3Attention): q_lora_rank null means queries projected
    straight from the hidden state (DeepSeek-V2-Lite), which the spec writes as 0."""
    if MOE_FAMILIES.get(model_type) != "deepseek":
        return None
    r = reader
    return {"q_lora_rank": r.integer("q_lora_rank", 0) or 0, "kv_lora_rank": r.need_int("kv_lora_rank", 1),
            "qk_nope_head_dim": r.need_int("qk_nope_head_dim", 1),
            "qk_rope_head_dim": r.need_int("qk_rope_head_dim", 1),
            "v_head_dim": r.need_int("v_head_dim", 1)}


def mtp_layers(reader: Reader, model_type: str) -> int:
    """DeepSeek-V3's multi-token prediction modules (num_nextn_predict_layers; README_WEIGHTS.md of
    deepseek-ai/DeepSeek-V3: layer 61 holds the one MTP module). Transformers drops them at load; a
    training run trains them, so the spec keeps them (mtp_layers)."""
    if MOE_FAMILIES.get(model_type) not in MTP_FAMILIES:
        return 0
    return reader.integer("num_nextn_predict_layers", 0) or 0
