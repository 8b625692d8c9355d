"""Run emitted Megatron-LM launch scripts through Megatron-LM's own argument validation (by hand,
not in CI: Megatron-LM's training package is not on PyPI).

    MEGATRON_LM=path/to/Megatron-LM python tests/tools/megatron_validate.py DIR_OR_LAUNCH_SH ...

Each launch.sh runs with a stand-in `torchrun` that records its arguments; the pretrain_gpt.py
arguments then go through parse_args(), validate_args() and core_transformer_config_from_args()
with WORLD_SIZE = nproc_per_node x nnodes. Prints one line per script: accepted (with the derived
dp, virtual pipeline size, query groups, ffn, experts) or the error Megatron-LM raised.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import typing
import warnings
from pathlib import Path

FAKE_TORCHRUN = """#!/usr/bin/env bash
printf '%s\\0' "$@" > "$TORCHRUN_ARGS"
env -0 > "$TORCHRUN_ARGS.env"
"""


def recorded_args(script: Path) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "torchrun"
        fake.write_text(FAKE_TORCHRUN)
        fake.chmod(0o755)
        out = Path(tmp) / "args"
        env = {**os.environ, "PATH": f"{tmp}:{os.environ['PATH']}", "TORCHRUN_ARGS": str(out),
               "MEGATRON_LM": os.environ["MEGATRON_LM"]}
        subprocess.run(["bash", str(script)], check=True, env=env)
        exported = dict(kv.split("=", 1) for kv in Path(f"{out}.env").read_bytes().decode().split("\0") if "=" in kv)
        for key in ("CUDA_DEVICE_MAX_CONNECTIONS", "NVTE_CPU_OFFLOAD_V1"):  # what the script exports for its checks
            os.environ.pop(key, None)
            if key in exported:
                os.environ[key] = exported[key]
        return out.read_bytes().decode().split("\0")[:-1]


def validate(argv: list[str]) -> str:
    nproc = int(argv[argv.index("--nproc_per_node") + 1])
    nnodes = int(argv[argv.index("--nnodes") + 1])
    script_at = next(i for i, a in enumerate(argv) if a.endswith("pretrain_gpt.py"))
    os.environ.update(WORLD_SIZE=str(nproc * nnodes), RANK="0", LOCAL_RANK="0")
    sys.argv = ["pretrain_gpt.py", *argv[script_at + 1:]]
    if "rope" in sys.argv:  # RoPE fusion needs Transformer Engine, which a CPU machine lacks
        sys.argv.append("--no-rope-fusion")
    from megatron.training.arguments import core_transformer_config_from_args, parse_args, validate_args

    args = parse_args()
    validate_args(args, {})
    cfg = core_transformer_config_from_args(args)
    return (f"accepted: dp {args.data_parallel_size}, vpp {args.virtual_pipeline_model_parallel_size}, "
            f"query groups {cfg.num_query_groups}, ffn {cfg.ffn_hidden_size}, experts {cfg.num_moe_experts}, "
            f"cp {args.context_parallel_size}, ep {args.expert_model_parallel_size}")


def stand_in() -> None:
    """What importing Megatron-LM from $MEGATRON_LM on a CPU machine needs (the other tools here call it too):
    its checkout on the path, typing.override before Python 3.12, and a GPU to report when validate_args asks
    for its architecture (a Hopper, sm_90)."""
    sys.path.insert(0, os.environ["MEGATRON_LM"])
    if not hasattr(typing, "override"):
        typing.override = lambda f: f
    warnings.simplefilter("ignore")
    import torch

    class _Props:
        major, minor, name, total_memory = 9, 0, "stand-in", 80 * 2**30

    torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
    torch.cuda.get_device_properties = lambda *a, **k: _Props()


def main() -> None:
    stand_in()
    scripts = [p for arg in sys.argv[1:] for p in (sorted(Path(arg).rglob("launch.sh")) if Path(arg).is_dir()
                                                    else [Path(arg)]) if "megatron" in str(p)]
    for script in scripts:
        try:
            print(f"{script}: {validate(recorded_args(script))}")
        except BaseException as exc:  # noqa: BLE001 - report whatever Megatron raised
            print(f"{script}: REJECTED {type(exc).__name__}: {str(exc)[:300]}")


if __name__ == "__main__":
    main()
