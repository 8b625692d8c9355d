"""`planner calibrate` from nccl-tests logs: round trips through synthesised logs, errors, outputs.

Every log here is written by test_calibrate_synth.synth_log from an alpha-beta model spelled out
in this file (ring step counts and bus factors of Thakur et al. 2005 / nccl-tests PERFORMANCE.md),
so the fitted figures must come back within 2%.
"""
import argparse
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import selene
from test_calibrate_synth import EXAMPLES, GIB, MIB, doubling_sizes, synth_log

from costmodel import types as cm
from planner.calibration import comm as calibrate
from planner.calibration.comm import ranks_per_domain
from planner.commands.calibrate import parse_size
from planner.commands.main import main
from planner.errors import PlannerError
from planner.inputs import loading
from planner.inputs.nccl_logs import parse_text

LARGE = doubling_sizes(64 * MIB, 8 * GIB)
CLUSTER_YAML = """name: box
gpu: a100-sxm-80gb
num_gpus: 32
gpus_per_node: 8
nvlink_domain_size: 8
network_bandwidth_gbits_per_s: 200
"""
# (latency steps, bus factor) of each ring collective over n ranks
RING = {"all_reduce": lambda n: (2 * (n - 1), 2 * (n - 1) / n), "all_gather": lambda n: (n - 1, (n - 1) / n),
        "reduce_scatter": lambda n: (n - 1, (n - 1) / n), "sendrecv": lambda n: (1, 1.0)}


def ring_seconds(collective, size, n, bandwidth, latency):
    steps, factor = RING[collective](n)
    return steps * latency + size * factor / bandwidth


def two_level_seconds(collective, size, n, k, fast, slow):
    """Bandwidth: ring over the k GPUs of a domain on NVLink, then the 1/k shard over n/k domains on
    the network. Latency: NCCL's ring spans all n ranks, so of its steps a fraction (d-1)/(n-1)
    crosses the network, d = n/k domains (NCCL src/graph/tuning.cc: nInterSteps = nNodes - 1 for
    ReduceScatter/AllGather, 2 (nNodes - 1) for AllReduce, out of nRanks - 1 or 2 (nRanks - 1))."""
    d = n // k
    steps, _ = RING[collective](n)
    inter = steps * (d - 1) // (n - 1)
    latency = (steps - inter) * fast[1] + inter * slow[1]
    return (ring_seconds(collective, size, k, fast[0], 0.0) + ring_seconds(collective, size / k, d, slow[0], 0.0)
            + latency)


def samples_of(text, name, cluster, min_size=64 * MIB):
    return calibrate.log_samples(parse_text(text, name), name, cluster, min_size)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, needle):
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err and "Traceback" not in err


# ------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("collective,n", [("all_reduce", 8), ("all_gather", 8), ("reduce_scatter", 4), ("sendrecv", 2)])
def test_intra_node_round_trip(collective, n):
    """A log made by the ring model is fitted back to its own figures. The rate is under the cluster's 300 GB/s
    NVLink per direction (A100): an all_reduce above it is NVLS in-switch reduction, refused."""
    bw, lat = 262.5e9, 6.5e-6
    text = synth_log(collective, n, 1, LARGE, lambda s: ring_seconds(collective, s, n, bw, lat))
    fit = calibrate.calibrate_comm(samples_of(text, "intra.log", selene(8)), selene(8))
    assert fit.network is None and fit.nvlink.latency_fitted
    assert fit.nvlink.link.bandwidth_bytes_per_second == pytest.approx(bw, rel=0.02)
    assert fit.nvlink.link.latency_seconds == pytest.approx(lat, rel=0.02)
    assert calibrate.max_abs_error(fit.rows) < 0.002


def test_multi_node_round_trip_uses_the_intra_node_fit():
    fast, slow = (290e9, 8e-6), (45e9, 20e-6)
    intra = synth_log("all_reduce", 8, 1, LARGE, lambda s: ring_seconds("all_reduce", s, 8, *fast))
    inter = synth_log("all_reduce", 16, 2, LARGE, lambda s: two_level_seconds("all_reduce", s, 16, 8, fast, slow))
    cluster = selene(16)
    samples = samples_of(intra, "a.log", cluster) + samples_of(inter, "b.log", cluster)
    fit = calibrate.calibrate_comm(samples, cluster)
    assert fit.network.link.bandwidth_bytes_per_second == pytest.approx(slow[0], rel=0.02)
    assert fit.network.link.latency_seconds == pytest.approx(slow[1], rel=0.02)
    assert fit.nvlink.link.bandwidth_bytes_per_second == pytest.approx(fast[0], rel=0.02)
    assert {r.sample.tier for r in fit.rows} == {"nvlink", "network"}


