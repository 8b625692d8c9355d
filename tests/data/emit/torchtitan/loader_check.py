"""Load every configuration of the torchtitan emit tests with torchtitan 0.3.0's own loader.

Run by hand, not in CI (see README.md): it needs torchtitan 0.3.0 with its dependencies, plus
triton (its llama3 package imports it) and torchao (float8, MXFP8), next to planner and torch 2.13 CPU:

    pip install --target /tmp/titan torchtitan==0.3.0 triton torchao   (then drop the torch it pulls)
    PYTHONPATH=/tmp/titan:. python tests/data/emit/torchtitan/loader_check.py --write

For each case of cases.json (planner's configuration) and each golden, it calls
torchtitan.config.ConfigManager().parse_args(["--module", ..., "--config", "planner_job"]) (the
trainer's own entry: torchtitan/train.py), then applies what torchtitan does before the first step
without GPUs: ParallelDims.from_config (WORLD_SIZE = the plan's GPUs), the model config's
update_from_config, the model built on the meta device (every module_fqns_per_model_part name must
exist), the pipeline's rank-to-stage mapping and schedule class, and trainer.py's batch arithmetic;
under torch's fake process group, ParallelDims.build_mesh (the dense and expert meshes) and, for MoE
models, the model's own parallelize on the meta device (the routed experts' local shapes).
Float8 needs an SM89 GPU to build (components/quantization/float8.py) and MXFP8 an SM100 one (mx.py),
so those checks are patched to pass. --write records the values in loader_results.json, which the CI test compares with
titan_schema.check on the same configurations.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # tests/, for emit_support


def configurations() -> list[tuple[str, str, int]]:
    """(case id, configuration module source, world size): planner's, then the goldens, built as the CI test
    builds them (test_emit_torchtitan.loader_sources: torchtitan's loss, pipeline buffers and gathered
    sequence-parallel inputs)."""
    from test_emit_torchtitan import loader_sources

    return loader_sources()


def load(source: str):
    """ConfigManager.parse_args on the module, with tyro's warnings kept."""
    from torchtitan.config import ConfigManager

    folder = tempfile.mkdtemp()
    Path(folder, "planner_job.py").write_text(source)
    sys.path.insert(0, folder)
    sys.modules.pop("planner_job", None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = ConfigManager().parse_args(["--module", "planner_job", "--config", "planner_job"])
    finally:
        sys.path.remove(folder)
    return config, sorted({str(w.message).split(",")[0] for w in caught if "annotated with type" in str(w.message)})


def pipeline(config, pp: int) -> list[list[str]]:
    """Rank-to-stage mapping for every rank and the schedule's class (distributed/pipeline_parallel.py)."""
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle, get_schedule_class
    from torchtitan.distributed.pipeline_parallel import _get_pp_rank_to_stage_indices_mapping

    p = config.parallelism
    stages = p.module_fqns_per_model_part or []
    if pp == 1:
        return []
    mapping = [_get_pp_rank_to_stage_indices_mapping(r, pp, p.pipeline_parallel_schedule, len(stages))
               for r in range(pp)]
    single = issubclass(get_schedule_class(p.pipeline_parallel_schedule), PipelineScheduleSingle)
    assert all(len(m) == 1 for m in mapping) if single else all(len(m) >= 2 for m in mapping), mapping
    assert sorted(s for m in mapping for s in m) == list(range(len(stages)))
    return stages


def model_facts(config) -> dict:
    """update_from_config, then the model on the meta device: parameters, float8 and MXFP8 linears (and their
    names' last parts), the routed experts' classes and token dispatchers, and that every stage module exists."""
    import torch

    model_config = config.model_spec.model
    model_config.update_from_config(config=config)
    with torch.device("meta"):
        model = model_config.build()
    names = {n for n, _ in model.named_modules()}
    missing = [m for s in (config.parallelism.module_fqns_per_model_part or []) for m in s if m not in names]
    assert not missing, missing
    from torchtitan.models.common.moe import GroupedExperts

    float8 = [n for n, m in model.named_modules() if type(m).__name__ == "Float8Linear"]
    mxfp8 = [n for n, m in model.named_modules() if type(m).__name__ == "MXFP8Linear"]
    experts = [m for m in model.modules() if isinstance(m, GroupedExperts)]
    return {"params": sum(p.numel() for p in model.parameters()), "float8_linears": len(float8),
            "mxfp8_linears": len(mxfp8), "lowp_names": sorted({n.split(".")[-1] for n in float8 + mxfp8}),
            "lm_head_float8": "lm_head" in float8 + mxfp8, "moe_layers": len(experts),
            "experts": sorted({getattr(m, "num_experts", None) for m in experts}),
            "expert_classes": sorted({type(m).__name__ for m in experts}),
            "dispatchers": sorted({type(m.token_dispatcher).__name__ for m in model.modules()
                                   if hasattr(m, "token_dispatcher")}),
            "dispatcher_pads": sorted({getattr(m.token_dispatcher, "pad_multiple", 0) or 0 for m in model.modules()
                                       if hasattr(m, "token_dispatcher")})}


def architecture_facts(config) -> dict:
    """What the flavour's model config states beyond its shapes (read before update_from_config): the final norm's
    epsilon, RoPE (theta, scaling, factor, the cache's length) and, for an MoE model, the last layer's router
    (score function, renormalised or not, scale, expert groups and how many a token uses) and its balancing
    coefficient (models/common/moe.py load_balance_coeff: the expert bias)."""
    m = config.model_spec.model
    layer = m.layers[-1]
    rope = layer.attention.rope
    out = {"norm_eps": m.norm.eps, "rope": [rope.theta, rope.scaling, rope.rope_factor, rope.max_seq_len]}
    moe = getattr(layer, "moe", None)
    if moe is not None:
        r = moe.router
        out["router"] = [r.score_func, r.route_norm, r.route_scale, r.num_expert_groups or 0,
                         r.num_limited_groups or 0, moe.load_balance_coeff]
    return out


def sharding_facts(config, world: int) -> dict:
    """For an MoE model: the model on the meta device sharded by its own parallelize (the qwen3
    model's sharding configs: models/qwen3/sharding.py, models/common/moe_sharding.py) over the mesh
    built under the fake process group, and the local shape of the first layer's routed-expert w1
    (experts, expert FFN, hidden): the experts over ep, each expert's FFN over etp."""
    import torch
    from torchtitan.distributed.parallel_dims import ParallelDims

    dims = ParallelDims.from_config(config.parallelism, world)
    mesh_facts(dims, world)
    with torch.device("meta"):
        model = config.model_spec.model.build()
    from torchtitan.models.common.moe import GroupedExperts

    if not any(isinstance(m, GroupedExperts) for m in model.modules()):  # quantized experts subclass it
        return {}
    model.parallelize(dims)
    w1 = next(p for n, p in model.named_parameters() if n.endswith(("experts.w1_EFD", "experts.mlp1_weight_EGD")))
    local = w1.to_local() if hasattr(w1, "to_local") else w1
    return {"expert_w1_local": list(local.shape)}


def cp_wrap(config, world: int) -> None:
    """What each model's parallelize_fn does first under context parallelism (models/*/parallelize.py): wrap
    every layer's inner attention for CP (distributed/context_parallel/api.py apply_cp_to_forward), on the meta
    device over the mesh built under the fake process group."""
    import torch
    from torchtitan.distributed.context_parallel import apply_cp_to_forward
    from torchtitan.distributed.parallel_dims import ParallelDims

    dims = ParallelDims.from_config(config.parallelism, world)
    if not dims.cp_enabled:
        return
    mesh_facts(dims, world)
    with torch.device("meta"):
        model = config.model_spec.model.build()
    apply_cp_to_forward([block.attention.inner_attention for block in model.layers.values()], dims.get_mesh("cp"))


def loss_runs(config) -> bool:
    """The configured loss on one sequence of seq_len tokens (small hidden size and vocabulary): the
    ChunkedLossWrapper's torch._check on num_chunks runs on CPU (components/loss.py)."""
    import torch

    loss = config.loss.build(compile_config=None)
    if hasattr(loss, "set_lm_head"):
        loss.set_lm_head(torch.nn.Linear(16, 32, bias=False))
        hidden = torch.randn(1, config.training.seq_len, 16, requires_grad=True)
    else:
        hidden = torch.randn(1, config.training.seq_len, 32, requires_grad=True)
    labels = torch.randint(0, 32, (1, config.training.seq_len))
    value, _ = loss(hidden, labels, global_valid_tokens=torch.tensor(float(config.training.seq_len)))
    return bool(torch.isfinite(value))


def trainer_sequence_check(config, dims) -> None:
    """trainer.py Trainer.__init__ (needs GPUs, so replicated): seq_len divisible by tp with sequence
    parallelism (times 2 cp with context parallelism)."""
    p = config.parallelism
    divisor = (dims.tp if p.enable_sequence_parallel else 1) * (2 * dims.cp if dims.cp > 1 else 1)
    if config.training.seq_len % divisor:
        raise ValueError(f"Training sequence length ({config.training.seq_len}) must be divisible by {divisor}")


def facts(config, world: int) -> dict:
    from torchtitan.components.loss import ChunkedLossWrapper
    from torchtitan.distributed.parallel_dims import ParallelDims

    dims = ParallelDims.from_config(config.parallelism, world)
    trainer_sequence_check(config, dims)
    t, p = config.training, config.parallelism
    degree = dims.dp_replicate * dims.dp_shard
    gbs = t.global_batch_size if t.global_batch_size > 0 else t.local_batch_size * degree
    assert gbs % (t.local_batch_size * degree) == 0
    compile_on = config.compile.enable
    return {"dp_replicate": dims.dp_replicate, "dp_shard": dims.dp_shard, "tp": dims.tp, "pp": dims.pp,
            "cp": dims.cp, "global_batch_size": gbs, "local_batch_size": t.local_batch_size,
            "grad_accum_steps": gbs // (t.local_batch_size * degree),
            "pp_microbatches": t.local_batch_size // p.pipeline_parallel_microbatch_size if dims.pp > 1 else 1,
            "flavor": config.model_spec.flavor, "sequence_parallel": p.enable_sequence_parallel,
            "schedule": p.pipeline_parallel_schedule if dims.pp > 1 else None,
            "reshard_after_forward": p.fsdp_reshard_after_forward, "seq_len": t.seq_len, "steps": t.steps,
            "dtype": t.dtype, "param_dtype": t.mixed_precision_param, "reduce_dtype": t.mixed_precision_reduce,
            "cuda_graphs": not t.disable_cuda_graphs,
            "ac": {"SelectiveAC": "selective", "FullAC": "full", "NoneType": "none"}[
                type(config.activation_checkpoint).__qualname__.split(".")[0]],
            "compile": list(config.compile.components) if compile_on else [],
            "loss": "chunked" if isinstance(config.loss, ChunkedLossWrapper.Config) else "cross_entropy",
            "hf_assets_path": config.hf_assets_path, "stages": pipeline(config, dims.pp), **mesh_facts(dims, world)}


def mesh_facts(dims, world: int) -> dict:
    """ParallelDims.build_mesh under torch's fake process group (no GPUs, no peers): it unflattens the
    world into the dense and the sparse (pp, dp_replicate, efsdp, ep) meshes and raises when ep does
    not divide dp_shard x cp x tp. Returns the EP and EFSDP sizes it built."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    dims.build_mesh()
    efsdp = dims.get_optional_mesh(["efsdp"]) if dims.ep > 1 else None
    return {"ep": dims.ep, "efsdp": efsdp.size() if efsdp is not None else None}


def unchecked(model, flavour: str, drop: str = "", **plan) -> str:
    """planner's configuration for a plan its rules refuse, written as if they did not (to see what
    torchtitan itself does with it); `drop` removes one line."""
    from emit_support import job

    from planner.emit import torchtitan as emitter
    from planner.frameworks import torchtitan as titan

    saved = emitter.checked_flavour
    emitter.checked_flavour = lambda j: next(f for f in titan.FLAVOURS if f.name == flavour)
    try:
        source = emitter.config_py(job(model, **plan))
    finally:
        emitter.checked_flavour = saved
    return "\n".join(line for line in source.splitlines() if not (drop and drop in line)) + "\n"


def refusal_cases() -> list[tuple[str, str, int]]:
    """What torchtitan does with plans planner refuses, or refused before the fifty-ninth session (seq-8200-tp8-sp), or
    with a line planner must write, dropped."""
    from planner.inputs.loading import load_model_spec
    from planner.inputs.specs import ModelSpec

    l8, q30 = load_model_spec("llama3-8b"), load_model_spec("qwen3-30b-a3b")
    models = json.loads((HERE / "cases.json").read_text())["models"]
    one_b, dsv3, goss = ModelSpec(**models["1b"]), ModelSpec(**models["dsv3-16b"]), ModelSpec(**models["goss-20b"])
    z3 = {"zero_stage": 3, "grad_dtype": "fp32"}
    return [
        ("seq-262144", unchecked(l8.model_copy(update={"seq_length": 262144}), "8B", dp=8, **z3), 8),
        ("seq-8196-chunked-loss", unchecked(l8.model_copy(update={"seq_length": 8196}), "8B", dp=8, **z3), 8),
        ("1b-tied-pp2", unchecked(one_b, "1B", pp=2, global_batch_size=8, **z3), 2),
        ("pp2-cuda-graphs-on", unchecked(l8, "8B", "disable_cuda_graphs", pp=2, dp=4, global_batch_size=32, **z3), 8),
        ("seq-8200-tp8-sp", unchecked(l8.model_copy(update={"seq_length": 8200}), "8B", tp=8, sequence_parallel=True,
                                      **z3), 8),
        ("moe-ddp8-ep2", unchecked(q30, "30B-A3B", dp=8, ep=2, zero_stage=0, global_batch_size=8, grad_dtype="fp32"),
         8),
        ("moe-ep8-cuda-graphs-on", unchecked(q30, "30B-A3B", "disable_cuda_graphs", dp=8, ep=8, global_batch_size=8,
                                             **z3), 8),
        ("dsv3-seq-32768", unchecked(dsv3.model_copy(update={"seq_length": 32768}), "16B", dp=8, ep=8,
                                     global_batch_size=8, **z3), 8),
        ("goss-cp2", unchecked(goss, "20b", cp=2, dp=4, ep=4, global_batch_size=8, rope_fusion=True, **z3), 8),
    ]


def outcome(source: str, world: int) -> str:
    """"accepted", or what torchtitan raised (tyro prints a config error in a box and exits)."""
    import contextlib
    import io
    import re

    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):
            config, _ = load(source)
        facts(config, world)
        model_facts(config)
        cp_wrap(config, world)
        loss_runs(config)
    except SystemExit:
        text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", printed.getvalue()).split())
        return "tyro exit: " + text[text.find("Error parsing"):][:140]
    except Exception as err:  # noqa: BLE001 - what torchtitan raised is the result
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0][:160]}"
    return "accepted"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="record the values in loader_results.json")
    args = ap.parse_args()
    import torchtitan
    from torchtitan.components.quantization import float8, mx

    float8.has_cuda_capability = lambda *a, **k: True  # float8 builds only on SM89+ (float8.py)
    mx.has_cuda_capability = lambda *a, **k: True  # MXFP8 only on SM100+ (mx.py)
    results = {"torchtitan": getattr(torchtitan, "__version__", None) or "0.3.0", "cases": {}}
    for case, source, world in configurations():
        config, warns = load(source)
        arch = architecture_facts(config)
        cp_wrap(config, world)  # raises where the model's parallelize would (a CP case of an attention it cannot)
        results["cases"][case] = {**facts(config, world), **arch, **model_facts(config),
                                  **sharding_facts(config, world),
                                  "loss_runs": loss_runs(config), "loader_warnings": warns}
        print(case, "ok", warns or "")
    results["refusals"] = {case: outcome(source, world) for case, source, world in refusal_cases()}
    print(json.dumps(results["refusals"], indent=1))
    if args.write:
        (HERE / "loader_results.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
