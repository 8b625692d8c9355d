"""Plain YAML values resolve by the YAML 1.2 core schema (yaml.org/spec/1.2.2, section 10.3.2), as the
README's input limits say, not by PyYAML's YAML 1.1 rules, under which `020` is octal 16, `1_6` is 16
and `yes` / `on` are true: a model file written with them was silently another model."""
import pytest

from costmodel.flops import total_parameters
from planner.commands.main import main
from planner.errors import PlannerError
from planner.inputs.loading import load_model_spec
from planner.inputs.reading import parse_text


@pytest.mark.parametrize("text, value", [
    ("8", 8), ("-8", -8), ("+8", 8), ("020", 20), ("0o17", 15), ("0x1F", 31),  # ints: decimal, 0o, 0x
    ("1e3", 1000.0), (".5", 0.5), ("2.", 2.0), ("1.0e+20", 1e20), ("-.inf", float("-inf")),  # floats
    ("true", True), ("False", False), ("TRUE", True), ("null", None), ("~", None), ("", None),
    # YAML 1.1 forms that 1.2 reads as strings
    ("1_6", "1_6"), ("1:30", "1:30"), ("0b101", "0b101"), ("yes", "yes"), ("on", "on"), ("n", "n"),
    ("Off", "Off"), ("2024-01-01", "2024-01-01"),
])
def test_scalars_resolve_by_the_core_schema(text, value):
    assert parse_text(f"a: {text}", "t.yaml", as_json=False)["a"] == value
    assert type(parse_text(f"a: {text}", "t.yaml", as_json=False)["a"]) is type(value)


def test_nan_is_still_a_float_for_the_limits_to_refuse():
    got = parse_text("a: .nan", "t.yaml", as_json=False)["a"]
    assert isinstance(got, float) and got != got


EXAMPLE = open("examples/llama3-70b.yaml").read()


def _model(tmp_path, old: str, new: str):
    assert old in EXAMPLE
    path = tmp_path / "m.yaml"
    path.write_text(EXAMPLE.replace(old, new))
    return path


def test_a_leading_zero_is_decimal_in_a_model_file(tmp_path):
    # 020 layers are twenty (YAML 1.1 read sixteen): the same model as the file that says 20.
    padded = load_model_spec(str(_model(tmp_path, "num_layers: 80", "num_layers: 020")))
    plain = load_model_spec(str(_model(tmp_path, "num_layers: 80", "num_layers: 20")))
    assert padded.num_layers == 20
    assert total_parameters(padded.to_model()) == total_parameters(plain.to_model())


@pytest.mark.parametrize("old, new, key", [
    ("num_layers: 80", "num_layers: 8_0", "num_layers"),
    ("tie_embeddings: false", "tie_embeddings: no", "tie_embeddings"),
    ("tie_embeddings: false", "tie_embeddings: off", "tie_embeddings"),
])
def test_yaml_1_1_forms_are_refused_not_read(tmp_path, capsys, old, new, key):
    path = _model(tmp_path, old, new)
    with pytest.raises(PlannerError, match=key):
        load_model_spec(str(path))
    assert main(["estimate", str(path), "dgx-h100", "--gpus", "8", "--tp", "8", "--mbs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err and "Traceback" not in err
