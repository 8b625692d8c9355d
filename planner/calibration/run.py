"""`planner calibrate` as a function: read nccl-tests logs and timed steps, fit the cluster's link
tiers and compute efficiency, and build the calibrated cluster file (a dict that loads back)."""
from __future__ import annotations

import datetime
import os
import sys
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from costmodel import types as cm
from planner.calibration import comm as comm_fit
from planner.calibration import output
from planner.calibration import steps as step_fit
from planner.errors import PlannerError
from planner.inputs import catalogs, loading, reading, step_times
from planner.inputs.nccl_logs import NcclLog, NcclParseError, large_message_rows, parse_file
from planner.inputs.specs import ClusterSpec


@dataclass(frozen=True)
class PlottedLog:
    name: str
    log: NcclLog
    ranks_per_domain: int


@dataclass(frozen=True)
class Calibration:
    cluster: cm.Cluster  # as given
    linked: cm.Cluster  # with the fitted link tiers (what the plot's model lines use)
    comm: comm_fit.CommFit | None
    plotted: list[PlottedLog]
    steps: list[step_times.TimedStep]
    scale: step_fit.ScaleFit | None
    data: dict  # the calibrated cluster file


def parse_log(path: str, collective: str | None) -> NcclLog:
    """One nccl-tests log; parser errors become one line, parser warnings go to stderr."""
    p = Path(path)
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
    for w in caught:
        print(f"planner: warning: {w.message}", file=sys.stderr)
    wrong = [r.size_bytes for r in log.rows if r.wrong]
    if wrong:  # comm_fit.log_samples leaves them out
        print(f"planner: warning: {path}: skipped {len(wrong)} row(s) whose #wrong is not 0 (elements corrupted in "
              f"transit; sizes {', '.join(map(str, wrong[:5]))} B): not calibrated from", file=sys.stderr)
    return log


def warn_repeated_sizes(log: NcclLog, path: str, min_size: int) -> None:
    """One nccl-tests run times each size once per data type and operation (-d all, -o all): a fitted size (at
    least --min-size; small ones repeat in one run, where all_gather and reduce_scatter round a few bytes down to
    0 B per rank) timed again is another run's table in the same file, and fitting every row counts it as more
    measurements than were made."""
    timed = Counter((r.size_bytes, r.dtype, r.redop) for r in large_message_rows(log, min_size))
    repeated = sorted({size for (size, _, _), n in timed.items() if n > 1})
    if repeated:
        print(f"planner: warning: {path}: sizes timed more than once ({', '.join(map(str, repeated[:5]))} B): several "
              "runs in one file? each row is fitted, so repeats count as more measurements than were made",
              file=sys.stderr)


def warn_untimed(log: NcclLog, path: str, min_size: int) -> None:
    """A fitted size whose row has no usable time (nan in both sections, as nccl-tests prints a failed or
    overflowed timer) is left out by comm_fit.log_samples: say so, as for the rows the parser drops."""
    untimed = [r.size_bytes for r in large_message_rows(log, min_size)
               if comm_fit.row_seconds(r) is None and not r.wrong]
    if untimed:
        print(f"planner: warning: {path}: skipped {len(untimed)} row(s) with no usable time (nan; sizes "
              f"{', '.join(map(str, untimed[:5]))} B): not calibrated from", file=sys.stderr)


def fit_nccl(paths: list[str], collective: str | None, min_size: int, cluster: cm.Cluster):
    """(CommFit, logs for the plot) from every log, or (None, []). A file given twice is refused: its rows
    would count as twice the measurements that were made."""
    seen: dict[str, str] = {}
    for path in paths:
        key = os.path.realpath(path)  # not Path.resolve, which raises on a symlink loop (parse_log says so)
        if key in seen:
            raise PlannerError(f"--nccl {path}: the same file as {seen[key]}, given twice (its rows would count "
                               "as more measurements than were made)")
        seen[key] = path
    samples, plotted = [], []
    for path in paths:
        log = parse_log(path, collective)
        got = comm_fit.log_samples(log, path, cluster, min_size)
        warn_repeated_sizes(log, path, min_size)
        warn_untimed(log, path, min_size)
        samples += got
        plotted.append(PlottedLog(path, log, got[0].ranks_per_domain))
    if not samples:
        return None, []
    fit = comm_fit.calibrate_comm(samples, cluster)
    for line in comm_fit.poor_fit_lines(fit):
        print(f"planner: warning: {line}", file=sys.stderr)
    return fit, plotted


def provenance(base_ref: str, spec: ClusterSpec, nccl: list[str], min_size: int, steps_path: str | None,
               scale: step_fit.ScaleFit | None, fit: comm_fit.CommFit | None = None) -> dict:
    """`calibrated_from`: date, inputs, and what was kept from an earlier calibration: its logs (as
    `earlier_nccl_logs` beside new ones) where the new logs leave a link tier unfitted, whose figures stay; its
    step times and the scale's error where no new step times are given (its scale stays)."""
    old = spec.calibrated_from
    earlier: list[str] = []
    if old and nccl and not (fit and fit.nvlink and fit.network):  # each once, none of this run's own
        earlier = [log for log in dict.fromkeys([*old.earlier_nccl_logs, *old.nccl_logs]) if log not in nccl]
    stderr = (scale.stderr if scale else old.matmul_efficiency_scale_stderr if old else None)
    out = {"date": datetime.date.today().isoformat(), "tool": "planner calibrate", "base": base_ref,
           "nccl_logs": list(nccl) or (list(old.nccl_logs) if old else []),
           "earlier_nccl_logs": earlier or (list(old.earlier_nccl_logs) if old and not nccl else []),
           "min_message_bytes": min_size if nccl else (old.min_message_bytes if old else None),
           "step_times": steps_path or (old.step_times if old else None),
           "matmul_efficiency_scale_stderr": round(stderr, 4) if stderr else None}
    return {k: v for k, v in out.items() if v not in (None, [])}


def cluster_from(data: dict, gpu, num_gpus: int) -> cm.Cluster:
    """Cost-model cluster of a cluster-file dict (validated as a loaded file would be)."""
    return reading.parse(ClusterSpec, data, "calibrated cluster").to_cluster(gpu, num_gpus)


def calibrate(cluster_ref: str, nccl: list[str], collective: str | None = None, min_size: int = 64 * 2**20,
              steps_path: str | None = None) -> Calibration:
    if not nccl and not steps_path:
        raise PlannerError("nothing to calibrate from: pass --nccl LOG and/or --step-times FILE")
    spec = loading.load_cluster_spec(cluster_ref)
    gpu = catalogs.resolve_gpu(spec.gpu)
    cluster = spec.to_cluster(gpu, spec.num_gpus or 1)
    fitted, plotted = fit_nccl(nccl, collective, min_size, cluster)
    base = spec.model_dump(mode="json", exclude_none=True)
    linked = cluster_from(output.calibrated_dict(base, fitted, None, {"date": "-"}), gpu, cluster.num_gpus)
    timed, scale = [], None
    if steps_path:
        timed = step_times.load_steps(Path(steps_path), spec)
        scale = step_fit.fit_scale(timed, linked, cluster)
        for line in scale.warnings:
            print(f"planner: warning: {line}", file=sys.stderr)
    data = output.calibrated_dict(base, fitted, scale, provenance(cluster_ref, spec, nccl, min_size, steps_path, scale,
                                                                     fitted))
    cluster_from(data, gpu, cluster.num_gpus)  # what is written must load back
    return Calibration(cluster, linked, fitted, plotted, timed, scale, data)
