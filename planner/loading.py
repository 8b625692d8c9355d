"""Load models, GPUs and clusters from files or catalog names; every failure is one PlannerError line."""
from __future__ import annotations

import difflib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from costmodel import types as cm

from .errors import PlannerError
from .hf_config import hf_to_spec_dict, looks_like_hf_config
from .specs import ClusterSpec, GpuSpec, ModelSpec

CATALOG_ENV = "PLANNER_CATALOG_DIR"


def catalog_dir() -> Path:
    """`$PLANNER_CATALOG_DIR`, else the `catalogs/` folder of this checkout."""
    env = os.environ.get(CATALOG_ENV)
    return Path(env) if env else Path(__file__).resolve().parent.parent / "catalogs"


def describe_validation_error(err: ValidationError, what: str) -> str:
    """The most specific pydantic error as 'what: field.path: message'.

    For a field that takes either a name or a mapping (a cluster's `gpu`), pydantic reports one
    error per alternative, tagged with the alternative's type; the deepest one names the field
    the user got wrong, and the tags are dropped from the path."""
    first = max(err.errors(), key=lambda e: len(e["loc"]))
    tags = {"str", "int", "float", "bool", "GpuSpec", "ModelSpec", "ClusterSpec", "PlanSpec"}
    loc = ".".join(str(p) for p in first["loc"] if p not in tags) or "(top level)"
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    elif first["type"] == "missing":
        msg = "required key is missing"
    extra = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{what}: {loc}: {msg}{extra}"


def read_data(path: Path) -> Any:
    """Parse a YAML or JSON file."""
    if path.is_dir():
        raise PlannerError(f"{path}: is a folder, expected a file")
    if not path.is_file():
        raise PlannerError(f"{path}: no such file")
    try:
        text = path.read_text()
    except OSError as exc:
        raise PlannerError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where else (f" at line {exc.lineno}" if hasattr(exc, "lineno") else "")
        raise PlannerError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}{line}") from None


def parse(spec_cls, data: Any, what: str):
    if not isinstance(data, dict):
        raise PlannerError(f"{what}: expected a mapping of keys to values")
    try:
        return spec_cls.model_validate(data)
    except ValidationError as err:
        raise PlannerError(describe_validation_error(err, what)) from None


def unknown_name(kind: str, name: str, known: list[str]) -> PlannerError:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(known))}"
    return PlannerError(f"unknown {kind} '{name}'{hint}")


@lru_cache(maxsize=None)
def gpu_catalog() -> dict[str, GpuSpec]:
    path = catalog_dir() / "gpus.yaml"
    rows = read_data(path) or []
    return {r["name"]: parse(GpuSpec, r, f"{path} [{r.get('name', i)}]") for i, r in enumerate(rows)}


@lru_cache(maxsize=None)
def cluster_catalog() -> dict[str, ClusterSpec]:
    path = catalog_dir() / "clusters.yaml"
    rows = read_data(path) or []
    return {r["name"]: parse(ClusterSpec, r, f"{path} [{r.get('name', i)}]") for i, r in enumerate(rows)}


def model_catalog() -> dict[str, Path]:
    return {p.stem: p for p in sorted((catalog_dir() / "models").glob("*.yaml"))}


def resolve_gpu(gpu: str | GpuSpec) -> GpuSpec:
    if isinstance(gpu, GpuSpec):
        return gpu
    table = gpu_catalog()
    if gpu not in table:
        raise unknown_name("GPU", gpu, list(table))
    return table[gpu]


def looks_like_path(ref: str) -> bool:
    """A reference meant as a file (has a folder or a YAML/JSON suffix), not a catalog name."""
    return "/" in ref or Path(ref).suffix in (".yaml", ".yml", ".json")


def load_model_spec(ref: str, seq_length: int | None = None, global_batch_size: int | None = None) -> ModelSpec:
    """A model from a YAML file, a Hugging Face config.json, or a catalog name."""
    path = Path(ref)
    if not path.exists():
        models = model_catalog()
        if ref in models:
            path = models[ref]
        elif not looks_like_path(ref):
            raise unknown_name("model", ref, list(models))
    data = read_data(path)
    if looks_like_hf_config(data):
        data = hf_to_spec_dict(data, path.parent.name if path.name == "config.json" else path.stem, seq_length)
    elif isinstance(data, dict) and seq_length:
        data = {**data, "seq_length": seq_length}
    if isinstance(data, dict) and global_batch_size:
        data = {**data, "global_batch_size": global_batch_size}
    return parse(ModelSpec, data, str(path))


def load_cluster_spec(ref: str) -> ClusterSpec:
    """A cluster from a YAML file or a catalog name; its `gpu` may be a catalog name or inline."""
    path = Path(ref)
    if not path.exists():
        table = cluster_catalog()
        if ref in table:
            return table[ref]
        if not looks_like_path(ref):
            raise unknown_name("cluster", ref, list(table))
    return parse(ClusterSpec, read_data(path), str(path))


def build_cluster(spec: ClusterSpec, num_gpus: int | None) -> cm.Cluster:
    """Cost-model cluster with `num_gpus` (the --gpus flag), else the spec's own count."""
    count = num_gpus or spec.num_gpus
    if not count:
        raise PlannerError(f"cluster '{spec.name}' has no num_gpus; pass --gpus N")
    if count < 1:
        raise PlannerError(f"--gpus must be >= 1 (got {count})")
    return spec.to_cluster(resolve_gpu(spec.gpu), count)


def load_estimate(ref: str, required: tuple[str, ...] = ("plan",)) -> dict:
    """One estimate object (`planner estimate --json`) from a file or '-' (stdin); the output of
    `suggest --json` gives its first plan. Anything else is one clear error."""
    import sys

    try:
        text = sys.stdin.read() if ref == "-" else Path(ref).read_text()
    except OSError as exc:
        raise PlannerError(f"{ref}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlannerError(f"{ref}: not valid JSON at line {exc.lineno}") from None
    if isinstance(data, dict) and isinstance(data.get("plans"), list) and data["plans"]:
        data = data["plans"][0]
    if isinstance(data, list):
        raise PlannerError(f"{ref}: holds a list of {len(data)} estimates; pass one (e.g. jq '.[0]')")
    if not isinstance(data, dict) or any(k not in data for k in required):
        raise PlannerError(f"{ref}: expected one estimate object from `planner estimate --json` "
                           f"(with {', '.join(required)})")
    return data
