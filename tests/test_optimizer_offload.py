"""The optimizer's states kept in host memory between steps (Plan.offload_optimizer_states; Megatron-LM dev's
--offload-optimizer-states, #2987): off the GPU through forward and backward, back for the step, the reload
exposed for as long as it outlasts the exposed gradient sync (costmodel/step.py)."""
from __future__ import annotations

import json
from dataclasses import replace

from costmodel import types as cm
from costmodel.rules import plan_violations
from costmodel.step import estimate
from planner import frameworks
from planner.commands.main import main
from planner.frameworks.base import knob_violations
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.loading import load_cluster_spec, load_model_spec

MODEL = load_model_spec("llama3-8b").to_model()
H100 = load_cluster_spec("dgx-h100").to_cluster(resolve_gpu("h100-sxm-80gb"), 8)  # host link 55 GB/s a GPU
# ZeRO-1 over 8 GPUs in bf16 with fp32 Adam: master weights and two moments, 12 bytes a parameter, an eighth each
PLAN = cm.Plan(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=64, zero_stage=1, precision="bf16")
GIB = 2**30


def test_states_leave_the_gpu_for_forward_and_backward():
    """At 8k tokens a GPU's activations (tens of GiB) outweigh its 12 x 8.03e9 / 8 = 12.0 GB of optimizer states, so
    the fuller phase is forward and backward, which holds no states: the peak falls by exactly those bytes."""
    off, on = estimate(MODEL, H100, PLAN), estimate(MODEL, H100, replace(PLAN, offload_optimizer_states=True))
    states = off.memory_breakdown_bytes["optimizer_states"]
    params = off.memory_breakdown_bytes["parameters"] / 2  # bf16 weights kept whole under ZeRO-1: 2 bytes each
    assert abs(states - 12 * params / 8) < 1e-6 * states
    assert abs(states / 1e9 - 12.05) < 0.05
    assert on.memory_breakdown_bytes["optimizer_states"] == 0.0
    assert on.memory_breakdown_bytes["activations"] == off.memory_breakdown_bytes["activations"] > states
    assert abs((off.memory_per_gpu_bytes - on.memory_per_gpu_bytes) - states) < 1e-6 * states


def test_the_step_phase_is_the_fuller_one_when_activations_are_small():
    """Without activations to free (a stage whose activations are smaller than its states) the peak is the optimizer
    step's: weights, gradients and states, with no activations."""
    from costmodel.step import memory_breakdown, stage_costs

    stage = replace(stage_costs(MODEL, H100, PLAN, cm.Efficiency())[0], activation_bytes=GIB)
    on = memory_breakdown(MODEL, replace(PLAN, offload_optimizer_states=True), stage, cm.Efficiency(), "hopper")
    off = memory_breakdown(MODEL, PLAN, stage, cm.Efficiency(), "hopper")
    assert on["activations"] == 0.0 and on["optimizer_states"] == off["optimizer_states"] > GIB
    assert on["parameters"] == off["parameters"] and on["gradients"] == off["gradients"]


def test_the_fuller_phase_counts_the_allocator_slack():
    """The forward-backward phase carries the slack (7.75% of the bytes a step allocates and frees: the activations)
    that the optimizer step's does not: with activations at 0.99 of the states the passes are fuller by
    0.99 x 1.0775 - 1 = 6.7% of the states, so the peak is the plan's without its states; at 0.5 the step is fuller,
    and the peak is the plan's without its activations and their slack."""
    from costmodel.step import memory_breakdown, stage_costs

    eff = cm.Efficiency()
    assert eff.memory_fragmentation_fraction == 0.0775
    stage = stage_costs(MODEL, H100, PLAN, eff)[0]
    states = memory_breakdown(MODEL, PLAN, stage, eff, "hopper")["optimizer_states"]
    for share, passes in ((0.99, True), (0.5, False)):
        held = replace(stage, activation_bytes=share * states)
        off = sum(memory_breakdown(MODEL, PLAN, held, eff, "hopper").values())
        on = sum(memory_breakdown(MODEL, replace(PLAN, offload_optimizer_states=True), held, eff, "hopper").values())
        expected = off - states if passes else off - share * states * (1 + 0.0775)
        assert abs(on - expected) < 1e-6 * states, share


def test_levers_survive_a_plan_no_framework_writes():
    """Llama 3 70B on 64 H100 at ZeRO-1, tp 8, pp 1 does not fit; with the offload, which no framework writes, the
    diagnosis still offers the levers that add no refusal of their own."""
    from planner.analysis import diagnose, score
    from planner.inputs import plans

    model = load_model_spec("llama3-70b")
    cluster = load_cluster_spec("dgx-h100").to_cluster(resolve_gpu("h100-sxm-80gb"), 64)
    base = cm.Plan(tp=8, pp=1, dp=8, micro_batch_size=1, global_batch_size=64, zero_stage=1, precision="bf16",
                   sequence_parallel=True)
    for offload in (False, True):
        plan = replace(base, offload_optimizer_states=offload)
        plans.check_legal(model.to_model(), cluster, plan)
        assert diagnose.try_levers(score.score(model, cluster, plan), frameworks=tuple(frameworks.REGISTRY)), offload


def test_the_reload_shows_beyond_the_exposed_gradient_sync():
    """12.05 GB back over a 55 GB/s host link take 0.219 s; the step grows by that less the exposed DP sync, which
    the reload runs beside (the optimizer step waits for both)."""
    off, on = estimate(MODEL, H100, PLAN), estimate(MODEL, H100, replace(PLAN, offload_optimizer_states=True))
    reload = off.memory_breakdown_bytes["optimizer_states"] / 55e9
    assert abs(reload - 0.219) < 0.002
    exposed_sync = off.time_breakdown_seconds["dp_comm_exposed"]
    grown = on.time_breakdown_seconds["offload"] - off.time_breakdown_seconds["offload"]
    assert abs(grown - max(0.0, reload - exposed_sync)) < 1e-9
    assert abs(on.step_time_seconds - off.step_time_seconds - grown) < 1e-9


def test_it_needs_a_host_link():
    no_link = replace(H100, host_link_bytes_per_second=0.0)
    found = plan_violations(MODEL, no_link, replace(PLAN, offload_optimizer_states=True))
    assert any("optimizer-state offload needs the host link" in v for v in found)


def test_no_framework_planner_emits_for_writes_it():
    """Megatron-LM main (the options the launch files target) lacks the flag; DeepSpeed's and torchtitan's CPU
    offloads step the optimizer on the host, another mechanism: each refuses, naming why."""
    plan = replace(PLAN, offload_optimizer_states=True)
    why = {name: " ".join(knob_violations(frameworks.get(name), plan))
           for name in ("megatron", "deepspeed", "torchtitan")}
    assert "has no --offload-optimizer-states" in why["megatron"]
    assert "offload_optimizer (ZeRO-Offload)" in why["deepspeed"]
    assert "enable_cpu_offload" in why["torchtitan"]


def test_estimate_takes_the_flag(capsys):
    base = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--tp", "1", "--pp", "1", "--mbs", "1",
            "--zero", "1", "--precision", "bf16", "--offload-optimizer-states"]
    assert main([*base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["offload_optimizer_states"] is True
    assert out["memory_breakdown_bytes"]["optimizer_states"] == 0
    assert main(base) == 0
    assert "optimizer states offloaded" in capsys.readouterr().out
