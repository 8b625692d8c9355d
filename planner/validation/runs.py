"""Score the cost model against published training runs (validation/runs.yaml).

Each row holds a model, a cluster and a plan as published, and the measured step time (and peak
memory where published). `evaluate` predicts every row; `summarise` reports signed errors and
MAPE / max error per group and overall.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, Optional

from costmodel import types as cm
from costmodel.step import estimate
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.fields import Name, Text, quantity
from planner.inputs.plans import build_plan, check_legal
from planner.inputs.reading import parse, read_data
from planner.inputs.specs import ClusterSpec, ModelSpec, PlanSpec, Spec


def default_runs() -> Path:
    """validation/runs.yaml as installed (the data package planner.validation.published)."""
    return Path(str(resources.files("planner.validation.published"))) / "runs.yaml"

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


def predict(run: Run, eff: cm.Efficiency) -> Result:
    gpu = resolve_gpu(run.cluster.gpu)
    cluster = run.cluster.to_cluster(gpu, run.cluster.num_gpus or 0)
    plan = build_plan(run.plan, run.model, cluster.num_gpus)
    model = run.model.to_model()
    try:
        check_legal(model, cluster, plan)
    except PlannerError as err:
        raise PlannerError(f"validation row {run.id}: {err}") from None
    e = estimate(model, cluster, plan, eff)
    return Result(run, gpu.generation, e.step_time_seconds, e.memory_per_gpu_bytes / GIB)


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


def summarise(results: list[Result]) -> dict:
    """Step-time and memory error statistics per group and overall."""
    groups = sorted({r.run.group for r in results})
    out = {"overall": {"step_time": error_stats([r.step_error for r in results]),
                       "memory": error_stats([r.memory_error for r in results if r.memory_error is not None])}}
    for g in groups:
        rows = [r for r in results if r.run.group == g]
        out[g] = {"step_time": error_stats([r.step_error for r in rows]),
                  "memory": error_stats([r.memory_error for r in rows if r.memory_error is not None])}
    return out


def result_to_dict(r: Result) -> dict:
    return {
        "id": r.run.id, "group": r.run.group, "generation": r.generation, "source": r.run.source,
        "predicted_step_time_s": r.predicted_step_seconds, "measured_step_time_s": r.run.measured.step_time_s,
        "step_time_error": r.step_error, "predicted_memory_gib": r.predicted_memory_gib,
        "measured_memory_gib": r.run.measured.peak_memory_gib, "memory_error": r.memory_error,
    }
