"""The seed article's worked example (shared/seed): 7B parameters, BF16 gradients, 8 GPUs of pure DP
at 25 GB/s effective: 14 GB x 2 x 7/8 = 24.5 GB through each GPU per sync, 24.5/25 = 0.98 s."""
import json
import subprocess
import sys

import pytest

from costmodel.comm import Link, ring_allreduce_seconds
from costmodel.dataparallel import dp_sync_seconds
from costmodel.types import Plan

LINK_25 = Link(25e9, 0.0)


def test_seed_allreduce_7b_bf16_is_about_one_second():
    grads = 7e9 * 2  # BF16 = 2 bytes
    assert ring_allreduce_seconds(grads, 8, LINK_25) == pytest.approx(24.5e9 / 25e9)  # 0.98 s


def test_fp32_gradients_double_it():
    assert ring_allreduce_seconds(7e9 * 4, 8, LINK_25) == pytest.approx(2 * 0.98)


def test_many_gpus_approach_two_full_copies():
    # (N-1)/N -> 1: the volume tends to "the model sent twice", 28 GB -> 1.12 s.
    assert ring_allreduce_seconds(7e9 * 2, 4096, LINK_25) == pytest.approx(28e9 / 25e9, rel=1e-3)


@pytest.mark.parametrize("gas", [1, 4, 16])
def test_gradient_accumulation_divides_syncs_per_sample(gas):
    plan = Plan(dp=8, micro_batch_size=1, global_batch_size=8 * gas, zero_stage=0, grad_dtype="bf16")
    per_step = dp_sync_seconds(7e9, plan, 1, LINK_25, LINK_25, plan.num_microbatches)
    assert per_step == pytest.approx(0.98)  # one sync per optimizer step, whatever gas is
    assert per_step / plan.global_batch_size == pytest.approx(0.98 / 8 / gas)


def test_seed_example_as_a_command():
    # The same scenario end to end with the shipped example files (Llama 2 7B: 6.74e9 parameters,
    # Touvron et al. 2023): 6.74e9 x 2 B x 2 x 7/8 / 25 GB/s = 0.9436 s.
    out = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", "examples/seed-7b.yaml", "examples/seed-8gpu-ib200.yaml",
         "--no-overlap", "--json"], capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    assert d["plan"]["dp"] == 8
    assert d["time_breakdown_s"]["dp_comm"] == pytest.approx(6.74e9 * 2 * 2 * 7 / 8 / 25e9, rel=0.01)
    fp32 = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", "examples/seed-7b.yaml", "examples/seed-8gpu-ib200.yaml",
         "--no-overlap", "--grad-dtype", "fp32", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(fp32.stdout)["time_breakdown_s"]["dp_comm"] == pytest.approx(2 * d["time_breakdown_s"]["dp_comm"])
