"""One sentence on why one scored plan beats another, from their estimate objects (report.to_dict)."""
from __future__ import annotations

from costmodel import lowp
from costmodel.types import Plan
from planner.inputs.plans import plan_to_dict

PART_WORDS = {
    "compute": "compute", "recompute": "recompute", "tp_comm": "TP communication",
    "cp_comm": "CP key/value exchange", "ep_comm": "EP dispatch/combine",
    "moe_sync": "MoE host syncs", "pp_comm": "PP p2p",
    "offload": "offload to host",
    "pp_bubble": "pipeline bubble", "dp_comm_exposed": "exposed DP/ZeRO sync", "optimizer": "optimizer step",
    "overhead": "overhead",
}
# The plan fields (plans.plan_to_dict, so a new field joins by itself) whose differences explain a ranking: all but
# the batch sizes the micro-batch and dp already give.
LAYOUT_KEYS = tuple(k for k in plan_to_dict(Plan()) if k not in ("global_batch_size", "grad_accum_steps"))
# Keys read as they are written (the degrees, recompute, precision, the projections); the others by KEY_WORDS
# (tests/test_compare.py checks each field is one or the other).
PLAIN_KEYS = frozenset({"tp", "cp", "pp", "dp", "ep", "etp", "vpp", "recompute", "precision", "projections"})


# Fields that mean something only when both plans train their GEMMs in a low precision (the FP8 recipe: both in
# fp8): between a bf16 and an fp8 plan the precision says it, and a bf16 plan's recipe or casts are no setting it runs.
LOW_PRECISION_KEYS = {"weight_casts": lowp.is_low, "lowp_param_gather": lowp.is_low, "bf16_layers_start": lowp.is_low,
                      "bf16_layers_end": lowp.is_low, "fp8_recipe": lambda p: p == "fp8"}


def plan_differences(a: dict, b: dict) -> list[str]:
    """'pp 8 instead of 16'-style phrases for the plan fields that differ (a's value first), leaving out the
    low-precision settings unless both plans train in one (LOW_PRECISION_KEYS)."""
    out = []
    for key in LAYOUT_KEYS:
        if key not in a["plan"] or key not in b["plan"]:
            continue  # a file of an older contract that had no such field
        applies = LOW_PRECISION_KEYS.get(key)
        if applies and not (applies(a["plan"].get("precision", "")) and applies(b["plan"].get("precision", ""))):
            continue
        va, vb = a["plan"][key], b["plan"][key]
        if va != vb:
            label = KEY_WORDS.get(key, key)
            out.append(f"{label} {_value(va)} instead of {_value(vb)}")
    return out


KEY_WORDS = {"zero_stage": "ZeRO", "micro_batch_size": "mbs",
             "recompute_layers": "layers recomputed per chunk (0: all)", "grad_dtype": "gradients in",
             "tp_comm_overlap": "TP overlap",
             "ep_overlap": "EP overlap", "ep_dispatch": "dispatch", "ep_dispatch_dtype": "dispatch in",
             "moe_cuda_graphs": "MoE CUDA graphs",
             "optimizer_states": "Adam states", "lowp_param_gather": "low-precision gathers", "cp_comm": "CP exchange",
             "full_iteration_graph": "whole-iteration CUDA graph", "layer_cuda_graphs": "per-layer CUDA graphs",
             "rope_fusion": "fused RoPE",
             "moe_act_prologue": "expert activation prologue", "expert_sizes_on_device": "expert token counts on GPU",
             "offload_layers": "layers offloaded",
             "offload_modules": "modules offloaded", "offload_optimizer_states": "optimizer states offloaded",
             "sequence_parallel": "SP", "attention_kernel": "attention kernel", "cross_entropy": "loss",
             "fp8_recipe": "FP8 recipe", "weight_casts": "weight casts", "overlap_dp_comm": "DP overlap",
             "grad_sync": "gradient sync", "grad_bucket_elements": "gradient reduce bucket",
             "tp_async_grad": "async TP gradient reduction",
             "sp_gathered": "gathered SP inputs", "zero3_reshard": "ZeRO-3 reshard",
             "pipeline_buffers": "pipeline buffers", "recompute_modules": "recompute modules",
             "fp8_attention": "FP8 attention", "overlap_pp_comm": "PP overlap", "flash_attention": "fused attention",
             "fused_elementwise": "fused elementwise kernels", "zero3_gather_unit": "ZeRO-3 gather unit",
             "grad_reduce": "gradient reduction", "stage_layers": "layers per chunk",
             "bf16_layers_start": "16-bit first layers", "bf16_layers_end": "16-bit last layers",
             "repeat_kv": "K/V repeated", "rank_order": "rank order"}


def _value(v) -> str:
    if v is None:  # stage_layers: the default split
        return "default"
    if isinstance(v, list):
        return ",".join(map(str, v)) or "none"
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


def biggest_part_gap(a: dict, b: dict) -> tuple[str, float, float]:
    """The time part where b spends the most more than a: (part, a seconds, b seconds)."""
    ta, tb = a["time_breakdown_s"], b["time_breakdown_s"]
    part = max(PART_WORDS, key=lambda k: tb.get(k, 0.0) - ta.get(k, 0.0))
    return part, ta.get(part, 0.0), tb.get(part, 0.0)


def why_faster(a: dict, b: dict) -> str:
    """Why `a` (the faster) beats `b`, in words, with the shares of the step that make the difference."""
    part, sa, sb = biggest_part_gap(a, b)
    speed = b["step_time_s"] / a["step_time_s"]
    diffs = plan_differences(a, b)
    what = ", ".join(diffs) if diffs else "same layout"  # all of them: the fourth may be what decides (a review)
    share_a, share_b = sa / a["step_time_s"], sb / b["step_time_s"]
    return (f"{what}: {PART_WORDS[part]} {100 * share_a:.0f}% vs {100 * share_b:.0f}% of the step "
            f"({sa:.3g} s vs {sb:.3g} s); {speed:.2f}x faster per step")
