"""`planner suggest MODEL CLUSTER`: the best plans for a GPU count, ranked, with the reasons.

Searches every legal layout and knob combination (planner/search), ranks the best plan of each
distinct (tp, pp, dp) layout by step time (or dollars), and scores each with `planner estimate`'s
own code, so `--json` plans are the objects `planner estimate --json` prints.
"""
from __future__ import annotations

import argparse
import json
import sys

from costmodel import types as cm

from .argtypes import positive_float, positive_int
from .errors import PlannerError

FIX_KEYS = {"tp": "tp", "pp": "pp", "dp": "dp", "vpp": "vpp", "mbs": "mbs", "micro_batch_size": "mbs",
            "zero": "zero", "zero_stage": "zero", "recompute": "recompute", "sp": "sp",
            "sequence_parallel": "sp", "precision": "precision", "grad": "grad", "grad_dtype": "grad"}
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
FRAMEWORK_CHOICES = ("any", "megatron", "deepspeed", "torchtitan")


def parse_fix_value(key: str, value: str) -> object:
    if key in ("tp", "pp", "dp", "vpp", "mbs", "zero"):
        try:
            number = int(value)
        except ValueError:
            raise PlannerError(f"--fix {key}={value}: expected an integer") from None
        if key == "zero" and number not in (0, 1, 2, 3):
            raise PlannerError(f"--fix zero={value}: ZeRO stage must be 0-3")
        if key != "zero" and number < 1:
            raise PlannerError(f"--fix {key}={value}: must be >= 1")
        return number
    if key == "sp":
        if value.lower() not in TRUE + FALSE:
            raise PlannerError(f"--fix sp={value}: expected true or false")
        return value.lower() in TRUE
    allowed = {"recompute": cm.RECOMPUTE_MODES, "precision": cm.PRECISIONS, "grad": cm.GRAD_DTYPES}[key]
    if value not in allowed:
        raise PlannerError(f"--fix {key}={value}: expected one of {', '.join(allowed)}")
    return value


