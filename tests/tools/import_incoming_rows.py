"""Turn validation/incoming/*.yaml (rows with a per-row `recipe:` read in Megatron-Bridge / torchtitan at
each release) into rows of the runs.yaml schema: the recipe's settings become plan fields, the model
block comes from the catalog entry the row names. Run from the repository root:

    python tests/tools/import_incoming_rows.py validation/incoming/moe_2025_2026.yaml > /tmp/rows.yaml
    python tests/tools/import_incoming_rows.py validation/incoming/dense_2025_2026.yaml > /tmp/dense.yaml

Three kinds of recipe are read: Megatron-Bridge MoE (moe_2025_2026.yaml), Megatron-Bridge dense (Llama 3,
dense_2025_2026.yaml: Megatron-FSDP, CPU activation offloading, pipeline p2p) and torchtitan (the two
Llama 3.1 405B long-context rows of dense_2025_2026.yaml: FSDP2 under pipeline parallelism, context
parallelism, AsyncTP, torchao float8). A recipe setting with a plan field becomes that field; one the
cost model has no mechanism for is named in the row's notes ("Not modelled"); where the plan field's
value was chosen rather than read (a default the source does not print), `assumed` says so with why.

The output is data for a human to review and paste; nothing here is fitted.
"""
from __future__ import annotations

import re
import sys

import yaml

from planner.frameworks.megatron import runs_act_prologue, runs_rope_fused
from planner.inputs.specs import ModelSpec

RECOMPUTE_MODULE_NAMES = {"core_attn", "mla_up_proj", "mlp", "moe_act", "layernorm"}
LOW_PRECISION = ("fp8", "mxfp8", "nvfp4")
# The published group of an incoming file -> the runs.yaml group its rows join (each source group
# weighs the same in the fit's objective, so the torchtitan 405B rows are a group of their own).
GROUPS = {
    "moe_2025_2026.yaml": {"megatron-bridge": "mbridge-moe"},
    "dense_2025_2026.yaml": {"megatron-bridge": "mbridge-dense", "torchtitan": "torchtitan-long-context"},
    # held out (validation/holdout.yaml): a model no fitted row has
    "gpt_oss_2025_2026.yaml": {"megatron-bridge-gpt-oss": "mbridge-gpt-oss"},
}


def split_counts(text: str) -> list[int]:
    """'4x15 1' -> [4]*15 + [1]; '3 4x14 2' -> [3] + [4]*14 + [2]."""
    out: list[int] = []
    for tok in str(text).split():
        m = re.fullmatch(r"(\d+)x(\d+)", tok)
        out += [int(m.group(1))] * int(m.group(2)) if m else [int(tok)]
    return out


def catalog_model(name: str) -> dict:
    data = yaml.safe_load(open(f"catalogs/models/{name}.yaml"))
    for key in ("global_batch_size", "training_tokens", "notes"):
        data.pop(key, None)
    return data


def catalog_cluster(name: str) -> dict:
    with open("catalogs/clusters.yaml") as f:
        entries = yaml.safe_load(f)
    for entry in entries:
        if entry["name"] == name:
            return entry
    raise KeyError(name)


def group_of(row: dict) -> str:
    return GROUPS.get(INCOMING, {}).get(row["group"], row["group"])


def recipe_kind(rec: dict) -> str:
    if (rec.get("framework") or {}).get("value") == "torchtitan":
        return "torchtitan"
    return "moe" if "moe_dispatcher" in rec else "dense"


