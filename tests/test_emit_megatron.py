"""Megatron-LM emitter: golden argument lists and the mirrored validation rules.

Goldens are hand-written (tests/data/emit/megatron/*.args): the Table 1 rows follow the authors'
own script (examples/sc21/run_table_1.sh + CONFIG.sh @cf547de) with today's flag names; every
golden was also run through Megatron-LM's parse_args/validate_args/TransformerConfig (d98e8a64),
see tests/data/emit/README.md.
"""
import re
import subprocess

import pytest
import yaml
from emit_support import DATA, job, table1_runs, tiny

from planner.emit import megatron
from planner.errors import PlannerError
from planner.inputs.loading import load_model_spec
from planner.inputs.specs import ModelSpec

GOLDEN = DATA / "megatron"
TABLE1 = yaml.safe_load((GOLDEN / "table1.yaml").read_text())


def table1_job(row: dict):
    model = ModelSpec(name=f"megatron-{row['id']}", num_layers=row["layers"], hidden_size=row["hidden"],
                      num_attention_heads=row["heads"], vocab_size=51200, seq_length=2048, mlp="gelu",
                      tie_embeddings=True, dropout=True)
    dp = row["gpus"] // (row["tp"] * row["pp"])
    return job(model, tp=row["tp"], pp=row["pp"], dp=dp, vpp=row["vpp"], micro_batch_size=row["mbs"],
               global_batch_size=row["gbs"], zero_stage=0, recompute="full", precision="fp16",
               flash_attention=False, overlap_dp_comm=False, overlap_pp_comm=False, cross_entropy="vocab_parallel")


def llama_job():
    return job(load_model_spec("llama3-70b"), tp=8, pp=4, dp=2, vpp=5, micro_batch_size=1, global_batch_size=512,
               zero_stage=1, recompute="selective", sequence_parallel=True, precision="bf16")


def golden(name: str) -> list[str]:
    return [w for line in (GOLDEN / f"{name}.args").read_text().splitlines() for w in line.split()]


@pytest.mark.parametrize("row", TABLE1, ids=[r["id"] for r in TABLE1])
def test_table1_golden(row):
    assert megatron.flat_args(table1_job(row)) == golden(f"t1-{row['id']}")


def test_table1_rows_match_validation_runs():
    """The golden inputs agree with the paper facts in validation/runs.yaml."""
    runs = {r["id"]: r for r in table1_runs()}
    for row in TABLE1:
        run = runs[f"megatron-t1-{row['id']}"]
        m, p = run["model"], run["plan"]
        shape = (m["num_layers"], m["hidden_size"], m["num_attention_heads"])
        assert shape == (row["layers"], row["hidden"], row["heads"])
        layout = (run["cluster"]["num_gpus"], p["tp"], p["pp"], p["vpp"])
        assert layout == (row["gpus"], row["tp"], row["pp"], row["vpp"])
        assert (p["micro_batch_size"], p["global_batch_size"]) == (row["mbs"], row["gbs"])


def test_llama3_70b_gqa_golden():
    assert megatron.flat_args(llama_job()) == golden("llama3-70b-gqa")


def args_of(j) -> list[str]:
    return megatron.flat_args(j)


def value(args: list[str], flag: str):
    return args[args.index(flag) + 1] if flag in args else None


PLANS = [dict(tp=tp, pp=pp, dp=2, vpp=vpp, zero_stage=z, recompute=r, precision=pr, sequence_parallel=sp,
              micro_batch_size=1, global_batch_size=16)
         for tp, pp, vpp, sp in ((1, 1, 1, False), (2, 1, 1, True), (4, 2, 1, True), (2, 4, 3, False))
         for z in (0, 1) for r in ("none", "selective", "full") for pr in ("bf16", "fp16", "fp8")]


