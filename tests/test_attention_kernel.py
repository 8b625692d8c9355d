"""Plan.attention_kernel: cuDNN's fused attention against a FlashAttention-2-class kernel.

Expected values are hand arithmetic on the published peaks (catalogs/gpus.yaml: H100 SXM 989 dense
bf16 TFLOP/s, A100 312) and the Efficiency fractions written in each test; the frameworks' rules are
the ones cited in planner/frameworks.
"""
from dataclasses import replace

import pytest

from costmodel import types as cm
from costmodel.compute import attention_core_seconds, flash_attention_fraction
from planner.frameworks import REGISTRY
from planner.inputs.loading import resolve_gpu
from planner.search.space import Knobs, undominated

# Llama 3 8B's attention: 32 heads of 128, one 8192-token sequence.
LLAMA_8B = cm.Model(name="llama3-8b", num_layers=32, hidden_size=4096, num_attention_heads=32, vocab_size=128256,
                    seq_length=8192, num_kv_heads=8, ffn_hidden_size=14336, mlp="swiglu")
EFF = replace(cm.Efficiency(), flash_attention_peak_fraction=0.2, flash_attention_peak_fraction_cudnn_hopper=0.6,
              flash2_over_cudnn_hopper=0.5, flash_attention_peak_fraction_ampere=0.5,
              flash_attention_peak_fraction_blackwell=0.4, flash_attention_half_seq=0.0)


def gpu(name: str) -> cm.Gpu:
    return resolve_gpu(name).to_gpu()


def test_the_fraction_depends_on_the_kernel_only_on_hopper():
    """On Hopper FlashAttention-2 runs at flash2_over_cudnn_hopper of cuDNN's fraction (0.5 x 0.6 here);
    a generation without its own fraction takes flash_attention_peak_fraction."""
    assert flash_attention_fraction(8192, EFF, "hopper", "cudnn") == 0.6
    assert flash_attention_fraction(8192, EFF, "hopper", "flash2") == pytest.approx(0.3)
    for generation, expected in (("ampere", 0.5), ("blackwell", 0.4), ("ada", 0.2)):
        assert flash_attention_fraction(8192, EFF, generation, "cudnn") == expected
        assert flash_attention_fraction(8192, EFF, generation, "flash2") == expected


def test_attention_seconds_by_hand():
    """Causal forward FLOPs: 2 x s x s/2 keys x (128 + 128) per head x 32 heads = 549.76 GFLOP; on an
    H100 at 0.6 of 989 TFLOP/s that is 0.9265 ms, at 0.5 x 0.6 twice as long; an A100 at 0.5 of 312
    TFLOP/s takes 3.524 ms with either kernel."""
    flops = 2 * 8192 * 4096 * 256 * 32
    assert flops == pytest.approx(549.76e9, rel=1e-4)
    h100, a100 = gpu("h100-sxm-80gb"), gpu("a100-sxm-80gb")
    cudnn = attention_core_seconds(LLAMA_8B, 1, 1, h100, "bf16", True, EFF, kernel="cudnn")
    flash2 = attention_core_seconds(LLAMA_8B, 1, 1, h100, "bf16", True, EFF, kernel="flash2")
    assert cudnn == pytest.approx(flops / (0.6 * 989e12), rel=1e-9)
    assert cudnn == pytest.approx(0.9265e-3, rel=1e-3)
    assert flash2 == pytest.approx(2 * cudnn, rel=1e-9)
    for kernel in ("cudnn", "flash2"):
        assert attention_core_seconds(LLAMA_8B, 1, 1, a100, "bf16", True, EFF, kernel=kernel) == \
            pytest.approx(flops / (0.5 * 312e12), rel=1e-9)


def test_cudnn_is_never_slower():
    """space.undominated drops a FlashAttention-2 combination when the cuDNN one is offered: that needs
    FlashAttention-2 at most cuDNN's rate on Hopper (pytorch#142132 measured 329.5 against 631.3
    TFLOP/s) and equal elsewhere."""
    eff = cm.Efficiency()
    assert eff.flash2_over_cudnn_hopper == pytest.approx(329.5 / 631.3) and eff.flash2_over_cudnn_hopper <= 1
    for generation in ("ampere", "hopper", "blackwell", "ada"):
        assert flash_attention_fraction(4096, eff, generation, "flash2") <= \
            flash_attention_fraction(4096, eff, generation, "cudnn")
    base = Knobs(1, "none", True, "bf16", "")
    assert undominated({base, replace(base, attn="flash2")}) == {base}
    assert undominated({replace(base, attn="flash2")}) == {replace(base, attn="flash2")}


