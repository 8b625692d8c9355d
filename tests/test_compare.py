"""`planner compare`: a fair comparison, or a warning that says why it is not."""
from __future__ import annotations

import json

from planner.analysis.compare import compare, differences
from planner.commands.main import main


def est(model="m", gpus=16, gbs=64, step=10.0, tokens_per_s=None, fits=True, seq=4096, mem=60 * 2**30):
    return {"model": model, "cluster": "c", "gpu": "g", "num_gpus": gpus, "seq_length": seq,
            "plan": {"tp": 1, "pp": 1, "dp": gpus, "global_batch_size": gbs}, "step_time_s": step,
            "tokens_per_s": tokens_per_s if tokens_per_s is not None else gbs * seq / step, "fits": fits,
            "memory_per_gpu_bytes": mem, "memory_capacity_bytes": 80 * 2**30, "mfu": 0.4,
            "time_breakdown_s": {"compute": step}, "usd_per_step": 1.0}


def test_same_job_compares_step_times():
    r = compare(est(step=10.0), est(step=12.5))
    assert (r["faster"], r["measure"], r["same_job"], r["warnings"]) == ("A", "step time", True, [])


def test_different_jobs_are_named_and_ranked_by_throughput_per_gpu():
    # A: 70B-like job, 512 x 8192 tokens in 57 s on 64 GPUs = 1,150 tokens/s per GPU;
    # B: 8B-like job, 128 x 8192 tokens in 3.3 s on 16 GPUs = 19,859 tokens/s per GPU: B is 17.3x.
    a = est("llama3-70b", gpus=64, gbs=512, step=57.0, seq=8192)
    b = est("llama3-8b", gpus=16, gbs=128, step=3.3, seq=8192)
    r = compare(a, b)
    assert differences(a, b) == ["model llama3-70b vs llama3-8b", "GPU count 64 vs 16", "global batch 512 vs 128"]
    assert r["faster"] == "B" and r["measure"] == "tokens/s per GPU" and not r["same_job"]
    assert r["why"].startswith("17.27x the tokens/s per GPU")
    assert "step times do not compare" in r["why"]
    assert "nor is a token of one model the work of a token of the other" in r["why"]  # 70B vs 8B
    # $1 a step each: A's buys 512 x 8192 tokens ($0.2384 per million), B's 128 x 8192 ($0.9537): 4x, 300% more
    assert r["cheaper"] == "A"
    assert r["why"].endswith("but costs 300% more per token (A $0.2384, B $0.9537 per million)")
    same_model = compare(est("llama3-8b", gpus=64, gbs=512, step=57.0), b)
    assert "nor is a token" not in same_model["why"]


def test_a_plan_that_does_not_fit_is_named():
    r = compare(est(fits=False, mem=int(83.5 * 2**30)), est(step=11.0))
    assert r["does_not_fit"] == ["A"]
    assert "A does not fit in GPU memory (83.5 GiB of 80.0 GiB per GPU)" in r["warnings"]


def test_command_prints_the_warnings(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps(est("llama3-70b", gpus=64, gbs=512, step=57.0, fits=False,
                                                          mem=90 * 2**30)))
    (tmp_path / "b.json").write_text(json.dumps(est("llama3-8b")))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "different jobs: model llama3-70b vs llama3-8b" in out and "A does not fit" in out


