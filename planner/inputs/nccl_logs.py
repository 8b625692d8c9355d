"""Parser for NVIDIA nccl-tests output (all_reduce_perf, all_gather_perf, ...).

Handles every text layout nccl-tests has printed plus its JSON file (``-J``):

* ``text-2017``    2017-08 .. 2019-03: ``# bytes N type op ... res``, time in **ms**
                   (converted to us here), ``res`` is a max-deviation float.
* ``text-legacy``  2019-03 .. 2022-08: ``# size count type redop ... error``; no ``root``
                   column for most tests, ``error`` is a max-deviation float (``0e+00``).
* ``text-2022``    2022-08 .. 2025: ``root`` and ``#wrong`` columns, no version line.
* ``text-current`` 2025-06 onwards: ``# Collective test starting:`` / ``# nccl-tests
                   version`` lines, ``getFloatStr`` numbers such as ``1.2e+05``.
* ``json``         ``-J file.json`` (JSON_FILE_VERSION 3).

The legacy ``error``/``res`` column is a numeric deviation, not a count of wrong
elements, so ``NcclRow.wrong`` is ``None`` for those eras (and for ``N/A``).

Columns are located from the table header line, so optional columns (``-S 1`` timestamps,
``-I 1`` per-iteration statistics, ``cputime``) are tolerated. ``NCCL INFO``/``WARN`` lines,
MPI banners, ``[1,0]<stdout>:`` (mpirun --tag-output), ``0: `` (srun -l) and ``[0] `` (mpiexec
-prepend-rank) prefixes, blank lines and repeated headers are skipped. An NCCL_TESTS_SPLIT run (more than
one group in its device lines) is refused, and all_gather / reduce_scatter tables of the eras before 2020-06
may carry busbw = algbw (LEGACY_FACTOR_ONE). A malformed data row at the end of the text
is treated as truncation and dropped, one in the middle too, each with a warning.

Pure standard library; only :func:`parse_file` performs I/O.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KNOWN_COLLECTIVES",
    "NcclLog",
    "NcclParseError",
    "NcclRow",
    "bus_factor",
    "large_message_rows",
    "normalize_collective",
    "parse_file",
    "parse_json",
    "parse_text",
]


@dataclass(frozen=True)
class NcclRow:
    """One data row (one message size) of an nccl-tests table; times in us, GB = 1e9 B."""

    size_bytes: int
    count: int | None
    dtype: str | None
    redop: str | None
    out_of_place_time_us: float | None
    out_of_place_algbw_gbytes_per_s: float | None
    out_of_place_busbw_gbytes_per_s: float | None
    in_place_time_us: float | None
    in_place_algbw_gbytes_per_s: float | None
    in_place_busbw_gbytes_per_s: float | None
    wrong: int | None  # out-of-place + in-place #wrong; None for N/A (-c 0) or legacy eras


@dataclass(frozen=True)
class NcclLog:
    """A parsed nccl-tests run."""

    collective: str
    num_ranks: int | None
    num_nodes: int | None
    rows: tuple[NcclRow, ...]
    avg_busbw_gbytes_per_s: float | None
    source_format: str
    # Ranks on each host named in the device lines (largest first); () when the log names no hosts.
    ranks_per_host: tuple[int, ...] = ()
    # The GPU models the device lines name ("NVIDIA H100 80GB HBM3"), sorted; () when they name none.
    devices: tuple[str, ...] = ()


class NcclParseError(ValueError):
    """The input is not (complete) nccl-tests output; the message names the file/line."""


KNOWN_COLLECTIVES = (
    "all_reduce", "all_gather", "reduce_scatter", "sendrecv", "alltoall", "alltoallv",
    "broadcast", "reduce", "gather", "scatter", "hypercube",
)
_ALIASES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "send_recv": "sendrecv", "all_to_all": "alltoall", "all2all": "alltoall",
    "all_to_allv": "alltoallv", "bcast": "broadcast",
}
# Binary names such as "all_reduce_perf" or "./build/all_gather_perf_mpi"; longest first.
_PROG_RE = re.compile(
    r"(?<![A-Za-z0-9])(all_reduce|all_gather|reduce_scatter|alltoallv|alltoall|sendrecv"
    r"|broadcast|reduce|gather|scatter|hypercube)_perf"
)


def normalize_collective(name: str) -> str:
    """Map ``"allreduce"``, ``"all_reduce_perf"``, ``"AllGather"`` ... to a canonical name."""
    key = name.strip().lower().replace("-", "_").rsplit("/", 1)[-1]
    key = re.sub(r"(_perf)?(_mpi)?$", "", key)
    key = _ALIASES.get(key, key)
    if key not in KNOWN_COLLECTIVES:
        raise ValueError(f"unknown collective {name!r}; expected one of {KNOWN_COLLECTIVES}")
    return key


def _programs_in(text: str) -> set[str]:
    """Collective names of every ``<collective>_perf`` binary mentioned in ``text``."""
    return set(_PROG_RE.findall(text))


# --------------------------------------------------------------------------- text layout

_HEADER_ALIASES = {
    "size": "size", "bytes": "size", "count": "count", "N": "count", "type": "type",
    "redop": "redop", "op": "redop", "root": "root", "time": "time", "cputime": "time",
    "algbw": "algbw", "busbw": "busbw", "#wrong": "wrong", "error": "wrong", "res": "wrong",
}
_REQUIRED_COLUMNS = ("size", "count", "type", "time", "algbw", "busbw")


@dataclass(frozen=True)
class _Layout:
    """Column names (canonical, one per column) read from a table header line."""

    names: tuple[str, ...]
    era: str  # text-2017 | text-legacy | text-2022 (upgraded to text-current later)

    def index(self, column: str, nth: int = 0) -> int | None:
        """Position of the ``nth`` column called ``column`` (0 out-of-place, 1 in-place)."""
        hits = [i for i, n in enumerate(self.names) if n == column]
        return hits[nth] if nth < len(hits) else None


def _header_layout(tokens: list[str]) -> _Layout | None:
    """Layout from the tokens of a ``# size count type ... busbw #wrong ...`` header line.

    Accepts the 2017 names (``bytes N op res``), the 2019 ``error`` column and the
    2022+ ``root``/``#wrong`` columns; returns None for any other line.
    """
    if not tokens or tokens[0] not in ("size", "bytes"):
        return None
    names = tuple(_HEADER_ALIASES.get(t, t) for t in tokens)
    if not all(c in names for c in _REQUIRED_COLUMNS):
        return None
    if "bytes" in tokens:
        era = "text-2017"
    elif "error" in tokens:
        era = "text-legacy"
    else:
        era = "text-2022"
    return _Layout(names, era)


def _total_wrong(out_of_place: int | None, in_place: int | None) -> int | None:
    """Wrong elements of a row: out-of-place plus in-place, None if neither was checked."""
    if out_of_place is None or in_place is None:
        return in_place if out_of_place is None else out_of_place
    return out_of_place + in_place


def _is_number(token: str) -> bool:
    """Whether a text token parses as a float (``1.2e+05``, ``nan`` included)."""
    try:
        float(token)
    except ValueError:
        return False
    return True


def _fit_row(layout: _Layout, tokens: list[str]) -> list[str] | None:
    """Align a data row's tokens with the header; None if the row is partial or overlong.

    Some tests print an empty redop (hypercube; alltoall before 2022-08), which removes
    one token; it is restored as ``""``. A ``-S 1`` timestamp adds one token (date, time).
    """
    n = len(layout.names)
    r = layout.index("redop")
    if len(tokens) == n - 1 and r is not None and _is_number(tokens[r]):
        tokens = tokens[:r] + [""] + tokens[r:]
    extra = 1 if "timestamp" in layout.names else 0
    return tokens if n <= len(tokens) <= n + extra else None


def _wrong_value(token: str, era: str) -> int | None:
    """``#wrong`` count (``%5g``/``%6g``); None for ``N/A`` and for legacy deviation columns."""
    if token == "N/A":
        return None
    value = float(token)  # validates the token even where it is discarded
    if era in ("text-2017", "text-legacy"):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ValueError(f"#wrong {token} is not a count")  # a malformed row, not an OverflowError traceback
    return int(value)


