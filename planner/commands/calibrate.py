"""`planner calibrate CLUSTER --nccl LOG ... [--step-times FILE] --out FILE`: a measured cluster file.

Over planner.calibration.run.calibrate."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from planner.commands.common import print_json
from planner.errors import PlannerError
from planner.inputs.argtypes import file_arg

DESCRIPTION = """Fit a cluster's link tiers to nccl-tests output (all_reduce, all_gather, reduce_scatter,
sendrecv; any text era or -J JSON) and, with --step-times, its compute efficiency to measured steps.
Only large messages are used (--min-size). Single-node runs calibrate NVLink; multi-node runs the
network, after the NVLink part of the cost model's hierarchical collective is subtracted, so their
ring collectives need a single-node log beside them (or a CLUSTER whose NVLink was calibrated) unless
they run one GPU per node (-g 1); sendrecv between nodes needs none. all_reduce above the NVLink line
rate (NVLS) is refused: use NCCL_ALGO=Ring. The result is the input cluster plus the fitted figures and
their provenance, usable as any CLUSTER."""

# a number, then a binary unit (64M, 64Mi, 64MiB, 64MB) or bytes (64, 64B); "i" only after a unit letter
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([KMGT])(?:iB|B|i)?|B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'64M' -> 67108864: binary K/M/G/T like nccl-tests -b/-e; plain numbers are bytes."""
    m = _SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, 1048576)")
    number = float(m.group(1))  # a digit string too long for a float is inf, refused below
    value = number * 2 ** (10 * " KMGT".index((m.group(2) or " ").upper()))
    if not 1 <= value <= 2**50:
        raise argparse.ArgumentTypeError(f"size {text[:40]!r} must be between 1 B and 1024T")
    return int(value)


def check_outputs(args) -> None:
    """Refuse before any work: a plot without logs, one path for two files, an output over an input (even with
    --force), existing outputs without --force."""
    if args.plot and not args.nccl:
        raise PlannerError("--plot draws the nccl-tests fit; pass --nccl LOG")
    if args.plot and Path(args.plot).suffix.lower() != ".svg":
        raise PlannerError(f"--plot {args.plot}: write .svg (the picture is SVG)")
    if args.plot:
        from planner.render.mpl import require

        require("--plot")
    if args.out and args.plot and Path(args.out).resolve() == Path(args.plot).resolve():
        raise PlannerError(f"--out and --plot name the same file ({args.out}); give each its own")
    inputs = {Path(p).resolve() for p in [*args.nccl, args.step_times, args.cluster] if p and Path(p).is_file()}
    for path in (args.out, args.plot):
        if path and Path(path).resolve() in inputs:
            raise PlannerError(f"{path} is one of the inputs; write the output elsewhere")
    for path in (args.out, args.plot):
        if path and Path(path).is_dir():
            raise PlannerError(f"{path}: is a folder")
        if path and (Path(path).exists() or Path(path).is_symlink()) and not args.force:
            raise PlannerError(f"refusing to overwrite {path} (pass --force)")


def write_outputs(args, result) -> None:
    """The cluster YAML (--out) and the SVG (--plot), each atomic and refused without --force."""
    from costmodel import topology
    from costmodel.types import Efficiency
    from planner.calibration import output
    from planner.files import write_files

    if args.out:
        path = Path(args.out)
        write_files(path.parent, {path.name: (output.cluster_yaml(result.data), False)}, args.force)
    if args.plot:
        from planner.render.calibrate_plot import plot_svg

        eff = Efficiency()
        fast, slow = topology.nvlink_link(result.linked, eff), topology.network_link(result.linked, eff)
        path = Path(args.plot)
        svg = plot_svg(result.plotted, fast, slow, args.min_size, result.linked.gpu)
        write_files(path.parent, {path.name: (svg, False)}, args.force)
    for path in (args.out, args.plot) if not args.json else ():
        if path:
            print(f"wrote {path}")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from planner.calibration.run import calibrate

    check_outputs(args)
    if args.collective is not None and not args.collective.strip():
        raise PlannerError("--collective: expected a test name, e.g. all_reduce")
    result = calibrate(args.cluster, args.nccl, args.collective, args.min_size, args.step_times)
    report(args, result)
    write_outputs(args, result)
    return 0


def report(args, r) -> None:
    """Tables and fitted figures, or one JSON object with --json."""
    from planner.calibration import output
    from planner.render import calibrate as render

    if args.json:
        print_json({
            "cluster": r.cluster.name, "out": args.out, "plot": args.plot,
            "nvlink": output.tier_json(r.comm.nvlink if r.comm else None),
            "network": output.tier_json(r.comm.network if r.comm else None),
            "rows": output.rows_json(r.comm.rows) if r.comm else [],
            "compute": output.steps_json(r.steps, r.scale)})
        return
    render.print_report(r.cluster, r.comm, r.steps, r.scale)


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
    p.add_argument("--out", type=file_arg, metavar="FILE", help="write the calibrated cluster YAML here")
    p.add_argument("--plot", type=file_arg, metavar="FILE.svg",
                   help="draw measured vs model time per message size and the residuals (SVG; needs matplotlib: "
                        "pip install 'matplotlib>=3.7')")
    p.add_argument("--force", action="store_true", help="overwrite --out / --plot files")
    p.add_argument("--json", action="store_true", help="print one JSON object with the fitted figures and the table")
    p.set_defaults(func=cmd_calibrate)
