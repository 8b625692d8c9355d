"""The search space: framework rules on hand-made cases, and a space counted by hand."""
from __future__ import annotations

from dataclasses import replace

import pytest

from costmodel import types as cm
from planner.frameworks import deepspeed, megatron, torchtitan
from planner.search.space import Layout, SearchSpec, build_space

GIB = 2**30


def model(layers: int, heads: int = 2, seq: int = 128) -> cm.Model:
    return cm.Model("m", layers, 32 * heads, heads, 256, seq, ffn_hidden_size=256)


def cluster(gpus: int, domain: int = 4) -> cm.Cluster:
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 300e12, "fp16": 300e12, "tf32": 150e12}, 2e12, 300e9)
    return cm.Cluster("c", gpu, gpus, domain, domain, 300e9, 25e9)


def plan(pp=1, vpp=1, m=1, tp=1) -> cm.Plan:
    """A plan with pp stages, vpp chunks and m micro-batches (dp 1, micro-batch 1)."""
    return cm.Plan(tp=tp, pp=pp, vpp=vpp, global_batch_size=m)


def test_megatron_writes_every_split():
    # 30 layers on 4 stages: 7, 8, 8, 7 (--decoder-first/last-pipeline-num-layers 7); 31: 8, 8, 8, 7. 13 layers
    # on 8 stages have no such split with stages of at most 2 (six middle stages of 2 leave the ends 1 between
    # them, of 1 leave them 7): 1, 2, 2, 2, 2, 2, 1, 1 is written as a layout, and so is an uneven split
    # under interleaving (30 layers on pp 4 x vpp 2: 3, 4 x 6, 3).
    assert megatron.uneven_split(model(30), plan(pp=4)) == (7, 7)  # --decoder-first/last-pipeline-num-layers
    assert megatron.uneven_split(model(31), plan(pp=4)) == (None, 7)  # the first as the middle: not written
    assert megatron.uneven_split(model(32), plan(pp=4)) is None
    assert megatron.pipeline_layout(model(30), plan(pp=4)) is None
    assert megatron.pipeline_layout(model(13), plan(pp=8)) == "Et|t*2|t*2|t*2|t*2|t*2|t|tL"
    assert megatron.uneven_split(model(13), plan(pp=8)) is None
    assert megatron.pipeline_layout(model(30), plan(pp=4, vpp=2, m=8)) == "Et*3|" + "t*4|" * 6 + "t*3L"


def test_megatron_interleaving_rules():
    assert megatron.interleaving(model(32), plan(pp=4, vpp=2, m=8)) is None
    assert megatron.interleaving_groups(model(32), plan(pp=4, vpp=2, m=8)) is None
    assert "multiple of pp" in megatron.interleaving_groups(model(32), plan(pp=4, vpp=2, m=6))
    assert "pipeline size >= 3" in megatron.interleaving(model(32), cm.Plan(pp=2, vpp=2, global_batch_size=4,
                                                                             overlap_pp_comm=False))


def test_torchtitan_rounds_and_sequence_rules():
    # rounds = max(1, m // pp): m 12, pp 8 -> 1 round (fine); m 17 -> 2 rounds, 17 odd (rejected).
    assert torchtitan.interleaving(model(16), plan(pp=8, vpp=2, m=12)) is None
    assert torchtitan.interleaving(model(16), plan(pp=8, vpp=2, m=17)) is not None
    assert torchtitan.interleaving(model(16), plan(pp=8, vpp=1, m=17)) is None
    # trainer.py (0.3.0): seq_len % (tp under SP x 2cp under CP): 100 % 8 with SP, 100 % 8 at cp 4, not without SP
    sp = replace(plan(tp=8), sequence_parallel=True)
    assert "not divisible by 8" in torchtitan.sequence_split(model(4, seq=100), sp)
    assert torchtitan.sequence_split(model(4, seq=100), plan(tp=8)) is None
    assert "not divisible by 8" in torchtitan.sequence_split(model(4, seq=100), replace(plan(tp=1), cp=4))
    assert torchtitan.sequence_split(model(4, seq=104), sp) is None
    assert deepspeed.no_interleaving(model(8), plan(pp=2, vpp=2, m=4)) is not None


