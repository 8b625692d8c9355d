"""Pre-purchase sizing: CP-SAT choice vs plain enumeration, overheads, impossible requests, the plot."""
import json
import math
import random
import xml.etree.ElementTree as ET

import pytest

from costmodel import runtime
from planner.commands.main import main
from planner.inputs import catalogs, loading
from planner.inputs.specs import ClusterSpec, GpuSpec
from planner.sizing import scan as sizing


def fake_option(days: float, usd: float, i: int) -> sizing.Option:
    """An option with given totals: one GPU, price chosen so usd = hours x price."""
    gpu = GpuSpec(name=f"g{i}", generation="hopper", memory_gib=80, dense_tflops={"bf16": 1000},
                  hbm_bandwidth_gbytes_per_s=3000)
    spec = ClusterSpec(name=f"c{i}", gpu=gpu, network_bandwidth_gbits_per_s=400)
    hours = days * 24
    off = sizing.Offering(spec, gpu, usd / hours)
    wall = runtime.RunOverheads(0.0, math.inf, 0.0, days * sizing.DAY)
    return sizing.Option(off, 1, best=object(), steps=1, step_seconds_total=days * sizing.DAY, wall=wall)


@pytest.mark.parametrize("seed", range(60))
def test_cpsat_choice_equals_plain_enumeration(seed):
    rng = random.Random(seed)
    options = [fake_option(rng.uniform(1, 60), rng.uniform(1e5, 5e6), i) for i in range(rng.randint(1, 25))]
    deadline = rng.choice([None, rng.uniform(1, 60)])
    budget = rng.choice([None, rng.uniform(1e5, 5e6)])
    for minimize in ("usd", "days"):
        got = sizing.choose(options, minimize, deadline, budget)
        want = sizing.choose_plain(options, minimize, deadline, budget)
        assert (got is None) == (want is None)
        if got is not None:  # same optimum up to the CP-SAT model's rounding (cents, seconds)
            key = (lambda o: o.usd) if minimize == "usd" else (lambda o: o.days * sizing.DAY)
            assert abs(key(got) - key(want)) <= 1.0


def test_pareto_front_is_not_dominated():
    options = [fake_option(d, u, i) for i, (d, u) in enumerate([(10, 100), (5, 200), (7, 150), (6, 300), (12, 90)])]
    front = sizing.pareto(options)
    assert [(o.days, o.usd) for o in front] == [(5, 200), (7, 150), (10, 100), (12, 90)]


def test_gpu_counts_whole_nodes():
    assert sizing.gpu_counts(8, 64) == [8, 16, 32, 64]
    assert sizing.gpu_counts(8, 64, min_gpus=20, fine=True) == [24, 32, 48, 64]
    assert sizing.gpu_counts(4, 3) == []


def test_deadline_lower_bound_by_hand():
    # Llama 3 70B (h 8192, 64 heads, 8 KV heads of 128, SwiGLU 28672) at tp 1, per token and layer,
    # forward weight GEMMs: QKV 10240 x 8192, output 8192 x 8192, gate+up 57344 x 8192, down 8192 x
    # 28672; each counted at n k - 7 max(n, k) (floor(width / tp) on a DGX H100's 8-GPU NVLink domain):
    # 2 x (855,638,016 - 7 x 104,448) = 1,709,813,760 FLOPs; x 3 (backward twice) x 80 layers =
    # 410,355,302,400 FLOPs per token. The attention core, per token and layer: causal, 4096 keys a query
    # on average, query and value widths 8192 each: 2 x 4096 x 16384 = 134,217,728 FLOPs forward; fused,
    # 3.5 x that at 989 x 0.4858 (the fitted Hopper cuDNN fraction) x 8192 / (8192 + 4096) (its half length)
    # x 1.4969 (H100's measured FP8 attention speedup, the larger pass) = 479.5 TFLOP/s: 9.798e-7 s, the
    # smaller; unfused, the whole square (8192 keys), 268,435,456 x 3 = 805,306,368 FLOPs at 794.5 TFLOP/s,
    # the H100's measured best GEMM (MAMF, the catalog's measured_matmul_bf16_tflops), as the weights':
    # 1.0136e-6 s. 2e12 tokens at 512 x 8192 per step: 476,838 steps; 410,355,302,400 FLOPs a token at
    # 794.5 TFLOP/s and 80 fused attention cores, 5.9488e-4 s a token: 1.18975e9 GPU-seconds, 459.0 GPUs for
    # 30 days: the floor, 459 (398 before the attention counted).
    model = loading.load_model_spec("llama3-70b", global_batch_size=512)
    offs, _ = sizing.priced_offerings({"dgx-h100": catalogs.cluster_catalog()["dgx-h100"]}, catalogs.gpu_catalog(), None)
    assert sizing.min_gpus_for_deadline(model, offs[0], 2e12, 30) == 459
    floor = sizing.Floor.of(model, offs[0], 8, 2e12, None)
    fused = 134_217_728 * 3.5 / (989e12 * 0.4858 * 8192 / (8192 + 4096) * 1.4969)
    per_token = 410_355_302_400 / 794.5e12 + 80 * fused
    assert floor.days * 86400 * 8 == pytest.approx(per_token * 476_838 * 512 * 8192, rel=1e-9)
    assert floor.usd == pytest.approx(floor.days * 24 * 8 * offs[0].usd_per_gpu_hour, rel=1e-12)