def plan_fields(row: dict) -> tuple[dict, list[str]]:
    """The row's plan with the recipe's mechanisms, and what could not be mapped (for `assumed`)."""
    plan, rec, notes = dict(row["plan"]), row["recipe"], []
    plan["sequence_parallel"] = bool(rec["sequence_parallel"]["value"])
    plan["tp_comm_overlap"] = bool(rec["tp_comm_overlap"]["value"]) and plan["sequence_parallel"]
    plan["ep_overlap"] = bool(rec["moe_a2a_overlap"]["value"])
    plan["lowp_param_gather"] = bool(rec["param_gather"].get("fp8_param_gather")) and plan["precision"] != "bf16"
    prec = rec["precision"]
    if plan["precision"] == "fp8":
        plan["fp8_recipe"] = prec.get("fp8_recipe") or "tensorwise"
    bf16 = rec.get("bf16_layers") or {}
    if bf16.get("value"):
        plan["bf16_layers_start"] = bf16.get("num_layers_at_start_in_bf16", 0)
        plan["bf16_layers_end"] = bf16.get("num_layers_at_end_in_bf16", 0)
    unmapped: list[str] = []
    recompute_settings(plan, rec, unmapped)
    notes += [f"{u} are not modelled" for u in unmapped]
    plan["zero_stage"] = 1 if rec["distributed_optimizer"]["value"] else 0
    plan["overlap_dp_comm"] = bool(rec["dp_overlap"].get("overlap_grad_reduce", True))
    split = rec["pipeline_layout"].get("decoder_layers_per_virtual_stage")
    if split and str(split) != "None" and plan["pp"] * plan["vpp"] > 1:
        counts = split_counts(split)
        if len(counts) == plan["pp"] * plan["vpp"] and len(set(counts)) > 1:
            plan["stage_layers"] = counts
    plan["grad_dtype"] = rec["grad_reduce_dtype"]["value"]
    cg = rec["cuda_graphs"]
    plan["full_iteration_graph"] = cg.get("impl") == "full_iteration" or cg.get("scope") == "full_iteration"
    plan["moe_cuda_graphs"] = not plan["full_iteration_graph"] and "moe_preprocess" in (cg.get("scope") or [])
    plan["ep_dispatch"] = "deepep" if rec["moe_dispatcher"]["value"].startswith("flex") else "alltoall"
    plan["fp8_attention"] = bool((rec.get("fusions") or {}).get("fp8_dot_product_attention")) and plan["precision"] != "bf16"
    if plan["precision"] != "bf16":
        plan.setdefault("weight_casts", "step")  # Transformer Engine caches the casts per step
    if low_precision_moments(rec):
        plan["optimizer_states"] = "bf16"
    return plan, notes


def low_precision_moments(rec: dict) -> bool:
    """Megatron's precision-aware optimizer with its moments in 16 bits (Plan.optimizer_states bf16); on with
    fp32 moments it stores them as the plain distributed optimizer does."""
    pao = rec.get("precision_aware_optimizer") or {}
    return bool(pao.get("value")) and "fp32" not in (pao.get("exp_avg_dtype"), pao.get("exp_avg_sq_dtype"))


