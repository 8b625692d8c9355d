"""What a Python caller (not the command line) is told when it hands planner's functions something the CLI's
parser would have stopped: one PlannerError naming the field, never a NaN or negative step, a deep
ZeroDivisionError or a hang (an audit of 2026-12-07 built each case below)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from costmodel import types as cm
from costmodel import wellformed
from planner.analysis import whatif
from planner.analysis.compare import compare
from planner.analysis.report import estimate_report
from planner.errors import PlannerError
from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec
from planner.inputs.specs import PlanSpec
from planner.search import suggest
from planner.search.report import suggest_report
from planner.search.space import SearchSpec

PLAN = PlanSpec(tp=8, global_batch_size=64, sequence_parallel=True)


@pytest.fixture(scope="module")
def h100x8():
    return build_cluster(load_cluster_spec("dgx-h100"), 8)


@pytest.fixture(scope="module")
def llama8b():
    return load_model_spec("llama3-8b")


@pytest.mark.parametrize("change, says", [
    ({"nvlink_bandwidth_bytes_per_second": math.nan}, "cluster.nvlink_bandwidth_bytes_per_second must be a finite"),
    ({"nvlink_latency_seconds": -1.0}, "cluster.nvlink_latency_seconds must be a finite number, not negative"),
    ({"usd_per_gpu_hour": -5.0}, "cluster.usd_per_gpu_hour must be a finite number, not negative"),
    ({"network_bandwidth_bytes_per_second": 0.0}, "cluster.network_bandwidth_bytes_per_second must be positive"),
    ({"matmul_efficiency_scale": 0.0}, "cluster.matmul_efficiency_scale must be positive"),
    ({"num_gpus": True}, "cluster.num_gpus must be a number"),
    ({"num_gpus": 8.0}, "cluster.num_gpus must be an integer"),
])
def test_a_cluster_built_in_python_is_checked_before_it_is_priced(h100x8, llama8b, change, says):
    cluster = dataclasses.replace(h100x8, **change)
    with pytest.raises(PlannerError, match=says):
        estimate_report(llama8b, cluster, PLAN)
    with pytest.raises(PlannerError, match=says):
        SearchSpec(llama8b.to_model(), cluster, 64)


@pytest.mark.parametrize("change, says", [
    ({"hbm_bandwidth_bytes_per_second": 0.0}, "cluster.gpu.hbm_bandwidth_bytes_per_second must be positive"),
    ({"tensor_clock_fraction": 0.0}, "cluster.gpu.tensor_clock_fraction must be positive"),
    ({"tensor_clock_fraction": 1.5}, "cluster.gpu.tensor_clock_fraction must be at most 1"),
    ({"dense_flops_per_second": {"bf16": 0.0}}, "needs a bf16 or fp16 peak, and every peak positive"),
    ({"dense_flops_per_second": {"bf16": math.inf}}, "dense_flops_per_second\\[bf16\\] must be a finite"),
    ({"generation": "hopper "}, "cluster.gpu.generation must be one of"),
])
def test_a_gpu_built_in_python_is_checked_too(h100x8, llama8b, change, says):
    cluster = dataclasses.replace(h100x8, gpu=dataclasses.replace(h100x8.gpu, **change))
    with pytest.raises(PlannerError, match=says):
        estimate_report(llama8b, cluster, PLAN)


@pytest.mark.parametrize("count", [True, 8.0, 2.5, math.nan, 10**12, 0])
def test_build_cluster_takes_a_whole_gpu_count_within_the_limits(count):
    # 10**18 + 9 GPUs used to hang suggest in trial division; a bool gave a 1-GPU job printed as "true"
    with pytest.raises(PlannerError, match="must be a whole number from 1 to 1048576"):
        build_cluster(load_cluster_spec("dgx-h100"), count)


def test_a_model_built_in_python_is_checked():
    base = cm.Model("m", num_layers=2, hidden_size=64, num_attention_heads=4, vocab_size=128, seq_length=128)
    assert wellformed.model_field_violations(base) == []
    assert wellformed.model_field_violations(dataclasses.replace(base, seq_length=-8192)) == [
        "model.seq_length must be a finite number, not negative (got -8192)"]  # was a step of -0.22 s
    assert wellformed.model_field_violations(dataclasses.replace(base, vocab_size=0)) == [
        "model.vocab_size must be positive (got 0)"]  # was a ZeroDivisionError
    moe = cm.Moe(num_experts=4, experts_per_token=8, ffn_hidden_size=32)
    assert wellformed.model_field_violations(dataclasses.replace(base, moe=moe)) == [
        "model.moe.experts_per_token (8) must be at most num_experts (4)"]


def test_a_plan_built_in_python_gets_no_bool_for_a_count_and_only_known_names(h100x8, llama8b):
    from planner.inputs.plans import check_legal

    model = llama8b.to_model()
    plan = cm.Plan(tp=8, pp=1, dp=1, micro_batch_size=1, global_batch_size=64, sequence_parallel=True)
    check_legal(model, h100x8, plan)  # legal as given
    with pytest.raises(PlannerError, match="plan.micro_batch_size must be a number"):
        check_legal(model, h100x8, dataclasses.replace(plan, micro_batch_size=True))
    with pytest.raises(PlannerError, match="plan.sequence_parallel must be true or false"):
        check_legal(model, h100x8, dataclasses.replace(plan, sequence_parallel="yes"))
    with pytest.raises(PlannerError, match="zero3_gather_unit must be one of layer, tensor"):
        check_legal(model, h100x8, dataclasses.replace(plan, zero3_gather_unit="x"))
    with pytest.raises(PlannerError, match="grad_reduce must be one of reduce_scatter, allreduce"):
        check_legal(model, h100x8, dataclasses.replace(plan, grad_reduce="x"))


@pytest.mark.parametrize("change, says", [
    ({"frameworks": ("foo",)}, "frameworks: unknown 'foo'"),
    ({"frameworks": "megatron"}, "frameworks must be a non-empty tuple"),  # was KeyError 'm'
    ({"precisions": ()}, "precisions must be a non-empty tuple"),  # was IndexError
    ({"fixed": {"bogus": 1}}, "fixed: unknown field 'bogus'"),
    ({"numerics": {"bogus": 1}}, "numerics: unknown field 'bogus'"),  # was ignored
    ({"global_batch_size": True}, "global_batch_size must be a whole number"),
    ({"global_batch_size": 64.0}, "global_batch_size must be a whole number"),
])
def test_a_search_spec_built_in_python_is_checked(h100x8, llama8b, change, says):
    with pytest.raises(PlannerError, match=says):
        SearchSpec(**{"model": llama8b.to_model(), "cluster": h100x8, "global_batch_size": 64, **change})


def test_search_options_and_what_ifs_built_in_python_are_checked(h100x8, llama8b):
    spec = SearchSpec(llama8b.to_model(), h100x8, 64)
    with pytest.raises(PlannerError, match="--top must be a whole number >= 1"):
        suggest.run(spec, suggest.Options(top_k=2.5), cm.Efficiency())  # was a TypeError in bounds.py
    with pytest.raises(PlannerError, match="--what-if network=0.0: must be between 0.001 and 1000"):
        whatif.WhatIf(scales={"network": 0.0})  # was a ZeroDivisionError in suggest
    with pytest.raises(PlannerError, match="--what-if nvlink=nan: expected a finite number"):
        whatif.WhatIf(scales={"nvlink": math.nan})
    with pytest.raises(PlannerError, match="--what-if bogus: unknown"):
        whatif.WhatIf(scales={"bogus": 2.0})
    with pytest.raises(PlannerError, match="routing imbalance applies only to mixture-of-experts models"):
        suggest_report(llama8b, spec, suggest.Options(), whatif.WhatIf(imbalance=1.3))  # was ignored


def test_suggest_report_refuses_a_model_spec_that_is_not_the_searched_model(h100x8, llama8b):
    # the 70B spec scored the 8B search's plan: a "best" plan needing 376 GiB per GPU
    spec = SearchSpec(llama8b.to_model(), h100x8, 64)
    with pytest.raises(PlannerError, match="the model spec 'llama3-70b' is not the SearchSpec's model 'llama3-8b'"):
        suggest_report(load_model_spec("llama3-70b"), spec, suggest.Options())


def test_compare_checks_its_two_objects_as_a_files_would_be(h100x8, llama8b):
    a = estimate_report(llama8b, h100x8, PLAN)
    with pytest.raises(PlannerError, match="B: expected one estimate object"):
        compare(a, {})  # was KeyError 'plan'
    with pytest.raises(PlannerError, match="B"):
        compare(a, {**a, "step_time_s": math.nan})  # answered "B faster"
    assert compare(a, a)["faster"] == "tie"


def test_estimate_report_checks_its_threshold_and_its_what_if_list(h100x8, llama8b):
    with pytest.raises(PlannerError, match="comm_threshold must be a share of the step from 0 to 1"):
        estimate_report(llama8b, h100x8, PLAN, comm_threshold=math.nan)
    with pytest.raises(PlannerError, match="what_if: a list of KEY=VALUE strings"):
        estimate_report(llama8b, h100x8, PLAN, what_if="network=0.5")  # was read letter by letter


def test_emit_files_refuses_an_empty_folder_a_string_force_and_zero_gpus_per_node(h100x8, llama8b, tmp_path):
    from planner.emit import EmitOptions, emit_files

    est = estimate_report(llama8b, h100x8, PLAN)
    with pytest.raises(PlannerError, match="the output folder is empty"):
        emit_files(llama8b, est, "megatron", "")  # wrote launch.sh into the current folder
    with pytest.raises(PlannerError, match="force must be true or false"):
        emit_files(llama8b, est, "megatron", tmp_path, force="no")
    with pytest.raises(PlannerError, match="gpus_per_node must be a positive integer"):
        emit_files(llama8b, est, "megatron", tmp_path, options=EmitOptions(gpus_per_node=0))  # fell back to 8
    assert not any(tmp_path.iterdir())
