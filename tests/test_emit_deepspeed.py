"""DeepSpeed emitter: ds_config.json contents, refusals, hostfile and launch.sh (no deepspeed needed;
test_emit_deepspeed_parser.py runs DeepSpeed's own parser on the same matrix)."""
import subprocess

import pytest
from emit_support import job, tiny

from planner.emit import EmitOptions, deepspeed
from planner.errors import PlannerError

# (tp, pp, dp): pure DP, tensor parallel, pipeline parallel (ZeRO <= 1 with pp, pipe/engine.py).
LAYOUTS = [(1, 1, 8), (2, 1, 4), (1, 2, 4)]
OFFLOADS = [EmitOptions(), EmitOptions(offload_optimizer="cpu"),
            EmitOptions(offload_optimizer="cpu", offload_param="cpu"),
            EmitOptions(offload_optimizer="nvme", offload_param="nvme", nvme_path="/local_nvme")]


def legal(zero, layout, opts, precision="fp16") -> bool:
    tp, pp, dp = layout
    if pp > 1 and zero >= 2:
        return False
    if pp > 1 and zero == 0 and precision == "bf16":  # runtime/engine.py: BF16_Optimizer shards like ZeRO-1
        return False
    if opts.offload_param != "none" and zero != 3:
        return False
    return not (opts.offload_optimizer != "none" and zero == 0)


MATRIX = [dict(zero=z, layout=lay, precision=pr, gas=gas, opts=o)
          for z in (0, 1, 2, 3) for lay in LAYOUTS for pr in ("bf16", "fp16") for gas in (1, 4) for o in OFFLOADS
          if legal(z, lay, o, pr)]


def matrix_job(case):
    tp, pp, dp = case["layout"]
    mbs = 2
    # DeepSpeed reduces gradients after the backward under a pipeline or without ZeRO (runtime/engine.py):
    # such plans are priced without DP overlap (frameworks/deepspeed.py exposed_gradient_reduction)
    overlap = pp == 1 and case["zero"] > 0
    return job(tiny(), case["opts"], tp=tp, pp=pp, dp=dp, zero_stage=case["zero"], precision=case["precision"],
               micro_batch_size=mbs, global_batch_size=mbs * dp * case["gas"], overlap_dp_comm=overlap)


def case_id(c):
    o = c["opts"]
    layout = "x".join(map(str, c["layout"]))
    return f"z{c['zero']}-{layout}-{c['precision']}-gas{c['gas']}-{o.offload_optimizer}-{o.offload_param}"


@pytest.mark.parametrize("case", MATRIX, ids=case_id)
def test_batch_identity_and_blocks(case):
    """train_batch_size == micro x gas x dp (runtime/config.py _batch_assertion), one precision block."""
    cfg = deepspeed.ds_config(matrix_job(case))
    dp = case["layout"][2]
    # The case's own numbers (micro-batch 2 per GPU, dp ranks, gas steps), not the emitter's arithmetic.
    assert (cfg["train_batch_size"], cfg["train_micro_batch_size_per_gpu"], cfg["gradient_accumulation_steps"]) == \
        (2 * dp * case["gas"], 2, case["gas"])
    assert (case["precision"] in cfg) and ({"bf16", "fp16"} - {case["precision"]}).isdisjoint(cfg)
    assert cfg[case["precision"]]["enabled"] is True
    if case["precision"] == "fp16":  # DeepSpeed config docs: loss_scale 0 = dynamic loss scaling from 2^16
        assert (cfg["fp16"]["loss_scale"], cfg["fp16"]["initial_scale_power"]) == (0, 16)
    assert cfg["communication_data_type"] == case["precision"]
    assert cfg["gradient_clipping"] == 1.0
    z = cfg["zero_optimization"]
    assert z["stage"] == case["zero"]
    opts = case["opts"]
    for key, device in (("offload_optimizer", opts.offload_optimizer), ("offload_param", opts.offload_param)):
        if device == "none":
            assert key not in z
        else:  # runtime/zero/offload_config.py: device cpu|nvme, nvme_path only for nvme
            want = {"device": device, "pin_memory": True, **({"nvme_path": "/local_nvme"} if device == "nvme" else {})}
            assert z[key] == want
    if case["zero"] in (1, 2):  # DeepSpeed's ZeRO-1/2 default buckets (runtime/zero/config.py): 5e8 elements
        assert (z["reduce_bucket_size"], z["allgather_bucket_size"]) == (500_000_000, 500_000_000)
    assert all(isinstance(v, int) for k, v in z.items() if k.endswith(("_size", "_threshold", "_parameters")))


def test_zero3_buckets_follow_hidden_size():
    """Hugging Face integration 'auto' values: h^2, 0.9 h^2, 10 h (h = 1024 here)."""
    z = deepspeed.ds_config(job(tiny(), zero_stage=3, dp=2, global_batch_size=2))["zero_optimization"]
    assert (z["reduce_bucket_size"], z["stage3_prefetch_bucket_size"], z["stage3_param_persistence_threshold"]) == \
        (1048576, 943718, 10240)


