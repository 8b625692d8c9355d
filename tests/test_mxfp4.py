"""MXFP4 (costmodel/lowp.py): OCP microscaling FP4, E2M1 elements (half a byte) with one E8M0 byte of scale per 32,
as ROCm Transformer Engine's MXFP4BlockScaling trains it under AMD's Primus: every GEMM of a layer in FP4, each
tensor cast once from 16-bit into a rowwise and a columnwise copy, no extra pass for its in-kernel Hadamard. Which
GPUs run it, at what peak, and which frameworks planner emits for refuse it; every figure by hand."""
from __future__ import annotations

import pytest

from costmodel import lowp, rules
from costmodel import types as cm
from planner.commands.main import main
from planner.inputs import catalogs

TERA = 1e12


def test_bytes_by_hand():
    # an element 0.5 B + 1/32 B of scale = 0.53125; a cast reads 2 B and writes both copies: 2 + 2 x 0.53125
    assert lowp.quantized_bytes_per_element("mxfp4") == pytest.approx(0.53125)
    assert lowp.cast_bytes_per_element("mxfp4") == pytest.approx(3.0625)
    assert lowp.hadamard_bytes_per_element("mxfp4") == 0.0  # the transform runs inside the cast kernel
    assert lowp.weight_copy_bytes_per_param("mxfp4") == pytest.approx(1.0625)  # two cached copies of a weight
    assert lowp.te_layouts("mxfp4", "delayed", "cdna4") == 2 == lowp.te_layouts("mxfp4", "delayed", "blackwell")


def gpu(name: str) -> cm.Gpu:
    return catalogs.gpu_catalog()[name].to_gpu()


def test_which_tensor_cores_run_it():
    """The FP4 rate counts for MXFP4 on AMD CDNA4 (its FP4 peak is MXFP4's) and on Blackwell (tcgen05 .kind::mxf4);
    NVFP4 is NVIDIA's format: Blackwell only; Hopper has no FP4 at all."""
    assert rules.has_tensor_cores_for(gpu("mi355x-288gb"), "mxfp4")
    assert not rules.has_tensor_cores_for(gpu("mi355x-288gb"), "nvfp4")
    assert rules.has_tensor_cores_for(gpu("b200-sxm-180gb"), "mxfp4")
    assert rules.has_tensor_cores_for(gpu("b200-sxm-180gb"), "nvfp4")
    assert not rules.has_tensor_cores_for(gpu("h100-sxm-80gb"), "mxfp4")


def test_peak_is_the_fp4_rate():
    # catalogs/gpus.yaml: MI355X fp4 10,100 TFLOP/s dense (AMD's MXFP4 figure), B200 fp4 9,000
    assert gpu("mi355x-288gb").peak_flops_per_second("mxfp4") == pytest.approx(10100 * TERA)
    assert gpu("b200-sxm-180gb").peak_flops_per_second("mxfp4") == pytest.approx(9000 * TERA)


def test_estimate_on_mi355x_and_the_refusals(capsys):
    base = ["estimate", "llama3-8b", "amd-mi355x-platform", "--gpus", "8", "--tp", "1", "--pp", "1", "--mbs", "2",
            "--gbs", "32"]
    assert main(base + ["--precision", "mxfp4"]) == 0
    out = capsys.readouterr().out
    # Megatron-LM's --fp4-recipe takes nvfp4 or custom (tests/data/emit/megatron_options.json): no framework
    # planner emits for runs it, which the estimate says rather than failing
    assert "no framework planner emits for runs this plan" in out and "no mxfp4" in out
    assert main(base + ["--precision", "nvfp4"]) == 2
    assert "nvfp4 needs NVFP4 tensor cores, which mi355x-288gb does not have" in capsys.readouterr().err
    h100 = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "1", "--pp", "1", "--mbs", "2", "--gbs", "32"]
    assert main(h100 + ["--precision", "mxfp4"]) == 2
    assert "mxfp4 needs MXFP4 tensor cores" in capsys.readouterr().err
