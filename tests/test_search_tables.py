"""The search's tables are the cost model's numbers, and the facts tables.py and bounds.py rely on hold.

Each test samples plans of real-sized spaces (catalog models on DGX clusters) and compares with
step.estimate / step.stage_costs directly, so a cost-model change that breaks a table's
dependency assumption fails here, by name.
"""
from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from costmodel import moe, step
from costmodel import types as cm
from costmodel.stage import stage_kernels
from planner.inputs import loading
from planner.search import bounds
from planner.search.space import Knobs, Layout, SearchSpec, build_space, plan_for
from planner.search.tables import LayoutTables, TableContext, class_stage_costs

CASES = [("gpt3-175b", "dgx-a100", 256, None), ("llama3-70b", "dgx-h100", 64, 256),
         ("llama3-405b", "dgx-h100", 1024, None), ("megatron-1.7b", "dgx-a100", 32, None),
         ("llama3-8b", "dgx-b200", 16, 128)]  # Blackwell: one layout of cached per-tensor FP8 weights
SAMPLES = 60


def make_spec(name, cluster, gpus, gbs, **kw) -> SearchSpec:
    spec = loading.load_model_spec(name)
    c = loading.build_cluster(loading.load_cluster_spec(cluster), gpus)
    return SearchSpec(spec.to_model(), c, gbs or spec.global_batch_size, **kw)


def sampled(space, rng, n):
    pairs = [(lay, k) for lay, ks in space.knobs.items() for k in ks]
    return rng.sample(pairs, min(n, len(pairs)))


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def setting(request):
    spec = make_spec(*request.param, precisions=("bf16", "fp8"), grad_dtypes=("", "fp32"))
    return spec, build_space(spec), TableContext(spec, cm.Efficiency())


def test_candidates_equal_estimate(setting):
    spec, space, ctx = setting
    rng = random.Random(1)
    for lay, k in sampled(space, rng, SAMPLES):
        c = LayoutTables(ctx, lay).candidate(k)
        est = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k))
        assert c.step_seconds == pytest.approx(est.step_time_seconds, rel=1e-12)
        assert c.peak_memory_bytes == pytest.approx(est.memory_per_gpu_bytes, rel=1e-12)


MOE_CASES = [("qwen3-30b-a3b", "dgx-h100", 64, 256), ("gpt-oss-120b", "dgx-h100", 64, 256),
             ("qwen3-30b-a3b", "dgx-b200", 8, 256)]  # EP overlap, DeepEP, MoE graphs; the prologue; MXFP8


@pytest.mark.parametrize("case", MOE_CASES, ids=["qwen3-h100", "gpt-oss-h100", "qwen3-b200"])
def test_moe_candidates_equal_estimate(case):
    """test_candidates_equal_estimate on mixture-of-experts spaces, whose knobs (EP overlap, dispatcher, MoE CUDA
    graphs, the prologue, the expert counts on the device) the dense cases never set."""
    spec = make_spec(*case, precisions=("bf16", "fp8", "mxfp8") if "b200" in case[1] else ("bf16",))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    for lay, k in sampled(space, random.Random(3), SAMPLES):
        c = LayoutTables(ctx, lay).candidate(k)
        est = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k))
        assert c.step_seconds == pytest.approx(est.step_time_seconds, rel=1e-12), (lay, k)
        assert c.peak_memory_bytes == pytest.approx(est.memory_per_gpu_bytes, rel=1e-12), (lay, k)


def test_class_stage_costs_equal_stage_costs(setting):
    """One stage_cost per (layers, first, last) class: same time parts, params and layers on every rank,
    and exact stages at the memory-candidate ranks."""
    spec, space, ctx = setting
    rng = random.Random(2)
    for lay, k in sampled(space, rng, SAMPLES):
        plan = plan_for(spec, lay, k)
        full = step.stage_costs(spec.model, spec.cluster, plan, ctx.eff)
        classed = class_stage_costs(spec.model, spec.cluster, plan, ctx.eff)
        for a, b in zip(full, classed, strict=True):
            assert (a.layers, a.params, a.microbatch_seconds, a.compute_seconds) == \
                (b.layers, b.params, b.microbatch_seconds, b.compute_seconds)
        for r in step.memory_candidate_stages(full):
            assert full[r] == classed[r]


