"""The --json contract (planner/commands/contract.py): the shipped JSON Schema is the one the models
generate, every command's real output fits both the models and the schema with the current
schema_version, and a broken object does not."""
from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

import jsonschema
import pydantic
import pytest
try:  # Python 3.11+; the tomli backport on 3.10 (the test extra installs it there)
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

from planner.commands import contract
from planner.commands.common import print_json
from planner.commands.main import main
from planner.errors import PlannerError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LLAMA70, H100_64 = str(EXAMPLES / "llama3-70b.yaml"), str(EXAMPLES / "h100-64.yaml")
SEED7, SEED_CLUSTER = str(EXAMPLES / "seed-7b.yaml"), str(EXAMPLES / "seed-8gpu-ib200.yaml")

# case id -> (contract command, argv); {dir} is a folder holding earlier cases' outputs as <case>.json.
# Together they reach the optional and nullable keys: a what-if, a grid, one plan (why null), the
# enumerator (no tables time), a model without training_tokens, a size option that does not fit,
# no cheapest or fastest choice, jobs that differ.
CASES = {
    "estimate": ("estimate", ["estimate", LLAMA70, H100_64, "--tp", "8", "--pp", "4", "--mbs", "1", "--gbs", "512",
                              "--zero", "1", "--what-if", "network=0.5", "--json"]),
    "estimate-no-training": ("estimate", ["estimate", SEED7, SEED_CLUSTER, "--tp", "2", "--zero", "1", "--json"]),
    "diagnose": ("diagnose", ["diagnose", SEED7, SEED_CLUSTER, "--tp", "2", "--zero", "1", "--json"]),
    "estimate-yarn": ("estimate", ["estimate", "gpt-oss-120b", "gb200-nvl72", "--gpus", "64", "--ep", "16",
                                   "--mbs", "1", "--gbs", "256", "--zero", "1", "--no-rope-fusion", "--json"]),
    "suggest": ("suggest", ["suggest", LLAMA70, H100_64, "--what-if-grid", "network=0.5,1.0", "--json"]),
    "suggest-notes": ("suggest", ["suggest", SEED7, SEED_CLUSTER, "--top", "1", "--solver", "enumerate",
                                  "--what-if", "network=0.5", "--precision", "bf16,fp8", "--json"]),
    "suggest-emit": ("suggest", ["suggest", SEED7, SEED_CLUSTER, "--top", "1", "--emit", "all",
                                 "--out={dir}/launch", "--json"]),
    "size": ("size", ["size", "llama3-8b", "--gpu-types", "h100-sxm-80gb", "--max-gpus", "64", "--gbs", "512",
                      "--tokens", "1e12", "--workers", "1", "--json"]),
    "size-nothing-meets": ("size", ["size", "llama3-70b", "--gpu-types", "h100-sxm-80gb", "--max-gpus", "32",
                                    "--seq-length", "32768", "--gbs", "512", "--tokens", "1e12", "--budget-usd", "1",
                                    "--what-if-grid", "network=0.5", "--workers", "1", "--json"]),
    "compare": ("compare", ["compare", "{dir}/estimate.json", "{dir}/suggest.json", "--json"]),
    "compare-different-jobs": ("compare", ["compare", "{dir}/estimate.json", "{dir}/suggest-notes.json", "--json"]),
    "validate": ("validate", ["validate", "--group", "mlperf", "--json"]),
    "validate-fit-on": ("validate --fit-on", ["validate", "--group", "mlperf", "--group", "megatron-2021",
                                              "--fit-on", "hopper", "--json"]),
    "validate-leave-one-out": ("validate --leave-one-source-out", ["validate", "--group", "mlperf", "--group", "bloom",
                                                                   "--leave-one-source-out", "--json"]),
    "calibrate": ("calibrate", ["calibrate", H100_64, "--nccl", str(EXAMPLES / "nccl" / "all_reduce_8gpu.txt"),
                                "--nccl", str(EXAMPLES / "nccl" / "all_reduce_2node16gpu.txt"),
                                "--step-times", str(EXAMPLES / "step_times_llama3-70b.csv"), "--json"]),
    "calibrate-one-node": ("calibrate", ["calibrate", H100_64, "--nccl", str(EXAMPLES / "nccl" / "all_reduce_8gpu.txt"),
                                         "--json"]),
    "catalog-gpus": ("catalog gpus", ["catalog", "gpus", "--json"]),
    "catalog-clusters": ("catalog clusters", ["catalog", "clusters", "--json"]),
    "catalog-models": ("catalog models", ["catalog", "models", "--json"]),
}


