"""Every emitted ds_config.json goes through DeepSpeed's own parser (runtime/config.py
DeepSpeedConfig), the way Megatron-DeepSpeed hands it an mpu reporting dp = world/(tp*pp).

Needs the real package (CPU is enough): pip install torch==2.13.0 && DS_BUILD_OPS=0 pip install deepspeed.
Skipped, with that reason, where deepspeed is not importable.
"""
import copy
import json

import pytest

deepspeed_config = pytest.importorskip(
    "deepspeed.runtime.config", reason="deepspeed not installed (pip install torch==2.13.0; "
                                       "DS_BUILD_OPS=0 pip install deepspeed)")
import torch  # noqa: E402  (deepspeed imports it)
from deepspeed.launcher.runner import fetch_hostfile  # noqa: E402
from emit_support import job, tiny  # noqa: E402
from test_emit_deepspeed import MATRIX, case_id, matrix_job  # noqa: E402

from planner.emit import render  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class FakeMPU:
    """The one method DeepSpeedConfig asks an mpu for (runtime/config.py __init__)."""

    def __init__(self, dp):
        self.dp = dp

    def get_data_parallel_world_size(self):
        return self.dp


@pytest.fixture(autouse=True)
def comm_ready(monkeypatch):
    """Offline, DeepSpeedConfig treats a failing get_rank as world size 1; answer it instead."""
    monkeypatch.setattr(deepspeed_config.dist, "get_rank", lambda *a, **k: 0)


def parse(source, dp):
    return deepspeed_config.DeepSpeedConfig(source, mpu=FakeMPU(dp))


@pytest.mark.parametrize("case", MATRIX, ids=case_id)
def test_deepspeed_accepts_emitted_config(tmp_path, case):
    j = matrix_job(case)
    files = render(j, "deepspeed")
    path = tmp_path / "ds_config.json"
    path.write_text(files["deepspeed/ds_config.json"][0])
    cfg = parse(str(path), j.plan.dp)  # a path: loaded with hjson, duplicate keys rejected
    p = j.plan
    assert (cfg.train_batch_size, cfg.train_micro_batch_size_per_gpu, cfg.gradient_accumulation_steps) == \
        (p.global_batch_size, p.micro_batch_size, p.grad_accum_steps)
    assert cfg.zero_optimization_stage == p.zero_stage
    assert cfg.bfloat16_config.enabled == (p.precision == "bf16")
    assert cfg.float16_config.enabled == (p.precision == "fp16")
    assert cfg.communication_data_type == DTYPES[p.precision]
    assert cfg.gradient_clipping == 1.0
    opts = case["opts"]
    offload = cfg.zero_config.offload_optimizer
    assert (offload.device if offload else "none") == opts.offload_optimizer
    offload = cfg.zero_config.offload_param
    assert (offload.device if offload else "none") == opts.offload_param


def test_parser_rejects_a_broken_batch_identity():
    """Control: the harness does fail when DeepSpeed's batch assertion does."""
    cfg = json.loads(render(matrix_job(MATRIX[0]), "deepspeed")["deepspeed/ds_config.json"][0])
    bad = copy.deepcopy(cfg)
    bad["train_batch_size"] += 1
    with pytest.raises(AssertionError, match="Check batch related parameters"):
        parse(bad, matrix_job(MATRIX[0]).plan.dp)


def test_parser_rejects_int8_communication():
    """The rule comm_dtype mirrors: get_communication_data_type raises for anything but fp16/bf16/fp32."""
    cfg = json.loads(render(matrix_job(MATRIX[0]), "deepspeed")["deepspeed/ds_config.json"][0])
    cfg["communication_data_type"] = "int8"
    with pytest.raises(ValueError, match="Invalid communication_data_type"):
        parse(cfg, matrix_job(MATRIX[0]).plan.dp)


@pytest.mark.parametrize("j", [matrix_job(MATRIX[0]), job(tiny(), tp=8, dp=4)], ids=["1-node", "4-nodes"])
def test_launcher_reads_the_hostfile(tmp_path, j):
    path = tmp_path / "hostfile"
    path.write_text(render(j, "deepspeed")["deepspeed/hostfile"][0])
    pool = fetch_hostfile(str(path))
    assert len(pool) == j.nnodes and set(pool.values()) == {j.gpus_per_node}
