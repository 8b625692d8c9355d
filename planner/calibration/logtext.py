"""nccl-tests output as `planner calibrate` reads it: what it must know of a log's text beyond what
planner.inputs.nccl_logs parses. Pure functions; no I/O.

* MPICH / Intel MPI ``-prepend-rank`` put ``[3] `` before every line, which the parser (Open MPI's
  ``[1,0]<stdout>:``, srun -l's ``0: ``) does not strip: removed here first.
* NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK runs split the ranks into groups that each time their own
  communicator (nccl-tests src/common.cu run(): MPI_Comm_split by color, nProcs the group's size; util.cu
  writeDeviceReport prints the color as ``Group %2d``, the -J file as config.devices[].group): their rows
  are one group's, not the run of every rank the log lists, so they are refused.
* all_gather / reduce_scatter tables of nccl-tests before commit ec1b5e2 (2020-06-19, "Change
  all_gather/reduce_scatter algbw to match the documentation") print busbw = algbw (src/all_gather.cu
  AllGatherGetBw: baseBw = count x typesize x (nranks - 1) / sec, factor 1); the parser reads that
  ratio as sendrecv's. Their size column (max(sendBytes, expectedBytes), the whole gathered buffer) and
  time are what they are today, and the fit uses only those, so such tables are read as the test they
  name (legacy_gather).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import replace

from planner.errors import PlannerError
from planner.inputs.nccl_logs import KNOWN_COLLECTIVES, NcclLog, NcclParseError, normalize_collective, parse_text

_RANK_PREFIX_RE = re.compile(r"^\[\d+\] ?", re.MULTILINE)  # mpiexec -prepend-rank (MPICH Hydra, Intel MPI)
_GROUP_RE = re.compile(r"\bRank\s+\d+\s+Group\s+(\d+)\b")  # util.cu: "#  Rank %2d Group %2d Pid %6d on ..."
_JSON_GROUP_RE = re.compile(r'"group"\s*:\s*(\d+)')  # util.cu jsonRankInfo: jsonKey("group")
_PROGRAM_RE = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(KNOWN_COLLECTIVES) + r")_perf")
# a table header with a busbw column and no #wrong one: the 2017 (bytes N type op ... res) and 2019-2022
# (size count type ... error) layouts, the only ones nccl-tests printed before 2022-08
_LEGACY_HEADER_RE = re.compile(r"^[#\s]*(?:size|bytes)\s+(?:count|N)\s(?!.*#wrong).*\bbusbw\b", re.MULTILINE)


def strip_rank_prefixes(text: str) -> str:
    """The text without mpiexec -prepend-rank's ``[N] `` at the start of its lines (a -J JSON file as it is)."""
    return text if text.lstrip().startswith("{") else _RANK_PREFIX_RE.sub("", text)


def check_not_split(text: str, name: str) -> None:
    """One line when the device lines name more than one group: an NCCL_TESTS_SPLIT run."""
    found = _JSON_GROUP_RE if text.lstrip().startswith("{") else _GROUP_RE
    groups = set(found.findall(text))
    if len(groups) > 1:
        raise PlannerError(f"{name}: an NCCL_TESTS_SPLIT run ({len(groups)} groups in its device lines): each group "
                           "timed its own communicator over its own ranks, not the run of every rank listed; "
                           "calibrate from a run without NCCL_TESTS_SPLIT or NCCL_TESTS_SPLIT_MASK")


def named_collective(text: str, name: str, collective: str | None) -> str | None:
    """The test a log is of: the one given, else the one program its text names, else its file name's."""
    if collective:
        return normalize_collective(collective)
    for found in (set(_PROGRAM_RE.findall(text)), set(_PROGRAM_RE.findall(name))):
        if len(found) == 1:
            return found.pop()
    return None


def legacy_gather(text: str, name: str, collective: str | None) -> NcclLog | None:
    """A pre-ec1b5e2 all_gather / reduce_scatter table (busbw/algbw 1, no #wrong column) read as the test it
    names; None for any other text. The parser takes a factor-1 table only as sendrecv, and only where nothing
    names another test, so it reads one with the programs' names blanked and this names it back; its warnings
    were given when the table was first read."""
    wanted = named_collective(text, name, collective)
    if wanted not in ("all_gather", "reduce_scatter") or not _LEGACY_HEADER_RE.search(text):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            log = parse_text(_PROGRAM_RE.sub(r"\1-perf", text), "<legacy>", "sendrecv")
    except NcclParseError:
        return None
    return replace(log, collective=wanted)


def parse_log_text(text: str, name: str, collective: str | None) -> NcclLog:
    """An nccl-tests log (text or -J JSON) for calibration; NcclParseError or PlannerError in one line."""
    text = strip_rank_prefixes(text)
    check_not_split(text, name)
    try:
        return parse_text(text, name, collective)
    except NcclParseError:
        log = legacy_gather(text, name, collective)
        if log is None:
            raise
        return log