def test_multi_node_without_intra_log_uses_the_clusters_nvlink_figure():
    fast, slow = (250e9, 7e-6), (22e9, 12e-6)
    cluster = replace(selene(32), nvlink_busbw_bytes_per_second=fast[0], nvlink_latency_seconds=fast[1])
    text = synth_log("all_gather", 32, 4, LARGE, lambda s: two_level_seconds("all_gather", s, 32, 8, fast, slow))
    fit = calibrate.calibrate_comm(samples_of(text, "ag.log", cluster), cluster)
    assert fit.nvlink is None
    assert fit.network.link.bandwidth_bytes_per_second == pytest.approx(slow[0], rel=0.02)
    assert fit.network.link.latency_seconds == pytest.approx(slow[1], rel=0.02)


def test_mesh_fit_reads_fewer_ranks_at_their_share_of_the_board():
    """AMD's xGMI mesh: 4 GPUs of a board reach 3 of the 7 links each (64 of 448 GB/s per link), so a 4-rank
    log runs at 350 x 3 x 64 / 448 = 150 GB/s busbw where the 8-rank log runs at 350. Both come from one
    board whose whole rate, the cluster file's nvlink_busbw, is 350 GB/s; the fit read the 4-rank log at
    the whole rate (150 GB/s for all 8, a 2.3x slower DP sync)."""
    gpu = replace(selene(8).gpu, nvlink_bandwidth_bytes_per_second=448e9, peer_link_bytes_per_second=64e9)
    cluster = cm.Cluster("mesh", gpu, 8, 8, 8, 448e9, 50e9)
    whole, lat = 350e9, 10e-6
    four = synth_log("all_reduce", 4, 1, LARGE, lambda s: ring_seconds("all_reduce", s, 4, 150e9, lat))
    fit = calibrate.calibrate_comm(samples_of(four, "four.log", cluster), cluster)
    assert fit.nvlink.link.bandwidth_bytes_per_second == pytest.approx(whole, rel=0.02)
    eight = synth_log("all_reduce", 8, 1, LARGE, lambda s: ring_seconds("all_reduce", s, 8, whole, lat))
    both = calibrate.calibrate_comm(samples_of(four, "four.log", cluster) + samples_of(eight, "eight.log", cluster),
                                    cluster)
    assert both.nvlink.link.bandwidth_bytes_per_second == pytest.approx(whole, rel=0.02)
    assert calibrate.max_abs_error(both.rows) < 0.01


def test_negative_latency_fit_keeps_the_prior_latency():
    # Pure bandwidth minus a constant: the intercept comes out negative.
    text = synth_log("all_reduce", 8, 1, LARGE, lambda s: 1.75 * s / 250e9 - 50e-6)
    fit = calibrate.calibrate_comm(samples_of(text, "x.log", selene(8)), selene(8))
    assert not fit.nvlink.latency_fitted
    assert fit.nvlink.link.latency_seconds == cm.Efficiency().nvlink_latency_seconds


@pytest.mark.parametrize("ranks,nodes,domain,per_node,expected", [
    (8, 1, 8, 8, 8), (4, 1, 8, 8, 4), (16, 2, 8, 8, 8), (8, 2, 8, 8, 4), (16, None, 8, 8, 8),
    (8, 1, 2, 8, 2), (16, 4, 72, 4, 16), (144, 36, 72, 4, 72), (16, 2, 1, 8, 1)])
def test_ranks_per_domain(ranks, nodes, domain, per_node, expected):
    nvlink = 450e9 if domain > 1 else 0.0
    cluster = cm.Cluster("c", selene(8).gpu, 144, per_node, domain, nvlink, 50e9)
    assert ranks_per_domain(ranks, nodes, cluster) == expected


def test_least_squares_recovers_a_line_and_needs_two_sizes():
    p, q, se_p, se_q = calibrate.least_squares_2([(1.0, x, 3.0 + 2.0 * x) for x in (1.0, 2.0, 5.0)])
    assert (p, q) == (pytest.approx(3.0), pytest.approx(2.0))
    assert se_p == pytest.approx(0.0, abs=1e-9) and se_q == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(PlannerError, match="two different message sizes"):
        calibrate.least_squares_2([(1.0, 4.0, 1.0), (1.0, 4.0, 1.1)])