def test_each_framework_names_its_kernel():
    """The search scores Megatron-LM with Transformer Engine's cuDNN attention (FlashAttention-2 on
    request, --attention-backend flash), torchtitan 0.3.0 with FlexAttention's Triton kernels, DeepSpeed
    with the model code's SDPA under ZeRO alone and Megatron-DeepSpeed's flash-attn 2 (FlashSelfAttention
    @f4157bea) where tensor or pipeline parallelism needs its model code."""
    assert REGISTRY["megatron"].knobs(True, True).attention_kernel.values == ("cudnn", "flash2")
    assert REGISTRY["torchtitan"].knobs(True, True).attention_kernel.values == ("flash2",)
    assert REGISTRY["deepspeed"].knobs(False, False).attention_kernel.values == ("cudnn",)
    assert REGISTRY["deepspeed"].knobs(True, False).attention_kernel.values == ("flash2",)
    assert REGISTRY["deepspeed"].knobs(False, True).attention_kernel.values == ("flash2",)


def test_megatron_writes_the_kernel_and_refuses_flash2_with_context_parallelism():
    from emit_support import job, tiny

    from planner.emit import render
    from planner.errors import PlannerError

    flash2 = render(job(tiny(), tp=2, attention_kernel="flash2"), "megatron")["megatron/launch.sh"][0]
    assert "--attention-backend flash" in flash2
    default = render(job(tiny(), tp=2), "megatron")["megatron/launch.sh"][0]
    assert "--attention-backend" not in default  # Transformer Engine's own choice: cuDNN's on Hopper
    with pytest.raises(PlannerError, match="context parallelism with cuDNN fused attention only"):
        render(job(tiny(), tp=2, cp=2, attention_kernel="flash2"), "megatron")


def test_search_scores_each_framework_with_its_kernel():
    """`suggest --framework torchtitan` plans carry flash2, Megatron-LM's cudnn; both together keep the
    two (neither framework runs the other's)."""
    from planner.inputs import loading
    from planner.search.space import SearchSpec
    from planner.search.suggest import Options, run

    model = loading.load_model_spec("llama3-8b").to_model()
    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 16)
    for frameworks, kernels in ((("torchtitan",), {"flash2"}), (("megatron",), {"cudnn"})):
        result = run(SearchSpec(model, cluster, 64, frameworks=frameworks), Options(top_k=3))
        assert {r.plan.attention_kernel for r in result.ranked} == kernels


def test_estimate_names_a_flash2_kernel(capsys):
    """The plan line says when the attention is FlashAttention-2-class (the default, cuDNN's, is not named)."""
    from planner.commands.main import main

    base = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--zero", "3"]
    assert main([*base, "--attention-kernel", "flash2"]) == 0
    assert "FlashAttention-2-class attention" in capsys.readouterr().out
    assert main(base) == 0
    assert "FlashAttention-2" not in capsys.readouterr().out


def test_emit_says_when_the_framework_runs_another_kernel():
    """torchtitan 0.3.0 runs FlexAttention whatever the plan says: a plan scored with cuDNN's attention gets
    a note in README.txt naming the kernel to re-score with; a flash2 plan does not."""
    from emit_support import job

    from planner.emit import render
    from planner.inputs.loading import load_model_spec

    def readme(kernel: str) -> str:
        plan = job(load_model_spec("llama3-8b"), tp=2, dp=4, zero_stage=3, sequence_parallel=True,
                   sp_gathered=True, attention_kernel=kernel)  # DTensor's SP, as torchtitan runs it
        return render(plan, "torchtitan")["README.txt"][0]

    assert "re-score with planner estimate ... --attention-kernel flash2" in readme("cudnn")
    assert "fused attention: cudnn" in readme("cudnn")
    assert "--attention-kernel" not in readme("flash2")


def test_flash3_runs_on_hopper_at_cudnns_rate():
    """FlashAttention-3 is Hopper's kernel: priced at cuDNN's fitted fraction there (its paper's forward benchmark
    puts it at 1.05-1.17x cuDNN's rate at 4k tokens, Shah et al. 2024 Fig. 5: the slower is taken), and refused on
    another generation, where PyTorch's varlen_attn runs FlashAttention-2 or -4."""
    from costmodel.rules import cluster_violations
    from planner.inputs import loading

    assert flash_attention_fraction(8192, EFF, "hopper", "flash3") == flash_attention_fraction(8192, EFF, "hopper",
                                                                                               "cudnn") == 0.6
    plan = cm.Plan(attention_kernel="flash3")
    for name, refused in (("dgx-h100", False), ("dgx-a100", True), ("dgx-b200", True)):
        cluster = loading.build_cluster(loading.load_cluster_spec(name), 8)
        assert bool(cluster_violations(cluster, plan)) == refused, name


