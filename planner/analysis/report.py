"""`planner estimate` as a function: one plan scored, diagnosed and, on request, re-scored under
what-if assumptions, as the JSON object the command prints."""
from __future__ import annotations

from dataclasses import replace

from costmodel import types as cm
from planner import frameworks
from planner.analysis import diagnose, judged, score, whatif
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs import plans
from planner.inputs.specs import ModelSpec, PlanSpec


def estimate_report(model: ModelSpec, cluster: cm.Cluster, plan_spec: PlanSpec, comm_threshold: float = 0.30,
                    what_if: list[str] | None = None) -> dict:
    """The estimate object (score.to_dict) with its `diagnosis`, its MFU against published runs
    (`envelope`), the settings no published run on its GPU generation used (`unvalidated_settings`),
    its MoE host wait against the published rows' errors when it dominates (`host_wait`), its sequence
    length against the longest fitted run on its GPU generation (`long_context`), the out-of-sample step-time
    errors of the published runs on its GPU in its precision of its kind of model (`accuracy`) and of its own
    architecture (`model_accuracy`): judged.published_checks; and `what_if` when assumptions are given.
    Raises PlannerError for an illegal plan or a malformed assumption."""
    cm_model = model.to_model()
    plans.check_inputs(cm_model, cluster)  # a cluster built in Python, before its GPU count is used
    if isinstance(comm_threshold, bool) or not isinstance(comm_threshold, (int, float)) or not 0 <= comm_threshold <= 1:
        raise PlannerError(f"comm_threshold must be a share of the step from 0 to 1 (got {comm_threshold!r})")
    if isinstance(what_if, str):
        raise PlannerError(f"what_if: a list of KEY=VALUE strings (got the string {what_if!r})")
    plan = plans.build_plan(plan_spec, model, cluster.num_gpus)
    plans.check_plan(cm_model, cluster, plan)
    scored = score.score(model, cluster, plan)
    d = score.to_dict(scored)
    # those a framework runs, within suggest's default memory headroom (a lever suggest would not rank is no advice)
    levers = diagnose.try_levers(scored, frameworks=tuple(frameworks.REGISTRY),
                                 memory_fraction=L.MEMORY_FRACTION, base_fraction=1.0)  # fits: the verdict
    d["diagnosis"] = diagnose.diagnosis_dict(scored, comm_threshold, levers)
    d.update(judged.published_checks(cm_model, cluster, plan, d))
    d["warnings"] += unrun_warning(cm_model, plan, cluster) + idle_recompute_warning(model, cluster, scored)
    if what_if:
        wi = whatif.parse(what_if)
        whatif.check_applies(wi, model.moe is not None, {cluster.gpu.name})
        alt = score.score(model, whatif.apply_cluster(cluster, wi), plan, whatif.apply_efficiency(cm.Efficiency(), wi))
        d["what_if"] = {"assumptions": wi.label(), "estimate": score.to_dict(alt)}
        d["warnings"] += whatif.imbalance_ceiling(model.to_model(), plan, wi)
        d["warnings"] += whatif.unchanged_warning(wi, d, d["what_if"]["estimate"])
    return d


def idle_recompute_warning(model: ModelSpec, cluster: cm.Cluster, scored: score.Scored) -> list[str]:
    """A warning when the plan's selective recompute buys almost no memory (under 1% of the GPU's) for its
    replay time: fused attention keeps no s x s scores, so replaying the attention core saves little (Korthikanti
    et al. 2022 Sec. 5's saving is the unfused softmax and dropout tensors), while the replay costs the kernel."""
    plan = scored.plan
    if plan.recompute != "selective":
        return []
    bare = score.score(model, cluster, replace(plan, recompute="none", recompute_modules=cm.Plan().recompute_modules))
    saved = bare.est.memory_per_gpu_bytes - scored.est.memory_per_gpu_bytes
    spent = scored.est.step_time_seconds - bare.est.step_time_seconds
    if saved >= 0.01 * cluster.gpu.memory_bytes or spent <= 0.01 * scored.est.step_time_seconds:
        return []
    return [f"selective recompute saves {saved / 2**30:.2f} GiB per GPU here and costs {spent:.3g} s a step "
            f"({100 * spent / scored.est.step_time_seconds:.0f}%): with fused attention the replayed modules keep "
            "little; --recompute none is as large in memory and faster (or full recompute, or offload, if it must "
            "shrink)"]


def unrun_warning(model: cm.Model, plan: cm.Plan, cluster: cm.Cluster) -> list[str]:
    """A warning when none of the frameworks planner writes launch files for runs the plan on `cluster`
    (each one's first refusal, planner/frameworks): the cost model scores it all the same."""
    reasons = frameworks.refusals(model, plan, frameworks.Machine.of(cluster))
    if not all(reasons.values()):
        return []
    return ["no framework planner emits for runs this plan as given: "
            + "; ".join(f"{name}: {found[0]}" for name, found in reasons.items())]