def test_parse_size_binary_units():
    assert parse_size("64M") == 64 * 2**20
    assert parse_size("1GiB") == 2**30
    assert parse_size("128k") == 128 * 1024
    assert parse_size("1048576") == 2**20
    assert parse_size("64Mi") == parse_size("64MiB") == parse_size("64MB") == 64 * 2**20
    with pytest.raises(argparse.ArgumentTypeError, match="must be between 1 B and 1024T"):
        parse_size("2048T")  # the bound the message names is one it accepts (it said 1P, which it refused)
    assert parse_size("1024T") == 2**50
    assert parse_size("64B") == parse_size("64") == 64
    for typo in ("64i", "64iB", "Mi", "64 Q"):  # a dropped unit letter is not 64 bytes (a review)
        with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
            parse_size(typo)


def test_a_given_collective_must_not_contradict_the_log(capsys):
    """The 8-GPU example is all_reduce_perf output: read as all_gather its bus-bandwidth factor, (n-1)/n
    instead of 2(n-1)/n, would halve the fitted NVLink rate (340 -> 170 GB/s), so the override is refused."""
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt",
                       "--collective", "all_gather")
    assert_one_line_error(code, err, "the log is all_reduce output; collective all_gather contradicts it")


def test_the_output_never_overwrites_an_input(capsys, tmp_path):
    """--force overwrites an earlier output, never the log being read (an audit lost the shipped example so)."""
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text((EXAMPLES / "all_reduce_8gpu.txt").read_text())
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log, "--out", log, "--force")
    assert_one_line_error(code, err, "is one of the inputs; write the output elsewhere")
    assert log.read_text() == (EXAMPLES / "all_reduce_8gpu.txt").read_text()


def test_a_log_from_another_gpu_is_refused(capsys, tmp_path):
    """Device lines name the GPU each rank ran on: a V100 run calibrating an H100 cluster would write
    NVLink 2's rate as NVLink 4's."""
    text = (EXAMPLES / "all_reduce_8gpu.txt").read_text().replace("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB")
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text(text)
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert_one_line_error(code, err, "the run was on Tesla V100-SXM2-16GB, but dgx-h100 has h100-sxm-80gb")
    code, _, _ = run(capsys, "calibrate", "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt")
    assert code == 0


def test_a_json_log_from_another_gpu_is_refused(capsys, tmp_path):
    """nccl-tests' -J file names each rank's GPU in config.devices[].device_info, as the text log's device
    lines do: it is checked the same way (an audit calibrated dgx-h100 from a V100 JSON log, and dgx-a100
    from an H100 one)."""
    sample = (Path(__file__).resolve().parent / "data" / "nccl"
              / "all_reduce_perf.current_v2.19.1node8gpu.synthetic.json")
    log = tmp_path / "all_reduce_perf.json"
    log.write_text(sample.read_text().replace("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB"))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert_one_line_error(code, err, "the run was on Tesla V100-SXM2-16GB, but dgx-h100 has h100-sxm-80gb")
    code, _, err = run(capsys, "calibrate", "dgx-a100", "--nccl", sample)
    assert_one_line_error(code, err, "the run was on NVIDIA H100 80GB HBM3, but dgx-a100 has a100-sxm-80gb")
    code, _, _ = run(capsys, "calibrate", "dgx-h100", "--nccl", sample)
    assert code == 0


def test_a_one_node_run_past_the_nvlink_domain_is_not_the_network(capsys):
    """On 8 PCIe H100s bridged in pairs (NVLink domain 2), an 8-rank run on one node crosses pairs over PCIe;
    the cost model's tier beyond the domain is the network between nodes, which it never touched (an audit
    got 11 GB/s written as the 200 Gb/s InfiniBand's rate)."""
    code, _, err = run(capsys, "calibrate", "pcie-h100-8x-nvlink-pairs", "--nccl", EXAMPLES / "all_reduce_8gpu.txt")
    assert_one_line_error(code, err, "a run on one node reaches past its NVLink domain (2 GPU(s) of "
                                     "pcie-h100-8x-nvlink-pairs) over the node's PCIe")


def test_a_row_the_fit_misses_badly_is_warned_of(capsys, tmp_path):
    """An 8-GPU all_reduce at 340 GB/s and 9 us per step whose 512M row took 1000 s (a stalled run): the other rows
    fit, that one misses by -100%, and the figures written include it; the command says so (an audit got the file
    with "max |error| 100.0%" in the table and no word). Clean rows give no warning."""
    def seconds(size):
        t = ring_seconds("all_reduce", size, 8, 340e9, 9e-6)
        return 1000.0 if size == 512 * MIB else t
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text(synth_log("all_reduce", 8, 1, LARGE, seconds, device="NVIDIA H100 80GB HBM3"))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert code == 0 and f"the nvlink fit misses {log} at {512 * MIB} B by -100%" in err
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt")
    assert code == 0 and "warning" not in err


