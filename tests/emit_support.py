"""Helpers for the emit tests: models, estimate objects shaped like `planner estimate --json`."""
from __future__ import annotations

from pathlib import Path

import yaml

from planner.emit import EmitOptions, build_job
from planner.inputs import plans
from planner.inputs.specs import ModelSpec, PlanSpec

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "emit"


def tiny(**kw) -> ModelSpec:
    """A small GPT: 24 layers, 1024 hidden, 16 heads (kw overrides)."""
    base = dict(name="tiny", num_layers=24, hidden_size=1024, num_attention_heads=16, vocab_size=32000,
                seq_length=2048)
    return ModelSpec(**{**base, **kw})


def estimate(model: ModelSpec, **plan) -> dict:
    """An estimate object with the plan as plan_to_dict writes it (no cost-model numbers)."""
    spec = PlanSpec(**plan)
    dp = spec.dp or 1
    built = plans.build_plan(spec.model_copy(update={"dp": dp}), model, spec.tp * spec.pp * dp)
    return {"model": model.name, "cluster": "test-cluster", "num_gpus": built.num_gpus,
            "plan": plans.plan_to_dict(built)}


def job(model: ModelSpec, options: EmitOptions | None = None, **plan):
    return build_job(model, estimate(model, **plan), options)


def table1_runs() -> list[dict]:
    """Megatron-LM paper (Narayanan et al. 2021) Table 1 rows of validation/runs.yaml."""
    runs = yaml.safe_load((ROOT / "validation" / "runs.yaml").read_text())
    return [r for r in runs if r["group"] == "megatron-2021" and r["id"].startswith("megatron-t1-")]


def run_model(run: dict) -> ModelSpec:
    return ModelSpec(**run["model"])


def split_case(plan: dict) -> tuple[dict, int]:
    """A split case's plan with its stage_layers as a tuple, and its global batch: one micro-batch, two per
    pipeline chunk and data-parallel rank (two micro-batch groups of the interleaved schedule)."""
    plan = {**plan, "stage_layers": tuple(plan["stage_layers"])} if "stage_layers" in plan else plan
    return plan, 2 * plan.get("pp", 1) * plan.get("vpp", 1) * plan.get("dp", 1)


def pipeline_case_job(model, plan: dict):
    """(spec, job) of a pipeline split case of tests/tools/megatron_stages.py: `model` a catalog name or tiny()'s
    overrides, the plan on tp 1 and dp 1 (world = pp)."""
    from planner.inputs.loading import load_model_spec

    spec = load_model_spec(model) if isinstance(model, str) else tiny(**model)
    plan, gbs = split_case(plan)
    return spec, job(spec, **{"tp": 1, "dp": 1, "micro_batch_size": 1, "global_batch_size": gbs, **plan})


def shard_case_job(model: str, plan: dict):
    """(spec, job) of a case of tests/tools/megatron_shards.py: `model` a catalog name or a Hugging Face config under
    tests/, and unless the plan says otherwise the distributed optimizer (ZeRO 1) and sequence parallelism with
    tp > 1 (Megatron's MoE layers need it)."""
    from planner.inputs.loading import load_model_spec

    spec = load_model_spec(str(ROOT / model) if model.startswith("tests/") else model)
    plan, gbs = split_case(plan)
    plan = {"zero_stage": 1, "sequence_parallel": plan["tp"] > 1, **plan}
    return spec, job(spec, micro_batch_size=1, global_batch_size=gbs, **plan)