def _section(layout: _Layout, tokens: list[str], nth: int) -> tuple:
    """(time_us, algbw, busbw, wrong) of the out-of-place (nth=0) or in-place (1) block."""
    t = layout.index("time", nth)
    if t is None:
        return (None, None, None, None)
    scale = 1000.0 if layout.era == "text-2017" else 1.0  # 2017 printed milliseconds
    algbw = float(tokens[layout.index("algbw", nth)])
    busbw = float(tokens[layout.index("busbw", nth)])
    w = layout.index("wrong", nth)
    wrong = None if w is None else _wrong_value(tokens[w], layout.era)
    return (float(tokens[t]) * scale, algbw, busbw, wrong)


MAX_ROW_BYTES = 2**50  # calibrate --min-size's upper bound: no nccl-tests run moves more per rank
MAX_ROW_TIME_US = 1e12  # 11.6 days for one collective


class _ImpossibleRow(ValueError):
    """A complete data row whose numbers cannot be a measurement (_check_section): dropped with a
    warning wherever it is, unlike a truncated last line."""


def _check_section(size: int, section: tuple) -> None:
    """ValueError when a section's time cannot be the one a collective ran in: not in (0, 1e12] us.
    (Its algbw column is not checked against size / time: nccl-tests' GetBw differs by collective,
    e.g. hypercube's counts n - 1 transfers.)"""
    time_us = section[0]
    if time_us is not None and not math.isnan(time_us) and not 0 < time_us <= MAX_ROW_TIME_US:
        raise _ImpossibleRow(f"size {size}: time {time_us:g} us is not in (0, {MAX_ROW_TIME_US:g}]")