def test_a_log_repeating_its_sizes_is_warned_of(capsys, tmp_path):
    """The 8-GPU example twice in one file: 14 rows of 7 sizes, fitted as 14 measurements (the error bars shrink
    by about sqrt 2 for nothing; an audit). One run times a size once per data type and operation, so the
    repeats are several runs; the command says so. The file as shipped gets no such line."""
    text = (EXAMPLES / "all_reduce_8gpu.txt").read_text()
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text(text + text)
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert code == 0 and f"{log}: sizes timed more than once (134217728, " in err
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt")
    assert code == 0 and "timed more than once" not in err
    # small sizes repeat within one run (all_gather over 8 ranks rounds 8..16 B down to 0 B per rank): not fitted,
    # not warned of (a review)
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#"))
    zero = ("           0             0     float     sum      -1     9.10    0.00    0.00      0"
            "     9.00    0.00    0.00      0\n")
    log.write_text("".join(lines[:first]) + zero + zero + "".join(lines[first:]))
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert code == 0 and "timed more than once" not in err


@pytest.mark.parametrize("hosts, needle", [
    (["node-01"] * 16, "the run put 16 ranks on one host, but dgx-h100 has 8 GPUs per node"),
    (["node-01"] * 12 + ["node-02"] * 4, "ranks are spread unevenly over its hosts (12, 4 per host)"),
])
def test_hosts_in_the_log_must_match_the_cluster(capsys, tmp_path, hosts, needle):
    """The 2-node example with its 16 ranks' hosts rewritten: all on one host (a single-host run that would
    have been fitted as the network tier), or 12 + 4 (fitted as 8 + 8)."""
    lines = (EXAMPLES / "all_reduce_2node16gpu.txt").read_text().splitlines()
    ranks = [i for i, line in enumerate(lines) if line.startswith("#  Rank ")]
    assert len(ranks) == 16
    for i, host in zip(ranks, hosts):
        lines[i] = lines[i].replace("node-01", host).replace("node-02", host)
    log = tmp_path / "all_reduce_perf.txt"
    log.write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", log)
    assert_one_line_error(code, err, needle)


# ------------------------------------------------------------------------------- the command


@pytest.fixture
def logs(tmp_path):
    fast, slow = (300e9, 9e-6), (40e9, 15e-6)
    sizes = doubling_sizes(MIB, 8 * GIB)  # small rows too: they must be left out of the fit
    (tmp_path / "all_reduce_perf.1node.txt").write_text(
        synth_log("all_reduce", 8, 1, sizes, lambda s: ring_seconds("all_reduce", s, 8, *fast)))
    (tmp_path / "all_reduce_perf.2node.txt").write_text(
        synth_log("all_reduce", 16, 2, sizes, lambda s: two_level_seconds("all_reduce", s, 16, 8, fast, slow)))
    (tmp_path / "box.yaml").write_text(CLUSTER_YAML)
    return tmp_path, fast, slow


def test_cli_writes_a_cluster_that_estimate_accepts(capsys, logs):
    d, fast, slow = logs
    out = d / "box.calibrated.yaml"
    code, text, err = run(capsys, "calibrate", d / "box.yaml", "--nccl", d / "all_reduce_perf.1node.txt",
                          "--nccl", d / "all_reduce_perf.2node.txt", "--out", out)
    assert code == 0, err
    assert "NVLink tier: busbw 300.0" in text and "network tier: busbw 40.0" in text
    spec = loading.load_cluster_spec(str(out))
    assert spec.name == "box-calibrated" and spec.calibrated_from.min_message_bytes == 64 * MIB
    assert spec.nvlink_busbw_gbytes_per_s == pytest.approx(300, rel=0.02)
    assert spec.network_latency_us == pytest.approx(15, rel=0.02)
    assert len(spec.calibrated_from.nccl_logs) == 2
    code, text, err = run(capsys, "estimate", "llama3-8b", out, "--tp", "8", "--pp", "2", "--gbs", "64", "--json")
    assert code == 0, err
    assert json.loads(text)["cluster"] == "box-calibrated"


def test_calibrated_links_drive_the_estimate(capsys, logs):
    d, fast, slow = logs
    out = d / "c.yaml"
    assert run(capsys, "calibrate", d / "box.yaml", "--nccl", d / "all_reduce_perf.1node.txt", "--out", out)[0] == 0
    base = loading.build_cluster(loading.load_cluster_spec(str(d / "box.yaml")), 32)
    truth = replace(base, nvlink_busbw_bytes_per_second=fast[0], nvlink_latency_seconds=fast[1])
    got = loading.build_cluster(loading.load_cluster_spec(str(out)), 32)
    from costmodel.comm import ring_allreduce_seconds
    from costmodel.topology import nvlink_link
    size = 512 * MIB
    eff = cm.Efficiency()
    assert ring_allreduce_seconds(size, 8, nvlink_link(got, eff)) == pytest.approx(
        ring_allreduce_seconds(size, 8, nvlink_link(truth, eff)), rel=0.02)