@pytest.mark.parametrize("plan", PLANS)
def test_constructed_flags_obey_megatron(plan):
    """Rules the emitter meets by construction (megatron/training/arguments.py, transformer_config.py)."""
    j = job(tiny(num_kv_heads=4, mlp="swiglu", ffn_hidden_size=2816), **plan)
    a = args_of(j)
    # The plan's own numbers come back under Megatron's flag names.
    assert (value(a, "--tensor-model-parallel-size"), value(a, "--pipeline-model-parallel-size")) == \
        (str(plan["tp"]), str(plan["pp"]))
    assert (value(a, "--micro-batch-size"), value(a, "--global-batch-size")) == ("1", "16")
    assert (value(a, "--num-layers"), value(a, "--hidden-size"), value(a, "--ffn-hidden-size")) == ("24", "1024", "2816")
    # GQA: 4 KV heads of 16 needs both flags (--num-query-groups alone is ignored, arguments.py).
    assert "--group-query-attention" in a and value(a, "--num-query-groups") == "4" and "--swiglu" in a
    # Precision: --bf16 / --fp16 exclusive; fp8 trains through Transformer Engine on top of bf16.
    half = {"bf16": "--bf16", "fp16": "--fp16", "fp8": "--bf16"}[plan["precision"]]
    assert half in a and ({"--bf16", "--fp16"} - {half}).isdisjoint(a)
    assert ("--fp8-format" in a) == (plan["precision"] == "fp8")
    # ZeRO-1 is Megatron's distributed optimizer; with dp 2 and overlap on (the plan default) the grad
    # reduce overlaps, and the param gather too under the distributed optimizer (which it requires).
    assert ("--use-distributed-optimizer" in a) == (plan["zero_stage"] == 1)
    assert "--overlap-grad-reduce" in a
    assert ("--overlap-param-gather" in a) == (plan["zero_stage"] == 1)
    # transformer_config.py: full recompute needs a method and a layer count, selective neither.
    want = {"none": None, "selective": "selective", "full": "full"}[plan["recompute"]]
    assert value(a, "--recompute-granularity") == want
    full = plan["recompute"] == "full"
    assert (value(a, "--recompute-method"), value(a, "--recompute-num-layers")) == \
        (("uniform", "1") if full else (None, None))
    assert ("--sequence-parallel" in a) == (plan["sequence_parallel"] and plan["tp"] > 1)
    assert int(value(a, "--max-position-embeddings")) >= int(value(a, "--seq-length")) == 2048
    # 24 layers over pp x vpp chunks: pp 4 x vpp 3 -> 2 layers per virtual stage; no flag without interleaving.
    assert value(a, "--num-layers-per-virtual-pipeline-stage") == ({3: "2"}.get(plan["vpp"]))
    script = megatron.launch_sh(j)
    assert ("export CUDA_DEVICE_MAX_CONNECTIONS=1" in script) == (plan["tp"] > 1)


def test_fp8_uses_transformer_engine_hybrid_with_bf16():
    a = args_of(job(tiny(), precision="fp8"))
    i = a.index("--bf16")
    assert a[i:i + 3] == ["--bf16", "--fp8-format", "hybrid"]


@pytest.mark.parametrize("precision,grad,flag", [
    ("bf16", "bf16", "--grad-reduce-in-bf16"), ("bf16", "fp32", None),
    ("fp16", "fp16", None), ("fp16", "fp32", "--accumulate-allreduce-grads-in-fp32"), ("fp32", "fp32", None)])
def test_gradient_reduce_dtype(precision, grad, flag):
    a = args_of(job(tiny(), precision=precision, grad_dtype=grad))
    extra = {"--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32"} & set(a)
    assert extra == ({flag} if flag else set())


def test_uneven_first_last_split():
    """transformer_config.py uneven PP: first/last counts, middle stages share the rest evenly."""
    a = args_of(job(tiny(num_layers=30), pp=4, stage_layers=(6, 8, 8, 8)))
    assert value(a, "--decoder-first-pipeline-num-layers") == "6"
    assert "--decoder-last-pipeline-num-layers" not in a


