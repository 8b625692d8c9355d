"""`planner emit PLAN.json --format deepspeed|megatron|all --out DIR`: launch files for one estimate."""
from __future__ import annotations

import argparse
import sys

from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.argtypes import bounded_int, seq_length_arg

DESCRIPTION = """Write launch files for one plan: DeepSpeed (ds_config.json, hostfile, launch.sh) and/or
Megatron-LM (launch.sh running pretrain_gpt.py under torchrun), plus README.txt. A plan the
framework would reject is refused, naming the rule. Existing files are kept unless --force."""


# Files from before these contract versions carry a model_spec without launch details the Megatron-LM launch
# states since: (version, what, the ModelSpec keys and the MoeSpec keys completed from the catalog). The gate
# of shared experts matters only to a model that has them.
LAUNCH_DETAILS = ((7, "the norms' epsilon, NoPE layers or router placement", ("norm_epsilon", "nope_every"),
                   ("router_probs_on_input",)),
                  (21, "RoPE scaling", ("rope_scaling",), ()),
                  (23, "whether its shared experts are gated", (), ("shared_expert_gate",)))
SHAPE_KEYS = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads", "ffn_hidden_size", "vocab_size")


def with_launch_details(data: dict, name: str | None, where: str, schema: int) -> dict:
    """An older file's model_spec with the launch details of the catalog model of the same name and shape;
    a model the catalog does not hold cannot be completed, so it is refused rather than launched without them."""
    from planner.inputs import catalogs, loading

    shared = bool((data.get("moe") or {}).get("shared_ffn_hidden_size"))
    missing = [(version, what, keys, moe_keys) for version, what, keys, moe_keys in LAUNCH_DETAILS
               if schema < version and (keys or shared)]
    if not missing:
        return data
    version, what = missing[0][0], " or ".join(w for _, w, _, _ in missing)
    if not name or name not in catalogs.model_catalog():
        raise PlannerError(f"{where} predates schema {version}: its model_spec does not state {what}, which a launch "
                           "needs; pass --model MODEL")
    catalog = loading.load_model_spec(name, data.get("seq_length"), need_seq_length=True).model_dump(exclude_none=True)
    if any(data.get(k) != catalog.get(k) for k in SHAPE_KEYS):
        raise PlannerError(f"{where} predates schema {version} and its model is not catalog model '{name}' any more; "
                           "pass --model MODEL")
    out = {**data, **{k: catalog[k] for _, _, keys, _ in missing for k in keys if k in catalog}}
    if isinstance(out.get("moe"), dict) and "moe" in catalog:
        out["moe"] = {**out["moe"], **{k: catalog["moe"].get(k, False) for *_, moe_keys in missing for k in moe_keys}}
    return out


def model_for(args: argparse.Namespace, estimate: dict):
    """--model (with --seq-length), else the model PLAN.json was scored with: its `model_spec`, or
    for older files its name looked up in the catalog."""
    from planner.inputs import catalogs, loading, reading
    from planner.inputs.specs import ModelSpec

    scored = estimate.get("seq_length")
    if args.seq_length and isinstance(scored, int) and args.seq_length != scored:
        raise PlannerError(f"--seq-length {args.seq_length}: PLAN.json was scored at {scored} tokens, and its launch "
                           f"trains at that length; drop --seq-length, or score the plan at {args.seq_length} again")
    if args.model:  # a config.json gives no training sequence length: the one PLAN.json was scored at
        return loading.load_model_spec(args.model, args.seq_length or estimate.get("seq_length"), need_seq_length=True)
    if isinstance(estimate.get("model_spec"), dict):
        data = dict(estimate["model_spec"])
        if args.seq_length:
            data["seq_length"] = args.seq_length
        data = with_launch_details(data, estimate.get("model"), args.plan, int(estimate.get("schema_version") or 0))
        return reading.parse(ModelSpec, data, f"{args.plan} model_spec")
    ref = estimate.get("model")
    if not ref:
        raise PlannerError("PLAN.json names no model; pass --model MODEL")
    if ref not in catalogs.model_catalog():
        raise PlannerError(f"model '{ref}' of PLAN.json is not in the catalog and the file has no model_spec; "
                           "pass --model with its YAML or config.json")
    return loading.load_model_spec(ref, args.seq_length, need_seq_length=True)


def cmd_emit(args: argparse.Namespace) -> int:
    from planner.emit import EmitOptions, emit_files
    from planner.inputs.loading import load_estimate

    if not args.out.strip():
        raise PlannerError("--out: expected a folder name")
    estimate = load_estimate(args.plan)
    options = EmitOptions(gpus_per_node=args.gpus_per_node, offload_optimizer=args.offload_optimizer,
                          offload_param=args.offload_param, nvme_path=args.nvme_path)
    written = emit_files(model_for(args, estimate), estimate, args.format, args.out, args.force, options)
    if estimate.get("fits") is False:
        print("planner: warning: the estimate predicts this plan does not fit in GPU memory", file=sys.stderr)
    for path in written:
        print(path)
    return 0


def register(sub) -> None:
    p = sub.add_parser("emit", help="write Megatron-LM, DeepSpeed or torchtitan launch files for one plan",
                       description=DESCRIPTION)
    p.add_argument("plan", metavar="PLAN.json", help="one estimate object from `planner estimate --json` ('-' = stdin)")
    p.add_argument("--format", required=True, choices=["deepspeed", "megatron", "torchtitan", "all"],
                   help="all = deepspeed and megatron (torchtitan builds only its own model definitions, so it is "
                        "asked for by name)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument("--model", help="the model PLAN.json was scored for, as a model YAML, HF config.json or catalog "
                                   "name (default: the name PLAN.json records; needed when that was a file); a "
                                   "different model is refused")
    p.add_argument("--seq-length", type=seq_length_arg,
                   help="the sequence length the plan was scored at, when the model's own differs (as estimate "
                        "--seq-length); any other value is refused")
    p.add_argument("--gpus-per-node", type=bounded_int(L.MAX_GPUS_PER_NODE),
                   help="GPUs per node, for a PLAN.json that does not record them (default: the catalog cluster's, "
                        "else 8)")
    g = p.add_argument_group("DeepSpeed offload (not in the cost model)")
    g.add_argument("--offload-optimizer", default="none", choices=["none", "cpu", "nvme"])
    g.add_argument("--offload-param", default="none", choices=["none", "cpu", "nvme"], help="ZeRO-3 only")
    g.add_argument("--nvme-path", help="folder on local NVMe for nvme offload")
    p.set_defaults(func=cmd_emit)
