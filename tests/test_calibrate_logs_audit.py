"""`planner calibrate` on logs an audit (2026-12-07) found misread: NVL72 placement, multi-node logs without an
NVLink measurement, NVLS all_reduce, pre-2020 all_gather tables, NCCL_TESTS_SPLIT runs, MPICH rank prefixes,
untimed rows; and what it writes (significant figures, the YAML's latency unit) and says of step times.

Logs are written by test_calibrate_synth.synth_log (or, for the 2019 layout, legacy_table here) from the
alpha-beta ring model (Thakur et al. 2005; nccl-tests doc/PERFORMANCE.md bus factors: all_reduce 2(n-1)/n,
all_gather and reduce_scatter (n-1)/n), so the fitted figures must come back within 2%."""
import json
from pathlib import Path

import pytest
import yaml
from conftest import selene
from test_calibrate import assert_one_line_error, ring_seconds, run, two_level_seconds
from test_calibrate_synth import EXAMPLES, GIB, H100, MIB, doubling_sizes, synth_log

from costmodel import comm
from costmodel import types as cm
from planner.calibration.comm import TierFit, check_plausible, ranks_per_domain
from planner.calibration.output import tier_fields
from planner.errors import PlannerError

LARGE = doubling_sizes(64 * MIB, 8 * GIB)
DATA = Path(__file__).parent / "data" / "nccl"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def fitted(capsys, *argv):
    """The --json figures of a calibrate run that must succeed."""
    code, out, err = run(capsys, "calibrate", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# ------------------------------------------------------------------------------- 1. NVL72 placement


@pytest.mark.parametrize("ranks,nodes,expected", [(128, 32, 64), (256, None, 64), (64, 16, 64), (144, 36, 72)])
def test_nvl72_runs_share_a_rack_as_estimate_places_them(ranks, nodes, expected):
    """On NVL72 racks (72 GPUs, 4 a tray) the cost model places a power-of-two job 64 GPUs a rack, 16 of its 18
    trays (costmodel/topology.py job_domain_size: the largest divisor of the job that is a multiple of 4 and at
    most 72; for 128 and 256 that is 64). Calibration must place the run's ranks the same way, not gcd(128, 72) = 8,
    or the network is fitted for a layout estimate never prices. 144 = 2 x 72 fills both racks."""
    cluster = cm.Cluster("nvl72", selene(8).gpu, 144, 4, 72, 900e9, 50e9)
    assert ranks_per_domain(ranks, nodes, cluster) == expected


def test_two_nvl72_racks_recover_the_network_they_were_made_with(capsys, tmp_path):
    """64 ranks on one rack (16 trays) measure NVLink; 128 on two racks, made as the cost model prices them (a ring
    of 64 on NVLink, then the 1/64 shard across 2 racks at 46 GB/s), must give back 46 GB/s. Placed 8 a domain,
    the audit's run was refused at 364 GB/s."""
    fast, slow = (700e9, 3e-6), (46e9, 5e-6)
    one = synth_log("all_reduce", 64, 16, LARGE, lambda s: ring_seconds("all_reduce", s, 64, *fast))
    two = synth_log("all_reduce", 128, 32, LARGE, lambda s: two_level_seconds("all_reduce", s, 128, 64, fast, slow))
    doc = fitted(capsys, "gb200-nvl72", "--nccl", write(tmp_path, "all_reduce_perf.1rack.txt", one),
                 "--nccl", write(tmp_path, "all_reduce_perf.2racks.txt", two))
    assert doc["network"]["busbw_gbytes_per_s"] == pytest.approx(46, rel=0.02)
    assert {r["ranks"] for r in doc["rows"] if r["tier"] == "network"} == {128}


# ------------------------------------------------------------------------------- 2. no NVLink measurement


def test_a_multi_node_log_needs_the_nvlink_tier_measured(capsys, tmp_path):
    """Two nodes of 8 H100 made at NVLink 370 GB/s and 1 us, network 46 GB/s and 5 us: alone, the NVLink part of
    each time would be priced at the defaults (10 us a ring step, from A100), and the audit got 76 GB/s written for
    46. Refused; with the single-node log beside it the network comes back at 46."""
    fast, slow = (370e9, 1e-6), (46e9, 5e-6)
    two = write(tmp_path, "all_reduce_perf.2x8.txt", synth_log(
        "all_reduce", 16, 2, LARGE, lambda s: two_level_seconds("all_reduce", s, 16, 8, fast, slow), device=H100))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", two)
    assert_one_line_error(code, err, "add a single-node (one NVLink domain) nccl-tests log")
    one = write(tmp_path, "all_gather_perf.1x8.txt", synth_log(
        "all_gather", 8, 1, LARGE, lambda s: ring_seconds("all_gather", s, 8, *fast), device=H100))
    doc = fitted(capsys, "dgx-h100", "--nccl", two, "--nccl", one)  # any collective measures the tier
    assert doc["network"]["busbw_gbytes_per_s"] == pytest.approx(46, rel=0.02)
    assert doc["network"]["latency_us"] == pytest.approx(5, rel=0.02)


def test_one_gpu_per_node_measures_the_network_alone(capsys, tmp_path):
    """`-g 1` with one rank on each of 2 nodes: no NVLink part (one GPU a domain), so no single-node log is needed;
    a ring of 2 ranks is 2 steps and S x 2(2-1)/2 = S bytes: t = 2 x 5 us + S / 46 GB/s."""
    log = write(tmp_path, "all_reduce_perf.2x1.txt", synth_log(
        "all_reduce", 2, 2, LARGE, lambda s: 2 * 5e-6 + s / 46e9, device=H100))
    doc = fitted(capsys, "dgx-h100", "--nccl", log)
    assert doc["network"]["busbw_gbytes_per_s"] == pytest.approx(46, rel=0.02)
    assert doc["nvlink"] is None


def test_a_real_ring_log_is_told_apart_from_other_hardware(capsys, tmp_path):
    """NCCL_ALGO=Ring over 2 x 8 H100 runs at ~360 GB/s busbw (8 NICs of a node carry the ring): t = S x 1.875 /
    360 GB/s. The cost model's hierarchical collective leaves, after the NVLink part S x 1.75 / 370 GB/s, the
    shard S / 8 over the network: 1 / (8 B) = 1.875 / 360e9 - 1.75 / 370e9 = 0.479e-12, B = 261 GB/s, over 2 x
    the nominal 50. The refusal says why and names the remedy: one GPU per node measures the network directly."""
    one = write(tmp_path, "all_reduce_perf.1x8.txt", synth_log(
        "all_reduce", 8, 1, LARGE, lambda s: ring_seconds("all_reduce", s, 8, 370e9, 1e-6), device=H100))
    ring = write(tmp_path, "all_reduce_perf.2x8.txt", synth_log(
        "all_reduce", 16, 2, LARGE, lambda s: ring_seconds("all_reduce", s, 16, 360e9, 3e-6), device=H100))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", one, "--nccl", ring)
    assert_one_line_error(code, err, "the network fit gives 261 GB/s, over 2x the nominal 50 GB/s")
    assert "NCCL's ring pipelines the two" in err and "one GPU per node (-g 1, one rank per node)" in err


# ------------------------------------------------------------------------------- 3. NVLS all_reduce


def test_an_all_reduce_faster_than_the_nvlink_is_refused(capsys, tmp_path):
    """H100's default all_reduce on 8 GPUs reduces in the NVSwitch (NVLS): ~480 GB/s busbw against NVLink's 450 GB/s
    per direction (catalogs/gpus.yaml h100-sxm-80gb), where rings reach ~370 (nccl-tests issue #212). At 480 GB/s
    and 5 us the 8G row's busbw is 1.75 x 8 GiB / (14 x 5 us + 1.75 x 8 GiB / 480 GB/s) = 15.03e9 / 31.39e-3 =
    479 GB/s: refused, where the fit said 476 GB/s and priced every ring collective that fast. The ring figure is
    fitted."""
    nvls = write(tmp_path, "all_reduce_perf.nvls.txt", synth_log(
        "all_reduce", 8, 1, LARGE, lambda s: ring_seconds("all_reduce", s, 8, 480e9, 5e-6), device=H100))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", nvls)
    assert_one_line_error(code, err, "all_reduce busbw up to 479 GB/s, above the 450 GB/s per direction")
    assert "NCCL_ALGO=Ring" in err and "all_gather / reduce_scatter" in err
    ring = write(tmp_path, "all_reduce_perf.ring.txt", synth_log(
        "all_reduce", 8, 1, LARGE, lambda s: ring_seconds("all_reduce", s, 8, 370e9, 5e-6), device=H100))
    assert fitted(capsys, "dgx-h100", "--nccl", ring)["nvlink"]["busbw_gbytes_per_s"] == pytest.approx(370, rel=0.02)


# ------------------------------------------------------------------------------- 4. pre-2020 all_gather


def legacy_table(collective: str, n: int, bandwidth: float, latency: float) -> str:
    """A 1-node table as nccl-tests printed it before commit ec1b5e2 (2020-06-19): src/all_gather.cu and
    reduce_scatter.cu at ec1b5e2^ (print_header: size count type [redop] time algbw busbw error; GetBw:
    algbw = count x typesize x (nranks - 1) / sec with count one rank's, so busbw = algbw = S (n-1)/n / t, factor
    1), device lines of that era without a Group. Times from the ring model."""
    redop = "    sum" if collective == "reduce_scatter" else ""
    head = "#       size         count    type" + ("  redop" if redop else "") + "     time   algbw   busbw  error"
    lines = ["# nThread 1 nGpus 8 minBytes 67108864 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
             "validation: 1 ", "#", "# Using devices"]
    lines += [f"#   Rank {r:2d} Pid   9000 on       dgx1 device {r:2d} [0x{6 + r:02x}] A100-SXM4-40GB"
              for r in range(n)]
    lines += ["#", f"{head}     time   algbw   busbw  error"]
    for size in LARGE:
        t = ring_seconds(collective, size, n, bandwidth, latency)
        bw = size * (n - 1) / n / t / 1e9
        cols = f"{t * 1e6:8.1f}  {bw:6.2f}  {bw:6.2f}  0e+00"
        lines.append(f"{size:12d}  {size // 4 // n:12d}   float{redop}  {cols}  {cols}")
    return "\n".join(lines) + "\n# Out of bounds values : 0 OK\n"


@pytest.mark.parametrize("collective", ["all_gather", "reduce_scatter"])
def test_a_pre_2020_gather_table_is_read_as_the_test_it_is(capsys, tmp_path, collective):
    """busbw = algbw was all_gather's and reduce_scatter's own factor before ec1b5e2, not sendrecv's: the size and
    time columns mean what they mean today, so the fit gives back the ring's 230 GB/s and 5 us (it was refused and
    told to rename the file, and renamed it fitted another rate)."""
    log = write(tmp_path, f"{collective}_perf.2019.txt", legacy_table(collective, 8, 230e9, 5e-6))
    doc = fitted(capsys, "dgx-a100-40gb", "--nccl", log)
    assert doc["nvlink"]["busbw_gbytes_per_s"] == pytest.approx(230, rel=0.02)
    assert doc["nvlink"]["latency_us"] == pytest.approx(5, rel=0.02)
    assert {r["collective"] for r in doc["rows"]} == {collective}
    plain = write(tmp_path, "run.log", legacy_table(collective, 8, 230e9, 5e-6))  # named by the flag instead
    assert fitted(capsys, "dgx-a100-40gb", "--nccl", plain, "--collective", collective)["nvlink"]["rows"] == len(LARGE)


def test_a_pre_2020_table_of_another_factor_is_still_refused(capsys, tmp_path):
    """Only factor 1 is read as the old convention: the 2019 reduce_scatter table with busbw = algbw x 2(n-1)/n =
    1.75 algbw (all_reduce's factor, which its redop column allows) is refused as all_reduce output, as before."""
    lines = []
    for line in legacy_table("reduce_scatter", 8, 230e9, 5e-6).splitlines():
        cols = line.split()
        if cols and cols[0].isdigit():
            cols[6] = cols[10] = f"{1.75 * float(cols[5]):.2f}"  # busbw := 1.75 x algbw, out-of-place and in-place
            line = "  ".join(cols)
        lines.append(line)
    log = write(tmp_path, "reduce_scatter_perf.2019.txt", "\n".join(lines) + "\n")
    code, _, err = run(capsys, "calibrate", "dgx-a100-40gb", "--nccl", log)
    assert_one_line_error(code, err, "busbw/algbw 1.750 over 8 ranks) is all_reduce output")


# ------------------------------------------------------------------------------- 5. NCCL_TESTS_SPLIT


def test_an_nccl_tests_split_run_is_refused(capsys, tmp_path):
    """NCCL_TESTS_SPLIT="%8" on 2 x 8 GPUs runs 8 communicators of 2 ranks (nccl-tests src/common.cu: color =
    proc % 8, MPI_Comm_split; busbw over the group's nProcs), each printed as "Group %2d" (src/util.cu). Read as
    one 16-rank run its factor and layout are wrong; refused in one line, in text and in -J JSON."""
    text = synth_log("all_reduce", 16, 2, LARGE, lambda s: ring_seconds("all_reduce", s, 2, 46e9, 5e-6))
    lines = [line.replace("Group  0", f"Group {int(line.split()[2]) % 8:2d}") if line.startswith("#  Rank") else line
             for line in text.splitlines()]
    log = write(tmp_path, "all_reduce_perf.split.txt", "\n".join(lines) + "\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert_one_line_error(code, err, "an NCCL_TESTS_SPLIT run (8 groups in its device lines)")
    doc = json.loads((DATA / "all_reduce_perf.current_v2.19.1node8gpu.synthetic.json").read_text())
    doc["config"]["devices"][4]["group"] = 1
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", write(tmp_path, "all_reduce_perf.json",
                                                                         json.dumps(doc, indent=2)))
    assert_one_line_error(code, err, "an NCCL_TESTS_SPLIT run (2 groups in its device lines)")


