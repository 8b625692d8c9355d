"""Every malformed or hostile input (tests/hostile_inputs.py) ends in one error line and exit code 2.

Each case runs in-process through `planner.commands.main.main(argv)`, in its own folder as the
working directory, with stdout, stderr and stdin swapped for buffers, its environment variables
set and restored, and a wall-clock limit. Outcomes:

- traceback: an exception escaped main() (SystemExit only with a code other than 0 or 2)
- hang: the case ran past TIMEOUT_S (EXTREME_TIMEOUT_S for the inputs at every limit)
- nonsense accepted: a malformed case exited 0 (the `either` extremes may exit 0)
- invalid JSON: --json, exit 0, and stdout is not one strict JSON document (NaN/Infinity refused)
- multi-line error: an error exit whose stderr is not one `planner: error:` line (optionally after
  `planner: warning:` / `planner: note:` lines)
- bad exit code: main() returned something other than 0 or 2
- control failed: a valid control case did not exit 0
- code executed: a `touch pwned` hidden in an input created the file
- setup error: the harness could not build the case (a bug here, not in planner)
- ok

`pytest -s tests/test_hostile_inputs.py` prints the table of outcomes per kind and every failure.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from hostile_inputs import Case, cases

from planner.commands.main import main

TIMEOUT_S = 10
CATEGORIES = ("ok", "traceback", "hang", "nonsense accepted", "invalid JSON", "multi-line error", "bad exit code",
              "control failed", "code executed", "setup error")
FAILURES = CATEGORIES[1:]
OK_PREFIXES = ("planner: warning:", "planner: note:")


class CaseTimeout(BaseException):
    """Raised by SIGALRM when a case runs past TIMEOUT_S (a BaseException, so `except Exception` in
    planner cannot swallow it)."""


@dataclass(frozen=True)
class Outcome:
    case: Case
    category: str
    detail: str
    seconds: float


def _no_constant(name: str):
    raise ValueError(f"{name} is not strict JSON")


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0][:240] if text else ""


def clear_planner_caches() -> None:
    """Forget anything planner cached from the environment (the catalogs of PLANNER_CATALOG_DIR), as a
    fresh process would."""
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] not in ("planner", "costmodel") or module is None:
            continue
        for obj in list(vars(module).values()):
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", None) == name:
                obj.cache_clear()


@contextlib.contextmanager
def environment(env: dict[str, str]):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    if env:
        clear_planner_caches()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if env:
            clear_planner_caches()


@contextlib.contextmanager
def stdin_from(data: bytes):
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = saved


@contextlib.contextmanager
def cli_warnings():
    """Python warnings as a plain `planner` process shows them (to stderr, deprecations hidden)."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("always")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        yield


