"""Command line: `planner estimate|suggest|...`. User errors are one line on stderr, exit 2."""
from __future__ import annotations

import argparse
import json
import sys

from .argtypes import positive_float, positive_int
from .errors import PlannerError

EPILOG = """MODEL is a YAML file, a Hugging Face config.json, or a catalog name (catalogs/models/);
CLUSTER is a YAML file or a catalog name (catalogs/clusters.yaml)."""


def add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model YAML, HF config.json, or catalog name (e.g. llama3-70b)")
    p.add_argument("cluster", metavar="CLUSTER", help="cluster YAML or catalog name (e.g. dgx-h100)")
    p.add_argument("--gpus", type=positive_int, help="number of GPUs (overrides the cluster's num_gpus)")
    p.add_argument("--seq-length", type=positive_int, help="override the model's sequence length")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def add_plan_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("plan")
    g.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel degree (default 1)")
    g.add_argument("--pp", type=positive_int, default=1, help="pipeline-parallel degree (default 1)")
    g.add_argument("--dp", type=positive_int, help="data-parallel degree (default GPUs / (tp*pp))")
    g.add_argument("--vpp", type=positive_int, default=1, help="virtual pipeline stages per GPU, interleaving (default 1)")
    g.add_argument("--mbs", type=positive_int, default=1, help="micro-batch size in sequences (default 1)")
    g.add_argument("--gbs", type=positive_int, help="global batch in sequences (default: the model's, else mbs*dp*gas)")
    g.add_argument("--gas", type=positive_int, help="gradient accumulation steps (alternative to --gbs)")
    g.add_argument("--zero", type=int, default=0, choices=[0, 1, 2, 3], help="ZeRO stage (default 0)")
    g.add_argument("--recompute", default="none", choices=["none", "selective", "op", "full"],
                   help="activation recompute: selective = Megatron (attention core), op = torchtitan per-op SAC")
    g.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism (needs tp > 1)")
    g.add_argument("--precision", default="bf16", choices=["fp32", "bf16", "fp16", "fp8"])
    g.add_argument("--grad-dtype", choices=["fp32", "bf16", "fp16", "int8"],
                   help="dtype gradients are communicated in (default bf16; int8 = compression)")
    g.add_argument("--no-overlap", action="store_true", help="DP/ZeRO sync does not overlap backward compute")
    g.add_argument("--no-pp-overlap", action="store_true",
                   help="pipeline p2p does not overlap compute (it does by default with --vpp > 1)")
    g.add_argument("--eager", action="store_true",
                   help="elementwise kernels run unfused, as eager PyTorch (torchtitan without torch.compile)")
    g.add_argument("--eager-loss", action="store_true",
                   help="loss is an eager F.cross_entropy on fp32-upcast logits (12 B per logit at the peak "
                        "instead of 4)")
    g.add_argument("--zero3-gather-unit", default="layer", choices=["layer", "tensor"],
                   help="ZeRO-3 gathers weights per layer (FSDP2, default) or per weight tensor (DeepSpeed of 2021)")
    g.add_argument("--grad-reduce", default="reduce_scatter", choices=["reduce_scatter", "allreduce"],
                   help="ZeRO gradient reduction: reduce-scatter into shards (default) or a full all-reduce in "
                        "5e8-element buckets (DeepSpeed's bf16 pipeline engine, ZeRO-3 of 2021)")
    g.add_argument("--no-flash-attention", action="store_true", help="unfused attention (pre-FlashAttention stacks)")
    g.add_argument("--stage-layers", help="comma-separated layers per model chunk (pp*vpp entries), uneven splits")


def add_what_if(p: argparse.ArgumentParser) -> None:
    p.add_argument("--what-if", action="append", metavar="KEY=VALUE",
                   help="re-score under an assumption (repeatable): network=0.5, nvlink=0.8, hbm=0.9, "
                        "matmul_efficiency=0.9, price.GPU=2.10, rdma=false, power=500 (watts per GPU)")


