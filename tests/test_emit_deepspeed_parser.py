"""Every emitted ds_config.json goes through DeepSpeed's own parser (runtime/config.py
DeepSpeedConfig), the way Megatron-DeepSpeed hands it an mpu reporting dp = world/(tp*pp).

Needs the real package (CPU is enough; the test extra, pip install -e '.[test]', brings torch 2.13.0 and
deepspeed 0.19.8). A missing DeepSpeed is a loud failure (every test here errors, naming the install command), so a test
install without it cannot pass silently. To run the rest of the suite without DeepSpeed on purpose,
set PLANNER_SKIP_DEEPSPEED=1: then these tests are skipped, and the skip reason says it was asked for.

Expected values come from the test's own inputs (the matrix case: micro-batch 2, dp, gas, ZeRO stage,
offload devices) and from DeepSpeed's documented defaults, never from the emitted plan object.
"""
import copy
import json
import os

import pytest
from emit_support import job, tiny
from test_emit_deepspeed import MATRIX, case_id, matrix_job

from planner.emit import render

SKIP_ON_REQUEST = os.environ.get("PLANNER_SKIP_DEEPSPEED") == "1"
INSTALL = "pip install -e '.[test]' (torch==2.13.0, deepspeed==0.19.8; DS_BUILD_OPS=0 builds no CUDA ops)"

try:
    import torch
    from deepspeed.launcher.runner import fetch_hostfile
    from deepspeed.runtime import config as deepspeed_config
except ImportError as missing:  # only a missing package; any other import failure is raised as is
    torch = fetch_hostfile = deepspeed_config = None
    IMPORT_ERROR = f"{type(missing).__name__}: {missing}"
else:
    IMPORT_ERROR = None

MICRO_BATCH = 2  # matrix_job's micro-batch size


class FakeMPU:
    """The one method DeepSpeedConfig asks an mpu for (runtime/config.py __init__)."""

    def __init__(self, dp):
        self.dp = dp

    def get_data_parallel_world_size(self):
        return self.dp


@pytest.fixture(autouse=True)
def deepspeed_ready(monkeypatch):
    """DeepSpeed must be importable, or skipping must have been asked for by PLANNER_SKIP_DEEPSPEED=1.

    Offline, DeepSpeedConfig treats a failing get_rank as world size 1; answer it instead."""
    if deepspeed_config is None:
        if SKIP_ON_REQUEST:
            pytest.skip(f"PLANNER_SKIP_DEEPSPEED=1 is set: DeepSpeed's own parser was not run on the emitted "
                        f"configs ({IMPORT_ERROR})")
        pytest.fail(f"DeepSpeed is not importable ({IMPORT_ERROR}), so DeepSpeed's own parser cannot check the "
                    f"emitted ds_config.json. Install it: {INSTALL}; or set PLANNER_SKIP_DEEPSPEED=1 to skip "
                    f"these tests on purpose.", pytrace=False)
    monkeypatch.setattr(deepspeed_config.dist, "get_rank", lambda *a, **k: 0)


def parse(source, dp):
    return deepspeed_config.DeepSpeedConfig(source, mpu=FakeMPU(dp))


def dtypes():
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@pytest.mark.parametrize("case", MATRIX, ids=case_id)
def test_deepspeed_accepts_emitted_config(tmp_path, case):
    j = matrix_job(case)
    files = render(j, "deepspeed")
    path = tmp_path / "ds_config.json"
    path.write_text(files["deepspeed/ds_config.json"][0])
    dp = case["layout"][2]
    cfg = parse(str(path), dp)  # a path: loaded with hjson, duplicate keys rejected
    # The case's own numbers: micro-batch 2 on each of dp ranks, gas accumulation steps.
    assert (cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps) == \
        (MICRO_BATCH * dp * case["gas"], MICRO_BATCH, case["gas"])
    assert cfg.zero_optimization_stage == case["zero"]
    assert cfg.bfloat16_config.enabled == (case["precision"] == "bf16")
    assert cfg.float16_config.enabled == (case["precision"] == "fp16")
    assert cfg.communication_data_type == dtypes()[case["precision"]]
    assert cfg.gradient_clipping == 1.0
    if case["precision"] == "fp16":
        # DeepSpeed config docs (fp16 block): loss_scale 0.0 selects dynamic loss scaling, starting at
        # 2^initial_scale_power = 2^16.
        assert (cfg.float16_config.loss_scale, cfg.float16_config.initial_scale_power) == (0.0, 16)
    opts = case["opts"]
    offload = cfg.zero_config.offload_optimizer
    assert (offload.device if offload else "none") == opts.offload_optimizer
    offload = cfg.zero_config.offload_param
    assert (offload.device if offload else "none") == opts.offload_param
    z = cfg.zero_config
    if case["zero"] in (1, 2):
        # DeepSpeed's own ZeRO-1/2 default buckets, runtime/zero/config.py: 5e8 elements each.
        assert (z.reduce_bucket_size, z.allgather_bucket_size) == (500_000_000, 500_000_000)
    if case["zero"] == 3:
        # Hugging Face 'auto' values for hidden size h = 1024 (tiny()): h^2, int(0.9 h^2), 10 h.
        assert (z.reduce_bucket_size, z.prefetch_bucket_size, z.param_persistence_threshold) == \
            (1024**2, 943_718, 10_240)
    if case["zero"] >= 1:  # the plan reduce-scatters, and overlaps unless a pipeline turns it off
        assert z.overlap_comm is (case["layout"][1] == 1) and z.reduce_scatter is True


