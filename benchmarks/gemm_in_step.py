"""The large-GEMM rate inside a training step, against the same card's short and power-limited GEMM-only rates
(benchmarks/gemm_sustained.py): how far does a real step's mix of kernels let the clock recover?

    python benchmarks/gemm_in_step.py [--seconds 45] [--layers 4] [--out dir]

Needs PyTorch and a CUDA GPU (not a project dependency; the suite never runs this). The step: `--layers` Llama 3
8B decoder layers (hidden 4096, 32 query / 8 KV heads of 128, SwiGLU 14336, RMSNorm, residuals; rotary
embeddings left out) on one 8,192-token sequence in bf16, forward and backward (autograd), no optimizer. It runs
back to back for --seconds (the card reaches its steady power), reading board power, SM clock and temperature
through NVML (gemm_sustained.py's helpers), then torch.profiler records three steps: the summed time of the GEMM
kernels (names holding gemm, nvjet or xmma, not attention's) against the GEMM FLOPs of those steps counted by
hand (2 m n k per linear, forward, and twice that backward: input and weight gradients) gives the GEMMs' rate
inside the step.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.nn.functional as F
from gemm_sustained import nvml_handle, read_board  # this folder: run as benchmarks/gemm_in_step.py

H, HEADS, KV_HEADS, HEAD_DIM, FFN, SEQ = 4096, 32, 8, 128, 14336, 8192
GEMM_MARKS, ATTENTION_MARKS = ("gemm", "nvjet", "xmma"), ("flash", "fmha", "attention", "sdpa", "cudnn")


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(H, (HEADS + 2 * KV_HEADS) * HEAD_DIM, bias=False)
        self.o = torch.nn.Linear(HEADS * HEAD_DIM, H, bias=False)
        self.gate_up = torch.nn.Linear(H, 2 * FFN, bias=False)
        self.down = torch.nn.Linear(FFN, H, bias=False)
        self.n1, self.n2 = torch.nn.RMSNorm(H), torch.nn.RMSNorm(H)

    def forward(self, x):
        q, k, v = self.qkv(self.n1(x)).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
        q = q.view(1, SEQ, HEADS, HEAD_DIM).transpose(1, 2)
        k = k.view(1, SEQ, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = v.view(1, SEQ, KV_HEADS, HEAD_DIM).transpose(1, 2)
        k, v = k.repeat_interleave(HEADS // KV_HEADS, dim=1), v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(1, SEQ, HEADS * HEAD_DIM))
        g, u = self.gate_up(self.n2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


def gemm_flops_per_step(layers: int) -> float:
    """Hand count: per layer the four linears' 2 m n k forward, three times that with the backward's two."""
    per_token = H * (HEADS + 2 * KV_HEADS) * HEAD_DIM + HEADS * HEAD_DIM * H + H * 2 * FFN + FFN * H
    return 3 * 2.0 * SEQ * per_token * layers


def cool_rates() -> dict:
    """The layer's forward GEMM shapes alone, on the cool card before anything else: 5 warm-ups, 10 timed."""
    out = {}
    for name, (m, n, k) in {"qkv": (SEQ, (HEADS + 2 * KV_HEADS) * HEAD_DIM, H), "o": (SEQ, H, HEADS * HEAD_DIM),
                            "gate_up": (SEQ, 2 * FFN, H), "down": (SEQ, H, FFN)}.items():
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for _ in range(5):
            a @ b.t()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            a @ b.t()
        end.record()
        end.synchronize()
        out[name] = round(2.0 * m * n * k / (start.elapsed_time(end) / 1e3 / 10) / 1e12, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=45.0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    nv, h = nvml_handle()
    torch.manual_seed(0)
    cool = cool_rates()
    model = torch.nn.Sequential(*[Layer() for _ in range(args.layers)]).cuda().to(torch.bfloat16)
    x = torch.randn(1, SEQ, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        model(x).float().pow(2).mean().backward()
        for p in model.parameters():
            p.grad = None
        x.grad = None

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    samples, n, t0 = [], 0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        step()
        n += 1
        if n % 20 == 0:
            torch.cuda.synchronize()
            samples.append({"t_s": round(time.perf_counter() - t0, 1), **read_board(nv, h)})
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        step()
    end.record()
    end.synchronize()
    step_s = start.elapsed_time(end) / 1e3 / 10
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        if us and not e.key.startswith(("aten::", "autograd", "ProfilerStep", "cuda")):
            kernels[e.key] = kernels.get(e.key, 0.0) + us
    def is_gemm(name):
        low = name.lower()
        return any(m in low for m in GEMM_MARKS) and not any(m in low for m in ATTENTION_MARKS)
    gemm_s = sum(us for k, us in kernels.items() if is_gemm(k)) / 1e6 / 3
    all_s = sum(kernels.values()) / 1e6 / 3
    late = [s for s in samples if s["t_s"] >= args.seconds / 2]
    result = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "layers": args.layers,
        "cool_gemm_tflops": cool,
        "step_seconds": step_s, "kernel_seconds_per_step": all_s, "gemm_seconds_per_step": gemm_s,
        "gemm_share_of_kernel_time": gemm_s / all_s if all_s else None,
        "gemm_tflops_in_step": gemm_flops_per_step(args.layers) / gemm_s / 1e12 if gemm_s else None,
        "power_w_late_median": sorted(s.get("power_w", 0) for s in late)[len(late) // 2] if late else None,
        "sm_clock_mhz_late_median": sorted(s.get("sm_clock_mhz", 0) for s in late)[len(late) // 2] if late else None,
        "top_kernels_us_per_step": dict(sorted(((k, round(v / 3, 1)) for k, v in kernels.items()),
                                               key=lambda kv: -kv[1])[:25]),
        "samples": samples,
    }
    if args.out:
        with open(os.path.join(args.out, "gemm_in_step.json"), "w") as f:
            json.dump(result, f, indent=1)
    for k in ("device", "torch", "cool_gemm_tflops", "step_seconds", "kernel_seconds_per_step", "gemm_seconds_per_step",
              "gemm_share_of_kernel_time", "gemm_tflops_in_step", "power_w_late_median", "sm_clock_mhz_late_median"):
        print(f"{k}: {result[k]}")
    for k, v in list(result["top_kernels_us_per_step"].items())[:12]:
        print(f"{v:10.1f} us  {'GEMM ' if is_gemm(k) else '     '}{k[:110]}")


if __name__ == "__main__":
    main()