def parse_fixes(items: list[str] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in FIX_KEYS:
            raise PlannerError(f"--fix {item}: expected KEY=VALUE with KEY one of {', '.join(sorted(set(FIX_KEYS)))}")
        key = FIX_KEYS[name.strip()]
        out[key] = parse_fix_value(key, value.strip())
    return out


def parse_list(text: str, allowed: tuple[str, ...], flag: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise PlannerError(f"{flag} {text}: expected a comma-separated list of {', '.join(allowed)}")
    return items


def search_spec(args: argparse.Namespace):
    """(ModelSpec, SearchSpec) from the command line."""
    from . import loading
    from .search.frameworks import FRAMEWORKS
    from .search.space import SearchSpec

    model = loading.load_model_spec(args.model, args.seq_length, args.gbs)
    if not model.global_batch_size:
        raise PlannerError(f"model '{model.name}' has no global_batch_size; pass --gbs")
    cluster = loading.build_cluster(loading.load_cluster_spec(args.cluster), args.gpus)
    fixed = parse_fixes(args.fix)
    fws = parse_list(args.framework, FRAMEWORK_CHOICES, "--framework")
    fws = FRAMEWORKS if "any" in fws else fws
    precisions = (fixed["precision"],) if "precision" in fixed else parse_list(args.precision, cm.PRECISIONS,
                                                                                 "--precision")
    grads = ("",) if args.grad_dtype is None else parse_list(args.grad_dtype, cm.GRAD_DTYPES, "--grad-dtype")
    grads = (fixed["grad"],) if "grad" in fixed else grads
    spec = SearchSpec(model.to_model(), cluster, model.global_batch_size, fws, precisions, grads, fixed,
                      flash_attention=not args.no_flash_attention, overlap_dp_comm=not args.no_overlap,
                      overlap_pp_comm=not args.no_pp_overlap)
    return model, spec


def check_agreement(ranked, dicts: list[dict]) -> None:
    """The search's tabled numbers must be the cost model's: warn (stderr) if a re-score disagrees."""
    for i, (r, d) in enumerate(zip(ranked, dicts, strict=True), 1):
        step_off = abs(d["step_time_s"] - r.step_seconds) > 1e-6 * max(1.0, r.step_seconds)
        mem_off = abs(d["memory_per_gpu_bytes"] - r.peak_memory_bytes) > 2**20
        if step_off or mem_off:
            print(f"planner: warning: plan #{i}: search tables ({r.step_seconds:.6g} s, {r.peak_memory_bytes:.6g} B) "
                  f"disagree with estimate ({d['step_time_s']:.6g} s, {d['memory_per_gpu_bytes']:.6g} B); "
                  "please report", file=sys.stderr)


def run_search(spec, opts, quiet: bool, eff: cm.Efficiency):
    from .search import suggest

    if quiet or not sys.stderr.isatty():
        return suggest.run(spec, opts, eff)
    from rich.console import Console

    with Console(stderr=True).status(f"searching plans for {spec.cluster.num_gpus} GPUs ..."):
        return suggest.run(spec, opts, eff)


def search_summary(result, opts) -> dict:
    return {"solver": opts.solver, "objective": opts.objective, "max_memory_fraction": opts.max_memory_fraction,
            "space_size": result.space_size, "layouts": result.layouts, "layouts_tabled": result.layouts_tabled,
            "candidates": result.candidates, "literals": result.literals, "status": result.status,
            "seconds": result.seconds, "notes": result.notes}


def print_or_dump(args, wi, out: dict, rows) -> None:
    from . import render, render_suggest, stability

    if args.json:
        if args.what_if:
            out["what_if"] = wi.label()
        if rows:
            out["stability"] = stability.grid_dicts(rows)
        print(json.dumps(out, indent=2))
        return
    if args.what_if:
        print(f"what if {wi.label()}:")
    render_suggest.print_suggestions(out["plans"], out["why"], out["search"])
    render.print_diagnosis(out["diagnosis"])
    if rows:
        render_suggest.print_stability(rows, out["plans"][0])


def cmd_suggest(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from . import diagnose, explain, report, stability, whatif
    from .search.suggest import Options

    if args.out != "launch" and not args.emit:
        raise PlannerError("--out is the folder for --emit; pass --emit deepspeed|megatron|all too")
    model, spec = search_spec(args)
    opts = Options(args.top, args.objective, args.max_memory_fraction, args.solver)
    grid_items = stability.parse_grid(args.what_if_grid)[1] if args.what_if_grid else []
    wi = whatif.parse(args.what_if)  # searched under the assumption: the plans shown win there
    spec = replace(spec, cluster=whatif.apply_cluster(spec.cluster, wi))
    eff = whatif.apply_efficiency(cm.Efficiency(), wi)
    result = run_search(spec, opts, args.json, eff)
    for note in result.notes:
        print(f"planner: note: {note}", file=sys.stderr)
    scored = [report.score(model, spec.cluster, r.plan, eff) for r in result.ranked]
    dicts = [report.to_dict(s) for s in scored]
    check_agreement(result.ranked, dicts)
    out = {"plans": dicts, "why": explain.why_faster(dicts[0], dicts[1]) if len(dicts) > 1 else None,
           "search": search_summary(result, opts),
           "diagnosis": diagnose.diagnosis_dict(scored[0], 0.30, diagnose.try_levers(scored[0], eff))}
    rows = stability.grid(model, spec, opts, scored[0].plan, grid_items) if grid_items else []
    if args.emit:
        from .emit import emit_files

        for path in emit_files(model, dicts[0], args.emit, args.out, args.force):
            print(f"planner: wrote {path}", file=sys.stderr)
    print_or_dump(args, wi, out, rows)
    return 0


def register(sub) -> None:
    from .cli import EPILOG, add_inputs

    p = sub.add_parser("suggest", help="the best plans for a GPU count, ranked by step time or dollars",
                       description="Search every legal plan (CP-SAT over the cost model) and rank the best "
                                   "distinct (tp, pp, dp) layouts.", epilog=EPILOG)
    add_inputs(p)
    p.add_argument("--gbs", type=positive_int, help="global batch in sequences (default: the model's global_batch_size)")
    p.add_argument("--top", type=positive_int, default=5, help="how many distinct layouts to show (default 5)")
    p.add_argument("--objective", default="time", choices=["time", "cost"],
                   help="minimise step time (then $/step) or $/step (then time); default time")
    p.add_argument("--max-memory-fraction", type=positive_float, default=0.9,
                   help="usable share of GPU memory, on top of the cost model's 2 GiB overhead (default 0.9)")
    p.add_argument("--fix", action="append", metavar="KEY=VALUE",
                   help="pin a choice (repeatable): tp, pp, dp, vpp, mbs, zero, recompute, sp, precision, grad")
    p.add_argument("--framework", default="any",
                   help="any (default), or comma-separated megatron, deepspeed, torchtitan: only plans they run")
    p.add_argument("--precision", default="bf16", help="comma-separated precisions to consider (default bf16)")
    p.add_argument("--grad-dtype", help="comma-separated gradient dtypes to consider, e.g. fp32,bf16 "
                                        "(default: the precision's own)")
    p.add_argument("--no-flash-attention", action="store_true", help="unfused attention (pre-FlashAttention stacks)")
    p.add_argument("--no-overlap", action="store_true", help="DP/ZeRO sync does not overlap backward compute")
    p.add_argument("--no-pp-overlap", action="store_true", help="pipeline p2p does not overlap compute")
    p.add_argument("--what-if", action="append", metavar="KEY=VALUE",
                   help="search under an assumption (repeatable): network=0.5, nvlink=0.8, hbm=0.9, "
                        "matmul_efficiency=0.9, price.GPU=2.10, rdma=false")
    p.add_argument("--what-if-grid", metavar="KEY=V1,V2,...",
                   help="rank stability: search again for each value (e.g. network=0.5,0.6,0.7,0.8,0.9,1.0) and "
                        "show whether the best plan stays best")
    p.add_argument("--emit", choices=["deepspeed", "megatron", "all"],
                   help="write launch files for the best plan (see `planner emit`)")
    p.add_argument("--out", default="launch", help="folder for --emit (default ./launch)")
    p.add_argument("--force", action="store_true", help="let --emit overwrite existing files")
    p.add_argument("--solver", default="cpsat", choices=["cpsat", "enumerate"],
                   help="cpsat (default), or score every plan with the cost model (slow; the test oracle)")
    p.set_defaults(func=cmd_suggest)
