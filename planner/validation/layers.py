"""Per-layer forward and backward times against a published per-layer table (validation/layer_times.yaml:
Korthikanti et al. 2022 Table 4, one layer of the 22B model on A100). Judged, not fitted: the fit reads whole
steps only (planner/validation/fit.py), and a step can agree while its layers and the rest of the step are off
in opposite directions, which this shows.

One layer's time on the layer of the file's `run` (its model, cluster and plan, with each variant's plan
fields): forward = the layer's forward kernels (costmodel/layer.py) and its forward TP exchanges; backward =
its backward kernels, the recompute's replay, the replayed TP exchanges and the backward's
(costmodel/stage.py backward_tp_comm_seconds); the fitted per-layer overhead (launch gaps, forward and
backward together) is split evenly between them (assumed). Without the TP communication overlap only (the
rows of the table ran none), whose forward and backward shares the model does not separate.

    python -m planner.validation.layers     # the table at the shipped constants
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from costmodel import stage
from costmodel import types as cm
from planner.validation.runs import load_runs, prepare, published_file, read_data

FILE = "layer_times.yaml"


def load(path: Path | None = None) -> dict:
    return read_data(path or published_file(FILE))


def layer_seconds(model: cm.Model, cluster: cm.Cluster, plan: cm.Plan, eff: cm.Efficiency) -> tuple[float, float]:
    """(forward, backward) seconds of the model's first layer for one micro-batch on one GPU."""
    if plan.tp_comm_overlap:
        raise ValueError("per-layer times are split into forward and backward without TP overlap only")
    k = stage.stage_kernels(model, cluster, plan, eff)
    rep = min(k.layers)
    lt, ar = k.layers[rep], k.tp_allreduce_seconds
    exchanges, replayed = stage.tp_exchanges(model, rep), stage.replayed_tp_exchanges(model, plan, rep)
    half_overhead = stage.layer_overhead_seconds(plan, k.eff) / 2
    forward = lt.forward_seconds + exchanges * ar + half_overhead
    backward = (lt.backward_seconds + stage.replay_seconds(plan, lt) + replayed * ar
                + stage.backward_tp_comm_seconds(plan, lt, ar, k.eff, exchanges) + half_overhead)
    return forward, backward


def compare(eff: cm.Efficiency | None = None, data: dict | None = None) -> list[dict]:
    """Per variant: name, published and predicted forward/backward milliseconds and the total's signed error."""
    eff = eff or cm.Efficiency()
    data = data or load()
    base = prepare(next(r for r in load_runs() if r.id == data["run"]))
    out = []
    for v in data["variants"]:
        plan = replace(base.plan, **v["plan"])
        forward, backward = layer_seconds(base.model, base.cluster, plan, eff)
        published = v["forward_ms"] + v["backward_ms"]
        predicted = 1e3 * (forward + backward)
        out.append({"name": v["name"], "forward_ms": v["forward_ms"], "backward_ms": v["backward_ms"],
                    "predicted_forward_ms": 1e3 * forward, "predicted_backward_ms": 1e3 * backward,
                    "error": predicted / published - 1})
    return out


def main() -> None:
    data = load()
    print(f"{data['run']}, one layer ({data['source'].split(',')[0]}, Table 4): published / predicted ms")
    for r in compare(data=data):
        print(f"  {r['name']:30s} forward {r['forward_ms']:5.1f} / {r['predicted_forward_ms']:5.2f}   backward "
              f"{r['backward_ms']:5.1f} / {r['predicted_backward_ms']:5.2f}   total {r['error']:+.1%}")


if __name__ == "__main__":
    main()