@pytest.mark.parametrize("cluster, kernel", [("dgx-h100", "flash3"), ("dgx-b200", "flash2"), ("dgx-a100", "flash2")])
def test_torchtitan_gpt_oss_attends_with_varlen_attention(cluster, kernel):
    """torchtitan's gpt-oss runs VarlenAttention, which activates FlashAttention-3 on Hopper, -4 on Blackwell and
    leaves -2 elsewhere (models/common/attention.py, tools/utils.py get_cuda_flash_attention_impl, @4f9e9a47):
    its searched plans carry flash3 on H100, flash2 on B200 (every kernel priced alike there) and A100; its Llama 3
    keeps FlexAttention's flash2 on H100 too. A plan scored with cuDNN's attention is torchtitan's as scored there
    (FlashAttention-3 at cuDNN's rate): no note; one scored with flash2 gets a note naming flash3."""
    from emit_support import estimate

    from planner.emit import build_job, render
    from planner.frameworks.base import Machine
    from planner.inputs import loading
    from planner.search.space import SearchSpec
    from planner.search.suggest import Options, run

    spec = loading.load_model_spec("gpt-oss-120b")
    c = loading.build_cluster(loading.load_cluster_spec(cluster), 64)
    result = run(SearchSpec(spec.to_model(), c, 256, frameworks=("torchtitan",)), Options(top_k=2))
    assert {r.plan.attention_kernel for r in result.ranked} == {kernel}
    if cluster == "dgx-h100":
        titan, llama = REGISTRY["torchtitan"], loading.load_model_spec("llama3-8b").to_model()
        assert titan.attention_kernels(llama, Machine.of(c), titan.knobs(False, False)).values == ("flash2",)
        def readme(kernel: str) -> str:
            est = estimate(spec, dp=8, ep=8, zero_stage=3, global_batch_size=8, rope_fusion=True,
                           attention_kernel=kernel)
            return render(build_job(spec, {**est, "gpu": "h100-sxm-80gb"}), "torchtitan")["README.txt"][0]

        assert "--attention-kernel" not in readme("cudnn")
        assert "re-score with planner estimate ... --attention-kernel flash3" in readme("flash2")


def test_a_part_with_its_own_attention_benchmark_runs_at_its_measured_rate():
    """cuDNN's SDPA training benchmark (cudnn-frontend @ fb682ce7, bf16, causal, head dim 128, 8k; catalogs/
    gpus.yaml) measured 1574 / 1332 TFLOP/s forward / backward on GB200 and 1856 / 1435 on GB300, both of a
    2500 TFLOP/s bf16 peak. The fitted Blackwell fraction stands for GB200 (Efficiency.attention_reference_
    fraction), so a GB300 layer's attention takes 1574/1856 of GB200's forward and 1332/1435 of its backward;
    H100 keeps its generation's fraction (B300's derived rate: test_b300_attention_is_derived_from_gb300's).
    Exponentials are left out
    (exp_per_second 0) so that the matmul side alone sets the attention time, and both parts take the
    generation's GEMM fraction (GB300 has no MAMF measurement), so attention is all that differs."""
    from costmodel.compute import attention_rate_scale
    from costmodel.layer import layer_times

    eff = cm.Efficiency()
    gb200, gb300 = (replace(gpu(n), exp_per_second=0.0, matmul_fraction={}) for n in ("gb200", "gb300"))
    assert attention_rate_scale(gb300, eff) == pytest.approx((1856 / 1574, 1435 / 1332))
    assert attention_rate_scale(gb200, eff) == pytest.approx((1.0, 1.0))
    assert attention_rate_scale(gpu("h100-sxm-80gb"), eff) == (1, 1)
    core = attention_core_seconds(LLAMA_8B, 1, 1, gb200, "bf16", True, eff)
    assert core == attention_core_seconds(LLAMA_8B, 1, 1, gb300, "bf16", True, eff)  # same peak, same fraction
    t200, t300 = (layer_times(LLAMA_8B, 1, 1, False, True, g, "bf16", eff) for g in (gb200, gb300))
    assert t200.forward_seconds - t300.forward_seconds == pytest.approx(core * (1 - 1574 / 1856))
    assert t200.backward_seconds - t300.backward_seconds == pytest.approx(2.5 * core * (1 - 1332 / 1435))


