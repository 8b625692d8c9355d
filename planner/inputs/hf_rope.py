"""RoPE scaling from a Hugging Face config.json: `rope_scaling` (`rope_parameters` in Transformers v5
files), read as transformers/modeling_rope_utils.py reads it: the kind under `rope_type` (older files:
`type`), "default" or none for RoPE as it is, and each kind's own keys (ROPE_INIT_FUNCTIONS: yarn,
llama3, linear). A kind planner does not launch (dynamic NTK, LongRoPE, ...), a key that changes one it
does (YaRN's `attention_factor`) or parameters given per layer type other than v5's Gemma 3 form
(full_attention_parameters) are refused, naming them: dropped, they would launch another model. YaRN
without `original_max_position_embeddings` takes the config's max_position_embeddings, as Transformers does.
"""
from __future__ import annotations

from planner.inputs.hf_reader import Reader
from planner.inputs.specs import ROPE_SCALING_PARAMETERS

# The keys of each kind that planner reads.
KIND_KEYS = {kind: ("factor", *keys) for kind, keys in ROPE_SCALING_PARAMETERS.items()}
# Keys of the block that are not the scaling's (v5 moves the base frequency and partial factor there).
NOT_SCALING = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}
# The keys Transformers itself reads of each kind beyond planner's (modeling_rope_utils.py, _validate_yarn_parameters
# and _compute_yarn_parameters: YaRN's attention_factor). A key it does not read either (DeepSeek-R1-0528-Qwen3-8B's
# `attn_factor`, which Transformers warns of as unrecognized) launches no other model when dropped.
TRANSFORMERS_ONLY = {"yarn": {"attention_factor"}, "llama3": set(), "linear": set()}


def ignored_rope_keys(reader: Reader) -> list[str]:
    """The rope_scaling keys dropped because Transformers does not read them either (rope_scaling refuses the
    ones it does), for the spec's notes."""
    found = scaling_block(reader)
    if found is None:
        return []
    key, block = found
    kind = block.get("rope_type", block.get("type"))
    if kind not in KIND_KEYS:
        return []
    extra = sorted(set(block) - set(KIND_KEYS[kind]) - NOT_SCALING - TRANSFORMERS_ONLY[kind])
    return [f"{key}.{k} is not read by Transformers' {kind} RoPE (an unrecognized key), nor here" for k in extra]


def full_attention_parameters(block: dict) -> dict | None:
    """The full-attention layers' RoPE of a block written per layer type (Transformers v5: Gemma 3's
    {"full_attention": {...}, "sliding_attention": {...}}, where v4 files had rope_theta and rope_scaling for the
    global layers and rope_local_base_freq for the sliding ones), or None for a flat block. Planner reads one RoPE,
    the full-attention layers' as a v4 file gives it; it is this only when the sliding layers' RoPE is unscaled
    (its own base frequency, as v4's rope_local_base_freq, changes no cost), as Gemma 3's is."""
    if set(block) - {"full_attention", "sliding_attention"} or not isinstance(block.get("full_attention"), dict):
        return None
    sliding = block.get("sliding_attention", {})
    if not isinstance(sliding, dict) or sliding.get("rope_type", sliding.get("type")) not in (None, "default") \
            or set(sliding) - NOT_SCALING:
        return None
    return block["full_attention"]


def scaling_block(reader: Reader) -> tuple[str, dict] | None:
    """(its key as the file writes it, the block) of the RoPE scaling planner reads: `rope_parameters` (v5) or
    `rope_scaling`, the full-attention layers' part of a per-layer-type block; None without one."""
    key = "rope_parameters" if isinstance(reader.data.get("rope_parameters"), dict) else "rope_scaling"
    block = reader.data.get(key)
    if block is None:
        return None
    if not isinstance(block, dict):
        raise reader.fail(key, f"must be a mapping of the scaling's parameters (got {type(block).__name__})")
    if (per_type := full_attention_parameters(block)) is not None:
        return f"{key}.full_attention", per_type
    return key, block


def rope_scaling(reader: Reader) -> dict:
    """{"rope_scaling": {...}} for RopeScalingSpec, or {} when the frequencies are not rescaled."""
    found = scaling_block(reader)
    if found is None:
        return {}
    key, block = found
    kind = block.get("rope_type", block.get("type"))
    if kind is None and any(isinstance(v, dict) for v in block.values()):
        raise reader.fail(key, "holds RoPE parameters per layer type (Transformers v5) other than full_attention "
                               "and an unscaled sliding_attention, which planner does not read: write a model YAML")
    if kind in (None, "default"):
        return {}
    if kind not in KIND_KEYS:
        raise reader.fail(f"{key}.rope_type", f"{kind!r} is a RoPE scaling planner does not launch (yarn, llama3, "
                                              "linear): write a model YAML without it only if training without it")
    extra = sorted((set(block) - set(KIND_KEYS[kind]) - NOT_SCALING) & TRANSFORMERS_ONLY[kind])
    if extra:
        raise reader.fail(f"{key}.{extra[0]}", f"is not read for rope_type {kind} (planner reads "
                                               f"{', '.join(KIND_KEYS[kind])}): it would change the launched model")
    out = {"rope_type": kind, **{k: block[k] for k in KIND_KEYS[kind] if block.get(k) is not None}}
    if kind == "yarn" and "original_max_position_embeddings" not in out and reader.has("max_position_embeddings"):
        # _compute_yarn_parameters: without it, the frequencies are made for max_position_embeddings
        out["original_max_position_embeddings"] = reader.data["max_position_embeddings"]
    return {"rope_scaling": out}