def _make_row(size: int, count: int | None, dtype: str | None, redop: str | None, oop: tuple, ip: tuple) -> NcclRow:
    """A row from its out-of-place and in-place (time us, algbw, busbw, #wrong) sections; ValueError
    for a size over MAX_ROW_BYTES or a section whose time is impossible (_check_section)."""
    if not 0 <= size <= MAX_ROW_BYTES:
        raise _ImpossibleRow(f"size {str(size)[:40]} bytes is not in [0, {MAX_ROW_BYTES}]")
    _check_section(size, oop)
    _check_section(size, ip)
    return NcclRow(
        size_bytes=size, count=count, dtype=dtype, redop=redop or None,
        out_of_place_time_us=oop[0], out_of_place_algbw_gbytes_per_s=oop[1], out_of_place_busbw_gbytes_per_s=oop[2],
        in_place_time_us=ip[0], in_place_algbw_gbytes_per_s=ip[1], in_place_busbw_gbytes_per_s=ip[2],
        wrong=_total_wrong(oop[3], ip[3]),
    )


def _parse_row(layout: _Layout, tokens: list[str]) -> tuple[NcclRow, int | None]:
    """Parse one fitted text data row into (row, root); raises ValueError if malformed."""

    def col(name: str) -> str | None:
        i = layout.index(name)
        return None if i is None else tokens[i]

    oop, ip = _section(layout, tokens, 0), _section(layout, tokens, 1)
    count, root = col("count"), col("root")
    row = _make_row(int(tokens[layout.index("size")]), None if count is None else int(count), col("type"),
                    col("redop"), oop, ip)
    return row, None if root is None else int(root)


# --------------------------------------------------------------------------- text scanning

# Open MPI's --tag-output "[1,0]<stdout>:", srun -l's "0: ", MPICH / Intel MPI mpiexec -prepend-rank's "[0] "
_PREFIX_RE = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: |\[\d+\] ?)")
_NOISE_RE = re.compile(r"\bNCCL (?:INFO|WARN|TRACE|ERROR|ABORT)\b")
_INFO_NRANKS_RE = re.compile(r"\bnranks (\d+)", re.IGNORECASE)
_RANK_RE = re.compile(r"^Rank\s+(\d+)\b.*?\bon\s+(\S+)\s+device\b")
_GROUP_RE = re.compile(r"^Rank\s+\d+\s+Group\s+(\d+)\b")  # util.cu: "#  Rank %2d Group %2d Pid %6d on ..."
_DEVICE_RE = re.compile(r"\]\s*(\S.*)$")  # "... device 0 [0000:18:00] NVIDIA H100 80GB HBM3"
_STARTING_RE = re.compile(r"Collective test (?:starting|concluded):\s*(\S+)")
_AVG_BW_RE = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
_OUT_OF_BOUNDS_RE = re.compile(r"Out of bounds values\s*:\s*(\d+)\s+FAILED")
_MARKER_RE = re.compile(r"\bnThread \d+ nGpus \d+|^Using devices\b|^nccl-tests version\b")


@dataclass
class _Scan:
    """Everything collected from one pass over a text log."""

    name: str
    layout: _Layout | None = None
    layout_line: int = 0
    rows: list[tuple[NcclRow, int | None]] = field(default_factory=list)
    last_row_line: int = 0
    bad_lines: list[int] = field(default_factory=list)
    impossible: list[str] = field(default_factory=list)  # "line N (why)" of rows _check_section refused
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    host_of: dict[int, str] = field(default_factory=dict)  # rank -> host
    groups: set[int] = field(default_factory=set)  # NCCL_TESTS_SPLIT groups of the device lines
    devices: set[str] = field(default_factory=set)  # GPU models after the bus id of device lines
    started: set[str] = field(default_factory=set)
    mentioned: set[str] = field(default_factory=set)
    avg_busbw: float | None = None
    info_nranks: int | None = None
    current: bool = False  # saw a 2025+ marker line
    failed_values: int = 0  # the footer's "Out of bounds values : N FAILED" (validation failed somewhere)
    seen_nccl_tests: bool = False  # saw a parameter / device line


