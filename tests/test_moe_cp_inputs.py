"""Bad mixture-of-experts and context-parallel inputs (issues 15 and 16): one line on stderr, exit 2.

Each rule is the framework's or the cost model's own: experts divide over ep (Megatron-core
moe_utils / arguments.py: num_experts % expert_model_parallel_size == 0), top-k within the experts,
ep x etp dividing the tp x cp x dp ranks they fold over (MoE parallel folding, arXiv:2504.14960
Sec 3), expert fields only on an MoE model; each sequence splits into 2 x cp equal chunks (Megatron-core
causal load balancing), Ulysses (a2a) cp within the KV heads per TP rank, and cp only on a framework
that has it (DeepSpeed's launch files have none).
"""
import json

import pytest
from conftest import one_line_error

from planner.commands.main import main

DENSE = ["llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "256"]
MOE = ["mixtral-8x7b", "dgx-h100", "--gpus", "64", "--gbs", "256"]


@pytest.mark.parametrize("argv, needles", [
    (["estimate", *MOE, "--ep", "16"], ("experts (8) must be divisible by ep (16)",)),
    (["estimate", *MOE, "--tp", "4", "--pp", "4", "--ep", "8", "--etp", "4"], ("ep x etp (8x4) must divide",)),
    (["estimate", *DENSE, "--ep", "2"], ("only to mixture-of-experts models",)),
    (["suggest", *DENSE, "--fix", "ep=2"], ("ep",)),
    (["estimate", *DENSE, "--tp", "8", "--seq-length", "8202", "--cp", "2"], ("2 x cp = 4 equal chunks",)),
    (["estimate", *DENSE, "--tp", "4", "--cp", "16", "--cp-comm", "a2a"], ("Ulysses", "KV heads")),
    # cp on a framework without it: the framework's own rule, not just "no framework runs it"
    (["suggest", *DENSE, "--framework", "deepspeed", "--fix", "cp=2"],
     ("no legal layout", "DeepSpeed: DeepSpeed's sequence parallelism (Ulysses)")),
])
def test_bad_expert_and_context_parallel_inputs(capsys, argv, needles):
    one_line_error(capsys, argv, *needles)


def test_top_k_above_the_expert_count(capsys, tmp_path):
    text = open("catalogs/models/mixtral-8x7b.yaml").read().replace("experts_per_token: 2", "experts_per_token: 9")
    (tmp_path / "m.yaml").write_text(text)
    one_line_error(capsys, ["estimate", str(tmp_path / "m.yaml"), "dgx-h100", "--gpus", "8", "--gbs", "8"],
                   "experts_per_token")


def test_moe_fields_on_a_dense_layout_file(capsys, tmp_path):
    """A plan JSON with ep on a dense model is refused by emit as by estimate."""
    assert main(["estimate", *DENSE, "--tp", "8", "--pp", "2", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    plan["plan"]["ep"] = 2
    (tmp_path / "p.json").write_text(json.dumps(plan))
    one_line_error(capsys, ["emit", str(tmp_path / "p.json"), "--format", "megatron", "--out", str(tmp_path / "o")], "ep")


def test_cp_plan_refused_by_deepspeed_emit(capsys, tmp_path):
    assert main(["estimate", *DENSE, "--tp", "8", "--cp", "2", "--pp", "2", "--recompute", "full", "--json"]) == 0
    (tmp_path / "p.json").write_text(capsys.readouterr().out)
    one_line_error(capsys, ["emit", str(tmp_path / "p.json"), "--format", "deepspeed", "--out", str(tmp_path / "o")],
                   "DeepSpeed")


def test_what_if_imbalance_slows_the_experts(capsys):
    """--what-if imbalance=1.3: the busiest expert rank gets 1.3x the balanced share of routed rows; the
    step and the memory grow, and values outside [1, 64] are refused in one line."""
    argv = ["estimate", *MOE, "--tp", "2", "--ep", "8", "--json"]
    assert main(argv + ["--what-if", "imbalance=1.3"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["what_if"]["assumptions"] == "imbalance=1.3"
    assert d["what_if"]["estimate"]["step_time_s"] > d["step_time_s"]
    assert d["what_if"]["estimate"]["memory_per_gpu_bytes"] > d["memory_per_gpu_bytes"]
    one_line_error(capsys, argv + ["--what-if", "imbalance=0.5"], "imbalance")