def test_a_per_node_network_figure_draws_a_warning(tmp_path, capsys):
    """8 x 400 Gb/s NICs per DGX H100 node = 3200 Gb/s per node; typed as per-GPU it is 4x the fastest
    shipped NIC (ConnectX-8, 800 Gb/s) and draws a warning naming the field."""
    (tmp_path / "c.yaml").write_text("name: mine\ngpu: h100-sxm-80gb\nnetwork_bandwidth_gbits_per_s: 3200\n")
    assert main(["estimate", "llama3-8b", str(tmp_path / "c.yaml"), "--gpus", "16", "--tp", "8", "--gbs", "64",
                 "--json"]) == 0
    err = capsys.readouterr().err
    assert "planner: warning: mine: network_bandwidth_gbits_per_s 3200 is above twice the fastest shipped NIC" in err
    (tmp_path / "d.yaml").write_text("name: ok\ngpu: h100-sxm-80gb\nnetwork_bandwidth_gbits_per_s: 400\n")
    assert main(["estimate", "llama3-8b", str(tmp_path / "d.yaml"), "--gpus", "16", "--tp", "8", "--gbs", "64",
                 "--json"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_edited_estimate_is_refused(tmp_path, capsys):
    """An estimate whose numbers break the identities planner writes them with (the step is the sum of
    its time parts, dp_comm listed beside them; memory the sum of its parts; tokens/s = gbs x seq / step;
    fits = memory <= capacity) is one error, not a ranking: an emptied breakdown had tied with any plan,
    and a step cut to 1 s won "53x faster" with TP communication at 359% of the step."""
    good = dict(est(step=10.0), time_breakdown_s={"compute": 9.0, "tp_comm": 0.5, "dp_comm_exposed": 0.5,
                                                   "dp_comm": 4.0},
                memory_breakdown_bytes={"parameters": 20 * 2**30, "activations": 40 * 2**30})
    edits = {"empty breakdown": {"time_breakdown_s": {}},
             "step cut": {"step_time_s": 1.0, "tokens_per_s": 64 * 4096 / 1.0},
             "tokens/s raised": {"tokens_per_s": 2 * 64 * 4096 / 10.0},
             "memory cut": {"memory_per_gpu_bytes": 30 * 2**30},
             "fits flipped": {"fits": False}}
    (tmp_path / "good.json").write_text(json.dumps(good))
    assert main(["compare", str(tmp_path / "good.json"), str(tmp_path / "good.json")]) == 0
    capsys.readouterr()
    for name, edit in edits.items():
        (tmp_path / "bad.json").write_text(json.dumps({**good, **edit}))
        assert main(["compare", str(tmp_path / "good.json"), str(tmp_path / "bad.json")]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "bad.json" in err and "edited" in err, (name, err)


def test_a_cluster_without_a_price_is_not_shown_as_free(tmp_path, capsys):
    """A priced plan against one on a cluster the catalog has no price for: "no price", not $0.00 and a
    saving of the whole cost."""
    priced = {**est(step=10.0), "usd_per_gpu_hour": 2.0, "usd_per_step": 16 * 2.0 * 10.0 / 3600}
    unpriced = {**est(step=12.0), "usd_per_gpu_hour": 0.0, "usd_per_step": 0.0}
    (tmp_path / "a.json").write_text(json.dumps(priced))
    (tmp_path / "b.json").write_text(json.dumps(unpriced))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "$ per step" in line)
    assert "no price" in row and "0.09" in row and "-0.09" not in row


def test_a_file_of_an_older_contract_compares_on_what_both_state(tmp_path, capsys):
    """A schema-6 plan has no moe_sync part (the host syncs were in ep_comm) and a schema-3 one no ep_overlap:
    the comparison shows '-' for the part and leaves the field out of 'why', not '0.000' or 'None'."""
    new = {**est(step=10.0), "time_breakdown_s": {"compute": 8.0, "ep_comm": 1.0, "moe_sync": 1.0}}
    new["plan"] = {**new["plan"], "ep_overlap": False, "micro_batch_size": 1}
    old = {**est(step=11.0), "time_breakdown_s": {"compute": 9.0, "ep_comm": 2.0}}
    old["plan"] = {**old["plan"], "micro_batch_size": 2}
    assert "None" not in compare(new, old)["why"] and "mbs 1 instead of 2" in compare(new, old)["why"]
    (tmp_path / "a.json").write_text(json.dumps(new))
    (tmp_path / "b.json").write_text(json.dumps(old))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "MoE host syncs" in line)
    assert "1.000" in row and "-" in row.split("1.000")[1]


def test_why_names_every_plan_difference_not_the_first_three():
    """An expert review (2026-12-07) read '#1 vs #2: pp 1 instead of 4, dp 32 instead of 8, vpp 1 instead of 16'
    for plans that also differed in ZeRO stage, micro-batch and 63 offloaded layers, which decided it."""
    from planner.analysis.explain import why_faster

    def plan(**kw):
        base = {"tp": 8, "pp": 1, "dp": 32, "vpp": 1, "zero_stage": 3, "micro_batch_size": 4, "offload_layers": 63,
                "offload_modules": []}
        return {"plan": {**base, **kw}, "step_time_s": 1.0, "time_breakdown_s": {"compute": 0.9}}

    a, b = plan(), plan(pp=4, dp=8, vpp=16, zero_stage=1, micro_batch_size=1, offload_layers=0,
                        sequence_parallel=False, attention_kernel="flash2")
    a["plan"].update(sequence_parallel=True, attention_kernel="cudnn")
    b["step_time_s"], b["time_breakdown_s"] = 1.2, {"compute": 1.1}
    why = why_faster(a, b)
    for phrase in ("pp 1 instead of 4", "dp 32 instead of 8", "vpp 1 instead of 16", "ZeRO 3 instead of 1",
                   "mbs 4 instead of 1", "layers offloaded 63 instead of 0", "SP on instead of off",
                   "attention kernel cudnn instead of flash2"):
        assert phrase in why


def test_every_plan_field_has_words():
    """A plan field joins the differences by itself (explain.LAYOUT_KEYS comes from plans.plan_to_dict); each
    must read as written or have words, and a default layer split reads as such, not as None."""
    from planner.analysis.explain import KEY_WORDS, LAYOUT_KEYS, PLAIN_KEYS, plan_differences

    assert "recompute_layers" in LAYOUT_KEYS and "global_batch_size" not in LAYOUT_KEYS
    assert [k for k in LAYOUT_KEYS if k not in KEY_WORDS and k not in PLAIN_KEYS] == []
    a, b = {"plan": {"stage_layers": None}}, {"plan": {"stage_layers": [3, 5]}}
    assert plan_differences(a, b) == ["layers per chunk default instead of 3,5"]


def test_differences_leave_out_low_precision_settings_a_plan_does_not_run():
    """A bf16 plan's FP8 recipe and weight casts are defaults it never uses: beside an fp8 plan the precision says the
    difference ("FP8 recipe delayed instead of rowwise, weight casts step instead of use" read as settings of the bf16
    plan, a suggest line of 2026-12-07); between two low-precision plans they are named, the recipe between fp8 ones."""
    from planner.analysis.explain import plan_differences

    bf16 = {"plan": {"precision": "bf16", "fp8_recipe": "delayed", "weight_casts": "step", "lowp_param_gather": False}}
    fp8 = {"plan": {"precision": "fp8", "fp8_recipe": "rowwise", "weight_casts": "use", "lowp_param_gather": True}}
    assert plan_differences(bf16, fp8) == ["precision bf16 instead of fp8"]
    delayed = {"plan": {**fp8["plan"], "fp8_recipe": "delayed", "weight_casts": "step"}}
    assert plan_differences(delayed, fp8) == ["FP8 recipe delayed instead of rowwise", "weight casts step instead of use"]
    mx = {"plan": {**delayed["plan"], "precision": "mxfp8"}}
    assert plan_differences(mx, fp8) == ["precision mxfp8 instead of fp8", "weight casts step instead of use"]


def test_suggest_says_when_the_best_wins_by_less_than_the_models_error():
    from planner.search.report import within_error

    plans = [{"step_time_s": 10.0}, {"step_time_s": 10.3}]  # 3% apart
    judged = {"out_of_sample": {"n": 12, "mape": 0.059}, "left_out": "model"}
    assert within_error("pp 1 instead of 2", plans, judged) == (
        "pp 1 instead of 2; inside the model's 5.9% error on published runs like these (each run's model left out "
        "of the fit): read them as equal and choose by memory or what your stack runs")
    assert within_error("pp 1 instead of 2", [{"step_time_s": 10.0}, {"step_time_s": 11.0}], judged) == \
        "pp 1 instead of 2"  # 10% apart: a win the model can tell
    assert within_error("x", plans, None) == "x" and within_error(None, plans, judged) is None


def test_compare_says_when_two_plans_of_one_job_differ_by_less_than_the_models_error():
    """The day's review: suggest read 53.82 s against 54.44 s as equal, compare as '1.01x faster' with no word."""
    from planner.analysis.compare import compare as compare_dicts

    judged = {"out_of_sample": {"n": 73, "mape": 0.079}, "left_out": "source"}
    a = {**est(step=53.82), "accuracy": judged}
    b = {**est(step=54.44), "accuracy": judged}
    warnings = compare_dicts(a, b)["warnings"]
    assert any(w.startswith("A and B differ by 1.1% in step time, inside the model's 7.9% error") for w in warnings)
    far = compare_dicts(a, {**est(step=60.0), "accuracy": judged})["warnings"]  # 10% apart: a difference it can tell
    assert not any("inside the model's" in w for w in far)


def test_compare_says_it_reads_a_plan_as_given_not_its_what_if():
    """An audit's case: B is A's plan scored with --what-if imbalance=1.3 (what_if.estimate: 7.055 s); compare reads
    the top-level figures, so it says so instead of a silent tie."""
    from planner.analysis.compare import compare

    a, b = est(step=6.0), est(step=6.0)
    b["what_if"] = {"assumptions": "imbalance=1.3", "estimate": est(step=7.055)}
    out = compare(a, b)
    assert out["faster"] == "tie"
    assert ("B carries a what-if (imbalance=1.3: step 7.055 s against 6 s as given) that compare does not read"
            in out["warnings"][-1])
    assert not any("carries a what-if" in w for w in compare(a, est(step=6.0))["warnings"])


def test_one_job_on_other_hardware_compares_step_times():
    """An audit's case: Qwen3-235B, 256 GPUs, batch 2048 on GB200 (5.446 s) and on DGX B200 (6.743 s): the same
    tokens a step, so the step times compare, 6.743 / 5.446 = 1.24x; only the hardware is named as differing."""
    a, b = est(gpus=256, gbs=2048, step=5.446), est(gpus=256, gbs=2048, step=6.743)
    b.update(cluster="dgx-b200", gpu="b200")
    r = compare(a, b)
    assert (r["faster"], r["measure"], r["same_job"]) == ("A", "step time", False)
    assert r["why"] == "1.24x the step time of the same job on other hardware (cluster c vs dgx-b200; GPU g vs b200)"
    assert r["warnings"][0] == ("the plans are for the same job on different hardware: cluster c vs dgx-b200; "
                                "GPU g vs b200")
    other = compare(a, est(gpus=128, gbs=2048, step=6.743))  # a GPU count apart: another job, ranked per GPU
    assert other["measure"] == "tokens/s per GPU" and "do not compare" in other["why"]


def test_mfus_of_two_precisions_are_not_subtracted(tmp_path, capsys):
    """An fp8 plan's MFU is of the fp8 peak, a bf16 plan's of the bf16 one (an audit found 14.5 -> 40.3 printed as
    +25.7): the row says whose peak each is and leaves the change out."""
    a, b = est(), est()
    a["plan"]["precision"], b["plan"]["precision"] = "fp8", "bf16"
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "MFU %" in line)
    assert "(each of its precision's peak)" in row and "+" not in row and "-0" not in row