def _scan_text(text: str, name: str) -> _Scan:
    """One pass over the lines of a text log, dispatching each to a handler."""
    scan = _Scan(name)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX_RE.sub("", raw, count=1).strip()
        if not line:
            continue
        if _NOISE_RE.search(line):
            _scan_nccl_info(scan, line)
        elif line.split()[0].isdigit():
            _scan_row(scan, lineno, line.split())
        else:
            _scan_comment(scan, lineno, line)
    return scan


def _scan_nccl_info(scan: _Scan, line: str) -> None:
    """``host:pid:tid [dev] NCCL INFO ... nranks 16 ...`` lines: keep only the rank count."""
    m = _INFO_NRANKS_RE.search(line)
    if m:
        scan.info_nranks = max(scan.info_nranks or 0, int(m.group(1)))


def _scan_row(scan: _Scan, lineno: int, tokens: list[str]) -> None:
    """A line starting with an integer: a data row if it fits the current header."""
    if scan.layout is None:
        return
    fitted = _fit_row(scan.layout, tokens)
    try:
        if fitted is None:
            raise ValueError
        scan.rows.append(_parse_row(scan.layout, fitted))
        scan.last_row_line = lineno
    except _ImpossibleRow as err:
        scan.impossible.append(f"line {lineno} ({err})")
    except (ValueError, TypeError, IndexError):
        scan.bad_lines.append(lineno)


def _scan_comment(scan: _Scan, lineno: int, line: str) -> None:
    """Header, device, footer and marker lines (``#``-prefixed in every era but 2017)."""
    body = line.lstrip("#").strip()
    layout = _header_layout(body.split())
    if layout is not None:
        _set_layout(scan, lineno, layout)
        return
    m = _RANK_RE.match(body)
    if m:
        scan.ranks.add(int(m.group(1)))
        scan.hosts.add(m.group(2))
        scan.host_of[int(m.group(1))] = m.group(2)
        group = _GROUP_RE.match(body)
        if group:
            scan.groups.add(int(group.group(1)))
        device = _DEVICE_RE.search(body)
        if device:
            scan.devices.add(device.group(1).strip())
    m = _STARTING_RE.search(body)
    if m:
        scan.started |= _programs_in(m.group(1))
        scan.current = True
    elif _MARKER_RE.search(body):
        scan.seen_nccl_tests = True
        scan.current |= body.startswith("nccl-tests version")
    failed = _OUT_OF_BOUNDS_RE.search(body)
    if failed:
        scan.failed_values += int(failed.group(1)[:12])
    m = _AVG_BW_RE.search(body)
    if m and scan.avg_busbw is None and _is_number(m.group(1)):
        scan.avg_busbw = float(m.group(1))
    scan.mentioned |= _programs_in(body)


def _set_layout(scan: _Scan, lineno: int, layout: _Layout) -> None:
    """Record the table header; a repeat is fine, a different second table is not."""
    if scan.layout is not None and scan.layout != layout:
        raise NcclParseError(
            f"{scan.name}:{lineno}: a second results table with different columns "
            f"(first at line {scan.layout_line}); split the file into one run per file"
        )
    if scan.layout is None:
        scan.layout, scan.layout_line = layout, lineno


def _complete_rows(scan: _Scan) -> list[tuple[NcclRow, int | None]]:
    """Rows that parsed; malformed rows after the last good one are a truncated tail."""
    if scan.impossible:
        warnings.warn(f"{scan.name}: skipped {len(scan.impossible)} data row(s) that cannot be a measurement: "
                      f"{'; '.join(scan.impossible[:3])}", stacklevel=3)
    middle = [n for n in scan.bad_lines if n < scan.last_row_line]
    if middle:
        warnings.warn(
            f"{scan.name}: skipped {len(middle)} malformed data row(s) at line(s) "
            f"{', '.join(map(str, middle[:5]))}",
            stacklevel=3,
        )
    tail = [n for n in scan.bad_lines if n > scan.last_row_line]
    if tail and scan.rows:
        warnings.warn(f"{scan.name}: dropped the incomplete data row at line {tail[0]} (the log is cut off there)",
                      stacklevel=3)
    if not scan.rows:
        raise NcclParseError(
            f"{scan.name}: no complete data rows after the table header at line "
            f"{scan.layout_line} (file truncated, or the run failed?)"
        )
    return scan.rows


