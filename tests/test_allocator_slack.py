"""The caching allocator's slack (Efficiency.memory_fragmentation_fraction) is a fraction of the bytes a
step allocates and frees (step.step_allocated_bytes), not of the model states kept from start to end.
Expected values are hand arithmetic on a stage with given parts (pytorch/devlogs 2026-06-01: fragmentation
comes from freed blocks re-split for other sizes; memory allocated once and kept makes none)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel import step
from costmodel import types as cm
from costmodel.stage import StageCost

GIB = 2**30
MODEL = cm.Model(name="t", num_layers=4, hidden_size=1024, num_attention_heads=8, ffn_hidden_size=4096,
                 vocab_size=32000, seq_length=2048)
# One stage of 1e9 parameters (no embedding: layer_params = params) holding 10 GiB of activations.
STAGE = StageCost(4, 0.0, 0.0, 0.0, 0.0, 1e9, 10 * GIB, layer_params=1e9)
EFF = replace(cm.Efficiency(), memory_overhead_bytes=2 * GIB, memory_fragmentation_fraction=0.1)


def test_kept_model_states_add_no_slack():
    """ZeRO-1 over dp 8 in bf16 with fp32 gradients reduced in buckets (Megatron's buffers): the overhead
    is the fixed 2 GiB plus 10% of the 10 GiB of activations, whatever the states weigh."""
    plan = cm.Plan(dp=8, zero_stage=1, precision="bf16", grad_dtype="fp32", global_batch_size=8)
    parts = step.memory_breakdown(MODEL, plan, STAGE, EFF, "hopper")
    assert parts["parameters"] == pytest.approx(2e9)  # 2 B per weight, kept
    assert parts["overhead"] == pytest.approx(2 * GIB + 0.1 * 10 * GIB)


def test_fsdp_under_a_pipeline_allocates_its_unsharded_weights_and_gradients_each_step():
    """grad_sync chunk_end (FSDP2 under torch.distributed.pipelining): the gathered weights and the
    accumulated unsharded gradients are allocated and freed every step, so they carry slack too."""
    plan = cm.Plan(dp=8, zero_stage=1, precision="bf16", grad_dtype="fp32", global_batch_size=8,
                   grad_sync="chunk_end")
    parts = step.memory_breakdown(MODEL, plan, STAGE, EFF, "hopper")
    per_step = parts["activations"] + parts["parameters"] + parts["gradients"]
    assert parts["gradients"] > 4e9  # the unsharded fp32 accumulation (4 B) and the shard beside it
    assert parts["overhead"] == pytest.approx(2 * GIB + 0.1 * per_step)


def test_zero3_gathers_carry_slack_but_its_shards_do_not():
    plan = cm.Plan(dp=8, zero_stage=3, precision="bf16", grad_dtype="fp32", global_batch_size=8)
    parts = step.memory_breakdown(MODEL, plan, STAGE, EFF, "hopper")
    assert parts["zero3_gather_buffers"] > 0
    assert parts["overhead"] == pytest.approx(2 * GIB + 0.1 * (10 * GIB + parts["zero3_gather_buffers"]))


def test_zero3_gathers_a_routed_experts_weights_over_its_expert_data_parallel_ranks():
    """Experts are sharded over the expert-DP ranks (tp x cp x dp / (ep x etp)), not over dp: a stage of
    1e9 layer weights of which 0.8e9 are local experts, ZeRO-3 over dp 4 with ep 4 (expert DP 1), bf16
    (2 B a gathered weight), one layer in flight and the next prefetched of the 4: the dense 0.2e9 gather
    their 3/4 non-local, 2/4 x 0.2e9 x 2 x 3/4 = 0.15e9 bytes, the experts nothing (each rank holds its own
    whole). At ep 2 (expert DP 2) the experts add half of theirs: 2/4 x 0.8e9 x 2 x 1/2 = 0.4e9."""
    moe = replace(STAGE, expert_params=0.8e9)
    plan = cm.Plan(dp=4, ep=4, zero_stage=3, precision="bf16", global_batch_size=8)
    assert step.zero3_gather_bytes(MODEL, plan, moe) == pytest.approx(0.15e9)
    assert step.zero3_gather_bytes(MODEL, replace(plan, ep=2), moe) == pytest.approx(0.15e9 + 0.4e9)
    assert step.zero3_gather_bytes(MODEL, plan, STAGE) == pytest.approx(2 / 4 * 1e9 * 2 * 3 / 4)  # dense
