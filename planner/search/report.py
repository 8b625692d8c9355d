"""`planner suggest` as a function: the search, each ranked plan scored by `planner estimate`'s own
code, why the best beats the runner-up, its diagnosis, and optionally rank stability under what-ifs."""
from __future__ import annotations

from dataclasses import replace

from costmodel import types as cm
from planner.analysis import accuracy, cpnote, diagnose, explain, judged, score, whatif
from planner.errors import PlannerError
from planner.inputs.plans import recompute_label
from planner.inputs.specs import ModelSpec
from planner.search import stability, suggest
from planner.search.space import SearchSpec, fixed_plan_fields


def agreement_warnings(ranked, dicts: list[dict]) -> list[str]:
    """The search's tabled numbers must be the cost model's: a warning for each plan whose re-score differs."""
    out = []
    for i, (r, d) in enumerate(zip(ranked, dicts, strict=True), 1):
        step_off = abs(d["step_time_s"] - r.step_seconds) > 1e-6 * max(1.0, r.step_seconds)
        mem_off = abs(d["memory_per_gpu_bytes"] - r.peak_memory_bytes) > 2**20
        if step_off or mem_off:
            out.append(f"plan #{i}: search tables ({r.step_seconds:.6g} s, {r.peak_memory_bytes:.6g} B) disagree "
                       f"with estimate ({d['step_time_s']:.6g} s, {d['memory_per_gpu_bytes']:.6g} B); please report")
    return out


def launch_gap_warnings(spec) -> list[str]:
    """When every framework searched lacks a definition of the model (torchtitan builds only its own,
    Framework.cannot_build), the plans are its rules applied to an architecture it cannot launch: say so."""
    from planner.frameworks import REGISTRY

    fws = [REGISTRY[f] for f in spec.frameworks]
    gaps = [(fw, fw.cannot_build(spec.model)) for fw in fws]
    if not gaps or not all(why for _, why in gaps):
        return []
    return [f"{fw.title}'s launch files cannot build this model as given ({why}): these plans follow its rules, but "
            f"`planner emit --format {fw.name}` refuses them" for fw, why in gaps]


def search_summary(result: suggest.Result, opts: suggest.Options) -> dict:
    return {"solver": opts.solver, "objective": opts.objective, "max_memory_fraction": opts.max_memory_fraction,
            "space_size": result.space_size, "layouts": result.layouts, "layouts_tabled": result.layouts_tabled,
            "candidates": result.candidates, "literals": result.literals, "status": result.status,
            "seconds": result.seconds, "notes": result.notes}


def runs_on(framework: str, model: ModelSpec, plan, cluster) -> bool:
    """Whether `framework` runs the plan on `cluster` (its rules in planner/frameworks, and the cost model's own)
    as it was scored: with the kernels, loss and runtime the plan was priced with (base.priced_otherwise; a plan
    scored with Megatron-LM's cuDNN attention and compiled loss runs on torchtitan, but slower)."""
    from costmodel.rules import model_plan_violations
    from planner import frameworks
    from planner.frameworks.base import priced_otherwise

    m, fw, machine = model.to_model(), frameworks.get(framework), frameworks.Machine.of(cluster)
    return (not model_plan_violations(m, plan) and not priced_otherwise(fw, m, plan, machine)
            and not frameworks.violations(fw, m, plan, machine))


def launchers(model: ModelSpec, spec: SearchSpec, plan) -> list[str]:
    """The searched frameworks that launch `plan` on the cluster as it was scored: runs_on, and they build the
    model (Framework.cannot_build: torchtitan only its own)."""
    from planner import frameworks

    return [name for name in spec.frameworks
            if not frameworks.get(name).cannot_build(spec.model) and runs_on(name, model, plan, spec.cluster)]


