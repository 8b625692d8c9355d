"""Two scored plans side by side: which is faster and why, and what makes the comparison unfair.

Step times compare only like with like: the same model, GPU count, global batch, sequence length and --what-if
assumptions (one job: the same tokens a step), on any cluster and GPU (then `compare` names the hardware that
differs). When the jobs differ, `compare` says so and ranks them by tokens per second per GPU (throughput that
does not depend on the batch or the job's size), and it names a plan that does not fit in its GPU's memory.
"""
from __future__ import annotations

from costmodel.rules import model_plan_violations
from planner.analysis import accuracy, explain
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs import plans, reading
from planner.inputs.loading import checked_estimate
from planner.inputs.specs import ModelSpec

# Every key the comparison and its text output read (the header line names the job of each plan).
REQUIRED = ("plan", "step_time_s", "time_breakdown_s", "memory_per_gpu_bytes", "usd_per_step", "mfu", "model",
            "num_gpus", "gpu", "seq_length", "fits")
SAME = (("model", "model"), ("cluster", "cluster"), ("gpu", "GPU"), ("num_gpus", "GPU count"),
        ("seq_length", "sequence length"))


def differences(a: dict, b: dict) -> list[str]:
    """'model llama3-70b vs llama3-8b'-style phrases for what the two jobs do not share."""
    out = [f"{label} {a.get(key)} vs {b.get(key)}" for key, label in SAME
           if a.get(key) is not None and b.get(key) is not None and a.get(key) != b.get(key)]
    ga, gb = a["plan"].get("global_batch_size"), b["plan"].get("global_batch_size")
    if ga != gb:
        out.append(f"global batch {ga} vs {gb}")
    if a.get("assumed") != b.get("assumed"):  # suggest --what-if scores its plans on a changed cluster
        out.append(f"what-if {a.get('assumed') or 'none'} vs {b.get('assumed') or 'none'}")
    return out


def per_gpu_rate(d: dict) -> float | None:
    """Tokens per second per GPU, when the estimate says how many of each."""
    tokens, gpus = d.get("tokens_per_s"), d.get("num_gpus")
    return tokens / gpus if tokens and gpus else None


def usd_per_token(d: dict) -> float | None:
    """Dollars per trained token: the step's dollars over its tokens (None without a price)."""
    usd, tokens, step = d.get("usd_per_step"), d.get("tokens_per_s"), d.get("step_time_s")
    return usd / (tokens * step) if usd and tokens and step else None


def dollars(a: dict, b: dict, faster: str, same_job: bool) -> tuple[str | None, str]:
    """(the cheaper per token, A, B or tie; None without both prices) and the clause the verdict adds about it:
    a plan can be faster and dearer (another GPU), or tie on time and not on price (another price)."""
    pa, pb = usd_per_token(a), usd_per_token(b)
    if pa is None or pb is None:
        return None, ""
    if abs(pa - pb) <= 1e-9 * max(pa, pb):
        return "tie", ""
    cheap, low, high = ("A", pa, pb) if pa < pb else ("B", pb, pa)
    unit = (f"per step (A ${a['usd_per_step']:,.4g}, B ${b['usd_per_step']:,.4g})" if same_job
            else f"per token (A ${1e6 * pa:,.4g}, B ${1e6 * pb:,.4g} per million)")
    if faster == "tie":
        return cheap, f"{cheap} costs {1 - low / high:.0%} less {unit}"
    if cheap == faster:
        return cheap, f"and costs {1 - low / high:.0%} less {unit}"
    return cheap, f"but costs {high / low - 1:.0%} more {unit}"


def checked_plan(d: dict, name: str) -> None:
    """One PlannerError where the plan of `d` is not one the cost model scores on its own model (model_spec, as
    `estimate --json` writes it): a plan edited by hand (ep on a dense model) was compared as given."""
    spec = d.get("model_spec")
    if not isinstance(spec, dict):
        return
    model = reading.parse(ModelSpec, spec, f"{name} model_spec")
    plan, _ = plans.plan_of_estimate(d, model, name)
    broken = model_plan_violations(model.to_model(), plan)
    if broken:
        raise PlannerError(f"{name}: its plan is not one planner scores for {model.name}: {broken[0]}")


