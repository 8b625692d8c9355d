"""Smaller cost-model facts, each checked against hand arithmetic or a published configuration."""
from dataclasses import replace
from types import SimpleNamespace

import pytest
from conftest import gpt, selene

from costmodel.comm import Link, hierarchical_allreduce_seconds, ring_allreduce_seconds
from costmodel.pipeline import bubble_overhead_ratio, default_chunk_layers, stage_layer_counts
from costmodel.step import dp_overlap_window_seconds, estimate
from costmodel.topology import network_link
from costmodel.types import Efficiency, Plan

FAST, SLOW = Link(240e9, 0.0), Link(25e9, 0.0)
NO_LATENCY = Efficiency(nvlink_latency_seconds=0.0, network_latency_seconds=0.0)  # volume-only comparisons


def test_hierarchical_allreduce_inside_one_domain_is_the_flat_ring():
    assert hierarchical_allreduce_seconds(1e9, 8, 8, FAST, SLOW) == pytest.approx(ring_allreduce_seconds(1e9, 8, FAST))


def test_hierarchical_allreduce_by_hand():
    # 16 ranks, 8 per domain, 1 GB: RS inside (7/8 GB over 240 GB/s), AllReduce of the 1/8 shard
    # across 2 domains (2 * 1/2 * 0.125 GB over 25 GB/s), AG inside: 2*3.6458 ms + 5 ms.
    expected = 2 * (7 / 8) * 1e9 / 240e9 + 2 * (1 / 2) * (1e9 / 8) / 25e9
    assert hierarchical_allreduce_seconds(1e9, 16, 8, FAST, SLOW) == pytest.approx(expected)


def test_no_rdma_halves_network_bandwidth():
    # 200 Gb/s HDR per GPU = 25 GB/s nominal; NCCL reaches 94% of a NIC's line rate (nccl-tests #290:
    # 47 of 50 GB/s on 400G NDR): 23.5 GB/s. Without RDMA the seed article's cost "doubles": 11.75 GB/s.
    cluster = selene(16)
    eff = Efficiency()
    with_rdma = network_link(cluster, eff).bandwidth_bytes_per_second
    without = network_link(replace(cluster, rdma=False), eff).bandwidth_bytes_per_second
    assert with_rdma == pytest.approx(23.5e9)
    assert without == pytest.approx(11.75e9)


def test_llama31_405b_uneven_split():
    # Llama 3 paper (arXiv:2407.21783 Sec 3.3.2): 126 layers on pp 16 x vpp 4, one layer fewer on the
    # first and the last stage: 64 chunks, the two ends with 1 layer, the other 62 with 2.
    chunks = default_chunk_layers(126, 16, 4)
    assert len(chunks) == 64 and sum(chunks) == 126
    assert chunks[0] == chunks[-1] == 1 and set(chunks[1:-1]) == {2}
    per_rank = stage_layer_counts(chunks, 16, 4)
    assert per_rank[0] == per_rank[-1] == 7 and set(per_rank[1:-1]) == {8}