def test_kernels_depend_only_on_their_fields(setting):
    """stage_kernels reads tp, cp, ep, etp, the CP exchange, micro-batch, SP, flash, precision, weight casts,
    the attention kernel, the MoE dispatcher, the projections, the RoPE fusion and the loss only (KernelCache's
    key)."""
    spec, space, ctx = setting
    rng = random.Random(3)
    pairs = sampled(space, rng, SAMPLES)
    compared = 0
    for (lay, k), (lay2, k2) in zip(pairs, pairs[1:], strict=False):
        plan = plan_for(spec, lay, k)
        dp = plan.num_gpus // (lay.tp * lay.cp * lay2.pp)  # lay2's pipeline, the GPU count kept where it divides
        other = plan_for(spec, replace(lay2, tp=lay.tp, mbs=lay.mbs, cp=lay.cp, ep=lay.ep, etp=lay.etp, dp=dp),
                         replace(k2, sp=k.sp, precision=k.precision, casts=k.casts, cpc=k.cpc, attn=k.attn, epd=k.epd,
                                 proj=k.proj, rof=k.rof, xent=k.xent))
        if other.num_gpus == plan.num_gpus:
            assert stage_kernels(spec.model, spec.cluster, plan, ctx.eff) == \
                stage_kernels(spec.model, spec.cluster, other, ctx.eff)
            compared += 1
    assert compared >= 10  # of the 59 neighbouring pairs, enough share a GPU count to test the key


def test_lower_bound_holds(setting):
    """bounds.lower_bound <= every plan's step time of the layout (no recompute and SP are fastest)."""
    spec, space, ctx = setting
    rng = random.Random(4)
    for lay in rng.sample(list(space.knobs), min(SAMPLES, len(space.knobs))):
        tables = LayoutTables(ctx, lay)
        lb = bounds.lower_bound(tables, space.knobs[lay])
        assert all(lb <= c.step_seconds * (1 + 1e-12) for c in tables.candidates(space.knobs[lay]))


@pytest.mark.parametrize("case", [("mixtral-8x7b", "dgx-h100", 64, 256), ("qwen3-30b-a3b", "dgx-b200", 8, 512)],
                         ids=["mixtral-8x7b", "qwen3-30b-a3b"])
def test_lower_bound_holds_over_the_moe_knobs(case):
    """Over MoE plans whose knobs include the dispatcher (all-to-all or DeepEP) and the MoE CUDA graphs,
    loose and tight bounds stay below every plan of the layout."""
    spec = make_spec(*case, precisions=("bf16", "mxfp8") if case[1] == "dgx-b200" else ("bf16",))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    assert {(k.epd, k.mcg) for ks in space.knobs.values() for k in ks} >= {("alltoall", True), ("deepep", True)}
    for lay in random.Random(41).sample(list(space.knobs), min(30, len(space.knobs))):
        tables = LayoutTables(ctx, lay)
        steps = [c.step_seconds for c in tables.candidates(space.knobs[lay])]
        for tight in (False, True):
            assert bounds.lower_bound(tables, space.knobs[lay], tight) <= min(steps) * (1 + 1e-12), lay


@pytest.mark.parametrize("case", [("dgx-b200", 16, 4), ("gb200-nvl72", 64, 64)], ids=["b200-16", "gb200-64"])
def test_lower_bound_holds_with_tp_overlap_fixed_off(case):
    """With --fix tp_comm_overlap=false (what `suggest` advises to stay where runs were published), a small
    model at tp 8 runs faster without sequence parallelism (its backward all-reduce hides beside the
    weight-gradient GEMMs, where SP shows the output gradient's all-gather): the bounds once took SP on as
    the fastest and sat up to 5% above the best plan of the Megatron-1.7B layouts on 16 B200. And under
    SP torchtitan's gathered inputs spare the backward's re-gather, which the bounds once left in (2.7%
    above on 64 GB200). Both bounds stay below every plan of every layout."""
    spec = make_spec("megatron-1.7b", *case, precisions=("bf16",), fixed={"tpo": False})
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    assert {(lay.tp > 1, k.sp, k.spg) for lay, ks in space.knobs.items() for k in ks} >= {(True, False, False),
                                                                                         (True, True, True)}
    for lay in space.knobs:
        tables, knobs = LayoutTables(ctx, lay), space.knobs[lay]
        best = min(c.step_seconds for c in tables.candidates(knobs))
        for tight in (False, True):
            assert bounds.lower_bound(tables, knobs, tight) <= best * (1 + 1e-12), (lay, tight)


def test_tight_bound_takes_tp_and_ep_overlap_as_a_pair():
    """Before Blackwell Megatron-LM's machine rules offer TP overlap or EP overlap, not both
    (megatron.overlap_connections). The tight bound once took each knob's fastest value apart and so
    priced the pair no knob offers: Mixtral 8x22B on 128 H100 tabled 41 layouts for its top 5, now 14.
    It still holds below every plan, and is above the loose bound (which takes the pair) somewhere."""
    spec = make_spec("mixtral-8x7b", "dgx-h100", 64, 256)
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    split = [lay for lay in space.knobs if lay.tp > 1 and lay.ep > 1]
    assert split and not any(k.tpo and k.epo for lay in split for k in space.knobs[lay])
    for lay in random.Random(53).sample(split, min(20, len(split))):
        tables, knobs = LayoutTables(ctx, lay), space.knobs[lay]
        tight = bounds.lower_bound(tables, knobs, tight=True)
        assert tight <= min(c.step_seconds for c in tables.candidates(knobs)) * (1 + 1e-12), lay
    from planner.commands.main import build_parser
    from planner.commands.suggest import search_spec
    from planner.search import suggest

    args = build_parser().parse_args(["suggest", "mixtral-8x22b", "dgx-h100", "--gpus", "128", "--gbs", "1024"])
    result = suggest.run(search_spec(args)[1], suggest.Options(args.top, args.objective, args.max_memory_fraction))
    assert result.layouts_tabled <= 20