def run_json(argv: list[str]) -> str:
    """What `planner ARGV` prints on stdout (it must succeed; `size` with a budget nobody meets exits 1 and
    still prints its report)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    unmet = argv[0] == "size" and "planner: no option meets" in err.getvalue()
    assert code == (1 if unmet else 0), (argv, err.getvalue())
    return out.getvalue()


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    """case id -> the command's printed JSON text, each run once (and saved for `compare`)."""
    folder, texts = tmp_path_factory.mktemp("contract"), {}

    def get(case: str) -> str:
        if case not in texts:
            argv = [a.replace("{dir}", str(folder)) for a in CASES[case][1]]
            for a in argv:  # the outputs a `compare` reads
                if a.startswith(str(folder)):
                    get(Path(a).stem)
            texts[case] = run_json(argv)
            (folder / f"{case}.json").write_text(texts[case])
        return texts[case]
    return get


@pytest.fixture(scope="module")
def document():
    return contract.shipped_schema()


def strict_loads(text: str):
    """json.loads that refuses NaN and Infinity."""
    def refuse(name):
        raise ValueError(f"non-finite number {name}")
    return json.loads(text, parse_constant=refuse)


def schema_errors(document: dict, command: str, obj) -> list[str]:
    validator = jsonschema.Draft202012Validator(contract.command_schema(command, document))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(obj)]


# --- the shipped schema ---


def test_shipped_schema_is_the_one_the_models_generate(document):
    assert document == json.loads(contract.schema_text()), "run: python -m planner.commands.contract --write"
    assert contract.main(["--check"]) == 0


def test_schema_is_2020_12_with_a_definition_per_command(document):
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["x-schema-version"] == contract.SCHEMA_VERSION
    assert set(document["x-commands"]) == set(contract.OUTPUTS)
    for command, ref in document["x-commands"].items():
        name = ref.removeprefix("#/$defs/")
        assert name == contract.OUTPUTS[command].__name__ and name in document["$defs"]
        assert {"$ref": ref} in document["oneOf"]
        assert document["$defs"][name]["properties"]["schema_version"]["const"] == contract.SCHEMA_VERSION


def test_every_field_is_described(document):
    for name, definition in document["$defs"].items():
        for key, prop in definition.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{key}"


def test_the_schema_ships_as_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert contract.SCHEMA_FILE in data["planner.commands"]
    assert contract.schema_path().is_file()


def test_every_command_of_the_contract_is_exercised():
    assert {command for command, _ in CASES.values()} == set(contract.OUTPUTS)


# --- real outputs ---


@pytest.mark.parametrize("case", list(CASES))
def test_output_fits_the_models_and_the_schema(case, produced, document):
    command = CASES[case][0]
    text = produced(case)
    obj = strict_loads(text)
    assert isinstance(obj, dict) and next(iter(obj)) == "schema_version"
    assert obj["schema_version"] == contract.SCHEMA_VERSION
    contract.parse_output(command, text)
    assert schema_errors(document, command, obj) == []
    assert list(jsonschema.Draft202012Validator(document).iter_errors(obj)) == []  # the oneOf over every command


