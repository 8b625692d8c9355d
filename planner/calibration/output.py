"""What `planner calibrate` writes: the calibrated cluster file, and its results as JSON.

Human units appear only here, in the YAML keys (GB/s = 1e9 B/s, us), and in planner/render/calibrate.py.
"""
from __future__ import annotations

import yaml

from planner.calibration.comm import CommFit, FitRow, TierFit
from planner.calibration.steps import ScaleFit, mape
from planner.inputs.step_times import TimedStep

TIER_KEYS = {"nvlink": ("nvlink_busbw_gbytes_per_s", "nvlink_latency_us"),
             "network": ("network_busbw_gbytes_per_s", "network_latency_us")}


def significant(x: float, digits: int = 4) -> float:
    """`x` to `digits` significant figures: a fit's precision at any magnitude (a fixed number of decimals
    wrote 0.0050 GB/s as 0.01, twice the rate)."""
    return float(f"{x:.{digits}g}")


def tier_fields(fit: TierFit) -> dict:
    """Cluster-file keys for one fitted tier (latency only when the fit determined it)."""
    bw_key, lat_key = TIER_KEYS[fit.tier]
    out = {bw_key: significant(fit.link.bandwidth_bytes_per_second / 1e9)}
    if fit.latency_fitted:  # 0 would read as "not measured", so a zero fit is written as 1 ns
        out[lat_key] = significant(fit.link.latency_seconds * 1e6) or 0.001
    return out


def calibrated_dict(base: dict, fit: CommFit | None, scale: ScaleFit | None, provenance: dict) -> dict:
    """The input cluster's keys with the fitted figures and `calibrated_from` (a YAML-ready dict)."""
    data = {k: v for k, v in base.items() if k != "calibrated_from"}
    if not str(data["name"]).endswith("-calibrated"):
        data["name"] = f"{data['name']}-calibrated"
    for tier in (fit.nvlink, fit.network) if fit else ():
        if tier:
            data.update(tier_fields(tier))
    if scale:
        data["matmul_efficiency_scale"] = round(scale.scale, 4)
    data["calibrated_from"] = provenance
    return data


def cluster_yaml(data: dict) -> str:
    header = (f"# {data['name']}: written by `planner calibrate` on {data['calibrated_from']['date']}.\n"
              "# Measured *_busbw_gbytes_per_s (nccl-tests bus bandwidth) and *_latency_us (per ring step: a\n"
              "# collective over n ranks takes 2(n-1) of them for all_reduce, n-1 for all_gather / reduce_scatter)\n"
              "# replace nominal x efficiency; matmul_efficiency_scale multiplies the achievable matmul efficiency.\n"
              "# Use it as any cluster file.\n")
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)


def tier_json(fit: TierFit | None) -> dict | None:
    if fit is None:
        return None
    se_bw, se_lat = fit.bandwidth_stderr, fit.latency_stderr
    return {"busbw_gbytes_per_s": fit.link.bandwidth_bytes_per_second / 1e9,
            "busbw_stderr_gbytes_per_s": None if se_bw is None else se_bw / 1e9,
            "latency_us": fit.link.latency_seconds * 1e6, "latency_fitted": fit.latency_fitted,
            "latency_stderr_us": None if se_lat is None else se_lat * 1e6, "rows": len(fit.samples)}


def rows_json(rows: tuple[FitRow, ...]) -> list[dict]:
    return [{"log": r.sample.log, "collective": r.sample.collective, "ranks": r.sample.ranks, "tier": r.sample.tier,
             "size_bytes": r.sample.size_bytes, "measured_us": r.sample.measured_seconds * 1e6,
             "model_us": r.model_seconds * 1e6, "error": r.error} for r in rows]


def steps_json(steps: list[TimedStep], fit: ScaleFit | None) -> dict | None:
    if fit is None:
        return None
    rows = [{"step": s.label, "measured_s": s.measured_seconds, "before_s": b, "after_s": a, "implied_scale": k,
             "used": u} for s, b, a, k, u in zip(steps, fit.before_seconds, fit.after_seconds, fit.implied, fit.used)]
    return {"matmul_efficiency_scale": fit.scale, "stderr": fit.stderr, "mape_before": mape(fit.before_seconds, steps),
            "mape_after": mape(fit.after_seconds, steps), "steps": rows, "warnings": list(fit.warnings)}
