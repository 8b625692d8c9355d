"""`planner suggest MODEL CLUSTER`: the best plans for a GPU count, ranked, with the reasons.

Searches every legal layout and knob combination (planner/search), ranks the best plan of each
distinct (tp, cp, pp, dp, ep, etp) layout by step time (or dollars), and scores each with `planner
estimate`'s own code, so `--json` plans are the objects `planner estimate --json` prints.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from costmodel import types as cm
from planner.commands.common import EPILOG, add_inputs, add_what_if, add_what_if_grid, print_json
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.argtypes import batch_arg, bounded_int, file_arg, fraction_arg, plain_int
from planner.inputs.planflags import NUMERICS, add_numerics_flags

# --fix KEY -> the search's Layout field; knobs by their own name or the plan field's (fix_keys).
LAYOUT_FIX_KEYS = {"tp": "tp", "pp": "pp", "dp": "dp", "vpp": "vpp", "mbs": "mbs", "micro_batch_size": "mbs",
                   "cp": "cp", "ep": "ep", "etp": "etp"}
FIX_HELP = ("pin a choice (repeatable): tp, pp, dp, vpp, mbs, cp, ep, etp, or a knob by its plan field: zero_stage, "
            "recompute, sequence_parallel, precision, grad_dtype, weight_casts, zero3_reshard, tp_comm_overlap, "
            "cp_comm, ep_overlap, pipeline_buffers, attention_kernel, grad_sync, sp_gathered, ep_dispatch, "
            "moe_cuda_graphs, overlap_dp_comm, offload_layers, recompute_layers, tp_async_grad, projections, "
            "rope_fusion, moe_act_prologue, cross_entropy, grad_bucket_elements, expert_sizes_on_device (short names: "
            "zero, sp, grad, offl, rcl, ...)")


def fix_keys() -> dict[str, str]:
    """--fix KEY -> the search's Layout or Knobs field: each knob by its own name and by the plan field's
    (planner/search/space.py PLAN_FIELDS), so `--fix zero=1` and `--fix zero_stage=1` are one fix."""
    from planner.search.space import PLAN_FIELDS  # the search's imports stay off `--help`

    return {**LAYOUT_FIX_KEYS, **{knob: knob for knob in PLAN_FIELDS},
            **{plan: knob for knob, plan in PLAN_FIELDS.items()}}


TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
# --fix keys with a meaning only for an MoE model, and their dense value
MOE_FIXES = {"ep": 1, "etp": 1, "epo": False, "epd": "alltoall", "mcg": False, "actp": False, "esd": False}
FRAMEWORK_CHOICES = ("any", "megatron", "deepspeed", "torchtitan")
FIX_BOUNDS = {"tp": (1, L.MAX_DEGREE), "pp": (1, L.MAX_DEGREE), "dp": (1, L.MAX_DEGREE), "vpp": (1, L.MAX_LAYERS),
              "mbs": (1, L.MAX_BATCH), "zero": (0, 3), "cp": (1, L.MAX_DEGREE), "ep": (1, L.MAX_DEGREE),
              "etp": (1, L.MAX_DEGREE), "offl": (0, L.MAX_LAYERS),
              "rcl": (0, L.MAX_LAYERS), "gbuf": (0, L.MAX_GRAD_BUCKET_ELEMENTS)}


def parse_fix_value(key: str, value: str, name: str) -> object:
    """The value of `--fix NAME=VALUE` for the search field `key` (NAME as typed, for the error)."""
    if key in FIX_BOUNDS:
        low, high = FIX_BOUNDS[key]
        try:
            number = plain_int(value)
        except ValueError:
            raise PlannerError(f"--fix {name}={value[:40]}: expected an integer") from None
        if not low <= number <= high:
            raise PlannerError(f"--fix {name}={value[:40]}: must be between {low} and {high:,}")
        return number
    from planner.search.space import KNOB_CHOICES

    allowed = KNOB_CHOICES[key]
    if allowed == (False, True):
        if value.lower() not in TRUE + FALSE:
            raise PlannerError(f"--fix {name}={value[:40]}: expected true or false")
        return value.lower() in TRUE
    if value not in allowed:
        raise PlannerError(f"--fix {name}={value[:40]}: expected one of {', '.join(allowed)}")
    return value


def parse_fixes(items: list[str] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    keys = fix_keys()
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or name.strip() not in keys:
            raise PlannerError(f"--fix {item[:60]}: expected KEY=VALUE with KEY one of {', '.join(sorted(keys))}")
        key = keys[name.strip()]
        value = parse_fix_value(key, value.strip(), name.strip())
        if key in out and out[key] != value:
            raise PlannerError(f"--fix {item[:60]}: {name.strip()} is already fixed to {out[key]}")
        out[key] = value
    return out


def parse_list(text: str, allowed: tuple[str, ...], flag: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise PlannerError(f"{flag} {text}: expected a comma-separated list of {', '.join(allowed)}")
    return items


def search_spec(args: argparse.Namespace):
    """(ModelSpec, SearchSpec) from the command line."""
    from planner.frameworks import NAMES
    from planner.inputs import loading
    from planner.search.space import SearchSpec

    model = loading.load_model_spec(args.model, args.seq_length, args.gbs, need_seq_length=True)
    if not model.global_batch_size:
        raise PlannerError(f"model '{model.name}' has no global_batch_size; pass --gbs")
    cluster = loading.build_cluster(loading.load_cluster_spec(args.cluster), args.gpus)
    fixed = parse_fixes(args.fix)
    keys, moe_only = fix_keys(), []
    for item in args.fix or []:
        key = keys[item.partition("=")[0].strip()]
        if key in MOE_FIXES and fixed[key] != MOE_FIXES[key]:
            moe_only.append(item.strip())
    if moe_only and model.moe is None:
        raise PlannerError(f"--fix {', '.join(moe_only)}: expert parallelism applies only to mixture-of-experts "
                           "models (this one is dense)")
    fws = parse_list(args.framework, FRAMEWORK_CHOICES, "--framework")
    fws = NAMES if "any" in fws else fws
    precisions = parse_list("bf16" if args.precision is None else args.precision, cm.PRECISIONS, "--precision")
    if "precision" in fixed:
        if args.precision is not None and fixed["precision"] not in precisions:
            raise PlannerError(f"--fix precision={fixed['precision']} contradicts --precision {args.precision}")
        precisions = (fixed["precision"],)
    grads = ("",) if args.grad_dtype is None else parse_list(args.grad_dtype, cm.GRAD_DTYPES, "--grad-dtype")
    if "grad" in fixed:
        if args.grad_dtype is not None and fixed["grad"] not in grads:
            raise PlannerError(f"--fix grad_dtype={fixed['grad']} contradicts --grad-dtype {args.grad_dtype}")
        grads = (fixed["grad"],)
    check_flags_against_fixes(args, fixed)
    numerics = {name: getattr(args, name) for name in NUMERICS}
    spec = SearchSpec(model.to_model(), cluster, model.global_batch_size, fws, precisions, grads, fixed,
                      flash_attention=not args.no_flash_attention, overlap_dp_comm=not args.no_overlap,
                      overlap_pp_comm=not args.no_pp_overlap, numerics=numerics,
                      block_recompute=args.block_recompute)
    return model, spec


def check_flags_against_fixes(args: argparse.Namespace, fixed: dict) -> None:
    """A --fix that a search flag rules out is refused rather than one of them silently winning."""
    if args.no_overlap and fixed.get("dpo") is True:
        raise PlannerError("--fix overlap_dp_comm=true contradicts --no-overlap")
    if args.no_flash_attention and "attn" in fixed:
        raise PlannerError(f"--fix attention_kernel={fixed['attn']} names a fused attention kernel; "
                           "--no-flash-attention runs attention unfused")
    if args.block_recompute and fixed.get("recompute", "full") != "full":
        raise PlannerError(f"--block-recompute searches full recompute of the first layers of each chunk; "
                           f"--fix recompute={fixed['recompute']} leaves it nothing to search")


def run_search(quiet: bool):
    """suggest.run, with a spinner on a terminal."""
    from planner.search import suggest

    if quiet or not sys.stderr.isatty():
        return suggest.run

    def run(spec, opts, eff):
        from rich.console import Console

        with Console(stderr=True).status(f"searching plans for {spec.cluster.num_gpus} GPUs ..."):
            return suggest.run(spec, opts, eff)
    return run


def cmd_suggest(args: argparse.Namespace) -> int:
    """Over planner.search.report.suggest_report."""
    from planner.analysis import whatif
    from planner.render import estimate as render_estimate
    from planner.render import suggest as render_suggest
    from planner.search import stability
    from planner.search.report import suggest_report
    from planner.search.suggest import Options

    if not args.out.strip():
        raise PlannerError("--out: expected a folder name")
    if args.out != "launch" and not args.emit:
        raise PlannerError("--out is the folder for --emit; pass --emit deepspeed|megatron|all too")
    if args.force and not (args.emit or args.report):
        raise PlannerError("--force overwrites what --emit or --report write; pass one of them too")
    if args.report:
        from planner.render.report import check_target

        check_target(args.report, args.force)
    model, spec = search_spec(args)
    emit_names = emitted_frameworks(args.emit, spec.frameworks) if args.emit else []
    opts = Options(args.top, args.objective, args.max_memory_fraction, args.solver)
    grid = stability.parse_grid(args.what_if_grid)[1] if args.what_if_grid else []
    assumed = whatif.parse(args.what_if)
    out = suggest_report(model, spec, opts, assumed, grid, run_search(args.json))
    for note in out["search"]["notes"]:
        print(f"planner: note: {note}", file=sys.stderr)
    for warning in out["warnings"]:
        print(f"planner: warning: {warning}", file=sys.stderr)
    if args.emit:
        from planner.emit import emit_per_framework
        from planner.search.report import best_per_framework

        chosen, notes = best_per_framework(model, spec, opts, out, emit_names, assumed)
        if not chosen:  # the notes say why, once, as the error
            raise PlannerError(f"no plan for --emit {args.emit}: " + "; ".join(notes))
        for note in notes:
            print(f"planner: note: {note}", file=sys.stderr)
        cautions = {k: out[k] for k in ("envelope", "unvalidated_settings", "host_wait", "long_context")}
        launched = {name: {**est, **cautions} if est.get("plan") == out["plans"][0]["plan"] else est
                    for name, est in chosen.items()}  # the best plan's cautions for its README (emit.readme)
        paths = emit_per_framework(model, launched, args.out, args.force)
        for path in paths:
            print(f"planner: wrote {path}", file=sys.stderr)
        out["emitted"] = emitted_dict(Path(args.out), paths, chosen, out["plans"][0], notes)
    if args.report:
        from planner.render.report import write_report

        print(f"planner: wrote {write_report(args.report, out, args.force)}", file=sys.stderr)
    if args.json:
        print_json(out)
        return 0
    if "what_if" in out:
        print(f"what if {out['what_if']}:")
    render_suggest.print_suggestions(out["plans"], out["why"], out["search"], envelope=out["envelope"],
                                     unvalidated=out["unvalidated_settings"], host_wait=out["host_wait"],
                                     long_context=out["long_context"], accuracy=out["accuracy"],
                                     model_accuracy=out["model_accuracy"])
    render_estimate.print_diagnosis(out["diagnosis"])
    if "stability" in out:
        render_suggest.print_stability(out["stability"], out["plans"][0])
    return 0


def emitted_frameworks(emit: str, searched: tuple[str, ...]) -> list[str]:
    """The frameworks --emit writes, within those --framework searches: a framework left out of the search
    is not searched behind the user's back for its files (--framework megatron --emit torchtitan is refused)."""
    from planner.emit import formats

    names = [name for name in formats(emit) if name in searched]
    if not names:
        wanted = ", ".join(formats(emit))
        raise PlannerError(f"--emit {emit}: {wanted} not searched (--framework {','.join(searched)}); add it to "
                           "--framework, or emit a framework searched")
    return names