def test_uneven_split_has_the_smallest_largest_stage_in_megatrons_shape():
    # 80 layers on pp 3: the largest stage ceil(80 / 3) = 27, not (26, 28, 26) with a 28-layer stage.
    assert default_chunk_layers(80, 3, 1) == (27, 27, 26)
    assert default_chunk_layers(32, 3, 1) == (11, 11, 10)
    assert default_chunk_layers(29, 4, 1) == (8, 7, 7, 7)  # one over: the first stage
    # DeepSeek-V3's 61 layers on pp 8: six middle stages of 8, the first and last share 13 (Megatron-LM
    # --decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 6); NVIDIA's recipe writes
    # 8 x 7 + 5, the same largest stage.
    assert default_chunk_layers(61, 8, 1) == (7,) + (8,) * 6 + (6,)
    # Interleaved, the same shape where no rank holds more: 61 layers on pp 2 x vpp 8 are NVIDIA's own
    # layout for DeepSeek-V3 without MTP, Et*3|(t*4|)*14ttL (validation/incoming/moe_2025_2026.yaml, 25.11
    # GB300 recipe): 3, 4 x 14, 2, ranks of 31 and 30 layers.
    assert default_chunk_layers(61, 2, 8) == (3,) + (4,) * 14 + (2,)
    assert stage_layer_counts(default_chunk_layers(61, 2, 8), 2, 8) == (31, 30)
    for layers in range(1, 200):
        for pp, vpp in ((1, 1), (2, 1), (3, 1), (4, 2), (8, 1), (9, 1), (16, 1), (16, 4)):
            if layers >= pp * vpp:
                chunks = default_chunk_layers(layers, pp, vpp)
                assert sum(chunks) == layers and min(chunks) > 0, (layers, pp, vpp)
                assert max(chunks) == -(-layers // (pp * vpp)), (layers, pp, vpp)
                top = max(chunks)
                # Megatron's shape (middle stages alike, the first and last 1..top each), where one exists
                shaped = any(2 <= layers - (pp - 2) * m <= 2 * top for m in range(1, top + 1))
                if vpp == 1 and pp >= 3 and shaped:
                    assert len(set(chunks[1:-1])) == 1, (layers, pp)


def test_bubble_ratio_from_narayanan():
    assert bubble_overhead_ratio(8, 1, 32) == pytest.approx(7 / 32)
    assert bubble_overhead_ratio(8, 4, 32) == pytest.approx(7 / 128)


def test_tp_across_the_network_is_reported():
    model = gpt(8, 2048, 16)
    plan = Plan(tp=16, dp=1, micro_batch_size=1, global_batch_size=4)
    e = estimate(model, selene(16), plan)
    assert any("spans more than one NVLink domain" in w for w in e.warnings)
    inside = estimate(model, selene(8), replace(plan, tp=8))
    assert inside.warnings == ()


def test_tp_on_the_network_costs_more_than_on_nvlink():
    model = gpt(8, 4096, 32)
    plan = Plan(tp=8, dp=1, micro_batch_size=1, global_batch_size=8)
    on_nvlink = estimate(model, selene(8), plan).time_breakdown_seconds["tp_comm"]
    no_nvlink = replace(selene(8), nvlink_bandwidth_bytes_per_second=0.0)
    on_network = estimate(model, no_nvlink, plan).time_breakdown_seconds["tp_comm"]
    assert on_network > 5 * on_nvlink  # 240 GB/s vs 23.5 GB/s achievable


def test_compression_shrinks_dp_traffic_in_proportion():
    model = gpt(8, 2048, 16)
    base = Plan(dp=16, micro_batch_size=1, global_batch_size=16, overlap_dp_comm=False, grad_dtype="fp32")
    t32 = estimate(model, selene(16), base, NO_LATENCY).dp_comm_seconds
    t8 = estimate(model, selene(16), replace(base, grad_dtype="int8"), NO_LATENCY).dp_comm_seconds
    assert t8 == pytest.approx(t32 / 4, rel=1e-9)  # 1 byte vs 4


def test_zero3_moves_one_and_a_half_times_zero1_per_microbatch():
    # ZeRO paper Sec 7.2.2: ZeRO-3 communicates 3 Psi vs 2 Psi for DP / ZeRO-1 (no recompute, m = 1).
    model = gpt(8, 2048, 16)
    plan = Plan(dp=16, micro_batch_size=1, global_batch_size=16, overlap_dp_comm=False, grad_dtype="bf16")
    z1 = estimate(model, selene(16), replace(plan, zero_stage=1), NO_LATENCY).dp_comm_seconds
    z3 = estimate(model, selene(16), replace(plan, zero_stage=3), NO_LATENCY).dp_comm_seconds
    assert z3 / z1 == pytest.approx(1.5, rel=1e-9)


def test_an_all_reduce_per_micro_batch_moves_m_times_the_gradients():
    """torchtitan's data_parallel_replicate (DDP / FSDP2 replicate, no no_sync in its trainer) all-reduces
    after each of the m = 16 / (dp 4 x mbs 1) = 4 micro-batches: 4 x the volume of one all-reduce per step,
    the same all-reduce each time (DP ring of 4 over NVLink); each hides behind its own micro-batch's
    backward (2/3 of the micro-batch: DDP waits for the reduction before the next forward), so 4 x 2/3."""
    from costmodel.rules import plan_violations

    model = gpt(8, 2048, 16)
    plan = Plan(dp=4, micro_batch_size=1, global_batch_size=16, overlap_dp_comm=False, grad_dtype="bf16")
    once = estimate(model, selene(4), plan, NO_LATENCY).dp_comm_seconds
    every = estimate(model, selene(4), replace(plan, grad_sync="microbatch"), NO_LATENCY).dp_comm_seconds
    assert every == pytest.approx(4 * once, rel=1e-9)
    assert any("grad_sync microbatch" in v for v in plan_violations(model, selene(4), replace(
        plan, grad_sync="microbatch", zero_stage=1)))
    one_mb = SimpleNamespace(microbatch_seconds=1.0)  # a micro-batch of 1 s: the windows in micro-batches
    assert dp_overlap_window_seconds(plan, one_mb) == pytest.approx(2 / 3)  # the last backward only
    assert dp_overlap_window_seconds(replace(plan, grad_sync="microbatch"), one_mb) == pytest.approx(4 * 2 / 3)
    single = replace(plan, global_batch_size=4, overlap_dp_comm=True)  # one micro-batch: the same sync either way
    assert estimate(model, selene(4), replace(single, grad_sync="microbatch")).step_time_seconds == \
        pytest.approx(estimate(model, selene(4), single).step_time_seconds, rel=1e-12)


def test_fp8_needs_fp8_tensor_cores():
    # A100 has no FP8 tensor cores (NVIDIA A100 datasheet: TF32/BF16/FP16/INT8 only).
    from costmodel.rules import plan_violations

    model = gpt(8, 2048, 16)
    plan = Plan(tp=1, dp=8, micro_batch_size=1, global_batch_size=8, precision="fp8")
    assert any("FP8 tensor cores" in v for v in plan_violations(model, selene(8), plan))


def test_interleaving_needs_at_least_pp_microbatches():
    # One micro-batch on 8 stages crosses all 8 x v chunks in sequence: no interleaving gain, and
    # MFU at most 1/8 of the per-stage efficiency.
    from costmodel.pipeline import pipeline_seconds

    stages = (1.0,) * 8
    assert pipeline_seconds(stages, 1, 10) == pipeline_seconds(stages, 1, 1) == (1.0, 7.0)
    assert pipeline_seconds(stages, 8, 4) == (8.0, 7.0 / 4)
    model = gpt(16, 2048, 16)
    one = Plan(tp=1, pp=8, dp=1, vpp=2, micro_batch_size=1, global_batch_size=1)
    assert estimate(model, selene(8), one).step_time_seconds == pytest.approx(
        estimate(model, selene(8), replace(one, vpp=1)).step_time_seconds, rel=0.05)


def test_ring_latency_counts_every_rank_as_nccl_does():
    # NCCL src/graph/tuning.cc: a ring AllGather over nRanks takes nRanks - 1 steps, nNodes - 1 of them
    # on the network. 1536 GPUs in 192 nodes, 10 us per NVLink step, 14 us per network step:
    # 1344 * 10 + 191 * 14 = 16.074 ms, whatever the message size adds.
    from costmodel.comm import hierarchical_allgather_seconds

    fast, slow = Link(1e30, 10e-6), Link(1e30, 14e-6)
    assert hierarchical_allgather_seconds(1.0, 1536, 8, fast, slow) == pytest.approx(1344 * 10e-6 + 191 * 14e-6)
    assert hierarchical_allgather_seconds(1.0, 8, 8, fast, slow) == pytest.approx(7 * 10e-6)  # one node


def test_zero3_collective_patterns_by_hand():
    """Per step, m = 1, full recompute (3 gather passes), 8 layers of 1e8 parameters on 16 GPUs.
    per_layer (FSDP2 per block): 8 AllGathers per pass and 8 gradient ReduceScatters: 32 collectives.
    per_tensor (DeepSpeed ZeRO-3 2021): 4 AllGathers per layer per pass (96) and the 8e8 gradients
    all-reduced in ceil(8e8 / 5e8) = 2 buckets (2 ReduceScatters + 2 AllGathers): 100 collectives,
    and the gradient volume doubles (AllReduce instead of ReduceScatter)."""
    from costmodel.dataparallel import dp_sync_seconds

    plan = Plan(dp=16, micro_batch_size=1, global_batch_size=16, zero_stage=3, recompute="full", grad_dtype="bf16")
    tensor = replace(plan, zero3_gather_unit="tensor", grad_reduce="allreduce")
    lat = Link(1e30, 1e-6)
    one = 15 * 1e-6  # 16 ranks in one domain: 15 ring steps
    assert dp_sync_seconds(8e8, plan, 16, lat, lat, 1, 8) == pytest.approx(32 * one)
    assert dp_sync_seconds(8e8, tensor, 16, lat, lat, 1, 8) == pytest.approx(100 * one)
    bw = Link(100e9, 0.0)
    ag = 8e8 * 2 * 15 / 16 / 100e9  # one AllGather (or ReduceScatter) of all 16-bit weights
    assert dp_sync_seconds(8e8, plan, 16, bw, bw, 1, 8) == pytest.approx(4 * ag)
    assert dp_sync_seconds(8e8, tensor, 16, bw, bw, 1, 8) == pytest.approx(5 * ag)


def test_bf16_pipeline_engine_allreduces_fp32_gradients_under_zero1():
    """DeepSpeed v0.6.5 bf16 pipeline (BLOOM): fp32 gradients all-reduced (2 x 4 B through the ring),
    then the updated bf16 shards all-gathered (2 B): 10 B per parameter against ZeRO-1's usual
    ReduceScatter + AllGather, 4 + 2 B (ZeRO Sec 7.2.1)."""
    from costmodel.dataparallel import dp_sync_seconds

    plan = Plan(dp=8, micro_batch_size=1, global_batch_size=8, zero_stage=1, grad_dtype="fp32")
    bw = Link(100e9, 0.0)
    unit = 1e9 * 7 / 8 / 100e9  # one byte per parameter through a ring RS or AG over 8 ranks
    assert dp_sync_seconds(1e9, plan, 8, bw, bw, 1) == pytest.approx(6 * unit)
    assert dp_sync_seconds(1e9, replace(plan, grad_reduce="allreduce"), 8, bw, bw, 1) == pytest.approx(10 * unit)


def test_power_cap_slows_compute_bound_kernels_by_the_cube_root():
    """P ~ f^3 under DVFS (Mudge 2001): a 700 W H100 capped at 500 W keeps (5/7)^(1/3) = 0.894 of its
    tensor clock. A large GEMM (compute bound) takes 1/0.894 longer; a memory-bound one does not."""
    from costmodel.compute import gemm_seconds, power_capped_clock_fraction
    from costmodel.types import Gpu

    assert power_capped_clock_fraction(500, 700) == pytest.approx(0.8939, abs=1e-4)
    assert power_capped_clock_fraction(700, 700) == 1.0 and power_capped_clock_fraction(0, 700) == 1.0
    full = Gpu("h100", 80 * 2**30, {"bf16": 989e12, "fp16": 989e12}, 3.35e12, 450e9)
    capped = replace(full, tensor_clock_fraction=power_capped_clock_fraction(500, 700))
    eff = Efficiency()
    big = (8192, 8192, 8192)
    assert gemm_seconds(*big, capped, "bf16", eff) == pytest.approx(gemm_seconds(*big, full, "bf16", eff) / 0.8939,
                                                                    rel=1e-4)
    skinny = (8192, 8192, 1)  # 2 flops per output element: bound by HBM traffic
    assert gemm_seconds(*skinny, capped, "bf16", eff) == gemm_seconds(*skinny, full, "bf16", eff)


def test_catalog_h100_500w_carries_its_power_cap():
    from planner.inputs.loading import resolve_gpu

    gpu = resolve_gpu("h100-sxm-96gb-500w").to_gpu()
    assert gpu.tensor_clock_fraction == pytest.approx((500 / 700) ** (1 / 3))
    assert resolve_gpu("h100-sxm-80gb").to_gpu().tensor_clock_fraction == 1.0


def test_flash_attention_fraction_saturates_with_sequence_length():
    from costmodel.compute import flash_attention_fraction

    eff = Efficiency(flash_attention_peak_fraction=0.3, flash_attention_half_seq=2000.0)
    assert flash_attention_fraction(2000, eff) == pytest.approx(0.15)  # half of the asymptote at s_half
    assert flash_attention_fraction(8000, eff) == pytest.approx(0.3 * 8000 / 10000)
    assert flash_attention_fraction(10**9, eff) == pytest.approx(0.3, rel=1e-5)


def test_fp8_training_keeps_the_output_layer_in_16_bit():
    """Megatron-core's output layer is not a Transformer Engine module and torchtitan's float8
    conversion skips it, so an fp8 step's vocabulary GEMM costs what a bf16 one does."""
    from costmodel.compute import logits_seconds
    from costmodel.types import Gpu, Model

    h100 = Gpu("h100", 80 * 2**30, {"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12}, 3.35e12, 450e9)
    model = Model("m", 32, 6144, 48, 256000, 4096)
    eff = Efficiency()
    assert logits_seconds(model, 2, 2, h100, "fp8", eff) == logits_seconds(model, 2, 2, h100, "bf16", eff)


def test_zero3_edge_weights_gather_and_reduce_cannot_hide():
    """FSDP gathers the root unit (embedding, output) before the first block and reduces it after
    the last: 1e9 such parameters on 8 GPUs of one domain at 100 GB/s, bf16 weights and gradients:
    gather 2e9 x 7/8 / 100e9 = 17.5 ms, reduce the same, per micro-batch (2 micro-batches)."""
    from costmodel.dataparallel import dp_exposed_seconds, zero3_edge_seconds

    plan = Plan(dp=8, micro_batch_size=1, global_batch_size=16, zero_stage=3, grad_dtype="bf16")
    link = Link(100e9, 0.0)
    edge = zero3_edge_seconds(1e9, plan, 8, link, link, plan.num_microbatches)
    assert edge == pytest.approx(2 * 2 * 17.5e-3)
    assert zero3_edge_seconds(1e9, replace(plan, zero_stage=1), 8, link, link, 2) == 0.0
    # a sync that compute would otherwise hide entirely still shows its tail
    assert dp_exposed_seconds(1.0, plan, 10.0, edge, 1.0) == pytest.approx(edge)
    assert dp_exposed_seconds(1.0, replace(plan, overlap_dp_comm=False), 10.0, edge, 1.0) == 1.0


def test_per_tensor_gathers_copy_the_gathered_weights_through_hbm():
    """PyTorch's list all_gather (DeepSpeed ZeRO-3 of 2021) gathers into a fresh buffer and copies
    each rank's piece back: 2 B of HBM traffic per gathered byte. 8e8 16-bit weights, 3 gather
    passes (full recompute), 1 TB/s of HBM: 3 x 2 x 1.6e9 / 1e12 = 9.6 ms more than without."""
    from costmodel.dataparallel import dp_sync_seconds

    plan = Plan(dp=16, micro_batch_size=1, global_batch_size=16, zero_stage=3, recompute="full",
                grad_dtype="bf16", zero3_gather_unit="tensor")
    link = Link(100e9, 0.0)
    without = dp_sync_seconds(8e8, plan, 16, link, link, 1, 8)
    assert dp_sync_seconds(8e8, plan, 16, link, link, 1, 8, 1e12) - without == pytest.approx(9.6e-3)
    per_layer = replace(plan, zero3_gather_unit="layer")  # FSDP's tensor API gathers in place: no copy
    assert dp_sync_seconds(8e8, per_layer, 16, link, link, 1, 8, 1e12) == dp_sync_seconds(8e8, per_layer, 16, link,
                                                                                              link, 1, 8)


def test_grad_reduce_does_not_change_plain_data_parallel():
    """ZeRO 0 all-reduces gradients anyway: the plan's grad_reduce must not change its cost."""
    from costmodel.dataparallel import dp_sync_seconds

    plan = Plan(dp=16, micro_batch_size=1, global_batch_size=16, zero_stage=0, grad_dtype="bf16")
    link = Link(100e9, 10e-6)
    assert dp_sync_seconds(8e9, replace(plan, grad_reduce="allreduce"), 8, link, link, 1, 32) == \
        dp_sync_seconds(8e9, plan, 8, link, link, 1, 32)


def test_power_limit_without_tdp_is_a_spec_error():
    from pydantic import ValidationError

    from planner.inputs.specs import GpuSpec

    with pytest.raises(ValidationError, match="power_limit_watts needs tdp_watts"):
        GpuSpec(name="x", generation="hopper", memory_gib=80, dense_tflops={"bf16": 900},
                hbm_bandwidth_gbytes_per_s=3000, power_limit_watts=500)


def test_all_to_all_dispatch_waits_on_the_host_even_with_moe_cuda_graphs():
    """Megatron-core's dropless all-to-all dispatcher copies its split sizes to the CPU whatever the
    graph scopes (token_dispatcher.py, sync point "before_ep_alltoall"); only a fixed-buffer
    dispatcher (DeepEP / HybridEP) under CUDA graphs skips it. Qwen3-30B-A3B (48 MoE layers) on 8
    GPUs, ep 8, global batch 16 of micro-batch 1 over dp 8: 2 micro-batches, so the host waits
    2 x 48 x moe_host_sync_seconds per step, its own time part (moe_sync), not the token exchange's."""
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    model = load_model_spec("qwen3-30b-a3b").to_model()
    cluster = build_cluster(load_cluster_spec("dgx-h100"), 8)
    base = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=16)
    eff = Efficiency()

    def part(name: str, **kw) -> float:
        return estimate(model, cluster, replace(base, **kw), eff).time_breakdown_seconds[name]

    synced = 2 * 48 * eff.moe_host_sync_seconds
    assert part("moe_sync", ep_dispatch="alltoall", moe_cuda_graphs=True) == pytest.approx(synced)
    assert part("moe_sync", ep_dispatch="alltoall", moe_cuda_graphs=False) == pytest.approx(synced)
    assert part("moe_sync", ep_dispatch="deepep", moe_cuda_graphs=False) == pytest.approx(synced)
    assert part("moe_sync", ep_dispatch="deepep", moe_cuda_graphs=True) == 0.0
    assert part("ep_comm", ep_dispatch="deepep", moe_cuda_graphs=False) == part("ep_comm", ep_dispatch="deepep",
                                                                                 moe_cuda_graphs=True) > 0
    assert part("moe_sync", ep=1, ep_dispatch="alltoall") == pytest.approx(synced)  # no exchange at ep 1, still a sync
    assert part("ep_comm", ep=1, ep_dispatch="alltoall") == 0.0


def test_megatron_refuses_deepep_with_experts_padded_to_capacity():
    """Megatron-LM's config refuses moe_pad_expert_input_to_capacity with the flex dispatcher's DeepEP
    backend (transformer_config.py at d98e8a64), so a padded plan only runs the all-to-all dispatcher."""
    from planner.frameworks import REGISTRY
    from planner.frameworks.base import plan_violations
    from planner.inputs.loading import load_model_spec

    dropless = load_model_spec("qwen3-30b-a3b").to_model()
    padded = replace(dropless, moe=replace(dropless.moe, capacity_factor=1.0))
    plan = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=16, ep_dispatch="deepep")
    megatron = REGISTRY["megatron"]
    assert any("pad experts to a capacity" in v for v in plan_violations(megatron, padded, plan))
    assert not any("capacity" in v for v in plan_violations(megatron, dropless, plan))
    assert not any("capacity" in v for v in plan_violations(megatron, padded, replace(plan, ep_dispatch="alltoall")))


def test_interleaving_with_fewer_micro_batches_than_stages():
    """4 equal stages of T = 1 s in 6 chunks each: the first micro-batch crosses all 24 chunks (4 s),
    each later one ends a chunk (1/6 s) behind it: m = 2 takes 4 + 1/6 s, m = 3 4 + 2/6 s, and m = 4
    the interleaved formula's 4 + 3/6 s (Narayanan eq. 1: m T + (p - 1) T / v). The flush once stayed
    the 1F1B one (m + 3 s) below m = 4, so 3 micro-batches took longer than 4."""
    from costmodel.pipeline import pipeline_seconds

    totals = [sum(pipeline_seconds((1.0,) * 4, m, 6)) for m in (1, 2, 3, 4, 5)]
    assert totals == pytest.approx([4.0, 4 + 1 / 6, 4 + 2 / 6, 4 + 3 / 6, 5 + 3 / 6])
    # one slow stage: never below the slowest stage's own work plus the others' fill
    busy, bubble = pipeline_seconds((10.0, 1.0, 1.0, 1.0), 3, 2)
    assert busy + bubble == pytest.approx(max(13 + 2 * 10 / 2, 30 + 3 / 2))


@pytest.mark.parametrize("graph", ["full_iteration_graph", "layer_cuda_graphs"])
def test_a_graph_drops_the_per_layer_host_overhead(graph):
    """Plan.full_iteration_graph (the whole step) and Plan.layer_cuda_graphs (each layer: Megatron-core's
    per-layer graphs, NeMo LAYER_CUDA_GRAPH=1): the GPU replays the recorded kernels, so the per-layer launch
    overhead (Efficiency.layer_overhead_seconds, per layer and micro-batch) is not paid. Llama 3 8B (32
    layers) on 8 GPUs, dp 8, global batch 32 of micro-batch 1: 4 micro-batches, so either graph saves
    4 x 32 x layer_overhead_seconds of compute, and nothing else moves."""
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    cluster = build_cluster(load_cluster_spec("dgx-h100"), 8)
    eff = Efficiency()
    dense = load_model_spec("llama3-8b").to_model()
    base = Plan(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=32)
    plain, graphed = (estimate(dense, cluster, replace(base, **{graph: g}), eff) for g in (False, True))
    saved = plain.time_breakdown_seconds["compute"] - graphed.time_breakdown_seconds["compute"]
    assert saved == pytest.approx(4 * 32 * eff.layer_overhead_seconds)
    assert plain.step_time_seconds - graphed.step_time_seconds == pytest.approx(saved)


def test_a_whole_iteration_graph_has_no_moe_host_wait():
    """Plan.full_iteration_graph: nor is the MoE layers' host wait paid. Qwen3-30B-A3B with DeepEP dispatch
    and no MoE graphs waits 2 x 48 x moe_host_sync_seconds, and nothing under the whole-iteration graph."""
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    cluster = build_cluster(load_cluster_spec("dgx-h100"), 8)
    eff = Efficiency()
    moe = load_model_spec("qwen3-30b-a3b").to_model()
    base = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=16, ep_dispatch="deepep")
    assert estimate(moe, cluster, base, eff).time_breakdown_seconds["moe_sync"] == pytest.approx(
        2 * 48 * eff.moe_host_sync_seconds)
    assert estimate(moe, cluster, replace(base, full_iteration_graph=True), eff).time_breakdown_seconds["moe_sync"] == 0


