"""Which plan settings published runs have exercised, per GPU generation: for each setting below, the
values the scored rows of validation/runs.yaml and holdout.yaml ran it with on that generation (computed
by planner/validation/coverage.py, shipped as validation/coverage.yaml).

A plan that uses a value no published run on its generation used rests on a part of the cost model
that was never judged there: TP communication overlap on A100, say, where every published A100 run
exposed its TP traffic. The search lands where the model is most optimistic (issue 14), so `suggest`
and `estimate` name such settings beside the MFU envelope (planner/analysis/envelope.py).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

from costmodel import lowp
from costmodel import types as cm
from planner.analysis import envelope, hostwait, longcontext

FILE = "coverage.yaml"


def _on(value: object, applies: bool) -> str | None:
    return str(value).lower() if applies else None


# Setting name -> the value a plan gives it, or None where it does not apply to the plan (TP overlap
# without TP, say). Each is a plan choice whose price the cost model derives from the GPU and its links
# (overlap credits, recompute, interleaving, offload, low-precision copies), so a generation's rows
# judge it there and nowhere else. Kernel choices priced by measured ratios (the attention kernel) and
# the frameworks' runtime bookkeeping (pipeline buffers) are left out.
SETTINGS: dict[str, Callable[[cm.Plan], str | None]] = {
    "zero_stage": lambda p: _on(p.zero_stage, p.dp * p.cp > 1),
    "recompute": lambda p: _on(p.recompute, True),
    "block_recompute": lambda p: _on(p.recompute_layers > 0, p.recompute == "full"),  # Plan.recompute_layers
    "sequence_parallel": lambda p: _on(p.sequence_parallel, p.tp > 1),
    "tp_comm_overlap": lambda p: _on(p.tp_comm_overlap, p.tp > 1),
    "tp_async_grad": lambda p: _on(p.tp_async_grad, p.tp > 1 and not p.tp_comm_overlap),  # moot under the overlap
    "interleaved_pipeline": lambda p: _on(p.vpp > 1, p.pp > 1),
    "context_parallel": lambda p: _on(p.cp > 1, True),
    "cp_comm": lambda p: _on(p.cp_comm, p.cp > 1),
    "ep_overlap": lambda p: _on(p.ep_overlap, p.ep > 1),
    "ep_dispatch": lambda p: _on(p.ep_dispatch, p.ep > 1),
    "ep_dispatch_dtype": lambda p: _on(p.ep_dispatch_dtype, p.ep > 1),  # it prices the all-to-all only
    "moe_cuda_graphs": lambda p: _on(p.moe_cuda_graphs, p.ep > 1),
    "full_iteration_graph": lambda p: _on(p.full_iteration_graph, True),
    "layer_cuda_graphs": lambda p: _on(p.layer_cuda_graphs, True),
    "rank_order": lambda p: _on(p.rank_order, p.pp > 1 and p.dp * p.cp > 1),  # with pp 1 or one replica they agree
    "activation_offload": lambda p: _on(p.offload_layers > 0, True),
    "offload_modules": lambda p: _on("+".join(p.offload_modules) or "none", True),
    "offload_optimizer_states": lambda p: _on(p.offload_optimizer_states, True),
    "weight_casts": lambda p: _on(p.weight_casts, lowp.is_low(p.precision)),
    "lowp_param_gather": lambda p: _on(p.lowp_param_gather, lowp.is_low(p.precision)),
}

# The same choices where they act on a mixture-of-experts model, whose price differs from a dense
# model's: ZeRO-3 gathers and reduce-scatters every expert's weights over expert-DP beside the small
# expert GEMMs, and per-op recompute replays every routed expert GEMM (flops.op_sac_moe_split).
# A dense row's ZeRO-3 or per-op recompute does not judge them.
MOE_SETTINGS: dict[str, Callable[[cm.Plan], str | None]] = {
    "moe_zero_stage": SETTINGS["zero_stage"],
    "moe_recompute": SETTINGS["recompute"],
    # at ep 1 a stack whose expert GEMMs read their token counts on the GPU has no host wait, and loses with it
    # what else the fitted wait stands for (costmodel/stage.py host_synced_dispatch); the host copy, what every
    # fitted MoE row waits for, is not a setting of its own
    "moe_expert_sizes_on_device": lambda p: _on(True, p.ep == 1 and p.expert_sizes_on_device),
}


def settings_of(plan: cm.Plan, moe: bool = False) -> dict[str, str]:
    """The plan's value of each setting that applies to it (MOE_SETTINGS too for an MoE model)."""
    table = {**SETTINGS, **MOE_SETTINGS} if moe else SETTINGS
    return {name: value for name, of in table.items() if (value := of(plan)) is not None}


@lru_cache(maxsize=1)
def shipped() -> dict[str, dict[str, tuple[str, ...]]]:
    """The precomputed coverage: generation -> setting -> the values published runs used."""
    from planner.inputs.catalogs import read_published

    data = read_published(FILE)
    return {gen: {name: tuple(values) for name, values in table.items()} for gen, table in data.items()}


def unvalidated(generation: str, plan: cm.Plan, moe: bool = False) -> list[dict]:
    """The plan's settings (those of an MoE model's with `moe`) whose value no scored published row
    (runs.yaml, holdout.yaml) on GPUs of `generation` used, each as {setting, value, generation,
    published_values} (the values used there; empty when the setting never applied to a row of that
    generation). Empty for a generation no row ran on: the MFU envelope already says none was
    published there."""
    table = shipped().get(generation)
    if table is None:
        return []
    return [{"setting": name, "value": value, "generation": generation, "published_values": list(table.get(name, ()))}
            for name, value in settings_of(plan, moe).items() if value not in table.get(name, ())]


def caution(unvalidated_settings: list[dict], whose: str) -> str | None:
    """One line naming the settings `unvalidated` found, else None."""
    if not unvalidated_settings:
        return None
    named = "; ".join(f"{u['setting']} {u['value']} (published: {', '.join(u['published_values']) or 'none'})"
                      for u in unvalidated_settings)
    return (f"{whose} settings no published run on {unvalidated_settings[0]['generation']} GPUs used, so the "
            f"cost model's figures for them there were never judged against a run (validation/): {named}")


def cautions(judged: dict | None, unvalidated_settings: list[dict], subject: str, so: str | None = None,
             host_wait: dict | None = None, long_context: dict | None = None) -> list[str]:
    """The cautions to print beside a plan named `subject` ("#1", "the plan"): its MFU above the envelope
    (envelope.caution, followed by `so` when given), its unvalidated settings (caution), its MoE host
    wait where that dominates the step (hostwait.judge, hostwait.caution) and its sequences where they are
    longer than any fitted run on its generation (longcontext.judge, longcontext.caution)."""
    above = envelope.caution(judged, f"{subject}'s", so) if so else envelope.caution(judged, f"{subject}'s")
    return [line for line in (above, caution(unvalidated_settings, f"{subject} uses"),
                              hostwait.caution(host_wait, f"{subject}'s"),
                              longcontext.caution(long_context, f"{subject}'s")) if line]
