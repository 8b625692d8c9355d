"""`planner calibrate --step-times`: a known matmul efficiency scale comes back from steps the cost
model generated with it; noisy steps give a spread; bad rows are one-line errors."""
import json
import math
import re
import statistics
from dataclasses import replace

import pytest
import yaml
from conftest import gpt, selene

from costmodel import types as cm
from costmodel.step import estimate
from planner.calibration.steps import TimedStep, fit_scale, implied_scale, predicted_seconds
from planner.commands.main import main
from planner.errors import PlannerError
from planner.inputs import loading, plans, reading
from planner.inputs.specs import ClusterSpec, PlanSpec

PLANS = (cm.Plan(tp=8, pp=2, dp=4, micro_batch_size=1, global_batch_size=64, zero_stage=1),
         cm.Plan(tp=4, pp=4, dp=4, vpp=2, micro_batch_size=2, global_batch_size=128, recompute="full"),
         cm.Plan(tp=2, pp=4, dp=8, micro_batch_size=1, global_batch_size=256, zero_stage=1))
# ZeRO-3 over 8 nodes with little compute per GPU: the weight gathers and gradient reductions of every
# micro-batch outlast the compute they run beside, so the step follows the network, not the matmuls.
COMM_BOUND = cm.Plan(tp=8, pp=1, dp=8, micro_batch_size=1, global_batch_size=64, sequence_parallel=True, zero_stage=3)
CLUSTER_YAML = """name: box
gpu: h100-sxm-80gb
num_gpus: 64
gpus_per_node: 8
network_bandwidth_gbits_per_s: 400
"""


def steps_at(scale: float, noise=(0.0, 0.0, 0.0), plans=PLANS) -> list[TimedStep]:
    """Steps of a 48-layer GPT on 64 A100s, 'measured' = the cost model at `scale`, times (1 + noise)."""
    model, cluster = gpt(48, 6144, 48), replace(selene(64), matmul_efficiency_scale=scale)
    return [TimedStep(f"p{i}", model, p, 64, estimate(model, cluster, p).step_time_seconds * (1 + e))
            for i, (p, e) in enumerate(zip(plans, noise))]


def test_scale_round_trip():
    steps = steps_at(0.83)
    fit = fit_scale(steps, selene(64), selene(64))
    assert fit.scale == pytest.approx(0.83, rel=1e-6)
    assert fit.stderr == pytest.approx(0.0, abs=1e-6)
    assert all(a == pytest.approx(s.measured_seconds, rel=1e-6) for a, s in zip(fit.after_seconds, steps))
    assert all(b < s.measured_seconds for b, s in zip(fit.before_seconds, steps))  # scale 1 predicts faster


def test_noisy_steps_give_an_uncertainty():
    steps = steps_at(0.9, noise=(0.03, -0.02, 0.01))
    fit = fit_scale(steps, selene(64), selene(64))
    for step, k in zip(steps, fit.implied):  # each implied scale reproduces its own step
        assert predicted_seconds(step, selene(64), cm.Efficiency(), k) == pytest.approx(step.measured_seconds, rel=1e-6)
    logs = [math.log(k) for k in fit.implied]
    assert fit.scale == pytest.approx(math.exp(statistics.mean(logs)))
    assert fit.stderr == pytest.approx(fit.scale * statistics.stdev(logs) / math.sqrt(3))
    assert 0 < fit.stderr < 0.05 and min(fit.implied) < fit.scale < max(fit.implied)


def test_communication_bound_step_is_left_out():
    steps = steps_at(0.83, noise=(0, 0, 0, 0), plans=PLANS + (COMM_BOUND,))
    fit = fit_scale(steps, selene(64), selene(64))
    assert fit.used == (True, True, True, False)
    assert fit.scale == pytest.approx(0.83, rel=1e-6)
    with pytest.raises(PlannerError, match="no timed step.s modelled time moves with compute speed"):
        fit_scale(steps[3:], selene(64), selene(64))


def test_impossible_step_is_refused():
    (step,) = steps_at(1.0)[:1]
    with pytest.raises(PlannerError, match="faster than the model allows"):
        implied_scale(replace(step, measured_seconds=step.measured_seconds / 1000), selene(64), cm.Efficiency())


def test_a_step_whose_plan_the_memory_model_puts_over_the_gpu_is_named():
    """A 48-layer GPT of hidden 6144 (12 x 48 x 6144^2 = 21.7e9 weights) unsharded on each GPU (tp 1, pp 1,
    ZeRO 0) holds 16 B per weight of parameters, gradients and Adam states: 348 GB, over an A100's 80 GiB. A row
    timing it has a wrong flag, or the memory model overshoots a plan that ran: the fit names it and goes on (an
    audit fitted one without a word; the refusal that followed blocked a published layout a review wrote out)."""
    (step,) = steps_at(1.0)[:1]
    bad = replace(step, label="unsharded", plan=cm.Plan(tp=1, pp=1, dp=64, micro_batch_size=1, global_batch_size=64))
    fit = fit_scale([step, replace(bad, measured_seconds=step.measured_seconds * 1.3)], selene(64), selene(64))
    (line,) = fit.warnings
    assert re.match(r"step 'unsharded': the memory model puts its plan at \d+\.\d GiB per GPU, over the 80 GiB", line)
    assert not fit_scale([step], selene(64), selene(64)).warnings