def test_per_layer_graphs_are_refused_for_moe_and_beside_a_whole_iteration_graph():
    """Plan.layer_cuda_graphs: an MoE model's layers are refused (their capture and host syncs are not
    modelled), and so is the plan that also captures the whole iteration (two captures of the same layers)."""
    from costmodel.rules import plan_violations as violations
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    cluster = build_cluster(load_cluster_spec("dgx-h100"), 8)
    dense = load_model_spec("llama3-8b").to_model()
    base = Plan(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=32)
    assert violations(dense, cluster, replace(base, layer_cuda_graphs=True)) == []
    both = replace(base, layer_cuda_graphs=True, full_iteration_graph=True)
    assert any("two captures" in v for v in violations(dense, cluster, both))
    moe = load_model_spec("qwen3-30b-a3b").to_model()
    expert = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=16, layer_cuda_graphs=True)
    assert any("dense models only" in v for v in violations(moe, cluster, expert))


def test_megatron_captures_a_whole_iteration_only_without_host_waits():
    """Megatron-LM d98e8a64: one --cuda-graph-impl, so not with the MoE layers' transformer_engine graphs;
    a dropless MoE layer with the all-to-all dispatcher needs its split sizes on the host (uncapturable,
    moe/README.md), the flex dispatcher and experts padded to a capacity do not. DeepSpeed and torchtitan
    capture no whole-iteration graph."""
    from planner.frameworks import REGISTRY
    from planner.frameworks.base import knob_violations, plan_violations
    from planner.inputs.loading import load_model_spec

    dropless = load_model_spec("qwen3-30b-a3b").to_model()
    padded = replace(dropless, moe=replace(dropless.moe, capacity_factor=1.0))
    graph = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=16, full_iteration_graph=True)
    megatron = REGISTRY["megatron"]

    def refused(model, plan) -> str:
        return " ".join(plan_violations(megatron, model, plan))

    assert "split sizes" in refused(dropless, graph)
    assert refused(dropless, replace(graph, ep_dispatch="deepep")) == ""
    assert refused(padded, graph) == ""
    assert "one --cuda-graph-impl" in refused(dropless, replace(graph, ep_dispatch="deepep", moe_cuda_graphs=True))
    dense = load_model_spec("llama3-8b").to_model()
    plan = Plan(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=16, full_iteration_graph=True)
    assert knob_violations(megatron, plan) == []
    for name in ("deepspeed", "torchtitan"):
        assert any("whole-iteration CUDA graph" in v for v in knob_violations(REGISTRY[name], plan)), name
    assert refused(dense, plan) == ""