def expand_layout(text: str) -> list[str]:
    """A --pipeline-model-parallel-layout as its stages, by the syntax of Megatron-LM's help text
    (arguments.py): '|' between stages, (...)*n and x*n repeat, commas cosmetic."""
    text = text.replace(",", "")
    text = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    text = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
    return text.split("|")


@pytest.mark.parametrize("model_kw, plan, stages", [
    # 13 layers on pp 8: no first/last-only split keeps stages at 2 (1, 2 x 5, 1, 1)
    (dict(num_layers=13), dict(pp=8), ["Et", "tt", "tt", "tt", "tt", "tt", "t", "tL"]),
    (dict(), dict(pp=4, stage_layers=(5, 7, 6, 6)), ["E" + "t" * 5, "t" * 7, "t" * 6, "t" * 6 + "L"]),
    # 24 layers on pp 4 x vpp 4: 16 chunks, the 8 over on the first middle chunks; chunk v x pp + r is on
    # rank r, so each rank holds 6
    (dict(), dict(pp=4, vpp=4, global_batch_size=8), ["Et"] + ["tt"] * 8 + ["t"] * 6 + ["tL"]),
    (dict(), dict(pp=2, vpp=2, stage_layers=(5, 7, 6, 6), global_batch_size=8),
     ["E" + "t" * 5, "t" * 7, "t" * 6, "t" * 6 + "L"]),
])
def test_uneven_splits_are_written_as_a_layout(model_kw, plan, stages):
    """Splits --decoder-first/last-pipeline-num-layers cannot write (uneven middle stages, or uneven
    chunks under interleaving) go in --pipeline-model-parallel-layout, which also sets the virtual
    stages (arguments.py: not with --num-layers-per-virtual-pipeline-stage)."""
    a = args_of(job(tiny(**model_kw), **{"dp": 1, **plan}))
    assert expand_layout(value(a, "--pipeline-model-parallel-layout")) == stages
    for flag in ("--num-layers-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers",
                 "--decoder-last-pipeline-num-layers"):
        assert flag not in a


def test_deepseek_v3_layout_is_nvidias():
    """Megatron-Bridge's DeepSeek-V3 GB300 recipe (validation/incoming/moe_2025_2026.yaml: pp 2 x vp 8,
    Et*4|(t*4|)*14tmL): 61 layers as 15 chunks of 4 and one of 1, the MTP layer and the loss last."""
    model = load_model_spec("deepseek-v3")
    a = args_of(job(model, pp=2, vpp=8, dp=1, ep=1, stage_layers=(4,) * 15 + (1,), global_batch_size=16))
    assert expand_layout(value(a, "--pipeline-model-parallel-layout")) == expand_layout("Et*4|(t*4|)*14tmL")


def test_glm_4_5_is_written_as_megatron_bridges_glm45_bridge_builds_it():
    """NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/models/glm/glm45_bridge.py (GLM45Bridge.provider_bridge)
    and its unit test (tests/unit_tests/models/glm/test_glm45_bridge.py @282e0ba8): qkv bias from
    attention_bias, qk_layernorm from use_qk_norm, rotary_percent from partial_rotary_factor, kv_channels from
    head_dim, no other linear bias, moe_layer_freq [0] * first_k_dense_replace + [1] * the rest, a shared
    expert of moe_intermediate_size, sigmoid scores with the expert bias, mtp_num_layers from
    num_nextn_predict_layers; the top-k scaling factor is routed_scaling_factor."""
    model = load_model_spec("tests/data/hf_configs/glm-4.5.json", seq_length=4096)
    a = args_of(job(model, tp=1, pp=1, dp=8, ep=8, micro_batch_size=1, global_batch_size=8))
    for flag in ("--add-qkv-bias", "--qk-layernorm", "--disable-bias-linear", "--moe-router-enable-expert-bias",
                 "--swiglu", "--untie-embeddings-and-output-weights", "--group-query-attention"):
        assert flag in a, flag
    expected = {"--rotary-percent": "0.5", "--kv-channels": "128", "--num-query-groups": "8",
                "--moe-layer-freq": "([0]*3+[1]*89)", "--moe-shared-expert-intermediate-size": "1536",
                "--moe-ffn-hidden-size": "1536", "--ffn-hidden-size": "12288", "--num-experts": "160",
                "--moe-router-topk": "8", "--moe-router-score-function": "sigmoid",
                "--moe-router-topk-scaling-factor": "2.5", "--mtp-num-layers": "1"}
    assert {flag: value(a, flag) for flag in expected} == expected