def test_knob_sets():
    assert deepspeed.knobs(False, True).zero_stage.values == (0, 1)  # PipelineEngine: ZeRO <= 1
    assert deepspeed.knobs(False, False).zero_stage.values == (0, 1, 2, 3)
    # DDP (FSDP2's replicate axis, 0.3.0) with TP or alone; under pipeline parallelism FSDP2 only
    assert torchtitan.knobs(True, False).zero_stage.values == torchtitan.knobs(False, False).zero_stage.values == (0, 3)
    # FSDP2 under torch.distributed.pipelining keeps weights and gradients unsharded through the step
    assert torchtitan.knobs(False, True).zero_stage.values == torchtitan.knobs(True, True).zero_stage.values == (1,)
    assert megatron.knobs(True, True).grad_dtype("bf16").values == ("fp32", "bf16")
    assert megatron.knobs(True, True).grad_dtype("fp16").values == ("fp32", "fp16")
    assert megatron.knobs(True, True).grad_dtype("fp32").values == ("fp32",)
    assert "int8" not in deepspeed.knobs(False, False).grad_dtype("bf16").values


def test_space_counted_by_hand():
    """4 layers, 2 heads, 4 GPUs, global batch 4, DeepSpeed only (vpp 1; ZeRO <= 1 with pp > 1;
    recompute none/full; no SP). Splits (tp, pp, dp) with micro-batches dividing 4/dp:
    (1,1,4): mbs 1; (1,2,2): 1,2; (1,4,1): 1,2,4; (2,1,2): 1,2; (2,2,1): 1,2,4 -> 11 layouts
    (tp 4 breaks heads % tp). Plans: pp = 1 layouts 3 x (4 ZeRO x 2 recompute) = 24,
    pp > 1 layouts 8 x (1 x 2) = 16 (bf16 with pp > 1 runs DeepSpeed's BF16_Optimizer, ZeRO-1:
    ZeRO 0 is refused); 40 in all, searched without the DP overlap. With it (the default) 52: DeepSpeed runs
    pipelines (at any dp) and ZeRO 0 where dp > 1 with the sync after the backward (the overlapped one is refused
    there), which the search then offers instead; ZeRO-1/2 without a pipeline both ways, as the overlap holds a
    second reduce bucket (2 x 2 more plans on each of the 3 layouts); elsewhere the overlapped sync (the one
    after the backward never costs less: space.undominated)."""
    space = build_space(SearchSpec(model(4), cluster(4), 4, ("deepspeed",), overlap_dp_comm=False))
    assert len(space.knobs) == 11
    assert space.size == 40
    space = build_space(SearchSpec(model(4), cluster(4), 4, ("deepspeed",)))
    assert (len(space.knobs), space.size) == (11, 52)
    off = {(lay.pp, lay.dp, k.zero) for lay, ks in space.knobs.items() for k in ks if not k.dpo}
    on = {(lay.pp, lay.dp, k.zero) for lay, ks in space.knobs.items() for k in ks if k.dpo}
    assert all(pp > 1 or zero in (1, 2) or dp > 1 and zero == 0 for pp, dp, zero in off)
    assert off >= {(1, 4, 0), (2, 2, 1), (1, 2, 0), (4, 1, 1), (1, 4, 1), (1, 2, 2)}
    assert not {(pp, dp, zero) for pp, dp, zero in on if pp > 1} and (1, 4, 1) in on and (1, 2, 3) in on
    assert all(lay.vpp == 1 for lay in space.knobs)


