import json

import pytest

from planner.commands.main import main

# One row of each kind with the published figures it must show (not read back from the catalog):
# NVIDIA H100 datasheet (SXM): 80GB, BF16 1,979 TFLOP/s with sparsity = 989.5 dense (the catalog keeps 989),
# FP8 3,958* = 1979, 3.35 TB/s, NVLink 900 GB/s both ways = 450 each, 700 W;
# DGX H100 datasheet: 8 H100 on NVSwitch, 8x ConnectX-7 400 Gb/s;
# Llama 3 paper (arXiv:2407.21783) Table 3, 70B: 80 layers, 8192 wide, 64 heads, 8 KV heads;
# HF Meta-Llama-3-70B: 70,553,706,496 parameters.
EXPECTED_ROWS = {
    "gpus": ("h100-sxm-80gb", {"memory_gib": 80, "bf16_tflops": 989, "fp8_tflops": 1979, "hbm_gbytes_per_s": 3350,
                               "nvlink_gbytes_per_s": 450, "tdp_watts": 700}),
    "clusters": ("dgx-h100", {"gpu": "h100-sxm-80gb", "gpus_per_node": 8, "nvlink_domain_size": 8,
                              "network_gbits_per_s": 400}),
    "models": ("llama3-70b", {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "parameters_b": 70.55}),
}


def test_catalog_lists_each_kind_as_json(capsys):
    for kind, (name, want) in EXPECTED_ROWS.items():
        assert main(["catalog", kind, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["kind"] == kind
        rows = {r["name"]: r for r in out["rows"]}
        assert {k: rows[name][k] for k in want} == want, kind


def test_catalog_model_sizes_match_published(capsys):
    assert main(["catalog", "models", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["llama2-7b"]["parameters_b"] == 6.74   # Touvron et al. 2023: 6.74B (HF count 6,738,415,616)
    assert abs(rows["gpt3-175b"]["parameters_b"] - 175) < 1.0  # Brown et al. 2020: 175B
    # Mixtral's model card: 46.7B parameters, 12.9B active (top 2 of 8 experts); dense: active = total.
    assert (rows["mixtral-8x7b"]["parameters_b"], rows["mixtral-8x7b"]["active_b"]) == pytest.approx((46.7, 12.9), rel=0.01)
    assert rows["mixtral-8x7b"]["experts"] == "8 x top 2"
    assert rows["llama2-7b"]["active_b"] == rows["llama2-7b"]["parameters_b"] and rows["llama2-7b"]["experts"] == "-"
