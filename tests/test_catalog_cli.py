import json

from planner.commands.main import main


def test_catalog_lists_each_kind_as_json(capsys):
    for kind, needle in (("gpus", "h100-sxm-80gb"), ("clusters", "dgx-h100"), ("models", "llama3-70b")):
        assert main(["catalog", kind, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert needle in {r["name"] for r in rows}


def test_catalog_model_sizes_match_published(capsys):
    assert main(["catalog", "models", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["llama2-7b"]["parameters_b"] == 6.74   # Touvron et al. 2023: 6.74B (HF count 6,738,415,616)
    assert abs(rows["gpt3-175b"]["parameters_b"] - 175) < 1.0  # Brown et al. 2020: 175B