def test_any_framework_is_the_union():
    """pp > 1 under any framework: ZeRO 0/1 (Megatron, DeepSpeed; torchtitan's FSDP2 is ZeRO-1 under a
    pipeline), never 2 or 3; ZeRO 3 without a pipeline."""
    space = build_space(SearchSpec(model(8), cluster(4), 8))
    zeros = {k.zero for lay, ks in space.knobs.items() if lay.pp > 1 for k in ks}
    assert zeros == {0, 1}
    assert 3 in {k.zero for lay, ks in space.knobs.items() if lay.pp == 1 for k in ks}
    rcs = {k.recompute for ks in space.knobs.values() for k in ks}
    assert rcs == {"none", "selective", "op", "full"}
    # 10 layers, pp 2, vpp 2: uneven chunks (2, 3, 3, 2), which torchtitan splits and Megatron-LM writes as a
    # layout (Et*2|t*3|t*3|t*2L); DeepSpeed does not interleave. So Megatron's selective recompute is there.
    space = build_space(SearchSpec(model(10), cluster(4), 8))
    uneven = [ks for lay, ks in space.knobs.items() if (lay.pp, lay.vpp) == (2, 2)]
    assert uneven and any("selective" in {k.recompute for k in ks} for ks in uneven)
    assert megatron.pipeline_layout(model(10), plan(pp=2, vpp=2, m=8)) == "Et*2|t*3|t*3|t*2L"
    # 8 layers on pp 2 x vpp 3 (1, 2, 2, 1, 1, 1: middle chunks unlike) are not searched; --fix vpp=3 reaches them
    assert not [lay for lay in build_space(SearchSpec(model(8), cluster(4), 8)).knobs if lay.vpp == 3]
    assert [lay for lay in build_space(SearchSpec(model(8), cluster(4), 8, fixed={"vpp": 3})).knobs]


def test_torchtitan_reduces_where_its_runtime_does():
    """torchtitan's gradient sync (Plan.grad_sync): without a pipeline its trainer keeps the sync on for
    every micro-batch, so data_parallel_replicate (ZeRO 0) all-reduces each time ("microbatch") and FSDP2
    (ZeRO 3) reduce-scatters each time; under a pipeline each stage reduce-scatters once after its last
    backward ("chunk_end", ZeRO-1). Megatron-LM and DeepSpeed reduce in buckets once per step."""
    space = build_space(SearchSpec(model(8), cluster(4), 8, ("torchtitan",)))
    syncs = {(lay.pp > 1, k.zero, k.gsync) for lay, ks in space.knobs.items() for k in ks}
    assert syncs == {(False, 0, "microbatch"), (False, 3, "buckets"), (True, 1, "chunk_end")}
    other = build_space(SearchSpec(model(8), cluster(4), 8, ("megatron", "deepspeed")))
    assert {k.gsync for ks in other.knobs.values() for k in ks} == {"buckets"}


def test_fixes_restrict_the_space():
    space = build_space(SearchSpec(model(8), cluster(4), 8, fixed={"tp": 2, "zero": 1, "sp": True}))
    assert {lay.tp for lay in space.knobs} == {2}
    assert {(k.zero, k.sp) for ks in space.knobs.values() for k in ks} == {(1, True)}


def test_tp_stays_in_the_nvlink_domain():
    space = build_space(SearchSpec(model(4, heads=8), cluster(8, domain=2), 8))
    assert max(lay.tp for lay in space.knobs) == 2
    assert any("NVLink domain" in reason for reason in space.rejected)


def test_layout_group_is_the_degrees():
    # vpp and the micro-batch do not make a distinct layout; the parallel degrees do
    assert Layout(2, 4, 8, 3, 1).group == (2, 1, 4, 8, 1, 1)
    assert Layout(2, 4, 8, 3, 1, cp=2, ep=4).group == (2, 2, 4, 8, 4, 1)


def test_layout_rules_do_not_read_the_micro_batches():
    """The search checks a framework's layout rules once per split and vpp (space.vpp_frameworks):
    on every plan below, each layout rule gives the same answer at every micro-batch size and count;
    what reads the micro-batch count is an interleaving rule, and those pass every vpp-1 plan."""
    import itertools

    from planner.frameworks import REGISTRY
    checked = 0
    for layers, pp, vpp, tp, gbs in itertools.product((30, 32, 61), (1, 2, 4, 8), (1, 2, 3), (1, 2), (8, 24, 96)):
        base_plan = cm.Plan(tp=tp, pp=pp, vpp=vpp, global_batch_size=gbs)
        for fw in REGISTRY.values():
            answers = {tuple(rule(model(layers, seq=256), cm.Plan(tp=tp, pp=pp, vpp=vpp, global_batch_size=gbs,
                                                                  micro_batch_size=b)) for rule in fw.layout_rules)
                       for b in (1, 2, 4, 8) if gbs % b == 0}
            assert len(answers) == 1, (fw.name, layers, pp, vpp, tp, gbs)
            if vpp == 1:
                assert all(rule(model(layers), base_plan) is None for rule in fw.interleaving_rules)
            checked += 1
    assert checked == 3 * 4 * 3 * 2 * 3 * len(REGISTRY)