REJECTED = [  # (plan/model change, words of the refusal); Megatron-LM's outcome in data/emit/README.md
    # frameworks/megatron.py megatron_fsdp_stages: Megatron-FSDP written without pipeline parallelism only
    (dict(pp=2, zero_stage=2, global_batch_size=8), "ZeRO stage 2: Megatron-LM shards optimizer states"),
    (dict(pp=2, zero_stage=3, global_batch_size=8), "Megatron-FSDP (ZeRO-2/3) only without pipeline parallelism"),
    (dict(dp=8, global_batch_size=100), "global batch (100) must be divisible by micro batch x dp (1x8)"),
    (dict(tp=8, model=dict(num_attention_heads=12, hidden_size=768)), "attention heads (12) must be divisible by tp (8)"),
    (dict(tp=2, model=dict(num_attention_heads=12, hidden_size=768, num_kv_heads=3)), "num_query_groups (3)"),
    (dict(sequence_parallel=True), "Megatron-LM turns --sequence-parallel off at tp 1"),
    (dict(pp=2, vpp=2, overlap_pp_comm=False, global_batch_size=8), "size >= 3 with --no-overlap-p2p-communication"),
    (dict(pp=4, vpp=2, global_batch_size=6), "6 micro-batches are not a multiple of pp 4"),
    (dict(grad_dtype="int8"), "gradient dtype int8: Megatron-LM reduces bf16 gradients in fp32 or bf16 only"),
    (dict(precision="bf16", grad_dtype="fp16"), "gradient dtype fp16: Megatron-LM reduces bf16 gradients in fp32 or bf16"),
    (dict(zero_stage=1, grad_reduce="allreduce"), "reduce-scatters gradients at ZeRO 1 (the distributed optimizer"),
    # Megatron-FSDP (mcore_fsdp_adapter.py): reduce-scatters, and gathers a transformer layer at a time
    (dict(zero_stage=3, grad_reduce="allreduce"), "reduce-scatters gradients at ZeRO 3"),
    (dict(zero_stage=3, zero3_gather_unit="tensor"), "Megatron-FSDP gathers one transformer layer at a time"),
    # transformer_config.py: no bf16 first/last layers under delayed scaling, at most layers // pp at each end
    (dict(pp=2, precision="fp8", bf16_layers_start=1, bf16_layers_end=1, global_batch_size=8),
     "fp8 delayed scaling does not keep first/last layers in bf16"),
    (dict(pp=8, precision="fp8", fp8_recipe="tensorwise", bf16_layers_start=4, global_batch_size=8),
     "at most num_layers // pp = 3 layers in bf16 at each end (got 4,0"),
    # language_module.py + TE get_attention_backend: --attention-backend flash has no learnable softmax
    (dict(attention_kernel="flash2", model=dict(attention_sinks=True)), "has no attention sinks"),
]


@pytest.mark.parametrize("change,words", REJECTED, ids=[w for _, w in REJECTED])
def test_rule_refuses(change, words):
    change = dict(change)
    model = tiny(**change.pop("model", {}))
    plan = {"dp": 1, **change}
    with pytest.raises(PlannerError, match="Megatron-LM would reject this plan") as err:
        megatron.files(job(model, **plan))
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_refusal_lists_every_broken_rule():
    with pytest.raises(PlannerError) as err:
        megatron.files(job(tiny(), tp=1, pp=2, zero_stage=3, sequence_parallel=True, global_batch_size=8))
    assert "ZeRO stage 3" in str(err.value) and "sequence parallel" in str(err.value)


