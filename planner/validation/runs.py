"""Score the cost model against published training runs (validation/runs.yaml).

Each row holds a model, a cluster and a plan as published, and the measured step time (and peak
memory where published). `evaluate` predicts every row; `summarise` reports signed errors and
MAPE / max error per group and overall, `summarise_by_generation` and `summarise_by_precision` the
same per GPU generation and per plan precision.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Optional

from costmodel import types as cm
from costmodel.step import estimate
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.catalogs import published_file, resolve_gpu
from planner.inputs.fields import Name, Text, quantity
from planner.inputs.plans import build_plan, check_legal
from planner.inputs.reading import parse, read_data
from planner.inputs.specs import ClusterSpec, ModelSpec, PlanSpec, Spec


def default_runs() -> Path:
    """validation/runs.yaml: the rows the fit reads."""
    return published_file("runs.yaml")


def default_holdout() -> Path:
    """validation/holdout.yaml: published runs that no fit reads (validation/README.md)."""
    return published_file("holdout.yaml")


def generated_file_main(argv: list[str], name: str, header: str, data, show=None) -> None:
    """The command line of a module that generates a file of validation/ from the rows (the MFU
    envelope, the settings coverage, the host-wait and long-context errors): with `--write`, `data()` as
    YAML under the `header` comment lines into the checkout's validation/`name` (not the installed copy);
    else `show()` prints it, by default one line per top-level key of `data()`."""
    if argv != ["--write"]:
        if show is not None:
            show()
        else:
            for key, value in data().items():
                print(f"{key:10s} {value}")
        return
    import yaml

    target = Path(__file__).resolve().parents[2] / "validation" / name
    target.write_text("".join(f"# {line}\n" for line in header.splitlines())
                      + yaml.safe_dump(data(), sort_keys=False, width=120))
    print(f"wrote {target}")

GIB = 2**30


class Measured(Spec):
    step_time_s: quantity(L.MAX_SECONDS, L.MIN_SECONDS)
    step_time_kind: Literal["measured", "derived"]
    derivation: Optional[Text] = None
    peak_memory_gib: Optional[quantity(L.MAX_MEMORY_GIB, L.MIN_MEMORY_GIB)] = None


class Run(Spec):
    id: Name
    source: Text
    group: Name
    model: ModelSpec
    cluster: ClusterSpec
    plan: PlanSpec
    assumed: list[Text] = []
    measured: Measured
    exclude: Optional[Text] = None  # reason the row is kept for reference but not scored
    notes: Optional[Text] = None


@dataclass(frozen=True)
class Result:
    run: Run
    generation: str
    predicted_step_seconds: float
    predicted_memory_gib: float
    time_breakdown_seconds: dict[str, float] = field(default_factory=dict, compare=False)  # step.Estimate's parts

    @property
    def step_error(self) -> float:
        """Signed relative error: + means the model predicts a slower step than measured."""
        return self.predicted_step_seconds / self.run.measured.step_time_s - 1.0

    @property
    def memory_error(self) -> Optional[float]:
        peak = self.run.measured.peak_memory_gib
        return None if peak is None else self.predicted_memory_gib / peak - 1.0


def load_runs(path: Path | None = None) -> list[Run]:
    path = path or default_runs()
    rows = read_data(path)
    if not isinstance(rows, list) or not rows:
        raise PlannerError(f"{path}: expected a non-empty list of runs (see validation/README.md)")
    runs = [parse(Run, row, f"{path} [{row.get('id', i) if isinstance(row, dict) else i}]")
            for i, row in enumerate(rows)]
    seen: set[str] = set()
    for run in runs:
        if run.id in seen:
            raise PlannerError(f"{path}: run id '{run.id}' appears twice")
        seen.add(run.id)
    return runs


def generation_of(run: Run) -> str:
    return resolve_gpu(run.cluster.gpu).generation


@dataclass(frozen=True)
class Prepared:
    """A row's cost-model inputs, built and checked once (they do not depend on the efficiency
    constants, so a fit that predicts the same rows hundreds of times builds them once)."""
    run: Run
    generation: str
    model: cm.Model
    cluster: cm.Cluster
    plan: cm.Plan


def prepare(run: Run) -> Prepared:
    gpu = resolve_gpu(run.cluster.gpu)
    if not run.cluster.num_gpus:
        raise PlannerError(f"validation row {run.id}: cluster.num_gpus is missing (the GPUs the run used)")
    cluster = run.cluster.to_cluster(gpu, run.cluster.num_gpus)
    plan = build_plan(run.plan, run.model, cluster.num_gpus)
    model = run.model.to_model()
    try:
        check_legal(model, cluster, plan)
    except PlannerError as err:
        raise PlannerError(f"validation row {run.id}: {err}") from None
    return Prepared(run, gpu.generation, model, cluster, plan)


def predict_prepared(p: Prepared, eff: cm.Efficiency) -> Result:
    e = estimate(p.model, p.cluster, p.plan, eff)
    return Result(p.run, p.generation, e.step_time_seconds, e.memory_per_gpu_bytes / GIB, e.time_breakdown_seconds)


def predict(run: Run, eff: cm.Efficiency) -> Result:
    return predict_prepared(prepare(run), eff)


def evaluate(runs: list[Run], eff: cm.Efficiency | None = None) -> list[Result]:
    eff = eff or cm.Efficiency()
    return [predict(r, eff) for r in runs if not r.exclude]


def error_stats(errors: list[float]) -> dict:
    if not errors:
        return {"n": 0, "mape": None, "max_abs": None, "mean_signed": None}
    return {
        "n": len(errors),
        "mape": sum(abs(e) for e in errors) / len(errors),
        "max_abs": max(abs(e) for e in errors),
        "mean_signed": sum(errors) / len(errors),
    }


def worst_stats(rows: list[tuple[str, float]]) -> dict:
    """error_stats of (row id, signed step error) pairs, with the id of the largest error (worst_run; None
    without rows)."""
    worst = max(rows, key=lambda r: abs(r[1]))[0] if rows else None
    return {**error_stats([e for _, e in rows]), "worst_run": worst}


def group_errors(results: list[Result]) -> dict:
    """Step-time and memory error statistics of some rows."""
    return {"step_time": error_stats([r.step_error for r in results]),
            "memory": error_stats([r.memory_error for r in results if r.memory_error is not None])}


def summarise(results: list[Result]) -> dict:
    """Step-time and memory error statistics per group and overall."""
    out = {"overall": group_errors(results)}
    for g in sorted({r.run.group for r in results}):
        out[g] = group_errors([r for r in results if r.run.group == g])
    return out


# GPU generations in release order (NVIDIA, then AMD), so that tables list them oldest first.
GENERATION_ORDER = ("volta", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4", "other")
PRECISION_ORDER = ("fp32", "fp16", "bf16", "fp8", "mxfp8", "mxfp4", "nvfp4")


def _ordered(keys: set[str], order: tuple[str, ...]) -> list[str]:
    return sorted(keys, key=lambda k: (order.index(k) if k in order else len(order), k))


def summarise_by_generation(results: list[Result]) -> dict:
    """Step-time and memory error statistics per GPU generation (ampere, hopper, ...)."""
    return {g: group_errors([r for r in results if r.generation == g])
            for g in _ordered({r.generation for r in results}, GENERATION_ORDER)}


def summarise_by_precision(results: list[Result]) -> dict:
    """Step-time and memory error statistics per plan precision (the GEMMs' number format)."""
    return {p: group_errors([r for r in results if r.run.plan.precision == p])
            for p in _ordered({r.run.plan.precision for r in results}, PRECISION_ORDER)}


def result_to_dict(r: Result) -> dict:
    return {
        "id": r.run.id, "group": r.run.group, "generation": r.generation, "precision": r.run.plan.precision,
        "source": r.run.source,
        "predicted_step_time_s": r.predicted_step_seconds, "measured_step_time_s": r.run.measured.step_time_s,
        "step_time_error": r.step_error, "predicted_memory_gib": r.predicted_memory_gib,
        "measured_memory_gib": r.run.measured.peak_memory_gib, "memory_error": r.memory_error,
    }

