"""What a collective running beside compute takes from it, on one GPU: GEMMs and a training step timed alone and
beside a kernel that holds SMs the way NCCL's channels do (costmodel/overlap.py, `collective_sm_share`).

    python benchmarks/overlap_contention.py [--warm-seconds 15] [--out dir]

Needs PyTorch, CuPy and a CUDA GPU (not project dependencies; the suite never runs this). One GPU cannot run a
collective, so the collective is stood in for by what its kernel occupies. NCCL runs a collective as one thread
block per channel (512 threads with the Simple protocol) that stays resident until the collective ends; the
stand-in is a kernel of N such blocks that runs for a set time (the GPU's global timer) and either
  - waits: a collective whose data crosses the network, where the blocks mostly poll flags (SMs only);
  - copies at a capped rate (default 1.5 TB/s of HBM reads and writes, about what a ring over NVLink at
    370 GB/s bus bandwidth moves through local memory: its input, the peer's writes, their reduction, the output);
  - copies as fast as its N blocks can (a bound on the HBM share);
  - waits in a queue of 1 ms kernels on its own stream, as bucketed gradient collectives arrive, so its blocks
    contend for SMs at each kernel's start instead of holding them from the first.
Each workload (40 bf16 8192^3 GEMMs; 3 forward-backward steps of 4 Llama 3 8B layers, benchmarks/gemm_in_step.py)
is timed alone and beside each stand-in for N in (16, 32), alone and beside interleaved (the card first held at
its power limit for --warm-seconds, as in training), 3 repeats, medians. Reported per case: the slowdown T/T0 and
the share of compute speed lost while the stand-in ran, 1 - T0/T, which is what the model's collective_sm_share
charges per overlapped second. Where torch offers cuBLAS an SM carve-out (as Transformer Engine's userbuffers
overlap reserves SMs), the GEMMs are timed beside the waiting stand-in with the carve-out set to N as well.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import cupy as cp
import numpy as np
import torch
from gemm_in_step import H, SEQ, Layer  # this folder: run as benchmarks/overlap_contention.py
from gemm_sustained import nvml_handle, read_board

SOURCE = r"""
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
extern "C" __global__ void standin(const int4* __restrict__ src, int4* __restrict__ dst, long long vecs_per_block,
                                   unsigned long long duration_ns, double bytes_per_ns_per_block, int copy,
                                   unsigned long long* moved_out) {
    __shared__ unsigned long long start, t;
    __shared__ int go, do_copy;
    if (threadIdx.x == 0) { start = now_ns(); }
    __syncthreads();
    const int per_thread = 8;                       // 8 x 16 B per thread, 64 KiB per 512-thread block a tile
    const long long tile = (long long)per_thread * blockDim.x;
    const long long base = (long long)blockIdx.x * vecs_per_block;
    long long offset = 0;
    unsigned long long moved = 0;
    while (true) {
        if (threadIdx.x == 0) {
            t = now_ns();
            go = (t - start) < duration_ns;
            do_copy = copy && (bytes_per_ns_per_block <= 0.0
                               || (double)moved <= bytes_per_ns_per_block * (double)(t - start));
        }
        __syncthreads();
        if (!go) break;
        if (do_copy) {
            for (int k = 0; k < per_thread; ++k) {
                long long j = base + offset + threadIdx.x + (long long)k * blockDim.x;
                dst[j] = src[j];
            }
            offset = (offset + tile) % (vecs_per_block - tile + 1);
            moved += 2ull * 16ull * (unsigned long long)tile;   // bytes read and written
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) moved_out[blockIdx.x] = moved;
}
"""
THREADS, VECS_PER_BLOCK = 512, 1 << 20          # 16 MiB a block: far past L2 across blocks


class StandIn:
    def __init__(self, max_blocks: int):
        self.kernel = cp.RawKernel(SOURCE, "standin")
        self.src = cp.zeros(max_blocks * VECS_PER_BLOCK * 4, dtype=cp.int32)
        self.dst = cp.zeros_like(self.src)
        self.moved = cp.zeros(max_blocks, dtype=cp.uint64)

    def launch(self, stream, blocks: int, duration_ms: float, mode: str, cap_bytes_per_s: float) -> None:
        copy = 0 if mode in ("wait", "wait-queued") else 1
        per_block = cap_bytes_per_s / 1e9 / blocks if mode == "copy-capped" else 0.0
        args = (self.src, self.dst, np.int64(VECS_PER_BLOCK), None, np.float64(per_block), np.int32(copy), self.moved)
        with cp.cuda.ExternalStream(stream.cuda_stream):  # deprecated in CuPy 14, still works
            if mode == "wait-queued":                 # 1 ms kernels back to back on the collective's stream
                for _ in range(max(1, int(duration_ms))):
                    self.kernel((blocks,), (THREADS,), args[:3] + (np.uint64(1_000_000),) + args[4:])
            else:
                self.kernel((blocks,), (THREADS,), args[:3] + (np.uint64(int(duration_ms * 1e6)),) + args[4:])

    def bytes_moved(self, blocks: int) -> float:
        return float(self.moved[:blocks].sum().get())


def workloads():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def gemms():
        for _ in range(40):
            a @ b.t()
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Layer() for _ in range(4)]).cuda().to(torch.bfloat16)
    x = torch.randn(1, SEQ, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def steps():
        for _ in range(3):
            model(x).float().pow(2).mean().backward()
            for p in model.parameters():
                p.grad = None
            x.grad = None
    return {"gemm_8192_bf16_x40": gemms, "llama3_8b_4_layers_x3_steps": steps}


def timed(work, stream, standin=None, **kw) -> dict:
    """Milliseconds of `work` on `stream`, beside a stand-in launched just before on its own stream if given."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    torch.cuda.synchronize()
    if standin is not None:
        other = kw.pop("other_stream")
        ev[2].record(other)
        standin.launch(other, **kw)
        ev[3].record(other)
    with torch.cuda.stream(stream):
        ev[0].record(stream)
        work()
        ev[1].record(stream)
    torch.cuda.synchronize()
    out = {"ms": ev[0].elapsed_time(ev[1])}
    if standin is not None:
        out["standin_outlasted_work"] = ev[1].elapsed_time(ev[3]) > 0
        out["standin_ms"] = ev[2].elapsed_time(ev[3])
        out["standin_bytes_per_s"] = standin.bytes_moved(kw["blocks"]) / (out["standin_ms"] / 1e3)
    return out


def carveout_setter():
    for name in ("_set_sm_carveout_experimental", "_cuda_set_sm_carveout"):
        if hasattr(torch._C, name):
            return getattr(torch._C, name)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm-seconds", type=float, default=15.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cap-tb-per-s", type=float, default=1.5)
    ap.add_argument("--design", choices=("held", "within"), default="held")
    ap.add_argument("--blocks", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--modes", nargs="+", default=["wait", "wait-queued", "copy-capped", "copy-full"])
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    nv, h = nvml_handle()
    work, standin = workloads(), StandIn(32)
    stream, other = torch.cuda.Stream(), torch.cuda.Stream()
    cap = args.cap_tb_per_s * 1e12
    timed(lambda: None, stream, standin, other_stream=other, blocks=1, duration_ms=1.0, mode="wait", cap_bytes_per_s=0)
    alone_rates = {}
    for blocks in (16, 32):                      # the stand-in's own HBM rate, nothing beside it
        for mode in ("copy-capped", "copy-full"):
            r = timed(lambda: None, stream, standin, other_stream=other, blocks=blocks, duration_ms=50.0,
                      mode=mode, cap_bytes_per_s=cap)
            alone_rates[f"{mode}/{blocks}"] = round(r["standin_bytes_per_s"] / 1e12, 3)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < args.warm_seconds:
        work["llama3_8b_4_layers_x3_steps"]()
    torch.cuda.synchronize()
    board_warm = read_board(nv, h)
    set_carveout = carveout_setter()
    results = {wname: measure(fn, stream, other, standin, args, cap, set_carveout if wname.startswith("gemm") else None)
               for wname, fn in work.items()}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        work["gemm_8192_bf16_x40"]()
        torch.cuda.synchronize()
    gemm_kernels = sorted({e.key[:120] for e in prof.key_averages()
                           if any(m in e.key.lower() for m in ("gemm", "nvjet", "sm90", "cutlass"))})
    result = {"device": torch.cuda.get_device_name(), "sms": torch.cuda.get_device_properties(0).multi_processor_count,
              "torch": torch.__version__, "cupy": cp.__version__, "carveout_api": bool(set_carveout),
              "design": args.design, "standin_alone_tb_per_s": alone_rates, "board_after_warm": board_warm,
              "board_end": read_board(nv, h), "gemm_kernels": gemm_kernels, "cases": results}
    if args.out:
        with open(os.path.join(args.out, f"overlap_contention_{args.design}.json"), "w") as f:
            json.dump(result, f, indent=1)
    for k in ("device", "sms", "torch", "cupy", "carveout_api", "design", "standin_alone_tb_per_s",
              "board_after_warm", "board_end", "gemm_kernels"):
        print(f"{k}: {result[k]}")
    for wname, rows in results.items():
        print(wname)
        for case, r in rows.items():
            print(f"  {case:26s} alone {r['alone_ms']:9.3f} ms  beside {r['beside_ms']:9.3f} ms  x{r['slowdown']:.3f}"
                  f"  speed lost {r['speed_lost']:6.3f}  lost per overlapped s {r['lost_per_overlapped_s']:6.3f}"
                  f"  stand-in x{r['standin_stretch']:.3f} {r['standin_tb_per_s']:.2f} TB/s"
                  f"{'  (stand-in outlasted the work)' if r['standin_outlasted_work'] else ''}")


def measure(fn, stream, other, standin, args, cap, set_carveout) -> dict:
    """Each case's medians: the work alone and beside the stand-in, interleaved, `args.repeats` times. The stand-in
    runs 3x the work's time alone (`held`: it holds its SMs throughout) or half of it (`within`: it ends inside
    the work, so its own stretch and the compute lost per second it ran can be read)."""
    fn()
    base_ms = statistics.median(timed(fn, stream)["ms"] for _ in range(3))
    nominal_ms = max((3.0 if args.design == "held" else 0.5) * base_ms, 5.0)
    runs = [(m, n, False) for n in args.blocks for m in args.modes]
    runs += [("wait", n, True) for n in (16, 32)] if set_carveout else []
    rows = {}
    for mode, blocks, carve in runs:
        alone, beside, info = [], [], []
        for _ in range(args.repeats):
            alone.append(timed(fn, stream)["ms"])
            if carve:
                set_carveout(blocks)
            r = timed(fn, stream, standin, other_stream=other, blocks=blocks, duration_ms=nominal_ms, mode=mode,
                      cap_bytes_per_s=cap)
            if carve:
                set_carveout(None)
            beside.append(r["ms"])
            info.append(r)
        t_alone, t_beside = statistics.median(alone), statistics.median(beside)
        ran_ms = statistics.median(i["standin_ms"] for i in info)
        rows[f"{mode}/{blocks}" + ("/carveout" if carve else "")] = {
            "alone_ms": round(t_alone, 3), "beside_ms": round(t_beside, 3),
            "slowdown": round(t_beside / t_alone, 4), "speed_lost": round(1 - t_alone / t_beside, 4),
            "standin_nominal_ms": round(nominal_ms, 3), "standin_ms": round(ran_ms, 3),
            "standin_stretch": round(ran_ms / nominal_ms, 4),
            "lost_per_overlapped_s": round((t_beside - t_alone) / min(ran_ms, t_beside), 4),
            "standin_tb_per_s": round(statistics.median(i["standin_bytes_per_s"] for i in info) / 1e12, 3),
            "standin_outlasted_work": any(i["standin_outlasted_work"] for i in info)}
    return rows


if __name__ == "__main__":
    main()
