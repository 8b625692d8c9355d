"""torchtitan 0.3.0 files: planner_job.py (a configuration module) and launch.sh.

Every emitted configuration runs against torchtitan 0.3.0's configuration schema (field names,
types, defaults and the checks torchtitan applies, transcribed with citations in
data/emit/torchtitan/titan_schema.py): CI cannot import torchtitan's loader (its llama3 package
imports triton). The same configurations went through torchtitan's own ConfigManager by hand
(data/emit/torchtitan/loader_check.py); loader_results.json holds what it read, and the schema must
read the same. Expected values below are hand arithmetic on the plan or come from torchtitan's
recipes; the two goldens are configuration modules written by hand (data/emit/torchtitan/README.md).
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from emit_support import DATA, tiny
from emit_support import job as support_job

from costmodel.flops import total_parameters
from costmodel.pipeline import chunk_layers
from planner.commands.main import main
from planner.emit import formats, render
from planner.errors import PlannerError
from planner.frameworks import torchtitan as titan
from planner.inputs.loading import load_model_spec
from planner.inputs.specs import ModelSpec

TT = DATA / "torchtitan"
CASES = json.loads((TT / "cases.json").read_text())
LOADER = json.loads((TT / "loader_results.json").read_text())
FLAVOR = {"llama3-8b": "8B", "llama3-70b": "70B", "llama3-405b": "405B", "debug": "debugmodel", "1b": "1B",
          "qwen3-30b-a3b": "30B-A3B", "moe-debug": "debugmodel_moe", "qwen3-0.6b": "0.6B", "qwen3-8b": "8B",
          "dsv3-debug": "debugmodel", "dsv3-16b": "16B", "dsv3-671b": "671B", "goss-debug": "debugmodel",
          "goss-20b": "20b", "gpt-oss-120b": "120b"}


def job(model: ModelSpec, options=None, **plan):
    """emit_support.job with torchtitan's loss, pipeline buffers and gathered sequence-parallel inputs unless the
    plan names them (the plan defaults, Megatron-LM's compiled vocab-parallel loss, freed buffers and sharded
    inputs, are not torchtitan's; the last two are refused: frameworks/base.py knob_violations)."""
    return support_job(model, options, **{"cross_entropy": "fused", "pipeline_buffers": "per_microbatch",
                                          "sp_gathered": True, **plan})


def _schema():
    spec = importlib.util.spec_from_file_location("titan_schema", TT / "titan_schema.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["titan_schema"] = module
    spec.loader.exec_module(module)
    return module


TS = _schema()


def model_of(name: str) -> ModelSpec:
    return ModelSpec(**CASES["models"][name]) if name in CASES["models"] else load_model_spec(name)


def case_job(case: dict):
    return job(model_of(case["model"]), **case["plan"])


def emitted(j) -> str:
    return render(j, "torchtitan")["torchtitan/planner_job.py"][0]


def checked(source: str, world: int) -> tuple[list[str], dict]:
    """Run the configuration against the schema; no errors allowed. Returns (warnings, parsed)."""
    errors, warnings, parsed = TS.check(TS.run(source), world)
    assert not errors, errors
    return warnings, parsed


# ---- goldens: hand-written configuration modules ------------------------------------------------

GOLDEN_CASES = [c for c in CASES["cases"] if c.get("golden")]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c["id"] for c in GOLDEN_CASES])
def test_emitted_config_equals_the_golden(case):
    j = case_job(case)
    golden = TS.run((TT / case["golden"]).read_text())
    assert TS.run(emitted(j)) == golden  # the whole Trainer.Config tree, recipe fields included
    checked((TT / case["golden"]).read_text(), j.num_gpus)


def test_golden_8b_fsdp_values():
    """Llama 3 8B, 8 GPUs: dp_shard 8 x 1 x 1 x 1 = 8; 32 / (1 x 8) = 4 accumulation steps; recipe llama3_8b's
    seq_len 8192, tokenizer ./assets/hf/Llama-3.1-8B and dataset c4 kept."""
    _, p = checked((TT / "llama3_8b_fsdp8.py").read_text(), 8)
    assert (p["dp_shard"], p["dp_replicate"], p["tp"], p["pp"]) == (8, 1, 1, 1)
    assert (p["local_batch_size"], p["global_batch_size"], p["grad_accum_steps"]) == (1, 32, 4)
    assert (p["flavor"], p["seq_len"], p["steps"], p["ac"], p["compile"]) == ("8B", 8192, 1000, "selective",
                                                                             ["model", "loss"])
    assert (p["param_dtype"], p["reduce_dtype"], p["hf_assets_path"], p["dataset"]) == (
        "bfloat16", "float32", "./assets/hf/Llama-3.1-8B", "c4")


def test_golden_70b_pipeline_values():
    """Llama 3 70B, 64 GPUs: 1 x 2 x 1 x 8 x 4 = 64; 64 / 2 = 32 sequences per pipeline as 32 micro-batches of
    1 in one Interleaved1F1B schedule (32 // 4 = 8 rounds), 1 accumulation step; 20 stages of 80 / 20 = 4
    layers, the embedding on the first and norm and output on the last."""
    _, p = checked((TT / "llama3_70b_tp8_pp4.py").read_text(), 64)
    assert (p["dp_shard"], p["tp"], p["pp"], p["sequence_parallel"]) == (2, 8, 4, True)
    assert (p["local_batch_size"], p["pp_microbatches"], p["grad_accum_steps"]) == (32, 32, 1)
    assert (p["schedule"], p["cuda_graphs"], p["reshard_after_forward"], p["ac"]) == (
        "Interleaved1F1B", False, "default", "full")
    assert [len(s) for s in p["stages"]] == [5] + [4] * 18 + [6]
    assert p["stages"][0][:2] == ["tok_embeddings", "layers.0"] and p["stages"][-1][-3:] == [
        "layers.79", "norm", "lm_head"]


