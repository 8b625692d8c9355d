"""Tests for planner.nccl_logs (nccl-tests output parser).

Expected numbers were read by eye from the sample files in tests/data/nccl/ (see the
README there) or from the inline texts below, not pasted from parser output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.inputs.nccl_logs import (
    NcclParseError,
    large_message_rows,
    normalize_collective,
    parse_file,
    parse_json,
    parse_text,
)

DATA = Path(__file__).parent / "data" / "nccl"
CURRENT_TXT = DATA / "all_reduce_perf.current_v2.19.1node8gpu.synthetic.txt"
CURRENT_JSON = DATA / "all_reduce_perf.current_v2.19.1node8gpu.synthetic.json"
ALLGATHER_C0 = DATA / "all_gather_perf.current_v2.19.check0.synthetic.txt"
MPI_2022 = DATA / "all_reduce_perf.2022-2025_2node16gpu_mpi_ncclinfo.synthetic.txt"
LEGACY = DATA / "all_reduce_perf.legacy_pre2022_1node4gpu.synthetic.txt"
ERA_2017 = DATA / "all_reduce_perf.era2017_1node4gpu.synthetic.txt"
BCAST_DUP = DATA / "broadcast_perf.legacy_dupheader_2proc.synthetic.txt"


def by_size(log, size):
    (row,) = [r for r in log.rows if r.size_bytes == size]
    return row


# ----------------------------------------------------------------- one test per sample file


def test_current_all_reduce_text():
    log = parse_file(CURRENT_TXT)
    assert log.collective == "all_reduce"
    assert log.source_format == "text-current"
    assert (log.num_ranks, log.num_nodes) == (8, 1)
    assert len(log.rows) == 31
    assert log.rows[0].size_bytes == 8 and log.rows[-1].size_bytes == 8589934592
    assert log.avg_busbw_gbytes_per_s == pytest.approx(149.773)
    row = by_size(log, 1048576)
    assert (row.count, row.dtype, row.redop, row.wrong) == (262144, "float", "sum", 0)
    assert row.out_of_place_time_us == pytest.approx(15.86)
    assert row.out_of_place_algbw_gbytes_per_s == pytest.approx(66.10)
    assert row.out_of_place_busbw_gbytes_per_s == pytest.approx(115.67)
    assert row.in_place_time_us == pytest.approx(15.91)
    assert row.in_place_busbw_gbytes_per_s == pytest.approx(115.32)
    last = log.rows[-1]
    assert last.out_of_place_time_us == pytest.approx(39361.3)
    assert last.in_place_time_us == pytest.approx(39914.8)
    assert last.in_place_busbw_gbytes_per_s == pytest.approx(376.61)


def test_current_all_gather_check0_na_wrong():
    log = parse_file(ALLGATHER_C0)
    assert log.collective == "all_gather"
    assert log.source_format == "text-current"
    assert log.num_ranks == 8
    assert len(log.rows) == 12
    assert log.rows[0].size_bytes == 1024 and log.rows[-1].size_bytes == 4294967296
    assert log.rows[0].count == 32  # per-rank count, size is the total
    assert all(r.wrong is None for r in log.rows)  # "N/A" with -c 0
    assert {r.redop for r in log.rows} == {"none"}
    assert by_size(log, 268435456).out_of_place_busbw_gbytes_per_s == pytest.approx(354.03)
    assert log.rows[-1].out_of_place_time_us == pytest.approx(10594.2)
    assert log.rows[-1].in_place_time_us == pytest.approx(10590.8)
    assert log.avg_busbw_gbytes_per_s == pytest.approx(164.193)


def test_2022_era_mpi_two_nodes_with_nccl_info_lines():
    log = parse_file(MPI_2022)
    assert log.collective == "all_reduce"  # only the file name says so
    assert log.source_format == "text-2022"
    assert (log.num_ranks, log.num_nodes) == (16, 2)  # nGpus 1 per MPI process
    assert len(log.rows) == 9
    assert log.rows[0].size_bytes == 8388608 and log.rows[-1].size_bytes == 2147483648
    row = by_size(log, 1073741824)
    assert row.out_of_place_time_us == pytest.approx(11078)
    assert row.in_place_time_us == pytest.approx(10938)
    assert by_size(log, 536870912).out_of_place_busbw_gbytes_per_s == pytest.approx(183.29)
    assert log.avg_busbw_gbytes_per_s == pytest.approx(165.917)


def test_legacy_pre2022_no_root_error_column():
    log = parse_file(LEGACY)
    assert log.collective == "all_reduce"
    assert log.source_format == "text-legacy"
    assert (log.num_ranks, log.num_nodes) == (4, 1)
    assert len(log.rows) == 25
    assert log.rows[0].size_bytes == 8 and log.rows[-1].size_bytes == 134217728
    assert all(r.wrong is None for r in log.rows)  # "0e+00" is a deviation, not a count
    assert by_size(log, 8388608).out_of_place_time_us == pytest.approx(104.4)
    assert log.rows[-1].out_of_place_busbw_gbytes_per_s == pytest.approx(130.11)
    assert log.rows[-1].in_place_busbw_gbytes_per_s == pytest.approx(131.19)
    assert log.avg_busbw_gbytes_per_s == pytest.approx(41.2261)


def test_json_format():
    log = parse_file(CURRENT_JSON)
    assert log.collective == "all_reduce"  # from args[0] "./build/all_reduce_perf"
    assert log.source_format == "json"
    assert (log.num_ranks, log.num_nodes) == (8, 1)
    assert len(log.rows) == 31
    assert log.rows[0].size_bytes == 8 and log.rows[-1].size_bytes == 8589934592
    assert log.rows[0].wrong == 0  # "nwrong": 0.0
    last = log.rows[-1]
    assert last.count == 2147483648
    assert last.out_of_place_busbw_gbytes_per_s == pytest.approx(381.90799677249646)
    assert last.in_place_time_us == pytest.approx(39914.81182129614)
    assert log.avg_busbw_gbytes_per_s == pytest.approx(149.77341313312454)


def test_json_and_text_of_same_run_agree():
    text, js = parse_file(CURRENT_TXT), parse_file(CURRENT_JSON)
    assert [r.size_bytes for r in text.rows] == [r.size_bytes for r in js.rows]
    for a, b in zip(large_message_rows(text), large_message_rows(js)):
        assert a.out_of_place_busbw_gbytes_per_s == pytest.approx(
            b.out_of_place_busbw_gbytes_per_s, abs=0.01
        )


def test_2017_era_times_in_ms_converted_to_us():
    log = parse_file(ERA_2017)
    assert log.source_format == "text-2017"
    assert log.collective == "all_reduce"
    assert (log.num_ranks, log.num_nodes) == (4, 1)
    assert len(log.rows) == 4
    assert log.rows[0].size_bytes == 1048576 and log.rows[-1].size_bytes == 8388608
    assert log.rows[0].out_of_place_time_us == pytest.approx(55.0)  # printed 0.055 (ms)
    assert log.rows[-1].in_place_time_us == pytest.approx(291.0)
    assert log.rows[-1].out_of_place_busbw_gbytes_per_s == pytest.approx(42.00)
    assert log.rows[0].count == 262144 and log.rows[0].wrong is None
    assert log.avg_busbw_gbytes_per_s == pytest.approx(36.7374)  # footer without '#'


def test_legacy_broadcast_duplicated_headers_from_two_processes():
    log = parse_file(BCAST_DUP)
    assert log.collective == "broadcast"
    assert log.source_format == "text-legacy"
    assert log.num_ranks == 1  # two independent 1-rank runs, both "Rank 0"
    assert log.num_nodes == 2
    assert len(log.rows) == 8  # every row printed twice
    assert log.rows[0].size_bytes == 33554432 and log.rows[-1].size_bytes == 268435456
    assert log.rows[-1].out_of_place_busbw_gbytes_per_s == pytest.approx(1016.68)  # overflow
    assert all(r.redop is None and r.wrong is None for r in log.rows)
    assert log.avg_busbw_gbytes_per_s == pytest.approx(1020.0)  # "1.02e+03"
    # without the file name: root column + busbw == algbw identifies broadcast
    assert parse_text(BCAST_DUP.read_text()).collective == "broadcast"


# ----------------------------------------------------------------- robustness

HEADER_2022 = (
    "#                                                              out-of-place"
    "                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n"
)
ROW_A = (
    "    67108864      16777216     float     sum      -1    745.7   89.99  168.74      0"
    "    747.6   89.76  168.31      0"
)
ROW_B = (
    "   134217728      33554432     float     sum      -1   1424.3   94.23  176.69      0"
    "   1443.8   92.96  176.30      2"
)


def test_noisy_lines_mpi_prefixes_and_info_lines_are_skipped():
    text = "\n".join([
        "Warning: Permanently added 'node-b' (ED25519) to the list of known hosts.",
        "--------------------------------------------------------------------------",
        "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 67108864 maxBytes 134217728 step: 2(factor)",
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid  11 on     node-a device  0 [0x07] NVIDIA A100",
        "[1,0]<stdout>:#  Rank  1 Group  0 Pid  12 on     node-b device  0 [0x07] NVIDIA A100",
        "node-a:11:11 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>",
        "",
        *("[1,0]<stdout>:" + line for line in HEADER_2022.splitlines()),
        "[1,0]<stdout>:" + ROW_A,
        "node-a:11:99 [0] NCCL INFO 16 coll channels, 16 p2p channels, 2 p2p channels per peer",
        "12345 this line starts with a number but is not a row",  # before ROW_B: warned
        "0: " + ROW_B,  # srun --label prefix
        "[1,0]<stdout>:# Avg bus bandwidth    : 172.51",
        "mpirun: Forwarding signal 18 to job",
    ])
    with pytest.warns(UserWarning, match="malformed data row"):
        log = parse_text(text, "noisy.log", collective="all_reduce")
    assert [r.size_bytes for r in log.rows] == [67108864, 134217728]
    assert log.rows[1].wrong == 2  # out-of-place 0 + in-place 2
    assert (log.num_ranks, log.num_nodes) == (2, 2)
    assert log.avg_busbw_gbytes_per_s == pytest.approx(172.51)


@pytest.mark.parametrize("wrong", ["inf", "nan", "-1", "0.5"])
def test_a_wrong_count_that_is_not_a_count_makes_the_row_malformed(wrong):
    """#wrong is a count of mismatched elements (nccl-tests prints it with %g or N/A): inf, nan, a negative
    or a fraction in its column is a malformed row, warned and skipped; inf was an OverflowError
    traceback (found by fuzzing calibrate with garbled logs)."""
    row = ("  4294967296    1073741824     float     sum      -1  19777.1  217.17  380.05       0  20322.0  211.35"
           "  369.85       0")
    text = CURRENT_TXT.read_text()
    assert row in text
    with pytest.warns(UserWarning, match="malformed data row"):
        log = parse_text(text.replace(row, row[:-1] + wrong), "garbled.log")
    assert 4294967296 not in [r.size_bytes for r in log.rows] and 8589934592 in [r.size_bytes for r in log.rows]


def test_duplicated_header_keeps_one_layout_and_all_rows():
    text = HEADER_2022 + ROW_A + "\n" + HEADER_2022 + ROW_B + "\n"
    log = parse_text(text, collective="all_reduce")
    assert [r.size_bytes for r in log.rows] == [67108864, 134217728]


def test_truncated_last_row_is_dropped():
    text = CURRENT_TXT.read_text()
    cut = text.index("  8589934592    2147483648") + len("  8589934592    2147483648     float")
    with pytest.warns(UserWarning, match="cut.log: dropped the incomplete data row at line 48"):
        log = parse_text(text[:cut], "cut.log")
    assert len(log.rows) == 30
    assert log.rows[-1].size_bytes == 4294967296
    assert log.avg_busbw_gbytes_per_s is None  # footer lost


def test_truncated_inside_number_of_last_row_is_dropped():
    text = LEGACY.read_text()
    cut = text.index("1534.7   87.46  131.19  0e+")  # last row, in-place part
    with pytest.warns(UserWarning, match="dropped the incomplete data row"):
        log = parse_text(text[: cut + len("1534.7   87.46  131.19  0e+")], "cut.log")
    assert log.rows[-1].size_bytes == 67108864


def test_truncated_before_any_row_raises():
    text = CURRENT_TXT.read_text()
    cut = text.index("           8             2")
    with pytest.raises(NcclParseError, match="no complete data rows"):
        parse_text(text[:cut], "cut.log")


def test_header_but_no_table_raises():
    text = "# nThread 1 nGpus 8 minBytes 8 maxBytes 128\n#\n# Using devices\n"
    with pytest.raises(NcclParseError, match="no results table"):
        parse_text(text, "crashed.log")


@pytest.mark.parametrize(
    "text",
    [
        "import os\nprint(os.getcwd())\n",
        "size,time,busbw\n1024,10.5,0.1\n",
        "1 2 3 4 5 6 7 8 9 10 11 12 13\n",
    ],
)
def test_not_nccl_tests_output_raises(text):
    with pytest.raises(NcclParseError, match="does not look like nccl-tests output"):
        parse_text(text, "other.txt")


def test_not_nccl_json_raises(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"loss": [1.0, 0.5]}')
    with pytest.raises(NcclParseError, match="does not look like nccl-tests output"):
        parse_file(path)


@pytest.mark.parametrize("text", ["", "  \n\n"])
def test_empty_file_raises(tmp_path, text):
    path = tmp_path / "empty.log"
    path.write_text(text)
    with pytest.raises(NcclParseError, match="empty"):
        parse_file(path)


def test_truncated_json_raises_with_line_number():
    text = CURRENT_JSON.read_text()
    with pytest.raises(NcclParseError, match=r"\.json:\d+: invalid JSON"):
        parse_json(text[: len(text) // 2], "run.json")


def test_json_cpu_time_null_sections_and_nan():
    doc = {
        "args": ["./sendrecv_perf", "-C", "1", "-c", "0"],
        "config": {"devices": [{"rank": 0, "hostname": "h0"}, {"rank": 1, "hostname": "h1"}]},
        "results": [
            {"size": 1024, "count": 256, "type": "float", "redop": "sum", "root": "    -1",
             "out_of_place": None,
             "in_place": {"cpu_time": 12.5, "alg_bw": 0.08, "bus_bw": "nan", "nwrong": None}},
        ],
        "average_bus_bandwidth": {"bandwidth": 0.08, "okay": "unchecked"},
    }
    log = parse_text(json.dumps(doc), "sr.json")  # parse_text hands JSON to parse_json
    assert (log.collective, log.num_ranks, log.num_nodes) == ("sendrecv", 2, 2)
    row = log.rows[0]
    assert row.out_of_place_time_us is None and row.wrong is None
    assert row.in_place_time_us == 12.5
    assert row.in_place_busbw_gbytes_per_s != row.in_place_busbw_gbytes_per_s  # NaN


def test_per_iteration_and_timestamp_columns():
    text = (
        "# Collective test starting: all_reduce_perf\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max"
        "    i_p99    i_cv%           timestamp\n"
        "   268435456      67108864     float     sum      -1  1245.56  215.51  377.15       0"
        "  1240.01  1251.30  1251.30     0.25  1253.86  214.09  374.65       0  1249.00  1260.10"
        "  1260.10     0.31  2026-11-29 07:00:01\n"
    )
    (row,) = parse_text(text).rows
    assert row.out_of_place_busbw_gbytes_per_s == pytest.approx(377.15)
    assert row.in_place_time_us == pytest.approx(1253.86)
    assert row.in_place_busbw_gbytes_per_s == pytest.approx(374.65)


def test_empty_redop_column_hypercube():
    text = (
        "# Collective test starting: hypercube_perf\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong\n"
        "     1048576        262144     float              -1    20.11   364.9   364.9       0"
        "    20.02   366.5   366.5       0\n"
    )
    log = parse_text(text)
    assert log.collective == "hypercube"
    assert log.rows[0].redop is None
    assert log.rows[0].out_of_place_busbw_gbytes_per_s == pytest.approx(364.9)


def test_sci_notation_from_getfloatstr():
    text = (
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong\n"
        " 17179869184    4294967296     float     sum      -1  1.2e+05  143.17  268.44   1e+06"
        "  1.1e+05  156.18  292.84       0\n"
    )
    (row,) = parse_text(text, collective="all_reduce").rows
    assert row.out_of_place_time_us == pytest.approx(1.2e5)
    assert row.wrong == 1_000_000


def test_num_ranks_falls_back_to_nccl_info_nranks():
    text = (
        "node-a:1:1 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 16 cudaDev 0 busId 7000"
        " - Init COMPLETE\n"
        + HEADER_2022 + ROW_A + "\n"
    )
    log = parse_text(text)
    assert log.num_ranks == 16 and log.num_nodes is None
    assert log.collective == "all_reduce"  # 168.74 / 89.99 = 1.875 = 2 * 15 / 16


# ----------------------------------------------------------------- collective detection


def test_collective_inferred_without_any_name():
    # Legacy and 2022 files carry no program name; busbw/algbw gives 2(n-1)/n.
    assert parse_text(LEGACY.read_text()).collective == "all_reduce"
    assert parse_text(MPI_2022.read_text()).collective == "all_reduce"


def test_ambiguous_collective_asks_for_a_name():
    lines = [ln for ln in ALLGATHER_C0.read_text().splitlines() if "all_gather" not in ln]
    with pytest.raises(NcclParseError, match="collective="):
        parse_text("\n".join(lines), "mystery.log")  # all_gather or alltoall?
    log = parse_text("\n".join(lines), "mystery.log", collective="alltoall_perf")
    assert log.collective == "alltoall"


def test_legacy_sendrecv_layout_without_redop_column():
    text = (
        "#       size         count      type     time   algbw   busbw  error     time   algbw"
        "   busbw  error\n"
        "    67108864      16777216     float    601.2  111.62  111.62  0e+00    600.7  111.72"
        "  111.72  0e+00\n"
    )
    with pytest.raises(NcclParseError, match="sendrecv"):  # or hypercube: cannot tell
        parse_text(text)
    assert parse_text(text, "runs/sendrecv_perf.out").collective == "sendrecv"


def test_override_beats_header_and_aliases_normalize():
    assert parse_file(CURRENT_TXT, collective="AllReduce").collective == "all_reduce"
    assert normalize_collective("./build/reduce_scatter_perf_mpi") == "reduce_scatter"
    assert normalize_collective("allgather") == "all_gather"
    with pytest.raises(ValueError, match="unknown collective"):
        parse_file(CURRENT_TXT, collective="allreduc")


def test_two_different_tests_in_one_file_raise():
    text = CURRENT_TXT.read_text() + ALLGATHER_C0.read_text()
    with pytest.raises(NcclParseError, match="split the file"):
        parse_text(text, "both.log")


# An all_gather row of the 2022 layout on 8 ranks: redop none, count = size / 4 B / 8 ranks.
ROW_AG = (
    "    67108864       2097152     float    none      -1    420.1  159.75  139.78      0"
    "    418.9  160.20  140.18      0"
)


def test_two_tests_without_markers_raise():
    # 2022-era output has no "Collective test starting" line: an all_reduce table followed by an all_gather
    # one gives rows with redop sum beside redop none, and one size with two element counts.
    with pytest.raises(NcclParseError, match="redop none beside rows with sum"):
        parse_text(HEADER_2022 + ROW_A + "\n" + ROW_B + "\n" + HEADER_2022 + ROW_AG + "\n", "all_reduce_perf.log")
    ag_as_sum = ROW_AG.replace("none", " sum")
    with pytest.raises(NcclParseError, match="size 67108864 B appears with 16777216 and 2097152 elements"):
        parse_text(HEADER_2022 + ROW_A + "\n" + ag_as_sum + "\n", "all_reduce_perf.log")
    log = parse_text(HEADER_2022 + ROW_A + "\n" + ROW_A + "\n", "all_reduce_perf.log")  # -N 2: one test twice
    assert len(log.rows) == 2


def test_two_tables_with_different_columns_raise():
    text = LEGACY.read_text() + HEADER_2022 + ROW_A + "\n"
    with pytest.raises(NcclParseError, match=r"both\.log:\d+: a second results table"):
        parse_text(text, "both.log")


# ----------------------------------------------------------------- large_message_rows


def test_large_message_rows_default_64mib():
    rows = large_message_rows(parse_file(CURRENT_TXT))
    assert [r.size_bytes for r in rows] == [2**k for k in range(26, 34)]


def test_large_message_rows_custom_threshold():
    rows = large_message_rows(parse_file(ALLGATHER_C0), min_size_bytes=2**30)
    assert [r.size_bytes for r in rows] == [1073741824, 4294967296]


def test_a_json_size_that_is_a_bool_is_refused():
    """JSON true is an int to Python: "size": true was read as a 1-byte row (an audit)."""
    doc = json.loads(CURRENT_JSON.read_text())
    doc["results"][0]["size"] = True
    with pytest.raises(NcclParseError, match=r"results\[0\]: expected an object with an integer 'size'"):
        parse_json(json.dumps(doc), "run.json")
    doc = json.loads(CURRENT_JSON.read_text())
    doc["results"][1]["count"] = False
    with pytest.raises(NcclParseError, match=r"results\[1\]: 'count' must be an integer element count, got false"):
        parse_json(json.dumps(doc), "run.json")
