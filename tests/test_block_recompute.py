"""Full recompute of the first N layers of each model chunk only (Plan.recompute_layers; Megatron-LM
--recompute-granularity full --recompute-method block --recompute-num-layers N, megatron/core/recompute.py
checkpointed_forward: a chunk's TransformerBlock checkpoints its layers below N and runs the rest plainly).

Expected values come from that definition: a replayed layer keeps its input and runs its forward again in
backward (with its forward TP exchanges), a kept layer keeps its whole activations, and one replayed layer's
activations are live again during its backward."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from costmodel import memory
from costmodel import types as cm
from costmodel.flops import layer_forward_flops
from costmodel.pipeline import recomputed_layer_indices
from costmodel.rules import plan_violations
from costmodel.stage import layer_activations, stage_activation_bytes, stage_cost
from costmodel.step import estimate
from planner.commands.main import main
from planner.search import suggest
from planner.search.space import SearchSpec, recompute_counts

GIB = 2**30
MODEL = cm.Model("m", 16, 4096, 32, 32000, 4096, ffn_hidden_size=14336, mlp="swiglu")
GPU = cm.Gpu("g", 80 * GIB, {"bf16": 989e12}, 3.35e12, 450e9, "hopper")
CLUSTER = cm.Cluster("c", GPU, 32, 8, 8, 450e9, 50e9)
# pp 2 x vpp 2: four chunks of 4 layers, two on each rank
FULL = cm.Plan(tp=4, pp=2, dp=4, vpp=2, micro_batch_size=1, global_batch_size=32, recompute="full",
               sequence_parallel=True)


def test_the_first_layers_of_each_chunk_replay():
    """Chunks (3, 4, 4, 2) on pp 2 x vpp 2: rank 0 holds layers 0-2 and 7-10, rank 1 layers 3-6 and 11-12;
    two per chunk are 0, 1, 7, 8 and 3, 4, 11, 12; five per chunk takes every layer of the smaller chunks."""
    assert recomputed_layer_indices((3, 4, 4, 2), 2, 2, 2) == ((0, 1, 7, 8), (3, 4, 11, 12))
    assert recomputed_layer_indices((3, 4, 4, 2), 2, 2, 5) == ((0, 1, 2, 7, 8, 9, 10), (3, 4, 5, 6, 11, 12))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_replay_and_tp_exchanges_scale_with_the_layers_replayed(n):
    """Rank 0 replays n of each of its two 4-layer chunks: 2n of 8 layers. Its replayed forward is 2n/8 of full
    recompute's, and its TP time lies that share of the way from no recompute's to full recompute's (the replay
    repeats a layer's forward exchanges); compute is the same under all three."""
    none, part = replace(FULL, recompute="none"), replace(FULL, recompute_layers=n)
    eff = cm.Efficiency()
    full_s, none_s, part_s = (stage_cost(MODEL, CLUSTER, p, 8, 0, eff) for p in (FULL, none, part))
    share = 2 * n / 8
    assert part_s.recompute_seconds == pytest.approx(share * full_s.recompute_seconds, rel=1e-12)
    assert part_s.tp_comm_seconds == pytest.approx(
        none_s.tp_comm_seconds + share * (full_s.tp_comm_seconds - none_s.tp_comm_seconds), rel=1e-12)
    assert part_s.compute_seconds == full_s.compute_seconds == none_s.compute_seconds
    assert part_s.replayed == ((0, 2 * n),)


@pytest.mark.parametrize("n", [1, 3])
def test_activations_keep_the_replayed_layers_inputs_and_one_layer_again(n):
    """Against no recompute, each of the 2n replayed layers of rank 0 keeps its input (full recompute's bytes)
    instead of its activations, for every micro-batch in flight, and one replayed layer's activations live
    again while its backward runs."""
    none, part = replace(FULL, recompute="none"), replace(FULL, recompute_layers=n)
    inflight = memory.inflight_microbatches(FULL.pp, FULL.vpp, FULL.num_microbatches, 0)
    whole, kept_input = layer_activations(MODEL, none, 0, "none"), layer_activations(MODEL, FULL, 0, "full")
    want = stage_activation_bytes(MODEL, none, 8, 0) - inflight * 2 * n * (whole - kept_input) + whole
    assert stage_activation_bytes(MODEL, part, 8, 0) == pytest.approx(want, rel=1e-12)


def test_zero3_gathers_again_only_the_replayed_layers_weights():
    """Under ZeRO-3 the replay gathers its layers' weights once more: of rank 0's dense parameters (its layers
    and the embedding), the 2n replayed layers' own, each (4 h^2 + 3 h ffn) / tp split over TP and its two
    norms (2 h) whole."""
    from costmodel.step import replay_share, stage_costs

    n, h, ffn, tp = 1, MODEL.hidden_size, MODEL.ffn_hidden_size, FULL.tp
    plan = replace(FULL, zero_stage=3, recompute_layers=n)
    stage = stage_costs(MODEL, CLUSTER, plan, cm.Efficiency())[0]
    layer = (4 * h * h + 3 * h * ffn) / tp + 2 * h
    assert replay_share(stage, False) == pytest.approx(2 * n * layer / stage.params, rel=1e-12)
    assert replay_share(stage_costs(MODEL, CLUSTER, replace(plan, recompute_layers=0), cm.Efficiency())[0],
                        False) == 1.0


