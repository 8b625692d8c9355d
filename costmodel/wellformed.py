"""Whether the cost model's inputs are numbers it can price, field by field.

planner checks what users type before it builds a Model, Cluster or Plan (planner/inputs); a Python caller
who builds them directly gets here a sentence per broken field instead of a ZeroDivisionError, a NaN step
or a negative one. The rules: a count is an int and not a bool, a quantity is a finite number and not
negative, a flag is a bool, and the sizes the formulas divide by are positive. Structural legality (degrees
that divide, knob values) is rules.py's (its cluster_violations are the plan's rules on a cluster).
"""
from __future__ import annotations

import math
from dataclasses import fields, is_dataclass

# Fields the formulas divide by (or that make no job at 0), by dataclass.
POSITIVE = {
    "Model": ("num_layers", "hidden_size", "num_attention_heads", "vocab_size", "seq_length"),
    "Moe": ("num_experts", "experts_per_token", "ffn_hidden_size", "layer_freq"),
    "Mla": ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"),
    "Gpu": ("memory_bytes", "hbm_bandwidth_bytes_per_second", "tensor_clock_fraction"),
    "Cluster": ("num_gpus", "gpus_per_node", "nvlink_domain_size", "network_bandwidth_bytes_per_second",
                "matmul_efficiency_scale"),
}
# Shares of a rate, at most 1 (the rest are only not negative).
FRACTIONS = {"Gpu": ("tensor_clock_fraction",), "Model": ("rotary_percent",)}


def _number(name: str, value, integer: bool) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return [f"{name} must be a number (got {value!r})"]
    if integer and not isinstance(value, int):
        return [f"{name} must be an integer (got {value!r})"]
    if not math.isfinite(value) or value < 0:
        return [f"{name} must be a finite number, not negative (got {value!r})"]
    return []


def _typed(name: str, kind: str, value) -> list[str]:
    """One field's value against its annotation (a string: the types module uses postponed annotations)."""
    if value is None and "None" in kind:
        return []
    base = kind.split(" |")[0].strip()
    if base == "bool":
        return [] if isinstance(value, bool) else [f"{name} must be true or false (got {value!r})"]
    if base in ("int", "float"):
        return _number(name, value, base == "int")
    if base.startswith("dict[str, float]") and isinstance(value, dict):
        return [m for k, v in value.items() for m in _number(f"{name}[{k}]", v, False)]
    if base.startswith(("tuple[int", "tuple[float")) and isinstance(value, tuple):
        return [m for i, v in enumerate(value) for m in _number(f"{name}[{i}]", v, base.startswith("tuple[int"))]
    return []


def field_violations(obj, where: str) -> list[str]:
    """Every field of the dataclass `obj` (and of the dataclasses it holds) that is not a number it can be."""
    out: list[str] = []
    cls = type(obj).__name__
    for f in fields(obj):
        value, name = getattr(obj, f.name), f"{where}.{f.name}"
        if is_dataclass(value):
            out += field_violations(value, name)
            continue
        broken = _typed(name, str(f.type), value)
        out += broken
        if broken or isinstance(value, bool):
            continue
        if f.name in POSITIVE.get(cls, ()) and value <= 0:
            out.append(f"{name} must be positive (got {value!r})")
        if f.name in FRACTIONS.get(cls, ()) and value > 1:
            out.append(f"{name} must be at most 1 (got {value!r})")
    return out


def model_field_violations(model) -> list[str]:
    """A Model's fields, and top-k within the routed experts."""
    out = field_violations(model, "model")
    moe = model.moe
    if not out and moe is not None and moe.experts_per_token > moe.num_experts:
        out.append(f"model.moe.experts_per_token ({moe.experts_per_token}) must be at most num_experts "
                   f"({moe.num_experts})")
    return out


def cluster_field_violations(cluster) -> list[str]:
    """A Cluster's fields, a 16-bit dense peak to price GEMMs at, and NVLink bandwidth where a domain has
    more than one GPU."""
    out = field_violations(cluster, "cluster")
    if out:
        return out
    peaks = cluster.gpu.dense_flops_per_second
    if not any(p in peaks for p in ("bf16", "fp16")) or any(v <= 0 for v in peaks.values()):
        out.append(f"cluster.gpu.dense_flops_per_second needs a bf16 or fp16 peak, and every peak positive "
                   f"(got {peaks!r})")
    if cluster.nvlink_domain_size > 1 and cluster.nvlink_bandwidth_bytes_per_second <= 0:
        out.append(f"cluster.nvlink_bandwidth_bytes_per_second must be positive with an NVLink domain of "
                   f"{cluster.nvlink_domain_size} GPUs")
    return out
