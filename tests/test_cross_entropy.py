"""How the loss runs over the logits (cm.Plan.cross_entropy). Expected byte counts are the kernels of each
implementation counted by hand from its source, per element of a tokens x vocab/tp logits shard in 16 bits:

- vocab_parallel: Megatron's vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py,
  Megatron-LM v2.x mpu/cross_entropy.py), eager: upcast (read 2, write 4), max (read 4), subtract in place (read
  4, write 4), exp in place (4 + 4), sum (read 4), divide in place (4 + 4); backward the in-place scaling
  (4 + 4) and autograd's cast of the fp32 gradient to the 16-bit logits (read 4, write 2).
- vocab_parallel_fused: the same steps under jit_fuser = torch.compile (fusions/fused_cross_entropy.py): upcast
  with the max (2 + 4), subtract, exp and sum in one kernel (4 + 4), divide (4 + 4); backward scaling with the
  cast (read 4, write 2, the in-place write back 4).
- fused: Transformer Engine's parallel cross entropy (common/triton/cross_entropy.py, v2.1-v2.17): an online
  softmax pass (read 2), the pass that writes the gradient over its input (read 2, write 2); backward scales
  it in place (2 + 2).
- eager: F.cross_entropy(logits.float()): upcast (2 + 4), PyTorch's log_softmax over rows longer than its
  shared-memory kernels take (SoftMax.cu cunn_SoftMaxForward: max, sum and write passes, read 3 x 4, write 4);
  backward the NLL gradient zero-filled (4), cunn_SoftMaxBackward (read 4 + 4 + 4, write 4), the cast back
  (4 + 2).
"""
from __future__ import annotations

import json

import pytest

from costmodel import compute
from costmodel import types as cm
from costmodel.rules import plan_violations
from planner.commands.main import main
from planner.frameworks import REGISTRY
from planner.frameworks.base import knob_violations
from planner.inputs.catalogs import resolve_gpu
from planner.inputs.loading import load_cluster_spec
from planner.inputs.specs import PlanSpec


def test_bytes_per_logit_by_hand():
    assert compute.LOSS_BYTES_PER_LOGIT == {
        "vocab_parallel": (2 + 4) + 4 + (4 + 4) + (4 + 4) + 4 + (4 + 4) + (4 + 4) + (4 + 2),  # 52
        "vocab_parallel_fused": (2 + 4) + (4 + 4) + (4 + 4) + (4 + 2 + 4),  # 32
        "fused": 2 + (2 + 2) + (2 + 2),  # 10
        "eager": (2 + 4) + (3 * 4 + 4) + 4 + (3 * 4 + 4) + (4 + 2),  # 48
    }
    assert set(compute.LOSS_BYTES_PER_LOGIT) == set(cm.CROSS_ENTROPY)


def test_the_loss_time_apart_from_the_gemm_by_hand():
    """Nemotron-22B's last stage in NeMo 24.07's table (tp 2, micro-batch 2 of 4,096 tokens, vocab 256,000):
    8,192 x 128,000 logits per GPU; the unfused loss moves 52 - 32 = 20 B more per logit than the compiled one,
    at the H100's HBM rate times the fitted efficiency."""
    model = cm.Model("nemotron-22b", 40, 6144, 48, 256000, 4096, ffn_hidden_size=24576, mlp="gelu")
    gpu, eff = resolve_gpu("h100-sxm-80gb").to_gpu(), cm.Efficiency()
    per = {ce: compute.logits_seconds(model, 2, 2, gpu, "fp8", eff, ce) for ce in cm.CROSS_ENTROPY}
    rate = gpu.hbm_bandwidth_bytes_per_second * eff.hbm_efficiency
    assert per["vocab_parallel"] - per["vocab_parallel_fused"] == pytest.approx(20 * 8192 * 128000 / rate)
    assert per["eager"] - per["fused"] == pytest.approx(38 * 8192 * 128000 / rate)
    gemm = compute.gemm_seconds(8192, 128000, 6144, gpu, "bf16", eff)  # the output layer stays 16-bit
    assert per["fused"] == pytest.approx(3 * gemm + 10 * 8192 * 128000 / rate)


