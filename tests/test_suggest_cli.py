"""`planner suggest` end to end: JSON plans are `estimate --json` objects, output is deterministic,
framework and fixes are respected, and impossible requests are one line on stderr with exit 2."""
from __future__ import annotations

import json

import pytest

from planner.commands.main import main

SMALL = ["llama3-8b", "dgx-h100", "--gpus", "16", "--gbs", "64"]


def run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def suggest_json(capsys, *extra):
    rc, out, err = run(capsys, ["suggest", *SMALL, "--json", *extra])
    assert rc == 0, err
    return json.loads(out)


def estimate_argv(plan: dict) -> list[str]:
    argv = ["estimate", *SMALL, "--json", "--tp", str(plan["tp"]), "--pp", str(plan["pp"]), "--dp", str(plan["dp"]),
            "--cp", str(plan["cp"]), "--cp-comm", plan["cp_comm"], "--ep", str(plan["ep"]), "--etp", str(plan["etp"]),
            "--vpp", str(plan["vpp"]), "--mbs", str(plan["micro_batch_size"]), "--zero", str(plan["zero_stage"]),
            "--recompute", plan["recompute"], "--precision", plan["precision"], "--grad-dtype", plan["grad_dtype"]]
    flags = {"--sequence-parallel": plan["sequence_parallel"], "--tp-comm-overlap": plan["tp_comm_overlap"],
             "--lowp-param-gather": plan["lowp_param_gather"], "--no-zero3-reshard": not plan["zero3_reshard"]}
    return argv + [f for f, on in flags.items() if on] + ["--weight-casts", plan["weight_casts"],
                                                          "--optimizer-states", plan["optimizer_states"]]


def test_plans_are_estimate_objects(capsys):
    got = suggest_json(capsys, "--top", "3")
    assert len(got["plans"]) == 3
    for d in got["plans"]:
        rc, out, err = run(capsys, estimate_argv(d["plan"]))
        assert rc == 0, err
        est = json.loads(out)
        assert {k: est[k] for k in d if k != "frameworks"} == {k: v for k, v in d.items() if k != "frameworks"}
        assert d["frameworks"]  # and who launches it, beside the estimate (test_search_emit_agree.py)


def test_numerics_flags_hold_for_every_plan(capsys):
    """--optimizer-states bf16 and --lowp-param-gather are the user's numerics: every plan searched carries
    them (the search never picks them), each plan is the estimate of the same flags, and a framework that
    does not offer them is left out with its reason. Megatron's precision-aware optimizer keeps bf16 Adam
    moments (2 + 2 B) and the 16-bit remainder of the fp32 master weight (2 B): 6 B per parameter against
    mixed-precision Adam's 12 (ZeRO Sec 3.1), half the optimizer-state bytes of the same plan."""
    got = suggest_json(capsys, "--top", "3", "--optimizer-states", "bf16")
    assert {d["plan"]["optimizer_states"] for d in got["plans"]} == {"bf16"}
    for d in got["plans"]:
        rc, out, err = run(capsys, estimate_argv(d["plan"]))
        assert rc == 0, err
        assert {k: v for k, v in json.loads(out).items() if k in d} == {k: v for k, v in d.items() if k != "frameworks"}
        argv = estimate_argv({**d["plan"], "optimizer_states": "fp32"})
        rc, out, err = run(capsys, argv)
        fp32 = json.loads(out)["memory_breakdown_bytes"]["optimizer_states"]
        assert d["memory_breakdown_bytes"]["optimizer_states"] == pytest.approx(fp32 * 6 / 12, rel=1e-12)
    low = suggest_json(capsys, "--top", "2", "--precision", "fp8", "--lowp-param-gather", "--framework", "megatron")
    assert all(d["plan"]["lowp_param_gather"] and d["plan"]["precision"] == "fp8" for d in low["plans"])
    rc, out, err = run(capsys, ["suggest", *SMALL, "--framework", "deepspeed", "--optimizer-states", "bf16"])
    assert rc == 2 and "DeepSpeed: optimizer states bf16: fp32 optimizer states only" in err


