"""DeepSpeed's gradient reduce buckets (Plan.grad_bucket_elements): what they hold, who holds them, and what
emit does with a plan scored without them.

Sources (deepspeedai/DeepSpeed edaa7221): runtime/zero/stage_1_and_2.py setup_buckets allocates one buffer of
reduce_bucket_size elements in the weights' dtype, and a second under overlap_comm; runtime/zero/stage3.py one
in the communication dtype; runtime/zero/config.py's reduce_bucket_size default is 5e8 elements.
"""
import json

import pytest
from emit_support import estimate, tiny

from costmodel import types as cm
from costmodel.dataparallel import staging_bucket_bytes
from planner.commands.main import main
from planner.emit import build_job, render
from planner.errors import PlannerError
from planner.frameworks import REGISTRY
from planner.frameworks.base import priced_otherwise
from planner.frameworks.deepspeed import grad_bucket_elements


def plan(**kw) -> cm.Plan:
    return cm.Plan(**{"tp": 1, "pp": 1, "dp": 8, "micro_batch_size": 1, "global_batch_size": 8, **kw})


@pytest.mark.parametrize("kw, expected_bytes", [
    ({"zero_stage": 2, "overlap_dp_comm": True}, 2 * 500_000_000 * 2),  # two bf16 buckets under overlap_comm
    ({"zero_stage": 1, "overlap_dp_comm": False}, 1 * 500_000_000 * 2),  # one without
    ({"zero_stage": 1, "overlap_dp_comm": True, "precision": "fp32"}, 2 * 500_000_000 * 4),  # fp32 weights
    ({"zero_stage": 1, "overlap_dp_comm": True, "grad_dtype": "fp32"}, 2 * 500_000_000 * 2),  # still bf16 weights
    ({"zero_stage": 0, "overlap_dp_comm": True}, 0),  # the engine reduces gradients where they are
])
def test_zero12_buckets_by_hand(kw, expected_bytes):
    assert staging_bucket_bytes(plan(grad_bucket_elements=500_000_000, **kw)) == expected_bytes


def test_zero3_bucket_is_one_in_the_communication_dtype():
    h2 = 8192 * 8192  # ZeRO-3's reduce_bucket_size as the launch files write it (HF 'auto': h^2)
    assert staging_bucket_bytes(plan(zero_stage=3, grad_bucket_elements=h2)) == h2 * 2
    assert staging_bucket_bytes(plan(zero_stage=3, grad_bucket_elements=h2, grad_dtype="fp32")) == h2 * 4
    model = cm.Model("m", 80, 8192, 64, 128256, 8192)
    assert [grad_bucket_elements(model, z) for z in (0, 1, 2, 3)] == [0, 500_000_000, 500_000_000, h2]


def run_json(capsys, *argv) -> dict:
    assert main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))


def test_estimate_counts_the_buckets_with_the_gradients(capsys):
    base = ("estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--zero", "2", "--json")
    without = run_json(capsys, *base)
    with_buckets = run_json(capsys, *base, "--grad-bucket-elements", "500000000")
    grads = [d["memory_breakdown_bytes"]["gradients"] for d in (without, with_buckets)]
    assert grads[1] - grads[0] == pytest.approx(2 * 500_000_000 * 2)  # overlap on by default: two bf16 buckets
    assert with_buckets["plan"]["grad_bucket_elements"] == 500_000_000


def test_suggest_scores_deepspeed_plans_with_its_buckets(capsys):
    out = run_json(capsys, "suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--framework",
                   "deepspeed", "--fix", "zero=2", "--fix", "tp=1", "--fix", "pp=1", "--top", "1", "--json")
    best = out["plans"][0]
    assert best["plan"]["grad_bucket_elements"] == 500_000_000
    # ZeRO-2 shards the bf16 gradients over dp 8; the buckets are whole on every GPU: two under the overlap, one
    # without (here the best: no recompute fits in 72 GiB only without the overlap's second bucket)
    buckets = 2 if best["plan"]["overlap_dp_comm"] else 1
    expected = best["parameters"] * 2 / 8 + buckets * 500_000_000 * 2
    assert best["memory_breakdown_bytes"]["gradients"] == pytest.approx(expected, rel=1e-9)


def test_a_plan_scored_without_them_is_not_deepspeed_as_scored():
    model = cm.Model("m", 4, 1024, 16, 32000, 2048)
    p = plan(zero_stage=1, rope_fusion=False)  # DeepSpeed's model code applies RoPE eagerly
    assert priced_otherwise(REGISTRY["deepspeed"], model, p) == ["gradient reduce bucket elements 0"]
    megatron = plan(zero_stage=1)
    assert priced_otherwise(REGISTRY["megatron"], model, megatron) == []
    assert priced_otherwise(REGISTRY["megatron"], model, plan(zero_stage=1, grad_bucket_elements=500_000_000))


def deepspeed_job(headroom_gib: float):
    """A ZeRO-1 estimate (overlap on: two bf16 buckets, 1.86 GiB) scored without the buckets, `headroom_gib`
    under an 80 GiB GPU."""
    est = estimate(tiny(), dp=8, zero_stage=1, global_batch_size=8)
    est.update(memory_capacity_bytes=80 * 2**30, memory_per_gpu_bytes=(80 - headroom_gib) * 2**30, fits=True)
    return build_job(tiny(), est)


def test_emit_refuses_where_the_buckets_take_the_plan_over_the_gpu():
    with pytest.raises(PlannerError, match=r"would not fit .*1\.86 GiB.*--grad-bucket-elements 500000000"):
        render(deepspeed_job(1.0), "deepspeed")


def test_emit_writes_the_plan_with_room_and_says_how_much_more_it_holds():
    readme = render(deepspeed_job(3.0), "deepspeed")["README.txt"][0]
    assert "1.86 GiB per GPU, which the memory above does not count" in " ".join(readme.split())
    # Megatron reduces in its gradient buffer: its README has nothing to add
    assert "reduce_bucket_size" not in render(deepspeed_job(3.0), "megatron")["README.txt"][0]


def test_buckets_at_zero_0_are_refused(capsys):
    """ZeRO 0 reduces gradients where they are; a bucket given there was echoed and priced as nothing."""
    code = main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--zero", "0",
                 "--grad-bucket-elements", "500000000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "grad_bucket_elements" in err and "needs ZeRO 1-3" in err


def test_a_zero_lever_moves_the_buckets_and_sync_the_stage_takes():
    """diagnose's ZeRO levers changed the stage alone: a DeepSpeed ZeRO-3 plan's h^2 bucket went to ZeRO 1 (where
    DeepSpeed holds two of 5e8), and a ZeRO-0 plan's per-micro-batch sync to ZeRO 2, which the rules refuse."""
    from planner.analysis.diagnose import _at_zero

    model = cm.Model("m", 80, 8192, 64, 128256, 8192)
    three = plan(zero_stage=3, grad_bucket_elements=8192 * 8192)
    assert _at_zero(three, model, 1).grad_bucket_elements == 500_000_000
    zero = plan(zero_stage=0, grad_sync="microbatch")
    assert (_at_zero(zero, model, 2).grad_sync, _at_zero(zero, model, 2).grad_bucket_elements) == ("buckets", 0)
