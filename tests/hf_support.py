"""Helpers for the Hugging Face import tests: a config.json written to a folder of its own, and the one-line
refusal loading it gives."""
from __future__ import annotations

import json

import pytest

from planner.errors import PlannerError
from planner.inputs.loading import load_model_spec


def write(tmp_path, config: dict, name="model") -> str:
    """`config` as tmp_path/name/config.json (a folder per model, as Hugging Face checkpoints are)."""
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder / "config.json")


def refusal(tmp_path, config: dict, seq_length: int | None = None) -> str:
    """The PlannerError loading `config` gives, checked to be one line."""
    with pytest.raises(PlannerError) as err:
        load_model_spec(write(tmp_path, config), seq_length)
    assert "\n" not in str(err.value)
    return str(err.value)
