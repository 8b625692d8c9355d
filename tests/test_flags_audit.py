"""Plans and flags a report-only audit (2026-12-07) found scored wrongly or taken silently.

- Megatron's --first-last-layers-bf16 counts the first and last layers of the whole stack, wherever the
  pipeline puts them: with every layer kept 16-bit the step is the 16-bit step at any pipeline depth.
- A --fix that a search flag rules out is refused, not overridden in silence; emit and size refuse flags
  that would change nothing they write or size."""
import json
from dataclasses import replace

import pytest

from costmodel.stage import sixteen_bit_indices
from costmodel.types import Plan
from planner.commands.main import main
from planner.inputs.loading import load_model_spec


def step_seconds(capsys, *flags):
    assert main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--tp", "2", "--json",
                 *flags]) == 0
    return json.loads(capsys.readouterr().out)["step_time_s"]


@pytest.mark.parametrize("pp", [1, 4])
def test_every_layer_kept_16_bit_is_the_16_bit_step_at_any_depth(capsys, pp):
    """32 of Llama 3 8B's 32 layers kept bf16 under fp8, however split between the start and the end: the
    same step at pp 1 and at pp 4, where the first rank holds layers 0-7 and the last 24-31."""
    steps = {split: step_seconds(capsys, "--pp", str(pp), "--precision", "fp8", "--bf16-layers", split)
             for split in ("32,0", "16,16", "0,32")}
    assert steps["32,0"] == pytest.approx(steps["16,16"], rel=1e-9) == pytest.approx(steps["0,32"], rel=1e-9)
    fp8 = step_seconds(capsys, "--pp", str(pp), "--precision", "fp8")
    assert steps["32,0"] > fp8 * 1.1


def test_sixteen_bit_layers_of_each_rank_by_hand():
    """Llama 3 8B (32 layers) on pp 4 x vpp 2: chunks of 4, chunk j*4 + r on rank r, so rank 0 holds
    layers 0-3 and 16-19, rank 3 layers 12-15 and 28-31. The first 6 and last 6 layers kept 16-bit:
    rank 0 keeps 0-3 (4) from the start, rank 1 keeps 4-5 (2); rank 3 keeps 28-31 (4) from the end,
    rank 2 keeps 26-27 (2)."""
    model = load_model_spec("llama3-8b").to_model()
    plan = Plan(tp=1, pp=4, vpp=2, dp=2, precision="fp8", bf16_layers_start=6, bf16_layers_end=6)
    assert [sixteen_bit_indices(model, plan, r) for r in range(4)] == [(0, 1, 2, 3), (4, 5), (26, 27), (28, 29, 30, 31)]


@pytest.mark.parametrize("flags, needle", [
    (["--precision", "bf16", "--fix", "precision=fp8"], "--fix precision=fp8 contradicts --precision bf16"),
    (["--grad-dtype", "fp32", "--fix", "grad_dtype=bf16"], "--fix grad_dtype=bf16 contradicts --grad-dtype fp32"),
    (["--no-flash-attention", "--fix", "attention_kernel=flash2"], "--no-flash-attention runs attention unfused"),
    (["--block-recompute", "--fix", "recompute=none"], "leaves it nothing to search"),
])
def test_a_fix_a_search_flag_rules_out_is_refused(capsys, flags, needle):
    assert main(["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", *flags]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_a_fix_within_the_flags_is_taken(capsys):
    assert main(["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--top", "1", "--json",
                 "--precision", "bf16,fp8", "--fix", "precision=fp8"]) == 0
    assert json.loads(capsys.readouterr().out)["plans"][0]["plan"]["precision"] == "fp8"


def test_estimate_refuses_a_kernel_for_unfused_attention(capsys):
    assert main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--no-flash-attention",
                 "--attention-kernel", "flash2"]) == 2
    assert "--no-flash-attention runs attention unfused" in capsys.readouterr().err


