"""Context parallelism as the frameworks run it (a 2026-12-07 audit of costmodel/context.py against Transformer Engine
d0067d0, Megatron-LM d98e8a64, torchtitan 4f9e9a47 and torch's FlexAttention context parallelism).

Hand arithmetic throughout: Llama 3 70B (64 heads, 8 KV heads of 128, hidden 8192) at 131,072 tokens, tp 8, cp 8,
one sequence a micro-batch: a rank holds 16,384 tokens; its K and V (1 KV head after TP) are 16384 x 2 x 128 x 2 B
= 8 MiB; its attention output (8 heads of 128 after TP) 16384 x 1024 x 2 B = 32 MiB.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel import context, memory, stage
from costmodel import types as cm
from planner.frameworks import REGISTRY, Machine, megatron
from planner.frameworks.base import knob_violations
from planner.inputs.loading import build_cluster, load_cluster_spec, load_model_spec

MIB = 2**20
MODEL = load_model_spec("llama3-70b", 131072).to_model()
PLAN = cm.Plan(tp=8, cp=8, pp=4, dp=1, sequence_parallel=True, global_batch_size=16, recompute="none")


def terms(plan: cm.Plan) -> dict:
    return stage.layer_activation_terms(MODEL, plan, 0, plan.recompute)


def test_chunk_sizes_by_hand():
    assert context.kv_chunk_bytes(MODEL, PLAN) == 8 * MIB
    assert context.out_chunk_bytes(MODEL, PLAN) == 32 * MIB


@pytest.mark.parametrize("cp_comm", ["a2a", "a2a+p2p"])
def test_ulysses_keeps_the_attention_output_twice(cp_comm):
    """Transformer Engine's a2a attention saves its head-split output before the all-to-all back
    (AttnFuncWithCPAndQKVOA2A.forward, out_part), beside the sequence-split one the output projection saves:
    32 MiB more a layer; nothing more when selective recompute replays core attention, or for the ring."""
    ulysses = replace(PLAN, cp_comm=cp_comm)
    assert terms(ulysses)["cp_attn_out"] == 32 * MIB
    assert sum(terms(ulysses).values()) - sum(terms(PLAN).values()) == 32 * MIB
    assert "cp_attn_out" not in terms(replace(ulysses, recompute="selective", recompute_modules=("core_attn",)))
    assert "cp_attn_out" not in terms(PLAN)


def test_the_saved_all_gather_keeps_the_whole_sequences_keys_and_values():
    """torch's flex_cp_allgather, as torchtitan 0.3.0 runs it: flex_attention saves the gathered K/V, (cp - 1) x
    8 MiB = 56 MiB more a layer than Transformer Engine's all-gather, which re-gathers in backward; and while the
    attention runs, the gradients of the gathered K/V (8 chunks, 64 MiB) where TE's holds K/V and their
    gradients (16 chunks)."""
    saved, te = replace(PLAN, cp_comm="all_gather_saved"), replace(PLAN, cp_comm="all_gather")
    assert terms(saved)["cp_gathered_kv"] == 56 * MIB
    assert sum(terms(saved).values()) - sum(terms(te).values()) == 56 * MIB
    assert context.exchange_buffer_bytes(MODEL, saved) == 64 * MIB
    assert context.exchange_buffer_bytes(MODEL, te) == 128 * MIB


def test_the_saved_all_gather_reduce_scatters_in_backward_without_gathering_again():
    """flex_cp_allgather's registered backward is one reduce-scatter of the K/V gradients; Transformer Engine's
    all-gather gathers K/V again in backward and reduce-scatters their gradients. A reduce-scatter and an
    all-gather of the same buffer cost the same (costmodel/comm.py), so TE's backward is twice the saved one's
    and each forward is one gather."""
    cluster = build_cluster(load_cluster_spec("dgx-h100"), 256)
    eff = cm.Efficiency()
    lt = stage.stage_kernels(MODEL, cluster, PLAN, eff).layers[0]
    f_te, b_te = context.layer_exposed_seconds(MODEL, cluster, replace(PLAN, cp_comm="all_gather"), lt, eff)
    f_saved, b_saved = context.layer_exposed_seconds(MODEL, cluster, replace(PLAN, cp_comm="all_gather_saved"), lt,
                                                     eff)
    assert f_saved == f_te > 0
    assert b_te == pytest.approx(2 * b_saved, rel=1e-12)


def test_ulysses_needs_even_heads_per_tp_rank_in_megatron():
    """Transformer Engine disables its fused attention for a2a and a2a+p2p unless a TP rank's query heads and
    KV-head groups are even (dot_product_attention/utils.py get_attention_backend), and nothing else runs
    Megatron's CP layout: 70B at tp 8 has 8 query heads but 1 KV head a rank; at tp 4, 16 and 2."""
    plan = replace(PLAN, cp_comm="a2a+p2p")
    machine = Machine("hopper", 8, 8, True)
    assert "even number of query heads and KV-head groups" in megatron.ulysses_even_heads(MODEL, machine, plan)
    assert megatron.ulysses_even_heads(MODEL, machine, replace(plan, tp=4)) is None
    assert megatron.ulysses_even_heads(MODEL, machine, replace(plan, cp_comm="p2p")) is None


