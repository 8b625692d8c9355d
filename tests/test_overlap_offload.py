"""Communication overlap with its SM cost, activation offload to host, and low-precision parameters:
hand arithmetic on the formulas, then the direction each knob moves a whole step."""
from dataclasses import replace

import pytest
from conftest import gpt, selene

from costmodel import memory, overlap, stage
from costmodel import types as cm
from costmodel.layer import layer_times
from costmodel.step import estimate

BASE = cm.Plan(tp=8, pp=2, dp=4, micro_batch_size=1, global_batch_size=64, sequence_parallel=True, zero_stage=1)


def test_hidden_transfer_costs_only_the_compute_slowdown():
    # 10 s of a collective beside compute that keeps 88% of its SMs: the compute falls 1.2 s behind.
    assert overlap.overlapped_cost_seconds(0.0, 10.0, 0.12) == pytest.approx(1.2)


def test_transfer_longer_than_its_window_costs_its_tail_only():
    # 5 s shows after the compute; the 1.2 s slowdown of the compute ends under the transfer.
    assert overlap.overlapped_cost_seconds(5.0, 10.0, 0.12) == pytest.approx(5.0)
    assert overlap.overlapped_cost_seconds(0.5, 10.0, 0.12) == pytest.approx(1.2)


def test_decomposed_collective():
    # 8 s in 4 chunks beside a 10 s GEMM: the first 2 s wait, 6 s hide at 10% of the SMs (0.6 s).
    assert overlap.decomposed_exposed_seconds(8.0, 10.0, 4, 0.1) == pytest.approx(2.6)
    # beside a 3 s GEMM: 2 s first chunk + 3 s past the GEMM (the 0.3 s slowdown ends under it)
    assert overlap.decomposed_exposed_seconds(8.0, 3.0, 4, 0.1) == pytest.approx(5.0)
    assert overlap.decomposed_exposed_seconds(0.0, 3.0, 4, 0.1) == 0.0


def test_tp_comm_overlap_hides_most_of_the_tp_exchanges():
    model, cluster = gpt(48, 6144, 48), selene(64)
    plain = estimate(model, cluster, BASE)
    hidden = estimate(model, cluster, replace(BASE, tp_comm_overlap=True))
    assert hidden.time_breakdown_seconds["tp_comm"] < 0.5 * plain.time_breakdown_seconds["tp_comm"]
    assert hidden.time_breakdown_seconds["compute"] == pytest.approx(plain.time_breakdown_seconds["compute"])
    assert hidden.step_time_seconds < plain.step_time_seconds


def test_layer_tp_comm_by_hand():
    # Forward GEMMs 1 s, all-reduce-sized exchange 0.1 s, tp 8, share 0.12: forward 0.2 s in 8 chunks
    # (0.025 s waits, 0.175 s hides, costing 0.021 s), backward the same beside 2 s of GEMMs.
    lt = layer_times(gpt(4, 1024, 8), 1, 8, True, True, a100_gpu(), "bf16", cm.Efficiency())
    lt = replace(lt, gemm_forward_seconds=1.0)
    plan = replace(BASE, tp_comm_overlap=True)
    eff = replace(cm.Efficiency(), collective_sm_share=0.12)  # the share is an argument here, not the shipped one
    per_direction = 0.025 + 0.12 * 0.175
    # a dense layer: 2 exchanges each way, none replayed (BASE recomputes nothing). Without the overlap, under
    # sequence parallel: the forward's 2 x 0.1 s, and in backward the output gradients' all-gathers (0.1 s)
    # shown, the input gradients' reduce-scatters (0.1 s) and the inputs' re-gathers (0.1 s) beside 1 s of
    # GEMMs at the SM share (tp_async_grad, Megatron's default); 0.2 + 0.3 s when the backward waits for each.
    assert stage.layer_tp_comm_seconds(plan, lt, 0.1, eff, 2, 0) == pytest.approx(2 * per_direction)
    assert stage.layer_tp_comm_seconds(BASE, lt, 0.1, eff, 2, 0) == pytest.approx(0.3 + 2 * 0.12 * 0.1)
    waiting = replace(BASE, tp_async_grad=False)
    assert stage.layer_tp_comm_seconds(waiting, lt, 0.1, eff, 2, 0) == pytest.approx(0.5)
    # full recompute replays both forward exchanges: 0.2 s more, and 1.5 x the forward's exposed share with overlap
    assert stage.layer_tp_comm_seconds(BASE, lt, 0.1, eff, 2, 2) == pytest.approx(0.5 + 2 * 0.12 * 0.1)
    assert stage.layer_tp_comm_seconds(plan, lt, 0.1, eff, 2, 2) == pytest.approx(3 * per_direction)


def a100_gpu() -> cm.Gpu:
    return selene(8).gpu


def test_offload_frees_all_but_one_layer_of_activations():
    model = gpt(48, 6144, 48)
    cluster = replace(selene(64), host_link_bytes_per_second=50e9)
    plan = replace(BASE, offload_layers=10)
    per_layer = memory.layer_activation_bytes(model, 1, 8, True, "none", True)
    inflight = memory.inflight_microbatches(2, 1, plan.num_microbatches, 0)  # first stage: pp in flight
    kept = stage.stage_activation_bytes(model, BASE, 24, 0) - stage.stage_activation_bytes(model, plan, 24, 0)
    assert kept == pytest.approx(inflight * 10 * per_layer - per_layer)
    assert estimate(model, cluster, plan).memory_per_gpu_bytes < estimate(model, cluster, BASE).memory_per_gpu_bytes