def test_ranked_distinct_and_deterministic(capsys):
    a, b = suggest_json(capsys, "--top", "4"), suggest_json(capsys, "--top", "4")
    assert [d["plan"] for d in a["plans"]] == [d["plan"] for d in b["plans"]]
    steps = [d["step_time_s"] for d in a["plans"]]
    assert steps == sorted(steps)
    groups = {(d["plan"]["tp"], d["plan"]["pp"], d["plan"]["dp"]) for d in a["plans"]}
    assert len(groups) == 4
    assert a["why"] and "faster" in a["why"]
    assert all(d["fits"] and d["memory_per_gpu_bytes"] <= 0.9 * d["memory_capacity_bytes"] for d in a["plans"])


def test_enumerator_agrees(capsys):
    a = suggest_json(capsys, "--top", "2")
    b = suggest_json(capsys, "--top", "2", "--solver", "enumerate")
    assert [d["step_time_s"] for d in a["plans"]] == pytest.approx([d["step_time_s"] for d in b["plans"]], rel=1e-9)


def test_framework_and_fixes(capsys):
    got = suggest_json(capsys, "--framework", "megatron", "--fix", "tp=2", "--fix", "recompute=selective",
                       "--fix", "cp=1")
    # tp 2 (cp 1) on 16 GPUs leaves pp x dp = 8: pp 1, 2, 4, 8 (all divide Llama 3 8B's 32 layers), four
    # layouts, all within the default top 5.
    assert {(d["plan"]["tp"], d["plan"]["pp"], d["plan"]["dp"]) for d in got["plans"]} == \
        {(2, 1, 8), (2, 2, 4), (2, 4, 2), (2, 8, 1)}
    for d in got["plans"]:
        p = d["plan"]
        assert p["tp"] == 2 and p["cp"] == 1 and p["recompute"] == "selective" and p["zero_stage"] <= 1
        assert p["vpp"] == 1 or (32 % (p["pp"] * p["vpp"]) == 0 and p["grad_accum_steps"] % p["pp"] == 0)


def test_cost_objective_and_widened_precision(capsys):
    got = suggest_json(capsys, "--objective", "cost", "--precision", "bf16,fp8", "--top", "2")
    usd = [d["usd_per_step"] for d in got["plans"]]
    assert usd == sorted(usd) and got["search"]["objective"] == "cost"
    assert {d["plan"]["precision"] for d in got["plans"]} <= {"bf16", "fp8"}


def test_table_output(capsys):
    rc, out, err = run(capsys, ["suggest", *SMALL, "--top", "2"])
    assert rc == 0, err
    assert "Best plans" in out and "#1 vs #2" in out and "Where the step goes" in out


@pytest.mark.parametrize("argv, words", [
    (["megatron-1t", "dgx-a100", "--gpus", "8"], ["no plan fits in memory", "GiB", "GPUs"]),
    (["llama3-70b", "dgx-h100", "--gpus", "64"], ["no global_batch_size", "--gbs"]),
    ([*SMALL, "--fix", "tp=3"], ["no legal layout", "tp=3"]),
    ([*SMALL, "--fix", "zero=5x"], ["--fix zero=5x"]),
    ([*SMALL, "--fix", "color=red"], ["--fix color=red"]),
    ([*SMALL, "--precision", "bf17"], ["--precision bf17"]),
    ([*SMALL, "--max-memory-fraction", "1.5"], ["--max-memory-fraction"]),
    (["llama3-8b", "dgx-a100-40gb", "--gpus", "16", "--gbs", "64", "--objective", "cost"], ["needs a price"]),
    (["megatron-1.7b", "dgx-a100", "--gpus", "50", "--gbs", "8"], ["no legal layout", "global batch (8)"]),
    # the refusal probe takes torchtitan's own weight casts (per use), so the rule named is torchtitan's, not
    # "weight casts per step", a knob torchtitan never offers (a 2026-12-07 audit)
    (["llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--gbs", "64", "--precision", "mxfp8", "--framework",
      "torchtitan"], ["no legal layout", "MXFP8 converters need a CUDA device"]),
])
def test_impossible_requests_are_one_line(capsys, argv, words):
    rc, out, err = run(capsys, ["suggest", *argv])
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("planner: error: ")
    for w in words:
        assert w in err


