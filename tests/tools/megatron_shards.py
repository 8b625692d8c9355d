"""The parameters Megatron-LM puts on each GPU under planner's tensor, pipeline and expert splits (by hand, not in
CI: Megatron-LM is not on PyPI, and the build needs torch and triton).

    MEGATRON_LM=path/to/Megatron-LM python tests/tools/megatron_shards.py [--write]

For each case the pretrain_gpt.py arguments `planner emit --format megatron` writes go through Megatron-LM's
parse_args and validate_args with WORLD_SIZE = tp x cp x pp x dp. Then, for each pipeline stage, PyTorch's
single-process "fake" process group stands in for that stage's first GPU (global rank stage x world / pp: tensor,
context, data, expert and expert-tensor rank 0 in Megatron's rank order), Megatron-core's own
initialize_model_parallel makes its groups, and Megatron-LM's training.get_model builds every model chunk that GPU
holds (gpt_builder, one per virtual stage) on PyTorch's meta device with the local modules and wraps them
(Float16Module, then DistributedDataParallel with the gradient buffers the arguments ask for). Recorded per stage, in
tests/data/emit/megatron/shard_results.json (read by tests/test_megatron_shards.py): the parameters the GPU holds,
the routed experts' among them (Megatron marks them allreduce=False: their gradients reduce over expert-DP), by kind
those Megatron splits over tensor parallel (marked tensor_model_parallel) and those it holds whole, and each gradient
buffer (elements, dtypes, the data-parallel group it reduces over). The local core attention, which holds no
weights, is built as if context parallelism were off (it refuses it; Transformer Engine's takes it).
"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import megatron_build  # siblings: the build check's argument parsing and stand-ins
import megatron_validate

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "data" / "emit" / "megatron" / "shard_results.json"
HF = "tests/data/hf_configs/"
# (id, model: a catalog name or a Hugging Face config path, plan). The world is tp x cp x pp x dp GPUs; the
# experts fold over tp x cp x dp as etp x ep x expert-DP.
CASES = [
    ("llama3-70b-tp8-pp4-vpp5", "llama3-70b", dict(tp=8, pp=4, vpp=5, dp=2)),
    ("gpt3-175b-tp8-pp8-fp32-grads", "gpt3-175b", dict(tp=8, pp=8, dp=2, grad_dtype="fp32")),
    ("deepseek-v3-tp2-pp8-ep8", "deepseek-v3", dict(tp=2, pp=8, dp=4, ep=8, stage_layers=[8] * 7 + [5])),
    ("qwen3-235b-a22b-tp4-pp2-ep8", "qwen3-235b-a22b", dict(tp=4, pp=2, dp=2, ep=8)),
    ("mixtral-8x22b-tp2-pp2-ep4-etp2-zero0", "mixtral-8x22b", dict(tp=2, pp=2, dp=4, ep=4, etp=2, zero_stage=0)),
    ("gpt-oss-120b-tp2-ep4", "gpt-oss-120b", dict(tp=2, dp=4, ep=4)),
    ("qwen3-30b-a3b-tp2-cp2-dp2-ep4", "qwen3-30b-a3b", dict(tp=2, cp=2, dp=2, ep=4)),
    ("llama4-maverick-tp2-pp2-ep8", "llama4-maverick", dict(tp=2, pp=2, dp=4, ep=8)),
    ("glm-4.5-air-tp2-pp2-ep4", HF + "glm-4.5-air.json", dict(tp=2, pp=2, dp=2, ep=4)),
    # pipeline layouts: an embedding-only first chunk and a loss-only last one (Meta's 405B split), NVIDIA's
    # DeepSeek-V3 layout with the MTP block in the last chunk
    ("llama3-405b-tp8-pp16-vpp8-meta", "llama3-405b", dict(tp=8, pp=16, vpp=8, dp=1,
                                                            stage_layers=[0] + [1] * 126 + [0])),
    ("deepseek-v3-pp8-vpp4-ep8-layout", "deepseek-v3", dict(tp=1, pp=8, vpp=4, dp=8, ep=8,
                                                             stage_layers=[1] + [2] * 30 + [0])),
]


def emitted(model: str, plan: dict) -> tuple[list[str], dict]:
    """The pretrain_gpt.py arguments planner writes for the case, and the variables its launch.sh exports (None:
    unsets)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from emit_support import shard_case_job

    from planner.emit import megatron

    _, j = shard_case_job(model, plan)
    env = {}
    for line in megatron.env_lines(j).splitlines():
        if line.startswith("export "):
            key, value = line.removeprefix("export ").split("=", 1)
            env[key] = value
        elif line.startswith("unset "):
            env[line.removeprefix("unset ")] = None
    return megatron.flat_args(j) + megatron.data_args(j), env