def test_deepep_in_one_domain_moves_what_the_all_to_all_moves():
    """space.knob_combinations drops the all-to-all where the expert-parallel group lies in one NVLink
    domain and DeepEP with the MoE CUDA graphs is offered (and DeepEP without them where the all-to-all
    is): there the two dispatchers' exchanges take the same time and memory, and only the host
    synchronisation differs."""
    from costmodel import topology

    spec = make_spec("mixtral-8x7b", "dgx-h100", 64, 256)
    space = build_space(spec)
    compared = 0
    for lay, k in sampled(space, random.Random(43), SAMPLES):
        if lay.ep <= 1 or topology.ranks_per_domain(lay.ep, lay.etp, spec.cluster) < lay.ep:
            continue
        plan = plan_for(spec, lay, k)
        a2a = step.estimate(spec.model, spec.cluster, replace(plan, ep_dispatch="alltoall", moe_cuda_graphs=False))
        deepep = step.estimate(spec.model, spec.cluster, replace(plan, ep_dispatch="deepep", moe_cuda_graphs=False))
        graphed = step.estimate(spec.model, spec.cluster, replace(plan, ep_dispatch="deepep", moe_cuda_graphs=True))
        assert deepep.step_time_seconds == pytest.approx(a2a.step_time_seconds, rel=1e-12), lay
        assert graphed.step_time_seconds <= a2a.step_time_seconds
        assert graphed.memory_per_gpu_bytes == a2a.memory_per_gpu_bytes == deepep.memory_per_gpu_bytes
        compared += 1
    assert compared >= 10