def test_plan_rules_do_not_read_the_dp_overlap():
    """space.knob_combinations checks a combination's plan rules once, then takes the first DP-overlap
    value the machine rules and the knob's Choice let through: so no plan rule may read overlap_dp_comm."""
    import itertools
    from dataclasses import replace

    from planner.frameworks import REGISTRY
    from planner.frameworks.base import first_violation
    checked = 0
    for zero, pp, tp, precision, grad in itertools.product((0, 1, 2, 3), (1, 2), (1, 2), ("bf16", "fp16"),
                                                           ("", "fp32")):
        plan = cm.Plan(tp=tp, pp=pp, dp=2, zero_stage=zero, precision=precision, grad_dtype=grad,
                       global_batch_size=8)
        for fw in REGISTRY.values():
            answers = {first_violation(fw.plan_rules, model(8), replace(plan, overlap_dp_comm=on))
                       for on in (False, True)}
            assert len(answers) == 1, (fw.name, zero, pp, tp, precision, grad, answers)
            checked += 1
    assert checked == 4 * 2 * 2 * 2 * 2 * len(REGISTRY)


def test_every_knob_sets_a_plan_field_and_has_its_values():
    import dataclasses

    from planner.search import space
    from planner.search.space import KNOB_CHOICES, PLAN_FIELDS, Knobs

    knobs = {f.name for f in dataclasses.fields(Knobs)}
    assert set(PLAN_FIELDS) == knobs  # a knob the plan never sees would be searched for nothing
    assert set(PLAN_FIELDS.values()) <= {f.name for f in dataclasses.fields(cm.Plan)}
    # ZeRO, layers offloaded or replayed, the gradient reduce bucket: numbers
    assert set(KNOB_CHOICES) == knobs - {"zero", "offl", "rcl", "gbuf"}
    # framework_knobs' probes set every knob's field, each once
    probed = (*space.OUTER_PLAN_FIELDS, *space.INNER_PLAN_FIELDS)
    assert sorted(probed) == sorted(PLAN_FIELDS.values())


def test_search_plans_equal_the_plans_built_by_their_constructor():
    """space.plan_for builds cm.Plan without its __init__ (speed); every plan of a space, with each
    knob combination, must equal and hash like cm.Plan(**its fields)."""
    import dataclasses

    from planner.search.space import plan_for

    spec = SearchSpec(model(4, seq=256), cluster(8), 16, precisions=("bf16", "fp8"))
    space = build_space(spec)
    seen = 0
    for lay, knobs in space.knobs.items():
        for k in knobs:
            fast = plan_for(spec, lay, k)
            built = cm.Plan(**{f.name: getattr(fast, f.name) for f in dataclasses.fields(cm.Plan)})
            assert fast == built and hash(fast) == hash(built) and vars(fast) == vars(built)
            seen += 1
    assert seen > 100


def test_plan_over_equals_dataclasses_replace():
    """space.plan_over is replace() without __init__ (speed): on a plan with every field changed it must
    equal and hash like dataclasses.replace, and leave the plan it started from as it was."""
    import dataclasses

    from planner.search.space import plan_over

    base = cm.Plan(tp=2, pp=2, dp=2, micro_batch_size=2, global_batch_size=16)
    before = vars(base).copy()
    fields = {"zero_stage": 3, "precision": "fp8", "grad_dtype": "bf16", "weight_casts": "use",
              "zero3_reshard": False, "grad_sync": "chunk_end", "tp_comm_overlap": True, "ep_dispatch": "deepep"}
    fast, slow = plan_over(base, fields), dataclasses.replace(base, **fields)
    assert fast == slow and hash(fast) == hash(slow) and vars(fast) == vars(slow)
    assert vars(base) == before and fast != base
    hash(base)  # cached on the plan (types._cached_hash): a plan built from it must not carry it over
    assert hash(plan_over(base, {"tp": 4})) == hash(dataclasses.replace(base, tp=4)) != hash(base)


