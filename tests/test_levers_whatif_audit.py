"""What an audit of estimate's levers, what-ifs, compare and the GEMM-rate fallbacks (2026-12-06, the fifty-first
session) found: each answered right now, said, or refused in one line."""
import json

import pytest
from conftest import one_line_error
from test_compare import est

from costmodel import types as cm
from costmodel.compute import large_gemm_fraction
from planner.analysis.compare import compare
from planner.commands.main import main
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.specs import GpuSpec

QWEN_EP8 = ["estimate", "qwen3-30b-a3b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--tp", "1", "--pp", "1",
            "--mbs", "1", "--zero", "1", "--ep", "8"]


def estimate_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_full_recompute_is_a_lever_for_a_plan_that_does_not_fit(capsys):
    """Qwen3-30B-A3B on 8 H100 at ep 8 without recompute holds 93.6 GiB; the levers offered only selective
    variants (73 GiB, over the 72 GiB headroom) and said no lever fits, while full recompute fits."""
    out = estimate_json(capsys, QWEN_EP8)
    assert out["fits"] is False
    lever = next(x for x in out["diagnosis"]["levers"] if x["lever"] == "full recompute")
    assert lever["plan"]["recompute"] == "full"
    assert lever["memory_per_gpu_bytes"] <= 0.9 * out["memory_capacity_bytes"]
    # the plan the lever carries is the one it scored: estimated as it stands, the same step
    again = estimate_json(capsys, [*QWEN_EP8, "--recompute", "full"])
    assert again["step_time_s"] == pytest.approx(lever["step_time_s"], rel=1e-12)
    # from selective recompute of chosen modules too (the lever kept them, which full recompute refuses)
    out = estimate_json(capsys, [*QWEN_EP8, "--recompute", "selective", "--recompute-modules", "core_attn,moe_act"])
    assert out["fits"] is False and "full recompute" in [x["lever"] for x in out["diagnosis"]["levers"]]


def test_every_lever_carries_its_whole_plan(capsys):
    out = estimate_json(capsys, ["estimate", "examples/seed-20b.yaml", "dgx-a100", "--gpus", "64", "--zero", "3",
                                 "--grad-dtype", "fp32", "--no-overlap"])
    levers = out["diagnosis"]["levers"]
    assert levers and all(set(x["plan"]) == set(out["plan"]) for x in levers)
    overlap = next(x for x in levers if x["lever"].startswith("overlap DP"))
    assert overlap["plan"]["overlap_dp_comm"] is True and out["plan"]["overlap_dp_comm"] is False


def test_a_power_cap_below_what_a_gpu_accepts_is_refused(capsys):
    # H100 SXM: 700 W rated; NVIDIA's guide shows 200 of 1000 W the lowest cap, a fifth: 140 W here
    one_line_error(capsys, ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--what-if",
                            "power=139"], "power=139", "700 W")
    assert main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--what-if", "power=140"]) == 0


@pytest.mark.parametrize("assumption", ["power=1000", "network=0.5", "rdma=true"])
def test_a_what_if_that_moves_nothing_says_so(capsys, assumption):
    # one DGX H100 node: the network carries nothing; a cap above the 700 W rating slows nothing; RDMA it has
    out = estimate_json(capsys, ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--what-if",
                                 assumption])
    assert any("no figure of this plan changes" in w for w in out["warnings"])


def test_a_what_if_that_moves_something_says_nothing_of_the_kind(capsys):
    out = estimate_json(capsys, ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--what-if",
                                 "nvlink=0.5"])
    assert not any("no figure of this plan changes" in w for w in out["warnings"])


def test_compare_calls_plans_within_one_percent_equal():
    # 10.00 s against 10.05 s: 0.5% apart, under the 1% a lever must save to be shown
    close = compare(est(step=10.0), est(step=10.05))
    assert close["faster"] == "A" and "A and B differ by 0.5% in step time, under 1%" in close["warnings"][0]
    tiny = compare(est(step=10.0), est(step=10.0003))  # 0.003%: not rounded to 0.00%
    assert "differ by 0.003% in step time" in tiny["warnings"][0]
    apart = compare(est(step=10.0), est(step=10.2))  # 2% apart
    assert not any("read the two as equal" in w for w in apart["warnings"])