# ---- the matrix: every case against the schema, values by hand arithmetic on the plan -----------


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_matrix_obeys_the_schema(case):
    j = case_job(case)
    p, plan = j.plan, case["plan"]
    warnings, v = checked(emitted(j), j.num_gpus)
    assert bool(warnings) == (p.grad_comm_dtype == "bf16")  # the one value the loader only warns about
    assert (v["dp_replicate"], v["dp_shard"]) == ((p.dp, 1) if p.zero_stage == 0 else (1, p.dp))
    assert (v["tp"], v["pp"], v["sequence_parallel"], v["flavor"]) == (p.tp, p.pp, p.sequence_parallel,
                                                                       FLAVOR[case["model"]])
    assert v["global_batch_size"] == p.global_batch_size == v["local_batch_size"] * p.dp * v["grad_accum_steps"]
    if p.pp > 1:  # one schedule per step: gbs / (mbs x dp) micro-batches of mbs
        assert (v["pp_microbatches"], v["grad_accum_steps"], v["pp_microbatch_size"]) == (
            p.global_batch_size // (p.micro_batch_size * p.dp), 1, p.micro_batch_size)
        assert v["schedule"] == ("Interleaved1F1B" if p.vpp > 1 else "1F1B") and not v["cuda_graphs"]
        assert [sum(m.startswith("layers.") for m in s) for s in v["stages"]] == list(chunk_layers(j.cm_model, p))
    else:
        assert v["local_batch_size"] == p.micro_batch_size
    # graphs off everywhere: refused with a pipeline or the all-to-all dispatcher's CPU synchronization, and not
    # what the plan was scored with elsewhere (emit/torchtitan.py graph_comment; an audit found them on)
    assert not v["cuda_graphs"]
    assert v["reshard_after_forward"] == ("never" if p.zero_stage == 3 and not p.zero3_reshard else "default")
    assert v["ac"] == {"none": "none", "op": "selective", "full": "full"}[p.recompute]
    assert (v["dtype"], v["param_dtype"]) == ("float32", "float32" if p.precision == "fp32" else "bfloat16")
    assert v["reduce_dtype"] == {"fp32": "float32", "bf16": "bfloat16"}[p.grad_comm_dtype]
    fused_ce = plan.get("cross_entropy", "vocab_parallel_fused") != "eager"
    compiled = plan.get("fused_elementwise", True)
    assert v["compile"] == (["model", "loss"] if fused_ce else ["model"]) * compiled
    assert v["loss"] == ("chunked" if fused_ce else "cross_entropy") and not v["async_tp"]
    moe = j.cm_model.moe is not None
    fp8 = [{"filter_fqns": ["lm_head"] + ["router.gate"] * moe, "recipe": "rowwise", "compiled": compiled}]
    assert v["float8"] == (fp8 if p.precision == "fp8" else [])
    # MXFP8 converts the Linear configs whose FQN contains one of fqns (mx.py): the attention and dense MLP
    # projections, not lm_head nor an MoE router's gate ("layers.N.moe.router.gate"), as the cost model prices them
    # and the shared experts where the model has them ("layers.N.moe.shared_experts.w1"), as torchtitan's
    # deepseek_v3_debugmodel_mxfp8 recipe converts them
    shared = ["shared_experts"] if j.cm_model.moe and j.cm_model.moe.shared_ffn_hidden_size else []
    assert v["mxfp8"] == ([{"fqns": ["attention"] + shared + ["feed_forward"], "compiled": compiled}]
                          if p.precision == "mxfp8" else [])
    grouped = {"fp8": "float8", "mxfp8": "mxfp8"}.get(p.precision)
    # padded per expert to 16 rows for FP8 (Float8GroupedExpertsConverter.PAD_MULTIPLE) and 128 for MXFP8, what
    # torchao's SM100 CuTeDSL quantization kernel needs (torchtitan's deepseek_v3 MXFP8 recipe sets 128 for it)
    pad = {"fp8": 16, "mxfp8": 128}.get(p.precision)
    assert v["grouped_experts"] == ([{"format": grouped, "compiled": compiled, "pad": pad}] if moe and grouped else [])
    assert (v["seq_len"], v["steps"]) == (j.model.seq_length, 1000)


def test_hand_split_of_uneven_plans():
    """70B with the plan's stage_layers 19, 21, 21, 19; 405B's 126 layers on 16 stages: 126 = 16 x 7 + 14,
    the 14 extra layers on the middle stages (costmodel/pipeline.py), so 7, 8 x 14, 7."""
    for cid, layers in (("70b-pp4-uneven", [19, 21, 21, 19]), ("405b-tp8-pp16-fp8", [7] + [8] * 14 + [7])):
        case = next(c for c in CASES["cases"] if c["id"] == cid)
        _, v = checked(emitted(case_job(case)), case_job(case).num_gpus)
        assert [sum(m.startswith("layers.") for m in s) for s in v["stages"]] == layers


# ---- agreement with torchtitan's own loader (recorded by loader_check.py) ------------------------

SHARED = ("dp_replicate", "dp_shard", "tp", "pp", "cp", "global_batch_size", "local_batch_size", "grad_accum_steps",
          "pp_microbatches", "flavor", "sequence_parallel", "schedule", "reshard_after_forward", "seq_len", "steps",
          "dtype", "param_dtype", "reduce_dtype", "cuda_graphs", "ac", "compile", "loss", "hf_assets_path", "stages",
          "ep", "efsdp")


def loader_sources() -> list[tuple[str, str, int]]:
    out = []
    for case in CASES["cases"]:
        j = case_job(case)
        out.append((case["id"], emitted(j), j.num_gpus))
        if case.get("golden"):
            out.append((f"golden:{case['golden']}", (TT / case["golden"]).read_text(), j.num_gpus))
    return out


@pytest.mark.parametrize("cid,source,world", loader_sources(), ids=lambda x: x if isinstance(x, str) and
                         len(x) < 60 else "")
def test_schema_reads_what_torchtitans_loader_read(cid, source, world):
    """If this fails after an emitter change, rerun loader_check.py --write with torchtitan 0.3.0."""
    warnings, v = checked(source, world)
    seen = LOADER["cases"][cid]
    assert {k: v[k] for k in SHARED} == {k: seen[k] for k in SHARED}
    assert bool(warnings) == bool(seen["loader_warnings"])
    lowp, names = lowp_linears(v)
    assert seen["float8_linears"] == (lowp if v["float8"] else 0)
    assert seen["mxfp8_linears"] == (lowp if v["mxfp8"] else 0)
    assert not seen["lm_head_float8"]
    assert set(seen["lowp_names"]) == (names if v["float8"] or v["mxfp8"] else set())
    moe = v["model"] in ("deepseek_v3", "gpt_oss") or v["flavor"] in TS.QWEN3_MOE_CONFIGS
    # the routed experts' grouped GEMMs quantized, behind a dispatcher that pads each expert's rows (utils.py)
    grouped = {"float8": ["Float8GroupedExperts"], "mxfp8": ["MXFP8GroupedExperts"]}
    plain = "GptOssGroupedExperts" if v["model"] == "gpt_oss" else "GroupedExperts"  # gpt-oss's biased subclass
    assert seen["expert_classes"] == (
        grouped[v["grouped_experts"][0]["format"]] if v["grouped_experts"] else [plain] * moe)
    assert seen["dispatcher_pads"] == ([v["grouped_experts"][0]["pad"]] if v["grouped_experts"] else [0] * moe)
    assert seen["dispatchers"] == (["TorchAOTokenDispatcher"] if v["grouped_experts"] else
                                   ["AllToAllTokenDispatcher"] if moe else [])


def lowp_linears(v: dict) -> tuple[int, set]:
    """The linears the FP8 and MXFP8 converters turn low precision (never lm_head nor an MoE router's gate), and
    their names' last parts. Llama 3, Qwen3: per layer wqkv (fused) and wo, and w1, w2, w3 where the layer's MLP
    is dense. DeepSeek-V3: MLA's wq (wq_a and wq_b with a query latent), wkv_a, wkv_b and wo, and w1, w2, w3 of
    each layer's dense feed-forward or shared experts."""
    if v["model"] == "gpt_oss":  # no low precision for it (frameworks/torchtitan.py gpt_oss_precision)
        return 0, set()
    if v["model"] == "deepseek_v3":
        m = TS.DEEPSEEK_V3_CONFIGS[v["flavor"]]
        query = {"wq_a", "wq_b"} if m.q_lora_rank else {"wq"}
        return (len(query) + 3 + 3) * m.n_layers, query | {"wkv_a", "wkv_b", "wo", "w1", "w2", "w3"}
    configs = TS.LLAMA3_CONFIGS if v["model"] == "llama3" else {**TS.QWEN3_CONFIGS, **TS.QWEN3_MOE_CONFIGS}
    moe = v["flavor"] in TS.QWEN3_MOE_CONFIGS
    return (2 if moe else 5) * configs[v["flavor"]].n_layers, {"wqkv", "wo"} | (set() if moe else {"w1", "w2", "w3"})


def test_planner_counts_torchtitans_parameters():
    """torchtitan's models built on the meta device (loader_check.py) against the cost model's count."""
    for name, cid in (("llama3-8b", "8b-fsdp8"), ("llama3-70b", "70b-tp8-dp8"), ("llama3-405b", "405b-tp8-pp16-fp8"),
                      ("1b", "1b-fsdp8"), ("debug", "debug-tp2-dp2")):
        assert total_parameters(model_of(name).to_model()) == LOADER["cases"][cid]["params"], name


def test_planner_counts_torchtitans_moe_parameters():
    """The Qwen3-MoE models as torchtitan built them: planner's count plus the per-head query and key
    RMSNorm weights, which the cost model does not count (types.Model.qk_norm): 2 x head_dim 128 per
    layer, 48 layers for 30B-A3B (12,288), 8 for the debug model (2,048)."""
    for name, cid, layers in (("qwen3-30b-a3b", "q30-fsdp16-ep8", 48), ("moe-debug", "moe-debug-cp2-ep4", 8)):
        assert total_parameters(model_of(name).to_model()) + layers * 2 * 128 == LOADER["cases"][cid]["params"]
        assert LOADER["cases"][cid]["moe_layers"] == layers
    # dense Qwen3, the same norms: 0.6B 28 layers (596,049,920 built, the card's 0.6B), 8B 36 (8,190,735,360: 8.2B)
    for name, cid, layers in (("qwen3-0.6b", "qwen3-0.6b-fsdp8", 28), ("qwen3-8b", "qwen3-8b-tp2-pp2-fp8", 36)):
        assert total_parameters(model_of(name).to_model()) + layers * 2 * 128 == LOADER["cases"][cid]["params"]
        assert LOADER["cases"][cid]["moe_layers"] == 0


MOE_CASES = [c for c in CASES["cases"] if model_of(c["model"]).moe is not None]


@pytest.mark.parametrize("case", MOE_CASES, ids=[c["id"] for c in MOE_CASES])
def test_torchtitan_splits_experts_as_planned(case):
    """The first layer's routed-expert w1 after torchtitan's own parallelize (loader_check.py): experts over
    ep, each expert's FFN over etp (etp = tp without EP, 1 with it), the hidden size whole; the expert
    data-parallel degree, dp_replicate x the expert FSDP degree dp_shard x cp x tp / ep, is the cost model's
    expert_dp (under DDP with TP, dp_replicate 4 x efsdp 1: replicas, which ZeRO 0 does not shard)."""
    p, moe, hidden = case_job(case).plan, model_of(case["model"]).moe, model_of(case["model"]).hidden_size
    seen = LOADER["cases"][case["id"]]
    fused = 2 if titan.family(model_of(case["model"]).to_model()) == "gpt_oss" else 1  # gate and up in mlp1 (moe.py)
    assert seen["expert_w1_local"] == [moe.num_experts // p.ep, fused * moe.ffn_hidden_size // p.etp, hidden]
    assert (seen["efsdp"] * seen["dp_replicate"] if p.ep > 1 else seen["efsdp"]) == (p.expert_dp if p.ep > 1 else None)
    assert seen["experts"] == [moe.num_experts] and not seen["cuda_graphs"]


def test_flavour_table_matches_torchtitans():
    """planner's flavour table (frameworks/torchtitan.py) against the schema's transcription."""
    for f in titan.LLAMA3_FLAVOURS:
        t = TS.LLAMA3_CONFIGS[f.name]
        assert (f.num_layers, f.hidden_size, f.num_attention_heads, f.num_kv_heads, f.ffn_hidden_size,
                f.vocab_size, f.tie_embeddings) == (t.n_layers, t.dim, t.n_heads, t.n_kv_heads, t.hidden_dim,
                                                    t.vocab_size, t.enable_weight_tying)
        assert f.recipe in TS.MODULES["torchtitan.models.llama3.config_registry"]
    for f in titan.QWEN3_FLAVOURS:
        t = TS.QWEN3_CONFIGS[f.name]
        assert (f.num_layers, f.hidden_size, f.num_attention_heads, f.num_kv_heads, f.head_dim, f.ffn_hidden_size,
                f.vocab_size, f.tie_embeddings, f.rope_theta, f.max_seq_len) == (
            t.n_layers, t.dim, t.n_heads, t.n_kv_heads, t.head_dim, t.hidden_dim, t.vocab_size,
            t.enable_weight_tying, t.rope_theta, t.max_seq_len)
        assert f.recipe in TS.MODULES["torchtitan.models.qwen3.config_registry"] and f.qk_norm == "learned"
    for f in titan.DEEPSEEK_V3_FLAVOURS:
        t = TS.DEEPSEEK_V3_CONFIGS[f.name]
        assert (f.num_layers, f.hidden_size, f.num_attention_heads, f.num_kv_heads, f.ffn_hidden_size, f.vocab_size,
                f.tie_embeddings, f.experts, f.shared_ffn, f.dense_layers, f.mla[0], f.max_seq_len) == (
            t.n_layers, t.dim, t.n_heads, t.n_kv_heads, t.dense_hidden_dim, t.vocab_size, t.enable_weight_tying,
            (t.num_experts, t.top_k, t.moe_hidden_dim), t.moe_hidden_dim * t.num_shared_experts, t.n_dense_layers,
            t.q_lora_rank, t.max_seq_len)
        assert f.recipe in TS.MODULES["torchtitan.models.deepseek_v3.config_registry"]
        assert (f.mla[1:], f.head_dim, f.rope_scaling, f.norm_epsilon) == ((512, 128, 64, 128), 192, "yarn x40", 1e-5)
    for f in titan.GPT_OSS_FLAVOURS:
        t = TS.GPT_OSS_CONFIGS[f.name]
        assert (f.num_layers, f.hidden_size, f.num_attention_heads, f.num_kv_heads, f.head_dim, f.vocab_size,
                f.tie_embeddings, f.experts, f.max_seq_len) == (
            t.n_layers, t.dim, t.n_heads, t.n_kv_heads, t.head_dim, t.vocab_size, t.enable_weight_tying,
            (t.num_experts, t.top_k, t.moe_hidden_dim), t.max_seq_len)
        assert f.recipe in TS.MODULES["torchtitan.models.gpt_oss.config_registry"] and f.ffn_hidden_size is None
    for f in titan.QWEN3_MOE_FLAVOURS:
        t = TS.QWEN3_MOE_CONFIGS[f.name]
        assert (f.num_layers, f.hidden_size, f.num_attention_heads, f.num_kv_heads, f.head_dim, f.vocab_size,
                f.tie_embeddings, f.experts, f.rope_theta, f.max_seq_len) == (
            t.n_layers, t.dim, t.n_heads, t.n_kv_heads, t.head_dim, t.vocab_size, t.enable_weight_tying,
            (t.num_experts, t.top_k, t.moe_hidden_dim), t.rope_theta, t.max_seq_len)
        assert f.recipe in TS.MODULES["torchtitan.models.qwen3.config_registry"] and f.ffn_hidden_size is None


# ---- refusals ------------------------------------------------------------------------------------

L8 = "llama3-8b"


def refused(model: ModelSpec, **plan) -> str:
    with pytest.raises(PlannerError) as err:
        render(job(model, **plan), "torchtitan")
    text = str(err.value)
    assert "\n" not in text and text.startswith("torchtitan would reject this plan: "), text
    return text


@pytest.mark.parametrize("change,plan,needle", [
    ({"num_layers": 30}, {"dp": 8, "zero_stage": 3},
     "closest, llama3 flavour 8B, differs in num_layers 30 (torchtitan 32)"),
    ({"rope_theta": 10000.0}, {"dp": 8, "zero_stage": 3}, "rope_theta 10000 (torchtitan 500000)"),
    ({"seq_length": 8196}, {"dp": 8, "zero_stage": 3}, "ChunkedLossWrapper splits seq_len 8196 into 8"),
    ({"seq_length": 262144}, {"dp": 8, "zero_stage": 3}, "exceeds the llama3 8B RoPE max_seq_len 131072"),
    ({"seq_length": 8196}, {"tp": 8, "sequence_parallel": True, "zero_stage": 3}, "seq_len 8196 not divisible by 8"),
    ({}, {"dp": 8, "zero_stage": 1}, "ZeRO stage 1"),
    ({}, {"pp": 2, "dp": 4, "zero_stage": 0}, "ZeRO stage 0"),
    ({}, {"dp": 8, "zero_stage": 3, "recompute": "selective"}, "recompute selective"),
    ({}, {"dp": 8, "zero_stage": 3, "precision": "fp16"}, "precision fp16"),
    ({}, {"dp": 8, "zero_stage": 3, "grad_dtype": "int8"}, "gradient dtype int8"),
    ({}, {"dp": 8, "zero_stage": 3, "overlap_dp_comm": False}, "DP gradient sync overlapped off: torchtitan's FSDP2"),
    ({}, {"dp": 8, "zero_stage": 3, "flash_attention": False}, "flash_attention off is not a setting"),
    ({}, {"dp": 8, "zero_stage": 3, "zero3_gather_unit": "tensor"}, "zero3_gather_unit tensor"),
    ({}, {"dp": 8, "zero_stage": 3, "grad_reduce": "allreduce"}, "grad_reduce allreduce"),
    ({}, {"pp": 4, "vpp": 2, "zero_stage": 1, "global_batch_size": 9}, "9 micro-batches not a multiple of 2 rounds"),
    # config/configs.py (release/0.3): no activation offload, no fp8 parameter gather, no bf16 end layers
    ({}, {"dp": 8, "zero_stage": 3, "offload_layers": 4}, "torchtitan has no activation offload"),
    ({}, {"dp": 8, "zero_stage": 3, "precision": "fp8", "fp8_recipe": "rowwise", "weight_casts": "use",
          "lowp_param_gather": True}, "all-gathers parameters in bf16"),
    ({}, {"dp": 8, "zero_stage": 3, "precision": "fp8", "fp8_recipe": "rowwise", "weight_casts": "use",
          "bf16_layers_start": 2, "bf16_layers_end": 2}, "keep no first/last layers in bf16"),
])
def test_rule_refuses(change, plan, needle):
    model = load_model_spec(L8).model_copy(update=change)
    assert needle in refused(model, **plan)


Q30 = "qwen3-30b-a3b"


@pytest.mark.parametrize("plan,needle", [
    ({"dp": 8, "ep": 2, "zero_stage": 0}, "expert parallelism borrows its ranks from FSDP's data_parallel_shard"),
    ({"tp": 2, "dp": 4, "ep": 2, "etp": 2, "zero_stage": 3}, "with ep 2 etp must be 1, got 2"),
    ({"tp": 2, "dp": 4, "zero_stage": 3, "sequence_parallel": True}, "etp must equal tp 2, got 1"),
    ({"tp": 2, "dp": 4, "ep": 8, "zero_stage": 3}, "MoE layers under tp > 1 as sequence parallel"),
])
def test_moe_rule_refuses(plan, needle):
    assert needle in refused(load_model_spec(Q30), global_batch_size=8, **plan)


def test_hugging_face_qwen3_configs_are_torchtitans_flavours():
    """The released config.json of Qwen/Qwen3-8B and Qwen/Qwen3-30B-A3B (tests/data/hf_configs) import to
    exactly torchtitan's qwen3 8B and 30B-A3B flavours."""
    for file, name in (("qwen3-8b.json", "8B"), ("qwen3-30b-a3b.json", "30B-A3B")):
        flavour, why = titan.match_flavour(load_model_spec(str(DATA.parent / "hf_configs" / file)).to_model())
        assert (flavour.family, flavour.name) == ("qwen3", name), why


def test_a_flavour_fixes_the_norm_epsilon_and_rope_on_every_layer():
    """torchtitan 0.3.0 builds Llama 3's RMSNorms with eps 1e-5 (models/common/nn_modules.py RMSNorm.Config
    default) and Qwen3's with 1e-6 (models/qwen3/__init__.py _EPS), and RoPE on every layer: a model stating
    another epsilon, or NoPE layers, is not the flavour (its launch would train another model); one stating
    none takes the flavour's."""
    llama = load_model_spec("llama3-8b")
    assert titan.match_flavour(llama.to_model())[0] is not None
    assert titan.match_flavour(llama.model_copy(update={"norm_epsilon": 1e-5}).to_model())[0] is not None
    flavour, why = titan.match_flavour(llama.model_copy(update={"norm_epsilon": 1e-6}).to_model())
    assert flavour is None and "norm_epsilon 1e-06 (torchtitan 1e-05)" in why
    flavour, why = titan.match_flavour(llama.model_copy(update={"nope_every": 4}).to_model())
    assert flavour is None and "nope_every 4 (torchtitan 0)" in why
    qwen = load_model_spec(str(DATA.parent / "hf_configs" / "qwen3-8b.json"))
    assert qwen.norm_epsilon == 1e-6 and titan.match_flavour(qwen.to_model())[0].name == "8B"


def test_moe_flavour_mismatch_is_named():
    """torchtitan's 235B-A22B flavour has RoPE theta 5e6, the base model's config.json 1e6; the catalog's
    DeepSeek-V3 trains a multi-token prediction layer, which planner does not write for torchtitan, and states
    its checkpoint's RMSNorm epsilon 1e-6, where torchtitan's 671B flavour builds 1e-5. Refused as a layout rule,
    so the search leaves them out."""
    text = refused(load_model_spec("qwen3-235b-a22b"), dp=8, ep=8, zero_stage=3, global_batch_size=8)
    assert "cover its Qwen3-MoE, DeepSeek-V3 and gpt-oss flavours only: the closest, qwen3 235B-A22B, differs in " \
           "rope_theta 1e+06 (torchtitan 5e+06); use Megatron-LM" in text
    model = load_model_spec("deepseek-v3")
    text = refused(model, dp=8, ep=8, zero_stage=3, global_batch_size=8)
    assert "the closest, deepseek_v3 671B, differs in mtp_layers 1 (torchtitan 0), norm_epsilon 1e-06 (torchtitan " \
           "1e-05)" in text
    assert titan.moe_flavour(model.to_model(), job(model, dp=8, ep=8, zero_stage=3, global_batch_size=8).plan)
    assert titan.moe_flavour(load_model_spec(Q30).to_model(), job(load_model_spec(Q30), dp=8).plan) is None


def test_no_flavour_names_the_closest():
    text = refused(tiny(), dp=8, zero_stage=3)
    assert "Llama 4 or Kimi models) have no 'tiny': the closest, llama3 flavour" in text
    assert "normalization layernorm (torchtitan rmsnorm)" in text


def test_deepseek_models_are_torchtitans_flavours_but_for_what_they_state():
    """DeepSeek-V3 without its MTP layer and at torchtitan's epsilon is the 671B flavour (MLA's queries and keys
    128 nope + 64 rope = 192 wide per head, not hidden_size / heads = 56); DeepSeek-V2-Lite's config.json is the
    16B flavour's shape but for its epsilon 1e-6; a model with a capacity factor has no flavour."""
    v3 = load_model_spec("deepseek-v3").model_copy(update={"mtp_layers": 0, "norm_epsilon": 1e-5})
    assert titan.match_flavour(v3.to_model())[0].name == "671B"
    lite = load_model_spec(str(DATA.parent / "hf_configs" / "deepseek-v2-lite.json"))
    flavour, why = titan.match_flavour(lite.to_model())
    assert flavour is None and why.endswith("the closest, deepseek_v3 flavour 16B, differs in norm_epsilon 1e-06 "
                                            "(torchtitan 1e-05)")
    dropping = v3.model_copy(update={"moe": v3.moe.model_copy(update={"capacity_factor": 1.0})})
    assert "experts routed experts with a capacity factor" in titan.match_flavour(dropping.to_model())[1]


def test_tied_weights_with_pipeline_refused():
    assert "weight tying is not supported with pipeline parallelism" in refused(model_of("1b"), pp=2, zero_stage=1,
                                                                                 global_batch_size=8)


def test_eager_loss_takes_any_sequence_length():
    model = load_model_spec(L8).model_copy(update={"seq_length": 8196})
    j = job(model, dp=8, zero_stage=3, cross_entropy="eager", grad_dtype="fp32")
    assert checked(emitted(j), 8)[1]["loss"] == "cross_entropy"


def test_all_means_deepspeed_and_megatron():
    assert formats("all") == ["deepspeed", "megatron"] and formats("torchtitan") == ["torchtitan"]


# ---- the module and launch.sh --------------------------------------------------------------------


def test_config_imports_only_torchtitan():
    tree = ast.parse(emitted(job(load_model_spec(L8), dp=8, zero_stage=3, precision="fp8", recompute="full",
                                 weight_casts="use", fp8_recipe="rowwise")))
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert modules <= set(TS.MODULES) and not any(isinstance(n, ast.Import) for n in ast.walk(tree))
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef)] == ["planner_job"]