# ------------------------------------------------------------------------------- 6. MPICH prefixes


def test_mpich_prepend_rank_prefixes_are_stripped(capsys, tmp_path):
    """mpiexec -prepend-rank (MPICH Hydra, Intel MPI) starts every line with "[0] ": the 8-GPU example so prefixed
    fits as it does plain, its generator's 340 GB/s (test_calibrate_synth.example_8gpu); it had no results table."""
    text = (EXAMPLES / "all_reduce_8gpu.txt").read_text()
    log = write(tmp_path, "all_reduce_perf.mpich.txt", "".join(f"[0] {line}" for line in text.splitlines(True)))
    doc = fitted(capsys, "dgx-h100", "--nccl", log)
    assert doc["nvlink"]["busbw_gbytes_per_s"] == pytest.approx(340, rel=0.02)
    assert doc["nvlink"] == fitted(capsys, "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt")["nvlink"]


# ------------------------------------------------------------------------------- 7. untimed rows


def test_a_log_whose_large_rows_are_all_untimed_says_so(capsys, tmp_path):
    """Every row of 64M and up timed nan (a failed timer): the sizes are there, so 'run with larger messages'
    was the wrong advice; the message says the rows are untimed."""
    text = synth_log("all_reduce", 8, 1, doubling_sizes(8 * MIB, 8 * GIB), lambda s: ring_seconds(
        "all_reduce", s, 8, 370e9, 5e-6), device=H100)
    lines = []
    for line in text.splitlines():
        cols = line.split()
        if cols and cols[0].isdigit() and int(cols[0]) >= 64 * MIB:
            cols[5] = cols[9] = "nan"  # out-of-place and in-place times
            line = "  ".join(cols)
        lines.append(line)
    log = write(tmp_path, "all_reduce_perf.txt", "\n".join(lines) + "\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert_one_line_error(code, err, f"none of its {len(LARGE)} row(s) of at least 67108864 B has a usable time "
                                     f"({len(LARGE)} untimed (nan))")
    assert "larger messages" not in err