def convert(row: dict) -> dict:
    kind = recipe_kind(row["recipe"])
    if kind != "moe":
        return convert_dense(row, kind)
    model = catalog_model(row["model"]["model_ref"])
    model["seq_length"] = row["model"]["seq_length"]
    mtp = (row["recipe"].get("mtp") or {}).get("value")
    model["mtp_layers"] = int(mtp or 0)
    if "moe" in model:
        cf = row["recipe"]["moe_token_drop"].get("moe_expert_capacity_factor")
        if cf:
            model["moe"] = dict(model["moe"], capacity_factor=float(cf))
    plan, unmapped = plan_fields(row)
    built = ModelSpec(**model).to_model()
    if not runs_rope_fused(built):  # the code decides it, not the recipe
        plan["rope_fusion"] = False
    fused_mlp = (row["recipe"].get("moe_grouped_gemm") or {}).get("cutedsl_fused_grouped_mlp")
    if fused_mlp and runs_act_prologue(built):  # TE's fused grouped MLP takes the whole activation: no prologue
        plan["moe_act_prologue"] = False
    cluster = dict(row["cluster"])
    segment = (row["recipe"].get("parallel_groups") or {}).get("slurm_segment_trays")
    if segment and cluster["num_gpus"] > segment * cluster["gpus_per_node"]:
        # the launcher asks Slurm for segments of `segment` trays: GPUs of one segment share an NVLink domain
        cluster["nvlink_domain_size"] = min(cluster["nvlink_domain_size"], segment * cluster["gpus_per_node"])
    assumed, moved = assumed_fields(row.get("assumed") or [])
    out = {"id": row["id"], "source": re.sub(r"@ ([0-9a-f]{7,40})", r"@\1", row["source"]), "group": group_of(row),
           "model": model, "cluster": cluster, "plan": plan, "assumed": assumed,
           "measured": {k: v for k, v in row["measured"].items() if k in ("step_time_s", "step_time_kind", "derivation")}}
    if row.get("exclude"):
        out["exclude"] = row["exclude"]
    rec = row["recipe"]
    fields = ", ".join(f"{k} {v}" for k, v in plan.items() if k in MECHANISM_FIELDS)
    mech = (f"Plan settings read in the release's recipe (validation/incoming/{INCOMING}, row {row['id']}: each "
            f"recipe key with its cite): {fields}. Recipe: dispatcher {rec['moe_dispatcher']['value']}, CUDA graphs "
            f"{rec['cuda_graphs'].get('impl') or rec['cuda_graphs'].get('value')} {rec['cuda_graphs'].get('scope') or ''}, "
            f"MTP {mtp}; nvlink_domain_size {cluster['nvlink_domain_size']} (Slurm segments of {segment} trays). ")
    if plan["precision"] in ("fp8", "mxfp8", "nvfp4"):
        mech += ("Low-precision settings from the recipe's precision block: fp8_recipe (per-tensor fp8 only; "
                 "mxfp8 scales per 32-element block), weight_casts step (Transformer Engine), lowp_param_gather "
                 "from fp8_param_gather. ")
    if unmapped:
        mech += "Not modelled: " + "; ".join(unmapped) + ". "
    for rid, why in EXCLUDE.items():
        if row["id"] == rid:
            out["exclude"] = why
    out["notes"] = mech + (row.get("notes") or "") + ("" if not moved else " Also assumed: " + " ".join(moved))
    return out


# ---- dense Megatron-Bridge and torchtitan rows (dense_2025_2026.yaml) ----

# The catalog entry each incoming model name stands for (the torchtitan rows name Llama 3.1 405B, the
# same architecture as the catalog's llama3-405b).
CATALOG_MODELS = {"llama3-8b": "llama3-8b", "llama3-70b": "llama3-70b", "llama3.1-405b": "llama3-405b"}
ARCHITECTURE_KEYS = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_hidden_size",
                     "vocab_size", "mlp", "tie_embeddings", "dropout")
FSDP_STAGES = {"optim_grads_params": 3, "optim_grads": 2, "optim": 1}
CP_COMM = {"allgather": "all_gather", "alltoall": "a2a", "p2p": "p2p"}  # torchtitan / Megatron cp_comm_type names


def check_model(row: dict) -> dict:
    """The row's model block, checked against the catalog entry of the same architecture."""
    model = dict(row["model"])
    catalog = catalog_model(CATALOG_MODELS[model["name"]])
    for key in ARCHITECTURE_KEYS:
        if model.get(key) != catalog.get(key):
            raise SystemExit(f"{row['id']}: model.{key} {model.get(key)} differs from catalogs/models "
                             f"{CATALOG_MODELS[model['name']]} ({catalog.get(key)})")
    return model


def lowp_settings(plan: dict, rec: dict, weight_casts: str) -> None:
    """fp8_recipe, 16-bit first/last layers and weight casts from the recipe's precision block."""
    if plan["precision"] == "fp8":
        plan["fp8_recipe"] = rec["precision"].get("fp8_recipe") or "tensorwise"
    bf16 = rec.get("bf16_layers") or {}
    if bf16.get("first_last_layers_bf16") or bf16.get("value"):
        plan["bf16_layers_start"] = bf16.get("num_layers_at_start_in_bf16", 0)
        plan["bf16_layers_end"] = bf16.get("num_layers_at_end_in_bf16", 0)
    if plan["precision"] in LOW_PRECISION:
        plan["weight_casts"] = weight_casts