def test_gradient_allreduce_turns_reduce_scatter_off_for_zero12():
    """stage_1_and_2.py: reduce_scatter false averages gradients with an all-reduce (the bf16
    pipeline engine's pattern, plan grad_reduce 'allreduce')."""
    z = deepspeed.ds_config(job(tiny(), zero_stage=1, dp=2, grad_reduce="allreduce"))["zero_optimization"]
    assert z["reduce_scatter"] is False
    assert deepspeed.ds_config(job(tiny(), zero_stage=1, dp=2))["zero_optimization"]["reduce_scatter"] is True


def test_overlap_follows_plan():
    z = deepspeed.ds_config(job(tiny(), zero_stage=2, dp=2, overlap_dp_comm=False))["zero_optimization"]
    assert z["overlap_comm"] is False


def test_recompute_writes_activation_checkpointing_with_real_key_name():
    cfg = deepspeed.ds_config(job(tiny(), recompute="full"))
    assert cfg["activation_checkpointing"]["partition_activations"] is False
    assert "activation_checkpointing" not in deepspeed.ds_config(job(tiny()))


def test_fp16_default_gradient_dtype_is_fp16_and_fp32_has_no_half_block():
    assert deepspeed.ds_config(job(tiny(), precision="fp16"))["communication_data_type"] == "fp16"
    cfg = deepspeed.ds_config(job(tiny(), precision="fp32"))
    assert cfg["communication_data_type"] == "fp32" and "bf16" not in cfg and "fp16" not in cfg


REJECTED = [
    (dict(pp=2, zero_stage=2), EmitOptions(), "ZeRO stage 2: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"),
    (dict(pp=2, zero_stage=3), EmitOptions(), "ZeRO stage 3: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"),
    (dict(pp=2, vpp=2), EmitOptions(), "no interleaved schedule"),
    (dict(grad_dtype="int8"), EmitOptions(), "gradient dtype int8: communication_data_type must be one of fp32, fp16, bf16"),
    (dict(precision="fp8"), EmitOptions(), "precision fp8: ds_config has fp16 and bf16 blocks only"),
    (dict(zero_stage=2), EmitOptions(offload_param="cpu"), "offload_param needs ZeRO stage 3"),
    (dict(zero_stage=0), EmitOptions(offload_optimizer="cpu"), "offload_optimizer needs ZeRO stage 1, 2 or 3"),
    (dict(zero_stage=3), EmitOptions(offload_param="nvme"), "offload to nvme needs --nvme-path"),
    (dict(dp=8, global_batch_size=100), EmitOptions(), "global batch (100) must be divisible by micro batch x dp (1x8)"),
    (dict(zero_stage=3, grad_reduce="allreduce"), EmitOptions(), "ZeRO-3 always reduce-scatters gradients"),
    (dict(zero_stage=0, grad_dtype="fp32", precision="bf16"), EmitOptions(),
     "DeepSpeed accumulates bf16 gradients in fp32 only under ZeRO 1-3"),
    # runtime/engine.py: a bf16 pipeline without ZeRO runs BF16_Optimizer, which shards like ZeRO-1
    (dict(pp=2, zero_stage=0, precision="bf16"), EmitOptions(), "re-plan with ZeRO 1"),
    (dict(zero_stage=3, offload_layers=4), EmitOptions(), "DeepSpeed has no activation offload of whole layers"),
]


@pytest.mark.parametrize("plan,opts,words", REJECTED, ids=[w for *_, w in REJECTED])
def test_rule_refuses(plan, opts, words):
    with pytest.raises(PlannerError, match="DeepSpeed would reject this plan") as err:
        deepspeed.files(job(tiny(), opts, **plan))
    assert words in str(err.value)


def test_hostfile_lines():
    one = deepspeed.hostfile(job(tiny(), dp=8)).splitlines()
    assert [l for l in one if not l.startswith("#")] == ["localhost slots=8"]
    many = deepspeed.hostfile(job(tiny(), dp=4, tp=8, options=None)).splitlines()
    assert [l for l in many if not l.startswith("#")] == ["node-1 slots=8", "node-2 slots=8", "node-3 slots=8",
                                                          "node-4 slots=8"]


def test_launch_script_spans_the_nodes():
    """tp 8 x dp 4 = 32 GPUs: the launcher runs 4 nodes of 8 (launcher/runner.py --num_nodes, --num_gpus)."""
    text = deepspeed.launch_sh(job(tiny(), tp=8, dp=4))
    assert "--num_nodes 4 --num_gpus 8" in text


@pytest.mark.parametrize("case", MATRIX[::7], ids=case_id)
def test_launch_script_is_valid_bash(tmp_path, case):
    j = matrix_job(case)
    script = tmp_path / "launch.sh"
    script.write_text(deepspeed.launch_sh(j))
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    # Every matrix layout is tp x pp x dp = 8 GPUs: one node of 8 (clusters outside the catalog default to 8).
    assert case["layout"][0] * case["layout"][1] * case["layout"][2] == 8
    assert "--num_nodes 1 --num_gpus 8" in text
    assert '--deepspeed --deepspeed_config "$HERE/ds_config.json"' in text
