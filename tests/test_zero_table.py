"""ZeRO paper (Rajbhandari et al., SC20, arXiv:1910.02054) Table 1 / Figure 1: per-GPU model-state
memory of a 7.5B-parameter model with Nd = 64 under mixed-precision Adam (K = 12):
baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB (GB = 1e9 bytes)."""
import pytest

from costmodel.memory import sharded_state_bytes, state_bytes_per_param

PAPER_GB = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_table1_7p5b_nd64(stage):
    per_param = state_bytes_per_param("fp16", "fp16")
    s = sharded_state_bytes(7.5e9, per_param, stage, 64)
    total_gb = (s.parameters + s.gradients + s.optimizer_states) / 1e9
    # The paper prints one decimal: exact to its rounding (<= 1%; 1.875 prints as 1.9).
    assert total_gb == pytest.approx(PAPER_GB[stage], rel=0.01, abs=0.05)


def test_k_is_twelve_and_states_are_sixteen_bytes():
    per_param = state_bytes_per_param("bf16", "bf16")
    assert (per_param.parameters, per_param.gradients, per_param.optimizer_states) == (2, 2, 12)


def test_fp32_training_also_sixteen_bytes():
    # fp32 weights 4 + fp32 grads 4 + Adam m, v 8 (no separate master copy).
    p = state_bytes_per_param("fp32", "fp32")
    assert p.parameters + p.gradients + p.optimizer_states == 16