def test_b300_attention_is_derived_from_gb300s():
    """B300 has no benchmark at the reference shape. cudnn-frontend's autoregressive-DiT SDPA benchmark (forward,
    no mask, head dim 128, 62,208 keys, cuDNN backend 93000) ran both Blackwell Ultra parts: bf16 1998 TFLOP/s
    on B300 and 2085 on GB300 at 8,192 queries. B300's rates = GB300's 1856 / 1435 x 1998/2085 = 1778.6 /
    1375.1 TFLOP/s, fractions of its 2250 peak 0.7905 / 0.6112; against GB200's reference (1574 / 1332 of
    2500) that is 1.2555x forward and 1.1471x backward; in absolute terms 0.958 of GB300's rate."""
    from costmodel.compute import attention_rate_scale

    ratio = 1998 / 2085
    assert (round(1856 * ratio, 1), round(1435 * ratio, 1)) == (1778.6, 1375.1)
    b300 = gpu("b300-sxm-270gb")
    assert b300.attention_fraction == pytest.approx((1778.6 / 2250, 1375.1 / 2250))
    scale = attention_rate_scale(b300, cm.Efficiency())
    assert scale == pytest.approx(((1778.6 / 2250) / (1574 / 2500), (1375.1 / 2250) / (1332 / 2500)))
    assert scale == pytest.approx((1.2555, 1.1471), abs=1e-4)


@pytest.mark.parametrize("kind", ["measured", "derived"])
def test_an_attention_rate_needs_both_passes(kind):
    from planner.inputs.specs import GpuSpec

    row = dict(name="x", generation="blackwell", memory_gib=80, dense_tflops={"bf16": 1000},
               hbm_bandwidth_gbytes_per_s=3000)
    with pytest.raises(ValueError, match="needs both forward and backward"):
        GpuSpec.model_validate({**row, f"{kind}_attention_bf16_tflops": {"forward": 500}})
    both = GpuSpec.model_validate({**row, f"{kind}_attention_bf16_tflops": {"forward": 500, "backward": 400}})
    assert both.to_gpu().attention_fraction == pytest.approx((0.5, 0.4))
    with pytest.raises(ValueError, match="derived_attention_bf16_tflops beside measured_attention_bf16_tflops"):
        GpuSpec.model_validate({**row, "measured_attention_bf16_tflops": {"forward": 500, "backward": 400},
                                "derived_attention_bf16_tflops": {"forward": 500, "backward": 400}})


def test_fp8_attention_runs_at_its_measured_speedup_not_the_fp8_peak():
    """Transformer Engine's FP8 attention is cuDNN's SDPA in FP8. NVIDIA's cudnn-frontend SDPA training
    benchmark (artifacts/sdpa_fp8_benchmark_results_NVIDIA_GB200.csv @ d48a60eb, causal, head dim 128,
    8,192 tokens) measured FP8 1894 / 1263 TFLOP/s forward / backward against bf16 1583 / 1211 in the same
    run: 1.197x and 1.043x, not the 2x of the FP8 peak. A GB200 layer's FP8 attention therefore takes
    1583/1894 of its bf16 forward and 1211/1263 of its bf16 backward (2.5x the forward's kernel time);
    exponentials are left out so that the kernel alone sets the time."""
    from costmodel.layer import layer_times

    eff = cm.Efficiency()
    gb200 = replace(gpu("gb200"), exp_per_second=0.0)
    core = attention_core_seconds(LLAMA_8B, 1, 1, gb200, "mxfp8", True, eff)
    assert core == attention_core_seconds(LLAMA_8B, 1, 1, gb200, "bf16", True, eff)  # the 16-bit kernel
    bf16, fp8 = (layer_times(LLAMA_8B, 1, 1, False, True, gb200, "mxfp8", eff, fp8_attention=f) for f in (False, True))
    assert bf16.forward_seconds - fp8.forward_seconds == pytest.approx(core * (1 - 1583 / 1894), rel=1e-3)
    assert bf16.backward_seconds - fp8.backward_seconds == pytest.approx(2.5 * core * (1 - 1211 / 1263), rel=1e-3)


