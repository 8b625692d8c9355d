"""Short against sustained large-GEMM throughput on the GPU at hand: does a training-length load get the rate
a short best-of-shapes run (stas00's MAMF, the catalog's measured_matmul_*) reports?

    python benchmarks/gemm_sustained.py [--seconds 60] [--out gemm.json]

Needs PyTorch and a CUDA GPU (not a project dependency; the suite never runs this). Method: random normal
inputs (zeros run faster, METHOD.md of the device notes), two input sets rotated, CUDA events around each
window, medians. First a short sweep over shapes, bf16 and fp8 (torch._scaled_mm, e4m3, per-tensor scales,
bf16 output), each shape 5 warm-ups and 3 batches of 10; then the best shape of each format run back to
back for --seconds, in windows of about half a second, reading board power, SM clock and temperature through
NVML at each window. Reports the short best, the sustained rate over the last half of the run and their ratio.
Leaves the card's clocks and power limit alone.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (6144, 12288, 12288),
          (16384, 8192, 8192), (8192, 28672, 8192), (8192, 8192, 28672)]


def nvml_handle():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - NVML is optional: the rates stand without it
        return None, None


def read_board(nv, h) -> dict:
    if nv is None:
        return {}
    try:
        return {"power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "sm_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "temperature_c": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)}
    except Exception:  # noqa: BLE001
        return {}


def operands(fmt: str, m: int, n: int, k: int):
    """Two input sets (rotated) and the call that multiplies one."""
    sets = []
    for _ in range(2):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        if fmt == "fp8":
            a, b = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        sets.append((a, b))
    one = torch.ones((), device="cuda", dtype=torch.float32)
    if fmt == "fp8":
        def mm(a, b):
            return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        def mm(a, b):
            return a @ b.t()
    return sets, mm


def timed(sets, mm, iters: int) -> float:
    """Seconds per GEMM over `iters` back-to-back launches (events around them)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(iters):
        mm(*sets[i % 2])
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def short_rate(fmt: str, shape) -> float:
    m, n, k = shape
    sets, mm = operands(fmt, m, n, k)
    timed(sets, mm, 5)
    per = statistics.median(timed(sets, mm, 10) for _ in range(3))
    return 2.0 * m * n * k / per / 1e12


def sustained(fmt: str, shape, seconds: float, nv, h) -> list[dict]:
    m, n, k = shape
    sets, mm = operands(fmt, m, n, k)
    flops = 2.0 * m * n * k
    per = timed(sets, mm, 5)
    iters = max(1, int(0.5 / per))
    windows, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        s = timed(sets, mm, iters)
        windows.append({"t_s": round(time.perf_counter() - t0, 2), "tflops": flops / s / 1e12, **read_board(nv, h)})
    return windows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    nv, h = nvml_handle()
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
    if nv is not None:
        try:
            info["power_limit_w"] = nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0
            info["default_power_limit_w"] = nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0
            info["max_sm_clock_mhz"] = nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)
        except Exception:  # noqa: BLE001
            pass
    result = {"info": info, "short": {}, "sustained": {}}
    print(json.dumps(info), flush=True)
    for fmt in ("bf16", "fp8"):
        rates = {}
        for shape in SHAPES:
            rates["x".join(map(str, shape))] = round(short_rate(fmt, shape), 1)
            print(fmt, shape, rates["x".join(map(str, shape))], "TFLOP/s short", read_board(nv, h), flush=True)
        result["short"][fmt] = rates
    for fmt in ("bf16", "fp8"):
        best = max(result["short"][fmt], key=result["short"][fmt].get)
        shape = tuple(int(x) for x in best.split("x"))
        windows = sustained(fmt, shape, args.seconds, nv, h)
        late = [w["tflops"] for w in windows if w["t_s"] >= args.seconds / 2]
        early = [w["tflops"] for w in windows if w["t_s"] <= 5.0]
        summary = {"shape": best, "short_tflops": result["short"][fmt][best],
                   "first_5s_median_tflops": round(statistics.median(early), 1),
                   "last_half_median_tflops": round(statistics.median(late), 1),
                   "last_half_over_short": round(statistics.median(late) / result["short"][fmt][best], 4),
                   "last_half_power_w": round(statistics.median(w.get("power_w", 0.0) for w in windows
                                                            if w["t_s"] >= args.seconds / 2), 1),
                   "last_half_sm_clock_mhz": statistics.median(w.get("sm_clock_mhz", 0) for w in windows
                                                               if w["t_s"] >= args.seconds / 2)}
        result["sustained"][fmt] = {"summary": summary, "windows": windows}
        print(fmt, "sustained", json.dumps(summary), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print("\nformat  shape              short  first 5 s  last half  ratio  power W  SM MHz")
    for fmt in ("bf16", "fp8"):
        s = result["sustained"][fmt]["summary"]
        print(f"{fmt:6s}  {s['shape']:17s} {s['short_tflops']:7.1f} {s['first_5s_median_tflops']:9.1f} "
              f"{s['last_half_median_tflops']:10.1f} {s['last_half_over_short']:6.3f} {s['last_half_power_w']:8.1f} "
              f"{s['last_half_sm_clock_mhz']:7}")


if __name__ == "__main__":
    main()