def truth_seconds(plan_flags: dict, scale: float) -> float:
    """llama3-8b on 64 GPUs of CLUSTER_YAML, from the cost model at matmul efficiency `scale`."""
    model = loading.load_model_spec("llama3-8b")
    cluster = loading.build_cluster(reading.parse(ClusterSpec, yaml.safe_load(CLUSTER_YAML), "c"), 64)
    plan = plans.build_plan(PlanSpec(**plan_flags), model, 64)
    return estimate(model.to_model(), replace(cluster, matmul_efficiency_scale=scale), plan).step_time_seconds


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_csv_round_trip_and_estimate(capsys, tmp_path):
    a = {"tp": 2, "pp": 1, "global_batch_size": 128, "zero_stage": 1}
    b = {"tp": 4, "pp": 2, "global_batch_size": 128, "recompute": "selective", "sequence_parallel": True}
    (tmp_path / "c.yaml").write_text(CLUSTER_YAML)
    (tmp_path / "steps.csv").write_text(
        "# two timed steps\nname,model,gpus,tp,pp,gbs,zero,recompute,sequence_parallel,step_time_s\n"
        f"a,llama3-8b,64,2,1,128,1,,false,{truth_seconds(a, 0.8):.6f}\n"
        f"b,llama3-8b,,4,2,128,0,selective,true,{truth_seconds(b, 0.8):.6f}\n")
    out = tmp_path / "c.cal.yaml"
    code, text, err = run(capsys, "calibrate", tmp_path / "c.yaml", "--step-times", tmp_path / "steps.csv",
                          "--out", out)
    assert code == 0, err
    assert "compute efficiency scale 0.800" in text
    spec = loading.load_cluster_spec(str(out))
    assert spec.matmul_efficiency_scale == pytest.approx(0.8, abs=1e-4)
    assert spec.calibrated_from.step_times.endswith("steps.csv")
    code, text, err = run(capsys, "estimate", "llama3-8b", out, "--tp", "4", "--pp", "2", "--gbs", "128",
                          "--recompute", "selective", "--sequence-parallel", "--json")
    assert code == 0, err
    assert json.loads(text)["step_time_s"] == pytest.approx(truth_seconds(b, 0.8), rel=1e-3)


def test_cli_yaml_rows(capsys, tmp_path):
    a = {"tp": 8, "pp": 1, "global_batch_size": 64}
    (tmp_path / "c.yaml").write_text(CLUSTER_YAML)
    row = f"- {{model: llama3-8b, tp: 8, gbs: 64, step_time_s: {truth_seconds(a, 1.2)}}}\n"
    (tmp_path / "steps.yaml").write_text(row)
    code, text, err = run(capsys, "calibrate", tmp_path / "c.yaml", "--step-times", tmp_path / "steps.yaml", "--json")
    assert code == 0, err
    compute = json.loads(text)["compute"]
    assert compute["matmul_efficiency_scale"] == pytest.approx(1.2, rel=1e-6) and compute["stderr"] is None


@pytest.mark.parametrize("row,needle", [
    ("model,tp,step_time_s\nllama3-8b,8,abc\n", "row 1: step_time_s must be a number"),
    ("model,tp,speed,step_time_s\nllama3-8b,8,3,1.0\n", "row 1: unknown column: speed"),
    ("tp,step_time_s\n8,1.0\n", "row 1: model is missing"),
    ("model,tp,sequence_parallel,step_time_s\nllama3-8b,8,maybe,1.0\n", "sequence_parallel: expected true or false"),
    ("model,tp,step_time_s\nllama3-8b,3,1.0\n", "row 1: "),
])
def test_bad_rows_are_one_line_errors(capsys, tmp_path, row, needle):
    (tmp_path / "c.yaml").write_text(CLUSTER_YAML)
    (tmp_path / "s.csv").write_text(row)
    code, _, err = run(capsys, "calibrate", tmp_path / "c.yaml", "--step-times", tmp_path / "s.csv")
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err


def test_scale_above_peak_is_flagged():
    from planner.render.calibrate import scale_line

    steps = steps_at(1.0)[:2]
    fit = fit_scale(steps, selene(64), selene(64))
    assert "above the GPU's peak" not in scale_line(steps, fit, 0.8)
    assert "above the GPU's peak" in scale_line(steps, replace(fit, scale=1.3), 0.8)


def test_a_rows_missing_fields_are_named_as_columns(capsys, tmp_path):
    """A row without step_time_s says the column is missing (it said "got 'None'"); a config.json row without
    seq_length names the row's column, not the command line's --seq-length (an audit)."""
    (tmp_path / "c.yaml").write_text(CLUSTER_YAML)
    (tmp_path / "a.csv").write_text("name,model,gpus,tp,pp,gbs\na,llama3-8b,64,2,1,128\n")
    code, _, err = run(capsys, "calibrate", tmp_path / "c.yaml", "--step-times", tmp_path / "a.csv")
    assert code == 2 and "row 1: step_time_s is missing" in err
    config = "tests/data/hf/llama-3-8b/config.json"
    (tmp_path / "b.csv").write_text(f"name,model,gpus,tp,pp,gbs,step_time_s\nb,{config},64,2,1,128,5.0\n")
    code, _, err = run(capsys, "calibrate", tmp_path / "c.yaml", "--step-times", tmp_path / "b.csv")
    assert code == 2 and "give the row a seq_length" in err and "--seq-length" not in err