def test_fp8_gemms_of_a_part_no_low_precision_measurement_covers_take_its_bf16_share():
    # MI355X: 1565 of 2500 TFLOP/s measured in bf16 (stas00 MAMF table), nothing in fp8 for any CDNA part
    mi355x = resolve_gpu("mi355x-288gb").to_gpu()
    eff = cm.Efficiency()
    assert large_gemm_fraction(mi355x, "bf16", eff) == pytest.approx(1565 / 2500)
    assert large_gemm_fraction(mi355x, "mxfp4", eff) == pytest.approx(1565 / 2500)
    # MI350X has no measurement: its generation's one measured part's share, in bf16 and below
    mi350x = resolve_gpu("mi350x-288gb").to_gpu()
    assert large_gemm_fraction(mi350x, "bf16", eff) == pytest.approx(0.626)
    assert large_gemm_fraction(mi350x, "fp8", eff) == pytest.approx(0.626)
    # H100 keeps its own fp8 measurement (1402.6 of 1979)
    h100 = resolve_gpu("h100-sxm-80gb").to_gpu()
    assert large_gemm_fraction(h100, "fp8", eff) == pytest.approx(1402.6 / 1979)


def test_a_cluster_files_power_cap_keeps_to_the_same_floor_as_the_what_if():
    spec = {"name": "x", "generation": "hopper", "memory_gib": 80, "dense_tflops": {"bf16": 989},
            "hbm_bandwidth_gbytes_per_s": 3350, "tdp_watts": 700}
    with pytest.raises(ValueError, match="power_limit_watts 10: below 140 W, 0.2 of x.s 700 W"):
        GpuSpec.model_validate({**spec, "power_limit_watts": 10})  # was priced 3.8x slower
    assert GpuSpec.model_validate({**spec, "power_limit_watts": 140}).power_limit_watts == 140


def test_a_gpu_of_a_generation_with_no_measured_part_needs_its_own_rate():
    spec = {"name": "x", "generation": "other", "memory_gib": 80, "dense_tflops": {"bf16": 500},
            "hbm_bandwidth_gbytes_per_s": 3000}
    with pytest.raises(ValueError, match="measured_matmul_bf16_tflops"):
        GpuSpec.model_validate(spec)
    gpu = GpuSpec.model_validate({**spec, "measured_matmul_bf16_tflops": 400}).to_gpu()
    assert large_gemm_fraction(gpu, "bf16", cm.Efficiency()) == pytest.approx(0.8)


def test_offloading_every_layer_of_a_stage_is_refused(capsys):
    # Qwen3-30B-A3B has 48 layers; --offload-layers 4096 was priced as 47 and answered
    one_line_error(capsys, [*QWEN_EP8, "--offload-layers", "4096"], "offload_layers (4096)", "below 48")
    one_line_error(capsys, [*QWEN_EP8, "--offload-layers", "48"], "offload_layers (48)")
    assert main([*QWEN_EP8, "--offload-layers", "47"]) == 0
    # each stage keeps one: Llama 3 8B split 4 + 28 over two stages offloads at most 3
    uneven = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "4", "--pp", "2", "--stage-layers", "4,28"]
    one_line_error(capsys, [*uneven, "--offload-layers", "4"], "offload_layers (4)", "below 4")
    assert main([*uneven, "--offload-layers", "3"]) == 0



def test_the_plan_line_names_the_exchange_settings_it_prices_at_ep_1(capsys):
    # the JSON kept DeepEP and the overlap at ep 1 and the cost model priced them; the text line hid them
    base = [*QWEN_EP8[:-2], "--gbs", "512", "--ep", "1"]
    assert main([*base, "--ep-dispatch", "deepep", "--ep-overlap"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("plan:"))
    assert "DeepEP/HybridEP dispatch" in line and "EP overlap" in line
    assert main(base) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("plan:"))
    assert "dispatch" not in line


