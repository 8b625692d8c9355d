"""What a framework runs otherwise than a plan was scored with (frameworks.base.scored_otherwise): one list that
the search's labels (priced_otherwise), emit's README (otherwise_notes) and diagnose's levers (as_framework_runs)
all read, each setting checked only where the cost model reads it.
"""
from dataclasses import replace

import pytest

from costmodel import step, types as cm
from planner.analysis.diagnose import LEVERS, as_framework_runs
from planner.emit.readme import otherwise_notes
from planner.frameworks import REGISTRY
from planner.frameworks.base import Machine, priced_otherwise, scored_otherwise
from planner.inputs import loading

MODEL = cm.Model("m", 4, 1024, 16, 32000, 2048)
ROPE = replace(MODEL, position_embedding="rope", rope_theta=1e4)


def plan(**kw) -> cm.Plan:
    return cm.Plan(**{"tp": 1, "pp": 1, "dp": 8, "micro_batch_size": 1, "global_batch_size": 8, **kw})


def cluster() -> cm.Cluster:
    return loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8)


def labels(name: str, p: cm.Plan, model: cm.Model = MODEL) -> list[str]:
    return [label.rsplit(" ", 1)[0] for label in priced_otherwise(REGISTRY[name], model, p)]


def test_one_microbatch_syncs_alike_either_way():
    """With one micro-batch, an all-reduce after each micro-batch (torchtitan without a pipeline, trainer.py) is the
    bucketed one after the last backward: one reduction (dataparallel.dp_sync_seconds: num_microbatches x reduce)
    behind the same 2/3 of the micro-batch (step.dp_overlap_window_seconds). So a plan scored with buckets is
    torchtitan's as scored at one micro-batch, not at two."""
    one = {sync: step.estimate(MODEL, cluster(), plan(grad_sync=sync)).step_time_seconds
           for sync in ("buckets", "microbatch")}
    assert one["buckets"] == one["microbatch"]
    assert "gradient sync" not in labels("torchtitan", plan(grad_sync="buckets"))
    assert "gradient sync" in labels("torchtitan", plan(grad_sync="buckets", global_batch_size=16))


def test_megatron_runs_rope_unfused_on_request():
    """An unfused RoPE is Megatron-LM's with --no-rope-fusion (which emit writes), not torchtitan's (its rule
    refuses it); DeepSpeed's model code never fuses it; with no fused kernels at all RoPE's fusion moves nothing
    (layer.layer_times prices the eager RoPE only beside fused kernels)."""
    unfused = plan(rope_fusion=False)
    assert "RoPE fused" not in labels("megatron", unfused, ROPE)
    assert "RoPE fused" in labels("torchtitan", unfused, ROPE)
    assert "RoPE fused" in labels("deepspeed", plan(), ROPE)
    eager = plan(fused_elementwise=False)
    assert step.estimate(ROPE, cluster(), eager).step_time_seconds == \
        step.estimate(ROPE, cluster(), plan(fused_elementwise=False, rope_fusion=False)).step_time_seconds
    assert "RoPE fused" not in labels("deepspeed", eager, ROPE)


def test_labels_and_values_are_one_list():
    """priced_otherwise is scored_otherwise's labels with the plan's values; each entry names the value the
    framework runs, its first: torchtitan's loss and projections on a Megatron-scored plan."""
    p = plan()
    found = {o.field: o.runs for o in scored_otherwise(REGISTRY["torchtitan"], MODEL, p)}
    ks = REGISTRY["torchtitan"].knobs_for(p)
    assert found["cross_entropy"] == ks.cross_entropy.values[0] and found["projections"] == ks.projections.values[0]
    assert len(priced_otherwise(REGISTRY["torchtitan"], MODEL, p)) == len(found)


def test_a_megatron_lever_runs_as_megatron_runs_it():
    """A torchtitan plan of gpt-oss (no quick-GEGLU prologue, torchtitan's loss and projections) under a
    Megatron-LM lever is scored with Megatron-LM's code facts: the prologue (runs_act_prologue: biased quick-GEGLU
    experts), its loss and projections; a lever of no framework leaves the plan as it is."""
    model = loading.load_model_spec("gpt-oss-120b").to_model()
    ks = REGISTRY["torchtitan"].knobs_for(plan())
    titan = plan(ep=8, moe_act_prologue=False, cross_entropy=ks.cross_entropy.values[0],
                 projections=ks.projections.values[0], rope_fusion=True)
    lever = next(lv for lv in LEVERS if lv.framework == "megatron")
    machine = Machine.of(cluster())
    runs = as_framework_runs(lever, titan, model, machine)
    assert runs.moe_act_prologue and runs.cross_entropy == "vocab_parallel_fused" and runs.projections == "fused"
    assert not runs.rope_fusion  # Megatron-LM applies YaRN's RoPE unfused without MLA (runs_rope_fused)
    assert priced_otherwise(REGISTRY["megatron"], model, runs, machine) == []
    plain = next(lv for lv in LEVERS if not lv.framework)
    assert as_framework_runs(plain, titan, model, machine) is titan


