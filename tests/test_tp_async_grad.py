"""The backward's TP collectives beside the GEMMs (Plan.tp_async_grad, stage.backward_tp_comm_seconds), and
the per-layer times it changes against Korthikanti et al. 2022 Table 4 (validation/layer_times.yaml)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from test_pipeline_buffers import small_space

from costmodel import stage
from costmodel import types as cm
from costmodel.layer import LayerTimes
from planner.validation import layers

SHARE = cm.Efficiency().collective_sm_share
AR = 1e-3  # one all-reduce of the micro-batch's activations, seconds
LONG = LayerTimes(0.0, 0.0, 0.0, 0.0, gemm_forward_seconds=10e-3)  # GEMMs that cover every collective
SHORT = replace(LONG, gemm_forward_seconds=0.5e-3)  # GEMMs shorter than one all-reduce


def backward(lt: LayerTimes, **plan_fields) -> float:
    plan = cm.Plan(tp=8, pp=1, dp=1, micro_batch_size=1, global_batch_size=1, **plan_fields)
    return stage.backward_tp_comm_seconds(plan, lt, AR, cm.Efficiency(), 2)


def test_without_sequence_parallel_the_input_gradient_all_reduce_hides_behind_the_weight_gradient():
    """Two exchanges (attention, MLP): without SP the column-parallel linears' input gradients are
    all-reduced, 2 ms in all. Beside 10 ms of weight-gradient GEMMs they cost the SM share of the compute
    (2 ms x share); beside 0.5 ms, the 1.5 ms that outlast it; waited for, all 2 ms."""
    assert backward(LONG) == pytest.approx(2 * AR * SHARE, rel=1e-12)
    assert backward(SHORT) == pytest.approx(2 * AR - 0.5e-3, rel=1e-12)
    assert backward(LONG, tp_async_grad=False) == pytest.approx(2 * AR, rel=1e-12)


def test_with_sequence_parallel_the_output_gradient_gather_shows_and_the_rest_hides():
    """With SP each exchange's backward is an all-gather of the row-parallel output gradient (its GEMMs
    wait: shows), a reduce-scatter of the column-parallel input gradient (beside the weight gradient) and,
    for Megatron's shard-saved inputs, their all-gather again (beside the input gradient): each half an
    all-reduce, so 1 ms shows, and 1 ms + 1 ms hide at the SM share. DTensor keeps the inputs gathered
    (sp_gathered): no re-gather. Waited for: 1 + 1 (+ 1) ms."""
    assert backward(LONG, sequence_parallel=True) == pytest.approx(AR + 2 * AR * SHARE, rel=1e-12)
    assert backward(LONG, sequence_parallel=True, sp_gathered=True) == pytest.approx(AR + AR * SHARE, rel=1e-12)
    assert backward(LONG, sequence_parallel=True, tp_async_grad=False) == pytest.approx(3 * AR, rel=1e-12)
    assert backward(LONG, sequence_parallel=True, sp_gathered=True, tp_async_grad=False) == \
        pytest.approx(2 * AR, rel=1e-12)


def test_async_never_costs_more_than_waiting():
    for lt in (LONG, SHORT):
        for sp in (False, True):
            assert backward(lt, sequence_parallel=sp) <= backward(lt, sequence_parallel=sp, tp_async_grad=False)


def test_search_runs_the_backward_collectives_beside_the_gemms_for_megatron_only():
    """Megatron-core and Transformer Engine reduce the input gradient asynchronously; Megatron-DeepSpeed
    under DeepSpeed turns it off and DTensor's TP waits (frameworks/*.py); without TP it is moot (True)."""
    for fws, wanted in ((("megatron",), {True}), (("torchtitan",), {False}), (("deepspeed",), {False})):
        space = small_space(fws)
        assert {k.tpa for lay, ks in space.knobs.items() if lay.tp > 1 for k in ks} == wanted, fws
        assert {k.tpa for lay, ks in space.knobs.items() if lay.tp == 1 for k in ks} <= {True}, fws


# Ratchets on Table 4 (never raised): the 22B layer at the shipped constants, each variant's total
# (forward + backward) error reached +5.4% (SP) to +10.2% (selective recompute without SP); with every
# backward collective shown whole (before Plan.tp_async_grad) +8.9% to +17.5%.
LAYER_ERROR_BOUND = 0.103
# What sequence parallelism saves per layer, baseline minus SP: 0.6 ms published; 1.37 ms predicted
# (2.24 ms before: the SP backward's all-gather and reduce-scatter shown whole against the all-reduce
# shown whole, and the replicated norms and residuals that SP splits).
SP_SAVING_BOUND_MS = 1.4


def test_table4_layer_times():
    rows = {r["name"]: r for r in layers.compare()}
    print({name: f"{r['error']:+.1%}" for name, r in rows.items()})
    assert set(rows) == {"baseline", "sequence parallel", "full recompute", "selective recompute",
                         "selective + sequence parallel"}
    assert all(abs(r["error"]) <= LAYER_ERROR_BOUND for r in rows.values())

    def total(r: dict, side: str = "predicted_") -> float:
        return r[f"{side}forward_ms"] + r[f"{side}backward_ms"]

    saving = total(rows["baseline"]) - total(rows["sequence parallel"])
    published = total(rows["baseline"], "") - total(rows["sequence parallel"], "")
    assert published == pytest.approx(0.6)
    assert 0 < saving <= SP_SAVING_BOUND_MS
    # the recompute overheads keep their order: full replays the forward, selective only attention's core
    assert total(rows["full recompute"]) > total(rows["selective recompute"]) > total(rows["baseline"])