def test_tight_bound_holds_over_any_subset_of_knobs():
    """The tight bound is taken over the knobs that fit, any subset of a layout's. With two frameworks
    one may offer no recompute without sequence parallel (DeepSpeed) and the other sequence parallel
    only with selective recompute (Megatron-LM, when its no-recompute plans do not fit): the bound
    once kept only knobs offering every fastest value at once, found none and raised
    (`suggest llama3-8b aws-p4d-24xlarge --gpus 32 --gbs 256 --framework megatron,deepspeed`)."""
    spec = make_spec("llama3-8b", "aws-p4d-24xlarge", 32, 256, frameworks=("megatron", "deepspeed"))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    rng, checked = random.Random(47), 0
    for lay in rng.sample(list(space.knobs), min(25, len(space.knobs))):
        tables, knobs = LayoutTables(ctx, lay), space.knobs[lay]
        subsets = [tuple(k for k in knobs if not (k.recompute == "none" and k.sp))]
        subsets += [tuple(rng.sample(knobs, max(1, len(knobs) // 3))) for _ in range(3)]
        for subset in filter(None, subsets):
            best = min(c.step_seconds for c in tables.candidates(subset))
            assert bounds.lower_bound(tables, subset, tight=True) <= best * (1 + 1e-12), lay
            checked += 1
    assert checked >= 50


def test_cpsat_answers_where_the_tight_bound_raised(capsys):
    from planner.commands.main import main

    argv = ["suggest", "llama3-8b", "aws-p4d-24xlarge", "--gpus", "32", "--gbs", "256", "--framework",
            "megatron,deepspeed", "--json"]
    assert main(argv) == 0
    cpsat = json.loads(capsys.readouterr().out)["plans"][0]["step_time_s"]
    assert main(argv + ["--solver", "enumerate"]) == 0
    assert cpsat == pytest.approx(json.loads(capsys.readouterr().out)["plans"][0]["step_time_s"], rel=1e-9)


def test_lower_bound_holds_where_megatron_runs_rope_unfused():
    """gpt-oss's YaRN under Megatron-LM: every knob combination runs RoPE unfused (Knobs.rof False, one per
    framework and model) and the experts' activation with its prologue (Knobs.actp True, likewise), and the
    bounds, which take the fused RoPE and no prologue, stay below every plan."""
    spec = make_spec("gpt-oss-120b", "gb200-nvl72", 64, 1280, frameworks=("megatron",))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    assert {k.rof for ks in space.knobs.values() for k in ks} == {False}
    assert {k.actp for ks in space.knobs.values() for k in ks} == {True}
    for lay in random.Random(43).sample(list(space.knobs), min(20, len(space.knobs))):
        tables = LayoutTables(ctx, lay)
        lb = bounds.lower_bound(tables, space.knobs[lay])
        assert all(lb <= c.step_seconds * (1 + 1e-12) for c in tables.candidates(space.knobs[lay]))


def test_lower_bound_without_the_fast_knobs():
    """With recompute fixed to full and SP off the bound falls back to those knobs, and still holds."""
    spec = make_spec("llama3-70b", "dgx-h100", 64, 256, fixed={"recompute": "full", "sp": False})
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    assert {k.recompute for ks in space.knobs.values() for k in ks} == {"full"}
    for lay in list(space.knobs)[:40]:
        tables = LayoutTables(ctx, lay)
        lb = bounds.lower_bound(tables, space.knobs[lay])
        assert all(lb <= c.step_seconds for c in tables.candidates(space.knobs[lay]))


def test_loose_bound_charges_full_recompute_when_it_is_all_there_is():
    """When every knob combination of a layout recomputes fully, the loose bound prices that replay (a
    forward pass per micro-batch more, Korthikanti et al. 2022 Sec 5) instead of the no-recompute
    flush, which would sit below every plan by that much and prune nothing."""
    spec = make_spec("llama3-70b", "dgx-h100", 64, 256, fixed={"recompute": "full"})
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    for lay in list(space.knobs)[:20]:
        tables, knobs = LayoutTables(ctx, lay), space.knobs[lay]
        unrecomputed = tuple(replace(k, recompute="none") for k in knobs)
        full, none = bounds.lower_bound(tables, knobs), bounds.lower_bound(tables, unrecomputed)
        assert full > none * 1.1, lay
        assert full <= min(c.step_seconds for c in tables.candidates(knobs)) * (1 + 1e-12)


def test_best_first_keeps_the_exact_top_k():
    """Tabling in bound order returns the same top K as tabling every layout."""
    from planner.search import cpsat
    spec = make_spec("gpt3-175b", "dgx-a100", 256, None)
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    cap = spec.cluster.gpu.memory_bytes * 0.9
    pruned = bounds.table_best_first(space, ctx, cap, 5)
    assert pruned.layouts_tabled < pruned.layouts_bounded
    a = cpsat.solve_top_k(pruned.candidates, spec.cluster, "time", cap, 5).chosen
    b = cpsat.solve_top_k(bounds.table_all(space, ctx), spec.cluster, "time", cap, 5).chosen
    assert [(c.layout, c.knobs) for c in a] == [(c.layout, c.knobs) for c in b]


def test_memory_is_affine_in_activations():
    """tables.activation_slope: memory_breakdown's total grows by the slope per activation byte."""
    spec = make_spec("llama3-70b", "dgx-h100", 64, 256)
    ctx = TableContext(spec, replace(cm.Efficiency(), memory_fragmentation_fraction=0.05))
    assert ctx.slope == pytest.approx(1.05)
    plan = plan_for(spec, next(iter(build_space(spec).knobs)), Knobs(3, "none", True, "bf16", ""))
    stage = step.stage_costs(spec.model, spec.cluster, plan, ctx.eff)[0]
    gen = spec.cluster.gpu.generation
    total = sum(step.memory_breakdown(spec.model, plan, stage, ctx.eff, gen).values())
    states = sum(step.memory_breakdown(spec.model, plan, replace(stage, activation_bytes=0.0), ctx.eff, gen).values())
    assert total == pytest.approx(states + ctx.slope * stage.activation_bytes, rel=1e-12)


def test_least_memory_of_a_layout_is_its_smallest_plan(setting):
    """nofit names the plan with the least memory from LayoutTables.min_memory: it must be the least
    step.estimate peak over every knob combination of the layout."""
    spec, space, ctx = setting
    rng = random.Random(7)
    layouts = rng.sample(list(space.knobs), min(25, len(space.knobs)))
    for lay in layouts:
        knobs = space.knobs[lay]
        bound = LayoutTables(ctx, lay).min_memory(knobs)
        peaks = [step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).memory_per_gpu_bytes for k in knobs]
        assert bound == pytest.approx(min(peaks), rel=1e-12), (lay, bound, min(peaks))


def test_memory_never_falls_as_the_micro_batch_grows(setting):
    """bounds.fitting_tables does not try a knob combination at larger micro-batches once it does not fit
    at a smaller one."""
    spec, space, ctx = setting
    families = {}
    for lay in space.knobs:
        families.setdefault((lay.tp, lay.pp, lay.dp, lay.vpp), []).append(lay)
    checked = 0
    for lays in list(families.values())[:40]:
        lays = sorted(lays, key=lambda x: x.mbs)
        for small, large in zip(lays, lays[1:]):
            for k in set(space.knobs[small]) & set(space.knobs[large]):
                assert LayoutTables(ctx, small).peak_memory(k) <= LayoutTables(ctx, large).peak_memory(k) * (1 + 1e-12)
                checked += 1
    assert checked >= 10


def test_peak_memory_without_timing_equals_the_candidates(setting):
    """fitting_tables decides what fits from LayoutTables.peak_memory alone: it must be the peak the
    timed candidate (and step.estimate) reports."""
    spec, space, ctx = setting
    rng = random.Random(11)
    for lay, k in sampled(space, rng, SAMPLES):
        t = LayoutTables(ctx, lay)
        assert t.peak_memory(k) == pytest.approx(t.candidate(k).peak_memory_bytes, rel=1e-12)


@pytest.mark.parametrize("case", [("qwen3-30b-a3b", "dgx-h100", 64, 256), ("gpt-oss-120b", "dgx-h100", 64, 256)],
                         ids=["qwen3-30b-a3b", "gpt-oss-120b"])
def test_peak_memory_without_timing_reads_the_ep_overlap_and_the_prologue(case):
    """The same on the MoE plans whose activations read two knobs of Knobs.memory besides the dense ones: the EP
    overlap under an interleaved pipeline (its schedule warms up one chunk more, memory.inflight_microbatches)
    and the experts' activation prologue (Megatron-LM's gpt-oss: what its clamps keep). The walk once built its
    activations with both off, so it took such plans at up to 16% below their peak (gpt-oss-120b, tp 1, pp 2,
    vpp 3, ep 8, mbs 4: 217.8 against 258.5 GiB) and kept, of the ones that offload, a count that did not fit."""
    spec = make_spec(*case)
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    pairs = [(lay, k) for lay, ks in space.knobs.items() for k in ks if k.actp or (k.epo and lay.pp > 1 and lay.vpp > 1)]
    assert len(pairs) >= SAMPLES
    for lay, k in random.Random(17).sample(pairs, SAMPLES):
        peak = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).memory_per_gpu_bytes
        assert LayoutTables(ctx, lay).peak_memory(k) == pytest.approx(peak, rel=1e-12), (lay, k)


NEW_DIMENSIONS = [("llama3-8b", "dgx-h100", 64, 64), ("mixtral-8x7b", "dgx-h100", 64, 256)]  # cp; ep


@pytest.mark.parametrize("case", CASES + NEW_DIMENSIONS, ids=[c[0] for c in CASES + NEW_DIMENSIONS])
def test_activation_floor_is_below_every_peak(case):
    """bounds.memory_walk skips a (tp, cp, pp, dp) family whose slope x activation_floor_bytes is over
    the capacity: no plan of the family may peak under it."""
    spec = make_spec(*case)
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    rng = random.Random(5)
    for lay, k in sampled(space, rng, SAMPLES):
        floor = ctx.slope * bounds.activation_floor_bytes(spec, lay.tp, lay.cp, lay.pp, lay.dp)
        peak = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).memory_per_gpu_bytes
        assert 0 < floor <= peak * (1 + 1e-12), (lay, k)


@pytest.mark.parametrize("case", NEW_DIMENSIONS + CASES[1:2], ids=[c[0] for c in NEW_DIMENSIONS + CASES[1:2]])
def test_overlap_on_is_never_slower_nor_larger(case):
    """space.undominated drops TP-overlap-off (and MoE-CUDA-graphs-off) combinations when the same one with it on
    is offered: on sampled plans, turning it on never lengthens the step nor changes memory. The EP overlap, which
    it keeps both ways, is checked here as well at these models' lengths, where it holds too, but for the memory
    under an interleaved pipeline, whose schedule holds one chunk more
    (test_ep_overlap_can_be_slower_so_both_are_searched: not at 131,072 tokens)."""
    spec = make_spec(*case)
    space = build_space(spec)
    rng = random.Random(9)
    compared = 0
    for lay, k in sampled(space, rng, SAMPLES):
        plan = plan_for(spec, lay, k)
        for field, applies in (("tp_comm_overlap", plan.sequence_parallel and plan.tp > 1),
                               ("ep_overlap", spec.model.moe is not None),
                               ("moe_cuda_graphs", spec.model.moe is not None)):
            if not applies:
                continue
            off = step.estimate(spec.model, spec.cluster, replace(plan, **{field: False}))
            on = step.estimate(spec.model, spec.cluster, replace(plan, **{field: True}))
            assert on.step_time_seconds <= off.step_time_seconds * (1 + 1e-12), (lay, k, field)
            if field == "ep_overlap" and plan.pp > 1 and plan.vpp > 1:
                assert on.memory_per_gpu_bytes >= off.memory_per_gpu_bytes  # (equal when all are in warm-up)
            else:
                assert on.memory_per_gpu_bytes == pytest.approx(off.memory_per_gpu_bytes, rel=1e-12)
            compared += 1
    assert compared >= 10


def test_ep_overlap_can_be_slower_so_both_are_searched():
    """At 131,072 tokens each EP exchange the overlap launches waits for the attention kernel then running
    (stage.ep_exposed_seconds), so on qwen3-30b-a3b (64 B200, pp 4) the overlap can be slower than the exchanges
    alone: tp 1, vpp 2, ep 2, no recompute takes 52.3 s with it and 49.8 s without. The search once dropped the
    combination without it (space.undominated), and its bounds took the overlap on as the fastest whether offered
    or not: at vpp 1, where no combination offers it, the fifth best group came out (tp 2, dp 8) at 63.8 s where
    every plan scored gives (tp 4, ep 16) at 60.0 s. Now the best-first tabling ranks the groups as every plan
    does."""
    base = make_spec("qwen3-30b-a3b", "dgx-b200", 64, 64)
    model = replace(base.model, seq_length=131072)
    spec = SearchSpec(model, base.cluster, 64, fixed={"cp": 1, "pp": 4})
    lay = Layout(tp=1, pp=4, dp=16, vpp=2, mbs=1, cp=1, ep=2, etp=1)
    on = next(k for k in build_space(spec).knobs[lay] if k.epo and k.recompute == "none")
    seconds = [step.estimate(model, spec.cluster, plan_for(spec, lay, k)).step_time_seconds
               for k in (on, replace(on, epo=False))]
    assert seconds[0] > seconds[1]

    spec = SearchSpec(model, base.cluster, 64, fixed={"cp": 1, "pp": 4, "vpp": 1})
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    cap = spec.cluster.gpu.memory_bytes

    def best_groups(candidates) -> list[tuple]:
        best: dict[tuple, float] = {}
        for c in candidates:
            if c.peak_memory_bytes <= cap:
                best[c.layout.group] = min(best.get(c.layout.group, float("inf")), c.step_seconds)
        return sorted((round(t, 9), g) for g, t in best.items())[:5]

    assert best_groups(bounds.table_best_first(space, ctx, cap, 5).candidates) == \
        best_groups(bounds.table_all(space, ctx))


@pytest.mark.parametrize("case", CASES[1:3] + NEW_DIMENSIONS, ids=[c[0] for c in CASES[1:3] + NEW_DIMENSIONS])
def test_first_stage_states_floor_is_below_every_peak(case):
    """bounds.memory_walk skips a family whose first stage cannot hold its least model states beside
    the activation floor: that sum must be below the peak of every plan of the layout."""
    spec = make_spec(*case, precisions=("bf16", "fp8"))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    rng = random.Random(13)
    for lay, k in sampled(space, rng, SAMPLES):
        t = LayoutTables(ctx, lay)
        floor = t.first_stage_states_floor(space.knobs[lay])
        floor += ctx.slope * bounds.activation_floor_bytes(spec, lay.tp, lay.cp, lay.pp, lay.dp)
        peak = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).memory_per_gpu_bytes
        assert floor <= peak * (1 + 1e-12), (lay, k)


