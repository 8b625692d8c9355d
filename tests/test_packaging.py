"""The wheel holds every package and every data file the commands read (pyproject.toml lists them)."""
from __future__ import annotations

from pathlib import Path

try:  # Python 3.11+; the tomli backport on 3.10 (the test extra installs it there)
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_code_folder_is_a_listed_package():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    code = {".".join(p.parent.relative_to(ROOT).parts) for top in ("planner", "costmodel")
            for p in (ROOT / top).rglob("__init__.py")}
    assert code <= listed, code - listed


def test_data_folders_are_mapped_into_the_package():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert cfg["package-dir"] == {"planner.catalogs": "catalogs", "planner.validation.published": "validation"}
    for package, folder in cfg["package-dir"].items():
        assert (ROOT / folder / "__init__.py").exists()
        assert package in cfg["packages"] and f"{package}.models" in cfg["packages"] or folder != "catalogs"


def test_installed_catalogs_resolve_through_importlib_resources(monkeypatch):
    from planner.inputs import catalogs

    monkeypatch.delenv(catalogs.CATALOG_ENV, raising=False)
    assert (catalogs.catalog_dir() / "gpus.yaml").is_file()
    assert "h100-sxm-80gb" in catalogs.gpu_catalog()
