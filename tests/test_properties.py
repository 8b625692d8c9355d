"""Invariants of the cost model over random models, clusters and plans (hypothesis)."""
from dataclasses import replace

from conftest import a100_80gb
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.pipeline import bubble_fraction
from costmodel.rules import plan_violations
from costmodel.step import estimate
from costmodel.types import Cluster, Model, Plan


@st.composite
def scenario(draw):
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    heads = tp * draw(st.sampled_from([1, 2, 4]))
    head_dim = draw(st.sampled_from([64, 128]))
    pp = draw(st.sampled_from([1, 2, 4]))
    vpp = draw(st.sampled_from([1, 2])) if pp > 1 else 1
    layers = pp * vpp * draw(st.integers(1, 4))
    model = Model("m", layers, heads * head_dim, heads, draw(st.sampled_from([32000, 51200])),
                  draw(st.sampled_from([512, 2048])), mlp=draw(st.sampled_from(["gelu", "swiglu"])),
                  dropout=draw(st.booleans()))
    dp = draw(st.sampled_from([1, 2, 4, 8]))
    mbs = draw(st.sampled_from([1, 2]))
    plan = Plan(tp=tp, pp=pp, dp=dp, vpp=vpp, micro_batch_size=mbs,
                global_batch_size=mbs * dp * draw(st.sampled_from([1, 4, 16])),
                zero_stage=draw(st.integers(0, 3)), recompute=draw(st.sampled_from(["none", "selective", "full"])),
                sequence_parallel=tp > 1 and draw(st.booleans()), precision=draw(st.sampled_from(["bf16", "fp16", "fp32"])),
                overlap_dp_comm=draw(st.booleans()), flash_attention=draw(st.booleans()))
    return model, plan


def cluster_for(plan: Plan, price: float = 2.0) -> Cluster:
    return Cluster("c", a100_80gb(), plan.num_gpus, 8, 8, 300e9, 25e9, True, price)


# Dense A100 peaks (NVIDIA A100 datasheet, conftest.a100_80gb): bf16/fp16 312 TFLOP/s; fp32 training runs
# its matmuls on the TF32 tensor cores, 156 TFLOP/s.
A100_PEAK = {"bf16": 312e12, "fp16": 312e12, "fp32": 156e12}


def palm_model_flops(model: Model, global_batch: int) -> float:
    """Model FLOPs of one step, Chowdhery et al. 2022 (PaLM) Appendix B: 6 N + 12 L h s per token, N the
    matmul weights (QKV, output projection, MLP matrices of width 4h, the vocabulary projection)."""
    h, s, L = model.hidden_size, model.seq_length, model.num_layers
    kv_width = model.kv_heads * (h // model.num_attention_heads)
    mlp_matrices = 3 if model.mlp == "swiglu" else 2
    n_layer = h * h + 2 * h * kv_width + h * h + mlp_matrices * h * 4 * h
    n = L * n_layer + h * model.vocab_size
    return (6 * n + 12 * L * h * s) * global_batch * s


@settings(max_examples=60, deadline=None)
@given(scenario())
def test_mfu_at_most_one_and_parts_match_the_plan(sc):
    model, plan = sc
    cluster = cluster_for(plan)
    assert plan_violations(model, cluster, plan) == []
    e = estimate(model, cluster, plan)
    t, step = e.time_breakdown_seconds, e.step_time_seconds
    assert 0 < e.mfu <= e.hfu <= 1
    assert abs(sum(t.values()) - step) < 1e-9 * step  # the JSON contract: parts sum to the step
    assert 0 <= e.bubble_fraction < 1
    # MFU and throughput by their definitions, from hand-counted FLOPs and the datasheet peak.
    tokens = plan.global_batch_size * model.seq_length
    assert e.mfu == pytest_approx(palm_model_flops(model, plan.global_batch_size)
                                  / (step * plan.num_gpus * A100_PEAK[plan.precision]))
    assert e.tokens_per_second == pytest_approx(tokens / step)
    # Each part shows exactly when the plan has what causes it.
    assert (t["tp_comm"] > 0) == (plan.tp > 1)
    assert (t["pp_bubble"] > 0) == (plan.pp > 1)
    if plan.pp == 1:
        assert t["pp_comm"] == 0
    elif plan.vpp == 1:  # plain 1F1B blocks on every exchange: nothing hides it
        assert t["pp_comm"] > 0
    assert (t["recompute"] > 0) == (plan.recompute != "none")
    assert (t["dp_comm_exposed"] == 0) or plan.dp > 1  # untied embeddings: no sync without data parallelism
    assert t["compute"] > 0 and t["optimizer"] > 0
    # Narayanan et al. 2021 Sec 2.2: the bubble is (p-1)/(v m) of the flush with equal stages; the step is
    # paced by the slowest stage, so with unequal ones it can only be smaller.
    m = plan.num_microbatches
    v = plan.vpp if m >= plan.pp else 1
    flush = t["compute"] + t["recompute"] + t["tp_comm"] + t["pp_comm"]
    assert t["pp_bubble"] <= (plan.pp - 1) / (v * m) * flush * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(scenario())
def test_more_dp_never_raises_zero3_memory(sc):
    model, plan = sc
    small = replace(plan, zero_stage=3, global_batch_size=plan.micro_batch_size * plan.dp * 16)
    big = replace(small, dp=plan.dp * 2)
    assert (estimate(model, cluster_for(big), big).memory_per_gpu_bytes
            <= estimate(model, cluster_for(small), small).memory_per_gpu_bytes + 1e-6)


@settings(max_examples=60, deadline=None)
@given(scenario())
def test_higher_zero_stage_never_raises_memory(sc):
    model, plan = sc
    mems = [estimate(model, cluster_for(plan), replace(plan, zero_stage=z)).memory_per_gpu_bytes for z in range(4)]
    assert all(a >= b - 1e-6 for a, b in zip(mems, mems[1:]))


@given(st.integers(1, 64), st.integers(1, 8), st.integers(1, 512))
def test_bubble_in_unit_interval_and_non_increasing_in_microbatches(pp, vpp, m):
    b = bubble_fraction(pp, vpp, m)
    assert 0 <= b < 1
    assert bubble_fraction(pp, vpp, m + 1) <= b


@settings(max_examples=30, deadline=None)
@given(scenario(), st.floats(0.1, 20.0))
def test_dollars_linear_in_price(sc, price):
    model, plan = sc
    one = estimate(model, cluster_for(plan, 1.0), plan)
    # dollars = step seconds / 3600 x GPUs x $ per GPU-hour
    assert one.usd_per_step == pytest_approx(one.step_time_seconds / 3600 * plan.num_gpus * 1.0)
    assert estimate(model, cluster_for(plan, price), plan).usd_per_step == pytest_approx(price * one.usd_per_step)


def pytest_approx(x):
    import pytest
    return pytest.approx(x, rel=1e-9)