def test_cli_json_and_plot(capsys, logs):
    d, fast, _ = logs
    svg = d / "fit.svg"
    code, text, err = run(capsys, "calibrate", d / "box.yaml", "--nccl", d / "all_reduce_perf.1node.txt",
                          "--plot", svg, "--json")
    assert code == 0, err
    doc = json.loads(text)
    assert doc["nvlink"]["busbw_gbytes_per_s"] == pytest.approx(300, rel=0.02)
    assert doc["network"] is None and len(doc["rows"]) == 8  # 64M .. 8G
    series = [g for g in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}g")
              if g.get("id", "").startswith("series-")]
    assert len(series) == 3  # measured, measured below --min-size, model
    code, *_ = run(capsys, "calibrate", d / "box.yaml", "--nccl", d / "all_reduce_perf.1node.txt", "--plot", svg,
                   "--force", "--min-size", "1M", "--json")
    assert code == 0
    assert len([g for g in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}g")
                if g.get("id", "").startswith("series-")]) == 2


def test_cli_refuses_to_overwrite_without_force(capsys, logs):
    d, *_ = logs
    out = d / "taken.yaml"
    out.write_text("keep me\n")
    code, _, err = run(capsys, "calibrate", d / "box.yaml", "--nccl", d / "all_reduce_perf.1node.txt", "--out", out)
    assert_one_line_error(code, err, "--force")
    assert out.read_text() == "keep me\n"
    code, *_ = run(capsys, "calibrate", d / "box.yaml", "--nccl", d / "all_reduce_perf.1node.txt", "--out", out,
                   "--force")
    assert code == 0 and "nvlink_busbw_gbytes_per_s" in out.read_text()


def test_walk_through_example_runs_as_written(capsys, tmp_path):
    out = tmp_path / "dgx-h100.calibrated.yaml"
    code, text, err = run(capsys, "calibrate", "dgx-h100", "--nccl", EXAMPLES / "all_reduce_8gpu.txt",
                          "--nccl", EXAMPLES / "all_reduce_2node16gpu.txt",
                          "--step-times", EXAMPLES.parent / "step_times_llama3-70b.csv", "--out", out)
    assert code == 0, err
    spec = loading.load_cluster_spec(str(out))
    assert spec.nvlink_busbw_gbytes_per_s == pytest.approx(340, rel=0.02)  # the generator's figures
    assert spec.network_busbw_gbytes_per_s == pytest.approx(42, rel=0.02)
    assert 0.5 < spec.matmul_efficiency_scale < 1.5  # 0.9 when generated; moves if the cost model changes


# ------------------------------------------------------------------------------- errors


def test_not_an_nccl_file(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\nthis is not a benchmark\n")
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", tmp_path / "notes.txt")
    assert_one_line_error(code, err, "does not look like nccl-tests output")


def test_log_without_large_rows(capsys, tmp_path):
    small = synth_log("all_reduce", 8, 1, doubling_sizes(8, MIB), lambda s: 1e-5 + s / 1e11)
    (tmp_path / "small.txt").write_text(small)
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", tmp_path / "small.txt")
    assert_one_line_error(code, err, "no usable rows of at least 67108864 B")


def test_missing_file_and_nothing_to_do(capsys, tmp_path):
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", tmp_path / "nope.txt")
    assert_one_line_error(code, err, "no such file")
    code, _, err = run(capsys, "calibrate", "dgx-h100")
    assert_one_line_error(code, err, "nothing to calibrate from")


def test_unsupported_collective(capsys):
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl",
                       Path(__file__).parent / "data/nccl/broadcast_perf.legacy_dupheader_2proc.synthetic.txt")
    assert_one_line_error(code, err, "broadcast cannot be calibrated")


def test_unnamed_collective_asks_for_the_flag(capsys, tmp_path):
    text = ("#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
            "    67108864      16777216     float    601.2  111.62  111.62  0e+00    600.7  111.72  111.72  0e+00\n")
    (tmp_path / "run.log").write_text(text)  # sendrecv or hypercube: the table cannot tell
    code, _, err = run(capsys, "calibrate", "dgx-h100", "--nccl", tmp_path / "run.log")
    assert_one_line_error(code, err, "pass --collective NAME")