def test_each_framework_runs_its_own_all_gather():
    """torchtitan's CP is the saved all-gather; Megatron-LM's cp_comm_type all_gather is Transformer Engine's,
    and it has no saved one."""
    saved = replace(PLAN, cp_comm="all_gather_saved", zero_stage=3, pp=1, dp=4, global_batch_size=4)
    assert not any("cp_comm" in v for v in knob_violations(REGISTRY["torchtitan"], saved))
    assert any("all_gather_saved" in v for v in knob_violations(REGISTRY["megatron"], saved))
    assert any("context-parallel exchange all_gather:" in v
               for v in knob_violations(REGISTRY["torchtitan"], replace(saved, cp_comm="all_gather")))


def test_the_search_keeps_what_each_exchange_keeps():
    """The search's activation table (planner/search/tables.py) shares a stage pass among exchanges that keep the
    same activations (memory.cp_activation_class) and adds what each holds while attention runs: its peak
    memory equals the cost model's for every exchange."""
    from costmodel.step import estimate
    from planner.search import tables
    from planner.search.space import SearchSpec, build_space

    cluster = build_cluster(load_cluster_spec("dgx-h100"), 64)
    spec = SearchSpec(MODEL, cluster, 8, ("megatron",), fixed={"tp": 2, "cp": 4, "pp": 1})
    space = build_space(spec)
    ctx = tables.TableContext(spec, cm.Efficiency())
    checked = set()
    for lay, knobs in space.knobs.items():
        for k in knobs:
            if k.cpc in checked:
                continue
            plan = tables.LayoutTables(ctx, lay).plan(k)
            est = estimate(MODEL, cluster, plan, cm.Efficiency())
            assert tables.LayoutTables(ctx, lay).peak_memory(k) == pytest.approx(est.memory_per_gpu_bytes, rel=1e-9)
            checked.add(k.cpc)
    assert {"p2p", "all_gather", "a2a"} <= checked
    assert memory.cp_activation_class("all_gather") == "p2p" and memory.cp_activation_class("a2a+p2p") == "a2a"


def test_the_saved_all_gathers_attention_sweeps_the_whole_sequence():
    """FlexAttention runs a rank's queries against the gathered keys in one call, so its kernel's efficiency is read
    at the sequence's length (compute.flash_attention_fraction, f_max s / (s + s_half)), where a ring step's block
    is s/cp: attention takes [16384 / (16384 + h)] / [131072 / (131072 + h)] of the ring-block time, h the fitted
    half length; the other exchanges keep the s/cp block."""
    from costmodel import compute

    gpu = build_cluster(load_cluster_spec("dgx-h100"), 256).gpu
    eff, s = cm.Efficiency(), 131072
    assert context.kernel_span_divisor(replace(PLAN, cp_comm="all_gather_saved")) == 1
    assert {context.kernel_span_divisor(replace(PLAN, cp_comm=c)) for c in ("p2p", "all_gather", "a2a")} == {8}

    def attention(span_cp: int) -> float:
        return compute.attention_core_seconds(MODEL, 1, 8, gpu, "bf16", True, eff, -1, 8, "flash2", span_cp)

    h = eff.flash_attention_half_seq
    expected = (s / 8 / (s / 8 + h)) / (s / (s + h))
    assert attention(1) / attention(8) == pytest.approx(expected, rel=1e-12)


def test_the_saved_all_gather_gathers_again_under_per_op_recompute():
    """torchtitan's per-op save list has no collective (distributed/activation_checkpoint.py _get_default_save_ops),
    so under "op" recompute the gathered K/V are not kept (nor counted: saved_ops alone) and backward gathers them
    again, as Transformer Engine's all-gather does; with full recompute the replayed forward gathers and backward
    reduce-scatters."""
    assert context.regathers(replace(PLAN, cp_comm="all_gather_saved", recompute="op"))
    assert not context.regathers(replace(PLAN, cp_comm="all_gather_saved", recompute="full"))
    assert context.regathers(replace(PLAN, cp_comm="all_gather")) and not context.regathers(PLAN)
    assert set(terms(replace(PLAN, cp_comm="all_gather_saved", recompute="op"))) == {"saved_ops"}