def test_an_unknown_loss_is_refused():
    plan = cm.Plan(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=8, cross_entropy="chunked")
    model = cm.Model("m", 4, 1024, 16, 32000, 2048)
    cluster = load_cluster_spec("dgx-h100").to_cluster(resolve_gpu("h100-sxm-80gb"), 8)
    broken = plan_violations(model, cluster, plan)
    assert any("cross entropy must be one of vocab_parallel_fused, vocab_parallel, fused, eager" in b for b in broken)


@pytest.mark.parametrize("framework, runs", [
    ("megatron", ("vocab_parallel_fused", "vocab_parallel")),
    ("torchtitan", ("fused", "eager")),
    ("deepspeed", cm.CROSS_ENTROPY),
])
def test_each_framework_runs_its_own_losses(framework, runs):
    """Megatron-LM: --cross-entropy-loss-fusion or not (arguments.py refuses Transformer Engine's, d98e8a64
    L1697-1702); torchtitan: its compiled loss or eager F.cross_entropy; DeepSpeed: the training script's, any
    (its search scores Megatron-DeepSpeed's eager vocab-parallel loss, gpt_model.py @070c64be). A plan scored with
    another loss is emitted with the framework's nearest and a README line saying how to re-score it, not refused
    (as the projections): knob_violations never names the loss."""
    from emit_support import job

    from planner.emit import render
    from planner.inputs.loading import load_model_spec

    fw = REGISTRY[framework]
    for ce in cm.CROSS_ENTROPY:
        plan = cm.Plan(tp=1, pp=1, dp=8, micro_batch_size=1, global_batch_size=8, cross_entropy=ce)
        assert not [v for v in knob_violations(fw, plan) if "cross entropy" in v or "loss" in v]
        assert (ce in runs) == (ce in fw.knobs_for(plan).cross_entropy.values)
        readme = render(job(load_model_spec("llama3-8b"), dp=8, zero_stage=3, global_batch_size=8, cross_entropy=ce,
                            projections="fused_qkv" if framework == "torchtitan" else None), framework)["README.txt"][0]
        assert ("--cross-entropy " in readme) == (ce not in runs), (framework, ce)


@pytest.mark.parametrize("framework, loss", [("megatron", "vocab_parallel_fused"), ("torchtitan", "fused"),
                                             ("deepspeed", "vocab_parallel")])
def test_the_search_scores_each_frameworks_fastest_loss(capsys, framework, loss):
    rc = main(["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "32", "--framework", framework,
               "--top", "3", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    plans = [p["plan"] for p in json.loads(out)["plans"]]
    assert plans and {p["cross_entropy"] for p in plans} == {loss}


def test_a_plan_written_before_schema_25_reads_its_loss():
    """fused_cross_entropy: false (the eager loss) becomes cross_entropy eager; true, the default."""
    base = dict(tp=1, pp=1, dp=8)
    assert PlanSpec(**base, fused_cross_entropy=False).cross_entropy == "eager"
    assert PlanSpec(**base, fused_cross_entropy=True).cross_entropy == "vocab_parallel_fused"
    assert PlanSpec(**base).cross_entropy == "vocab_parallel_fused"
    with pytest.raises(ValueError, match="fused_cross_entropy: expected true or false"):
        PlanSpec(**base, fused_cross_entropy="yes")


def test_the_flag_reaches_the_plan_and_a_bad_value_is_one_line(capsys):
    args = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--json"]
    rc = main([*args, "--cross-entropy", "vocab_parallel"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["plan"]["cross_entropy"] == "vocab_parallel"
    assert main([*args, "--cross-entropy", "chunked"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'chunked'" in err and len(err.strip().splitlines()) == 1
