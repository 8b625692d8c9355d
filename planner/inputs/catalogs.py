"""The shipped catalogs (GPUs, clusters with dated prices, models), read from the installed package.

They live in the project's top-level catalogs/ folder, which the wheel installs as the data
package `planner.catalogs` (pyproject.toml), read with importlib.resources; PLANNER_CATALOG_DIR
points planner at another folder of the same shape.
"""
from __future__ import annotations

import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

from planner.errors import PlannerError
from planner.inputs.reading import parse, read_data, unknown_name
from planner.inputs.specs import ClusterSpec, GpuSpec

CATALOG_ENV = "PLANNER_CATALOG_DIR"


def catalog_dir() -> Path:
    """`$PLANNER_CATALOG_DIR`, else the installed `planner.catalogs` data package."""
    env = os.environ.get(CATALOG_ENV)
    return Path(env) if env else Path(str(resources.files("planner.catalogs")))


def published_file(name: str) -> Path:
    """A file of the project's validation/ folder as installed (the data package
    planner.validation.published, pyproject.toml): the one place that spells its path."""
    return Path(str(resources.files("planner.validation.published"))) / name


def read_published(name: str):
    """The data of a file of the installed validation/ folder (published_file): the files generated from the
    rows that the cautions read (MFU envelope, coverage, host-wait and long-context errors)."""
    return read_data(published_file(name))


def catalog_rows(path: Path) -> list[dict]:
    """A catalog file's list of mappings, each with a name."""
    rows = read_data(path)
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in rows):
        raise PlannerError(f"{path}: expected a list of mappings, each with a name")
    return rows


def parse_rows(spec_cls, path: Path) -> dict:
    """A catalog file's rows as specs by name; a name given twice is an error."""
    out: dict = {}
    for row in catalog_rows(path):
        spec = parse(spec_cls, row, f"{path} [{row['name'][:64]!r}]")
        if spec.name in out:
            raise PlannerError(f"{path}: '{spec.name}' appears twice")
        out[spec.name] = spec
    return out


@lru_cache(maxsize=None)
def gpu_catalog() -> dict[str, GpuSpec]:
    return parse_rows(GpuSpec, catalog_dir() / "gpus.yaml")


@lru_cache(maxsize=None)
def cluster_catalog() -> dict[str, ClusterSpec]:
    """Cluster offerings by name; each names a GPU of the GPU catalog (or carries its own)."""
    path = catalog_dir() / "clusters.yaml"
    table = parse_rows(ClusterSpec, path)
    for spec in table.values():
        if isinstance(spec.gpu, str) and spec.gpu not in gpu_catalog():
            raise PlannerError(f"{path} ['{spec.name}']: {unknown_name('GPU', spec.gpu, list(gpu_catalog()))}")
    return table


def model_catalog() -> dict[str, Path]:
    """Catalog model files by name (models/*.yaml)."""
    folder = catalog_dir() / "models"
    if not folder.is_dir():
        raise PlannerError(f"{folder}: the catalog has no models folder")
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def resolve_gpu(gpu: str | GpuSpec) -> GpuSpec:
    if isinstance(gpu, GpuSpec):
        return gpu
    table = gpu_catalog()
    if gpu not in table:
        raise unknown_name("GPU", gpu, list(table))
    return table[gpu]


def gpu_rows() -> list[dict]:
    """One summary row per catalog GPU (what `planner catalog gpus` lists)."""
    return [{"name": g.name, "generation": g.generation, "memory_gib": g.memory_gib,
             "bf16_tflops": g.dense_tflops.get("bf16"), "fp8_tflops": g.dense_tflops.get("fp8"),
             "hbm_gbytes_per_s": g.hbm_bandwidth_gbytes_per_s, "nvlink_gbytes_per_s": g.nvlink_bandwidth_gbytes_per_s,
             "tdp_watts": g.tdp_watts, "power_limit_watts": g.power_limit_watts}
            for g in gpu_catalog().values()]


def cluster_rows() -> list[dict]:
    """One summary row per catalog cluster offering, with its price and date."""
    return [{"name": c.name, "gpu": c.gpu if isinstance(c.gpu, str) else c.gpu.name, "gpus_per_node": c.gpus_per_node,
             "nvlink_domain_size": c.nvlink_domain_size, "network_gbits_per_s": c.network_bandwidth_gbits_per_s,
             "rdma": c.rdma, "usd_per_gpu_hour": c.usd_per_gpu_hour, "price_kind": c.price_kind,
             "price_date": c.price_date} for c in cluster_catalog().values()]
