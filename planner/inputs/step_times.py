"""Read measured step times (CSV or YAML rows) for `planner calibrate --step-times`.

Each row names a model (catalog name or file), the plan with the flags of `planner estimate`
spelled as keys (tp, pp, dp, vpp, mbs, gbs, gas, zero, recompute, sequence_parallel, precision,
grad_dtype, no_overlap, no_pp_overlap, no_flash_attention, stage_layers), optionally gpus and
seq_length, an optional name, and the measured seconds per step as step_time_s. CSV lines
starting with '#' are comments.
"""
from __future__ import annotations

import argparse
import math
import csv
import io
from dataclasses import dataclass
from pathlib import Path

from costmodel import types as cm
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs import reading
from planner.inputs.argtypes import plain_float

ROW_KEYS = ("name", "model", "gpus", "seq_length", "step_time_s")
_TRUE, _FALSE = ("true", "yes", "1", "y"), ("false", "no", "0", "n", "")


@dataclass(frozen=True)
class TimedStep:
    """One measured training step: what ran, on how many GPUs, and its seconds per step."""

    label: str
    model: cm.Model
    plan: cm.Plan
    num_gpus: int
    measured_seconds: float



class _RowParser(argparse.ArgumentParser):
    """The plan flags of `planner estimate`; errors become PlannerError instead of exiting."""

    def error(self, message: str):  # argparse speaks of arguments; a row has columns (unknown ones: flag_argv)
        raise PlannerError(message.replace("argument --", "column "))


def plan_parser() -> _RowParser:
    from planner.inputs.planflags import add_plan_flags

    p = _RowParser(prog="step-times row", add_help=False, allow_abbrev=False)
    add_plan_flags(p)
    return p


def csv_rows(text: str, where: str = "CSV") -> list[dict]:
    """Rows of CSV text as {column: stripped text}; blank lines and '#' comment lines are skipped."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    try:
        reader = csv.DictReader(io.StringIO("\n".join(lines)))
        rows = list(reader)
    except csv.Error as exc:
        raise PlannerError(f"{where}: not valid CSV ({exc})") from None
    header = [h.strip() for h in reader.fieldnames or []]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise PlannerError(f"{where}: column {twice[0]!r} appears twice in the header")
    for i, row in enumerate(rows, 2):
        if None in row:
            raise PlannerError(f"{where} row {i - 1}: more fields than the header has columns")
    return [{k.strip(): (v or "").strip() for k, v in row.items()} for row in rows]


def read_rows(path: Path) -> list[dict]:
    """Rows of a CSV file (header line first) or a YAML/JSON list of mappings."""
    if path.suffix.lower() == ".csv":
        return csv_rows(reading.read_text(path), str(path))
    data = reading.read_data(path)
    if isinstance(data, dict) and isinstance(data.get("steps"), list):
        beside = sorted(str(k)[:40] for k in data if k != "steps")
        if beside:  # settings beside the rows would be dropped: each row carries its own
            raise PlannerError(f"{path}: key{'s' if len(beside) > 1 else ''} {', '.join(beside)} beside 'steps': "
                               "give them in each row (model, gpus, seq_length and the plan's flags are columns)")
        data = data["steps"]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise PlannerError(f"{path}: expected a list of rows (mappings) or a CSV file with a header line")
    return data


def flag_argv(row: dict, parser: argparse.ArgumentParser) -> list[str]:
    """Command-line flags for the plan keys of one row, its keys the flags' dests (normalised)."""
    booleans = {a.dest for a in parser._actions if isinstance(a, argparse._StoreTrueAction)}
    known = {a.dest for a in parser._actions} | set(ROW_KEYS)
    unknown = [k for k in row if k not in known]
    if unknown:  # named before argparse, which would read a prefix of a flag or drop a false boolean
        raise PlannerError(f"unknown column{'s' if len(unknown) > 1 else ''}: {', '.join(u[:40] for u in unknown)}")
    argv = []
    for dest, value in row.items():
        if dest in ROW_KEYS or value is None or value == "":
            continue
        flag = "--" + dest.replace("_", "-")
        if dest in booleans:
            text = str(value).strip().lower()
            if text not in _TRUE + _FALSE:
                raise PlannerError(f"{dest}: expected true or false (got {value!r})")
            argv += [flag] if text in _TRUE else []
        else:
            argv += [flag, str(value)]
    return argv


def seconds_of(row: dict) -> float:
    """The measured step time: a YAML/JSON number or a CSV field in plain decimal or exponent form
    (not a bool, nor '7_5.42'), between L.MIN_SECONDS and L.MAX_SECONDS."""
    value = row.get("step_time_s")
    if value is None or value == "":
        raise PlannerError("step_time_s is missing (the measured seconds per step: a column or key of each row)")
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(value)
        seconds = plain_float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise PlannerError(f"step_time_s must be a number of seconds (got {str(value)[:40]!r})") from None
    if not (math.isfinite(seconds) and L.MIN_SECONDS <= seconds <= L.MAX_SECONDS):
        raise PlannerError(f"step_time_s must be between {L.MIN_SECONDS:g} and {L.MAX_SECONDS:g} seconds "
                           f"(got {str(value)[:40]})")
    return seconds


def normalised(row: dict) -> dict:
    """The row with each key as a flag's dest (surrounding spaces dropped, '-' as '_'), so that seq-length and
    ' gpus' are read as the columns they name; two keys that name one column are refused."""
    out: dict = {}
    for key, value in row.items():
        dest = str(key).strip().replace("-", "_")
        if dest in out:
            raise PlannerError(f"columns {dest!r} and {str(key)[:40]!r} name the same setting: give one")
        out[dest] = value
    return out


def to_step(row: dict, cluster_spec, where: str) -> TimedStep:
    """One row as a legal TimedStep (the model loaded, the plan built and checked); errors name the row."""
    try:
        return _to_step(normalised(row), cluster_spec)
    except PlannerError as err:
        raise PlannerError(f"{where}: {err}") from None


def _int_or_none(row: dict, key: str) -> int | None:
    value = row.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 9 \
            and int(value) > 0:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**9:
        return value
    raise PlannerError(f"{key} must be a positive integer (got {str(value)[:40]!r})")


def _to_step(row: dict, cluster_spec) -> TimedStep:
    from planner.inputs import loading, plans
    from planner.inputs.planflags import plan_spec_from_args

    if not row.get("model"):
        raise PlannerError("model is missing")
    parser = plan_parser()
    args = parser.parse_args(flag_argv(row, parser))
    gpus = _int_or_none(row, "gpus")
    if gpus is None and not cluster_spec.num_gpus:
        raise PlannerError(f"gpus is missing (cluster '{cluster_spec.name}' has no num_gpus)")
    model = loading.load_model_spec(str(row["model"]), _int_or_none(row, "seq_length"), need_seq_length=True,
                                    seq_length_hint="give the row a seq_length")  # a column, not --seq-length
    cluster = loading.build_cluster(cluster_spec, gpus)
    plan = plans.build_plan(plan_spec_from_args(args), model, cluster.num_gpus)
    plans.check_legal(model.to_model(), cluster, plan)
    label = str(row.get("name") or f"{row['model']} tp{plan.tp} pp{plan.pp} dp{plan.dp}")
    return TimedStep(label, model.to_model(), plan, cluster.num_gpus, seconds_of(row))


def load_steps(path: Path, cluster_spec) -> list[TimedStep]:
    rows = read_rows(path)
    if not rows:
        raise PlannerError(f"{path}: no rows")
    return [to_step(r, cluster_spec, f"{path} row {i + 1}") for i, r in enumerate(rows)]