def recompute_settings(plan: dict, rec: dict, unmapped: list[str]) -> None:
    r = rec["recompute"]
    modules = [m for m in (r.get("modules") or []) if m]
    if r.get("value") == "full" or r.get("granularity") == "full":
        plan["recompute"] = "full"
    elif modules:
        unknown = [m for m in modules if m not in RECOMPUTE_MODULE_NAMES]
        if unknown:
            unmapped.append(f"recompute modules {unknown}")
        plan["recompute"] = "selective"
        plan["recompute_modules"] = [m for m in modules if m in RECOMPUTE_MODULE_NAMES] or ["core_attn"]
    else:
        plan["recompute"] = "none"


def megatron_dense_plan(row: dict) -> tuple[dict, list[str], list[str]]:
    """(plan, settings with no plan field, assumed entries) of a Megatron-Bridge dense row."""
    plan, rec, unmapped, assumed = dict(row["plan"]), row["recipe"], [], []
    if int(rec["context_parallel"]["value"] or 1) != 1:
        raise SystemExit(f"{row['id']}: Megatron-Bridge dense rows with cp > 1 are not converted")
    if (rec["virtual_pipeline"]["value"] or 1) != plan["vpp"]:
        assumed.append(f"vpp: printed layout (VP {plan['vpp']}) differs from the preset read in the code "
                       f"(VP {rec['virtual_pipeline']['value']}); the printed one is kept")
    plan["sequence_parallel"] = bool(rec["sequence_parallel"]["value"])
    plan["tp_comm_overlap"] = bool(rec["tp_comm_overlap"]["value"]) and plan["sequence_parallel"]
    fsdp = rec.get("megatron_fsdp") or {}
    if fsdp.get("value"):
        plan["zero_stage"] = FSDP_STAGES[fsdp["sharding_strategy"]]
    else:
        plan["zero_stage"] = 1 if rec["distributed_optimizer"]["value"] else 0
    lowp_settings(plan, rec, "step")  # Transformer Engine casts each weight once per step and keeps it
    pg = rec["param_gather"]
    gather = pg.get("fp4_param_gather") if plan["precision"] == "nvfp4" else pg.get("fp8_param_gather")
    plan["lowp_param_gather"] = bool(gather) and plan["precision"] in LOW_PRECISION
    recompute_settings(plan, rec, unmapped)
    off = rec.get("activation_offloading") or {}
    if off.get("value") and off.get("cpu_offloading_num_layers"):
        plan["offload_layers"] = int(off["cpu_offloading_num_layers"])
        if off.get("cpu_offloading_weights"):
            unmapped.append("offloading of weights with the activations (cpu_offloading_weights)")
    dpo = rec["dp_overlap"]
    plan["overlap_dp_comm"] = bool(dpo.get("overlap_grad_reduce", True))
    p2p = rec.get("pipeline_p2p") or {}
    if plan["pp"] > 1 and "overlap_p2p_comm" in p2p:
        plan["overlap_pp_comm"] = bool(p2p["overlap_p2p_comm"])
    plan["grad_dtype"] = rec["grad_reduce_dtype"]["value"]
    fus = rec.get("fusions") or {}
    # Megatron-Bridge's GPTModelProvider sets cross_entropy_loss_fusion True; the impl picks the kernels
    impl = fus.get("cross_entropy_fusion_impl") if fus.get("cross_entropy_loss_fusion", True) else None
    plan["cross_entropy"] = {"te": "fused", "native": "vocab_parallel_fused"}.get(impl, "vocab_parallel")
    if fus.get("fp8_dot_product_attention") and plan["precision"] in LOW_PRECISION:
        plan["fp8_attention"] = True
    if low_precision_moments(rec):
        plan["optimizer_states"] = "bf16"

    # what the recipe sets that no plan field holds
    cg = rec["cuda_graphs"]
    if cg.get("impl") == "full_iteration" or cg.get("scope") == "full_iteration":
        plan["full_iteration_graph"] = True
    elif cg.get("value") or cg.get("impl") not in (None, "none"):
        unmapped.append(f"CUDA graphs ({cg.get('impl')}, scope {cg.get('scope')}): a dense model has no graphed "
                        "mechanism in the cost model, which charges layer_overhead_seconds per layer and "
                        "micro-batch either way")
    if (rec.get("defer_embedding_wgrad_compute") or {}).get("value"):
        unmapped.append("defer_embedding_wgrad_compute (the output layer's weight-gradient GEMM deferred into "
                        "the pipeline flush)")
    if dpo.get("overlap_param_gather_with_optimizer_step"):
        unmapped.append("overlap_param_gather_with_optimizer_step (the first bucket's parameter all-gather "
                        "behind the optimizer step)")
    if fsdp.get("value"):
        extras = [k for k in ("fsdp_double_buffer", "nccl_ub", "keep_fp8_transpose_cache") if fsdp.get(k)]
        if extras:
            unmapped.append("Megatron-FSDP " + ", ".join(extras))
    if pg.get("reuse_grad_buf_for_mxfp8_param_ag"):
        unmapped.append("reuse_grad_buf_for_mxfp8_param_ag (the MXFP8 parameter all-gather into the gradient "
                        "buffer: no separate gather buffer)")
    if plan["precision"] in LOW_PRECISION and not fus.get("gradient_accumulation_fusion", True):
        unmapped.append("gradient_accumulation_fusion off (a separate add per weight gradient)")
    return plan, unmapped, assumed