def emitted_dict(out_dir: Path, paths: list[Path], chosen: dict[str, dict], best: dict, notes: list[str]) -> dict:
    """The `emitted` object of suggest --json: the files written and, per framework (each writes under
    its own folder), the plan they launch."""
    def own(name: str) -> list[str]:
        return [str(p) for p in paths if p.relative_to(out_dir).parts[0] == name]
    return {"out": str(out_dir), "files": [str(p) for p in paths],
            "frameworks": [{"framework": name, "best": est is best, "plan": est["plan"],
                            "step_time_s": est["step_time_s"], "files": own(name)} for name, est in chosen.items()],
            "notes": notes}


def register(sub) -> None:

    p = sub.add_parser("suggest", help="the best plans for a GPU count, ranked by step time or dollars",
                       description="Search every legal plan (CP-SAT over the cost model) and rank the best "
                                   "distinct (tp, cp, pp, dp, ep, etp) layouts.", epilog=EPILOG)
    add_inputs(p)
    p.add_argument("--gbs", type=batch_arg, help="global batch in sequences (default: the model's global_batch_size)")
    p.add_argument("--top", type=bounded_int(100), default=5, help="how many distinct layouts to show (default 5)")
    p.add_argument("--objective", default="time", choices=["time", "cost"],
                   help="minimise step time (then $/step) or $/step (then time); default time")
    p.add_argument("--max-memory-fraction", type=fraction_arg, default=L.MEMORY_FRACTION,
                   help=f"usable share of GPU memory, on top of the cost model's 2 GiB overhead (default "
                        f"{L.MEMORY_FRACTION:g})")
    p.add_argument("--fix", action="append", metavar="KEY=VALUE",
                   help=FIX_HELP)
    p.add_argument("--framework", default="any",
                   help="any (default), or comma-separated megatron, deepspeed, torchtitan: only plans they run")
    p.add_argument("--precision", help="comma-separated precisions to consider (default bf16)")
    p.add_argument("--grad-dtype", help="comma-separated gradient dtypes to consider, e.g. fp32,bf16 "
                                        "(default: the precision's own)")
    p.add_argument("--no-flash-attention", action="store_true", help="unfused attention (pre-FlashAttention stacks)")
    p.add_argument("--no-overlap", action="store_true",
                   help="DP/ZeRO sync does not overlap backward compute, in every plan (the same as --fix "
                        "overlap_dp_comm=false; without it each framework's plans overlap where it can)")
    p.add_argument("--no-pp-overlap", action="store_true", help="pipeline p2p does not overlap compute")
    p.add_argument("--block-recompute", action="store_true",
                   help="also search full recompute of only the first N layers of each model chunk, N = 1, 2, 4, ... "
                        "(Megatron --recompute-method block; 1.3-1.5x the search time where recompute is needed)")
    add_numerics_flags(p.add_argument_group("numerics (every plan searched uses them; the search never picks them)"))
    add_what_if(p, "search")
    add_what_if_grid(p, "rank stability: search again for each value (e.g. network=0.5,0.6,0.7,0.8,0.9,1.0) and "
                        "show whether the best plan stays best")
    p.add_argument("--emit", choices=["deepspeed", "megatron", "torchtitan", "all"],
                   help="write launch files for the best plan (see `planner emit`); all = deepspeed and megatron "
                        "(torchtitan builds only its own model definitions, so it is asked for by name)")
    p.add_argument("--out", default="launch", help="folder for --emit (default ./launch)")
    p.add_argument("--report", type=file_arg, metavar="FILE.html",
                   help="also write the ranked plans, their time and memory charts and the diagnosis as one "
                        "self-contained HTML page (needs matplotlib: pip install 'matplotlib>=3.7')")
    p.add_argument("--force", action="store_true", help="let --emit and --report overwrite existing files")
    p.add_argument("--solver", default="cpsat", choices=["cpsat", "enumerate"],
                   help="cpsat (default), or score every plan with the cost model (slow; the test oracle)")
    p.set_defaults(func=cmd_suggest)