def test_unsupported_options_are_noted(capsys):
    rc, out, err = run(capsys, ["suggest", *SMALL, "--json", "--top", "2", "--grad-dtype", "bf16,int8"])
    assert rc == 0
    assert "--grad-dtype int8" in err and err.startswith("planner: note: ")
    assert {d["plan"]["grad_dtype"] for d in json.loads(out)["plans"]} == {"bf16"}


@pytest.mark.parametrize("fix, field, value", [("tp_comm_overlap=false", "tp_comm_overlap", False),
                                               ("attn=flash2", "attention_kernel", "flash2"),
                                               ("zero_stage=1", "zero_stage", 1)])
def test_fix_any_knob_by_its_plan_field(capsys, fix, field, value):
    got = suggest_json(capsys, "--fix", fix, "--top", "2")
    assert got["plans"] and all(d["plan"][field] == value for d in got["plans"])
    oracle = suggest_json(capsys, "--fix", fix, "--top", "2", "--solver", "enumerate")
    assert [d["step_time_s"] for d in got["plans"]] == pytest.approx([d["step_time_s"] for d in oracle["plans"]])


def test_fix_help_names_every_knob(capsys):
    from planner.commands.suggest import FIX_HELP
    from planner.search.space import PLAN_FIELDS

    assert all(field in FIX_HELP for field in PLAN_FIELDS.values())
    rc, _, err = run(capsys, ["suggest", *SMALL, "--fix", "cp_comm=ring"])
    assert rc == 2 and err.count("\n") == 1 and "--fix cp_comm=ring: expected one of p2p" in err


def test_low_precision_gathers_do_not_depend_on_the_order_of_precisions(capsys):
    """--precision bf16,fp8 --lowp-param-gather: the split probes take fp8 (bf16 cannot keep fp8 parameters);
    it had refused every split, while fp8,bf16 worked."""
    a = suggest_json(capsys, "--top", "1", "--precision", "bf16,fp8", "--lowp-param-gather")
    b = suggest_json(capsys, "--top", "1", "--precision", "fp8,bf16", "--lowp-param-gather")
    assert a["plans"][0]["plan"] == b["plans"][0]["plan"]
    assert a["plans"][0]["plan"]["precision"] == "fp8" and a["plans"][0]["plan"]["lowp_param_gather"]


def test_a_refusal_gives_the_frameworks_own_reason(capsys):
    """Llama 3 8B on 16 H100 with bf16 Adam states under torchtitan: every split fails on torchtitan's fp32-only
    optimizer states. The refusal named instead settings torchtitan never gets from the search (pipeline buffers
    freed, a p2p CP exchange, SP inputs saved as the shard), probed with Megatron-LM's runtime (an audit)."""
    assert main(["suggest", "llama3-8b", "dgx-h100", "--gpus", "16", "--gbs", "512", "--optimizer-states", "bf16",
                 "--framework", "torchtitan"]) == 2
    err = capsys.readouterr().err
    assert "torchtitan: optimizer states bf16: fp32 optimizer states only" in err
    assert "pipeline buffers" not in err and "context-parallel exchange" not in err and "gathered" not in err


def test_a_model_wide_refusal_is_named_first(capsys):
    """Mixtral 8x7B under DeepSpeed on 16 A100: every split fails on DeepSpeed's MoE rule, but the splits with
    cp > 1 failed first on its context-parallel rule, so the refusal led with CP, which re-planning cannot fix
    (an audit). The model-wide rule comes first among DeepSpeed's layout rules."""
    assert main(["suggest", "mixtral-8x7b", "dgx-a100", "--gpus", "16", "--gbs", "128", "--framework",
                 "deepspeed"]) == 2
    err = capsys.readouterr().err
    assert "every (tp, pp) split breaks a rule: DeepSpeed: planner's DeepSpeed launch files do not carry " \
           "mixture-of-experts layers" in err and "Ulysses" not in err