def compare(a: dict, b: dict) -> dict:
    """The `planner compare --json` object: faster (A, B or tie), why, the caveats, and both plans. A and B are
    checked as a file's would be (loading.checked_estimate): one PlannerError for a key missing or not a number,
    or a plan the cost model does not score on its model (checked_plan)."""
    a, b = checked_estimate(a, "A", REQUIRED), checked_estimate(b, "B", REQUIRED)
    checked_plan(a, "A")
    checked_plan(b, "B")
    diffs = differences(a, b)
    rates = per_gpu_rate(a), per_gpu_rate(b)
    hardware = bool(diffs) and not differences(a, {**b, "cluster": a.get("cluster"), "gpu": a.get("gpu")})
    if diffs and None not in rates and not hardware:
        measure, ka, kb = "tokens/s per GPU", -rates[0], -rates[1]
    else:
        measure, ka, kb = "step time", a["step_time_s"], b["step_time_s"]
    scale = max(abs(ka), abs(kb))
    gap = abs(ka - kb) / scale if scale else 0.0
    tie = gap <= 1e-9
    fast, slow = (a, b) if ka <= kb else (b, a)
    if tie:
        why = f"the same {measure}"
    elif hardware:  # one job (model, GPU count, batch, sequence) on other hardware: its step times compare
        why = (f"{slow['step_time_s'] / fast['step_time_s']:.2f}x the step time of the same job on other hardware "
               f"({'; '.join(diffs)})")
    elif diffs:
        ratio = max(rates) / min(rates) if measure != "step time" else slow["step_time_s"] / fast["step_time_s"]
        why = f"{ratio:.2f}x the {measure}; the jobs differ ({'; '.join(diffs)}), so step times do not compare"
        if a.get("model") and b.get("model") and a["model"] != b["model"]:
            why += ", nor is a token of one model the work of a token of the other"
    else:
        why = explain.why_faster(fast, slow)
    misfits = [name for name, d in (("A", a), ("B", b)) if d.get("fits") is False]
    faster = "tie" if tie else ("A" if fast is a else "B")
    cheaper, clause = dollars(a, b, faster, not diffs or hardware)  # one job: its steps' dollars compare
    if clause and cheaper not in misfits:  # a plan that cannot run is cheap for nothing
        why += f"; {clause}"
    if not tie and faster in misfits and len(misfits) == 1:
        why += (f"; but {faster} does not fit in GPU memory ({_gib(fast['memory_per_gpu_bytes'])} of "
                f"{_gib(fast.get('memory_capacity_bytes'))} per GPU): {'B' if faster == 'A' else 'A'} is the one "
                "that runs")
    warnings = ([f"the plans are for {'the same job on different hardware' if hardware else 'different jobs'}: "
                 f"{'; '.join(diffs)}"] if diffs else [])
    if not tie and gap < L.MIN_GAIN:
        warnings.append(f"A and B differ by {100 * gap:.2g}% in {measure}, under {L.MIN_GAIN:.0%}: far inside the "
                        "model's error on published runs (`planner validate`); read the two as equal")
    elif not tie and not diffs and (clause := accuracy.tie_clause(gap, a.get("accuracy"))):
        warnings.append(f"A and B differ by {100 * gap:.2g}% in {measure}, {clause}")
    warnings += [f"{name} does not fit in GPU memory ({_gib(d['memory_per_gpu_bytes'])} of "
                 f"{_gib(d.get('memory_capacity_bytes'))} per GPU)" for name, d in (("A", a), ("B", b))
                 if name in misfits]
    warnings += [line for line in (what_if_unread(name, d) for name, d in (("A", a), ("B", b))) if line]
    return {"faster": faster, "cheaper": cheaper, "measure": measure, "why": why,
            "same_job": not diffs, "differences": diffs, "does_not_fit": misfits, "warnings": warnings,
            "a": a, "b": b}


def what_if_unread(name: str, d: dict) -> str | None:
    """A line for a plan scored with `estimate --what-if`, whose what-if figures (`what_if.estimate`) compare does not
    read: it compares the plans as given."""
    what_if = d.get("what_if")
    if not isinstance(what_if, dict) or not isinstance(what_if.get("estimate"), dict):
        return None
    step = what_if["estimate"].get("step_time_s")
    changed = f": step {step:.4g} s against {d['step_time_s']:.4g} s as given" if isinstance(step, (int, float)) else ""
    return (f"{name} carries a what-if ({what_if.get('assumptions') or 'unnamed'}{changed}) that compare does not "
            "read: it compares the plans as given; to compare the what-if, save its estimate (what_if.estimate in "
            "the JSON) as a file of its own")


def _gib(value) -> str:
    return "?" if not value else f"{value / 2**30:.1f} GiB"