def test_mtp_layers_do_not_replay_under_block_recompute():
    """Megatron-core skips recompute for the MTP layers under the block method ("not supported for MTP yet.
    Skipping recompute.", multi_token_prediction.py) and replays them under uniform: the last stage's compute
    (which holds the MTP layers' replay) is no recompute's under block, more under full."""
    from costmodel.stage import stage_compute_seconds, stage_kernels

    model = replace(MODEL, mtp_layers=1)
    eff = cm.Efficiency()
    k = stage_kernels(model, CLUSTER, FULL, eff)
    mix = ((0, 8),)
    seconds = {name: stage_compute_seconds(model, p, k, mix, 1) for name, p in (
        ("none", replace(FULL, recompute="none")), ("block", replace(FULL, recompute_layers=2)), ("full", FULL))}
    assert seconds["block"] == seconds["none"] < seconds["full"]


def test_hardware_flops_count_the_replayed_layers_forward_once_more():
    """HFU's numerator: the model's FLOPs and one more forward of each replayed layer, 2 x 2 of 16 here."""
    part = replace(FULL, recompute_layers=2)
    est = estimate(MODEL, CLUSTER, part)
    extra = 4 * 2 * layer_forward_flops(MODEL, FULL.global_batch_size, 0)
    assert est.hardware_flops_per_step == pytest.approx(est.model_flops_per_step + extra, rel=1e-12)


def test_fewer_layers_replayed_are_faster_and_hold_more():
    """What the search's bounds and its fewest-that-fit choice rely on (bounds.bound_recompute,
    fewest_fitting_blocks): each layer more replayed adds time and takes memory away."""
    runs = [estimate(MODEL, CLUSTER, replace(FULL, recompute="none"))]
    runs += [estimate(MODEL, CLUSTER, replace(FULL, recompute_layers=n)) for n in (1, 2, 3)]
    runs.append(estimate(MODEL, CLUSTER, FULL))
    times, peaks = [e.step_time_seconds for e in runs], [e.memory_per_gpu_bytes for e in runs]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert peaks == sorted(peaks, reverse=True) and len(set(peaks)) == len(peaks)


@pytest.mark.parametrize("plan, words", [
    (replace(FULL, recompute="selective", recompute_layers=2), "needs recompute full"),
    (replace(FULL, recompute_layers=4), "covers every layer of every model chunk"),
    (replace(FULL, recompute_layers=-1), "must be >= 0"),
    (replace(FULL, pp=1, vpp=1, dp=8, recompute_layers=2, offload_layers=4), "offload_layers with recompute_layers"),
])
def test_rules_refuse_what_block_recompute_is_not(plan, words):
    assert any(words in v for v in plan_violations(MODEL, CLUSTER, plan))


def estimate_argv(*extra: str) -> list[str]:
    return ["estimate", "llama3-70b", "examples/h100-64.yaml", "--tp", "8", "--pp", "4", "--mbs", "1", "--gbs",
            "512", *extra]


