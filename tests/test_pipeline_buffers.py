"""What a pipeline runtime and a context-parallel exchange hold besides the layers' activations:
torch.distributed.pipelining's per-micro-batch receive buffers (Plan.pipeline_buffers), K/V repeated
to the query heads (Plan.repeat_kv) and the K/V a CP exchange gathers. Expected values are hand
arithmetic from the shapes; the 405B rows are torchtitan's Table 6 (validation/runs.yaml)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel import context, memory, stage
from costmodel import types as cm
from planner.search.space import Knobs, SearchSpec, build_space, undominated

GIB = 2**30
LLAMA_405B = cm.Model(name="llama3.1-405b", num_layers=126, hidden_size=16384, num_attention_heads=128,
                      num_kv_heads=8, ffn_hidden_size=53248, vocab_size=128256, seq_length=32768, mlp="swiglu")


@pytest.mark.parametrize("stage_index, inflight, units", [(0, 8, 8 + 8), (1, 7, 2 * 8), (4, 4, 2 * 8), (7, 1, 8 - 1)])
def test_per_microbatch_buffers_at_vpp_1(stage_index, inflight, units):
    """pp 8, 8 micro-batches: the first stage keeps 8 gradient buffers and its 8 in-flight outputs, a
    middle stage 8 activation + 8 gradient buffers (its in-flight inputs among them, its in-flight
    outputs extra), the last 8 activation buffers less the one in flight, which its layers count."""
    assert memory.pipeline_buffer_units(8, 1, 8, stage_index, inflight, "per_microbatch") == units


def test_freed_buffers_and_no_pipeline_hold_nothing():
    assert memory.pipeline_buffer_units(8, 1, 8, 3, 5, "freed") == 0.0
    assert memory.pipeline_buffer_units(1, 1, 8, 0, 1, "per_microbatch") == 0.0


def test_interleaved_stages_keep_buffers_per_chunk():
    """vpp 2, 16 micro-batches, a middle rank: 2 chunks x 16 for activations and for gradients."""
    assert memory.pipeline_buffer_units(4, 2, 16, 1, 3.0, "per_microbatch") == 2 * 16 + 2 * 16


def test_stage_memory_adds_the_buffers_at_the_boundary_size():
    """405B at 32k, tp 8 with sequence parallel: one boundary activation is 32768 x 16384 x 2 B / 8 =
    128 MiB; a middle stage of pp 8 with 8 micro-batches keeps 16 more."""
    plan = cm.Plan(tp=8, pp=8, dp=8, micro_batch_size=1, global_batch_size=64, zero_stage=1, recompute="full",
                   sequence_parallel=True)
    mix = stage.as_mix(LLAMA_405B, 16)
    freed = stage.stage_activation_bytes(LLAMA_405B, plan, mix, 1)
    kept = stage.stage_activation_bytes(LLAMA_405B, replace(plan, pipeline_buffers="per_microbatch"), mix, 1)
    assert kept - freed == pytest.approx(16 * 128 * 2**20)


def test_repeated_kv_are_exchanged_at_the_query_heads_width():
    """64k tokens over cp 2, tp 8: a rank's K and V of 32768 tokens are 2 x 8 heads x 128 x 2 B / 8
    = 512 B per token (16 MiB); repeated to 128 heads, 16x that (256 MiB)."""
    model = replace(LLAMA_405B, seq_length=65536)
    plan = cm.Plan(tp=8, pp=8, dp=4, cp=2, cp_comm="all_gather", sequence_parallel=True, global_batch_size=32)
    assert context.kv_chunk_bytes(model, plan) == 32768 * 512
    assert context.kv_chunk_bytes(model, replace(plan, repeat_kv=True)) == 32768 * 512 * 16


MIB = 2**20


@pytest.mark.parametrize("cp_comm, held", [("all_gather", 2 * 4 * 8 * MIB), ("all_gather_saved", 4 * 8 * MIB),
                                           ("p2p", 4 * (8 + 64) * MIB), ("a2a+p2p", 4 * (8 + 64) * MIB), ("a2a", 0)])
def test_exchange_buffers(cp_comm, held):
    """405B at 64k over cp 4, tp 8: a rank's 16,384 tokens carry K and V of 1 KV head of 128 each, 16384 x 2 x 128
    x 2 B = 8 MiB, and an attention output of 128 / 8 heads x 128, 16384 x 2048 x 2 B = 64 MiB. Transformer
    Engine's all-gather holds the four chunks' K/V and their gradients; the saved all-gather (torchtitan's Flex)
    keeps the gathered K/V among the activations and holds their gradients, 4 chunks; TE's ring keeps each of its
    4 steps' K/V buffer and partial output until the final correction (context_parallel.py @d0067d0
    p2p_comm_buffers, out_per_step), a2a+p2p's ring taken at cp (the domain unknown here); Ulysses holds nothing
    beyond the head-split copies."""
    model = replace(LLAMA_405B, seq_length=65536)
    plan = cm.Plan(tp=8, cp=4, cp_comm=cp_comm, sequence_parallel=True, global_batch_size=4, dp=1)
    assert context.exchange_buffer_bytes(model, plan) == held
    assert context.exchange_buffer_bytes(model, replace(plan, cp=1)) == 0.0


def test_last_stage_keeps_every_microbatch_logits():
    """405B at 32k, tp 8, 8 micro-batches: 8 x 32768 x 128256 / 8 x 2 B of logits kept to the step's end."""
    kept = memory.last_stage_kept_logits_bytes(LLAMA_405B, 1, 8, 8, "per_microbatch")
    assert kept == 8 * 32768 * 128256 / 8 * 2
    assert memory.last_stage_kept_logits_bytes(LLAMA_405B, 1, 8, 8, "freed") == 0.0


