"""Random command lines against planner's invariants, in process. Run by hand after a change to the search,
the inputs or the emitters (minutes; not in CI, whose tests pin what these runs found):

    python tests/tools/fuzz_cli.py suggest --seed 1 --cases 200
    python tests/tools/fuzz_cli.py emit|size|calibrate|compare|hf|yaml --seed 1 --cases 50

Every command must exit 0 or 2; exit 2 prints warnings and then exactly one `planner: error:` line; `--json`
parses with a strict parser (no NaN or Infinity). Per command:
- suggest: each ranked plan fits, its parts sum to its step, 0 < MFU <= 1, and it names a framework that
  launches it, unless a warning says the searched frameworks cannot build the model;
- emit: each ranked plan's `frameworks` (of those searched) are exactly the emitters that accept it, and
  every launch script written passes `bash -n`;
- size, calibrate (garbled nccl-tests logs and step-time files), compare (estimate objects with keys
  dropped or set to nonsense): the exit-code and error-line rules;
- hf, yaml: a Hugging Face config.json, or a model or cluster YAML, with keys dropped or set to nonsense is
  refused in one line or estimated with positive, finite numbers.
Prints each violation with the command line, then a summary; exits 1 when any was found.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from planner.commands.main import main  # noqa: E402

HF = ROOT / "tests" / "data" / "hf_configs"
MODELS = ["llama3-8b", "llama3-70b", "gpt3-175b", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3",
          "llama4-maverick", "megatron-1.7b", "mpt-7b", "nemotron-4-15b"]
HF_MODELS = [str(HF / f) for f in ("olmoe-1b-7b.json", "gemma-3-1b.json", "gemma-2-27b.json", "qwen3-8b.json",
                                   "deepseek-v2-lite.json", "gpt-oss-20b.json", "llama4-scout-17b-16e.json")]
CLUSTERS = ["dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72", "gb300-nvl72", "dgx-b300", "aws-p4d-24xlarge",
            "gcp-a3-highgpu-8g", "amd-mi325x-platform", "pcie-h100-8x-nvlink-pairs"]
FIXES = ["tp=1", "tp=2", "tp=8", "pp=2", "pp=4", "cp=2", "ep=8", "zero=3", "zero=1", "tp_comm_overlap=false",
         "recompute=full", "etp=2", "vpp=2", "sequence_parallel=true", "attention_kernel=flash2", "ep_dispatch=deepep"]
NONSENSE = [None, True, False, 0, -1, 1.5, 1e30, "8", "x", [], {}, ""]


def call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as e:
        rc = e.code
    return rc, out.getvalue(), err.getvalue().strip()


def strict_json(text: str):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def exit_problems(rc: int, err: str, unmet: bool = False) -> list[str]:
    """The exit-code and error-line rules; [] when they hold. With `unmet` (size), exit 1 with its one line that no
    option meets the deadline or budget is allowed too (the report is printed all the same)."""
    if unmet and rc == 1:
        lines = [line for line in err.splitlines() if not line.startswith(("planner: warning:", "planner: note:"))]
        return [] if len(lines) == 1 and lines[0].startswith("planner: no option meets") else [
            f"exit 1 without its one line: {err[-300:]!r}"]
    if rc not in (0, 2):
        return [f"exit {rc}: {err[-300:]}"]
    errors = [line for line in err.splitlines() if not line.startswith("planner: warning:")]
    if rc == 2 and (len(errors) != 1 or not errors[0].startswith("planner: error:")):
        return [f"refusal is not one error line: {err[-300:]!r}"]
    return []


def suggest_argv(r: random.Random, json_out: bool = True) -> list[str]:
    model = r.choice(MODELS + HF_MODELS)
    a = ["suggest", model, r.choice(CLUSTERS), "--gpus", str(r.choice([1, 4, 8, 16, 32, 64, 72, 128, 256])),
         "--gbs", str(r.choice([8, 64, 256, 1000, 1024]))]
    if model.endswith(".json") or r.random() < 0.3:
        a += ["--seq-length", str(r.choice([1024, 2048, 4096, 8192, 32768]))]
    for flag, values, p in (("--top", ["1", "3"], 0.3), ("--objective", ["time", "cost"], 0.2),
                            ("--framework", ["megatron", "deepspeed", "torchtitan"], 0.3),
                            ("--precision", ["bf16,fp8", "fp8", "mxfp8", "nvfp4"], 0.3),
                            ("--what-if", ["network=0.5", "imbalance=1.3"], 0.15),
                            ("--max-memory-fraction", ["0.5", "0.97"], 0.1)):
        if r.random() < p:
            a += [flag, r.choice(values)]
    for _ in range(r.choice([0, 0, 1, 2])):
        a += ["--fix", r.choice(FIXES)]
    return a + (["--json"] if json_out else [])


def check_suggest(r: random.Random) -> list[str]:
    a = suggest_argv(r)
    rc, out, err = call(a)
    bad = exit_problems(rc, err)
    if rc or bad:
        return [f"{a}: {b}" for b in bad]
    d = strict_json(out)
    gap = any("cannot build" in w for w in d.get("warnings", []))
    for p in d["plans"]:
        parts = sum(v for k, v in p["time_breakdown_s"].items() if k != "dp_comm")  # dp_comm: hidden and exposed
        if not p["fits"] or abs(parts - p["step_time_s"]) > 1e-6 * max(1.0, p["step_time_s"]) \
                or not 0 < p["mfu"] <= 1 or not (p["frameworks"] or gap):
            bad.append(f"{a}: plan {p['plan']} fits {p['fits']}, parts {parts} vs {p['step_time_s']}, "
                       f"MFU {p['mfu']}, frameworks {p['frameworks']}")
    return bad


def check_emit(r: random.Random) -> list[str]:
    a = suggest_argv(r)
    rc, out, err = call(a)
    if rc:
        return [f"{a}: {b}" for b in exit_problems(rc, err)]
    searched = a[a.index("--framework") + 1] if "--framework" in a else None
    bad = []
    for p in strict_json(out)["plans"]:
        with tempfile.TemporaryDirectory() as tmp:
            plan = Path(tmp, "plan.json")
            plan.write_text(json.dumps({k: v for k, v in p.items() if k != "frameworks"}))
            extra = ["--model", a[1], "--seq-length", str(p["seq_length"])] if a[1].endswith(".json") else []
            for fw in ("megatron", "deepspeed", "torchtitan"):
                rc, _, err = call(["emit", str(plan), "--format", fw, "--out", str(Path(tmp, fw)), *extra])
                bad += [f"{a} emit {fw}: {b}" for b in exit_problems(rc, err)]
                if (rc == 0) != (fw in p["frameworks"]) and searched in (None, fw):
                    bad.append(f"{a} emit {fw}: exit {rc} but frameworks {p['frameworks']}: {err[-200:]}")
                for script in Path(tmp, fw).rglob("*.sh") if rc == 0 else ():
                    if subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode:
                        bad.append(f"{a} emit {fw}: {script.name} fails bash -n")
    return bad


def check_size(r: random.Random) -> list[str]:
    model = r.choice(["llama3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "mpt-7b", *HF_MODELS[:4]])
    a = ["size", model, "--tokens", r.choice(["1e9", "1e11", "5e13"]), "--max-gpus", str(r.choice([8, 64, 256])),
         "--gbs", str(r.choice([64, 256, 1024]))]
    a += ["--seq-length", "4096"] if model.endswith(".json") else []
    a += ["--deadline-days", r.choice(["0.5", "30"])] if r.random() < 0.5 else []
    a += ["--budget-usd", r.choice(["100", "1e6"])] if r.random() < 0.5 else []
    a += ["--gpu-types", r.choice(["h100-sxm-80gb", "a100-sxm-80gb,gb200", "l40s-48gb"])] if r.random() < 0.4 else []
    rc, out, err = call(a + ["--json"])
    bad = exit_problems(rc, err, unmet=True)
    if rc in (0, 1):
        strict_json(out)
    return [f"{a}: {b}" for b in bad]


def garble_lines(r: random.Random, text: str) -> str:
    """Lines dropped, repeated or cut, numbers replaced by nonsense."""
    lines = text.splitlines()
    for _ in range(r.choice([1, 2, 4, 8])):
        i = r.randrange(len(lines))
        op = r.random()
        if op < 0.2:
            del lines[i]
        elif op < 0.35:
            lines.insert(i, lines[i])
        elif op < 0.5:
            lines[i] = lines[i][:r.randrange(len(lines[i]) + 1)]
        elif numbers := list(re.finditer(r"-?\d+(\.\d+)?(e[+-]?\d+)?", lines[i])):
            m = r.choice(numbers)
            junk = r.choice(["nan", "inf", "-1", "0", "1e300", "abc", "0.5"])
            lines[i] = lines[i][:m.start()] + junk + lines[i][m.end():]
        if not lines:
            break
    return "\n".join(lines) + "\n"


def check_calibrate(r: random.Random) -> list[str]:
    logs = sorted((ROOT / "examples" / "nccl").glob("*.txt")) + sorted((ROOT / "tests" / "data" / "nccl").glob("*.txt"))
    with tempfile.TemporaryDirectory() as tmp:
        a = ["calibrate", r.choice(["dgx-h100", "dgx-a100"])]
        for i, log in enumerate(r.sample(logs, r.choice([1, 2]))):
            path = Path(tmp, f"{i}_{log.name}")
            path.write_text(garble_lines(r, log.read_text()) if r.random() < 0.8 else log.read_text())
            a += ["--nccl", str(path)]
        if r.random() < 0.5:
            steps = Path(tmp, "steps.csv")
            steps.write_text(garble_lines(r, (ROOT / "examples" / "step_times_llama3-70b.csv").read_text()))
            a += ["--step-times", str(steps)]
        rc, out, err = call(a + ["--json"])
        if rc == 0:
            strict_json(out)
        return [f"{a}: {b}" for b in exit_problems(rc, err)]


def spoil(r: random.Random, data: dict) -> dict:
    """`data` with a key somewhere dropped or set to nonsense (recursing into objects)."""
    data = copy.deepcopy(data)
    target = data
    while isinstance(target, dict) and target:
        key = r.choice(list(target))
        if isinstance(target[key], dict) and r.random() < 0.6:
            target = target[key]
            continue
        if r.random() < 0.3:
            del target[key]
        else:
            target[key] = r.choice(NONSENSE)
        break
    return data


def check_compare(r: random.Random) -> list[str]:
    rc, out, err = call(["estimate", r.choice(["llama3-8b", "mixtral-8x7b"]), "dgx-h100", "--gpus", "16", "--gbs",
                         "64", "--tp", "2", "--json"])
    base = strict_json(out)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(2):
            paths.append(str(Path(tmp, f"{i}.json")))
            Path(paths[-1]).write_text(json.dumps(spoil(r, base) if r.random() < 0.8 else base))
        a = ["compare", *paths, *(["--json"] if r.random() < 0.5 else [])]
        rc, out, err = call(a)
        if rc == 0 and "--json" in a:
            strict_json(out)
        return [f"{a}: {b}" for b in exit_problems(rc, err)]


def check_hf(r: random.Random) -> list[str]:
    source = r.choice(sorted(HF.glob("*.json")))
    data = json.loads(source.read_text())
    for _ in range(r.choice([1, 2, 3])):
        data = spoil(r, data)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "config.json").write_text(json.dumps(data))
        a = ["estimate", str(Path(tmp, "config.json")), r.choice(["dgx-h100", "gb200-nvl72"]), "--gpus", "16",
             "--seq-length", "4096", "--gbs", "64", "--tp", r.choice(["1", "2"]), "--zero", "1", "--json"]
        a += ["--ep", r.choice(["2", "8"])] if "expert" in json.dumps(data) and r.random() < 0.7 else []
        rc, out, err = call(a)
        bad = exit_problems(rc, err)
        if rc == 0:
            d = strict_json(out)
            if not (d["step_time_s"] > 0 and d["parameters"] > 0 and 0 < d["mfu"] <= 1
                    and math.isfinite(d["memory_per_gpu_bytes"])):
                bad.append(f"nonsense answer: step {d['step_time_s']}, parameters {d['parameters']}, MFU {d['mfu']}")
        return [f"{source.name} {a[2:]}: {b}" for b in bad]


def check_yaml(r: random.Random) -> list[str]:
    """A model or cluster YAML (examples/, catalog MoE models) with a key dropped or set to nonsense: refused
    in one line or estimated with positive, finite numbers."""
    import yaml

    models = [ROOT / "examples" / "llama3-70b.yaml", ROOT / "catalogs" / "models" / "mixtral-8x7b.yaml",
              ROOT / "catalogs" / "models" / "deepseek-v3.yaml"]
    model, cluster = yaml.safe_load(r.choice(models).read_text()), yaml.safe_load((ROOT / "examples" /
                                                                                   "h100-64.yaml").read_text())
    which = r.choice(["model", "cluster"])
    if which == "model":
        model = spoil(r, model)
    else:
        cluster = spoil(r, cluster)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp, "model.yaml"), Path(tmp, "cluster.yaml")]
        for path, data in zip(paths, (model, cluster)):
            path.write_text(yaml.safe_dump(data))
        a = ["estimate", *map(str, paths), "--tp", "8", "--pp", "2", "--json"]
        a += ["--ep", "4"] if isinstance(model, dict) and "moe" in model else []
        rc, out, err = call(a)
        bad = exit_problems(rc, err)
        if rc == 0:
            d = strict_json(out)
            if not (d["step_time_s"] > 0 and d["parameters"] > 0 and 0 < d["mfu"] <= 1):
                bad.append(f"nonsense answer: step {d['step_time_s']}, parameters {d['parameters']}, MFU {d['mfu']}")
        return [f"spoiled {which} {(model, cluster)[which == 'cluster']}: {b}" for b in bad]


CHECKS = {"suggest": check_suggest, "emit": check_emit, "size": check_size, "calibrate": check_calibrate,
          "compare": check_compare, "hf": check_hf, "yaml": check_yaml}


def run(check: str, seed: int, cases: int) -> int:
    r, found = random.Random(seed), 0
    for _ in range(cases):
        try:
            problems = CHECKS[check](r)
        except Exception as exc:  # a traceback out of main is a finding, not the fuzzer's end
            problems = [f"traceback: {type(exc).__name__}: {exc}"]
        for p in problems:
            print(p)
        found += len(problems)
    print(f"{check}: {cases} cases, seed {seed}, {found} problems")
    return 1 if found else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("check", choices=CHECKS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=100)
    args = ap.parse_args()
    raise SystemExit(run(args.check, args.seed, args.cases))
