"""Launch files for DeepSpeed, Megatron-LM and torchtitan from one planner estimate.

`emit_files` is the entry point for `planner emit` and `planner suggest --emit`. Each framework's
rules run before anything is written; a plan the framework would reject is refused with the rule.
"""
from __future__ import annotations

from pathlib import Path

from planner import frameworks
from planner.emit import deepspeed, megatron, torchtitan
from planner.emit.job import EmitOptions, Job, build_job
from planner.emit.readme import readme
from planner.errors import PlannerError
from planner.files import write_files
from planner.inputs.specs import ModelSpec

FRAMEWORKS = {"deepspeed": deepspeed.files, "megatron": megatron.files, "torchtitan": torchtitan.files}
assert set(FRAMEWORKS) == set(frameworks.NAMES), "an emitter per framework module"
FORMATS = (*sorted(FRAMEWORKS), "all")
# "all" is the frameworks that launch any architecture (no Framework.model_gap); torchtitan builds only its
# own model definitions (planner/frameworks/torchtitan.py), so it is asked for by name.
ALL = tuple(sorted(n for n in FRAMEWORKS if frameworks.REGISTRY[n].model_gap is None))


def formats(fmt: str) -> list[str]:
    """The frameworks a format names: one, or DeepSpeed and Megatron-LM for 'all' (ALL)."""
    if fmt not in FORMATS:
        raise PlannerError(f"unknown format '{fmt}' (choose {', '.join(FORMATS)})")
    return list(ALL) if fmt == "all" else [fmt]


def render(job: Job, fmt: str) -> dict[str, tuple[str, bool]]:
    """Every file of the format for one plan, {path relative to the output folder: (text, executable)}."""
    return render_jobs({name: job for name in formats(fmt)})


def render_jobs(jobs: dict[str, Job]) -> dict[str, tuple[str, bool]]:
    """Each framework's files for its own plan (`jobs`: framework -> job), and one README.txt."""
    offload = any({j.options.offload_optimizer, j.options.offload_param} != {"none"} or j.options.nvme_path
                  for j in jobs.values())
    if offload and "deepspeed" not in jobs:
        raise PlannerError("--offload-optimizer/--offload-param/--nvme-path are DeepSpeed settings; the other "
                           "frameworks' files would ignore them")
    out: dict[str, tuple[str, bool]] = {}
    refused: dict[str, str] = {}
    for name, job in jobs.items():
        try:
            out.update({f"{name}/{rel}": body for rel, body in FRAMEWORKS[name](job).items()})
        except PlannerError as err:
            refused[name] = str(err)
    if refused:
        ok = [f for f in jobs if f not in refused]
        hint = f" (--format {ok[0]} writes only its files)" if ok else ""
        raise PlannerError("; and ".join(refused.values()) + hint)
    plans = {name: job.plan for name, job in jobs.items()}
    if len(set(plans.values())) == 1:
        text = readme(next(iter(jobs.values())), list(jobs), list(out))
    else:  # each framework runs its own best plan: one README block each
        text = ("The frameworks do not run one plan: each block below is its framework's own (suggest's best "
                "plan is the one its framework runs; the others are the best plans they run).\n\n"
                + "\n".join(readme(job, [name], [f for f in out if f.startswith(f"{name}/")])
                            for name, job in jobs.items()))
    out["README.txt"] = (text, False)
    return out


def emit_files(model_spec: ModelSpec, estimate_dict: dict, fmt: str, out_dir, force: bool = False,
               options: EmitOptions | None = None) -> list[Path]:
    """Check the plan against each framework's rules and write its files under out_dir.

    Raises PlannerError (nothing written) when a framework would reject the plan or a file
    exists and force is False. Returns the paths written.
    """
    job = build_job(model_spec, estimate_dict, options)
    return write_files(out_folder(out_dir, force), render(job, fmt), force)


def out_folder(out_dir, force) -> Path:
    """The folder to write into: a path that is not empty (an empty one is the current folder, which
    `--out ""` is refused for too), and force a bool (a string such as "no" would be true)."""
    if not isinstance(force, bool):
        raise PlannerError(f"force must be true or false (got {force!r})")
    if not str(out_dir).strip():
        raise PlannerError("the output folder is empty: name one")
    return Path(out_dir)


def emit_per_framework(model_spec: ModelSpec, estimates: dict[str, dict], out_dir, force: bool = False,
                       options: EmitOptions | None = None) -> list[Path]:
    """Like emit_files, with each framework's own plan (`estimates`: framework -> estimate object)."""
    jobs = {name: build_job(model_spec, est, options) for name, est in estimates.items()}
    return write_files(out_folder(out_dir, force), render_jobs(jobs), force)


__all__ = ["EmitOptions", "FORMATS", "Job", "build_job", "emit_files", "emit_per_framework", "formats", "render",
           "render_jobs"]
