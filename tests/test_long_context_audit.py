"""What a long-context persona audit (2026-12-07) found: plans ranked and written that Megatron-LM or torchtitan
refuse at start-up, a long-context caution whose mean hid a dense-model lean, MFU headlined in the convention
that doubles at long sequences, a cp note that did not compare other cps, and a lever diagnose missed."""
import json

from planner.commands.main import main


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_megatron_sequence_parallelism_needs_each_cp_ranks_tokens_to_split_over_tp(capsys):
    """100,000 tokens over cp 8 are 12,500 per rank, and 12,500 / tp 8 = 1,562.5: Megatron-core's sequence-
    parallel scatter (tensor_parallel/mappings.py _split_along_first_dim) asserts. cp 2 gives 50,000 / 8 = 6,250."""
    from costmodel.types import Plan
    from planner.frameworks import Machine
    from planner.frameworks.megatron import sequence_parallel_split
    from planner.inputs.loading import load_model_spec

    model = load_model_spec("llama3-70b", 100000).to_model()
    machine = Machine("hopper", 8, 8, True)
    assert "12500 tokens" in sequence_parallel_split(model, machine, Plan(tp=8, cp=8, dp=4, sequence_parallel=True))
    assert sequence_parallel_split(model, machine, Plan(tp=8, cp=2, dp=16, sequence_parallel=True)) is None
    assert sequence_parallel_split(model, machine, Plan(tp=8, cp=8, dp=4)) is None
    best = run_json(capsys, "suggest", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "100000", "--gbs",
                    "80", "--top", "3")
    for d in best["plans"]:
        p = d["plan"]
        if "megatron" in d["frameworks"] and p["sequence_parallel"]:
            assert (100000 // p["cp"]) % p["tp"] == 0


def test_torchtitan_is_not_offered_past_its_flavours_rope_length(capsys):
    """torchtitan's Llama 3 8B flavour caches RoPE for 131,072 positions and update_from_config refuses a longer
    seq_len: at 262,144 tokens the search leaves torchtitan out (a note says why) rather than rank a plan that
    `emit --format torchtitan` refuses."""
    out = run_json(capsys, "suggest", "llama3-8b", "dgx-h100", "--gpus", "64", "--seq-length", "262144", "--gbs", "32",
                   "--top", "2")
    assert all("torchtitan" not in d["frameworks"] for d in out["plans"])
    assert any("torchtitan not searched" in n and "RoPE max_seq_len 131072" in n for n in out["search"]["notes"])
    within = run_json(capsys, "suggest", "llama3-8b", "dgx-h100", "--gpus", "64", "--seq-length", "131072", "--gbs",
                      "32", "--top", "2")
    assert not any("torchtitan not searched" in n for n in within["search"]["notes"])


def test_long_context_caution_cites_rows_of_the_plans_kind(capsys):
    """On Hopper the held-out rows longer than 65,536 tokens are NeMo's dense Llama 2 7B CP runs (all fast) and
    Megatron-core's Qwen3-235B ones (slow): a dense plan is judged on the dense rows only."""
    from planner.analysis import longcontext

    dense, moe = longcontext.judge("hopper", 131072, False), longcontext.judge("hopper", 131072, True)
    assert dense["kind"] == "dense" and moe["kind"] == "moe"
    assert dense["beyond_rows"]["mean_signed"] < 0 < moe["beyond_rows"]["mean_signed"]
    every = longcontext.judge("hopper", 131072)
    assert every["kind"] == "all" and dense["beyond_rows"]["n"] + moe["beyond_rows"]["n"] == every["beyond_rows"]["n"]
    # on Blackwell only MoE runs that long were judged: a dense plan there cites none, not theirs
    assert longcontext.judge("blackwell", 131072, False)["beyond_rows"]["n"] == 0
    out = run_json(capsys, "estimate", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--gbs",
                   "64", "--tp", "8", "--cp", "8", "--sequence-parallel")
    assert out["long_context"]["kind"] == "dense"


def test_cp_note_weighs_half_and_double_the_cp(capsys):
    """Llama 3 70B at 131,072 tokens on 256 H100: the note compares the best plan's cp with half and twice it, the
    data-parallel degree taking up the rest of the GPUs (cp x dp constant)."""
    out = run_json(capsys, "suggest", "llama3-70b", "dgx-h100", "--gpus", "256", "--gbs", "64", "--seq-length",
                   "131072", "--top", "1")
    p, note = out["plans"][0]["plan"], out["search"]["context_parallel"]
    assert p["cp"] > 2
    assert f"Halved (cp {p['cp'] // 2}, dp {p['dp'] * 2})" in note
    assert f"Doubled (cp {p['cp'] * 2}, dp {p['dp'] // 2})" in note or p["dp"] % 2


def test_tables_show_causal_mfu_where_the_conventions_part(capsys):
    """At 524,288 tokens attention is nearly all of the FLOPs, so counting the full s x s square nearly doubles
    MFU: the table shows both; at 8,192 tokens (Llama 3 70B's) they are within a tenth and it shows one."""
    assert main(["suggest", "llama3-8b", "dgx-h100", "--gpus", "64", "--gbs", "8", "--seq-length", "524288",
                 "--top", "1"]) == 0
    long_table = capsys.readouterr().out
    assert "causal MFU its causal half" in long_table
    assert main(["suggest", "llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "512", "--top", "1"]) == 0
    assert "causal MFU" not in capsys.readouterr().out


def test_diagnose_offers_offload_without_recompute(capsys):
    """tp 8, cp 8 with selective recompute needs 84 GiB at 131k tokens; Megatron's whole-layer offload runs only
    without recompute, so the lever drops it: 40 of 80 layers on the host fit, faster than full recompute."""
    out = run_json(capsys, "diagnose", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--tp",
                   "8", "--cp", "8", "--gbs", "64", "--zero", "1", "--sequence-parallel", "--tp-comm-overlap",
                   "--recompute", "selective")
    levers = {lv["lever"]: lv for lv in out["diagnosis"]["levers"]}
    offload = [lv for name, lv in levers.items() if name.startswith("activation offload")]
    assert offload and offload[0]["plan"]["recompute"] == "none"
    full = levers["full recompute"]
    assert offload[0]["step_time_s"] < full["step_time_s"]


def test_a_hierarchical_exchange_of_one_domain_rank_is_named_the_ring(capsys):
    """tp 8 fills a DGX H100's 8-GPU NVLink domain, so cp 8's ranks sit one to a domain: a2a+p2p's all-to-all
    group is one rank and the exchange is the ring (Megatron writes --hierarchical-context-parallel-sizes 1 8)."""
    out = run_json(capsys, "estimate", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--gbs",
                   "64", "--tp", "8", "--cp", "8", "--cp-comm", "a2a+p2p", "--sequence-parallel")
    assert any("sit 1 to an NVLink domain" in w and "the p2p ring" in w for w in out["warnings"])
    ring = run_json(capsys, "estimate", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--gbs",
                    "64", "--tp", "8", "--cp", "8", "--cp-comm", "p2p", "--sequence-parallel")
    assert out["step_time_s"] == ring["step_time_s"]


def test_selective_recompute_that_saves_nothing_is_warned_of(capsys):
    """With fused attention the attention core keeps no s x s scores: at 131,072 tokens on tp 8 x cp 8 the
    selective plan needs as much memory as no recompute (84 GiB both) and replays the attention core, the
    costliest kernel at that length, for nothing; estimate says so."""
    out = run_json(capsys, "estimate", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--tp",
                   "8", "--cp", "8", "--gbs", "64", "--zero", "1", "--sequence-parallel", "--recompute", "selective")
    bare = run_json(capsys, "estimate", "llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--tp",
                    "8", "--cp", "8", "--gbs", "64", "--zero", "1", "--sequence-parallel")
    assert abs(out["memory_per_gpu_bytes"] - bare["memory_per_gpu_bytes"]) < 2**30
    assert out["step_time_s"] > 1.1 * bare["step_time_s"]
    assert any(w.startswith("selective recompute saves") for w in out["warnings"])
    assert not any(w.startswith("selective recompute saves") for w in bare["warnings"])
