"""Human-readable output with rich: breakdown tables for one plan."""
from __future__ import annotations

import math
import os
import sys

from rich.console import Console
from rich.table import Table

from planner.analysis.diagnose import COMM_PARTS
from planner.inputs.plans import recompute_label

GIB = 2**30
TIME_LABELS = {
    "compute": "compute (fwd+bwd)",
    "recompute": "activation recompute",
    "tp_comm": "TP communication",
    "cp_comm": "CP K/V exchange (exposed)",
    "ep_comm": "EP dispatch/combine",
    "moe_sync": "MoE host syncs",
    "pp_comm": "PP point-to-point",
    "offload": "offload to host (exposed)",
    "pp_bubble": "pipeline bubble",
    "dp_comm_exposed": "DP/ZeRO sync (exposed)",
    "optimizer": "optimizer step",
    "overhead": "fixed overhead",
}


def make_console() -> Console:
    """A console; when output goes to a file or pipe, COLUMNS wide if set, else 160 (not 80, so tables
    do not wrap)."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return Console()
    return Console(width=160)


def causal_apart(mfu: float, mfu_causal: float) -> bool:
    """Whether the two MFU conventions differ enough to show both (long sequences, where the full s x s square
    counts nearly twice the attention work the causal mask leaves): by more than a tenth of the full one."""
    return mfu_causal < 0.9 * mfu


def human_seconds(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1e3:.1f} ms"


def usd_decimals(usd: float) -> int:
    """Decimals dollars per step are written with: cents, or two significant digits below a cent."""
    return 2 if usd <= 0 or usd >= 0.01 else 1 - math.floor(math.log10(usd))


def step_usd(usd: float) -> str:
    """Dollars per step: cents, or two significant digits below a cent (megatron-1.7b's 59 ms step on 56
    A100s costs $0.0012, not $0.00)."""
    return f"${usd:.{usd_decimals(usd)}f}"


def usd_format(*usd: float) -> str:
    """The format of dollar cells side by side: cents, or step_usd's two significant digits of the smaller when it
    is below a cent (a 1.7B model's $0.0036 and $0.0038 steps showed as 0.00 and 0.01)."""
    return "{:.%df}" % usd_decimals(min((u for u in usd if u and u > 0), default=1.0))


# The loss implementations other than the default (Plan.cross_entropy), as plan_label says them.
LOSS_WORDS = {"vocab_parallel": "eager vocab-parallel loss", "fused": "fused 16-bit loss", "eager": "eager fp32 loss"}


def moe_words(plan: dict) -> list[str]:
    """How an MoE plan moves its tokens, which the launch files must repeat: the dispatcher and the wire
    format of what it sends to the experts, the A2A overlap and the MoE layers' CUDA graphs. Without expert
    ranks the default all-to-all exchanges nothing and goes unnamed; what a plan sets beyond it is named, as the
    cost model prices it (DeepEP's fixed buffers decide the host wait, the overlap the warm-up's memory)."""
    dtype = plan.get("ep_dispatch_dtype", "bf16")
    if plan.get("ep_dispatch") == "deepep":  # the flex path: DeepEP/HybridEP, NCCL EP for a low-precision wire
        words = ["DeepEP/HybridEP dispatch" if dtype == "bf16" else f"{dtype.upper()} flex dispatch"]
    elif plan.get("ep", 1) * plan.get("etp", 1) > 1:
        words = ["all-to-all dispatch" + ("" if dtype == "bf16" else f" in {dtype.upper()}")]
    else:
        words = []
    if plan.get("ep_overlap"):
        words.append("EP overlap")
    if plan.get("moe_cuda_graphs"):
        words.append("MoE CUDA graphs")
    return words


def plan_label(plan: dict) -> str:
    parts = [f"tp {plan['tp']}"]
    if plan.get("cp", 1) > 1:
        parts.append(f"cp {plan['cp']} ({plan.get('cp_comm', 'p2p')})")
    parts += [f"pp {plan['pp']}", f"dp {plan['dp']}"]
    if plan.get("ep", 1) > 1 or plan.get("etp", 1) > 1:
        parts.append(f"ep {plan.get('ep', 1)}" + (f", etp {plan['etp']}" if plan.get("etp", 1) > 1 else ""))
    if plan["vpp"] > 1:
        parts.append(f"vpp {plan['vpp']}")
    if plan.get("rank_order", "tp-cp-dp-pp") != "tp-cp-dp-pp":
        parts.append(f"ranks {plan['rank_order']}")
    parts += [f"ZeRO {plan['zero_stage']}", f"mbs {plan['micro_batch_size']}", f"gas {plan['grad_accum_steps']}",
              f"recompute {recompute_label(plan)}"]
    if plan["sequence_parallel"]:
        parts.append("SP")
    if plan.get("tp_comm_overlap"):
        parts.append("TP overlap")
    if plan.get("offload_layers"):
        parts.append(f"{plan['offload_layers']} layers' activations offloaded")
    if plan.get("offload_modules"):
        parts.append(f"inputs of {'+'.join(plan['offload_modules'])} offloaded")
    if plan.get("offload_optimizer_states"):
        parts.append("optimizer states offloaded")
    parts += moe_words(plan)
    parts.append(plan["precision"])
    if plan.get("grad_reduce") == "allreduce" and plan["zero_stage"] >= 1:
        parts.append("gradient all-reduce")
    if plan.get("zero3_gather_unit") == "tensor" and plan["zero_stage"] == 3:
        parts.append("per-tensor gathers")
    loss = plan.get("cross_entropy", "vocab_parallel_fused")
    if loss != "vocab_parallel_fused":
        parts.append(LOSS_WORDS.get(loss, loss))
    if plan.get("rope_fusion") is False and plan.get("fused_elementwise", True):
        parts.append("RoPE unfused")
    if plan.get("moe_act_prologue"):
        parts.append("expert activation with its host-waiting prologue")
    if plan.get("optimizer_states") == "bf16":
        parts.append("bf16 Adam states")
    if plan.get("lowp_param_gather"):
        parts.append(f"{plan['precision']} parameter gathers")
    if plan.get("attention_kernel") == "flash2":
        parts.append("FlashAttention-2-class attention")
    elif plan.get("attention_kernel") == "flash3":
        parts.append("FlashAttention-3 attention")
    if plan.get("full_iteration_graph"):
        parts.append("whole-iteration CUDA graph")
    if plan.get("layer_cuda_graphs"):
        parts.append("per-layer CUDA graphs")
    return ", ".join(parts)


def time_table(d: dict) -> Table:
    step = d["step_time_s"]
    table = Table(title="Where the step goes", title_justify="left")
    table.add_column("part")
    table.add_column("seconds", justify="right")
    table.add_column("% of step", justify="right")
    for key, label in TIME_LABELS.items():
        value = d["time_breakdown_s"][key]
        if value > 0 or key in ("compute",):
            table.add_row(label, f"{value:.3f}", f"{100 * value / step:.1f}")
    hidden = d["time_breakdown_s"]["dp_comm"] - d["time_breakdown_s"]["dp_comm_exposed"]
    if hidden > 0:
        table.add_row("[dim]DP/ZeRO sync hidden by overlap[/dim]", f"[dim]{hidden:.3f}[/dim]", "[dim]-[/dim]")
    table.add_row("[bold]step[/bold]", f"[bold]{step:.3f}[/bold]", "100.0")
    return table


def memory_table(d: dict) -> Table:
    cap = d["memory_capacity_bytes"]
    table = Table(title="Memory on the fullest GPU", title_justify="left")
    table.add_column("part")
    table.add_column("GiB", justify="right")
    table.add_column("% of GPU", justify="right")
    for key, value in d["memory_breakdown_bytes"].items():
        if value > 0:
            table.add_row(key.replace("_", " "), f"{value / GIB:.2f}", f"{100 * value / cap:.1f}")
    total = d["memory_per_gpu_bytes"]
    verdict = "[green]fits[/green]" if d["fits"] else "[red]does NOT fit[/red]"
    table.add_row(f"[bold]total[/bold] ({verdict})", f"[bold]{total / GIB:.2f}[/bold]", f"{100 * total / cap:.1f}")
    return table


def summary_lines(d: dict) -> list[str]:
    lines = [
        f"[bold]{d['model']}[/bold] on {d['num_gpus']} x {d['gpu']} ({d['cluster']}), sequences of "
        f"{d['seq_length']:,} tokens",
        parameters_line(d),
        f"plan: {plan_label(d['plan'])}",
        f"step {human_seconds(d['step_time_s'])}, {d['tokens_per_s']:,.0f} tokens/s, "
        f"{d['model_tflops_per_gpu']:.1f} model TFLOP/s per GPU, MFU {100 * d['mfu']:.1f}% "
        f"(attention counted as the full s x s square; {100 * d['mfu_causal']:.1f}% counting its causal half)",
        f"memory {d['memory_per_gpu_bytes'] / GIB:.1f} of {d['memory_capacity_bytes'] / GIB:.0f} GiB per GPU",
    ]
    if d["usd_per_gpu_hour"]:
        lines.append(f"{step_usd(d['usd_per_step'])} per step at ${d['usd_per_gpu_hour']:.2f}/GPU-hour")
    t = d.get("training")
    if t:
        money = f", ${t['usd_to_train']:,.0f}" if d["usd_per_gpu_hour"] else ""
        lines.append(f"{t['training_tokens']:.3g} tokens: {t['steps']:,} steps, "
                     f"{human_seconds(t['time_to_train_s'])}{money}")
    lines += [f"[yellow]warning:[/yellow] {w}" for w in d["warnings"]]
    return lines


def parameters_line(d: dict) -> str:
    """Total parameters, and for a mixture of experts those one token uses."""
    line = f"{d['parameters'] / 1e9:,.2f}B parameters"
    if d["active_parameters"] < d["parameters"]:
        line += f", {d['active_parameters'] / 1e9:,.2f}B active per token (input embedding included)"
    return line


def print_estimate(d: dict, console: Console | None = None) -> None:
    console = console or make_console()
    for line in summary_lines(d):
        console.print(line)
    console.print(time_table(d))
    console.print(memory_table(d))


# Short names of the exposed communication parts (planner/analysis/diagnose.py COMM_PARTS); a part
# without one shows its time label.
COMM_NAMES = {"tp_comm": "TP", "cp_comm": "CP", "ep_comm": "EP", "pp_comm": "PP", "dp_comm_exposed": "DP/ZeRO"}


def diagnosis_lines(diag: dict) -> list[str]:
    share, limit = diag["exposed_comm_share"], diag["threshold"]
    parts = sorted(((k, v) for k, v in diag["shares"].items() if k in COMM_PARTS and v >= 0.005), key=lambda kv: -kv[1])
    which = ", ".join(f"{COMM_NAMES.get(k, TIME_LABELS[k])} {100 * v:.0f}%" for k, v in parts)
    verdict = (f"[red]communication-bound[/red]: exposed communication is {100 * share:.0f}% of the step ({which}; "
               f"threshold {100 * limit:.0f}%)" if diag["comm_bound"] else
               f"exposed communication {100 * share:.0f}% of the step (under the {100 * limit:.0f}% threshold)")
    top = sorted(diag["shares"].items(), key=lambda kv: -kv[1])[:3]
    return [verdict, "largest parts: " + ", ".join(f"{TIME_LABELS[k]} {100 * v:.0f}%" for k, v in top)]


def levers_table(diag: dict) -> Table | None:
    if not diag["levers"]:
        return None
    priced = any(lv["usd_per_step"] for lv in diag["levers"])  # a cluster without a price has no $ column
    table = Table(title="Levers (each re-scored on this cluster; legal and fits)", title_justify="left")
    for col in ("lever", "step s", "per-sample speedup", "exposed comm", "GiB/GPU", "$/step", "what it costs"):
        if col != "$/step" or priced:
            table.add_column(col, justify="left" if col in ("lever", "what it costs") else "right")
    for lv in diag["levers"]:
        money = [step_usd(lv['usd_per_step']).lstrip("$")] if priced else []
        table.add_row(lv["lever"], f"{lv['step_time_s']:.3f}", f"{lv['per_sample_speedup']:.2f}x",
                      f"{100 * lv['exposed_comm_share']:.0f}%", f"{lv['memory_per_gpu_bytes'] / GIB:.1f}",
                      *money, lv["caveat"])
    return table


def print_diagnosis(diag: dict, console: Console | None = None) -> None:
    console = console or make_console()
    for line in diagnosis_lines(diag):
        console.print(line)
    table = levers_table(diag)
    if table is not None:
        console.print(table)


def print_side_by_side(a: dict, b: dict, name_a: str, name_b: str, console: Console | None = None) -> None:
    """Two estimates part by part (seconds), then totals, memory and dollars."""
    console = console or make_console()
    table = Table(title=f"{name_a} vs {name_b}", title_justify="left")
    for col in ("part", name_a, name_b, "change"):
        table.add_column(col, justify="left" if col == "part" else "right")
    for key, label in TIME_LABELS.items():
        va, vb = a["time_breakdown_s"].get(key), b["time_breakdown_s"].get(key)
        if not (va or vb):
            continue
        if va is None or vb is None:  # a file of an older contract without this part (moe_sync: in ep_comm)
            table.add_row(label, "-" if va is None else f"{va:.3f}", "-" if vb is None else f"{vb:.3f}", "")
            continue
        table.add_row(label, f"{va:.3f}", f"{vb:.3f}", f"{vb - va:+.3f}")
    rows = [("step s", a["step_time_s"], b["step_time_s"], "{:.3f}"),
            ("MFU %", 100 * a["mfu"], 100 * b["mfu"], "{:.1f}"),
            ("GiB per GPU", a["memory_per_gpu_bytes"] / GIB, b["memory_per_gpu_bytes"] / GIB, "{:.1f}"),
            ("$ per step", a["usd_per_step"], b["usd_per_step"], usd_format(a["usd_per_step"], b["usd_per_step"]))]
    priced = bool(a.get("usd_per_gpu_hour")), bool(b.get("usd_per_gpu_hour"))
    for label, va, vb, fmt in rows:
        if label == "$ per step" and not any(priced):
            continue  # no price on either side
        if label == "$ per step" and not all(priced):  # a cluster without a price is not free
            cells = (fmt.format(v) if p else "no price" for v, p in zip((va, vb), priced))
            table.add_row(f"[bold]{label}[/bold]", *cells, "")
            continue
        if label == "MFU %" and a["plan"].get("precision") != b["plan"].get("precision"):  # of other peaks
            table.add_row(f"[bold]{label}[/bold] (each of its precision's peak)", fmt.format(va), fmt.format(vb), "")
            continue
        table.add_row(f"[bold]{label}[/bold]", fmt.format(va), fmt.format(vb), ("{:+" + fmt[2:]).format(vb - va))
    fits = {True: "yes", False: "[red]no[/red]"}
    table.add_row("[bold]fits in memory[/bold]", fits[a["fits"]], fits[b["fits"]], "")
    console.print(table)