def test_the_same_plan_at_two_prices_ties_on_time_and_says_the_dollars():
    """An audit's case: one plan on dgx-h100 ($3.54 a step) and on dgx-h100-reserved ($2.12): a tie, said
    without the 40% its price saves."""
    a, b = est(), {**est(), "cluster": "c-reserved", "usd_per_step": 2.12 / 3.54}
    r = compare(a, b)
    assert (r["faster"], r["cheaper"]) == ("tie", "B")
    assert r["why"] == "the same step time; B costs 40% less per step (A $1, B $0.5989)"  # 1 - 2.12 / 3.54 = 0.401


def test_a_faster_plan_that_costs_more_says_so():
    """Same job on an H200 cluster: 1% faster, 32% dearer a step ($4.68 vs $3.54)."""
    a = {**est(step=10.0), "usd_per_step": 3.54}
    b = {**est(step=9.9), "cluster": "h200", "gpu": "h200", "usd_per_step": 4.68}
    r = compare(a, b)
    assert (r["faster"], r["cheaper"]) == ("B", "A")
    assert r["why"].endswith("but costs 32% more per step (A $3.54, B $4.68)")  # 4.68 / 3.54 = 1.322 (per token too)


def test_a_faster_plan_that_does_not_fit_is_not_left_the_verdict():
    """A vs the same layout without ZeRO-1 or recompute: 3% faster, 90.3 GiB on an 80 GiB GPU. The verdict named
    it the winner; it cannot run."""
    r = compare(est(step=10.3), est(step=10.0, fits=False, mem=int(90.3 * 2**30)))
    assert r["faster"] == "B" and r["why"].endswith("but B does not fit in GPU memory (90.3 GiB of 80.0 GiB per "
                                                    "GPU): A is the one that runs")


def test_a_hand_edited_plan_the_cost_model_does_not_score_is_refused(tmp_path, capsys):
    """ep 8 written into a dense Llama 3 8B plan was compared as given (and tied)."""
    assert main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--json"]) == 0
    good = json.loads(capsys.readouterr().out)
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps({**good, "plan": {**good["plan"], "ep": 8}}))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("planner: error: B: its plan is not one planner scores for llama3-8b: ep and etp apply "
                           "only to mixture-of-experts models (this one is dense)")


def test_a_cheaper_plan_that_does_not_fit_is_not_called_cheaper_in_the_verdict():
    """A review's case: A faster and 28% cheaper a step, but A does not fit; the verdict said it costs less."""
    a = {**est(step=10.0, fits=False, mem=int(90 * 2**30)), "usd_per_step": 1.0}
    b = {**est(step=12.8), "usd_per_step": 1.39}
    r = compare(a, b)
    assert r["faster"] == "A" and r["cheaper"] == "A"
    assert "costs" not in r["why"] and r["why"].endswith("B is the one that runs")