@pytest.fixture(scope="module")
def small_scan():
    """A small model on a two-offering catalog: every (offering, count) searched both ways."""
    model = loading.load_model_spec("llama2-7b", global_batch_size=64)
    table = {k: v for k, v in catalogs.cluster_catalog().items() if k in ("dgx-h100", "dgx-a100")}
    offs, _ = sizing.priced_offerings(table, catalogs.gpu_catalog(), None)
    return model, offs


def enumerated_best(model, cluster, eff=None):
    from planner.analysis.score import score
    from planner.errors import PlannerError
    from planner.search import suggest
    from planner.search.space import SearchSpec

    try:
        r = suggest.run(SearchSpec(model.to_model(), cluster, model.global_batch_size),
                        suggest.Options(top_k=1, solver="enumerate"), eff)
    except PlannerError:
        return None
    return score(model, cluster, r.ranked[0].plan, eff)


def test_scan_with_cpsat_matches_the_enumerator(small_scan):
    model, offs = small_scan
    a = sizing.scan(model, offs, 32, 1e11, sizing.search_best_plan, sizing.RunAssumptions(), workers=1)
    b = sizing.scan(model, offs, 32, 1e11, enumerated_best, sizing.RunAssumptions(), workers=1)
    assert [(o.offering.name, o.num_gpus) for o in a.options] == [(o.offering.name, o.num_gpus) for o in b.options]
    for x, y in zip(a.options, b.options):
        assert x.days == pytest.approx(y.days, rel=1e-9) and x.usd == pytest.approx(y.usd, rel=1e-9)


def test_pruning_keeps_the_front_and_the_choices():
    """Counts whose step floor an option already found beats on time and dollars are not searched: the
    Pareto front and both choices are those of the full scan, and the pruned counts are named."""
    model = loading.load_model_spec("llama3-8b", global_batch_size=256)
    table = {k: v for k, v in catalogs.cluster_catalog().items() if k in ("dgx-h100-reserved", "dgx-a100", "hgx-h200")}
    offs, _ = sizing.priced_offerings(table, catalogs.gpu_catalog(), None)
    scans = [sizing.scan(model, offs, 128, 1e12, sizing.search_best_plan, sizing.RunAssumptions(), workers=1,
                         prune=prune) for prune in (True, False)]
    pruned, full = scans
    assert pruned.searched < full.searched
    assert any("not searched" in note for note in pruned.notes)
    key = lambda o: None if o is None else (o.offering.name, o.num_gpus)  # noqa: E731
    assert [key(o) for o in sizing.pareto(pruned.options)] == [key(o) for o in sizing.pareto(full.options)]
    for deadline, budget in ((None, None), (20.0, None), (None, 3e5), (10.0, 1e6)):
        for goal in ("usd", "days"):
            assert key(sizing.choose_plain(pruned.options, goal, deadline, budget)) == key(
                sizing.choose_plain(full.options, goal, deadline, budget))