def torchtitan_plan(row: dict) -> tuple[dict, list[str], list[str]]:
    """(plan, settings with no plan field, assumed entries) of a torchtitan row (FSDP2 x CP x TP x PP)."""
    given, rec, unmapped, assumed = dict(row["plan"]), row["recipe"], [], []
    n = row["cluster"]["num_gpus"]
    cpr = rec["context_parallel"]
    cp = int(cpr["value"] or 1)
    plan = {}
    for key, value in given.items():  # cp goes next to dp; dp no longer holds dp x cp
        plan[key] = value
        if key == "dp":
            plan["dp"] = n // (given["tp"] * given["pp"] * cp)
            if cp > 1:
                plan["cp"] = cp
                plan["cp_comm"] = CP_COMM[cpr.get("rotate_method", "p2p")]
    pipe = rec["pipeline"]
    if pipe.get("virtual_stages_per_rank", 1) != plan["vpp"] or pipe["pp"] != plan["pp"]:
        raise SystemExit(f"{row['id']}: the recipe's pipeline differs from the plan")
    layers = pipe.get("stage_layers") or []
    if len(layers) == plan["pp"] * plan["vpp"] and len(set(layers)) > 1:
        plan["stage_layers"] = list(layers)
    fsdp = rec["fsdp"]
    if fsdp.get("value") and plan["pp"] > 1:
        # FSDP2 under torch.distributed.pipelining: the stage's backward_maybe_with_nosync switches resharding
        # after backward and gradient sync off for every micro-batch, and reshards / reduce-scatters once after
        # the last one; with reshard_after_forward False the weights are gathered once per step, and FSDP2
        # accumulates the unsharded gradients in reduce_dtype (FSDPParam.to_accumulated_grad_if_needed). Within
        # a step that is ZeRO-1: unsharded weights and gradients, sharded optimizer, one gather and one
        # reduce-scatter per step. The cost model's ZeRO-3 with zero3_reshard false gathers per micro-batch
        # and holds sharded gradients, which is not what ran.
        plan["zero_stage"] = 1
        assumed.append(
            "zero_stage: 1 for FSDP2 full shard (reshard_after_forward False) under pipeline parallelism: "
            "torch.distributed.pipelining's stage (backward_maybe_with_nosync) sets reshard_after_backward(False) and "
            "requires_gradient_sync(False) for every micro-batch and reshards and reduce-scatters only after the last, "
            "and FSDP2 accumulates the unsharded gradients in reduce_dtype fp32 (FSDPParam."
            "to_accumulated_grad_if_needed): within a step the stage holds unsharded weights and fp32 gradients over a "
            "sharded optimizer, gathers once and reduce-scatters once, which is the cost model's ZeRO-1. Read in the "
            "PyTorch pipelining / FSDP2 code of late 2024 and since, not at the benchmarked nightly 1963fc83a1c3. "
            "ZeRO-3 with zero3_reshard false would predict 39.0 GiB against the published 75.3 / 75.9 GiB. The cost "
            "model keeps the unsharded weights 16-bit (2 B) where the run gathers float8 (1 B)")
    else:
        plan["zero_stage"] = 3 if fsdp.get("value") else 0
        plan["zero3_reshard"] = bool(fsdp.get("reshard_after_forward", True))
    plan["sequence_parallel"] = bool(rec["sequence_parallel"]["value"])
    plan["tp_comm_overlap"] = bool(rec["tp_comm_overlap"]["value"]) and plan["sequence_parallel"]
    lowp_settings(plan, rec, "use")  # torchao float8 casts the weights at every use, nothing cached
    plan["lowp_param_gather"] = bool(rec["param_gather"].get("fsdp_float8_all_gather")) and plan["precision"] in LOW_PRECISION
    recompute_settings(plan, rec, unmapped)
    plan["overlap_dp_comm"] = bool(rec["dp_overlap"]["value"])
    plan["grad_dtype"] = rec["grad_reduce_dtype"]["value"]
    plan["fused_elementwise"] = bool(rec["torch_compile"]["value"])
    if plan["pp"] > 1:  # torch.distributed.pipelining: receive buffers per micro-batch (memory.pipeline_buffer_units)
        plan["pipeline_buffers"] = "per_microbatch"
    # torchtitan's llama at 9dec370 (models/llama/model.py Attention.forward) repeats K/V to the query heads
    # (repeat_kv) before scaled_dot_product_attention, so context parallelism exchanges the repeated K/V
    plan["repeat_kv"] = True
    if (rec.get("tp_float8") or {}).get("value"):
        unmapped.append("Float8 tensor parallelism (the sequence-parallel all-gathers before the column-parallel "
                        "linears move float8, 1 B per element; the cost model moves 16-bit activations)")
    # the benchmark page names compile, Float8, AsyncTP, full AC and 1F1B, not the toml the flags come from
    toml = "train_configs/llama3_405b.toml at the benchmarked commit 9dec370 (the page does not print the toml)"
    assumed += [f"tp_comm_overlap: AsyncTP (enable_async_tensor_parallel) from {toml}",
                f"lowp_param_gather: enable_fsdp_float8_all_gather from {toml}",
                f"fused_elementwise: torch.compile of each TransformerBlock from {toml}"]
    return plan, unmapped, assumed