def test_each_part_takes_its_own_fp8_attention_speedup_else_gb200s():
    """B200 (csv @ 0b1577c8: 1502.114 / 1384.231 forward, 1254.687 / 994.850 backward) and GB300 (2073.580 /
    1716.056, 1513.772 / 1150.498) have their own; so do H200 (results/h200_919_only_cudnn/llama3.1_20260227_
    034703.csv @ df73764, 8k causal: fp8 964 / 430 against bf16 644 / 541, its FP8 backward slower) and H100 SXM
    (the same GH100 die and clocks); B300 has none and takes GB200's."""
    from costmodel.compute import fp8_attention_speedup

    eff = cm.Efficiency()
    assert fp8_attention_speedup(gpu("b200-sxm-180gb"), eff) == pytest.approx((1502.114 / 1384.231, 1254.687 / 994.850),
                                                                                rel=1e-4)
    assert fp8_attention_speedup(gpu("gb300"), eff) == pytest.approx((2073.580 / 1716.056, 1513.772 / 1150.498),
                                                                      rel=1e-4)
    for name in ("h200-sxm-141gb", "h100-sxm-80gb"):
        assert fp8_attention_speedup(gpu(name), eff) == pytest.approx((964 / 644, 430 / 541), rel=1e-4)
    for name in ("gb200", "b300-sxm-270gb"):
        assert fp8_attention_speedup(gpu(name), eff) == pytest.approx((1894 / 1583, 1263 / 1211), rel=1e-4)


def test_an_fp8_attention_measurement_needs_both_passes():
    from planner.inputs.specs import GpuSpec

    row = dict(name="x", generation="blackwell", memory_gib=80, dense_tflops={"bf16": 1000},
               hbm_bandwidth_gbytes_per_s=3000)
    with pytest.raises(ValueError, match="needs both forward and backward"):
        GpuSpec.model_validate({**row, "measured_attention_fp8_over_bf16": {"forward": 1.2}})
    with pytest.raises(ValueError):
        GpuSpec.model_validate({**row, "measured_attention_fp8_over_bf16": {"forward": True, "backward": 1.1}})
    both = GpuSpec.model_validate({**row, "measured_attention_fp8_over_bf16": {"forward": 1.2, "backward": 1.1}})
    assert both.to_gpu().attention_fp8_speedup == (1.2, 1.1)


def test_kernels_priced_alike_is_what_the_fraction_gives():
    """frameworks.base.scored_otherwise says a framework runs a plan as scored where its kernel is priced alike
    (compute.attention_kernels_priced_alike): that must be exactly where flash_attention_fraction agrees, on
    every generation and pair of kernels; so a cuDNN plan of gpt-oss on H100 is torchtitan's as scored (its
    FlashAttention-3 at cuDNN's rate) and a cuDNN plan of Llama 3 is not (FlexAttention, FlashAttention-2-class)."""
    from costmodel.compute import attention_kernels_priced_alike
    from planner.frameworks.base import Machine, priced_otherwise
    from planner.inputs import loading

    for generation in ("ampere", "hopper", "blackwell", "ada"):
        for a in cm.ATTENTION_KERNELS:
            for b in cm.ATTENTION_KERNELS:
                same = flash_attention_fraction(8192, EFF, generation, a) == flash_attention_fraction(8192, EFF,
                                                                                                      generation, b)
                assert attention_kernels_priced_alike(a, b, generation) == same, (generation, a, b)
    machine = Machine.of(loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8))
    titan, plan = REGISTRY["torchtitan"], cm.Plan(attention_kernel="cudnn")
    gpt_oss = loading.load_model_spec("gpt-oss-120b").to_model()
    assert not any(x.startswith("attention kernel") for x in priced_otherwise(titan, gpt_oss, plan, machine))
    assert any(x.startswith("attention kernel") for x in priced_otherwise(titan, LLAMA_8B, plan, machine))


@pytest.mark.parametrize("argv, said", [
    (["dgx-h100", "--framework", "torchtitan", "--fix", "attn=flash2"],
     "--fix attention_kernel=flash2 is refused by every framework searched (torchtitan: torchtitan's gpt-oss "
     "attends with VarlenAttention, which runs FlashAttention-3 on Hopper"),
    (["dgx-a100", "--fix", "attn=flash3"], "--fix attention_kernel=flash3: FlashAttention-3's kernels are Hopper's"),
])
def test_a_fixed_kernel_nobody_runs_is_named(argv, said, capsys):
    """`suggest --fix attn=...` with a kernel the framework does not run for this model on this machine, or one the
    GPU does not run, says so in one line (it once blamed every split, or quoted FlexAttention for gpt-oss)."""
    from planner.commands.main import main

    assert main(["suggest", "gpt-oss-120b", *argv[:1], "--gpus", "64", "--gbs", "256", *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1


def test_estimate_names_a_flash3_kernel(capsys):
    from planner.commands.main import main

    assert main(["estimate", "gpt-oss-120b", "dgx-h100", "--gpus", "64", "--gbs", "256", "--ep", "8",
                 "--attention-kernel", "flash3"]) == 0
    assert "FlashAttention-3 attention" in capsys.readouterr().out
