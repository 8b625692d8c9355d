"""What-if assumptions: scale the cluster's rates and prices, then re-score.

`--what-if network=0.5` halves the achievable network bandwidth, `nvlink=0.8` and `hbm=0.9` scale
NVLink and HBM, `matmul_efficiency=0.9` scales every GEMM efficiency, `price.h100-sxm-80gb=2.10`
sets that GPU's hourly price, `rdma=false` turns RDMA off, `power=500` caps every GPU at 500 W
(compute-bound kernels slow by the cube root of cap / TDP, costmodel.compute.power_capped_clock_fraction),
`imbalance=1.3` routes 1.3x the balanced share of tokens to the busiest expert-parallel rank of a
mixture of experts (its expert GEMMs, token exchange and routed activations; published benchmarks
force balanced routing, real routers do not: Efficiency.moe_routing_imbalance).
Scales multiply what the cluster has (nominal x efficiency, or its measured bus bandwidth).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from costmodel import types as cm
from costmodel.compute import power_capped_clock_fraction, scale_matmul_efficiency
from costmodel.moe import ExpertLayout, max_imbalance
from planner.errors import PlannerError
from planner.inputs import limits as L
from planner.inputs.argtypes import plain_float
from planner.inputs.specs import power_cap_refusal

SCALES = ("network", "nvlink", "hbm", "matmul_efficiency")
# A scale multiplies a rate the cluster has: 1000x slower or faster is outside any real machine.
# matmul_efficiency: the bounds a cluster file's matmul_efficiency_scale has. Imbalance: from balanced (1)
# to every routed token on one rank of a 64-way group (a plan's own ceiling is costmodel/moe.py max_imbalance).
BOUNDS = {"scale": (1e-3, 1e3), "matmul_efficiency": (L.MIN_EFFICIENCY_SCALE, L.MAX_EFFICIENCY_SCALE),
          "price": (L.MIN_USD_PER_GPU_HOUR, L.MAX_USD_PER_GPU_HOUR), "power": (L.MIN_WATTS, L.MAX_WATTS),
          "imbalance": (1.0, 64.0)}  # price and power: the bounds a cluster file's own fields have (and power at
# least L.MIN_POWER_FRACTION of the GPU's rating, checked against it in apply_cluster, as GpuSpec does)


@dataclass(frozen=True)
class WhatIf:
    scales: dict[str, float] = field(default_factory=dict)
    prices: dict[str, float] = field(default_factory=dict)
    rdma: bool | None = None
    power_watts: float | None = None
    imbalance: float | None = None

    def __post_init__(self):
        check_whatif(self)

    def label(self) -> str:
        parts = [f"{k}={v:g}" for k, v in self.scales.items()] + [f"price.{k}={v:g}" for k, v in self.prices.items()]
        if self.rdma is not None:
            parts.append(f"rdma={str(self.rdma).lower()}")
        if self.power_watts is not None:
            parts.append(f"power={self.power_watts:g}")
        if self.imbalance is not None:
            parts.append(f"imbalance={self.imbalance:g}")
        return ", ".join(parts) or "as given"


def _number(key: str, text: str) -> float:
    try:
        value = plain_float(text)
    except ValueError:
        raise PlannerError(f"--what-if {key}={text}: expected a number") from None
    return _bounded(key, value, text)


def _bounded(key: str, value, text=None) -> float:
    """`value` when it is a finite number within the BOUNDS of `key`'s kind; else one PlannerError."""
    text = value if text is None else text
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PlannerError(f"--what-if {key}={text}: expected a finite number")
    low, high = BOUNDS.get(key.split(".")[0], BOUNDS["scale"])
    if not low <= value <= high:
        raise PlannerError(f"--what-if {key}={text}: must be between {low:g} and {high:g}")
    return value


