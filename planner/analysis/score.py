"""The estimate object shared by `estimate --json`, `suggest --json` and other commands.

Keys are stable. `time_breakdown_s` parts add up to `step_time_s`, except `dp_comm`, which is the
whole DP/ZeRO sync, hidden or not (its critical-path share is `dp_comm_exposed`).
"""
from __future__ import annotations

from dataclasses import dataclass

from costmodel import dollars
from costmodel import types as cm
from costmodel.flops import total_parameters
from costmodel.step import Estimate, estimate
from costmodel.topology import domain_size
from planner.inputs.plans import plan_to_dict
from planner.inputs.specs import ModelSpec

# ModelSpec fields that describe the catalog entry, not the model: left out of the estimate's model_spec (the
# contract's ModelShape), which emit and compare read back.
SPEC_METADATA = {"source", "notes", "seq_length_note", "global_batch_size", "training_tokens"}


@dataclass(frozen=True)
class Scored:
    """A plan with its estimate and the context it was scored in."""

    model: ModelSpec
    cluster: cm.Cluster
    plan: cm.Plan
    est: Estimate


def score(model: ModelSpec, cluster: cm.Cluster, plan: cm.Plan, eff: cm.Efficiency | None = None) -> Scored:
    return Scored(model, cluster, plan, estimate(model.to_model(), cluster, plan, eff))


def training_totals(s: Scored) -> dict | None:
    tokens = s.model.training_tokens
    if not tokens:
        return None
    gbs, seq = s.plan.global_batch_size, s.model.seq_length
    return {
        "training_tokens": tokens,
        "steps": dollars.steps_to_train(tokens, gbs, seq),
        "time_to_train_s": dollars.time_to_train_seconds(tokens, gbs, seq, s.est.step_time_seconds),
        "usd_to_train": dollars.usd_to_train(tokens, gbs, seq, s.est.usd_per_step),
    }


def to_dict(s: Scored) -> dict:
    e, model = s.est, s.model.to_model()
    times = dict(e.time_breakdown_seconds)
    times["dp_comm"] = e.dp_comm_seconds
    return {
        "model": s.model.name,
        "model_spec": s.model.model_dump(mode="json", exclude_none=True, exclude=SPEC_METADATA),
        "cluster": s.cluster.name,
        "gpu": s.cluster.gpu.name,
        "num_gpus": s.cluster.num_gpus,
        "gpus_per_node": s.cluster.gpus_per_node,
        "nvlink_domain_size": domain_size(s.cluster),
        "seq_length": s.model.seq_length,
        "plan": plan_to_dict(s.plan),
        "step_time_s": e.step_time_seconds,
        "tokens_per_s": e.tokens_per_second,
        "parameters": total_parameters(model),
        "active_parameters": total_parameters(model, active=True),
        "model_tflops_per_gpu": e.model_flops_per_gpu_per_second / 1e12,
        "mfu": e.mfu,
        "mfu_causal": e.mfu_causal,
        "hfu": e.hfu,
        "memory_per_gpu_bytes": e.memory_per_gpu_bytes,
        "memory_capacity_bytes": e.memory_capacity_bytes,
        "fits": e.fits,
        "time_breakdown_s": times,
        "memory_breakdown_bytes": dict(e.memory_breakdown_bytes),
        "pp_bubble_fraction": e.bubble_fraction,
        "stage_layers": list(e.stage_layers),
        "usd_per_gpu_hour": s.cluster.usd_per_gpu_hour,
        "usd_per_step": e.usd_per_step,
        "training": training_totals(s),
        "warnings": list(e.warnings),
    }