def test_torchtitan_float8_is_searched():
    # torchtitan's float8 linears scale rowwise (torchao) with casts at every use; the search's probe plans
    # once kept Transformer Engine's delayed scaling for them, so torchtitan never ran fp8 in a search.
    gpu = cm.Gpu("g", 80 * GIB, {"bf16": 300e12, "fp8": 600e12}, 2e12, 300e9, generation="hopper")
    spec = SearchSpec(model(8, heads=4), cm.Cluster("c", gpu, 4, 4, 4, 300e9, 25e9), 8, frameworks=("torchtitan",),
                      precisions=("fp8",))
    knobs = {k for ks in build_space(spec).knobs.values() for k in ks}
    assert knobs and {(k.precision, k.casts) for k in knobs} == {("fp8", "use")}


def test_activation_floor_counts_the_first_stages_own_layers():
    """35 layers on pp 8 split (3, 5, 5, 5, 5, 5, 5, 2): the first stage holds 3 layers, fewer than
    floor(35 / 8) = 4, so a floor of 4 layers would skip layouts whose first stage fits."""
    from planner.search.bounds import activation_floor_bytes

    spec = SearchSpec(model(35), cluster(8), 8, fixed={"vpp": 1})
    sequences = min(8, 8 / 1)  # pp 8, global batch 8 over dp 1
    first_stage = sequences * 3 * 2.0 * 128 * 64 / 1  # 3 layers x 2 s h / tp bytes (s 128, h 64, tp 1)
    assert activation_floor_bytes(spec, 1, 1, 8, 1) <= first_stage


def test_suggested_plans_pass_every_rule_of_their_split(capsys):
    """Rules that read a split's degrees themselves, not only tp > 1 or ep > 1, are checked per split:
    Megatron-LM's MoE biases need expert TP 1 (gpt-oss has them), and Ulysses splits each TP rank's KV
    heads over cp. The knob probe of a class of splits once stood for them, and suggest returned
    gpt-oss plans at etp 4 and at tp 4 x cp 4 with a2a (2 KV heads per TP rank over 4 CP ranks)."""
    import json

    from costmodel.rules import plan_violations
    from planner.commands.main import main
    from planner.frameworks import REGISTRY, base
    from planner.inputs import loading, plans
    from planner.inputs.reading import parse
    from planner.inputs.specs import PlanSpec

    cases = [(["gpt-oss-120b", "azure-nd-mi300x-v5", "--gpus", "32", "--gbs", "128", "--framework", "megatron",
               "--fix", "ep=2", "--top", "3", "--objective", "cost"], "azure-nd-mi300x-v5", 32),
             (["gpt-oss-120b", "gb200-nvl72", "--gpus", "256", "--gbs", "16", "--seq-length", "16384", "--framework",
               "megatron", "--precision", "bf16,fp8", "--fix", "mbs=1", "--fix", "recompute=full", "--top", "3"],
              "gb200-nvl72", 256)]
    for argv, cluster_name, gpus in cases:
        assert main(["suggest", *argv, "--json"]) == 0
        ranked = json.loads(capsys.readouterr().out)["plans"]
        seq = 16384 if "--seq-length" in argv else None
        spec = loading.load_model_spec("gpt-oss-120b", seq)
        model = spec.to_model()
        cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), gpus)
        for entry in ranked:
            plan = plans.build_plan(parse(PlanSpec, entry["plan"], "plan"), spec, gpus)
            assert plan_violations(model, cluster, plan) == []
            assert base.violations(REGISTRY["megatron"], model, plan) == []


def test_hierarchical_cp_is_offered_only_where_it_is_hierarchical():
    """a2a+p2p runs Ulysses over the CP ranks in one NVLink domain and a ring across (costmodel/context.py).
    On 8-GPU domains: tp 8, cp 2 puts one CP rank per domain (gcd(2, 8 / 8) = 1), the ring by another name;
    tp 2, cp 4 puts all four in one (gcd(4, 8 / 2) = 4), Ulysses by another name; tp 1, cp 16 puts 8 of
    the 16 in each, a true hierarchy. The search offers a2a+p2p in the last case only."""
    from planner.search.space import legal_cp_comms

    m = cm.Model("m", 8, 4096, 32, 256, 32768, num_kv_heads=16)
    spec = SearchSpec(m, cluster(256, domain=8), 64)
    assert "a2a+p2p" not in legal_cp_comms(spec, 8, 2)
    assert "a2a+p2p" not in legal_cp_comms(spec, 2, 4) and "a2a" in legal_cp_comms(spec, 2, 4)
    assert "a2a+p2p" in legal_cp_comms(spec, 1, 16)
    pinned = SearchSpec(m, cluster(256, domain=8), 64, fixed={"cpc": "a2a+p2p"})
    assert "a2a+p2p" in legal_cp_comms(pinned, 8, 2)  # --fix cp_comm=a2a+p2p is the user's: kept