TORCHTITAN_GPU_ASSUMED = [
    ("gpu: compute peaks and NVLink rate of the H100 SXM 80GB (catalog h100-sxm-96gb-500w, verified false; the "
     "benchmark prints memory, HBM bandwidth, NVLink fully connected and the 500 W limit)"),
    ("gpu: the 500 W power limit slows compute-bound kernels to (500/700)^(1/3) = 0.894 of the clock (cube-root DVFS "
     "law, costmodel/compute.py power_capped_clock_fraction; not measured)"),
]


def convert_dense(row: dict, kind: str) -> dict:
    """A dense Megatron-Bridge or torchtitan row of dense_2025_2026.yaml."""
    rec = row["recipe"]
    model = check_model(row)
    plan, unmapped, extra = (torchtitan_plan if kind == "torchtitan" else megatron_dense_plan)(row)
    cluster = dict(row["cluster"])
    assumed, moved = assumed_fields(row.get("assumed") or [])
    if kind == "torchtitan":
        assumed = TORCHTITAN_GPU_ASSUMED + assumed + extra
        moved = [m for m in moved if not m.startswith("toml settings")]
    else:
        assumed = assumed + extra
        if cluster["nvlink_domain_size"] > cluster["gpus_per_node"] and cluster["num_gpus"] > cluster["gpus_per_node"]:
            trays = cluster["num_gpus"] // cluster["gpus_per_node"]
            assumed.append(f"nvlink_domain_size: {cluster['nvlink_domain_size']}: the job's {trays} trays are taken "
                           "to sit in one NVL72 rack (the launcher asks Slurm for a segment only above 18 trays, "
                           "so it is likely but not recorded; validation/incoming/README.md)")
    if plan.get("offload_layers"):
        link = catalog_cluster(cluster["name"]).get("host_link_gbytes_per_s")
        cluster["host_link_gbytes_per_s"] = link
        assumed.append(f"host_link_gbytes_per_s: {link} GB/s per GPU, the catalog's figure for {cluster['name']} "
                       "(catalogs/clusters.yaml: NVLink-C2C as copies achieve it); not measured on these runs")
    out = {"id": row["id"], "source": re.sub(r"@ ([0-9a-f]{7,40})", r"@\1", row["source"]), "group": group_of(row),
           "model": model, "cluster": cluster, "plan": plan, "assumed": assumed,
           "measured": {k: v for k, v in row["measured"].items()
                        if k in ("step_time_s", "step_time_kind", "derivation", "peak_memory_gib")}}
    if row.get("exclude"):
        out["exclude"] = row["exclude"]
    if row["id"] in EXCLUDE:
        out["exclude"] = EXCLUDE[row["id"]]
    fields = ", ".join(f"{k} {v}" for k, v in plan.items() if k in MECHANISM_FIELDS + DENSE_FIELDS)
    where = "torchtitan at the benchmarked commit" if kind == "torchtitan" else "the release's recipe"
    mech = (f"Plan settings read in {where} (validation/incoming/{INCOMING}, row {row['id']}: each recipe key "
            f"with its cite): {fields}. ")
    if kind == "torchtitan":
        mech += ("torchtitan 9dec370: FSDP2 shards over dp_shard x cp (the plan's dp x cp); under pipeline "
                 "parallelism apply_fsdp sets reshard_after_forward False, and the pipeline schedule defers "
                 "resharding and gradient sync to the last micro-batch, so the plan is zero_stage 1 (see "
                 "assumed; zero3_reshard does not apply); context parallelism with rotate method allgather is cp_comm all_gather; float8: "
                 "fp8_recipe tensorwise (torchao dynamic scaling), weight_casts use (torchao casts the weights at "
                 "every use), lowp_param_gather from enable_fsdp_float8_all_gather; fused_elementwise from "
                 "torch.compile; loss_parallel is the vocab-parallel loss the cost model takes under TP (logits "
                 "split over tp); 1F1B schedule (vpp 1) with the automatic stage split. ")
    else:
        fsdp = rec.get("megatron_fsdp") or {}
        if fsdp.get("value"):
            mech += (f"Megatron-FSDP {fsdp['sharding_strategy']} = zero_stage {plan['zero_stage']}; zero3_reshard "
                     "keeps its default (true): Megatron-FSDP's _post_forward hook releases each FSDP unit's "
                     "gathered parameters after its forward and _pre_backward gathers them again "
                     "(megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py); zero3_gather_unit "
                     "layer (one FSDP unit per TransformerLayer). ")
        if plan.get("offload_layers"):
            mech += (f"offload_layers {plan['offload_layers']} from recipe.activation_offloading "
                     "cpu_offloading_num_layers (activations only, weights stay on GPU). ")
        if plan["precision"] in LOW_PRECISION:
            mech += ("Low-precision settings from the recipe's precision block: fp8_recipe (per-tensor fp8 "
                     "only; mxfp8 and nvfp4 scale per block), weight_casts step (Transformer Engine), "
                     "lowp_param_gather from fp8_param_gather (fp4_param_gather under nvfp4). ")
        if plan["tp"] > 1:
            mech += f"tp_comm_overlap {plan['tp_comm_overlap']} from recipe.tp_comm_overlap. "
    if unmapped:
        mech += "Not modelled: " + "; ".join(unmapped) + ". "
    notes = row.get("notes") or ""
    if kind == "torchtitan" and plan.get("cp", 1) > 1:
        # the incoming note predates plan.cp: dp no longer holds dp x cp
        notes = re.sub(r"CONTEXT PARALLEL cp=2: the plan schema has no cp.*?\(same tokens per rank, different "
                       r"bubble and attention cost\)\. ",
                       f"Context parallel: plan cp {plan['cp']}, dp {plan['dp']} (FSDP {plan['dp']} x CP {plan['cp']}); "
                       "8 micro-batches of 1 sequence per step, each sequence of 65536 tokens split over the 2 CP "
                       "ranks. ", notes, flags=re.DOTALL)
    out["notes"] = mech + notes + ("" if not moved else " Also assumed: " + " ".join(moved))
    return out