def test_totals_include_checkpoints_and_failures(small_scan):
    model, offs = small_scan
    s = sizing.scan(model, offs, 16, 1e11, sizing.search_best_plan, sizing.RunAssumptions(), workers=1)
    feasible = [o for o in s.options if o.feasible]
    # Llama 2 7B fits on 8 and 16 GPUs of either offering (16 B of states per parameter, ZeRO over dp 8).
    assert {(o.offering.name, o.num_gpus) for o in feasible} >= {("dgx-h100", 8), ("dgx-h100", 16)}
    for o in feasible:
        assert o.wall.total_seconds > o.step_seconds_total
        assert o.usd == pytest.approx(o.days * 24 * o.num_gpus * o.offering.usd_per_gpu_hour)
        assert o.days == pytest.approx(o.wall.total_seconds / 86400)


def run_json(capsys, *argv, code=0):
    assert main(["size", *argv, "--json"]) == code
    return json.loads(capsys.readouterr().out)


SMALL = ["llama2-7b", "--tokens", "1e11", "--gbs", "64", "--gpu-types", "h100-sxm-80gb", "--max-gpus", "64",
         "--workers", "1"]


def test_impossible_deadline_names_the_closest_and_what_it_needs(capsys):
    d = run_json(capsys, *SMALL, "--deadline-days", "0.01", code=1)  # the report, and exit status 1
    assert d["cheapest"] is None and d["fastest"] is None and d["pareto_scope"] == "sized"
    assert any("no offering meets 0.01 days" in n and "GPUs if scaling held" in n for n in d["notes"])
    # with a budget too: counts that miss the deadline are not all sized, so nothing is said of the budget
    both = run_json(capsys, *SMALL, "--deadline-days", "0.01", "--budget-usd", "1e9", code=1)
    assert not any("fits $" in n for n in both["notes"])


def test_budget_below_the_cheapest_names_the_cheapest(capsys):
    d = run_json(capsys, *SMALL, "--budget-usd", "1", code=1)
    assert d["cheapest"] is None and d["pareto_scope"] == "all"
    assert any("no option fits $1.00" in n and "the cheapest is" in n for n in d["notes"])
    assert main(["size", *SMALL, "--budget-usd", "1"]) == 1
    assert capsys.readouterr().err == "planner: no option meets $1.00 (the report gives the closest options and " \
                                      "what they would need)\n"


def test_prices_file_overrides_the_catalog(tmp_path, capsys):
    base = run_json(capsys, *SMALL)
    (tmp_path / "p.yaml").write_text("h100-sxm-80gb: 1.0\n")
    cheap = run_json(capsys, *SMALL, "--prices", str(tmp_path / "p.yaml"))
    assert {o["usd_per_gpu_hour"] for o in cheap["options"]} == {1.0}
    a = {(o["offering"], o["num_gpus"]): o for o in base["options"] if o.get("finishes")}
    compared = 0
    for o in cheap["options"]:
        if o.get("finishes") and (o["offering"], o["num_gpus"]) in a:  # rows without a catalog price are new here
            ref = a[(o["offering"], o["num_gpus"])]
            assert o["usd"] == pytest.approx(ref["usd"] / ref["usd_per_gpu_hour"])
            compared += 1
    assert compared >= 4  # dgx-h100-reserved (the undominated priced H100 offering) at 8, 16, 32, 64 GPUs


@pytest.mark.parametrize("name", ["front.svg", "front.html"])
def test_plot_is_a_valid_picture(tmp_path, capsys, name):
    assert main(["size", *SMALL, "--deadline-days", "30", "--budget-usd", "1e6", "--plot", str(tmp_path / name)]) == 0
    capsys.readouterr()
    text = (tmp_path / name).read_text()
    svg = text[text.index("<svg"):text.index("</svg>") + 6]
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    groups = [g.get("id", "") for g in root.iter("{http://www.w3.org/2000/svg}g")]
    assert len([g for g in groups if g.startswith("series-")]) >= 2  # GPU type + front
    if name.endswith(".html"):
        assert text.startswith("<!DOCTYPE html>")


def test_size_what_if_price_equals_a_prices_file(tmp_path, capsys):
    (tmp_path / "p.yaml").write_text("h100-sxm-80gb: 1.5\n")
    via_file = run_json(capsys, *SMALL, "--prices", str(tmp_path / "p.yaml"))
    via_what_if = run_json(capsys, *SMALL, "--what-if", "price.h100-sxm-80gb=1.5")
    assert [o.get("usd") for o in via_file["options"]] == [o.get("usd") for o in via_what_if["options"]]
    for o in via_what_if["options"]:  # the catalog's kind, date and source describe another price
        assert (o["price_kind"], o["price_date"], o["price_source"].split(":")[0]) == (None, None, "given")