def _raise_no_table(scan: _Scan) -> None:
    """Explain why a text has no results table."""
    if scan.seen_nccl_tests or scan.ranks:
        raise NcclParseError(
            f"{scan.name}: nccl-tests header found but no results table "
            "(the run may have failed before printing results)"
        )
    raise NcclParseError(
        f"{scan.name}: does not look like nccl-tests output (no results table header "
        "such as '#  size  count  type  redop  root  time  algbw  busbw ...' was found)"
    )


def _mixed_collectives(rows: tuple[NcclRow, ...]) -> str | None:
    """Why the rows cannot come from one collective, whatever the markers say (a 2022-era file holds
    no "Collective test starting" line): reducing rows (sum, prod, ...; `-o all` runs several) beside
    rows without a reduction (redop none: all_gather, broadcast, alltoall), or one message size with
    two element counts (all_reduce's count is size / element, all_gather's that over the ranks)."""
    ops = {r.redop for r in rows if r.redop}
    if "none" in ops and len(ops) > 1:
        return f"rows with redop none beside rows with {', '.join(sorted(ops - {'none'}))}"
    counts: dict[tuple[int, str | None], int] = {}
    for r in rows:
        if r.count is not None and counts.setdefault((r.size_bytes, r.dtype), r.count) != r.count:
            return f"size {r.size_bytes} B appears with {counts[(r.size_bytes, r.dtype)]} and {r.count} elements"
    return None


def parse_text(text: str, name: str = "<string>", collective: str | None = None) -> NcclLog:
    """Parse nccl-tests stdout (any era, see module doc); JSON text is passed to parse_json.

    ``name`` (usually the file name) is used in error messages and, as a last resort
    before guessing from the numbers, to find the collective (``all_reduce_perf.log``).
    """
    if text.lstrip().startswith("{"):
        return parse_json(text, name, collective)
    if not text.strip():
        raise NcclParseError(f"{name}: file is empty; expected nccl-tests output")
    scan = _scan_text(text, name)
    if scan.layout is None:
        _raise_no_table(scan)
    if scan.failed_values and scan.layout.era in ("text-2017", "text-legacy"):
        raise NcclParseError(f"{name}: nccl-tests reports {scan.failed_values} out-of-bounds values (FAILED), and "
                             "this era's table has no #wrong column to tell which rows: the run corrupted data; "
                             "calibrate from a run whose check passes")
    _check_not_split(scan.groups, name)
    pairs = _complete_rows(scan)
    rows, roots = tuple(r for r, _ in pairs), [root for _, root in pairs]
    num_ranks = len(scan.ranks) or scan.info_nranks
    if len(scan.started) > 1:
        raise NcclParseError(
            f"{name}: output of several tests ({', '.join(sorted(scan.started))}); "
            "split the file into one run per file"
        )
    mixed = _mixed_collectives(rows)
    if mixed:
        raise NcclParseError(f"{name}: {mixed}: output of several tests; split the file into one run per file")
    era = scan.layout.era
    evidence = _Evidence(rows, roots, "redop" in scan.layout.names, num_ranks, era)
    return NcclLog(
        collective=_resolve_collective(
            collective, [scan.started, scan.mentioned, _programs_in(name)], evidence, name
        ),
        num_ranks=num_ranks,
        num_nodes=len(scan.hosts) or None,
        rows=rows,
        avg_busbw_gbytes_per_s=scan.avg_busbw,
        source_format="text-current" if era == "text-2022" and scan.current else era,
        ranks_per_host=_per_host(scan.host_of),
        devices=tuple(sorted(scan.devices)),
    )


def _per_host(host_of: dict) -> tuple[int, ...]:
    """How many ranks each host ran, largest first, from rank -> host."""
    return tuple(sorted(Counter(host_of.values()).values(), reverse=True))


# --------------------------------------------------------------------------- JSON