LAYOUT_WORDS = {"num_gpus": "num_gpus", "vp": "vpp", "mbs": "micro_batch_size", "pp": "pp"}


def assumed_fields(entries: list[str]) -> tuple[list[str], list[str]]:
    """The incoming row's `assumed` as 'field: why' entries (tests/test_fidelity.py), and the
    sentences that name no field (moved to the notes)."""
    from planner.inputs.specs import ClusterSpec, PlanSpec

    known = set(PlanSpec.model_fields) | set(ClusterSpec.model_fields)
    out, moved = [], []
    for entry in entries:
        head, _, why = entry.partition(":")
        if head in ("zero_stage", "etp", "precision"):
            out.append(entry)
        elif head.startswith("recompute, sequence_parallel"):
            out += [f"{f}: not printed; read in the release's recipe code (recipe block){':' + why if why else ''}"
                    for f in ("recompute", "sequence_parallel", "grad_dtype", "ep_dispatch")]
        elif head.startswith("printed layout differs"):
            word = head.split("(", 1)[-1].strip()
            out.append(f"{LAYOUT_WORDS.get(word, word)}: {entry}")
        elif why and all(f.strip() in known for f in head.split(",")):
            # 'a, b, c: why' -> one entry per field (dense rows)
            out += [f"{f.strip()}:{why}" for f in head.split(",")]
        elif why and head.split("/")[0].strip() in known:
            # 'micro_batch_size/layout of ...: why' -> the field it names
            out.append(f"{head.split('/')[0].strip()}: {entry}")
        else:
            moved.append(entry.rstrip(".") + ".")
    return out, moved


