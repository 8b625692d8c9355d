"""A small nccl-tests output synthesiser (current text format, v2.19 era) for the calibrate tests,
and the generator of the synthetic sample logs shipped in examples/nccl/.

The layout follows the printf formats of nccl-tests src/util.cu (writeDeviceReport,
writeResultHeader, writeBenchmarkLinePreamble/Body, getFloatStr); times come from whatever
function of the message size the caller gives, in seconds.
"""
import json
import random
from pathlib import Path

import pytest

from planner.inputs.nccl_logs import parse_text

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "nccl"
GIB, MIB = 2**30, 2**20

# busbw / algbw (nccl-tests doc/PERFORMANCE.md) and the redop column of each test.
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "sendrecv": lambda n: 1.0}
REDOP = {"all_reduce": "sum", "all_gather": "none", "reduce_scatter": "sum", "sendrecv": "sum"}


def float_str(value: float, width: int) -> str:
    """nccl-tests getFloatStr: %.2f, %.1f, %.0f, whichever fits the width, else %.1e / %.0e."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


def doubling_sizes(lo: int, hi: int) -> list[int]:
    sizes = [lo]
    while sizes[-1] * 2 <= hi:
        sizes.append(sizes[-1] * 2)
    return sizes


# The device lines name no product ("NVIDIA Graphics Device" is what the driver reports for a part it has no
# name for), so one synthetic log serves the tests' A100 and H100 clusters alike (planner/calibration/comm.py
# check_hosts refuses a log whose device lines name another GPU than the cluster's).
def header_lines(collective: str, ranks: int, nodes: int, sizes: list[int],
                 device: str = "NVIDIA Graphics Device") -> list[str]:
    per_node = ranks // nodes
    lines = ["# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807",
             f"# Collective test starting: {collective}_perf",
             f"# nThread 1 nGpus {per_node if nodes == 1 else 1} minBytes {sizes[0]} maxBytes {sizes[-1]}"
             " step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
             "#", "# Using devices"]
    for r in range(ranks):
        host, dev = f"node-{r // per_node + 1:02d}", r % per_node
        pid = 41000 + (0 if nodes == 1 else r)
        lines.append(f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host:>10s} device {dev:2d} "
                     f"[0000:{0x18 + 16 * dev:02x}:00] {device}")
    lines.append("#")
    lines.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
                 % ("", "", "", "", ""))
    lines.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s "
                 % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                    "time", "algbw", "busbw", "#wrong"))
    lines.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s "
                 % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))
    return lines


def body(seconds: float, size: int, factor: float) -> str:
    us = seconds * 1e6
    algbw = size / seconds / 1e9
    return "  %7s  %6s  %6s  %6g" % (float_str(us, 7), float_str(algbw, 6), float_str(algbw * factor, 6), 0)


def synth_log(collective: str, ranks: int, nodes: int, sizes: list[int], seconds_of,
              in_place_ratio: float = 1.004, device: str = "NVIDIA Graphics Device") -> str:
    """nccl-tests stdout for `collective` over `ranks` GPUs on `nodes` hosts, times seconds_of(size)."""
    factor = BUS_FACTOR[collective](ranks)
    lines = header_lines(collective, ranks, nodes, sizes, device)
    bus = []
    for size in sizes:
        t = seconds_of(size)
        count = size // 4 // (ranks if collective == "all_gather" else 1)
        lines.append("%12li  %12li  %8s  %6s  %6s" % (size, count, "float", REDOP[collective], "%6i" % -1)
                     + body(t, size, factor) + body(t * in_place_ratio, size, factor))
        bus.append(size / t / 1e9 * factor)
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {sum(bus) / len(bus):g} ", "#",
              f"# Collective test concluded: {collective}_perf", "#"]
    return "\n".join(lines) + "\n"


def ring_allreduce_seconds(size: float, n: int, bandwidth: float, latency: float) -> float:
    """Hand-written alpha-beta ring AllReduce (Thakur et al. 2005): 2(n-1) steps, 2(n-1)/n of the bytes."""
    return 2 * (n - 1) * latency + 2 * (n - 1) / n * size / bandwidth


def noisy(seconds_of, rng: random.Random, spread: float):
    return lambda size: seconds_of(size) * (1 + rng.uniform(-spread, spread))


SYNTHETIC_NOTE = ("# SYNTHETIC example for the README walk-through, not a measurement: written by "
                  "tests/test_calibrate_synth.py from an alpha-beta ring model ({model}), times x (1 +- 0.3%) noise.")


H100 = "NVIDIA H100 80GB HBM3"  # the shipped examples calibrate dgx-h100 (README)


def example_8gpu() -> str:
    """`all_reduce_perf -b 128M -e 8G -f 2 -g 8` on one 8-GPU node: busbw 340 GB/s, 9 us per ring step."""
    t = noisy(lambda s: ring_allreduce_seconds(s, 8, 340e9, 9e-6), random.Random(8), 0.003)
    note = SYNTHETIC_NOTE.format(model="NVLink busbw 340 GB/s, 9 us per step")
    return note + "\n" + synth_log("all_reduce", 8, 1, doubling_sizes(128 * MIB, 8 * GIB), t, device=H100)


def example_2node() -> str:
    """`mpirun -np 16 -N 8 all_reduce_perf -b 128M -e 8G -f 2 -g 1` on two such nodes: the cost
    model's hierarchical ring: bandwidth 8 on NVLink at 340 GB/s, then the 1/8 shard over 2 nodes at
    42 GB/s; latency NCCL's ring over all 16 ranks, 28 steps on NVLink (9 us) and 2 across (15 us)
    (NCCL src/graph/tuning.cc: 2 (nRanks - 1) steps, 2 (nNodes - 1) of them inter-node)."""
    def seconds(s):
        return (ring_allreduce_seconds(s, 8, 340e9, 0.0) + ring_allreduce_seconds(s / 8, 2, 42e9, 0.0)
                + 28 * 9e-6 + 2 * 15e-6)

    t = noisy(seconds, random.Random(16), 0.003)
    note = SYNTHETIC_NOTE.format(model="NVLink 340 GB/s and 9 us inside each node, network 42 GB/s and 15 us")
    return note + "\n" + synth_log("all_reduce", 16, 2, doubling_sizes(128 * MIB, 8 * GIB), t, device=H100)


STEP_TIMES = EXAMPLES.parent / "step_times_llama3-70b.csv"
STEP_PLANS = (  # llama3-70b on 64 GPUs of dgx-h100, global batch 512
    {"tp": 8, "pp": 4, "vpp": 5, "zero": 1, "recompute": "selective", "sequence_parallel": True},
    {"tp": 8, "pp": 8, "vpp": 1, "zero": 1, "recompute": "selective", "sequence_parallel": True},
    {"tp": 4, "pp": 8, "vpp": 2, "zero": 1, "recompute": "full", "sequence_parallel": False},
)


def example_step_times() -> str:
    """Step times of STEP_PLANS from the cost model on the synthetic cluster of the example logs
    (measured links as above) with a matmul efficiency scale of 0.9, times x (1 +- 1%) noise.
    Depends on the cost model, so it is not regenerated by the tests."""
    from dataclasses import replace

    from costmodel.step import estimate
    from planner.inputs import loading, plans
    from planner.inputs.specs import PlanSpec

    model = loading.load_model_spec("llama3-70b")
    cluster = replace(loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 64),
                      nvlink_busbw_bytes_per_second=340e9, nvlink_latency_seconds=9e-6,
                      network_busbw_bytes_per_second=42e9, network_latency_seconds=15e-6, matmul_efficiency_scale=0.9)
    rng = random.Random(70)
    lines = ["# SYNTHETIC example, not measurements: cost-model step times (matmul efficiency scale 0.9,",
             "# links as in examples/nccl/) x (1 +- 1%) noise, written by tests/test_calibrate_synth.py.",
             "name,model,gpus,tp,pp,vpp,mbs,gbs,zero,recompute,sequence_parallel,step_time_s"]
    for i, p in enumerate(STEP_PLANS):
        spec = PlanSpec(tp=p["tp"], pp=p["pp"], vpp=p["vpp"], global_batch_size=512, zero_stage=p["zero"],
                        recompute=p["recompute"], sequence_parallel=p["sequence_parallel"])
        seconds = estimate(model.to_model(), cluster, plans.build_plan(spec, model, 64)).step_time_seconds
        seconds *= 1 + rng.uniform(-0.01, 0.01)
        sp = "true" if p["sequence_parallel"] else "false"
        lines.append(f"run{i + 1},llama3-70b,64,{p['tp']},{p['pp']},{p['vpp']},1,512,{p['zero']},{p['recompute']},{sp},"
                     f"{seconds:.2f}")
    return "\n".join(lines) + "\n"


def test_synthesised_log_parses_as_current_format():
    text = synth_log("all_gather", 8, 1, doubling_sizes(MIB, 64 * MIB), lambda s: 1e-5 + s / 300e9)
    log = parse_text(text)
    assert (log.collective, log.num_ranks, log.num_nodes, log.source_format) == ("all_gather", 8, 1, "text-current")
    assert [r.size_bytes for r in log.rows] == doubling_sizes(MIB, 64 * MIB)
    assert log.rows[0].out_of_place_time_us == pytest.approx(10 + MIB / 300e9 * 1e6, abs=0.006)


def test_float_str_matches_getfloatstr_widths():
    assert float_str(319.561, 7) == " 319.56"
    assert float_str(39361.27, 7) == "39361.3"
    assert float_str(1234567.8, 7) == "1234568"
    assert float_str(123456789.0, 7) == "1.2e+08"


def test_shipped_examples_are_what_the_generator_writes():
    assert (EXAMPLES / "all_reduce_8gpu.txt").read_text() == example_8gpu()
    assert (EXAMPLES / "all_reduce_2node16gpu.txt").read_text() == example_2node()


def test_shipped_step_times_recover_the_scale_they_were_made_with(capsys):
    """The step-time example depends on the cost model, so it is not compared byte for byte; but the
    README's walk-through must recover the 0.9 it was made with (within its +-1% noise): a cost-model
    change that moves the fit means the file is stale (regenerate: python tests/test_calibrate_synth.py)."""
    from planner.commands.main import main

    argv = ["calibrate", "dgx-h100", "--nccl", str(EXAMPLES / "all_reduce_8gpu.txt"),
            "--nccl", str(EXAMPLES / "all_reduce_2node16gpu.txt"), "--step-times", str(STEP_TIMES), "--json"]
    assert main(argv) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert abs(fitted["compute"]["matmul_efficiency_scale"] - 0.9) < 0.01


if __name__ == "__main__":  # python tests/test_calibrate_synth.py rewrites the examples
    EXAMPLES.mkdir(parents=True, exist_ok=True)
    (EXAMPLES / "all_reduce_8gpu.txt").write_text(example_8gpu())
    (EXAMPLES / "all_reduce_2node16gpu.txt").write_text(example_2node())
    STEP_TIMES.write_text(example_step_times())
