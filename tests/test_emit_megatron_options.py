"""Every argument an emitted Megatron-LM launch.sh passes to pretrain_gpt.py is one Megatron-LM's own
parser defines: the option exists, takes a value exactly when the parser says so, and the value is
one of its choices. tests/data/emit/megatron_options.json is that parser's option table, dumped from
Megatron-LM d98e8a64 by tests/tools/dump_megatron_options.py (whole scripts were also run through
parse_args/validate_args by tests/tools/megatron_validate.py, see tests/data/emit/README.md)."""
from __future__ import annotations

import json
import shlex

import pytest
from emit_support import DATA, job, tiny

from planner.emit import megatron
from planner.inputs.loading import load_model_spec

OPTIONS = json.loads((DATA / "megatron_options.json").read_text())["options"]


def script_arguments(script: str) -> list[str]:
    """The words of the bash arrays the script hands to pretrain_gpt.py (not DISTRIBUTED_ARGS)."""
    words, inside = [], None
    for line in script.splitlines():
        if line.endswith("=(") and not line.startswith("DISTRIBUTED_ARGS"):
            inside = True
            continue
        if inside and line.strip() == ")":
            inside = False
            continue
        if inside:
            words += shlex.split(line.replace('"${', "'${").replace('}"', "}'"))
    return words


def check(words: list[str]) -> list[str]:
    problems, i = [], 0
    while i < len(words):
        flag = words[i]
        spec = OPTIONS.get(flag)
        if spec is None:
            problems.append(f"unknown option {flag}")
            i += 1
            continue
        if not spec["value"]:
            i += 1
            continue
        values = []
        i += 1
        while i < len(words) and not words[i].startswith("--"):
            values.append(words[i])
            i += 1
        if not values or (spec["nargs"] is None and len(values) != 1):
            problems.append(f"{flag} takes {spec['nargs'] or 'one'} value(s), got {values}")
        if spec["choices"] and any(v not in spec["choices"] for v in values):
            problems.append(f"{flag} {values} not in {spec['choices']}")
    return problems


JOBS = {
    "llama3-70b": lambda: job(load_model_spec("llama3-70b"), tp=8, pp=4, dp=2, vpp=5, global_batch_size=512,
                              zero_stage=1, recompute="selective", sequence_parallel=True),
    "nemotron-4-15b": lambda: job(load_model_spec("nemotron-4-15b"), tp=8, pp=2, dp=1, global_batch_size=8,
                                  recompute="full", precision="fp8"),
    "gpt-fp16-unfused": lambda: job(tiny(), pp=4, dp=2, global_batch_size=16, precision="fp16",
                                    grad_dtype="fp32", flash_attention=False, overlap_pp_comm=False),
    "uneven-split": lambda: job(tiny(num_layers=30), pp=4, dp=1, global_batch_size=8),
    "mxfp8-tp-overlap": lambda: job(load_model_spec("llama3-70b"), tp=4, pp=2, dp=8, global_batch_size=64,
                                    zero_stage=1, sequence_parallel=True, precision="mxfp8", tp_comm_overlap=True,
                                    lowp_param_gather=True),
    "nvfp4-bf16-ends": lambda: job(load_model_spec("llama3-8b"), tp=2, dp=4, global_batch_size=32, zero_stage=1,
                                   precision="nvfp4", bf16_layers_start=1, bf16_layers_end=2),
    "fp8-cs-offload": lambda: job(load_model_spec("llama3-8b"), dp=8, global_batch_size=32, zero_stage=1,
                                  precision="fp8", fp8_recipe="tensorwise", offload_layers=8),
}


@pytest.mark.parametrize("name", sorted(JOBS))
def test_every_argument_is_a_megatron_option(name):
    words = script_arguments(megatron.launch_sh(JOBS[name]()))
    assert "--num-layers" in words and "--tensor-model-parallel-size" in words
    assert check(words) == []


def test_the_check_catches_what_megatron_would_refuse():
    assert check(["--normalization", "rmsnorm"]) == ["--normalization ['rmsnorm'] not in ['LayerNorm', 'RMSNorm']"]
    assert check(["--no-such-flag"]) == ["unknown option --no-such-flag"]
    assert check(["--num-layers"]) == ["--num-layers takes one value(s), got []"]


def test_mxfp8_parameters_gather_through_the_gradient_buffer():
    """Megatron-Bridge's bf16_with_mxfp8_mixed (mixed_precision.py) pairs fp8_param_gather with
    reuse_grad_buf_for_mxfp8_param_ag, as the MXFP8 runs in validation/runs.yaml ran; without it
    Megatron keeps a second parameter buffer (optimizer_config.py warns)."""
    words = script_arguments(megatron.launch_sh(JOBS["mxfp8-tp-overlap"]()))
    assert "--fp8-param-gather" in words and "--reuse-grad-buf-for-mxfp8-param-ag" in words