def invoke(argv: list[str], env: dict[str, str], stdin: bytes, timeout_s: float | None = None
           ) -> tuple[int | None, str, str, str | None, bool]:
    """(exit code, stdout, stderr, escaped exception or None, timed out) of main(argv)."""
    timeout_s = timeout_s or TIMEOUT_S
    out, err = io.StringIO(), io.StringIO()
    state = {"active": True, "fired": False}

    def on_alarm(signum, frame):
        if state["active"]:
            state["fired"] = True
            raise CaseTimeout(f"no result after {timeout_s} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    code, escaped = None, None
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout_s, 1.0)  # and again every second if swallowed
        with environment(env), stdin_from(stdin), cli_warnings(), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:
                code = 0 if exc.code is None else exc.code
                if code not in (0, 2):
                    escaped = f"SystemExit({exc.code!r})"
    except CaseTimeout:
        pass
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - anything escaping main() is the finding
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
        escaped = f"{type(exc).__name__}: {_first_line(str(exc))}{where}"
    finally:
        state["active"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue(), escaped, state["fired"]


def one_error_line(stderr: str) -> bool:
    lines = stderr.splitlines()
    return (bool(lines) and lines[-1].startswith("planner: error:")
            and all(line.startswith(OK_PREFIXES) for line in lines[:-1]))


def classify(case: Case, argv: list[str], code, out: str, err: str, escaped: str | None, hung: bool) -> tuple[str, str]:
    if hung:
        return "hang", f"no result after {case.timeout_s or TIMEOUT_S} s"
    if escaped is not None:
        return "traceback", escaped
    if code not in (0, 2):
        return "bad exit code", f"exit {code!r}: {_first_line(err)}"
    if code == 0 and "--json" in argv:
        try:
            json.loads(out, parse_constant=_no_constant)
        except ValueError as exc:
            if case.valid:
                return "invalid JSON", f"{_first_line(str(exc))}; stdout begins {out[:80]!r}"
            json_problem = f" (and stdout is not strict JSON: {_first_line(str(exc))})"
        else:
            json_problem = ""
    else:
        json_problem = ""
    if case.valid:
        return ("ok", "") if code == 0 else ("control failed", _first_line(err) or f"exit {code}")
    if case.either and code == 0:
        return ("invalid JSON", json_problem.strip(" ()")) if json_problem else ("ok", "")
    if code == 0:
        shown = _first_line(err) or _first_line(out)
        return "nonsense accepted", f"exit 0{json_problem}; {'stderr' if _first_line(err) else 'stdout'}: {shown!r}"
    if not one_error_line(err):
        return "multi-line error", repr(err[:240]) if err else "no stderr at all"
    return "ok", ""


def run_case(case: Case, folder: Path) -> Outcome:
    folder.mkdir(parents=True)
    cwd = os.getcwd()
    start = time.perf_counter()
    os.chdir(folder)
    try:
        try:
            inv = case.setup(folder)
        except Exception as exc:  # noqa: BLE001
            return Outcome(case, "setup error", f"{type(exc).__name__}: {_first_line(str(exc))}", 0.0)
        code, out, err, escaped, hung = invoke(inv.argv, inv.env, inv.stdin, case.timeout_s)
        category, detail = classify(case, inv.argv, code, out, err, escaped, hung)
        if (folder / "pwned").exists():
            category, detail = "code executed", f"a 'touch pwned' in the input ran; {detail}"
        return Outcome(case, category, detail, time.perf_counter() - start)
    finally:
        os.chdir(cwd)
        shutil.rmtree(folder, ignore_errors=True)


def summary_table(outcomes: list[Outcome]) -> str:
    counts: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        counts[o.case.kind][o.category] += 1
    shown = [c for c in CATEGORIES if any(counts[k][c] for k in counts)]
    width = max(len(k) for k in counts) + 2
    head = "kind".ljust(width) + "cases " + " ".join(f"{c:>{max(len(c), 4)}}" for c in shown)
    rows = [head, "-" * len(head)]
    total: Counter = Counter()
    for kind in sorted(counts):
        total.update(counts[kind])
        rows.append(kind.ljust(width) + f"{sum(counts[kind].values()):>5} "
                    + " ".join(f"{counts[kind][c]:>{max(len(c), 4)}}" for c in shown))
    rows.append("-" * len(head))
    rows.append("total".ljust(width) + f"{sum(total.values()):>5} " + " ".join(f"{total[c]:>{max(len(c), 4)}}" for c in shown))
    return "\n".join(rows)


def failure_list(outcomes: list[Outcome]) -> str:
    bad = [o for o in outcomes if o.category != "ok"]
    return "\n".join(f"[{o.category}] {o.case.kind}: {o.case.description!r} -> {o.detail}" for o in bad)


def test_case_list_is_deterministic_and_large():
    first, second = cases(), cases()
    assert [(c.kind, c.description, c.valid) for c in first] == [(c.kind, c.description, c.valid) for c in second]
    keys = Counter((c.kind, c.description) for c in first)
    assert not [k for k, n in keys.items() if n > 1], "duplicate (kind, description)"
    malformed = [c for c in first if not c.valid]
    assert len(first) >= 500 and len(malformed) >= 500
    assert 15 <= sum(c.valid for c in first) <= 40
    assert len({c.kind for c in malformed}) >= 15


def test_harness_catches_every_kind_of_failure(tmp_path, monkeypatch):
    """The harness itself fails both ways: a stand-in main() that misbehaves in each way is caught."""
    import test_hostile_inputs as harness
    from hostile_inputs import Invocation

    def crash(argv):
        raise ValueError("boom")

    def swallow_and_spin(argv):
        while True:
            with contextlib.suppress(Exception):  # a hang that swallows what it can
                time.sleep(5)

    def two_lines(argv):
        print("planner: error: first\nsecond", file=sys.stderr)
        return 2

    def warn_then_error(argv):
        print("planner: warning: w\nplanner: note: n\nplanner: error: e", file=sys.stderr)
        return 2

    def accept(argv):
        print('{"step_time_s": NaN}')
        return 0

    def exit_code(code):
        def run(argv):
            raise SystemExit(code)
        return run

    def touch(argv):
        Path("pwned").touch()
        return 2

    monkeypatch.setattr(harness, "TIMEOUT_S", 1)
    expected = [(crash, False, "traceback"), (swallow_and_spin, False, "hang"), (two_lines, False, "multi-line error"),
                (warn_then_error, False, "ok"), (accept, False, "nonsense accepted"), (accept, True, "invalid JSON"),
                (exit_code(2), False, "multi-line error"), (exit_code(1), False, "traceback"),
                (exit_code(2), True, "control failed"), (lambda argv: 1, False, "bad exit code"), (touch, False, "code executed")]
    for i, (fake, valid, category) in enumerate(expected):
        monkeypatch.setattr(harness, "main", fake)
        case = Case("self-test", str(i), lambda f: Invocation(["estimate", "--json"]), valid)
        assert run_case(case, tmp_path / f"s{i}").category == category, (i, category)


def test_hostile_inputs(tmp_path):
    all_cases = cases()
    start = time.perf_counter()
    outcomes = [run_case(case, tmp_path / f"case{i:04d}") for i, case in enumerate(all_cases)]
    elapsed = time.perf_counter() - start
    table = summary_table(outcomes)
    failures = failure_list(outcomes)
    slowest = sorted(outcomes, key=lambda o: -o.seconds)[:8]
    report = (f"{len(outcomes)} cases in {elapsed:.1f} s\n{table}\n\nslowest: "
              + "; ".join(f"{o.case.kind}: {o.case.description!r} {o.seconds:.1f} s" for o in slowest)
              + (f"\n\nfailures:\n{failures}" if failures else ""))
    print("\n" + report)
    by = Counter(o.category for o in outcomes)
    assert len(outcomes) >= 500, report
    assert all(by[c] == 0 for c in FAILURES), report
    assert all(o.category == "ok" for o in outcomes if o.case.valid), report