def check_whatif(wi: "WhatIf") -> None:
    """What parse checks, for a WhatIf built in Python: known scale keys, every value a finite number within
    its BOUNDS, rdma a bool."""
    for key, value in wi.scales.items():
        if key not in SCALES:
            raise PlannerError(f"--what-if {key}: unknown; use one of {', '.join(SCALES)}")
        _bounded(key, value)
    for name, value in wi.prices.items():
        _bounded(f"price.{name}", value)
    if wi.rdma is not None and not isinstance(wi.rdma, bool):
        raise PlannerError(f"--what-if rdma={wi.rdma!r}: expected true or false")
    for key, value in (("power", wi.power_watts), ("imbalance", wi.imbalance)):
        if value is not None:
            _bounded(key, value)


def parse(items: list[str] | None) -> WhatIf:
    """Parse repeated KEY=VALUE assumptions; unknown keys are one clear error."""
    scales, prices, rdma, power, imbalance = {}, {}, None, None, None
    seen: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep:
            raise PlannerError(f"--what-if {item}: expected KEY=VALUE")
        if key in seen and seen[key] != value.strip():
            raise PlannerError(f"--what-if {key}: given twice ({seen[key]} and {value.strip()})")
        seen[key] = value.strip()
        if key in SCALES:
            scales[key] = _number(key, value)
        elif key.startswith("price."):
            from planner.inputs.catalogs import resolve_gpu

            try:
                gpu = resolve_gpu(key[len("price."):])
            except PlannerError as err:  # unknown GPU: one line, naming the flag
                raise PlannerError(f"--what-if {key}={value}: {err}") from None
            prices[gpu.name] = _number(key, value)
        elif key == "rdma":
            if value.lower() not in ("true", "false"):
                raise PlannerError(f"--what-if rdma={value}: expected true or false")
            rdma = value.lower() == "true"
        elif key == "power":
            power = _number(key, value)
        elif key == "imbalance":
            imbalance = _number(key, value)
        else:
            raise PlannerError(f"--what-if {key}: unknown; use one of {', '.join(SCALES)}, price.GPU, rdma, power, "
                               "imbalance")
    return WhatIf(scales, prices, rdma, power, imbalance)


def check_applies(wi: WhatIf, moe: bool, gpus: set[str] | None = None, holder: str = "the cluster") -> None:
    """One line when an assumption cannot touch the question asked: a routing imbalance on a dense
    model, a price for a GPU that none of `gpus` (`holder`'s: the cluster's, the offerings sized; None: any
    catalog GPU) is."""
    if wi.imbalance is not None and not moe:
        raise PlannerError(f"--what-if imbalance={wi.imbalance:g}: routing imbalance applies only to "
                           "mixture-of-experts models (this one is dense)")
    for name in wi.prices:
        if gpus is not None and name not in gpus:
            raise PlannerError(f"--what-if price.{name}: {holder} has no {name} "
                               f"(its GPUs: {', '.join(sorted(gpus))})")


def beside(assumed: WhatIf, grid: list[WhatIf]) -> list[WhatIf]:
    """Each --what-if-grid value with the standing --what-if assumptions beside it, so every grid row
    answers under all of them. A key in both is one line: the grid's value would either stand in for the
    assumption or (a scale applied to a cluster already scaled) multiply it, under the grid value's label."""
    singles = {"rdma": "rdma", "power_watts": "power", "imbalance": "imbalance"}
    for g in grid:
        shared = (sorted(set(g.scales) & set(assumed.scales))
                  + [f"price.{k}" for k in sorted(set(g.prices) & set(assumed.prices))]
                  + [key for attr, key in singles.items() if None not in (getattr(g, attr), getattr(assumed, attr))])
        if shared:
            raise PlannerError(f"--what-if and --what-if-grid both set {shared[0]}: give it in one of them")
    return [WhatIf({**assumed.scales, **g.scales}, {**assumed.prices, **g.prices},
                   *(getattr(g, a) if getattr(g, a) is not None else getattr(assumed, a) for a in singles))
            for g in grid]