def kind_of(name: str, mla: bool) -> str:
    """What a parameter is, in the terms tests/test_megatron_shards.py sets aside or adjusts by hand."""
    if name.rsplit(".", 1)[-1].startswith("bias"):  # grouped experts' are bias0, bias1, ..
        return "expert_bias" if ".experts." in name else "bias"
    for part, kind in (("position_embeddings", "position_embeddings"), ("softmax_offset", "sinks"),
                       ("down_proj", "mla_down"), ("shared_experts.gate_weight", "shared_expert_gate"),
                       (".router.", "router")):
        if part in name:
            return kind
    if ".q_layernorm." in name or ".k_layernorm." in name or ".kv_layernorm." in name:
        return "latent_norm" if mla else "qk_norm"
    if name.startswith("mtp.") and any(n in name for n in (".enorm.", ".hnorm.", ".final_layernorm.")):
        return "mtp_norm"
    return "other"


def built_as_if(cls, method: str, field: str, value) -> None:
    """Make `cls.method(self_or_cls, config, ...)` run with `config.field` set to `value`, then restored."""
    plain = getattr(cls, method)

    def call(first, config, *a, **k):
        kept = getattr(config, field)
        setattr(config, field, value)
        try:
            return plain(first, config, *a, **k)
        finally:
            setattr(config, field, kept)

    setattr(cls, method, call)


def shim_local_modules() -> None:
    """Two local modules refuse what Transformer Engine's take, and their weights do not depend on it, so they are
    built as if it were off while the groups keep it: Megatron's torch norms refuse sequence parallelism, which its
    MoE layers need with tp > 1 (a norm holds one h-vector on every TP rank either way), and the local core attention
    refuses context parallelism (it holds no weights)."""
    from megatron.core.transformer import dot_product_attention, torch_norm

    built_as_if(torch_norm.WrappedTorchNorm, "__new__", "sequence_parallel", False)
    built_as_if(dot_product_attention.DotProductAttention, "__init__", "context_parallel_size", 1)


def shim_streams() -> None:
    """What training.get_model needs beyond megatron_build.shim_torch on a CPU machine: a current CUDA stream to
    order the wrapping on (nothing runs), and no move of the meta-device model to a GPU."""
    import contextlib

    import torch

    import megatron.training.training as training

    torch.cuda.current_stream = lambda *a, **k: megatron_build.NoStream()
    torch.cuda.stream = lambda *a, **k: contextlib.nullcontext()
    training.to_empty_if_meta_device = lambda module, device=None: module


def built_model(args, rank: int) -> tuple[list, dict]:
    """The DDP-wrapped model chunks of global rank `rank`, as Megatron-LM's training.get_model builds and wraps
    them (Float16Module, DistributedDataParallel and its gradient buffers), on the meta device; and the rank's
    place in each group. Megatron's groups are made for that rank and torn down after."""
    from functools import partial

    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    import megatron.training.training as training
    from gpt_builders import gpt_builder
    from megatron.core import parallel_state as ps
    from model_provider import model_provider

    dist.init_process_group("fake", rank=rank, world_size=args.world_size, store=FakeStore())
    ps.initialize_model_parallel(
        args.tensor_model_parallel_size, args.pipeline_model_parallel_size,
        args.virtual_pipeline_model_parallel_size, context_parallel_size=args.context_parallel_size,
        expert_model_parallel_size=args.expert_model_parallel_size,
        expert_tensor_parallel_size=args.expert_tensor_parallel_size, create_gloo_process_groups=False)
    chunks = training.get_model(partial(model_provider, gpt_builder))
    ranks = {"tp": ps.get_tensor_model_parallel_rank(), "pp": ps.get_pipeline_model_parallel_rank(),
             "ep": ps.get_expert_model_parallel_rank(), "etp": ps.get_expert_tensor_parallel_rank(),
             "dp": ps.get_data_parallel_world_size(with_context_parallel=True),
             "expert_dp": ps.get_expert_data_parallel_world_size()}
    ps.destroy_model_parallel()
    dist.destroy_process_group()
    return chunks, ranks