@pytest.mark.parametrize("name", ["megatron", "deepspeed", "torchtitan"])
def test_readme_notes_each_setting_but_the_buckets(name):
    """emit's README says how to re-score each setting scored_otherwise finds, but the reduce buckets (their own
    note, which says what memory they hold)."""
    class Job:  # what otherwise_notes reads of an emit Job
        plan, cm_model, machine = plan(rope_fusion=False, fused_elementwise=True), MODEL, None

    found = [o for o in scored_otherwise(REGISTRY[name], MODEL, Job.plan) if o.field != "grad_bucket_elements"]
    notes = otherwise_notes(Job, [name])
    assert len(notes) == len(found)
    assert all(n.startswith(f"{REGISTRY[name].title}: the prediction above assumes ") and "re-score" in n
               for n in notes)


def test_a_framework_lever_is_judged_against_the_plan_as_that_framework_runs_it(capsys):
    """A plan scored with another stack's facts (eager loss, no async TP reduction, DeepSpeed's buckets, RoPE
    unfused): Megatron-LM's block recompute lever runs as Megatron-LM runs it, so its speed-up is against the
    plan as Megatron-LM runs it (baseline_step_time_s), not the plan as scored; against that, block recompute of
    one layer once came out 1.34x where no recompute at all gave 1.31x. Replaying a layer is never faster than
    replaying none, so now it is not ranked above it."""
    import json

    from planner.commands.main import main

    plan = ["estimate", "llama2-7b", "dgx-h100", "--gpus", "16", "--gbs", "64", "--tp", "2", "--zero", "1",
            "--recompute", "full", "--json"]
    assert main([*plan, "--grad-bucket-elements", "500000000", "--no-rope-fusion", "--cross-entropy", "eager",
                 "--no-tp-async-grad"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main([*plan, "--no-rope-fusion"]) == 0  # how Megatron-LM runs it (unfused RoPE on request)
    as_megatron = json.loads(capsys.readouterr().out)["step_time_s"]
    levers = {lv["lever"].split(" (")[0]: lv for lv in out["diagnosis"]["levers"]}
    block, none = levers["full recompute of other layer counts"], levers["no recompute"]
    assert none["baseline_step_time_s"] == out["step_time_s"] != as_megatron
    assert block["baseline_step_time_s"] == pytest.approx(as_megatron, rel=1e-12)
    assert block["per_sample_speedup"] < none["per_sample_speedup"]
    assert block["per_sample_speedup"] == pytest.approx(block["baseline_step_time_s"] / block["step_time_s"])
    assert "as Megatron-LM runs it" in block["caveat"]


def test_the_tp_reduction_is_moot_under_the_tp_overlap():
    """With the TP overlap the backward's collectives are split beside the GEMMs (stage.layer_tp_comm_seconds) and
    tp_async_grad is not read: a plan with it off is Megatron-LM's as scored there, not without the overlap."""
    overlapped = plan(tp=4, dp=2, sequence_parallel=True, tp_comm_overlap=True, tp_async_grad=False)
    seconds = {async_: step.estimate(MODEL, cluster(), replace(overlapped, tp_async_grad=async_)).step_time_seconds
               for async_ in (False, True)}
    assert seconds[False] == seconds[True]
    assert "TP input-gradient reduction async" not in labels("megatron", overlapped)
    assert "TP input-gradient reduction async" in labels("megatron", replace(overlapped, tp_comm_overlap=False))


def test_rope_fusion_is_moot_without_rope():
    """compute.unfused_rope_bytes is nothing for a model without RoPE (GPT-3's learned positions), so DeepSpeed,
    whose model code applies RoPE eagerly, runs such a plan as scored either way."""
    learned = replace(MODEL, position_embedding="learned")
    assert step.estimate(learned, cluster(), plan()).step_time_seconds == \
        step.estimate(learned, cluster(), plan(rope_fusion=False)).step_time_seconds
    assert "RoPE fused" not in labels("deepspeed", plan(), learned)
    assert "RoPE fused" in labels("deepspeed", plan(), ROPE)