def test_torchao_float8_all_gather_keeps_one_byte_weights():
    """torchao's float8 FSDP all-gather (fsdp_post_all_gather returns the fp8 tensor) leaves 1 B per
    gathered weight and no 16-bit copy; Transformer Engine's fp8 parameters keep both layouts (2 B)."""
    assert memory.state_bytes_per_param("fp8", "fp32", "tensorwise", "use", lowp_params=True).parameters == 1.0
    assert memory.state_bytes_per_param("fp8", "fp32", "tensorwise", "use").parameters == 2.0
    assert memory.state_bytes_per_param("fp8", "bf16", "delayed", "step", lowp_params=True).parameters == 2.0


def small_space(fws: tuple[str, ...]):
    """The search space of an 8-layer model on 8 GPUs (global batch 16) under the frameworks `fws`."""
    model = cm.Model("m", 8, 128, 4, 256, 256, ffn_hidden_size=512)
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 300e12}, 2e12, 300e9)
    return build_space(SearchSpec(model, cm.Cluster("c", gpu, 8, 8, 8, 300e9, 25e9), 16, fws))


def test_search_keeps_per_microbatch_buffers_for_torchtitan_only():
    for fws, wanted in ((("torchtitan",), {"per_microbatch"}), (("megatron",), {"freed"})):
        space = small_space(fws)
        assert {k.pbuf for lay, ks in space.knobs.items() if lay.pp > 1 for k in ks} == wanted, fws
        assert {k.pbuf for lay, ks in space.knobs.items() if lay.pp == 1 for k in ks} == {"freed"}, fws


def test_freeing_dominates_keeping():
    kept = Knobs(1, "full", True, "bf16", "", pbuf="per_microbatch")
    freed = replace(kept, pbuf="freed")
    assert undominated([kept, freed]) == {freed}
    assert undominated([kept]) == {kept}


# ---- Plan.grad_sync: FSDP2 under torch.distributed.pipelining reduces each chunk after its last backward ----

def _chunk_end_case(vpp: int = 1):
    from costmodel.step import estimate
    model = cm.Model("m", 8, 1024, 8, 32000, 2048, ffn_hidden_size=4096, mlp="swiglu")
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 300e12}, 2e12, 300e9)
    cluster = cm.Cluster("c", gpu, 32, 8, 8, 300e9, 25e9)
    plan = cm.Plan(pp=2, dp=16, vpp=vpp, micro_batch_size=1, global_batch_size=64, zero_stage=1, grad_dtype="fp32",
                   pipeline_buffers="per_microbatch")
    return model, cluster, plan, estimate