# ------------------------------------------------------------------------------- 8, 9. what is written


def tier(bandwidth: float, latency: float, name: str = "nvlink") -> TierFit:
    return TierFit(name, comm.Link(bandwidth, latency), True, None, None, ())


@pytest.mark.parametrize("bandwidth,latency,gbytes,us", [
    (0.012345e9, 12.3456e-6, 0.01235, 12.35),  # 4 significant figures, not 2 decimals (0.01)
    (340.123e9, 0.0123456e-6, 340.1, 0.01235),
    (46.04999e9, 0.0, 46.05, 0.001),  # a zero latency would read as "not measured": 1 ns
])
def test_figures_are_written_to_four_significant_figures(bandwidth, latency, gbytes, us):
    """Two decimals of GB/s wrote a 0.0050 GB/s fit as 0.01, twice the rate; 4 significant figures keep it."""
    assert tier_fields(tier(bandwidth, latency)) == {"nvlink_busbw_gbytes_per_s": gbytes, "nvlink_latency_us": us}


def test_a_fit_under_what_a_cluster_file_states_is_refused():
    """5 MB/s (0.005 GB/s) written to 4 figures is under the 0.01 GB/s a cluster file takes (planner/inputs/
    limits.py MIN_LINK_GBYTES_PER_S): refused in words, not as a failed load of the file just written."""
    with pytest.raises(PlannerError, match="the nvlink fit gives 0.005 GB/s, under the 0.01 GB/s"):
        check_plausible(tier(0.005e9, 1e-6), 300e9, selene(8))