@pytest.mark.parametrize("j", [llama_job(), *[table1_job(r) for r in TABLE1[::3]]], ids=lambda j: j.model.name)
def test_launch_script_is_valid_bash(tmp_path, j):
    script = tmp_path / "launch.sh"
    script.write_text(megatron.launch_sh(j))
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_bf16_layers_within_a_stage_are_written():
    """tensorwise fp8 with 3 bf16 layers at each end of 24 over pp 8 (3 per stage): Megatron accepts it."""
    a = args_of(job(tiny(), pp=8, dp=1, precision="fp8", fp8_recipe="tensorwise", bf16_layers_start=3,
                    bf16_layers_end=3, global_batch_size=8))
    assert value(a, "--num-layers-at-start-in-bf16") == "3" and value(a, "--num-layers-at-end-in-bf16") == "3"


@pytest.mark.parametrize("plan", [dict(tp=2, cp=4, dp=1, sequence_parallel=True, zero_stage=1),
                                  dict(tp=2, cp=1, dp=4, sequence_parallel=True, zero_stage=1)])
def test_gradient_overlap_follows_the_dp_x_cp_group(plan):
    """distributed_data_parallel.py reduces dense gradients over dp x cp (dp_cp_group): with dp 1 and
    cp 4 there is still a sync, which the plan prices as overlapped, so the overlap flags are written."""
    a = args_of(job(tiny(), global_batch_size=8, **plan))
    assert "--overlap-grad-reduce" in a and "--overlap-param-gather" in a


def test_gradient_overlap_follows_expert_data_parallel():
    """Expert gradients reduce over expert-DP (expt_dp_group): tp 8 x ep 4 on 8 GPUs leaves expert-DP 2."""
    model = tiny(moe=dict(num_experts=8, experts_per_token=2, ffn_hidden_size=512))
    a = args_of(job(model, tp=8, dp=1, ep=4, sequence_parallel=True, zero_stage=1, global_batch_size=8))
    assert "--overlap-grad-reduce" in a


def test_moe_router_graphs_with_deepep_keep_the_layernorm_recompute_refused():
    """transformer_layer.py can_recompute_pre_mlp_layernorm_for_cudagraph: graphed router + flex dispatcher
    drops the pre-MLP layernorm recompute on MoE layers."""
    model = tiny(moe=dict(num_experts=8, experts_per_token=2, ffn_hidden_size=512))
    with pytest.raises(PlannerError, match="pre-MLP layernorm"):
        megatron.files(job(model, dp=8, ep=8, zero_stage=1, ep_dispatch="deepep", moe_cuda_graphs=True,
                           recompute="selective", recompute_modules=["layernorm"], global_batch_size=8))



@pytest.mark.parametrize("cluster,backend", [("gb200-nvl72", "hybridep"), ("dgx-h100", "deepep")])
def test_flex_backend_follows_the_nvlink_domain(tmp_path, capsys, cluster, backend):
    """DeepEP's kernels reach at most 8 NVLink peers (DeepEP csrc/kernels/configs.cuh NUM_MAX_NVL_PEERS);
    on a 72-GPU NVLink domain of 4-GPU trays the dispatch the cost model prices (one crossing per
    remote domain) is HybridEP's, which NVIDIA's GB200 recipes use."""
    from planner.commands.main import main

    assert main(["estimate", "qwen3-30b-a3b", cluster, "--gpus", "16", "--ep", "16", "--zero", "1",
                 "--ep-dispatch", "deepep", "--gbs", "64", "--json"]) == 0
    (tmp_path / "p.json").write_text(capsys.readouterr().out)
    assert main(["emit", str(tmp_path / "p.json"), "--format", "megatron", "--out", str(tmp_path / "o")]) == 0
    a = (tmp_path / "o" / "megatron" / "launch.sh").read_text()
    assert f"--moe-flex-dispatcher-backend {backend}" in a
