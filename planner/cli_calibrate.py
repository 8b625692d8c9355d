"""`planner calibrate CLUSTER --nccl LOG ... [--step-times FILE] --out FILE`: a measured cluster file."""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import warnings
from pathlib import Path

DESCRIPTION = """Fit a cluster's link tiers to nccl-tests output (all_reduce, all_gather, reduce_scatter,
sendrecv; any text era or -J JSON) and, with --step-times, its compute efficiency to measured steps.
Only large messages are used (--min-size). Single-node runs calibrate NVLink; multi-node runs the
network, after the NVLink part of the cost model's hierarchical collective is subtracted. The result
is the input cluster plus the fitted figures and their provenance, usable as any CLUSTER."""

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'64M' -> 67108864: binary K/M/G/T like nccl-tests -b/-e; plain numbers are bytes."""
    m = _SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, 1048576)")
    return int(float(m.group(1)) * 2 ** (10 * " KMGT".index(m.group(2).upper() or " ")))


def parse_log(path: str, collective: str | None):
    """One nccl-tests log; parser errors and warnings become planner's one-line messages."""
    from .errors import PlannerError
    from .nccl_logs import NcclParseError, parse_file

    p = Path(path)
    if not p.is_file():
        raise PlannerError(f"{path}: no such file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            log = parse_file(p, collective)
        except NcclParseError as err:
            msg = str(err).replace("pass collective='all_reduce' (or the right name)",
                                   "pass --collective NAME or name the file after the test (all_reduce_perf.log)")
            raise PlannerError(msg) from None
        except ValueError as err:  # unknown --collective name
            raise PlannerError(str(err)) from None
        except OSError as err:
            raise PlannerError(f"{path}: cannot read ({err.strerror})") from None
    for w in caught:
        print(f"planner: warning: {w.message}", file=sys.stderr)
    return log


def fit_nccl(args, cluster):
    """(CommFit, logs for the plot) from every --nccl file, or (None, [])."""
    from . import calibrate
    from .calibrate_output import PlottedLog

    samples, plotted = [], []
    for path in args.nccl:
        log = parse_log(path, args.collective)
        got = calibrate.log_samples(log, path, cluster, args.min_size)
        samples += got
        plotted.append(PlottedLog(path, log, got[0].ranks_per_domain))
    return (calibrate.calibrate_comm(samples, cluster), plotted) if samples else (None, [])


def provenance(args, spec, scale_fit) -> dict:
    """`calibrated_from`: date, inputs, and what was kept from an earlier calibration."""
    old = spec.calibrated_from
    out = {"date": datetime.date.today().isoformat(), "tool": "planner calibrate", "base": args.cluster,
           "nccl_logs": list(args.nccl) or (list(old.nccl_logs) if old else []),
           "min_message_bytes": args.min_size if args.nccl else (old.min_message_bytes if old else None),
           "step_times": args.step_times or (old.step_times if old else None),
           "matmul_efficiency_scale_stderr": round(scale_fit.stderr, 4) if scale_fit and scale_fit.stderr else None}
    return {k: v for k, v in out.items() if v not in (None, [])}


def write_text(path: str, text: str, force: bool) -> None:
    from .files import write_atomic
    from .errors import PlannerError

    target = Path(path)
    if target.is_dir():
        raise PlannerError(f"{path}: is a folder")
    if target.exists() and not force:
        raise PlannerError(f"refusing to overwrite {path} (pass --force)")
    try:
        write_atomic(target, text, executable=False)
    except OSError as exc:
        raise PlannerError(f"cannot write {exc.filename or path}: {exc.strerror}") from None


def check_outputs(args) -> None:
    """Refuse before any work: nothing to fit, a plot without logs, existing outputs without --force."""
    from .errors import PlannerError

    if not args.nccl and not args.step_times:
        raise PlannerError("nothing to calibrate from: pass --nccl LOG and/or --step-times FILE")
    if args.plot and not args.nccl:
        raise PlannerError("--plot draws the nccl-tests fit; pass --nccl LOG")
    for path in (args.out, args.plot):
        if path and Path(path).exists() and not args.force:
            raise PlannerError(f"refusing to overwrite {path} (pass --force)")


def cluster_from(data: dict, gpu, num_gpus: int):
    """Cost-model cluster of a cluster-file dict (validated as a loaded file would be)."""
    from .loading import parse
    from .specs import ClusterSpec

    return parse(ClusterSpec, data, "calibrated cluster").to_cluster(gpu, num_gpus)


def write_outputs(args, data: dict, plotted, fitted) -> None:
    """The cluster YAML (--out) and the SVG (--plot), each atomic and refused without --force."""
    from costmodel import topology
    from costmodel.types import Efficiency

    from . import calibrate_output as out

    if args.out:
        write_text(args.out, out.cluster_yaml(data), args.force)
    if args.plot:
        fast, slow = topology.nvlink_link(fitted, Efficiency()), topology.network_link(fitted, Efficiency())
        write_text(args.plot, out.plot_svg(plotted, fast, slow, args.min_size), args.force)
    for path in (args.out, args.plot) if not args.json else ():
        if path:
            print(f"wrote {path}")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from . import calibrate_output as out
    from . import calibrate_steps, loading, step_times

    check_outputs(args)
    spec = loading.load_cluster_spec(args.cluster)
    gpu = loading.resolve_gpu(spec.gpu)
    cluster = spec.to_cluster(gpu, spec.num_gpus or 1)
    comm_fit, plotted = fit_nccl(args, cluster)
    base = spec.model_dump(mode="json", exclude_none=True)
    linked = cluster_from(out.calibrated_dict(base, comm_fit, None, {"date": "-"}), gpu, cluster.num_gpus)
    steps, scale_fit = [], None
    if args.step_times:
        steps = step_times.load_steps(Path(args.step_times), spec)
        scale_fit = calibrate_steps.fit_scale(steps, linked, cluster)
    data = out.calibrated_dict(base, comm_fit, scale_fit, provenance(args, spec, scale_fit))
    cluster_from(data, gpu, cluster.num_gpus)  # what is written must load back
    report(args, cluster, comm_fit, steps, scale_fit)
    write_outputs(args, data, plotted, linked)
    return 0


def report(args, cluster, comm_fit, steps, scale_fit) -> None:
    """Tables and fitted figures, or one JSON object with --json."""
    from rich.console import Console

    from costmodel import topology
    from costmodel.types import Efficiency

    from . import calibrate_output as out

    if args.json:
        print(json.dumps({
            "cluster": cluster.name, "out": args.out, "plot": args.plot,
            "nvlink": out.tier_json(comm_fit.nvlink if comm_fit else None),
            "network": out.tier_json(comm_fit.network if comm_fit else None),
            "rows": out.rows_json(comm_fit.rows) if comm_fit else [],
            "compute": out.steps_json(steps, scale_fit)}, indent=2))
        return
    console = Console()
    if comm_fit:
        for line in out.logs_legend(comm_fit.rows):
            print(line)
        console.print(out.fit_table(comm_fit.rows))
        eff = Efficiency()
        before = {"nvlink": topology.nvlink_link(cluster, eff), "network": topology.network_link(cluster, eff)}
        for tier in (comm_fit.nvlink, comm_fit.network):
            if tier:
                print(out.tier_line(tier, before[tier.tier], comm_fit.rows))
    if scale_fit:
        console.print(out.steps_table(steps, scale_fit))
        peak = Efficiency().matmul_peak_fraction.get(cluster.gpu.generation, 0.75)
        print(out.scale_line(steps, scale_fit, peak))


def register(sub) -> None:
    p = sub.add_parser("calibrate", description=DESCRIPTION,
                       help="fit a cluster to its nccl-tests logs and timed steps")
    p.add_argument("cluster", metavar="CLUSTER", help="cluster YAML or catalog name to calibrate")
    p.add_argument("--nccl", action="append", default=[], metavar="LOG",
                   help="nccl-tests output (text or -J JSON); repeat for several runs")
    p.add_argument("--collective", metavar="NAME",
                   help="the test that produced the logs, when they do not say (e.g. all_reduce)")
    p.add_argument("--min-size", type=parse_size, default=64 * 2**20, metavar="SIZE",
                   help="smallest message used in the fit (default 64M; binary K/M/G as nccl-tests -b)")
    p.add_argument("--step-times", metavar="FILE",
                   help="measured steps (CSV or YAML rows: model, plan flags, gpus, step_time_s) "
                        "to fit the compute efficiency")
    p.add_argument("--out", metavar="FILE", help="write the calibrated cluster YAML here")
    p.add_argument("--plot", metavar="FILE.svg", help="draw measured vs model time per message size (SVG)")
    p.add_argument("--force", action="store_true", help="overwrite --out / --plot files")
    p.add_argument("--json", action="store_true", help="print one JSON object with the fitted figures and the table")
    p.set_defaults(func=cmd_calibrate)