def test_offload_time_is_the_copy_the_layer_does_not_hide():
    model = gpt(48, 6144, 48)
    per_layer = memory.layer_activation_bytes(model, 1, 8, True, "none", True)
    plan = replace(BASE, offload_layers=3)
    kernels = stage.stage_kernels(model, selene(64), plan, cm.Efficiency())
    lt = kernels.layer
    slow = replace(selene(64), host_link_bytes_per_second=per_layer / (2 * lt.backward_seconds))  # copy = 2 x bwd
    copy = 2 * lt.backward_seconds
    want = 3 * ((copy - lt.forward_seconds) + (copy - lt.backward_seconds))
    assert stage.offload_seconds(model, slow, plan, kernels, ((0, 24),)) == pytest.approx(want)
    fast = replace(selene(64), host_link_bytes_per_second=per_layer / (0.5 * lt.forward_seconds))
    assert stage.offload_seconds(model, fast, plan, kernels, ((0, 24),)) == 0.0


def test_offload_needs_a_host_link():
    from costmodel.rules import cluster_violations
    assert any("host_link" in v for v in cluster_violations(selene(64), replace(BASE, offload_layers=2)))
    assert not cluster_violations(replace(selene(64), host_link_bytes_per_second=50e9), BASE)


def test_lowp_parameters_drop_the_16bit_weights():
    # MXFP8 (1 B + 1/32 B of E8M0 scale per element, two layouts): 2.0625 B of copies, instead of
    # 2 B of bf16 weights + those copies.
    kept = memory.state_bytes_per_param("mxfp8", "bf16", casts="step")
    lowp = memory.state_bytes_per_param("mxfp8", "bf16", casts="step", lowp_params=True)
    assert kept.parameters == pytest.approx(2 + 2 * (1 + 1 / 32))
    assert lowp.parameters == pytest.approx(2 * (1 + 1 / 32))
    assert memory.state_bytes_per_param("bf16", "bf16", lowp_params=True).parameters == 2.0


def _scored(model_name, cluster_name, gpus, flops_scale=1.0, **plan_fields):
    from dataclasses import replace as dc_replace

    from costmodel.step import estimate
    from costmodel.types import Efficiency
    from planner.inputs import loading, plans
    from planner.inputs.specs import PlanSpec

    seq = plan_fields.pop("seq_length", None)
    spec = loading.load_model_spec(model_name, seq)
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), gpus)
    gpu = dc_replace(cluster.gpu, dense_flops_per_second={k: v * flops_scale
                                                           for k, v in cluster.gpu.dense_flops_per_second.items()})
    plan = plans.build_plan(PlanSpec(**plan_fields), spec, gpus)
    return estimate(spec.to_model(), dc_replace(cluster, gpu=gpu), plan, Efficiency())


@pytest.mark.parametrize("case", [
    ("deepseek-v3", "dgx-h100", 128, dict(seq_length=8192, global_batch_size=16, precision="fp8", tp=8, cp=2,
                                          cp_comm="all_gather", ep=64, micro_batch_size=2, zero_stage=1,
                                          sequence_parallel=True, tp_comm_overlap=True, ep_overlap=True)),
    ("qwen3-30b-a3b", "dgx-h100", 64, dict(global_batch_size=16, precision="fp8", tp=4, ep=4, etp=4,
                                           sequence_parallel=True, tp_comm_overlap=True, ep_overlap=True,
                                           moe_cuda_graphs=True)),
    ("mpt-7b", "hgx-h200", 32, dict(global_batch_size=64, tp=8, zero_stage=3, recompute="full",
                                    sequence_parallel=True, tp_comm_overlap=True)),
], ids=["deepseek-v3", "qwen3-30b-a3b", "mpt-7b"])
def test_faster_compute_never_slows_a_step(case):
    """The DP sync runs on its own stream through a micro-batch's whole wall time, the TP and EP
    exchanges that compute does not hide included (step.dp_overlap_window_seconds). Its window was
    compute alone: with faster GEMMs the TP/EP exposure grew and the DP exposure grew again for the
    same lost cover, so 2x the dense peak made DeepSeek-V3's step 9% slower (a search audit)."""
    name, cluster, gpus, plan = case
    steps = [_scored(name, cluster, gpus, scale, **dict(plan)).step_time_seconds for scale in (1.0, 1.25, 2.0)]
    assert steps[1] <= steps[0] * (1 + 1e-12) and steps[2] <= steps[1] * (1 + 1e-12), steps


def test_ep_overlap_hides_nothing_with_one_micro_batch():
    """Megatron-LM's combined 1F1B (combined_1f1b.py @d98e8a64) pairs micro-batch i's backward with
    micro-batch i + 1's forward: with one micro-batch per pipeline rank there is no partner, and the EP
    exchanges show whole, as without the overlap (it was priced 11% faster, an emit audit found). With
    two micro-batches the overlap does hide."""
    plan = dict(precision="bf16", ep=8, zero_stage=1)

    def step(m: int, overlap: bool) -> float:
        return _scored("qwen3-30b-a3b", "dgx-h100", 8, global_batch_size=8 * m, ep_overlap=overlap,
                       **plan).step_time_seconds

    assert step(1, True) == pytest.approx(step(1, False), rel=1e-12)
    assert step(2, True) < step(2, False)