def test_estimate_writes_it_and_emit_passes_it_to_megatron_only(capsys, tmp_path):
    assert main(estimate_argv("--recompute", "full", "--recompute-layers", "10", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"]["recompute"] == "full" and out["plan"]["recompute_layers"] == 10
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    assert main(["emit", "--format", "megatron", "--out", str(tmp_path / "m"), str(plan_file)]) == 0
    launch = (tmp_path / "m" / "megatron" / "launch.sh").read_text()
    assert "--recompute-method block" in launch and "--recompute-num-layers 10" in launch
    capsys.readouterr()
    for fmt in ("deepspeed", "torchtitan"):
        assert main(["emit", "--format", fmt, "--out", str(tmp_path / fmt), str(plan_file)]) == 2
        assert "block recompute on" in capsys.readouterr().err


def test_estimate_refuses_block_recompute_without_full_in_one_line(capsys):
    assert main(estimate_argv("--recompute", "selective", "--recompute-layers", "10")) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "needs recompute full" in err


def test_the_search_tries_block_counts_only_when_asked():
    spec = SearchSpec(MODEL, CLUSTER, 32)
    assert recompute_counts(spec) == (0,)
    assert recompute_counts(replace(spec, block_recompute=True)) == (0, 1, 2, 4, 8)
    assert recompute_counts(replace(spec, fixed={"rcl": 3})) == (3,)


def test_no_machine_rule_reads_the_block_count():
    """space.knob_combinations gives a block recompute count the machine-rule verdict of its combination with every
    layer's recompute, which holds while no framework's machine rule names recompute_layers."""
    from planner.frameworks import REGISTRY

    rules = [rule for fw in REGISTRY.values() for rule in fw.machine_rules]
    assert rules and all("recompute_layers" not in rule.knobs for rule in rules)


def test_least_fitting_count_is_the_fewest_any_family_fits_with():
    """bounds.least_fitting_blocks against sizing every count of every family (peak_memory each): it keeps the
    block counts at or above the fewest that fits in some family, and every count it drops fits in none."""
    from costmodel import types as costtypes
    from planner.search import bounds
    from planner.search.space import build_space
    from planner.search.tables import TableContext

    gpu = replace(GPU, memory_bytes=12 * GIB)
    spec = SearchSpec(MODEL, replace(CLUSTER, gpu=gpu, num_gpus=8), 32, frameworks=("megatron",), block_recompute=True)
    space, ctx = build_space(spec), TableContext(spec, costtypes.Efficiency())
    cap, checked = 0.9 * gpu.memory_bytes, 0
    for lay, (t, knobs) in bounds.fitting_tables(space, ctx, cap).items():
        blocks = [k for k in knobs if k.rcl]
        if not blocks:
            continue
        fitting = [k for k in blocks if t.peak_memory(k) <= cap]
        least = min((k.rcl for k in fitting), default=None)
        kept = bounds.least_fitting_blocks(t, knobs, cap)
        assert set(kept) == {k for k in knobs if not k.rcl or (least is not None and k.rcl >= least)}, lay
        # then each family its own fewest that fits (the same knobs with every layer's recompute: rcl 0)
        own: dict = {}
        for k in fitting:
            family = replace(k, rcl=0)
            own[family] = min(own.get(family, k.rcl), k.rcl)
        sized = bounds.fewest_fitting_blocks(t, kept, cap)
        assert {(replace(k, rcl=0), k.rcl) for k in sized if k.rcl} == set(own.items()), lay
        # and the combination that replays every layer gives way where a count of its family fits (fewest_recomputed)
        assert [k for k in sized if not k.rcl] == [k for k in knobs if not k.rcl and k not in own], lay
        checked += least is not None and least > 1
    assert checked > 0  # some layout fits none of its families with one layer replayed


def test_search_picks_the_fewest_layers_that_fit_where_none_does_not():
    """A GPU where no recompute does not fit and full recompute does: with block counts searched, the best plan
    replays the fewest layers per chunk that fit, and is faster than the best without them. Its figures are
    estimate's (the plan re-scored)."""
    gpu = replace(GPU, memory_bytes=12 * GIB)
    spec = SearchSpec(MODEL, replace(CLUSTER, gpu=gpu, num_gpus=8), 32, frameworks=("megatron",),
                      fixed={"tp": 8, "pp": 1, "sp": True, "mbs": 1})
    plain = suggest.run(spec, suggest.Options(top_k=1))
    block = suggest.run(replace(spec, block_recompute=True), suggest.Options(top_k=1))
    best, before = block.ranked[0], plain.ranked[0]
    assert before.plan.recompute == "full" and before.plan.recompute_layers == 0
    assert best.plan.recompute == "full" and best.plan.recompute_layers > 0
    assert best.step_seconds < before.step_seconds
    fewer = replace(best.plan, recompute_layers=best.plan.recompute_layers // 2)
    assert fewer.recompute_layers == 0 or estimate(MODEL, spec.cluster, fewer).memory_per_gpu_bytes > \
        0.9 * gpu.memory_bytes
    assert estimate(MODEL, spec.cluster, best.plan).step_time_seconds == pytest.approx(best.step_seconds, rel=1e-9)


# tests/test_search_oracle.py's random instances (its generator's seeds): twelve in a row, and six of the first
# 300 from 1000 on whose best plans replay only some layers (few do: its models have 1 to 8 layers).
ORACLE_SEEDS = (*range(1000, 1012), 1076, 1125, 1178, 1199, 1211, 1281)


@pytest.mark.parametrize("seed", ORACLE_SEEDS)
def test_cpsat_matches_the_enumerator_with_block_counts(seed):
    """tests/test_search_oracle.py's check on small random models and tight GPUs with block counts searched."""
    from test_search_oracle import objective_of, outcome, random_spec

    spec, opts = random_spec(seed)
    spec = replace(spec, block_recompute=True, frameworks=("megatron",))
    got = outcome(spec, opts)
    want = outcome(spec, suggest.Options(opts.top_k, opts.objective, opts.max_memory_fraction, "enumerate"))
    if isinstance(want, str) or isinstance(got, str):
        assert want == got
        return
    a = [objective_of(spec, opts, r.step_seconds) for r in got.ranked]
    b = [objective_of(spec, opts, r.step_seconds) for r in want.ranked]
    assert a == pytest.approx(b, rel=1e-12)


def test_some_oracle_instance_picks_a_block_count():
    """The oracle above proves something: on some of its instances the best plan replays only some layers."""
    from test_search_oracle import outcome, random_spec

    picked = 0
    for seed in ORACLE_SEEDS:
        spec, opts = random_spec(seed)
        got = outcome(replace(spec, block_recompute=True, frameworks=("megatron",)), opts)
        picked += not isinstance(got, str) and any(r.plan.recompute_layers for r in got.ranked)
    assert picked >= 6