def test_the_written_file_says_latency_is_per_ring_step(capsys, tmp_path):
    """The CLI prints "us per ring step"; the file's *_latency_us is the same alpha, and its header says so."""
    out = tmp_path / "c.yaml"
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt", "--out", out)
    assert code == 0, err
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    assert "per ring step" in " ".join(header)
    assert "2(n-1) of them for all_reduce" in " ".join(header)
    assert yaml.safe_load(out.read_text())["nvlink_latency_us"] > 0


# ------------------------------------------------------------------------------- 10. step-time units


def test_a_step_time_far_under_the_model_gets_the_units_hint(capsys, tmp_path):
    """The shipped llama3-70b step times (about 70 s on 64 H100) divided by 1000, as milliseconds typed as seconds
    and divided again: faster than any compute efficiency allows, and the message names the units as the
    opposite case does."""
    lines = (EXAMPLES.parent / "step_times_llama3-70b.csv").read_text().splitlines()
    rows = [line for line in lines if line and not line.startswith("#")]
    head, first = rows[0], rows[1].split(",")
    first[-1] = str(float(first[-1]) / 1000)
    path = write(tmp_path, "steps.csv", f"{head}\n{','.join(first)}\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--step-times", path)
    assert_one_line_error(code, err, "is faster than the model allows at any compute efficiency")
    assert "the units (seconds" in err