def test_chunk_end_keeps_a_shard_of_the_gradients_beside_them():
    """ZeRO-1 at dp 16 with fp32 gradients: the stage holds its unsharded gradients (4 B each) and,
    with grad_sync chunk_end, the reduce-scatter's shard of them (4 B / 16): 1 + 1/16 times as much."""
    model, cluster, plan, estimate = _chunk_end_case()
    base = estimate(model, cluster, plan).memory_breakdown_bytes["gradients"]
    chunk = estimate(model, cluster, replace(plan, grad_sync="chunk_end")).memory_breakdown_bytes["gradients"]
    assert chunk == pytest.approx(base * (1 + 1 / 16))


def test_chunk_end_exposes_the_last_chunks_reduction():
    """With grad_sync chunk_end the reduction of a stage's last chunk cannot hide (it starts after that
    chunk's last backward): the unhideable tail is the whole stage's reduce-scatter at vpp 1 and half
    of it at vpp 2, where the in-place buckets leave only the last layer's share."""
    from costmodel import dataparallel, step
    for vpp in (1, 2):
        model, cluster, plan, _ = _chunk_end_case(vpp)
        plan = replace(plan, grad_sync="chunk_end")
        eff = cm.Efficiency()
        critical = step.dp_critical_stage(step.stage_costs(model, cluster, plan, eff))
        per_domain, fast, slow = step.dp_group_links(cluster, plan, eff)
        reduce = dataparallel.gradient_reduce_seconds(critical.params, plan, per_domain, fast, slow)
        total = step.dp_sync_total_seconds(cluster, plan, critical, eff)
        assert reduce > total / critical.layers > 0
        assert step.dp_tail_seconds(model, cluster, plan, critical, eff, total) == pytest.approx(reduce / vpp)
        bucketed = replace(plan, grad_sync="buckets")
        assert step.dp_tail_seconds(model, cluster, bucketed, critical, eff, total) == pytest.approx(
            total / critical.layers)


def test_chunk_end_is_zero_1_and_torchtitans_pipelines_only():
    from costmodel.rules import plan_violations
    model, cluster, plan, _ = _chunk_end_case()
    assert any("is ZeRO-1" in v for v in plan_violations(model, cluster, replace(plan, zero_stage=3,
                                                                                   grad_sync="chunk_end")))
    for fws, wanted in ((("torchtitan",), {"chunk_end"}), (("megatron",), {"buckets"})):
        space = small_space(fws)
        assert {k.gsync for lay, ks in space.knobs.items() if lay.pp > 1 for k in ks} == wanted, fws
        at_pp1 = {(k.zero, k.gsync) for lay, ks in space.knobs.items() if lay.pp == 1 for k in ks}
        # without a pipeline torchtitan's replicate (ZeRO 0) all-reduces every micro-batch, its FSDP2 (ZeRO 3)
        # reduce-scatters every micro-batch (test_search_space.py::test_torchtitan_reduces_where_its_runtime_does)
        assert {g for zero, g in at_pp1 if zero != 0 or fws == ("megatron",)} == {"buckets"}, fws


def test_weights_outside_the_layers_stay_16_bit_under_low_precision():
    """fp8 with Transformer Engine's cached casts keeps 2 + 2 B per layer weight (16-bit weights and
    the fp8 copies in two layouts) but the embedding and output layer, which it does not quantize,
    at 2 B; with torchao's float8 all-gather the layer weights are 1 B and the edges still 2 B."""
    from costmodel import step
    model = cm.Model("m", 4, 1024, 8, 32000, 2048, ffn_hidden_size=4096, mlp="swiglu")
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 300e12, "fp8": 600e12}, 2e12, 300e9)
    cluster = cm.Cluster("c", gpu, 8, 8, 8, 300e9, 25e9)
    eff = cm.Efficiency()
    for plan, per_layer in ((cm.Plan(dp=8, global_batch_size=8, precision="fp8"), 4.0),
                            (cm.Plan(dp=8, global_batch_size=8, precision="fp8", fp8_recipe="tensorwise",
                                     weight_casts="use", lowp_param_gather=True, zero_stage=1), 1.0)):
        stage = step.stage_costs(model, cluster, plan, eff)[0]
        edge = stage.params - stage.layer_params
        assert edge == pytest.approx(2 * 32000 * 1024 + 1024)  # embedding, output layer, final norm
        parts = step.memory_breakdown(model, plan, stage, eff, gpu.generation)
        assert parts["parameters"] == pytest.approx(per_layer * stage.layer_params + 2.0 * edge)


