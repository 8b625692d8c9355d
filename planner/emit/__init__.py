"""Launch files for DeepSpeed and Megatron-LM from one planner estimate.

`emit_files` is the entry point for `planner emit` and `planner suggest --emit`. Each framework's
rules run before anything is written; a plan the framework would reject is refused with the rule.
"""
from __future__ import annotations

from pathlib import Path

from planner.emit import deepspeed, megatron
from planner.emit.job import EmitOptions, Job, build_job
from planner.emit.readme import readme
from planner.errors import PlannerError
from planner.files import write_files
from planner.inputs.specs import ModelSpec

FRAMEWORKS = {"deepspeed": deepspeed.files, "megatron": megatron.files}
FORMATS = ("deepspeed", "megatron", "all")


def render(job: Job, fmt: str) -> dict[str, tuple[str, bool]]:
    """Every file of the format, {path relative to the output folder: (text, executable)}."""
    if fmt not in FORMATS:
        raise PlannerError(f"unknown format '{fmt}' (choose {', '.join(FORMATS)})")
    frameworks = list(FRAMEWORKS) if fmt == "all" else [fmt]
    offload = {job.options.offload_optimizer, job.options.offload_param} != {"none"}
    if offload and "deepspeed" not in frameworks:
        raise PlannerError("--offload-optimizer/--offload-param are DeepSpeed settings; Megatron-LM files ignore them")
    out: dict[str, tuple[str, bool]] = {}
    refused: dict[str, str] = {}
    for name in frameworks:
        try:
            out.update({f"{name}/{rel}": body for rel, body in FRAMEWORKS[name](job).items()})
        except PlannerError as err:
            refused[name] = str(err)
    if refused:
        ok = [f for f in frameworks if f not in refused]
        hint = f" (--format {ok[0]} writes only its files)" if ok else ""
        raise PlannerError("; and ".join(refused.values()) + hint)
    out["README.txt"] = (readme(job, frameworks, list(out)), False)
    return out


def emit_files(model_spec: ModelSpec, estimate_dict: dict, fmt: str, out_dir, force: bool = False,
               options: EmitOptions | None = None) -> list[Path]:
    """Check the plan against each framework's rules and write its files under out_dir.

    Raises PlannerError (nothing written) when a framework would reject the plan or a file
    exists and force is False. Returns the paths written.
    """
    job = build_job(model_spec, estimate_dict, options)
    return write_files(Path(out_dir), render(job, fmt), force)


__all__ = ["EmitOptions", "FORMATS", "Job", "build_job", "emit_files", "render"]