def test_launch_sh_runs_torchrun_with_the_job(tmp_path):
    """A stand-in torchrun on PATH records what launch.sh passes (torch/distributed/run.py flags)."""
    j = case_job(GOLDEN_CASES[1])  # 64 GPUs, 8 nodes of 8
    out = render(j, "torchtitan")
    script = tmp_path / "torchtitan" / "launch.sh"
    script.parent.mkdir()
    script.write_text(out["torchtitan/launch.sh"][0])
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert out["torchtitan/launch.sh"][1] and "set -euo pipefail" in out["torchtitan/launch.sh"][0]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$PYTHONPATH" "$@" > "$RECORD"\n')
    (bin_dir / "torchrun").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RECORD": str(tmp_path / "args"),
           "NODE_RANK": "3", "MASTER_ADDR": "node-0"}
    env.pop("PYTHONPATH", None)
    subprocess.run(["bash", str(script), "--training.steps", "5"], check=True, env=env)
    args = (tmp_path / "args").read_text().splitlines()
    assert args[0] == str(script.parent)  # planner_job.py importable
    assert " ".join(args[1:]) == (
        "--nproc_per_node 8 --nnodes 8 --node_rank 3 --master_addr node-0 --master_port 29500 --local-ranks-filter 0 "
        "--role rank --tee 3 -m torchtitan.train --module planner_job --config planner_job --training.steps 5")