def test_an_mxfp8_dispatch_sends_one_direction_of_each_pass_in_one_byte_and_a_scale():
    """Plan.ep_dispatch_dtype "mxfp8": the exchange towards the experts (the forward dispatch, the
    combine's gradient in backward) carries one E4M3 byte per element plus one E8M0 scale byte per 32
    (OCP Microscaling spec v1.0), the exchange back stays bf16 (2 bytes). Without latency the exchanges
    are linear in their bytes, so the step's EP time scales by (1 + 1/32 + 2) / (2 + 2) = 0.7578125,
    inside one node (all-to-all) as across two (the deduplicated flex path). The sync and compute do not
    change. Qwen3-30B-A3B on DGX B200s, ep over all GPUs."""
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    model = load_model_spec("qwen3-30b-a3b").to_model()
    for gpus, dispatch in ((8, "alltoall"), (16, "deepep")):
        cluster = build_cluster(load_cluster_spec("dgx-b200"), gpus)
        base = Plan(tp=1, pp=1, dp=gpus, ep=gpus, micro_batch_size=1, global_batch_size=2 * gpus,
                    precision="mxfp8", ep_dispatch=dispatch)
        bf16 = estimate(model, cluster, base, NO_LATENCY).time_breakdown_seconds
        fp8 = estimate(model, cluster, replace(base, ep_dispatch_dtype="mxfp8"), NO_LATENCY).time_breakdown_seconds
        assert bf16["ep_comm"] > 0
        assert fp8["ep_comm"] == pytest.approx(bf16["ep_comm"] * (1 + 1 / 32 + 2) / 4, rel=1e-9)
        assert (fp8["compute"], fp8["moe_sync"]) == (bf16["compute"], bf16["moe_sync"])