def test_dtensor_sequence_parallel_keeps_the_gathered_inputs():
    """Llama 3.1 405B's layer at 32k, tp 8 with sequence parallel, nothing recomputed: Megatron saves the
    QKV and MLP inputs as the sequence shard (2 x 2 B x s h / 8), DTensor's sequence parallel keeps them
    gathered, 2 x 2 B x 32768 x 16384 x (1 - 1/8) = 1.879e9 bytes more; full recompute keeps only the
    block input either way."""
    def layer(recompute: str, gathered: bool) -> float:
        return memory.layer_activation_bytes(LLAMA_405B, 1, 8, True, recompute, True, sp_gathered=gathered)
    assert layer("none", True) - layer("none", False) == pytest.approx(2 * 2 * 32768 * 16384 * 7 / 8)
    assert layer("full", True) == layer("full", False)
    assert memory.layer_activation_bytes(LLAMA_405B, 1, 8, False, "none", True, sp_gathered=True) == \
        memory.layer_activation_bytes(LLAMA_405B, 1, 8, False, "none", True)  # without SP nothing is split


def test_search_saves_gathered_inputs_for_torchtitan_only():
    for fws, wanted in ((("torchtitan",), {True}), (("megatron",), {False})):
        space = small_space(fws)
        assert {k.spg for ks in space.knobs.values() for k in ks if k.sp} == wanted, fws
        assert {k.spg for ks in space.knobs.values() for k in ks if not k.sp} == {False}, fws


def test_hierarchical_cp_ring_hides_behind_the_attention_of_its_own_steps():
    """a2a+p2p: Ulysses over the inner ranks, then a ring of cp / inner steps, each beside 1 / ring of the
    rank's attention (it holds inner x the tokens for 1 / inner of the heads). 405B at 32k, cp 16 with 8
    ranks a node, a ring of 2: one step of K/V, 2048 tokens x 2 x 1024 / tp 8 x 2 B = 1 MiB at 1 GB/s
    (1.05 ms) hides behind half of a 4 ms attention (2 ms), not behind 1/16 of it (0.25 ms)."""
    from costmodel.comm import Link
    from costmodel.layer import LayerTimes

    plan = cm.Plan(tp=8, pp=1, dp=1, cp=16, cp_comm="a2a+p2p", micro_batch_size=1, global_batch_size=1)
    assert context.kv_chunk_bytes(LLAMA_405B, plan) == 2**20
    lt = LayerTimes(forward_seconds=0.01, backward_seconds=0.02, attention_forward_seconds=4e-3, op_replay_seconds=0.0)
    eff = replace(cm.Efficiency(), collective_sm_share=0.0)
    forward, backward = context.ring_seconds(LLAMA_405B, plan, lt, 2, Link(1e9, 0.0), eff)
    assert forward == 0.0 and backward == 0.0


@pytest.mark.parametrize("stage_index, plain, overlapped", [(0, 39, 40), (7, 25, 26)])
def test_the_moe_overlap_warms_up_one_chunk_more(stage_index, plain, overlapped):
    """pp 8 x vpp 4, 128 micro-batches: Megatron-core's interleaved schedule warms up 2 (8 - r - 1) + 3 x 8
    chunk-passes and holds the one in progress (39 on rank 0, 25 on rank 7); with the expert-parallel A2A
    overlap's combined 1F1B one forward more (get_pp_rank_microbatches, overlap_moe_expert_parallel_comm):
    40 and 26, each a quarter of the rank's layers."""
    assert memory.inflight_microbatches(8, 4, 128, stage_index) == plain / 4
    assert memory.inflight_microbatches(8, 4, 128, stage_index, extra_warmup=1) == overlapped / 4
