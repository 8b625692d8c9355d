"""Time `planner suggest` end to end and its parts, in process, median of several repetitions.

    python benchmarks/bench_suggest.py [--reps 5] [--table1]

Cases (issue 4): GPT-3 175B on 1024 A100 (dgx-a100), the 1T model (megatron-1t) on 3072 A100,
Llama 3 405B on 16384 H100 (dgx-h100), Llama 3 70B on 64 H100 (global batch 512: the catalog
model has none; the README's example uses 512); mixture-of-experts and long-context cases (issues
15 and 16, see CASES). "end to end" is `planner suggest` as the CLI runs
it (load, search, re-score, render to a string), in this process after one warm-up run that is not
counted (so the cost model's caches are warm); "cold CLI" is what a user waits for once, the command
in a fresh `python -m planner` process (interpreter start and imports included); then the search's
parts: building the space, the cost-model tables (best first), and CP-SAT (model + solve).

--block-recompute times `suggest --block-recompute` instead (block recompute's counts searched too).

--table1 checks the Megatron-LM paper's Table 1 rows (validation/runs.yaml, megatron-t1-*): is the
published (tp, pp) among the top 5 distinct layouts, under the paper's own feature set (Megatron,
fp16, no FlashAttention, no overlap, full recompute, ZeRO 0, no SP) and under planner's defaults.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.commands.main import main  # noqa: E402

CASES = [
    ("GPT-3 175B, 1024 A100", ["gpt3-175b", "dgx-a100", "--gpus", "1024"]),
    ("1T, 3072 A100", ["megatron-1t", "dgx-a100", "--gpus", "3072"]),
    ("Llama 3 405B, 16384 H100", ["llama3-405b", "dgx-h100", "--gpus", "16384"]),
    ("Llama 3 70B, 64 H100", ["llama3-70b", "dgx-h100", "--gpus", "64", "--gbs", "512"]),
    # Mixture of experts (issue 15). Global batches: DeepSeek-V3's catalog entry has its 15,360; Qwen3 and
    # Mixtral publish none, so 2048 and 1024 sequences (NVIDIA's Megatron-Bridge Qwen3-235B recipes use 2048).
    ("DeepSeek-V3, 2048 H100", ["deepseek-v3", "dgx-h100", "--gpus", "2048"]),
    ("Qwen3-235B-A22B, 256 GB200", ["qwen3-235b-a22b", "gb200-nvl72", "--gpus", "256", "--gbs", "2048"]),
    ("Mixtral 8x22B, 128 H100", ["mixtral-8x22b", "dgx-h100", "--gpus", "128", "--gbs", "1024"]),
    # Long context (issue 16): Llama 3's 131,072-token stage (Llama 3 paper Sec 3.4.2: 16M tokens per batch
    # on 16,384 H100, cp 16), and 70B at the same length on 256 H100 with 64 sequences (8M tokens) per batch.
    ("405B at 131k, 16384 H100", ["llama3-405b", "dgx-h100", "--gpus", "16384", "--seq-length", "131072",
                                  "--gbs", "128"]),
    ("70B at 131k, 256 H100", ["llama3-70b", "dgx-h100", "--gpus", "256", "--seq-length", "131072", "--gbs", "64"]),
]


def end_to_end_seconds(argv: list[str]) -> float:
    out, err = io.StringIO(), io.StringIO()  # the output, and its notes and warnings (not the bench's)
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["suggest", *argv])
    elapsed = time.perf_counter() - start
    if rc != 0:
        raise SystemExit(f"suggest {' '.join(argv)} failed with exit code {rc}: {err.getvalue().strip()}")
    return elapsed


def cold_cli_seconds(argv: list[str]) -> float:
    """Wall-clock seconds of `python -m planner suggest ARGV` in a fresh process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "planner", "suggest", *argv, "--json"], capture_output=True,
                          cwd=Path(__file__).resolve().parent.parent, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"suggest {' '.join(argv)} failed: {done.stderr.decode().strip()}")
    return elapsed


