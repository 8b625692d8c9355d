"""What published runs say about one scored plan: the six checks `planner estimate` and `planner suggest`
(its best plan) both attach to their JSON, in one place so that the two commands cannot drift apart."""
from __future__ import annotations

from costmodel import types as cm
from planner.analysis import accuracy, bymodel, coverage, envelope, hostwait, longcontext


def published_checks(model: cm.Model, cluster: cm.Cluster, plan: cm.Plan, scored: dict) -> dict:
    """For `plan` of `model` on `cluster`, scored as `scored` (score.to_dict): its MFU against published runs
    (`envelope`), the settings no published run on its GPU generation used (`unvalidated_settings`), its MoE
    host wait against the published rows' errors when it dominates (`host_wait`), its sequence length against
    the longest fitted run on its GPU generation (`long_context`), the out-of-sample step-time errors of the
    published runs on its GPU in its precision of its kind of model (`accuracy`), and those of its own model
    architecture (`model_accuracy`)."""
    gpu = cluster.gpu
    return {"envelope": envelope.judge(gpu.name, plan.precision, scored["mfu_causal"], model),
            "unvalidated_settings": coverage.unvalidated(gpu.generation, plan, model.moe is not None),
            "host_wait": hostwait.judge(scored["step_time_s"], scored["time_breakdown_s"]),
            "long_context": longcontext.judge(gpu.generation, model.seq_length, model.moe is not None),
            "accuracy": accuracy.judge(gpu.name, plan.precision, model, plan.fp8_recipe, gpu.generation),
            "model_accuracy": bymodel.judge(model)}