def test_readme_says_how_to_launch():
    j = case_job(GOLDEN_CASES[0])
    text = render(j, "torchtitan")["README.txt"][0]
    assert "torchtitan 0.3.0" in text and "--repo_id meta-llama/Llama-3.1-8B --assets tokenizer" in text
    assert "NODE_RANK=0 bash <this folder>/torchtitan/launch.sh" in text
    # what the files were checked against, and what a user supplies (an audit found neither said): the dataset and
    # the gated tokenizer; torchao for float8 (components/quantization/float8.py raises without it, and an older
    # one trains in bf16 after a warning)
    assert "Written for\n  torchtitan: torchtitan 0.3.0 (PyPI; pytorch/torchtitan release/0.3 @ 4f9e9a47" in text
    assert "gated models need a Hugging Face token" in text and "torchao" not in text
    fp8 = render(case_job(next(c for c in CASES["cases"] if c["id"] == "8b-fp8")), "torchtitan")["README.txt"][0]
    assert "torchtitan: torchao 0.9 or newer for float8" in fp8


def test_readme_says_when_torchtitan_reduces_otherwise_than_priced():
    """torchtitan's data_parallel_replicate (ZeRO 0) all-reduces after every micro-batch (its trainer keeps the
    gradient sync on): a plan scored with one all-reduce per step (grad_sync buckets) says how to re-score;
    one scored with grad_sync microbatch, or with a single micro-batch, does not."""
    model = load_model_spec("llama3-8b")
    def readme(**plan):
        return " ".join(render(job(model, dp=8, zero_stage=0, **plan), "torchtitan")["README.txt"][0].split())
    note = "re-score with planner estimate ... --grad-sync microbatch"
    assert note in readme(global_batch_size=32)  # mbs 1: 4 micro-batches per rank
    assert note not in readme(global_batch_size=32, grad_sync="microbatch")
    assert note not in readme(global_batch_size=8)