@pytest.mark.parametrize("flags, needle", [
    (["--format", "megatron", "--nvme-path", "/x"], "are DeepSpeed settings"),
    (["--format", "deepspeed", "--nvme-path", "/x"], "nothing offloads to nvme"),
    (["--format", "megatron", "--gpus-per-node", "16"], "scored on nodes of 8 GPUs"),
])
def test_emit_refuses_flags_that_would_change_nothing_or_another_machine(capsys, tmp_path, flags, needle):
    assert main(["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--zero", "3", "--json"]) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    assert main(["emit", str(plan), "--out", str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_size_refuses_a_price_for_a_gpu_it_does_not_size(capsys):
    assert main(["size", "llama3-8b", "--gbs", "64", "--gpu-types", "h100-sxm-80gb", "--tokens", "1e12",
                 "--what-if", "price.a100-sxm-80gb=2"]) == 2
    assert "the sizing has no a100-sxm-80gb" in capsys.readouterr().err


def test_unequal_interleaved_chunks_are_warned_of():
    """(total - slowest) / v is the bubble of equal chunks; stage_layers 16, 0, 0, 16 at pp 2 x vpp 2 is a plain
    two-stage pipeline (the event simulation of Megatron's order in tests/test_pipeline_fill_hops.py waits 4x the
    formula's bubble), so the estimate says it prices them as equal. Equal chunks and the default split are not
    warned of."""
    from costmodel import pipeline
    from costmodel.step import warnings_for
    from planner.inputs.loading import build_cluster, load_cluster_spec

    cluster = build_cluster(load_cluster_spec("dgx-h100"), 8)
    uneven = Plan(tp=2, pp=2, vpp=2, dp=2, stage_layers=(16, 0, 0, 16))
    assert pipeline.uneven_chunks(uneven) == (0, (16, 0))
    assert any("chunks hold 16, 0 layers" in w for w in warnings_for(cluster, uneven))
    for plan in (Plan(tp=2, pp=2, vpp=2, dp=2, stage_layers=(8, 8, 8, 8)), Plan(tp=2, pp=2, vpp=2, dp=2),
                 Plan(tp=2, pp=2, vpp=1, dp=2, stage_layers=(30, 2))):
        assert pipeline.uneven_chunks(plan) is None


def test_search_tables_group_ranks_by_the_16_bit_layers_they_keep():
    """The search times one rank per (layer mix, first, last) class; the first 6 of Llama 3 8B's 32 layers kept
    16-bit on pp 8 (4 layers a rank) fall on ranks 0 and 1, so rank 1 is no longer its middle class: the classes'
    stage times are step.stage_costs' rank by rank."""
    from costmodel import step
    from costmodel.types import Efficiency
    from planner.inputs.loading import build_cluster, load_cluster_spec
    from planner.search.tables import class_stage_costs

    model = load_model_spec("llama3-8b").to_model()
    cluster = build_cluster(load_cluster_spec("dgx-h100"), 8)
    plan = Plan(tp=1, pp=8, dp=1, precision="fp8", bf16_layers_start=6, micro_batch_size=1, global_batch_size=8)
    each = [s.compute_seconds for s in step.stage_costs(model, cluster, plan, Efficiency())]
    assert [s.compute_seconds for s in class_stage_costs(model, cluster, plan, Efficiency())] == each
    assert each[0] > each[1] > each[2] == each[6]  # 4, 2 and 0 of their layers 16-bit


def test_a_tp_pair_on_an_xgmi_mesh_gets_one_peer_link():
    """MI300X boards are meshed point to point: 7 xGMI links of 64 GB/s per direction, 448 GB/s to all peers
    (AMD's datasheet: "64 GB/s peer-to-peer, 448 GB/s all-to-all"). A TP pair's all-reduce runs over the one link
    between them, so by hand: ring all-reduce over 2 ranks moves 2 x (2-1)/2 x S = S bytes at 0.8 x 64 GB/s (the
    NCCL-reachable share the model takes of every nominal link), plus 2 x (2-1) steps of latency. TP 8 uses all 7
    links: the aggregate, as before. An NVSwitch board (H100) gives any pair the whole rate."""
    from costmodel.stage import tp_allreduce_seconds
    from costmodel.types import Efficiency
    from planner.inputs.loading import build_cluster, load_cluster_spec

    eff = Efficiency()
    model = load_model_spec("llama3-70b").to_model()
    size = 1 * 8192 * 8192 * 2  # one micro-batch of 8,192 tokens x hidden 8,192, bf16
    mi300x = build_cluster(load_cluster_spec("azure-nd-mi300x-v5"), 64)
    pair = tp_allreduce_seconds(model, mi300x, Plan(tp=2, dp=32), eff)
    assert pair == pytest.approx(size / (0.8 * 64e9) + 2 * eff.nvlink_latency_seconds, rel=1e-9)
    eight = tp_allreduce_seconds(model, mi300x, Plan(tp=8, dp=8), eff)
    assert eight == pytest.approx(2 * 7 / 8 * size / (0.8 * 448e9) + 14 * eff.nvlink_latency_seconds, rel=1e-9)
    h100 = build_cluster(load_cluster_spec("dgx-h100"), 64)
    assert tp_allreduce_seconds(model, h100, Plan(tp=2, dp=32), eff) == pytest.approx(
        size / (0.8 * 450e9) + 2 * eff.nvlink_latency_seconds, rel=1e-9)


def test_nvme_parameter_offload_gets_a_swap_buffer_its_largest_partition_fits(capsys, tmp_path):
    """DeepSpeed swaps each ZeRO-3 parameter partition through one buffer of offload_param.buffer_size elements
    (default 1e8) and asserts it fits (partitioned_param_swapper.py get_buffer): Llama 3 70B's embedding on tp 1,
    dp 8 is 128,256 x 8,192 / 8 = 131,334,144 elements, so the buffer must be at least that (rounded up to a
    million: 132,000,000)."""
    assert main(["estimate", "llama3-70b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--zero", "3", "--json"]) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    out = tmp_path / "out"
    assert main(["emit", str(plan), "--out", str(out), "--format", "deepspeed", "--offload-optimizer", "nvme",
                 "--offload-param", "nvme", "--nvme-path", "/nvme"]) == 0
    config = json.loads((out / "deepspeed" / "ds_config.json").read_text())
    assert config["zero_optimization"]["offload_param"]["buffer_size"] == 132_000_000
    assert "buffer_size" not in config["zero_optimization"]["offload_optimizer"]


@pytest.mark.parametrize("fix, reason", [("sp=true", "sequence_parallel_size is Ulysses"),
                                         ("recompute=selective", "DeepSpeed has no selective variant")])
def test_a_fix_every_searched_framework_refuses_is_named_as_the_cause(capsys, fix, reason):
    """--framework deepspeed --fix sp=true failed citing the splits' CP and pipeline rules; the cause is the fixed
    value, which DeepSpeed's knobs refuse whatever the split (frameworks/deepspeed.py)."""
    assert main(["suggest", "llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "512", "--framework", "deepspeed",
                 "--fix", fix]) == 2
    err = capsys.readouterr().err
    assert "is refused by every framework searched (DeepSpeed: " in err and reason in err


def test_the_mesh_share_applies_to_measured_and_what_if_rates():
    """A calibrated MI300X cluster's NVLink figure is an 8-GPU bus bandwidth (all 7 links): a TP pair gets 1/7 of
    it, as of the nominal rate; a what-if scaling the fabric scales the pair's link too."""
    from dataclasses import replace as swap

    from costmodel import topology
    from costmodel.types import Efficiency
    from planner.analysis import whatif
    from planner.inputs.loading import build_cluster, load_cluster_spec

    eff = Efficiency()
    mi300x = build_cluster(load_cluster_spec("azure-nd-mi300x-v5"), 8)
    measured = swap(mi300x, nvlink_busbw_bytes_per_second=312.9e9)
    assert topology.nvlink_link(measured, eff, 2).bandwidth_bytes_per_second == pytest.approx(312.9e9 / 7)
    assert topology.nvlink_link(measured, eff, 8).bandwidth_bytes_per_second == pytest.approx(312.9e9)
    halved = whatif.apply_cluster(mi300x, whatif.parse(["nvlink=0.5"]))
    assert topology.nvlink_link(halved, eff, 2).bandwidth_bytes_per_second == pytest.approx(0.5 * 0.8 * 64e9)


def test_the_swap_buffer_holds_megatrons_padded_vocabulary_slice():
    """Megatron-DeepSpeed pads Llama 3's 128,256-token vocabulary to a multiple of 128 x tp (tp 8: 129,024 rows), so
    405B's embedding slice on tp 8 over dp 2 is 129,024 x 16,384 / 16 = 132,120,576 elements; DeepSpeed swaps only
    what is under buffer_size, so the buffer is one more, rounded up to a million: 133,000,000."""
    from emit_support import job

    from planner.emit.deepspeed import param_swap_buffer

    model = load_model_spec("llama3-405b")
    assert param_swap_buffer(job(model, tp=8, pp=1, dp=2, zero_stage=3)) == 133_000_000


def test_emitted_readme_repeats_the_plans_published_run_cautions(capsys, tmp_path):
    """GPT-3 175B's best plan on 1,024 A100 is above every published A100 bf16 dense run's MFU (61.7%) and uses TP
    overlap, which no published A100 run did: suggest prints both, and the README.txt of its launch files says so."""
    out = tmp_path / "launch"
    assert main(["suggest", "gpt3-175b", "dgx-a100", "--gpus", "1024", "--top", "1", "--emit", "megatron", "--out",
                 str(out)]) == 0
    readme = (out / "README.txt").read_text()
    assert "is above every published dense run on a100-sxm-80gb" in readme
    assert "tp_comm_overlap" in readme.split("settings no published run")[1]


def test_layers_kept_16_bit_hold_16_bit_weights_and_inputs():
    """A memory audit (2026-12-07): --bf16-layers changed the step, not the memory. Megatron builds those layers
    outside the low-precision contexts (fp8_utils.py get_fp8_context / fp8_model_init: nullcontext), so they keep
    no quantized weight copies and save their GEMM inputs in 16 bits. An 8-layer model (h 1024, f 4096, RMSNorm,
    no biases: 4 h^2 + 2 h f + 2 h = 12,584,960 parameters a layer) on one B200, NVFP4, 2 first and 1 last layer
    kept bf16: the weights lose 3 x 12,584,960 x 1.125 B (two NVFP4 layouts of 0.5 + 1/16 B), and with NVFP4
    parameters (no 16-bit copy, 1.125 B) gain 3 x 12,584,960 x 0.875 B; each of the 3 layers keeps for backward
    what a layer of the bf16 plan keeps."""
    from costmodel import step
    from costmodel.types import Efficiency, Model
    from planner.inputs.loading import build_cluster, load_cluster_spec

    model = Model("m", 8, 1024, 16, 32000, 2048, ffn_hidden_size=4096, mlp="gelu", normalization="rmsnorm",
                  linear_bias=False)
    cluster = build_cluster(load_cluster_spec("dgx-b200"), 1)
    plan = Plan(tp=1, pp=1, dp=1, micro_batch_size=1, global_batch_size=1, precision="nvfp4")

    def mem(p):
        return step.estimate(model, cluster, p, Efficiency()).memory_breakdown_bytes

    low, kept, wide = mem(plan), mem(replace(plan, bf16_layers_start=2, bf16_layers_end=1)), mem(
        replace(plan, precision="bf16"))
    layer = 4 * 1024**2 + 2 * 1024 * 4096 + 2 * 1024
    assert low["parameters"] - kept["parameters"] == pytest.approx(3 * layer * 1.125)
    gathered = replace(plan, lowp_param_gather=True)
    assert (mem(replace(gathered, bf16_layers_start=2, bf16_layers_end=1))["parameters"] - mem(gathered)["parameters"]
            == pytest.approx(3 * layer * 0.875))
    per_layer = (wide["activations"] - low["activations"]) / 8
    assert per_layer > 0 and kept["activations"] - low["activations"] == pytest.approx(3 * per_layer)


def test_each_layer_kept_16_bit_is_counted_at_its_own_kind():
    """A review (2026-12-07): the kept layers were all taken at layer 0's kind (or the last's), so Llama 4's
    alternating MoE layers kept 16-bit were priced as dense. A 4-layer model alternating dense and MoE layers (h 64,
    f 256, GELU, RMSNorm, no biases; 4 experts of width 128): a dense layer 4 h^2 + 2 h f + 2 h = 49,280
    parameters, a MoE one 4 h^2 + 4 h (router) + 4 x 2 x 64 x 128 + 2 h = 82,304. Under NVFP4 on a B200 each kept
    layer drops its two NVFP4 copies, 1.125 B a parameter."""
    from costmodel import step
    from costmodel.types import Efficiency, Model, Moe
    from planner.inputs.loading import build_cluster, load_cluster_spec

    model = Model("m", 4, 64, 4, 1000, 128, ffn_hidden_size=256, mlp="gelu", normalization="rmsnorm",
                  linear_bias=False, moe=Moe(num_experts=4, experts_per_token=2, ffn_hidden_size=128, layer_freq=2))
    cluster = build_cluster(load_cluster_spec("dgx-b200"), 1)
    plan = Plan(tp=1, pp=1, dp=1, micro_batch_size=1, global_batch_size=1, precision="nvfp4")

    def params(start):
        kept = replace(plan, bf16_layers_start=start)
        return step.estimate(model, cluster, kept, Efficiency()).memory_breakdown_bytes["parameters"]

    assert params(0) - params(1) == pytest.approx(49_280 * 1.125)
    assert params(1) - params(2) == pytest.approx(82_304 * 1.125)