def test_probe_rules_answer_like_the_rules_in_their_own_order():
    """framework_knobs asks the rule that refused last first (space.ProbeRules): over a stream of MoE
    plans whose refusals move its order around, every answer must be the frameworks' own (runs_plan) and
    the cost model's cluster rules' (without the CP exchange's KV-head split, which legal_cp_comms checks per
    split), which stop at the first refusal in the declared order."""
    import itertools

    from costmodel.rules import cluster_violations
    from planner.frameworks import REGISTRY, base
    from planner.inputs import loading
    from planner.search.space import ProbeRules

    moe = loading.load_model_spec("qwen3-30b-a3b").to_model()
    gb200 = loading.build_cluster(loading.load_cluster_spec("gb200-nvl72"), 64)
    spec = SearchSpec(moe, gb200, 64)
    settings = list(itertools.product((1, 2), (1, 8), (False, True), ("none", "full"), (False, True),
                                      ("alltoall", "deepep"), (False, True), ("cudnn", "flash2"), (0, 12)))
    for name, fw in REGISTRY.items():
        rules, moved, refused = ProbeRules(spec, fw), set(), 0
        for tp, ep, sp, rc, epo, epd, mcg, attn, offl in settings:
            plan = cm.Plan(tp=tp, ep=ep, dp=64 // tp, sequence_parallel=sp, recompute=rc, ep_overlap=epo,
                           ep_dispatch=epd, moe_cuda_graphs=mcg, attention_kernel=attn, offload_layers=offl)
            expected = not base.runs_plan(fw, moe, plan) or bool(cluster_violations(gb200, plan))
            assert rules.refuse(plan) is expected, (name, plan)
            refused += expected
            moved.add(tuple(map(id, rules.rules[:3])))
        assert refused and len(moved) > 1, name  # the order did move, and answers stayed the frameworks'


def test_each_split_offers_the_cp_exchanges_its_own_degrees_allow():
    """framework_knobs answers once per class of splits (tp > 1, cp > 1, ...) for every CP exchange, and each
    split keeps those its own tp and cp allow. 8 KV heads at tp 2 leave 4 per TP rank: Ulysses (a2a) splits
    them over cp 4 but not over cp 8; a2a+p2p at cp 8 runs Ulysses over the gcd(8, 8 / 2) = 4 CP ranks of a
    domain (one head each) and a ring across, while at cp 4 all four share a domain, Ulysses by another name,
    which is not offered as a2a+p2p."""
    m = cm.Model("m", 8, 4096, 32, 256, 32768, num_kv_heads=8)
    spec = SearchSpec(m, cluster(256, domain=8), 64, fixed={"tp": 2})
    offered: dict[int, set[str]] = {}
    for lay, knobs in build_space(spec).knobs.items():
        offered.setdefault(lay.cp, set()).update(k.cpc for k in knobs)
    assert "a2a" in offered[4] and "a2a+p2p" not in offered[4]
    assert "a2a" not in offered[8] and "a2a+p2p" in offered[8]


def test_shared_probes_answer_as_each_split_alone():
    """build_space asks the frameworks once per class of splits (tp > 1, cp > 1, vpp > 1, ep > 1, etp > 1) and
    shares the answers; asked afresh for each split with its own degrees (no shared answers), every layout
    must get the same knob combinations (its layouts sharing only with each other): an MoE model with expert and
    context parallelism on an NVL72 domain,
    and a dense one whose CP exchanges differ between splits of one class."""
    from planner.inputs import loading
    from planner.search.space import (candidate_layouts, knob_combinations, legal_cp_comms, machine_refusals,
                                      ranks_per_domain, split_violations, splits)

    moe = loading.load_model_spec("qwen3-30b-a3b", seq_length=16384).to_model()
    dense = cm.Model("m", 8, 4096, 32, 256, 32768, num_kv_heads=8)
    specs = [SearchSpec(moe, loading.build_cluster(loading.load_cluster_spec("gb200-nvl72"), 16), 64),
             SearchSpec(dense, cluster(64, domain=8), 16)]
    for spec in specs:
        space, checked = build_space(spec), 0
        for tp, cp, pp, ep, etp in splits(spec):
            if split_violations(spec, tp, pp, cp, ep, etp):
                continue
            ep_local = ep > 1 and ranks_per_domain(ep, etp, spec.cluster) >= ep
            alone: dict[tuple, set] = {}
            own: dict = {}  # answers shared by this split's own layouts only
            for lay, fws in candidate_layouts(spec, tp, pp, cp, ep, etp):
                if (lay.vpp, fws) not in alone:
                    alone[lay.vpp, fws] = set(knob_combinations(
                        spec, fws, tp, pp, cp, lay.vpp, ep, etp, ep_local, legal_cp_comms(spec, tp, cp),
                        machine_refusals(spec, tp, pp, cp, ep, etp), runs=own))
                assert set(space.knobs.get(lay, ())) == alone[lay.vpp, fws], lay
                checked += 1
        assert checked > 50 and any(lay.cp > 1 for lay in space.knobs)