def test_size_what_if_grid_reports_stability(capsys):
    d = run_json(capsys, *SMALL, "--deadline-days", "30", "--what-if-grid", "network=0.5,1.0")
    assert [r["assumption"] for r in d["stability"]] == ["network=0.5", "network=1"]
    assert d["stability"][1]["cheapest_stays"]  # the baseline's own assumption keeps its choice


def test_dominated_offerings_are_not_sized():
    # aws-p4de (8 x A100 80GB, 50 Gb/s per GPU) costs more than dgx-a100 (same GPUs, 200 Gb/s per GPU):
    # never faster, never cheaper, so it cannot be on the front or chosen.
    table = {k: v for k, v in catalogs.cluster_catalog().items() if k in ("dgx-a100", "aws-p4de-24xlarge")}
    offs, _ = sizing.priced_offerings(table, catalogs.gpu_catalog(), None)
    keep, notes = sizing.undominated(offs)
    assert [o.name for o in keep] == ["dgx-a100"]
    assert "aws-p4de-24xlarge: not sized" in notes[0]
    # a faster network at a higher price is not dominated
    table = {k: v for k, v in catalogs.cluster_catalog().items() if k in ("dgx-a100", "aws-p4d-24xlarge")}
    offs, _ = sizing.priced_offerings(table, catalogs.gpu_catalog(), None)
    assert len(sizing.undominated(offs)[0]) == 2  # different GPUs (40 vs 80 GB)


def test_each_option_estimate_totals_the_sized_tokens(capsys):
    # --tokens 1e11 at 64 sequences of 4,096 tokens: ceil(1e11 / 262,144) = 381,470 steps. Each option's
    # embedded estimate totals those tokens, not the model's training_tokens (Llama 2's 2T).
    d = run_json(capsys, *SMALL)
    feasible = [o for o in d["options"] if o.get("finishes")]
    assert feasible
    for o in feasible:
        assert o["steps"] == 381_470
        assert o["estimate"]["training"]["training_tokens"] == 1e11
        assert o["estimate"]["training"]["steps"] == 381_470


def test_deadline_advice_does_not_ask_for_more_gpus_than_were_sized():
    from dataclasses import replace

    from planner.sizing.run import SizeRequest, impossible_lines

    # One offering sized at 8 and 16 GPUs: 16 GPUs take 10 days, 8 take 12 (scaling flattens). A 5-day
    # deadline would need 16 x 10 / 5 = 32 GPUs if scaling held.
    a = fake_option(12.0, 1e5, 0)
    a = replace(a, num_gpus=8)
    b = replace(a, num_gpus=16, step_seconds_total=10.0 * sizing.DAY,
                wall=replace(a.wall, total_seconds=10.0 * sizing.DAY))
    over = impossible_lines([a, b], SizeRequest("m", deadline_days=5.0, max_gpus=16))
    assert "about 32 GPUs if scaling held (raise --max-gpus)" in over[0]
    within = impossible_lines([a, b], SizeRequest("m", deadline_days=5.0, max_gpus=64))
    assert "--max-gpus" not in within[0] and "sized up to 16" in within[0]
    # 16 GPUs at 100 days against a 1e-3-day deadline (the shortest planner takes): 16 x 100 / 1e-3 = 1.6 million
    # GPUs, over the 1,048,576 planner sizes
    slow = replace(b, step_seconds_total=100.0 * sizing.DAY, wall=replace(b.wall, total_seconds=100.0 * sizing.DAY))
    beyond = impossible_lines([slow], SizeRequest("m", deadline_days=1e-3, max_gpus=16))
    assert "more than the 1,048,576 GPUs planner sizes" in beyond[0] and "--max-gpus" not in beyond[0]