def best_per_framework(model: ModelSpec, spec: SearchSpec, opts: suggest.Options, report: dict,
                       names: list[str], wi: whatif.WhatIf | None = None) -> tuple[dict[str, dict], list[str]]:
    """For each framework, the best plan it runs: the overall best when it runs it as scored, else the best of
    a search restricted to that framework; none for a framework without the model's definition (its emitter
    refuses them all). Returns (framework -> estimate object, notes)."""
    from planner import frameworks
    from planner.inputs.plans import build_plan
    from planner.inputs.specs import PlanSpec

    best = report["plans"][0]
    plan = build_plan(PlanSpec.model_validate({k: v for k, v in best["plan"].items() if k != "grad_accum_steps"}),
                      model, best["num_gpus"])
    chosen, notes = {}, []
    for name in names:
        gap = frameworks.get(name).cannot_build(spec.model)
        if gap:  # its emitter refuses every plan of this model: no search for it
            notes.append(f"{name}: {gap}; no {name} files written")
            continue
        if runs_on(name, model, plan, spec.cluster):
            chosen[name] = best
            continue
        try:
            own = suggest_report(model, replace(spec, frameworks=(name,)), replace(opts, top_k=1), wi)["plans"][0]
        except PlannerError as err:
            notes.append(f"{name}: no plan it runs fits ({err}); no {name} files written")
            continue
        chosen[name] = own
        notes.append(f"{name} does not run the best plan as scored (a rule refuses it, or its kernels, loss or "
                     f"runtime differ); its own best is {_label(own)}, "
                     f"{own['step_time_s']:.3g} s per step against {best['step_time_s']:.3g} s")
    return chosen, notes


def _label(d: dict) -> str:
    p = d["plan"]
    return f"tp {p['tp']}, pp {p['pp']}, dp {p['dp']}, ZeRO {p['zero_stage']}, recompute {recompute_label(p)}"


def within_error(why: str | None, dicts: list[dict], errors: dict | None) -> str | None:
    """`why`, saying so when the best beats the runner-up by less than the model's error (accuracy.tie_clause)."""
    if why is None:
        return why
    clause = accuracy.tie_clause(dicts[1]["step_time_s"] / dicts[0]["step_time_s"] - 1, errors)
    return f"{why}; {clause}" if clause else why


def suggest_report(model: ModelSpec, spec: SearchSpec, opts: suggest.Options, wi: whatif.WhatIf | None = None,
                   grid: list[whatif.WhatIf] | None = None, run=suggest.run) -> dict:
    """The JSON object of `planner suggest`: plans (estimate objects, best first), why, search,
    diagnosis, warnings, and with `grid` the stability rows. The search runs under `wi` (the plans
    shown win there, and say so: `assumed`), each grid row under `wi` and its own value (whatif.beside).
    Raises PlannerError when nothing is legal or fits. `run` may wrap suggest.run (a progress display)."""
    if model.to_model() != spec.model:
        raise PlannerError(f"suggest_report: the model spec '{model.name}' is not the SearchSpec's model "
                           f"'{spec.model.name}' (build the SearchSpec from model.to_model())")
    wi = wi or whatif.WhatIf()
    for item in [wi, *(grid or [])]:
        whatif.check_applies(item, spec.model.moe is not None, {spec.cluster.gpu.name})
    grid = whatif.beside(wi, grid or [])
    given = spec
    spec = replace(spec, cluster=whatif.apply_cluster(spec.cluster, wi))
    eff = whatif.apply_efficiency(cm.Efficiency(), wi)
    result = run(spec, opts, eff)
    scored = [score.score(model, spec.cluster, r.plan, eff) for r in result.ranked]
    assumed = {"assumed": wi.label()} if wi.label() != "as given" else {}  # scored under --what-if
    dicts = [{**score.to_dict(s), "frameworks": launchers(model, spec, s.plan), **assumed} for s in scored]
    out = {"plans": dicts, "why": explain.why_faster(dicts[0], dicts[1]) if len(dicts) > 1 else None,
           "search": {**search_summary(result, opts), "context_parallel": cpnote.context_parallel_note(
               scored[0], spec.cluster.gpu.memory_bytes * opts.max_memory_fraction, eff, tuple(spec.frameworks))},
           "diagnosis": diagnose.diagnosis_dict(scored[0], 0.30, diagnose.try_levers(
               scored[0], eff, spec.frameworks, opts.max_memory_fraction, fixed_plan_fields(spec))),
           "warnings": agreement_warnings(result.ranked, dicts) + launch_gap_warnings(spec) + [
               w for item in (wi, *(grid or ())) for w in whatif.imbalance_ceiling(spec.model, scored[0].plan, item)],
           **judged.published_checks(spec.model, spec.cluster, scored[0].plan, dicts[0])}
    out["why"] = within_error(out["why"], dicts, out["accuracy"])
    if wi.label() != "as given":
        out["what_if"] = wi.label()
    if grid:
        out["stability"] = stability.grid_dicts(stability.grid(model, given, opts, scored[0].plan, grid))
    return out