def _json_float(value: object, where: str) -> float | None:
    """A JSON number; nccl-tests writes non-finite doubles as the string ``"nan"``."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in ("nan", "-nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NcclParseError(f"{where}: expected a number, got {str(value)[:40]!r}")
    try:
        return float(value)
    except OverflowError:
        raise NcclParseError(f"{where}: {str(value)[:40]}... is too large a number") from None


def _json_section(result: dict, key: str, where: str) -> tuple:
    """(time_us, algbw, busbw, wrong) from ``out_of_place``/``in_place``; Nones if null."""
    sec = result.get(key)
    if sec is None:
        return (None, None, None, None)
    if not isinstance(sec, dict):
        raise NcclParseError(f"{where}.{key}: expected an object")
    time = sec.get("time", sec.get("cpu_time"))
    nwrong = _json_float(sec.get("nwrong"), f"{where}.{key}.nwrong")
    if nwrong is not None and math.isinf(nwrong):
        raise NcclParseError(f"{where}.{key}.nwrong: a count of wrong elements, got {nwrong}")
    return (
        _json_float(time, f"{where}.{key}.time"),
        _json_float(sec.get("alg_bw"), f"{where}.{key}.alg_bw"),
        _json_float(sec.get("bus_bw"), f"{where}.{key}.bus_bw"),
        None if nwrong is None or not math.isfinite(nwrong) else int(nwrong),
    )


def _json_row(result: object, where: str) -> tuple[NcclRow, int | None]:
    """One element of the JSON ``results`` list as (row, root)."""
    if not isinstance(result, dict) or not isinstance(result.get("size"), int) or isinstance(result["size"], bool):
        raise NcclParseError(f"{where}: expected an object with an integer 'size'")
    if isinstance(result.get("count"), bool):
        raise NcclParseError(f"{where}: 'count' must be an integer element count, got {str(result['count']).lower()}")
    oop = _json_section(result, "out_of_place", where)
    ip = _json_section(result, "in_place", where)
    root = str(result.get("root", "")).strip()
    count = result.get("count")
    try:
        row = _make_row(result["size"], count if isinstance(count, int) else None, result.get("type"),
                        result.get("redop"), oop, ip)
    except ValueError as err:
        raise NcclParseError(f"{where}: {err}") from None
    return row, int(root) if re.fullmatch(r"-?\d+", root) else None


def _no_constant(name: str):
    raise ValueError(f"bare {name} is not JSON")


def _load_json(text: str, name: str) -> dict:
    """Decode an nccl-tests ``-J`` file and check it has a ``results`` list."""
    from planner.inputs.limits import MAX_NESTING
    from planner.inputs.reading import nesting_depth

    if nesting_depth(text) > MAX_NESTING:
        raise NcclParseError(f"{name}: nested deeper than {MAX_NESTING}; not nccl-tests output")
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):
            raise NcclParseError(f"{name}: {exc} (nccl-tests writes non-finite numbers as strings)") from None
        raise NcclParseError(
            f"{name}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno}); "
            "truncated nccl-tests JSON file?"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise NcclParseError(
            f"{name}: does not look like nccl-tests output (JSON without a 'results' list)"
        )
    return doc


def _json_devices(doc: dict) -> list[dict]:
    """The ``config.devices`` list (one entry per rank), or [] if absent."""
    config = doc.get("config")
    devices = config.get("devices") if isinstance(config, dict) else None
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _check_not_split(groups: set, name: str) -> None:
    """NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK runs split the ranks into groups that each time their own
    communicator (src/common.cu run(): MPI_Comm_split by color, nProcs the group's size; util.cu prints the color
    as "Group %2d", the -J file as config.devices[].group): their rows are one group's, not a run of every rank
    the log lists, so a log whose device lines name more than one group is refused."""
    if len(groups) > 1:
        raise NcclParseError(f"{name}: an NCCL_TESTS_SPLIT run ({len(groups)} groups in its device lines): each "
                             "group timed its own communicator over its own ranks, not the run of every rank "
                             "listed; calibrate from a run without NCCL_TESTS_SPLIT or NCCL_TESTS_SPLIT_MASK")


def parse_json(text: str, name: str = "<string>", collective: str | None = None) -> NcclLog:
    """Parse the JSON file written by ``-J`` (JSON_FILE_VERSION 3, nccl-tests 2025-10+)."""
    doc = _load_json(text, name)
    pairs = [_json_row(r, f"{name}: results[{i}]") for i, r in enumerate(doc["results"])]
    if not pairs:
        raise NcclParseError(f"{name}: the JSON 'results' list is empty (run failed?)")
    devices = _json_devices(doc)
    _check_not_split({d.get("group") for d in devices if d.get("group") is not None}, name)
    num_ranks = len({d.get("rank") for d in devices}) or None
    hosts = {d.get("hostname") for d in devices if d.get("hostname")}
    host_of = {d.get("rank"): d.get("hostname") for d in devices if d.get("hostname")}
    args = doc.get("args")
    program = _programs_in(str(args[0])) if isinstance(args, list) and args else set()
    rows, roots = tuple(r for r, _ in pairs), [root for _, root in pairs]
    mixed = _mixed_collectives(rows)
    if mixed:
        raise NcclParseError(f"{name}: {mixed}: output of several tests; one run per file")
    avg = doc.get("average_bus_bandwidth")
    avg_bw = avg.get("bandwidth") if isinstance(avg, dict) else None
    return NcclLog(
        collective=_resolve_collective(
            collective, [program, _programs_in(name)], _Evidence(rows, roots, True, num_ranks),
            name,
        ),
        num_ranks=num_ranks,
        num_nodes=len(hosts) or None,
        rows=rows,
        avg_busbw_gbytes_per_s=_json_float(avg_bw, f"{name}: average_bus_bandwidth"),
        source_format="json",
        ranks_per_host=_per_host(host_of),
        devices=tuple(sorted({d["device_info"].strip() for d in devices
                              if isinstance(d.get("device_info"), str) and d["device_info"].strip()})),
    )


# --------------------------------------------------------------------------- collective


@dataclass(frozen=True)
class _Evidence:
    """What the table says about which collective produced it."""

    rows: tuple[NcclRow, ...]
    roots: list[int | None]
    has_redop_column: bool
    num_ranks: int | None
    era: str = "json"  # the table's layout era (_Layout.era), or json


# (collective, redop kinds it prints, rooted?, busbw/algbw factor) from src/*.cu GetBw and
# RunTest of each era. redop kinds: "op" (sum, ...), "none", "empty" (""), "nocol" (no column).
_SIGNATURES = (
    ("all_reduce", {"op"}, False, "ar"),
    ("reduce_scatter", {"op"}, False, "ag"),
    ("sendrecv", {"op", "nocol"}, False, "one"),
    ("reduce", {"op"}, True, "one"),
    ("all_gather", {"none", "nocol"}, False, "ag"),
    ("alltoall", {"none", "empty"}, False, "ag"),
    ("alltoallv", {"none"}, False, "ag"),
    ("broadcast", {"none", "nocol"}, True, "one"),
    ("gather", {"none", "nocol"}, True, "ag"),
    ("scatter", {"none", "nocol"}, True, "ag"),
    ("hypercube", {"empty", "nocol"}, False, "one"),
)


def _bus_ratio(rows: tuple[NcclRow, ...]) -> float | None:
    """busbw/algbw of the fastest row with algbw >= 1 GB/s (so %6.2f rounding is small)."""
    pairs = [
        (a, b)
        for r in rows
        for a, b in (
            (r.out_of_place_algbw_gbytes_per_s, r.out_of_place_busbw_gbytes_per_s),
            (r.in_place_algbw_gbytes_per_s, r.in_place_busbw_gbytes_per_s),
        )
        if a is not None and b is not None and math.isfinite(a) and a >= 1.0
    ]
    if not pairs:
        return None
    algbw, busbw = max(pairs)
    return busbw / algbw


def _factor(kind: str, n: int) -> float:
    """busbw / algbw of factor ``kind`` over ``n`` ranks: ar = 2(n-1)/n, ag = (n-1)/n, one = 1."""
    return {"ar": 2 * (n - 1) / n, "ag": (n - 1) / n, "one": 1.0}[kind]


def bus_factor(collective: str, n: int) -> float:
    """busbw / algbw of ``collective`` over ``n`` ranks as nccl-tests prints it today (_SIGNATURES)."""
    return _factor(next(f for c, _, _, f in _SIGNATURES if c == collective), n)


def _factor_matches(kind: str, ratio: float | None, n: int | None) -> bool:
    """Whether ``ratio`` fits factor ``kind`` (_factor)."""
    if ratio is None:
        return True
    if n is None:
        bounds = {"one": (0.98, 1.02), "ar": (1.02, 2.02), "ag": (0.48, 0.98)}[kind]
        return bounds[0] <= ratio <= bounds[1]
    expected = _factor(kind, n)
    return abs(ratio - expected) <= 0.02 * max(expected, 0.5)


# nccl-tests before ec1b5e2 (2020-06-19, "Change all_gather/reduce_scatter algbw to match the documentation")
# printed all_gather and reduce_scatter with busbw = algbw (src/all_gather.cu AllGatherGetBw: factor 1); their size
# and time columns meant what they mean today. A table of the eras without a #wrong column that names one of them
# may have either factor (_consistent); inference alone keeps today's, where factor 1 is sendrecv's.
LEGACY_FACTOR_ONE = {"all_gather", "reduce_scatter"}
LEGACY_ERAS = ("text-2017", "text-legacy")


def _infer_collective(ev: _Evidence, use_ratio: bool = True, legacy: bool = False) -> list[str]:
    """Collectives consistent with the redop/root columns and (use_ratio) the busbw/algbw ratio; with `legacy`,
    LEGACY_FACTOR_ONE's old factor 1 too."""
    redop = ev.rows[0].redop
    if not ev.has_redop_column:
        op_kind = "nocol"
    else:
        op_kind = {None: "empty", "none": "none"}.get(redop, "op")
    rooted = any(r is not None and r >= 0 for r in ev.roots)
    ratio = _bus_ratio(ev.rows) if use_ratio else None
    return sorted({
        coll
        for coll, kinds, needs_root, factor in _SIGNATURES
        if op_kind in kinds and rooted == needs_root
        and (_factor_matches(factor, ratio, ev.num_ranks)
             or legacy and coll in LEGACY_FACTOR_ONE and _factor_matches("one", ratio, ev.num_ranks))
    })