def test_front_under_a_deadline_holds_only_options_that_meet_it(capsys):
    # Llama 2 7B, 1e11 tokens on H100s: 32 GPUs take about 2.9 days, 64 about 1.5. With a 2-day deadline the
    # counts whose step floor alone misses it are not searched (and named), so a front over every option
    # sized would show 32 GPUs as "cheaper" while cheaper counts were never looked at.
    d = run_json(capsys, *SMALL, "--deadline-days", "2")
    assert d["pareto"] and all(o["days"] <= 2 for o in d["pareto"])
    assert any("not searched; even at its step floor" in n and "more than 2 days" in n for n in d["notes"])


def test_why_other_gpus_lose_is_in_the_json_too(capsys):
    # H100 at $1.80 (reserved) against B200 at $5.25: the B200's best option loses on price.
    argv = ["size", "llama2-7b", "--tokens", "1e11", "--gbs", "64", "--gpu-types", "h100-sxm-80gb,b200-sxm-180gb",
            "--max-gpus", "64", "--workers", "1"]
    d = run_json(capsys, *argv[1:])
    assert d["cheapest"]["gpu"] == "h100-sxm-80gb"
    (other,) = d["other_gpus"]
    assert other["gpu"] == "b200-sxm-180gb" and other["why"].startswith("price: $5.25 vs $1.80 per GPU-hour")
    assert main(argv) == 0
    text = capsys.readouterr().out
    for o in d["other_gpus"]:
        assert f"  {o['gpu']} ({o['offering']}, {o['num_gpus']} GPUs" in text and o["why"] in text


def test_a_deadline_and_a_budget_each_met_but_not_together_are_said():
    """Option A: 20 days for $900k; option B: 40 days for $700k. A 30-day deadline is met (A) and an $800k
    budget is met (B), but no option meets both: the command chose nothing and said nothing; now a note
    names the cheapest within the deadline ($100,000 over) and the fastest sized within the budget (10 days
    late)."""
    from planner.sizing.run import SizeRequest, impossible_lines

    a, b = fake_option(20.0, 9e5, 0), fake_option(40.0, 7e5, 1)
    assert sizing.choose([a, b], "usd", 30.0, 8e5) is None
    (line,) = impossible_lines([a, b], SizeRequest("m", deadline_days=30.0, budget_usd=8e5))
    assert "no option within 30 days fits $800,000: the cheapest within 30 days is c0 with 1 GPUs, $900,000" in line
    assert "the budget would need $100,000 more, or buys about 88.89% of the tokens" in line  # 8e5 / 9e5
    assert "within the budget the fastest sized is c1 with 1 GPUs, 40.0 days (10.0 days late)" in line
    assert impossible_lines([a, b], SizeRequest("m", deadline_days=30.0, budget_usd=9e5)) == []


def test_a_budget_is_judged_among_the_options_that_meet_the_deadline():
    """An audit's case: llama3-70b, 2e12 tokens, a 10-day deadline and $880,000. The scan does not size counts
    that cannot meet the deadline (256 reserved H100s at $814,491 take 73.6 days), so of what it sized the
    cheapest was GB200 x 1024, $903,149, and the note said "no option fits $880,000" though 256 H100s do: the
    budget can only be missed by the options that meet the deadline."""
    from planner.sizing.run import SizeRequest, impossible_lines

    in_time, over = fake_option(8.1, 903_149, 0), fake_option(9.5, 1_200_000, 1)
    (line,) = impossible_lines([in_time, over], SizeRequest("m", deadline_days=10.0, budget_usd=880_000))
    assert line.startswith("no option within 10 days fits $880,000: the cheapest within 10 days is c0")
    assert "would need $23,149 more" in line and "fastest sized" not in line  # nothing sized is within budget


def test_a_run_that_never_finishes_is_not_called_a_model_that_does_not_fit(capsys):
    """GPT-3 175B needs 64 H100s or more: with 100 failures per 1000 GPU-days that is 6.4 a day, each losing
    a day to restart, so runtime.run_wall_clock never finishes. The plans fit, so the error must name the
    failure rates, not "try more GPUs" (more GPUs fail more often)."""
    code = main(["size", "gpt3-175b", "--tokens", "1e12", "--gpu-types", "h100-sxm-80gb", "--max-gpus", "256",
                 "--failures-per-1000-gpu-days", "100", "--restart-minutes", "1440"])
    err = capsys.readouterr().err
    assert code == 2 and "the run never finishes" in err and "try more GPUs" not in err