MECHANISM_FIELDS = ("overlap_dp_comm", "grad_dtype", "fp8_recipe", "bf16_layers_start", "bf16_layers_end",
                    "tp_comm_overlap", "lowp_param_gather", "recompute", "recompute_modules", "ep_overlap",
                    "ep_dispatch", "moe_cuda_graphs", "full_iteration_graph", "optimizer_states", "fp8_attention",
                    "sequence_parallel",
                    "zero_stage", "stage_layers", "rope_fusion", "moe_act_prologue")
# further plan fields the dense and torchtitan rows set from their recipes
DENSE_FIELDS = ("cp", "cp_comm", "zero3_reshard", "offload_layers", "overlap_pp_comm", "weight_casts",
                "cross_entropy", "fused_elementwise")
INCOMING = "moe_2025_2026.yaml"
# Rows whose published figure is not the recipe's run (validation/incoming/MOE_README.md, "rows to treat
# with care"): kept for reference, not scored.
EXCLUDE = {
    "mbridge-26.02-qwen3-30b-a3b-h100-fp8": "the recipe asks for the DeepEP dispatcher, which the 26.02 container "
    "does not ship (a documented known issue): the published run used some other dispatcher",
    "mbridge-25.11-qwen3-30b-a3b-h100-fp8cs": "prints the 25.09 layout at half the 25.09 row's throughput; no "
    "recipe of the release has this layout",
    # dense_2025_2026.yaml (validation/incoming/README.md, "Inconsistent or doubtful rows")
    "mbridge-26.02.01-llama3-70b-gb300-mxfp8": "printed MBS 2, PP 4 without virtual stages cannot hold its "
    "activations without recompute: the first stage keeps 4 in-flight micro-batches of 20 layers at 2 x 8192 tokens, "
    "272 GiB of activations in the cost model (377 GiB in all on a 279 GiB GB300); the v0.3.1 preset "
    "LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_MX_V2 is PP 4 VP 5 MBS 1 (the row's notes; the same layout is printed for "
    "26.02 and 26.04, whose 7.13 and 6.91 s bracket this row's 6.83 s): likely a transcription error, like the "
    "excluded NVFP4 row of the same release",
}


def main() -> None:
    global INCOMING
    INCOMING = sys.argv[1].rsplit("/", 1)[-1]
    rows = yaml.safe_load(open(sys.argv[1]))
    yaml.safe_dump([convert(r) for r in rows], sys.stdout, sort_keys=False, width=120)


if __name__ == "__main__":
    main()