# ---- the commands ------------------------------------------------------------------------------------


def test_suggest_emits_torchtitan(tmp_path, capsys):
    out = tmp_path / "launch"
    code = main(["suggest", "llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "32", "--framework", "torchtitan",
                 "--emit", "torchtitan", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == ["README.txt", "torchtitan/launch.sh", "torchtitan/planner_job.py"]
    assert os.access(out / "torchtitan" / "launch.sh", os.X_OK)
    subprocess.run(["bash", "-n", str(out / "torchtitan" / "launch.sh")], check=True)
    _, v = checked((out / "torchtitan" / "planner_job.py").read_text(), 8)
    assert (v["flavor"], v["global_batch_size"], v["tp"] * v["pp"] * v["dp_replicate"] * v["dp_shard"]) == ("8B", 32, 8)


def test_emit_format_torchtitan(tmp_path, capsys):
    code = main(["estimate", "llama3-70b", "dgx-h100", "--gpus", "64", "--tp", "8", "--pp", "4", "--vpp", "5",
                 "--gbs", "64", "--zero", "1", "--recompute", "full", "--sequence-parallel",
                 "--pipeline-buffers", "per_microbatch", "--sp-gathered", "--json"])  # as torchtitan runs it
    plan = capsys.readouterr().out
    assert code == 0
    (tmp_path / "plan.json").write_text(plan)
    code = main(["emit", str(tmp_path / "plan.json"), "--format", "torchtitan", "--out", str(tmp_path / "o")])
    assert code == 0, capsys.readouterr().err
    _, v = checked((tmp_path / "o" / "torchtitan" / "planner_job.py").read_text(), 64)
    assert (v["flavor"], v["schedule"], len(v["stages"]), v["pp_microbatches"]) == ("70B", "Interleaved1F1B", 20, 32)


def test_planner_counts_torchtitans_deepseek_parameters():
    """torchtitan's DeepSeek-V3 flavours as its loader built them: exactly the cost model's count (MLA's latent
    norms, the routers, shared experts and the dense first layers counted by both; no query/key norms): the 16B
    flavour (DeepSeek-V2-Lite's shape, 15.7B on its card) and 671B (the DeepSeek-V3 report's 671B main model)."""
    for name, cid, moe_layers in (("dsv3-debug", "dsv3-debug-fsdp4-ep4", 5), ("dsv3-16b", "dsv3-16b-pp2-ep8-fp8", 26),
                                  ("dsv3-671b", "dsv3-671b-pp4-ep16", 58)):
        assert total_parameters(model_of(name).to_model()) == LOADER["cases"][cid]["params"], name
        assert LOADER["cases"][cid]["moe_layers"] == moe_layers
    assert round(LOADER["cases"]["dsv3-16b-pp2-ep8-fp8"]["params"] / 1e9, 1) == 15.7
    assert round(LOADER["cases"]["dsv3-671b-pp4-ep16"]["params"] / 1e9) == 671


def test_torchtitan_refuses_what_planner_refuses():
    """loader_check.py wrote these plans without planner's rules and gave them to torchtitan 0.3.0."""
    seen = LOADER["refusals"]
    l8 = load_model_spec(L8)
    assert "exceeds attention RoPE maximum" in seen["seq-262144"]
    refused(l8.model_copy(update={"seq_length": 262144}), dp=8, zero_stage=3)
    assert "ChunkedLossWrapper sequence length must be divisible by num_chunks" in seen["seq-8196-chunked-loss"]
    refused(l8.model_copy(update={"seq_length": 8196}), dp=8, zero_stage=3)
    assert "Weight tying is not supported with Pipeline Parallel" in seen["1b-tied-pp2"]
    refused(model_of("1b"), pp=2, zero_stage=1, global_batch_size=8)
    assert "CUDA graphs do not support pipeline parallelism" in seen["pp2-cuda-graphs-on"]
    assert "The product of mesh_sizes" in seen["moe-ddp8-ep2"]
    refused(load_model_spec(Q30), dp=8, ep=2, zero_stage=0, global_batch_size=8)
    assert "CUDA graphs support only expert parallel token dispatcher" in seen["moe-ep8-cuda-graphs-on"]
    assert "disable_cuda_graphs=True" in emitted(job(load_model_spec(Q30), dp=8, ep=8, zero_stage=3,
                                                     global_batch_size=8, grad_dtype="fp32"))
    assert "Variable-length attention CP is not yet supported" in seen["goss-cp2"]
    refused(model_of("goss-20b"), cp=2, dp=4, ep=4, zero_stage=3, global_batch_size=8, rope_fusion=True)
    assert "exceeds attention RoPE maximum supported sequence length 16384" in seen["dsv3-seq-32768"]
    assert "exceeds the deepseek_v3 16B RoPE max_seq_len 16384" in refused(
        model_of("dsv3-16b").model_copy(update={"seq_length": 32768}), dp=8, ep=8, zero_stage=3, global_batch_size=8)
    # planner's rules were narrower than 0.3.0's here once (README.md): seq_len 8200 at tp 8 with sequence
    # parallelism, which trainer.py accepts (8200 % 8), is written now; DDP with TP is a case of cases.json
    assert seen["seq-8200-tp8-sp"] == "accepted"
    assert "tensor_parallel_degree=8" in emitted(job(load_model_spec(L8).model_copy(update={"seq_length": 8200}),
                                                     tp=8, sequence_parallel=True, zero_stage=3, global_batch_size=8))


@pytest.mark.parametrize("model_name,cluster_name,gpus,gbs", [("llama3-8b", "dgx-h100", 16, 64),
                                                              ("llama3-70b", "dgx-h100", 64, 128),
                                                              ("qwen3-30b-a3b", "dgx-h100", 32, 256),
                                                              ("dsv3-16b", "dgx-h100", 32, 256),
                                                              ("gpt-oss-120b", "dgx-h100", 64, 256)])
def test_every_suggested_plan_is_emittable(model_name, cluster_name, gpus, gbs):
    """As tests/test_search_emit_agree.py for the others: each of `suggest --framework torchtitan`'s top
    plans for a model torchtitan has a flavour for is written, and obeys the schema."""
    from planner.analysis import score
    from planner.emit import build_job
    from planner.inputs import loading
    from planner.search import suggest
    from planner.search.space import SearchSpec

    if model_name in CASES["models"]:
        model = model_of(model_name).model_copy(update={"global_batch_size": gbs})
    else:
        model = loading.load_model_spec(model_name, global_batch_size=gbs)
    cluster = loading.build_cluster(loading.load_cluster_spec(cluster_name), gpus)
    result = suggest.run(SearchSpec(model.to_model(), cluster, gbs, frameworks=("torchtitan",)),
                         suggest.Options(top_k=5))
    assert len(result.ranked) == 5
    for ranked in result.ranked:
        j = build_job(model, score.to_dict(score.score(model, cluster, ranked.plan)))
        checked(emitted(j), gpus)


def test_suggest_says_when_torchtitan_cannot_build_the_model(capsys):
    """MPT-7B (ALiBi, LayerNorm, GELU) is no torchtitan flavour: suggest --framework torchtitan ranks plans by
    torchtitan's rules but warns that emit refuses them; Llama 3 8B, its own flavour, gets no such warning,
    nor does a search over every framework (Megatron-LM builds any GPT)."""
    def warnings(*argv):
        assert main(["suggest", *argv, "--top", "1", "--json"]) == 0
        return [w for w in json.loads(capsys.readouterr().out)["warnings"] if "launch files cannot build" in w]

    (line,) = warnings("mpt-7b", "dgx-h100", "--gpus", "8", "--gbs", "64", "--framework", "torchtitan")
    assert "have no 'mpt-7b'" in line and "--format torchtitan` refuses" in line
    assert warnings("llama3-8b", "dgx-h100", "--gpus", "8", "--gbs", "32", "--framework", "torchtitan") == []
    assert warnings("mpt-7b", "dgx-h100", "--gpus", "8", "--gbs", "64") == []


def comment_text(source: str) -> str:
    """The module's comment lines joined (comments() wraps them at 98 characters)."""
    return " ".join(line[2:] for line in source.splitlines() if line.startswith("# "))


def test_the_router_comment_says_whose_router_trains():
    """The launch builds the flavour's router (models/deepseek_v3/__init__.py _671b: sigmoid, 8 groups of which 4,
    x2.5; every torchtitan MoE balanced by an expert bias, load_balance_coeff 1e-3): the 671B case's model states
    exactly that; the catalog's Qwen3-30B-A3B states an auxiliary loss torchtitan's qwen3 MoE does not train."""
    text = comment_text(emitted(case_job(next(c for c in CASES["cases"] if c["id"] == "dsv3-671b-pp4-ep16"))))
    assert "The router is torchtitan's 671B flavour's: sigmoid, 4 of 8 expert groups, weights x2.5, balanced by" in text
    assert "the model states" not in text
    q30 = load_model_spec(Q30)
    assert q30.moe.aux_loss_coeff
    text = comment_text(emitted(job(q30, dp=8, ep=8, zero_stage=3, global_batch_size=8, grad_dtype="fp32")))
    assert "30B-A3B flavour's: topk_softmax, weights x1" in text
    assert "the model states topk_softmax, weights x1, an auxiliary loss of 0.001" in text


def test_a_run_shorter_than_the_recipes_warm_up_is_said():
    """deepseek_v3_671b warms up over 2000 steps (config_registry.py @4f9e9a47); the emitter writes 1000 without a
    training budget, all warm-up: the file says so. Llama 3 8B's recipe takes the default 200: nothing said."""
    text = emitted(case_job(next(c for c in CASES["cases"] if c["id"] == "dsv3-671b-pp4-ep16")))
    assert "warms the learning rate up over 2000 steps, and these 1000 steps are all warm-up" in comment_text(text)
    assert "warm-up" not in emitted(job(load_model_spec(L8), dp=8, zero_stage=3, global_batch_size=8))


def test_a_gated_shared_expert_is_refused():
    model = model_of("dsv3-16b")
    gated = model.model_copy(update={"moe": model.moe.model_copy(update={"shared_expert_gate": True})})
    assert "no gate on the shared experts' output" in refused(gated, dp=8, ep=8, zero_stage=3, global_batch_size=8)


ROUTER_KINDS = {("softmax", True): "topk_softmax", ("softmax", False): "softmax_topk", ("sigmoid", True): "sigmoid"}


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_flavour_table_agrees_with_the_configs_torchtitan_built(case):
    """planner's flavour of each case's model against the model config torchtitan 0.3.0's registry built
    (loader_check.py architecture_facts): RMSNorm epsilon, RoPE theta, scaling and cache length, and the router
    (a softmax renormalised over the k is a softmax over the k chosen logits, topk_softmax; not renormalised,
    softmax_topk), every MoE balanced by load_balance_coeff 1e-3."""
    flavour, _ = titan.match_flavour(model_of(case["model"]).to_model())
    seen = LOADER["cases"][case["id"]]
    theta, scaling, factor, max_seq_len = seen["rope"]
    assert (seen["norm_eps"], theta, max_seq_len) == (flavour.norm_epsilon, flavour.rope_theta, flavour.max_seq_len)
    expected = {"none": ("none", 1.0), titan.LLAMA31_SCALING: ("llama", 1.0), titan.DSV3_ROPE: ("yarn", 40.0),
                "yarn x32": ("yarn", 32)}
    assert (scaling, factor) == expected[flavour.rope_scaling]
    if flavour.experts[0]:
        kind, norm, scale, groups, limited, balance = seen["router"]
        assert (ROUTER_KINDS[kind, norm], groups, limited, scale) == flavour.router and balance == 1e-3
    else:
        assert "router" not in seen and flavour.router[0] == ""


def test_planner_counts_torchtitans_gpt_oss_parameters():
    """torchtitan's gpt-oss flavours as its loader built them: the cost model's count (biases and sinks left out,
    types.Model) plus, per layer, the fused QKV bias (64 + 2 x 8) x 64 = 5,120, the output bias (hidden), a sink
    per head (64), the router's bias (one per expert) and the experts' biases (2 x 2,880 + hidden each): 120b
    1,114,112 x 36 = 40,108,032 more, the card's 116.83B; 20b 284,576 x 24; the debug model 53,576 x 4."""
    def biases(hidden: int, experts: int) -> int:
        return 5_120 + hidden + 64 + experts + experts * (5_760 + hidden)

    assert biases(2_880, 128) == 1_114_112
    for name, cid, layers, hidden, experts in (("gpt-oss-120b", "goss-120b-fsdp16-ep16", 36, 2_880, 128),
                                               ("goss-20b", "goss-20b-tp2-dp4-ep4", 24, 2_880, 32),
                                               ("goss-debug", "goss-debug-fsdp4-ep4", 4, 256, 8)):
        built = LOADER["cases"][cid]["params"]
        assert built == total_parameters(model_of(name).to_model()) + layers * biases(hidden, experts), name
    assert round(LOADER["cases"]["goss-120b-fsdp16-ep16"]["params"] / 1e9, 2) == 116.83


@pytest.mark.parametrize("plan, needle", [
    ({"cp": 2, "dp": 8, "zero_stage": 3}, "VarlenAttention, which its context parallelism does not support"),
    ({"dp": 16, "zero_stage": 3, "precision": "fp8", "fp8_recipe": "rowwise", "weight_casts": "use"},
     "planner does not write fp8 converters for its biased grouped experts"),
])
def test_gpt_oss_limits(plan, needle):
    """torchtitan's gpt-oss (@4f9e9a47) attends with VarlenAttention, which its CP refuses (loader_check's
    refusal case goss-cp2); its recipes are bf16."""
    assert needle in refused(load_model_spec("gpt-oss-120b"), ep=16, rope_fusion=True,
                             **{"global_batch_size": 16, **plan})


def test_hugging_face_gpt_oss_configs_are_torchtitans_flavours():
    """The released config.json of openai/gpt-oss-20b and -120b (tests/data/hf_configs) import to exactly torchtitan's
    20b and 120b flavours, and a stated linear offset other than gpt-oss's 1 is refused at emit."""
    for file, name in (("gpt-oss-20b.json", "20b"), ("gpt-oss-120b.json", "120b")):
        flavour, why = titan.match_flavour(load_model_spec(str(DATA.parent / "hf_configs" / file)).to_model())
        assert (flavour.family, flavour.name) == ("gpt_oss", name), why
    model = load_model_spec("gpt-oss-120b").model_copy(update={"glu_linear_offset": 0.0})
    assert "adds 1 to the gated activation's linear half; the model states glu_linear_offset 0" in refused(
        model, dp=16, ep=16, zero_stage=3, global_batch_size=16, rope_fusion=True)


def test_gpt_oss_from_estimate_to_torchtitan(tmp_path, capsys):
    """estimate scores gpt-oss with Megatron-LM's defaults (RoPE unfused for YaRN without MLA, the quick-GEGLU
    prologue); emit --format torchtitan then names the flag that scores torchtitan's fused RoPE, which it writes
    once given, with a README note on the prologue torchtitan does not run. --rope-fusion and --no-rope-fusion
    exclude each other."""
    base = ["estimate", "gpt-oss-120b", "dgx-h100", "--gpus", "64", "--dp", "64", "--zero", "3", "--ep", "16",
            "--gbs", "64", "--cross-entropy", "fused", "--json"]

    def emit(*extra) -> int:
        assert main([*base, *extra]) == 0
        (tmp_path / "plan.json").write_text(capsys.readouterr().out)
        return main(["emit", str(tmp_path / "plan.json"), "--format", "torchtitan", "--out", str(tmp_path / "o"),
                     "--force"])

    assert emit() == 2 and "re-score with planner estimate ... --rope-fusion" in capsys.readouterr().err
    assert emit("--rope-fusion") == 0
    readme = (tmp_path / "o" / "README.txt").read_text()
    assert "torchtitan runs it without; re-score with planner estimate ... --no-moe-act-prologue" in readme
    assert main([*base, "--rope-fusion", "--no-rope-fusion"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
