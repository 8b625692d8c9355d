"""Activation offload as a searched knob (issue 14: "Activation offload to host memory ... as a plan knob"):
Megatron-LM offloads whole layers without pipeline parallelism (--cpu-offloading-num-layers), which NVIDIA's
Llama 3 70B Megatron-FSDP recipes on GB200 use (validation/runs.yaml: 40 and 20 of 80 layers)."""
from __future__ import annotations

import json
from dataclasses import replace

from costmodel import types as cm
from costmodel.step import estimate
from planner.commands.main import main
from planner.search.bounds import fewest_offloaded
from planner.search.space import Knobs, SearchSpec, offload_counts

GIB = 2**30


def spec(layers: int, **fixed) -> SearchSpec:
    m = cm.Model("m", layers, 1024, 8, 32000, 2048)
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 300e12}, 2e12, 300e9)
    return SearchSpec(m, cm.Cluster("c", gpu, 8, 8, 8, 300e9, 25e9), 8, fixed=fixed)


def test_offload_counts_are_a_quarter_and_half_of_the_layers_or_the_fix():
    assert offload_counts(spec(80)) == (0, 20, 40)  # NVIDIA's 70B recipes: 20 and 40 of 80
    assert offload_counts(spec(30)) == (0, 8, 15)  # round(7.5) = 8
    assert offload_counts(spec(2)) == (0, 1)  # a quarter rounds to 0, half is 1: one count
    assert offload_counts(spec(80, offl=10)) == (10,)


def test_the_fewest_offloaded_layers_that_fit_are_kept():
    a = Knobs(3, "none", False, "bf16", "", offl=20)
    b, c = replace(a, offl=40), replace(a, zero=1, offl=40)
    assert fewest_offloaded((b, a, c)) == (a, c)  # b offloads more than a, the same otherwise; c differs
    assert fewest_offloaded((b,)) == (b,)


def suggest_json(capsys, *extra) -> dict:
    assert main(["suggest", "llama3-70b", "gb200-nvl72", "--gpus", "64", "--gbs", "256", "--precision", "fp8",
                 "--framework", "megatron", "--fix", "tp=1", "--fix", "pp=1", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_search_offloads_where_nothing_else_fits_unsharded_activations(capsys):
    """Llama 3 70B in FP8 on 64 GB200 without tensor or pipeline parallelism (NVIDIA's recipe layout): the
    best plan offloads layers to host over NVLink-C2C, where the same plan keeping them on the GPU does not
    fit in the search's 0.9 of 186 GiB, and it beats the best plan with offload fixed off."""
    best = suggest_json(capsys)["plans"][0]
    assert best["plan"]["offload_layers"] in (20, 40) and best["plan"]["zero_stage"] == 3
    without = suggest_json(capsys, "--fix", "offload_layers=0")["plans"][0]
    assert without["plan"]["offload_layers"] == 0
    assert suggest_json(capsys, "--fix", "offl=40")["plans"][0]["plan"]["offload_layers"] == 40
    assert best["step_time_s"] < without["step_time_s"]
    kept = dict(best["plan"], offload_layers=0)
    argv = ["estimate", "llama3-70b", "gb200-nvl72", "--gpus", "64", "--json"]
    argv += [f"--{k.replace('_', '-')}={v}" for k, v in (("tp", 1), ("pp", 1), ("dp", kept["dp"]),
                                                            ("mbs", kept["micro_batch_size"]), ("gbs", 256),
                                                            ("zero", 3), ("precision", "fp8"))]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["memory_per_gpu_bytes"] > 0.9 * 186 * GIB


def test_offload_adds_time_and_takes_memory():
    """What the search's bounds rely on (bounds.lower_bound leaves offload off, no_larger counts more of it as
    smaller): on a PCIe host the copies show, and the peak falls with every layer offloaded."""
    m = cm.Model("m", 32, 4096, 32, 32000, 4096, ffn_hidden_size=14336)
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 989e12}, 3.35e12, 450e9)
    cluster = cm.Cluster("c", gpu, 8, 8, 8, 450e9, 50e9, host_link_bytes_per_second=55e9)
    plan = cm.Plan(dp=8, micro_batch_size=2, global_batch_size=16, zero_stage=3)
    runs = [estimate(m, cluster, replace(plan, offload_layers=n), cm.Efficiency()) for n in (0, 8, 16)]
    times, peaks = [e.step_time_seconds for e in runs], [e.memory_per_gpu_bytes for e in runs]
    assert times[0] <= times[1] <= times[2] and peaks[0] > peaks[1] > peaks[2]


def test_diagnose_offers_offload_to_a_plan_that_does_not_fit():
    """NVIDIA's Llama 3 70B GB200 FP8 layout (tp 1, pp 1, dp 64, ZeRO-3, micro-batch 2) keeping every layer's
    activations needs more than the GPU has; the offload lever gives the fewest layers of a quarter and half
    that fit, the recipe's own 40, and leaves the step as it was (the copies hide behind the compute on
    NVLink-C2C, as Megatron's offload context overlaps them)."""
    from planner.analysis import diagnose
    from planner.analysis import score as report
    from planner.inputs import loading
    from planner.inputs.plans import build_plan
    from planner.inputs.specs import PlanSpec

    model = loading.load_model_spec("llama3-70b")
    cluster = loading.build_cluster(loading.load_cluster_spec("gb200-nvl72"), 64)
    plan = build_plan(PlanSpec(tp=1, pp=1, dp=64, micro_batch_size=2, global_batch_size=256, zero_stage=3,
                               precision="fp8"), model, 64)
    base = report.score(model, cluster, plan)
    assert base.est.memory_per_gpu_bytes > base.est.memory_capacity_bytes
    levers = {r.lever.name: r for r in diagnose.try_levers(base)}
    offload = levers["activation offload"].scored
    assert offload.plan.offload_layers == 40 and offload.est.fits
    assert offload.est.step_time_seconds == base.est.step_time_seconds