@pytest.mark.parametrize("case", CASES[1:3] + NEW_DIMENSIONS, ids=[c[0] for c in CASES[1:3] + NEW_DIMENSIONS])
def test_no_larger_knobs_never_peak_higher(case):
    """bounds.layout_peaks does not size a combination that a no-larger one (bounds.no_larger) already
    overflows: on every layout sampled, each such pair's peaks are ordered."""
    spec = make_spec(*case)
    space = build_space(spec)
    rng = random.Random(17)
    pairs = 0
    for lay in rng.sample(list(space.knobs), min(40, len(space.knobs))):
        knobs = space.knobs[lay]
        peaks = {k: step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).memory_per_gpu_bytes for k in knobs}
        for a in knobs:
            for b in knobs:
                if a is not b and bounds.no_larger(a, b):
                    pairs += 1
                    assert peaks[a] <= peaks[b] * (1 + 1e-12), (lay, a, b)
    assert pairs > 0


def test_no_larger_reads_the_prologue_and_the_loss():
    """The same on one layout where two frameworks' combinations differ in the experts' activation prologue and
    the loss (gpt-oss-120b at pp 1: Megatron-LM's with the quick-GEGLU prologue, torchtitan's without): a selective
    recompute with the prologue that does not fit once marked torchtitan's no-recompute combination as not fitting
    (88.9 against 72.1 GiB on 80)."""
    spec = make_spec("gpt-oss-120b", "dgx-h100", 128, 512)
    lay = Layout(tp=1, pp=1, dp=128, vpp=1, mbs=2, cp=1, ep=4, etp=1)
    knobs = build_space(spec).knobs[lay]
    assert {k.actp for k in knobs} == {False, True}
    peaks = {k: step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).memory_per_gpu_bytes for k in knobs}
    pairs = [(a, b) for a in knobs for b in knobs if a is not b and bounds.no_larger(a, b)]
    assert pairs and all(peaks[a] <= peaks[b] * (1 + 1e-12) for a, b in pairs)


