"""`planner estimate MODEL CLUSTER --tp T --pp P ...`: score one plan, with a diagnosis."""
from __future__ import annotations

import argparse
import sys

from planner.commands.common import EPILOG, add_inputs, add_what_if, print_json
from planner.inputs.argtypes import bounded_float
from planner.inputs.planflags import add_plan_flags, plan_spec_from_args


def cmd_estimate(args: argparse.Namespace) -> int:
    from planner.analysis.report import estimate_report
    from planner.inputs import loading

    model = loading.load_model_spec(args.model, args.seq_length, need_seq_length=True)
    cluster = loading.build_cluster(loading.load_cluster_spec(args.cluster), args.gpus)
    d = estimate_report(model, cluster, plan_spec_from_args(args), args.comm_threshold, args.what_if)
    if not d["fits"]:
        where = ("see the levers, or planner suggest" if d["diagnosis"]["levers"]
                 else "no lever here fits it: try planner suggest")
        print(f"planner: warning: the plan does not fit: {d['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU "
              f"against {d['memory_capacity_bytes'] / 2**30:.0f} GiB ({where})", file=sys.stderr)
    alt = d.get("what_if", {}).get("estimate")
    if alt is not None and not alt["fits"]:
        print(f"planner: warning: what if {d['what_if']['assumptions']}: the plan does not fit: "
              f"{alt['memory_per_gpu_bytes'] / 2**30:.1f} GiB per GPU against {alt['memory_capacity_bytes'] / 2**30:.0f} GiB",
              file=sys.stderr)
    if args.json:
        print_json(d)
        return 0
    from planner.analysis import bymodel, coverage
    from planner.render import estimate as render

    render.print_estimate(d)
    for line in coverage.cautions(d["envelope"], d["unvalidated_settings"], "the plan", host_wait=d["host_wait"],
                                  long_context=d["long_context"]):
        render.make_console().print(f"[yellow]caution:[/yellow] {line}")
    for judged in bymodel.validation_lines(d["accuracy"], d["model_accuracy"]):
        render.make_console().print(f"[bold]validation:[/bold] {judged}")
    render.print_diagnosis(d["diagnosis"])
    if "what_if" in d:
        render.print_side_by_side(d, d["what_if"]["estimate"], "as given", f"what if {d['what_if']['assumptions']}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("estimate", aliases=["diagnose"],
                       help="score one plan: step time, memory, MFU, dollars, with breakdowns and its diagnosis "
                            "(alias: diagnose)",
                       description="Score one parallel plan on a cluster and diagnose it: each part's share of the "
                                   "step, and the levers re-scored on the same cluster (`planner diagnose` is the "
                                   "same command).", epilog=EPILOG)
    add_inputs(p)
    add_plan_flags(p)
    add_what_if(p)
    p.add_argument("--comm-threshold", type=bounded_float(1.0, strict=False), default=0.30,
                   help="flag the plan when exposed communication exceeds this share of the step, 0 to 1 (default "
                        "0.30; 0: any exposed communication)")
    p.set_defaults(func=cmd_estimate)