def test_times_to_train_under_a_day_are_not_zero_days():
    """A run of 0.005 days (7.2 minutes) printed as "0.0 days" in the table and the choices (an audit): days
    from one day, hours from one hour, minutes below."""
    from planner.sizing.scan import duration_text

    assert duration_text(1.44) == "1.4 days"
    assert duration_text(0.5) == "12.0 hours"
    assert duration_text(0.005) == "7 minutes"
    assert duration_text(float("inf")) == "inf days"
    assert duration_text(0.9999) == "1.0 days" and duration_text(0.9999 / 24) == "1.0 hours"  # never "24.0 hours"


def test_over_budget_note_names_what_meets_the_deadline():
    """An audit's case (DeepSeek-V3 on GB200, 5-day deadline, $200,000): the cheapest option, 512 GPUs at $363,509,
    takes 6.5 days; the only one within the deadline, 1024 GPUs at $368,443 (3.3 days), is what the budget must
    reach: $368,443 - $200,000 = $168,443 more, and $200,000 / $368,443 = 54.28% of the tokens."""
    from planner.sizing.run import over_budget_line

    slow, fast = fake_option(6.5, 363_509, 0), fake_option(3.3, 368_443, 1)
    line = over_budget_line([slow, fast], [fast], 5.0, 200_000)
    assert "the cheapest within 5 days is c1 with 1 GPUs, $368,443 (3.3 days)" in line
    assert line.endswith("the budget would need $168,443 more, or buys about 54.28% of the tokens")
    plain = over_budget_line([slow, fast], [slow, fast], None, 200_000)  # no deadline: the cheapest is the one
    assert "within" not in plain and "would need $163,509 more, or buys about 55.02%" in plain


def test_a_type_that_loses_on_price_and_speed_says_both():
    """The audit's B200 against GB200: $5.25 vs $4.54 an hour (1.16x) and 6.257 s against 5.446 s a step on 256 GPUs
    each, 6.257 / 5.446 = 1.15x fewer tokens/s per GPU: it is not faster per GPU, as "outweighs its speed" said."""
    from types import SimpleNamespace as NS

    def option(price, step):
        est = NS(tokens_per_second=2048 * 4096 / step)
        return NS(offering=NS(usd_per_gpu_hour=price), num_gpus=256, best=NS(est=est), days=1.0)

    why = sizing.why_loses(option(5.25, 6.257), option(4.54, 5.446), None)
    assert why == "price: $5.25 vs $4.54 per GPU-hour (1.16x) and 1.15x fewer tokens/s per GPU"
    faster = sizing.why_loses(option(5.25, 5.0), option(2.0, 5.446), None)  # 2.62x the price, 1.09x the speed
    assert faster.endswith("(2.62x) outweighs its 1.09x the tokens/s per GPU")


def test_a_run_longer_than_any_deadline_is_said():
    """An audit's `--tokens 1e17`: the fastest option took about 10,000 years and was printed as a plan. A
    deadline may be at most 36,500 days (limits.MAX_DAYS); past that the note says so, once."""
    from planner.sizing.run import beyond_any_deadline

    assert beyond_any_deadline([fake_option(36_500.0, 1e9, 0)]) == []
    (note,) = beyond_any_deadline([fake_option(3_652_500.0, 4e10, 0), fake_option(77_903.0, 8e10, 1)])
    assert "(c1 x 1) takes 213 years" in note  # 77,903 / 365.25


def test_the_table_names_the_virtual_pipeline_recompute_and_offload():
    """The audit's cheapest H100 plan had vpp 10 and the 512-GB200 one 40 layers offloaded; the table showed
    neither (tp4 pp4 dp64 z1), so what it listed was not the plan that was timed."""
    from costmodel import types as cm
    from planner.render.size import plan_text

    plan = cm.Plan(tp=4, pp=4, dp=64, vpp=10, zero_stage=1, micro_batch_size=1, global_batch_size=512)
    assert plan_text(plan) == "tp4 pp4 vpp10 dp64 z1"
    offloaded = cm.Plan(tp=2, pp=1, dp=256, zero_stage=2, recompute="full", offload_layers=40, micro_batch_size=1,
                        global_batch_size=512)
    assert plan_text(offloaded) == "tp2 pp1 dp256 z2 rc:full offl40"