def test_tight_bound_takes_the_projections_per_op_recompute_replays():
    """Per-op recompute replays what the projections' own outputs do not keep, so torchtitan's split QKV replays
    less than the fused projections the bounds take elsewhere: llama3-8b at 32,768 tokens, tp 1, pp 4, vpp 4, cp 8,
    mbs 4, one such combination timed at 16.0334 s had a tight bound of 16.0411 s."""
    base = make_spec("llama3-8b", "dgx-h100", 64, 128)
    spec = SearchSpec(replace(base.model, seq_length=32768), base.cluster, 128)
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    lay = Layout(tp=1, pp=4, dp=2, vpp=4, mbs=4, cp=8, ep=1, etp=1)
    t = LayoutTables(ctx, lay)
    ops = [k for k in space.knobs[lay] if k.recompute == "op" and k.proj != "fused"]
    assert ops
    for k in ops:
        timed = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).step_time_seconds
        assert bounds.lower_bound(t, (k,), tight=True) <= timed * (1 + 1e-12), k


def test_lower_bound_holds_with_context_parallel_exchanges():
    """bounds.fastest_exchanges drops the CP exchanges another beats on every layer kind: the loose and
    tight bounds must still be below every plan of each layout (a 32k-token model, cp up to 8, every
    exchange Megatron-LM and torchtitan offer: p2p, all_gather, a2a, a2a+p2p and the saved all-gather)."""
    spec = make_spec("llama3-8b", "dgx-h100", 64, 64)
    spec = replace(spec, model=replace(spec.model, seq_length=32768))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    cp_layouts = [lay for lay in space.knobs if lay.cp > 1]
    assert len({k.cpc for lay in cp_layouts for k in space.knobs[lay]}) == 5
    dropped = 0
    for lay in random.Random(19).sample(cp_layouts, 30):
        tables = LayoutTables(ctx, lay)
        keys = {("none", lay.tp > 1, k.precision, k.casts, lay.tp > 1, k.cpc, False, k.attn) for k in space.knobs[lay]}
        dropped += len(keys) - len(bounds.fastest_exchanges(tables, keys))
        steps = [c.step_seconds for c in tables.candidates(space.knobs[lay])]
        for tight in (False, True):
            assert bounds.lower_bound(tables, space.knobs[lay], tight) <= min(steps) * (1 + 1e-12), lay
    assert dropped > 0


