"""Two scored plans side by side: which is faster and why, and what makes the comparison unfair.

Step times compare only like with like: the same model, GPU count, global batch, sequence length and --what-if
assumptions (one job: the same tokens a step), on any cluster and GPU (then `compare` names the hardware that
differs). When the jobs differ, `compare` says so and ranks them by tokens per second per GPU (throughput that
does not depend on the batch or the job's size), and it names a plan that does not fit in its GPU's memory.
"""
from __future__ import annotations

from planner.analysis import accuracy, explain
from planner.inputs import limits as L
from planner.inputs.loading import checked_estimate

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


def compare(a: dict, b: dict) -> dict:
    """The `planner compare --json` object: faster (A, B or tie), why, the caveats, and both plans. A and B are
    checked as a file's would be (loading.checked_estimate): one PlannerError for a key missing or not a number."""
    a, b = checked_estimate(a, "A", REQUIRED), checked_estimate(b, "B", REQUIRED)
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
    return {"faster": "tie" if tie else ("A" if fast is a else "B"), "measure": measure, "why": why,
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