def test_an_mxfp8_dispatch_needs_expert_ranks_and_an_moe_model():
    """The payload is quantized whatever the experts' precision (Megatron-LM fp8_utils.py
    get_fp8_recipe_for_a2a: "independent of the compute recipe"), so bf16 experts may take it; it needs
    expert ranks to send to, and a dense model has no dispatch; the value is one of bf16 and mxfp8."""
    from costmodel.rules import plan_violations
    from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

    moe = load_model_spec("qwen3-30b-a3b").to_model()
    cluster = build_cluster(load_cluster_spec("dgx-b200"), 8)
    plan = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=16, precision="mxfp8",
                ep_dispatch="deepep", ep_dispatch_dtype="mxfp8")
    assert plan_violations(moe, cluster, plan) == []
    assert plan_violations(moe, cluster, replace(plan, precision="bf16")) == []
    assert any("more than one expert rank" in v for v in plan_violations(moe, cluster, replace(plan, ep=1)))
    assert any("ep_dispatch_dtype must be" in v
               for v in plan_violations(moe, cluster, replace(plan, ep_dispatch_dtype="fp8")))
    dense = load_model_spec("llama3-8b").to_model()
    assert any("FP8 token dispatch" in v and "dense" in v
               for v in plan_violations(dense, cluster, replace(plan, ep=1, ep_dispatch="alltoall")))