# DeepSeek-V3: MLA, shared experts, dense first layers, MTP; gpt-oss: every other layer windowed to 128 tokens;
# Llama 4 Maverick: MoE every other layer, top-1 routing with a shared expert
FLOOR_CASES = CASES + NEW_DIMENSIONS + [("deepseek-v3", "dgx-h100", 256, 1024),
                                        ("gpt-oss-120b", "gb200-nvl72", 64, 256),
                                        ("llama4-maverick", "dgx-h100", 256, 1024)]


@pytest.mark.parametrize("case", FLOOR_CASES, ids=[c[0] for c in FLOOR_CASES])
def test_step_floor_is_below_every_plan(case):
    """step.step_seconds_floor (what planner size prunes counts with) is below the step of every plan
    sampled, in every precision searched, and not so far below that it prunes nothing."""
    spec = make_spec(*case, precisions=("bf16", "fp8"))
    floor = step.step_seconds_floor(spec.model, spec.cluster, spec.global_batch_size, precisions=("bf16", "fp8"))
    space = build_space(spec)
    worst = 0.0
    for lay, k in sampled(space, random.Random(23), SAMPLES):
        seconds = step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).step_time_seconds
        assert 0 < floor <= seconds, (lay, k)
        worst = max(worst, floor / seconds)
    print(f"{case[0]}: floor {floor:.3f} s, at most {worst:.2f} of a sampled plan's step")
    assert worst > FLOOR_SHARE.get(case[0], 0.2)  # a floor near zero would prune nothing


# gpt-oss's Megatron-LM plans wait on the host twice per MoE layer and micro-batch (the all-to-all dispatcher's
# split sizes and the activation prologue's copy, Plan.moe_act_prologue), which a floor over every stack cannot
# count: 0.197 of the best sampled plan since the prologue was priced (0.2-0.25 before)
FLOOR_SHARE = {"gpt-oss-120b": 0.15}


def test_step_floor_counts_attention_at_long_context(monkeypatch):
    """At 64k tokens (attention most of a layer's work) the floor stays under every sampled plan, context
    parallel ones included, and within 2x of the best sampled one: its attention term is what keeps it there
    (without it the weight GEMMs alone are under a fifth of that plan's step)."""
    spec = make_spec("llama3-8b", "dgx-h100", 64, 32, precisions=("bf16", "fp8"))
    spec = replace(spec, model=replace(spec.model, seq_length=65536))

    def floor() -> float:
        return step.step_seconds_floor(spec.model, spec.cluster, spec.global_batch_size, precisions=("bf16", "fp8"))

    steps = [step.estimate(spec.model, spec.cluster, plan_for(spec, lay, k)).step_time_seconds
             for lay, k in sampled(build_space(spec), random.Random(29), SAMPLES)]
    assert 0 < floor() <= min(steps) < 2 * floor()
    monkeypatch.setattr(step, "attention_seconds_floor", lambda *args: 0.0)
    assert floor() < 0.2 * min(steps)


def routed_model(experts: int, k: int, capacity: float = 0.0) -> cm.Model:
    """Mixtral 8x7B with other routed experts (1024 wide)."""
    routed = cm.Moe(num_experts=experts, experts_per_token=k, ffn_hidden_size=1024, capacity_factor=capacity)
    return replace(loading.load_model_spec("mixtral-8x7b").to_model(), moe=routed)


