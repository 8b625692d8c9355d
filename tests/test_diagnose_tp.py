"""When tensor-parallel traffic is the problem, the diagnosis offers the tensor-parallel levers."""
from __future__ import annotations

import json

from planner.commands.main import main


def estimate(capsys, *flags) -> dict:
    assert main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_tp8_on_an_8b_model_offers_lower_tp_and_sequence_parallel(capsys):
    d = estimate(capsys, "--tp", "8")
    diag = d["diagnosis"]
    # 2 all-reduces of b*s*h per layer over 8 GPUs in forward; the backward's run beside the weight gradients
    assert diag["shares"]["tp_comm"] > 0.2
    levers = {lv["lever"]: lv for lv in diag["levers"]}
    lower = next(lv for name, lv in levers.items() if name.startswith("lower tensor parallelism"))
    assert "sequence parallelism" in levers
    # The lever is the plan `--tp 4 --dp 2` re-scored: the same numbers as estimating that plan.
    tp4 = estimate(capsys, "--tp", "4")
    assert lower["lever"] == "lower tensor parallelism (tp 4, dp 2)"
    assert abs(lower["step_time_s"] - tp4["step_time_s"]) < 1e-9
    assert lower["per_sample_speedup"] > 1.2 and tp4["fits"]
    assert d["time_breakdown_s"]["tp_comm"] > tp4["time_breakdown_s"]["tp_comm"]


def test_no_tp_lever_without_tensor_parallelism(capsys):
    names = [lv["lever"] for lv in estimate(capsys, "--tp", "1", "--zero", "1")["diagnosis"]["levers"]]
    assert not any("tensor" in n or n == "sequence parallelism" for n in names)