def gradient_buffers(chunks) -> list[dict]:
    """Each gradient buffer of the DDP-wrapped chunks: elements (padded, as allocated, and the parameters'), dtypes,
    the data-parallel group it reduces over (the dense one, or expert-DP), and whether it holds routed experts.
    The distributed optimizer gives each rank of that group an equal 1/size slice of every buffer
    (distrib_optimizer.py _build_model_gbuf_range), so a slice is numel / dp_size."""
    out = []
    for ddp in chunks:
        for experts, buffers in ((False, ddp.buffers), (True, ddp.expert_parallel_buffers)):
            out += [{"experts": experts, "numel": b.numel, "numel_unpadded": b.numel_unpadded,
                     "grad_dtype": str(b.grad_dtype).removeprefix("torch."),
                     "param_dtype": str(b.param_dtype).removeprefix("torch."),
                     "dp_size": b.data_parallel_world_size, "param_buffer": b.param_data is not None}
                    for b in buffers]
    return out


def stage_parameters(args, cfg, rank: int) -> dict:
    """What global rank `rank` holds: its parameters (all, the routed experts', and by kind split over TP or
    whole) and its gradient buffers."""
    chunks, ranks = built_model(args, rank)
    total, experts, whole, split = 0, 0, Counter(), Counter()
    for chunk in chunks:
        for name, p in chunk.module.module.named_parameters():  # DDP(Float16Module(GPTModel))
            total += p.numel()
            experts += 0 if getattr(p, "allreduce", True) else p.numel()
            by_tp = split if getattr(p, "tensor_model_parallel", False) else whole
            by_tp[kind_of(name, cfg.multi_latent_attention)] += p.numel()
    return {"rank": rank, "ranks": ranks, "parameters": total, "experts": experts,
            "whole": dict(sorted(whole.items())), "split": dict(sorted(split.items())),
            "gradient_buffers": gradient_buffers(chunks)}


def shards(argv: list[str]) -> list[dict]:
    from megatron.training.arguments import core_transformer_config_from_args

    args = megatron_build.parse(argv)
    args.init_model_with_meta_device = True  # --init-model-with-meta-device: built on the meta device, not moved
    cfg = core_transformer_config_from_args(args)
    return [stage_parameters(args, cfg, s * args.world_size // args.pipeline_model_parallel_size)
            for s in range(args.pipeline_model_parallel_size)]


def main() -> None:
    write = "--write" in sys.argv[1:]  # parse() replaces sys.argv with each case's arguments
    megatron_validate.stand_in()
    os.chdir(os.environ["MEGATRON_LM"])
    megatron_build.shim_torch()
    shim_local_modules()
    shim_streams()
    results, clean = {}, dict(os.environ)
    for cid, model, plan in CASES:
        os.environ.clear()  # Megatron sets attention-backend variables that the next case's checks read
        os.environ.update(clean)
        argv, env = emitted(model, plan)
        world = plan["tp"] * plan.get("cp", 1) * plan.get("pp", 1) * plan["dp"]
        os.environ.update(WORLD_SIZE=str(world), RANK="0", LOCAL_RANK="0")
        for key, value in env.items():  # as launch.sh exports or unsets them
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        results[cid] = {"model": model, "plan": plan, "args": argv, "env": env, "stages": shards(argv)}
        print(cid, [(s["parameters"], s["experts"]) for s in results[cid]["stages"]])
    if write:
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