def _resolve_collective(
    override: str | None, sources: list[set[str]], ev: _Evidence, name: str
) -> str:
    """Override, else the first unambiguous name source, else inference, else an error. An override
    that contradicts the test the log names is an error, and so is a name (given or read) that the table
    itself contradicts (its redop and root columns, its busbw/algbw ratio: _infer_collective): either way
    its bus-bandwidth factor would be wrong (an all_gather table read as all_reduce doubles the link)."""
    named = next((next(iter(found)) for found in sources if len(found) == 1), None)
    if override:
        wanted = normalize_collective(override)
        if named is not None and named != wanted:
            raise NcclParseError(f"{name}: the log is {named} output; collective {wanted} contradicts it "
                                 "(give the collective only for logs that do not name their test)")
        return _consistent(wanted, ev, name, "given")
    if named is not None:
        return _consistent(named, ev, name, "named")
    candidates = _infer_collective(ev)
    if len(candidates) == 1:
        return candidates[0]
    hint = f"could be {', '.join(candidates)}" if candidates else "no known collective fits"
    raise NcclParseError(
        f"{name}: cannot tell which collective produced this output ({hint}); "
        "pass collective='all_reduce' (or the right name)"
    )


def _consistent(collective: str, ev: _Evidence, name: str, how: str) -> str:
    """`collective` where the table's own columns allow it (or say nothing), else an error naming what fits. The
    busbw/algbw ratio is read only where the log says how many ranks ran: without them a 2-rank all_reduce
    (ratio 2 x 1/2 = 1) cannot be told from a sendrecv by it."""
    known = {c for c, *_ in _SIGNATURES}
    fits = (_infer_collective(ev, use_ratio=bool(ev.num_ranks), legacy=ev.era in LEGACY_ERAS)
            if ev.rows and collective in known else [collective])
    if fits and collective not in fits:
        ratio = _bus_ratio(ev.rows) if ev.num_ranks else None
        seen = f"busbw/algbw {ratio:.3f}" if ratio is not None else "its redop and root columns"
        ranks = f" over {ev.num_ranks} ranks" if ev.num_ranks else ""
        raise NcclParseError(f"{name}: the table ({seen}{ranks}) is {' or '.join(fits)} output, not the "
                             f"{collective} its {'collective' if how == 'given' else 'name'} says: its bus "
                             "bandwidth factor would be wrong; rename the file or give the right collective")
    return collective


# --------------------------------------------------------------------------- entry points


def parse_file(path: str | Path, collective: str | None = None) -> NcclLog:
    """Read ``path`` and parse it as nccl-tests JSON (``-J``) or text output."""
    from planner.inputs.reading import read_text

    p = Path(path)
    text = read_text(p, lenient=True)
    if text.lstrip().startswith("{"):
        return parse_json(text, str(p), collective)
    return parse_text(text, str(p), collective)


def large_message_rows(
    log: NcclLog, min_size_bytes: int = 64 * 2**20
) -> tuple[NcclRow, ...]:
    """Rows with ``size_bytes >= min_size_bytes``: the ones to calibrate bandwidth from."""
    return tuple(r for r in log.rows if r.size_bytes >= min_size_bytes)