def test_parser_rejects_a_broken_batch_identity():
    """Control: the harness does fail when DeepSpeed's batch assertion does."""
    cfg = json.loads(render(matrix_job(MATRIX[0]), "deepspeed")["deepspeed/ds_config.json"][0])
    bad = copy.deepcopy(cfg)
    bad["train_batch_size"] += 1
    with pytest.raises(AssertionError, match="Check batch related parameters"):
        parse(bad, MATRIX[0]["layout"][2])


def test_parser_rejects_int8_communication():
    """The rule comm_dtype mirrors: get_communication_data_type raises for anything but fp16/bf16/fp32."""
    cfg = json.loads(render(matrix_job(MATRIX[0]), "deepspeed")["deepspeed/ds_config.json"][0])
    cfg["communication_data_type"] = "int8"
    with pytest.raises(ValueError, match="Invalid communication_data_type"):
        parse(cfg, MATRIX[0]["layout"][2])


@pytest.mark.parametrize("zero, precision", [(z, pr) for z in (1, 2, 3) for pr in ("bf16", "fp16")])
def test_fp32_gradients_are_held_in_fp32(tmp_path, zero, precision):
    """A plan priced with fp32 gradients (--grad-dtype fp32 under a 16-bit precision) must get fp32
    gradient buffers, not only an fp32 collective: DeepSpeed reads data_types.grad_accum_dtype for the
    buffers (runtime/config.py, default: the model's dtype) and communication_data_type for the wire.
    Except under bf16 with ZeRO-1, where an fp32 grad_accum_dtype selects BF16_Optimizer (runtime/
    engine.py), which all-reduces after the backward, not overlapped as the plan was priced: there the
    bf16 .grad stays and only the collective runs in fp32."""
    path = tmp_path / "ds_config.json"
    plan = job(tiny(), zero_stage=zero, dp=2, global_batch_size=2, precision=precision, grad_dtype="fp32")
    path.write_text(render(plan, "deepspeed")["deepspeed/ds_config.json"][0])
    cfg = parse(str(path), 2)
    assert cfg.communication_data_type == torch.float32
    assert cfg.grad_accum_dtype == (None if precision == "bf16" and zero == 1 else "fp32")
    default = tmp_path / "default.json"  # the precision's own gradients: DeepSpeed's default buffers
    default.write_text(render(job(tiny(), zero_stage=zero, dp=2, global_batch_size=2, precision=precision),
                              "deepspeed")["deepspeed/ds_config.json"][0])
    assert parse(str(default), 2).grad_accum_dtype is None


# MATRIX[0] is pure data parallelism over 8 GPUs (one 8-GPU node); tp 8 x dp 4 is 32 GPUs, four nodes
# of 8 (the default node size for a cluster outside the catalog).
HOSTFILES = [(matrix_job(MATRIX[0]), {"localhost": 8}),
             (job(tiny(), tp=8, dp=4, zero_stage=1), {"node-1": 8, "node-2": 8, "node-3": 8, "node-4": 8})]


@pytest.mark.parametrize("j,pool", HOSTFILES, ids=["1-node", "4-nodes"])
def test_launcher_reads_the_hostfile(tmp_path, j, pool):
    path = tmp_path / "hostfile"
    path.write_text(render(j, "deepspeed")["deepspeed/hostfile"][0])
    assert dict(fetch_hostfile(str(path))) == pool