def plan_spec_from_args(args: argparse.Namespace):
    from .loading import parse
    from .specs import PlanSpec

    data = {
        "tp": args.tp, "pp": args.pp, "dp": args.dp, "vpp": args.vpp, "micro_batch_size": args.mbs,
        "global_batch_size": args.gbs, "grad_accum_steps": args.gas, "zero_stage": args.zero,
        "recompute": args.recompute, "sequence_parallel": args.sequence_parallel, "precision": args.precision,
        "grad_dtype": args.grad_dtype, "overlap_dp_comm": not args.no_overlap,
        "overlap_pp_comm": not args.no_pp_overlap,
        "flash_attention": not args.no_flash_attention, "fused_elementwise": not args.eager,
        "fused_cross_entropy": not args.eager_loss, "zero3_gather_unit": args.zero3_gather_unit,
        "grad_reduce": args.grad_reduce,
    }
    if args.stage_layers:
        try:
            data["stage_layers"] = tuple(int(x) for x in args.stage_layers.split(","))
        except ValueError:
            raise PlannerError(f"--stage-layers must be comma-separated integers (got {args.stage_layers})") from None
    return parse(PlanSpec, data, "plan flags")


def cmd_estimate(args: argparse.Namespace) -> int:
    from costmodel import types as cm

    from . import diagnose, loading, plans, render, report, whatif

    model = loading.load_model_spec(args.model, args.seq_length)
    cluster = loading.build_cluster(loading.load_cluster_spec(args.cluster), args.gpus)
    plan = plans.build_plan(plan_spec_from_args(args), model, cluster.num_gpus)
    plans.check_legal(model.to_model(), cluster, plan)
    scored = report.score(model, cluster, plan)
    d = report.to_dict(scored)
    d["diagnosis"] = diagnose.diagnosis_dict(scored, args.comm_threshold, diagnose.try_levers(scored))
    wi = whatif.parse(args.what_if)
    if args.what_if:
        alt = report.score(model, whatif.apply_cluster(cluster, wi), plan, whatif.apply_efficiency(cm.Efficiency(), wi))
        d["what_if"] = {"assumptions": wi.label(), "estimate": report.to_dict(alt)}
    if not d["fits"]:
        print(f"planner: warning: the plan does not fit: {d['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU "
              f"against {d['memory_capacity_bytes'] / 2**30:.0f} GiB (see the levers, or planner suggest)", file=sys.stderr)
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    render.print_estimate(d)
    render.print_diagnosis(d["diagnosis"])
    if args.what_if:
        render.print_side_by_side(d, d["what_if"]["estimate"], "as given", f"what if {wi.label()}")
    return 0


def register_estimate(sub) -> None:
    p = sub.add_parser("estimate", help="score one plan: step time, memory, MFU, dollars, with breakdowns",
                       description="Score one parallel plan on a cluster.", epilog=EPILOG)
    add_inputs(p)
    add_plan_flags(p)
    add_what_if(p)
    p.add_argument("--comm-threshold", type=positive_float, default=0.30,
                   help="flag the plan when exposed communication exceeds this share of the step (default 0.30)")
    p.set_defaults(func=cmd_estimate)


def command_registrars() -> list:
    """One `register(subparsers)` per command, in the order `--help` lists them."""
    from . import (
        cli_calibrate,
        cli_catalog,
        cli_compare,
        cli_emit,
        cli_size,
        cli_suggest,
        cli_validate,
    )

    registrars = [register_estimate, cli_suggest.register, cli_size.register, cli_compare.register,
                  cli_emit.register, cli_calibrate.register, cli_validate.register, cli_catalog.register]
    return registrars


def build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    from .argtypes import OneLineParser

    parser = OneLineParser(
        prog="planner", description="Plan and score parallel layouts for distributed LLM training.", epilog=EPILOG)
    try:
        parser.add_argument("--version", action="version", version=f"planner {version('planner')}")
    except PackageNotFoundError:
        pass
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=OneLineParser)
    for register in command_registrars():
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except PlannerError as err:
        print(f"planner: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("planner: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