def test_cases_reach_the_optional_keys(produced):
    """The cases above cover both sides of the keys that may be null or absent."""
    est, plain = json.loads(produced("estimate")), json.loads(produced("estimate-no-training"))
    yarn = json.loads(produced("estimate-yarn"))
    assert yarn["model_spec"]["rope_scaling"]["rope_type"] == "yarn" and yarn["plan"]["rope_fusion"] is False
    assert "rope_scaling" not in est["model_spec"] and est["plan"]["rope_fusion"] is True
    assert "what_if" in est and est["training"] is not None and "what_if" not in plain and plain["training"] is None
    sug, one = json.loads(produced("suggest")), json.loads(produced("suggest-notes"))
    emitted = json.loads(produced("suggest-emit"))["emitted"]
    assert "emitted" not in sug and {f["framework"] for f in emitted["frameworks"]} == {"deepspeed", "megatron"}
    assert all(Path(f).is_file() for f in emitted["files"]) and any(f.endswith("README.txt") for f in emitted["files"])
    assert all(f["files"] and set(f["files"]) < set(emitted["files"]) for f in emitted["frameworks"])
    assert sug["why"] and "stability" in sug and "tables" in sug["search"]["seconds"]
    assert one["why"] is None and "what_if" in one and "tables" not in one["search"]["seconds"] and one["search"]["notes"]
    size = json.loads(produced("size-nothing-meets"))
    assert size["cheapest"] is None and size["stability"] and not all(o["fits"] for o in size["options"])
    assert json.loads(produced("compare-different-jobs"))["measure"] == "tokens/s per GPU"
    assert json.loads(produced("calibrate-one-node"))["network"] is None


def test_catalog_json_is_an_object_with_its_kind(produced):
    for kind in ("gpus", "clusters", "models"):
        out = json.loads(produced(f"catalog-{kind}"))
        assert list(out) == ["schema_version", "kind", "rows"] and out["kind"] == kind and out["rows"]


# --- broken objects fail ---


def broken(obj: dict, path: str, value=None, delete: bool = False) -> dict:
    """A deep copy of `obj` with the dotted `path` set to `value` (or deleted)."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return out


BREAKAGES = {
    "extra top-level key": ("estimate", "surprise", 1, False),
    "extra nested key": ("estimate", "plan.surprise", True, False),
    "wrong type": ("estimate", "step_time_s", "fast", False),
    "bool for an integer": ("estimate", "plan.tp", True, False),
    "missing key": ("estimate", "diagnosis", None, True),
    "null for a key that may only be absent": ("estimate", "what_if", None, False),
    "another schema version": ("estimate", "schema_version", "0", False),
    "value outside its choices": ("estimate", "plan.recompute", "sometimes", False),
    "wrong type deep in a list": ("suggest", "plans.0.time_breakdown_s.compute", "slow", False),
    "catalog row of another kind": ("catalog-gpus", "kind", "models", False),
}


@pytest.mark.parametrize("name", list(BREAKAGES))
def test_broken_output_fails_both_checks(name, produced, document):
    case, path, value, delete = BREAKAGES[name]
    command = CASES[case][0]
    obj = broken(json.loads(produced(case)), path, value, delete)
    with pytest.raises(pydantic.ValidationError):
        contract.parse_output(command, json.dumps(obj))
    assert schema_errors(document, command, obj), name


# --- printing ---


def test_print_json_puts_the_version_first_and_stays_strict(capsys):
    print_json({"a": 1})
    assert json.loads(capsys.readouterr().out) == {"schema_version": contract.SCHEMA_VERSION, "a": 1}
    with pytest.raises(PlannerError, match="non-finite"):
        print_json({"a": float("nan")})


def test_readme_states_the_current_schema_version():
    """README's "JSON output" names the schema_version every --json prints (it said "9" after the bump to 10)."""
    readme = (ROOT / "README.md").read_text()
    assert f'`schema_version` (now `"{contract.SCHEMA_VERSION}"`)' in readme
