"""Turn validation/incoming/*.yaml (rows with a per-row `recipe:` read in Megatron-Bridge / torchtitan at
each release) into rows of the runs.yaml schema: the recipe's settings become plan fields, the model
block comes from the catalog entry the row names. Run from the repository root:

    python tests/tools/import_incoming_rows.py validation/incoming/moe_2025_2026.yaml > /tmp/rows.yaml

The output is data for a human to review and paste; nothing here is fitted.
"""
from __future__ import annotations

import re
import sys

import yaml

RECOMPUTE_MODULE_NAMES = {"core_attn", "mla_up_proj", "mlp", "moe_act", "layernorm"}


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
    r = rec["recompute"]
    modules = [m for m in (r.get("modules") or []) if m]
    if r.get("value") == "full":
        plan["recompute"] = "full"
    elif modules:
        unknown = [m for m in modules if m not in RECOMPUTE_MODULE_NAMES]
        if unknown:
            notes.append(f"recompute modules {unknown} are not modelled")
        plan["recompute"] = "selective"
        plan["recompute_modules"] = [m for m in modules if m in RECOMPUTE_MODULE_NAMES] or ["core_attn"]
    else:
        plan["recompute"] = "none"
    plan["zero_stage"] = 1 if rec["distributed_optimizer"]["value"] else 0
    plan["overlap_dp_comm"] = bool(rec["dp_overlap"].get("overlap_grad_reduce", True))
    split = rec["pipeline_layout"].get("decoder_layers_per_virtual_stage")
    if split and str(split) != "None" and plan["pp"] * plan["vpp"] > 1:
        counts = split_counts(split)
        if len(counts) == plan["pp"] * plan["vpp"] and len(set(counts)) > 1:
            plan["stage_layers"] = counts
    plan["grad_dtype"] = rec["grad_reduce_dtype"]["value"]
    cg = rec["cuda_graphs"]
    plan["moe_cuda_graphs"] = cg.get("impl") == "full_iteration" or "moe_preprocess" in (cg.get("scope") or [])
    plan["ep_dispatch"] = "deepep" if rec["moe_dispatcher"]["value"].startswith("flex") else "alltoall"
    plan["fp8_attention"] = bool((rec.get("fusions") or {}).get("fp8_dot_product_attention")) and plan["precision"] != "bf16"
    if plan["precision"] != "bf16":
        plan.setdefault("weight_casts", "step")  # Transformer Engine caches the casts per step
    if (rec.get("precision_aware_optimizer") or {}).get("value"):
        plan["optimizer_states"] = "bf16"
    return plan, notes


def convert(row: dict) -> dict:
    model = catalog_model(row["model"]["model_ref"])
    model["seq_length"] = row["model"]["seq_length"]
    mtp = (row["recipe"].get("mtp") or {}).get("value")
    model["mtp_layers"] = int(mtp or 0)
    if "moe" in model:
        cf = row["recipe"]["moe_token_drop"].get("moe_expert_capacity_factor")
        if cf:
            model["moe"] = dict(model["moe"], capacity_factor=float(cf))
    plan, unmapped = plan_fields(row)
    cluster = dict(row["cluster"])
    segment = (row["recipe"].get("parallel_groups") or {}).get("slurm_segment_trays")
    if segment and cluster["num_gpus"] > segment * cluster["gpus_per_node"]:
        # the launcher asks Slurm for segments of `segment` trays: GPUs of one segment share an NVLink domain
        cluster["nvlink_domain_size"] = min(cluster["nvlink_domain_size"], segment * cluster["gpus_per_node"])
    assumed, moved = assumed_fields(row.get("assumed") or [])
    out = {"id": row["id"], "source": re.sub(r"@ ([0-9a-f]{7,40})", r"@\1", row["source"]), "group": row["group"],
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


LAYOUT_WORDS = {"num_gpus": "num_gpus", "vp": "vpp", "mbs": "micro_batch_size", "pp": "pp"}


def assumed_fields(entries: list[str]) -> tuple[list[str], list[str]]:
    """The incoming row's `assumed` as 'field: why' entries (tests/test_fidelity.py), and the
    sentences that name no field (moved to the notes)."""
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
        else:
            moved.append(entry.rstrip(".") + ".")
    return out, moved


MECHANISM_FIELDS = ("overlap_dp_comm", "grad_dtype", "fp8_recipe", "bf16_layers_start", "bf16_layers_end",
                    "tp_comm_overlap", "lowp_param_gather", "recompute", "recompute_modules", "ep_overlap",
                    "ep_dispatch", "moe_cuda_graphs", "optimizer_states", "fp8_attention", "sequence_parallel",
                    "zero_stage", "stage_layers")
INCOMING = "moe_2025_2026.yaml"
# Rows whose published figure is not the recipe's run (validation/incoming/MOE_README.md, "rows to treat
# with care"): kept for reference, not scored.
EXCLUDE = {
    "mbridge-26.02-qwen3-30b-a3b-h100-fp8": "the recipe asks for the DeepEP dispatcher, which the 26.02 container "
    "does not ship (a documented known issue): the published run used some other dispatcher",
    "mbridge-25.11-qwen3-30b-a3b-h100-fp8cs": "prints the 25.09 layout at half the 25.09 row's throughput; no "
    "recipe of the release has this layout",
}


def main() -> None:
    global INCOMING
    INCOMING = sys.argv[1].rsplit("/", 1)[-1]
    rows = yaml.safe_load(open(sys.argv[1]))
    yaml.safe_dump([convert(r) for r in rows], sys.stdout, sort_keys=False, width=120)


if __name__ == "__main__":
    main()