@pytest.mark.parametrize("experts, k, capacity",
                         [(256, 8, 0.0), (8, 2, 0.0), (128, 1, 0.0), (64, 6, 0.5), (16, 4, 1.25)])
def test_routed_rows_floor_is_below_every_layout(experts, k, capacity):
    """step.routed_expert_rows_floor against the rows costmodel/moe.py gives each GPU's local experts
    (rounded, at least one): per token, what a GPU's experts run (its rows per local expert x local
    experts, over etp for the etp-split widths) never drops under the floor's k x row factor x 2/3,
    over tokens per micro-batch from 1 to 2^16, tp up to 8, every ep dividing the experts, etp up to 8."""
    model = routed_model(experts, k, capacity)
    floor = step.routed_expert_rows_floor(model, 1) / k  # rows per token copy
    for tokens in [2 ** e for e in range(17)] + [3, 24, 96, 384, 1536]:
        for tp in (1, 2, 4, 8):
            for ep in [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256) if experts % e == 0]:
                for etp in (1, 2, 4, 8):
                    (m, _, _, local), _ = moe.expert_gemms(model, tokens, tp, moe.ExpertLayout(ep, etp))
                    per_copy = m * local / etp / (tokens / tp * k)
                    assert per_copy >= floor * (1 - 1e-12), (tokens, tp, ep, etp)


def test_routed_rows_floor_is_nearly_reached():
    """By hand: 16 experts, top 1, 23 tokens on one GPU: 23 / 16 = 1.44 rows per expert, rounded to 1, so
    the experts run 16 rows for 23 token copies, 0.696 of them: the 2/3 is close to what rounding can
    take, not a loose constant."""
    model = routed_model(16, 1)
    (m, _, _, local), _ = moe.expert_gemms(model, 23, 1, moe.ExpertLayout())
    assert (m, local) == (1, 16)
    assert step.routed_expert_rows_floor(model, 23) == pytest.approx(23 * 2 / 3)
    assert 23 * 2 / 3 < 16 < 23 * 0.7


@pytest.mark.parametrize("case", CASES[1:2] + NEW_DIMENSIONS + [("deepseek-v3", "dgx-h100", 1024, 1024)],
                         ids=["llama3-70b", "llama3-8b", "mixtral-8x7b", "deepseek-v3"])
def test_compute_bound_is_below_the_loose_bound_and_every_plan(case):
    """bounds.compute_bound (the heap's first tier): the flush of compute alone, at or under the loose
    bound and every plan of the layout, with MoE, MTP layers (DeepSeek-V3), CP and several precisions;
    also over a layout's full-recompute combinations alone (what fits of many large layouts), where it
    counts the replayed forward as the loose bound does."""
    spec = make_spec(*case, precisions=("bf16", "fp8"))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    rng, closer, replayed = random.Random(31), 0, 0
    for lay in rng.sample(list(space.knobs), min(25, len(space.knobs))):
        tables = LayoutTables(ctx, lay)
        full = tuple(k for k in space.knobs[lay] if k.recompute == "full")
        for knobs in (space.knobs[lay], full) if full else (space.knobs[lay],):
            floor, loose = bounds.compute_bound(tables, knobs), bounds.lower_bound(tables, knobs)
            assert 0 < floor <= loose * (1 + 1e-12), lay
            assert floor <= min(c.step_seconds for c in tables.candidates(knobs)) * (1 + 1e-12), lay
            closer += floor > 0.5 * loose
        if full:  # the replay counted: above the same layout's floor with no recompute by its forward
            plain = tuple(k for k in space.knobs[lay] if k.recompute == "none")
            replayed += bool(plain) and bounds.compute_bound(tables, full) > 1.2 * bounds.compute_bound(tables, plain)
    assert closer > 0 and replayed > 0  # not a vacuous floor


@pytest.mark.parametrize("case", CASES[1:2] + NEW_DIMENSIONS + [("deepseek-v3", "dgx-h100", 1024, 1024)],
                         ids=["llama3-70b", "llama3-8b", "mixtral-8x7b", "deepseek-v3"])
def test_bound_flush_without_bytes_equals_the_tabled_flush(case):
    """LayoutTables.flush (stage costs with with_bytes=False, what the bounds read) is the tabled pipe's
    flush: no time part of a stage reads its parameters or activation bytes (dense, CP, MoE, MTP)."""
    spec = make_spec(*case, precisions=("bf16", "fp8"))
    space, ctx = build_space(spec), TableContext(spec, cm.Efficiency())
    for lay, k in sampled(space, random.Random(37), 40):
        key = (k.recompute, k.sp, k.precision, k.casts, k.tpo, k.cpc, k.epo, k.pbuf, k.attn, k.spg, k.epd, k.mcg)
        bound_side, tabled_side = LayoutTables(ctx, lay), LayoutTables(ctx, lay)
        assert bound_side.flush(*key) == pytest.approx(tabled_side.pipe(*key).flush_seconds, rel=1e-12)
