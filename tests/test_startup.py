"""Commands that do not search never import the solver (OR-Tools is the slowest import), and --json
output never imports rich; start-up time itself is a benchmark (benchmarks/bench_startup.py)."""
from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import contextlib, io, json, sys
from planner.commands.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "modules": sorted(m for m in ("ortools", "rich", "matplotlib") if m in sys.modules)}))
"""


def modules_after(argv: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_non_search_commands_do_not_import_the_solver(tmp_path):
    plan = tmp_path / "plan.json"
    est = ["estimate", "llama3-8b", "dgx-h100", "--gpus", "8", "--tp", "8", "--gbs", "64", "--json"]
    subprocess.run([sys.executable, "-m", "planner", *est], stdout=plan.open("w"), check=True)
    for argv in (est, ["catalog", "gpus", "--json"], ["compare", str(plan), str(plan), "--json"],
                 ["emit", str(plan), "--format", "megatron", "--out", str(tmp_path / "out")]):
        r = modules_after(argv)
        assert r["code"] == 0 and "ortools" not in r["modules"], (argv, r)
        if "--json" in argv:
            assert "rich" not in r["modules"], (argv, r)


def test_help_imports_nothing_heavy():
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "planner", "--help"], capture_output=True, text=True)
    heavy = {line.split("|")[2].strip() for line in r.stderr.splitlines() if line.count("|") == 2}
    assert not heavy & {"ortools", "rich", "pydantic", "yaml", "matplotlib"}, heavy & {"ortools", "rich", "pydantic"}