def test_a_multi_node_sendrecv_needs_no_nvlink_log(tmp_path):
    """A sendrecv between two nodes runs on the network alone (calibration/comm.py collective_seconds prices it on
    the slow tier), so no NVLink log is needed to fit it: 16 ranks on 2 nodes at 46 GB/s and 5 us a step give back
    46 GB/s (a review found it refused after the NVLink-tier check came in)."""
    from planner.calibration import comm as comm_fit
    from planner.inputs import loading

    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 16)
    sizes = [2**k for k in range(26, 34)]
    samples = [comm_fit.Sample("sendrecv_perf.log", "sendrecv", 16, 8, s, 5e-6 + s / 46e9) for s in sizes]
    fit = comm_fit.calibrate_comm(samples, cluster, cm.Efficiency())
    assert fit.nvlink is None
    assert fit.network.link.bandwidth_bytes_per_second == pytest.approx(46e9, rel=1e-6)


def test_a_bus_bandwidth_far_past_the_nvlink_is_not_called_nvls():
    """Only an all_reduce up to L.MAX_BUSBW_OVER_NOMINAL x the NVLink line rate reads as in-switch reduction; far
    past it (129,122 GB/s from inverted times, a review's log) the logs are not of this cluster, which
    check_plausible says."""
    from planner.calibration import comm as comm_fit
    from planner.inputs import limits as L
    from planner.inputs import loading

    cluster = loading.build_cluster(loading.load_cluster_spec("dgx-h100"), 8)
    nominal = cluster.nvlink_bandwidth_bytes_per_second
    size = 2**30

    def sample(busbw: float):
        return comm_fit.Sample("all_reduce_perf.log", "all_reduce", 8, 8, size, size * 2 * 7 / 8 / busbw)

    with pytest.raises(PlannerError, match="NVLS"):
        comm_fit.check_in_switch_reduction([sample(1.06 * nominal)], "x", cluster)
    comm_fit.check_in_switch_reduction([sample(1.01 * L.MAX_BUSBW_OVER_NOMINAL * nominal)], "x", cluster)
    comm_fit.check_in_switch_reduction([sample(0.82 * nominal)], "x", cluster)