def test_size_leaves_out_the_gpu_types_a_power_cap_is_below_the_floor_of(capsys):
    # 200 W: an A100 (400 W rated, floor 80 W) takes it, a B300 (1,100 W, floor 220 W) does not; one type
    # below its floor used to refuse the whole run
    argv = ["size", "llama3-8b", "--tokens", "1e9", "--gbs", "64", "--max-gpus", "8", "--what-if", "power=200",
            "--json", "--gpu-types"]
    assert main([*argv, "a100-sxm-80gb,b300-sxm-270gb"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("leaves out b300-sxm-270gb" in n for n in out["notes"])
    assert {o["gpu"] for o in out["options"]} == {"a100-sxm-80gb"}
    one_line_error(capsys, [*argv[:-1], "--gpu-types", "b300-sxm-270gb"], "no GPU type here takes it")


def test_a_plan_that_fits_above_the_headroom_keeps_the_levers_that_add_no_memory(capsys):
    """A second audit (2026-12-07): GPT-3 175B on 64 H100 at tp 8, pp 2, full recompute holds 74.1 GiB, 92.6% of
    the GPU: it fits, but every lever had to be under 90%, so none was shown, not even the TP overlap at the
    same 74.1 GiB and 1.19x."""
    out = estimate_json(capsys, ["estimate", "gpt3-175b", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "2",
                                 "--zero", "1", "--mbs", "1", "--gbs", "128", "--recompute", "full",
                                 "--sequence-parallel"])
    assert out["fits"] and out["memory_per_gpu_bytes"] > 0.9 * out["memory_capacity_bytes"]
    levers = out["diagnosis"]["levers"]
    overlap = next(x for x in levers if x["lever"] == "overlap TP collectives with the GEMMs")
    assert overlap["memory_per_gpu_bytes"] <= out["memory_per_gpu_bytes"]
    assert all(x["memory_per_gpu_bytes"] <= max(out["memory_per_gpu_bytes"], 0.9 * out["memory_capacity_bytes"])
               for x in levers)


def test_lever_labels_name_what_they_change(capsys):
    """Mixtral 8x22B with block recompute of 3 layers: "no recompute (every per chunk)" read as recomputing every
    layer, and the interleaving lever carried the recompute count as if it were its stages."""
    out = estimate_json(capsys, ["estimate", "mixtral-8x22b", "dgx-a100", "--seq-length", "4096", "--gpus", "128",
                                 "--tp", "2", "--pp", "8", "--ep", "8", "--zero", "1", "--mbs", "1", "--gbs", "512",
                                 "--recompute", "full", "--recompute-layers", "3", "--sequence-parallel"])
    names = [x["lever"] for x in out["diagnosis"]["levers"]]
    assert "no recompute" in names and not any("every" in n for n in names if "recompute" in n and "full" not in n)
    assert all(n == "2x interleaved pipeline stages (vpp 2)" for n in names if n.startswith("2x interleaved"))


def test_a_plan_that_does_not_fit_is_offered_a_higher_zero_stage(capsys):
    """Llama 3 70B on 64 B200 at tp 2 and ZeRO-1 needs 238 GiB of 180; ZeRO-3 fits (112.7 GiB) and is faster than
    the only lever offered, full recompute: no lever raised the ZeRO stage."""
    out = estimate_json(capsys, ["estimate", "llama3-70b", "dgx-b200", "--gpus", "64", "--tp", "2", "--pp", "1",
                                 "--zero", "1", "--mbs", "1", "--gbs", "512", "--recompute", "selective",
                                 "--sequence-parallel"])
    assert not out["fits"]
    higher = [x for x in out["diagnosis"]["levers"] if x["lever"].startswith("higher ZeRO stage")]
    assert higher and higher[0]["plan"]["zero_stage"] > 1
    assert higher[0]["memory_per_gpu_bytes"] <= 0.9 * out["memory_capacity_bytes"]


def test_less_context_parallelism_is_a_lever():
    """Only more CP was ever tried; at 131k tokens on 64 H100, cp 4 -> 2 gives the ranks back to data parallel."""
    from planner.analysis.diagnose import _other_cp

    m = cm.Model("m", 80, 8192, 64, 128256, 131072, num_kv_heads=8, ffn_hidden_size=28672, mlp="swiglu")
    p = cm.Plan(tp=8, cp=4, pp=1, dp=2, micro_batch_size=1, global_batch_size=64, cp_comm="a2a")
    fewer = {(q.cp, q.dp, q.cp_comm) for q in _other_cp(p, m) if q.cp < p.cp}
    assert fewer == {(2, 4, "a2a"), (1, 8, "p2p")}  # cp x dp stays 8; at cp 1 no exchange is left


def test_dollars_side_by_side_keep_two_digits_below_a_cent():
    """A 1.7B model's steps cost $0.0038 and $0.0076: the side-by-side table showed 0.00 and 0.01, +0.00."""
    from planner.render.estimate import usd_format

    assert usd_format(0.0038, 0.0076).format(0.0038) == "0.0038"
    assert usd_format(3.54, 4.68) == "{:.2f}"


def test_a_zero_communication_threshold_is_accepted(capsys):
    """--comm-threshold took (0, 1] where the diagnosis reads [0, 1]: 0 flags any exposed communication."""
    out = estimate_json(capsys, ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--tp", "8",
                                 "--comm-threshold", "0"])
    assert out["diagnosis"]["threshold"] == 0.0 and out["diagnosis"]["comm_bound"] is True


def test_what_if_names_are_matched_by_what_they_contain_and_errors_name_their_flag(capsys):
    """price.H100 suggested 'gb300, gb200' without naming --what-if; a grid's bad value was blamed on --what-if."""
    one_line_error(capsys, ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--what-if", "price.H100=2"],
                   "--what-if price.H100=2: unknown GPU 'H100'", "h100-sxm-80gb")
    one_line_error(capsys, ["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--what-if-grid",
                            "network=abc"], "--what-if-grid network=abc")