def search_parts(argv: list[str]):
    """suggest.run alone: (result, seconds by part)."""
    from planner.commands.main import build_parser
    from planner.commands.suggest import search_spec
    from planner.search import suggest

    args = build_parser().parse_args(["suggest", *argv])
    _, spec = search_spec(args)
    return suggest.run(spec, suggest.Options(args.top, args.objective, args.max_memory_fraction))


def bench(reps: int, extra: tuple[str, ...] = ()) -> None:
    """The table over CASES, each with `extra` flags (--block-recompute: suggest's opt-in search of block counts)."""
    print(f"{'case':26s} {'plans':>7s} {'layouts':>7s} {'tabled':>6s} {'lits':>5s} "
          f"{'end-to-end':>10s} {'cold CLI':>8s} {'space':>7s} {'tables':>7s} {'CP-SAT':>7s}   (median of {reps}, seconds)")
    for name, argv in CASES:
        argv = [*argv, *extra]
        end_to_end_seconds(argv)  # warm-up: imports, catalogs
        e2e = statistics.median(end_to_end_seconds(argv) for _ in range(reps))
        cold = statistics.median(cold_cli_seconds(argv) for _ in range(reps))
        runs = [search_parts(argv) for _ in range(reps)]
        med = {k: statistics.median(r.seconds[k] for r in runs) for k in ("space", "tables", "solver")}
        r = runs[0]
        print(f"{name:26s} {r.space_size:7d} {r.layouts:7d} {r.layouts_tabled:6d} {r.literals:5d} "
              f"{e2e:10.3f} {cold:8.3f} {med['space']:7.3f} {med['tables']:7.3f} {med['solver']:7.3f}")


def why_not(run, cluster, spec, best) -> str:
    """Why the best plan beats the best plan with the published (tp, pp): the two estimates compared."""
    from dataclasses import replace

    from planner.analysis import explain
    from planner.analysis import score as report
    from planner.errors import PlannerError
    from planner.search import suggest

    pinned = replace(spec, fixed={**spec.fixed, "tp": run.plan.tp, "pp": run.plan.pp})
    try:
        published = suggest.run(pinned, suggest.Options(top_k=1)).ranked[0]
    except PlannerError as err:
        return f"published (tp, pp) has no plan here: {err}"
    a, b = (report.to_dict(report.score(run.model, cluster, r.plan)) for r in (best, published))
    return explain.why_faster(a, b)


def table1() -> None:
    from planner.inputs.loading import resolve_gpu
    from planner.search import suggest
    from planner.search.space import SearchSpec
    from planner.validation.runs import load_runs

    paper = {"frameworks": ("megatron",), "flash_attention": False, "overlap_dp_comm": False,
             "overlap_pp_comm": False, "fixed": {"zero": 0, "sp": False, "recompute": "full"}}
    for run in (r for r in load_runs() if r.id.startswith("megatron-t1-")):
        p = run.plan
        cluster = run.cluster.to_cluster(resolve_gpu(run.cluster.gpu), run.cluster.num_gpus)
        print(f"{run.id}: published tp {p.tp} pp {p.pp}")
        for label, kw in (("paper features", {**paper, "precisions": (p.precision,)}), ("planner defaults", {})):
            spec = SearchSpec(run.model.to_model(), cluster, p.global_batch_size, **kw)
            ranked = suggest.run(spec, suggest.Options(top_k=5)).ranked
            ranks = [(r.layout.tp, r.layout.pp) for r in ranked]
            top = ", ".join(f"{t}x{q}" for t, q in ranks)
            if (p.tp, p.pp) in ranks:
                print(f"  {label}: #{ranks.index((p.tp, p.pp)) + 1} (top tp x pp: {top})")
            else:
                print(f"  {label}: not in top 5 (top tp x pp: {top}); #1 vs best published tp x pp: "
                      f"{why_not(run, cluster, spec, ranked[0])}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--table1", action="store_true", help="also check Megatron-LM Table 1 rows")
    ap.add_argument("--block-recompute", action="store_true",
                    help="time suggest --block-recompute (full recompute of the first N layers of each chunk searched)")
    a = ap.parse_args()
    bench(a.reps, ("--block-recompute",) if a.block_recompute else ())
    if a.table1:
        table1()