def apply_cluster(cluster: cm.Cluster, wi: WhatIf) -> cm.Cluster:
    net, nvl, hbm = (wi.scales.get(k, 1.0) for k in ("network", "nvlink", "hbm"))
    gpu = replace(cluster.gpu, hbm_bandwidth_bytes_per_second=cluster.gpu.hbm_bandwidth_bytes_per_second * hbm)
    if wi.power_watts is not None:
        why = power_cap_refusal(cluster.gpu, wi.power_watts)
        if why:
            raise PlannerError(f"--what-if power={wi.power_watts:g}: {why}")
        gpu = replace(gpu, tensor_clock_fraction=power_capped_clock_fraction(wi.power_watts, cluster.gpu.tdp_watts))
    out = replace(
        cluster, gpu=gpu,
        network_bandwidth_bytes_per_second=cluster.network_bandwidth_bytes_per_second * net,
        network_busbw_bytes_per_second=cluster.network_busbw_bytes_per_second * net,
        nvlink_bandwidth_bytes_per_second=cluster.nvlink_bandwidth_bytes_per_second * nvl,
        nvlink_busbw_bytes_per_second=cluster.nvlink_busbw_bytes_per_second * nvl,
    )
    if cluster.gpu.name in wi.prices:
        out = replace(out, usd_per_gpu_hour=wi.prices[cluster.gpu.name])
    if wi.rdma is not None:
        out = replace(out, rdma=wi.rdma, network_busbw_bytes_per_second=measured_without_rdma(out, wi.rdma))
    return out


def measured_without_rdma(cluster: cm.Cluster, rdma: bool) -> float:
    """A measured network rate (planner calibrate) under `rdma`: it was taken with the cluster's own
    RDMA setting, so turning RDMA off (on) scales it by the factor the cost model gives nominal rates
    without RDMA (its inverse)."""
    measured = cluster.network_busbw_bytes_per_second
    if not measured or cluster.rdma == rdma:
        return measured
    factor = cm.Efficiency().no_rdma_bandwidth_factor
    return measured * factor if not rdma else measured / factor


def apply_efficiency(eff: cm.Efficiency, wi: WhatIf) -> cm.Efficiency:
    """`matmul_efficiency=x` scales every GEMM's achievable fraction of peak, the same knob
    `planner calibrate --step-times` fits (costmodel.compute.scale_matmul_efficiency);
    `imbalance=x` sets the busiest expert rank's share of routed rows."""
    eff = scale_matmul_efficiency(eff, wi.scales.get("matmul_efficiency", 1.0))
    return eff if wi.imbalance is None else replace(eff, moe_routing_imbalance=wi.imbalance)


def unchanged_warning(wi: WhatIf, base: dict, alt: dict) -> list[str]:
    """A warning when the assumptions change none of the plan's figures (`base` and `alt`: score.to_dict of the
    plan as given and under them): NVLink scaled on a cluster without it, the network for a job inside one
    NVLink domain, RDMA set where the cluster has it, a power cap at or above the rated power."""
    keys = ("step_time_s", "memory_per_gpu_bytes", "usd_per_step")
    if any(base[k] != alt[k] for k in keys):
        return []
    return [f"what if {wi.label()}: no figure of this plan changes (the plan uses no link, rate or price the "
            "assumption sets, the cluster already has it, the value is what the plan is scored with already, such as "
            "imbalance=1 (balanced routing), or a power cap is at or above the GPU's rating)"]


def imbalance_ceiling(model: cm.Model, plan: cm.Plan, wi: WhatIf) -> list[str]:
    """A warning when --what-if imbalance asks for more than the plan's routing can do (costmodel/moe.py
    max_imbalance, at which it is priced), or when experts padded to a capacity make it moot."""
    if wi.imbalance is None or model.moe is None:
        return []
    if model.moe.capacity_factor:
        return [f"what-if imbalance={wi.imbalance:g} changes nothing: experts padded to capacity factor "
                f"{model.moe.capacity_factor:g} take that many rows whatever the routing"]
    ceiling = max_imbalance(model, ExpertLayout(plan.ep, plan.etp))
    if wi.imbalance <= ceiling:
        return []
    return [f"what-if imbalance={wi.imbalance:g} is more than ep {plan.ep} routing can send to one rank "
            f"(ep x min(k, experts / ep) / k = {ceiling:g}); priced at {ceiling:g}"]