def _catalog_spec(model: str, cluster: str, gpus: int, gbs: int, **kw) -> SearchSpec:
    from planner.inputs import loading

    c = loading.build_cluster(loading.load_cluster_spec(cluster), gpus)
    return SearchSpec(loading.load_model_spec(model).to_model(), c, gbs, **kw)


def test_a_fixed_dispatcher_is_not_dropped_for_another():
    """Inside one NVLink domain the search keeps DeepEP with MoE CUDA graphs over the all-to-all and the all-to-all
    over DeepEP without graphs (space.knob_combinations, ep_local): with one of the dropped ones fixed, it once
    dropped them before the fix filtered the rest, so qwen3-30b-a3b on 8 H100 with DeepEP without graphs had no
    expert-parallel split (best 5.41 s at ep 1) and with the all-to-all on 16 its second best group was 1.776 s
    where (tp 2, ep 8) runs it in 1.764 s."""
    from planner.search.suggest import Options, run

    spec = _catalog_spec("qwen3-30b-a3b", "dgx-h100", 8, 64, fixed={"epd": "deepep", "mcg": False})
    assert any(lay.ep > 1 for lay in build_space(spec).knobs)
    assert run(spec, Options(top_k=1)).ranked[0].plan.ep > 1
    spec = _catalog_spec("qwen3-30b-a3b", "dgx-h100", 16, 64, fixed={"epd": "alltoall"})
    ranked = run(spec, Options(top_k=2)).ranked
    assert ranked[1].layout.group == (2, 1, 1, 8, 8, 1) and {r.plan.ep_dispatch for r in ranked} == {"alltoall"}


def test_deepspeed_buckets_keep_the_sync_after_the_backward_on_offer():
    """DeepSpeed's ZeRO-1/2 overlap holds a second reduce bucket (dataparallel.staging_bucket_bytes: 5e8 bf16
    elements, 0.93 GiB), so the sync after the backward is offered beside it; and under a pipeline DeepSpeed turns
    the overlap off at any dp (runtime/engine.py). megatron-7.5b at 16,384 tokens on 8 H100 with tp 2, pp 4,
    ZeRO-1 and no recompute holds 71.5 GiB, under 72 GiB (0.9 x 80), where the search once priced it with the
    overlap's second bucket (72.4 GiB) and kept only a full recompute for that group (30.8 s against 23.8 s)."""
    from planner.search.suggest import Options, run

    base = _catalog_spec("megatron-7.5b", "dgx-h100", 8, 64)
    spec = SearchSpec(replace(base.model, seq_length=16384), base.cluster, 64, frameworks=("deepspeed",))
    space = build_space(spec)
    assert not any(k.dpo for lay, ks in space.knobs.items() if lay.pp > 1 for k in ks)
    flat = {(k.zero, k.dpo) for lay, ks in space.knobs.items() if lay.pp == 1 for k in ks if k.gbuf}
    assert {(1, True), (1, False)} <= flat
    best = {r.layout.group: r for r in run(spec, Options(top_k=5, max_memory_fraction=0.9)).ranked}
    kept = best[(2, 1, 4, 1, 1, 1)]
    assert kept.plan.recompute == "none" and not kept.plan.overlap_dp_comm
    assert kept.peak_memory_bytes / 2**30 == pytest.approx(71.5, abs=0.01)
