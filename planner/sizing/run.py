"""`planner size` as a function: which GPU type and how many, for a token budget, deadline and budget.

`size(request)` loads the priced offerings, scans them (sizing/scan.py) and picks the cheapest option
meeting the deadline and the fastest within the budget; `size_dict` is the JSON object the command prints.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from pydantic import RootModel, ValidationError

from planner.analysis import accuracy, bymodel, coverage, envelope, hostwait, longcontext, whatif
from planner.analysis import score as report
from planner.errors import PlannerError
from planner.inputs import catalogs, loading, reading
from planner.inputs import limits as L
from planner.inputs.fields import Name, quantity
from planner.inputs.specs import ClusterSpec, power_cap_refusal
from planner.sizing import scan as sizing


# SizeRequest's fields and the ranges `planner size` accepts for them: (field, lowest, highest, whole number).
REQUEST_RANGES = (("tokens", L.MIN_TOKENS, L.MAX_TOKENS, False), ("gbs", 1, L.MAX_BATCH, True),
                  ("seq_length", 1, L.MAX_SEQ_LENGTH, True), ("deadline_days", L.MIN_DAYS, L.MAX_DAYS, False),
                  ("budget_usd", L.MIN_USD, L.MAX_USD, False), ("max_gpus", 1, L.MAX_GPUS, True),
                  ("failures_per_1000_gpu_days", 0.0, L.MAX_FAILURES_PER_1000_GPU_DAYS, False),
                  ("restart_minutes", 0.0, L.MAX_RESTART_MINUTES, False),
                  ("checkpoint_gbytes_per_s_per_node", L.MIN_CHECKPOINT_GBYTES_PER_S, L.MAX_CHECKPOINT_GBYTES_PER_S,
                   False), ("workers", 1, L.MAX_SCAN_WORKERS, True))


@dataclass(frozen=True)
class SizeRequest:
    """What `planner size` is asked (the command's flags)."""

    model: str
    tokens: Optional[float] = None
    gbs: Optional[int] = None
    seq_length: Optional[int] = None
    deadline_days: Optional[float] = None
    budget_usd: Optional[float] = None
    gpu_types: Optional[str] = None
    max_gpus: int = 16384
    catalog: Optional[str] = None
    prices: Optional[str] = None
    include_spot: bool = False
    fine: bool = False
    failures_per_1000_gpu_days: float = sizing.runtime.LLAMA3_INTERRUPTIONS_PER_1000_GPU_DAYS
    restart_minutes: float = 10.0
    checkpoint_gbytes_per_s_per_node: float = 1.0
    workers: int = 2

    def __post_init__(self) -> None:
        """The ranges the CLI's flags accept (commands/size.py), for a caller from Python: one PlannerError
        line for a value outside them (None: the model's own, or no limit)."""
        for name, low, high, whole in REQUEST_RANGES:
            value = getattr(self, name)
            if value is None:
                continue
            kind = int if whole else (int, float)
            if (isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value)
                    or not low <= value <= high):
                raise PlannerError(f"SizeRequest.{name}: expected a {'whole ' if whole else ''}number in "
                                   f"[{low:g}, {high:g}] (got {value!r})")
        for name in ("include_spot", "fine"):
            if not isinstance(getattr(self, name), bool):
                raise PlannerError(f"SizeRequest.{name}: expected true or false (got {getattr(self, name)!r})")


def load_offerings(args: SizeRequest, extra_prices: dict[str, float] | None = None
                   ) -> tuple[list[sizing.Offering], list[str]]:
    table = catalogs.parse_rows(ClusterSpec, Path(args.catalog)) if args.catalog else catalogs.cluster_catalog()
    prices = {**(load_prices(args.prices, table) if args.prices else {}), **(extra_prices or {})}
    gpu_types = None
    if args.gpu_types is not None:
        gpu_types = [g.strip() for g in args.gpu_types.split(",") if g.strip()]
        if not gpu_types:
            raise PlannerError("--gpu-types: expected comma-separated GPU names")
    for name in gpu_types or []:
        catalogs.resolve_gpu(name)  # unknown names: one line with close matches
    gpus = {name: catalogs.resolve_gpu(spec.gpu) for name, spec in table.items()}
    offerings, skipped = sizing.priced_offerings(table, {g.name: g for g in gpus.values()}, gpu_types, prices,
                                                 args.include_spot)
    if not offerings:
        raise PlannerError("no priced cluster offering matches (add usd_per_gpu_hour, or --prices FILE)")
    return offerings, skipped


class PriceFile(RootModel[dict[Name, quantity(L.MAX_USD_PER_GPU_HOUR, L.MIN_USD_PER_GPU_HOUR)]]):
    """--prices: cluster or GPU name -> usd_per_gpu_hour."""


def load_prices(path: str, table: dict[str, ClusterSpec]) -> dict[str, float]:
    """A YAML/JSON mapping of cluster or GPU name to usd_per_gpu_hour, overriding the catalog; every
    name must be an offering of `table` or a catalog GPU."""
    data = reading.read_data(Path(path))
    if not isinstance(data, dict) or not data:
        raise PlannerError(f"{path}: expected a mapping of cluster or GPU name to usd_per_gpu_hour")
    try:
        prices = PriceFile.model_validate(data).root
    except ValidationError as err:
        raise PlannerError(reading.describe_validation_error(err, path)) from None
    known = set(table) | set(catalogs.gpu_catalog())
    for name in prices:
        if name not in known:
            raise reading.unknown_name("cluster or GPU in --prices", name, sorted(known))
    return prices


def usd_text(usd: float) -> str:
    """Dollars as the notes write them: whole above $100, else cents (a $0.01 budget is not "$0")."""
    return f"${usd:,.0f}" if usd >= 100 else f"${usd:,.2f}"


def impossible_lines(options: list[sizing.Option], args: SizeRequest) -> list[str]:
    """What the closest options would need when the deadline or budget cannot be met. With a deadline the budget
    is judged among the options that meet it: the scan does not size the counts that cannot (often the
    cheapest), so "no option fits the budget" over what it sized would be false of those."""
    feasible = [o for o in options if o.feasible]
    in_time = [o for o in feasible if not args.deadline_days or o.days <= args.deadline_days]
    lines = []
    if args.deadline_days and not in_time:
        f = min(feasible, key=lambda o: (o.days, o.usd))
        need = math.ceil(f.num_gpus * f.days / args.deadline_days)
        head = (f"no offering meets {args.deadline_days:g} days: the fastest is {f.offering.name} with "
                f"{f.num_gpus} GPUs, {sizing.duration_text(f.days)} (${f.usd:,.0f}); ")
        largest = max(o.num_gpus for o in feasible if o.offering.name == f.offering.name)
        if need > L.MAX_GPUS:
            lines.append(head + f"meeting the deadline would need more than the {L.MAX_GPUS:,} GPUs planner sizes "
                                "even if scaling held: train fewer tokens or allow more days")
        elif need > args.max_gpus:
            lines.append(head + f"meeting the deadline needs about {need} GPUs if scaling held (raise --max-gpus) "
                                "or fewer tokens")
        else:  # counts up to `need` were within the scan: the step stopped shrinking before the deadline
            lines.append(head + f"more GPUs of it do not help (sized up to {largest}; scaling stops short of the "
                                f"{need} that linear scaling would need): train fewer tokens or allow more days")
    if args.budget_usd and in_time and not any(o.usd <= args.budget_usd for o in in_time):
        lines.append(over_budget_line(feasible, in_time, args.deadline_days, args.budget_usd))
    return lines


def over_budget_line(feasible: list[sizing.Option], in_time: list[sizing.Option], deadline_days: float | None,
                     budget_usd: float) -> str:
    """No option (meeting the deadline, where one is given) fits the budget: the cheapest of them, which is what
    the budget would have to reach; with a deadline, also the fastest option sized within the budget (late)."""
    c = min(in_time, key=lambda o: (o.usd, o.days))
    scope = f"within {deadline_days:g} days " if deadline_days else ""
    line = (f"no option {scope}fits {usd_text(budget_usd)}: the cheapest {scope}is {c.offering.name} with "
            f"{c.num_gpus} GPUs, ${c.usd:,.0f} ({sizing.duration_text(c.days)}); the budget would need "
            f"${c.usd - budget_usd:,.0f} more, or buys about {budget_usd / c.usd:.2%} of the tokens")
    late = [o for o in feasible if o.usd <= budget_usd]
    if deadline_days and late:
        f = min(late, key=lambda o: (o.days, o.usd))
        line += (f"; within the budget the fastest sized is {f.offering.name} with {f.num_gpus} GPUs, "
                 f"{sizing.duration_text(f.days)} ({sizing.duration_text(f.days - deadline_days)} late)")
    return line


def meeting_deadline(options: list[sizing.Option], deadline_days: float | None) -> list[sizing.Option]:
    """The feasible options that meet the deadline (none without one)."""
    return [o for o in options if deadline_days and o.feasible and o.days <= deadline_days]


def front(options: list[sizing.Option], deadline_days: float | None) -> list[sizing.Option]:
    """The time/dollar Pareto front; with a deadline, of the options that meet it (the scan skips the
    counts that cannot, so a front over the rest would be missing them), or when none does of the options
    sized, which are not every count (the render and the JSON's pareto_scope say so)."""
    return sizing.pareto(meeting_deadline(options, deadline_days) or options)


def pareto_scope(options: list[sizing.Option], deadline_days: float | None) -> str:
    """What `front` is over: "all" options, those "meeting_deadline", or the counts "sized" when none meets it."""
    if not deadline_days:
        return "all"
    return "meeting_deadline" if meeting_deadline(options, deadline_days) else "sized"


def other_gpus(options: list[sizing.Option], winner: sizing.Option | None, deadline_days: float | None
               ) -> list[tuple[sizing.Option, str]]:
    """Each other GPU type's best option (sizing.best_by_gpu) with the main reason it loses to the
    chosen one (the cheapest, else the fastest); none without a choice."""
    if winner is None:
        return []
    best = sizing.best_by_gpu(options, deadline_days)
    return [(o, sizing.why_loses(o, winner, deadline_days)) for gpu, o in best.items()
            if gpu != winner.offering.gpu.name]


def envelope_notes(chosen: dict[str, sizing.Option | None], seq_length: int) -> list[str]:
    """A note for each chosen option whose plan's MFU is above every published run of the model's kind on
    its GPU in its precision (planner/analysis/envelope.py), one for each whose plan uses settings no published run
    on its GPU generation used (planner/analysis/coverage.py): its days and dollars rest on a regime
    never measured; one for each whose MoE host wait dominates its step (planner/analysis/hostwait.py); and
    one where the sequences are longer than any fitted run on its generation (planner/analysis/longcontext.py);
    and for each, how far the model's step time was off out of sample on the published runs on its GPU in its
    precision of the model's kind, where there were any (planner/analysis/accuracy.py)."""
    out, seen = [], set()
    for label, o in chosen.items():
        if o is None or (o.offering.name, o.num_gpus) in seen:
            continue
        seen.add((o.offering.name, o.num_gpus))
        judged = envelope.judge(o.offering.gpu.name, o.best.plan.precision, o.best.est.mfu_causal, o.best.model)
        unjudged = coverage.unvalidated(o.offering.gpu.generation, o.best.plan, o.best.model.moe is not None)
        lines = coverage.cautions(judged, unjudged, "its plan",
                                  "its days and dollars are optimistic",
                                  hostwait.judge(o.best.est.step_time_seconds, o.best.est.time_breakdown_seconds),
                                  longcontext.judge(o.offering.gpu.generation, seq_length,
                                                    o.best.model.moe is not None))
        off = accuracy.line(accuracy.judge(o.offering.gpu.name, o.best.plan.precision, o.best.model,
                                            o.best.plan.fp8_recipe, o.offering.gpu.generation))
        out += [f"{label} ({o.offering.name} x {o.num_gpus}): {line}" for line in lines + ([off] if off else [])]
    return out


def no_fit_message(model, options: list[sizing.Option], max_gpus: int, wi: whatif.WhatIf | None = None) -> str:
    """Why no option fits: the search's own reason at the smallest count sized (whole nodes), which
    says whether more GPUs would help (memory) or the job cannot be split over a node at all (heads,
    layers, global batch)."""
    head = f"no offering fits {model.name} within --max-gpus {max_gpus}"
    if not options:
        return head + " (try more GPUs)"
    endless = [o for o in options if o.best is not None]
    if endless:  # plans fit, but the run never finishes between failures (runtime.run_wall_clock)
        o = min(endless, key=lambda o: (o.num_gpus, o.offering.name))
        return (f"no option finishes training {model.name}: plans fit (from {o.num_gpus} x {o.offering.gpu.name}), "
                "but with these failure and restart rates the run never finishes (more GPUs fail more often): "
                "lower --failures-per-1000-gpu-days or --restart-minutes")
    first = min(options, key=lambda o: (o.num_gpus, o.offering.name))
    why = sizing.why_no_plan(model, *sizing.cluster_for(first.offering, first.num_gpus, wi))
    if why is None:
        return head + " (try more GPUs)"
    return f"{head}; at {first.num_gpus} x {first.offering.gpu.name} ({first.offering.name}): {why}"


def size(args: SizeRequest, wi: whatif.WhatIf | None = None, progress=None) -> dict:
    """The sizing result (see size_dict); `progress(gpu, count)` is called after each plan search."""
    model = loading.load_model_spec(args.model, args.seq_length, args.gbs, need_seq_length=True)
    if wi is not None:
        whatif.check_applies(wi, model.moe is not None)
    if not model.global_batch_size:
        raise PlannerError(f"model '{model.name}' has no global_batch_size; pass --gbs SEQUENCES")
    if not args.tokens:
        if not model.training_tokens:
            raise PlannerError(f"model '{model.name}' has no training_tokens; pass --tokens T")
        args = replace(args, tokens=model.training_tokens)
    step_tokens = model.global_batch_size * model.seq_length
    if args.tokens < step_tokens:
        raise PlannerError(f"{args.tokens:g} tokens are fewer than one step's {step_tokens:,} "
                           f"({model.global_batch_size} sequences of {model.seq_length:,} tokens): nothing to size; "
                           "pass --tokens T of at least that")
    model = model.model_copy(update={"training_tokens": args.tokens})  # each option's estimate totals these tokens
    offerings, skipped = load_offerings(args, wi.prices if wi else None)
    if wi is not None:  # a price for a GPU type no offering sized here has would change nothing
        whatif.check_applies(wi, model.moe is not None, {o.gpu.name for o in offerings}, "the sizing")
    offerings, capped = power_capped(offerings, wi)
    assumptions = sizing.RunAssumptions(args.failures_per_1000_gpu_days / 1000 / 24, args.restart_minutes * 60,
                                        args.checkpoint_gbytes_per_s_per_node * 1e9)
    start = time.perf_counter()
    scan = sizing.scan(model, offerings, args.max_gpus, args.tokens, sizing.search_best_plan, assumptions,
                       fine=args.fine, deadline_days=args.deadline_days, workers=args.workers, wi=wi,
                       progress=progress)
    if not any(o.feasible for o in scan.options):
        raise PlannerError(no_fit_message(model, scan.options, args.max_gpus, wi))
    cheapest = sizing.choose(scan.options, "usd", args.deadline_days, args.budget_usd)
    fastest = sizing.choose(scan.options, "days", args.deadline_days, args.budget_usd)
    own = bymodel.line(bymodel.judge(model.to_model()))  # the runs of this model, the same for every option
    return {"model": model.name, "tokens": args.tokens, "global_batch_size": model.global_batch_size,
            "seq_length": model.seq_length, "deadline_days": args.deadline_days, "budget_usd": args.budget_usd,
            "assumptions": {"failures_per_1000_gpu_days": args.failures_per_1000_gpu_days,
                            "restart_minutes": args.restart_minutes,
                            "checkpoint_gbytes_per_s_per_node": args.checkpoint_gbytes_per_s_per_node},
            "searched": scan.searched, "seconds": time.perf_counter() - start,
            "skipped_unpriced": skipped,
            "notes": capped + scan.notes + impossible_lines(scan.options, args) + endless_line(scan.options)
            + beyond_any_deadline(scan.options)
            + envelope_notes({"cheapest": cheapest, "fastest": fastest}, model.seq_length)
            + ([f"every option: {own}"] if own else []),
            "options": scan.options, "pareto": front(scan.options, args.deadline_days),
            "pareto_scope": pareto_scope(scan.options, args.deadline_days), "cheapest": cheapest,
            "fastest": fastest, "other_gpus": other_gpus(scan.options, cheapest or fastest, args.deadline_days),
            "what_if": wi.label() if wi else None}


def power_capped(offerings: list[sizing.Offering], wi: whatif.WhatIf | None) -> tuple[list[sizing.Offering], list[str]]:
    """The offerings whose GPU takes the --what-if power cap (a rated power to cap, and the cap at least
    L.MIN_POWER_FRACTION of it: specs.power_cap_refusal, which whatif.apply_cluster raises), and a note naming
    the GPUs left out; when none takes it, one line. Before, one GPU type below its floor refused the whole run."""
    if wi is None or wi.power_watts is None:
        return offerings, []
    keep = [o for o in offerings if power_cap_refusal(o.gpu, wi.power_watts) is None]
    out = sorted({o.gpu.name for o in offerings} - {o.gpu.name for o in keep})
    if not keep:
        raise PlannerError(f"--what-if power={wi.power_watts:g}: no GPU type here takes it (each needs a tdp_watts and "
                           f"a cap of at least {L.MIN_POWER_FRACTION:g} of it: {L.MIN_POWER_FRACTION_SOURCE})")
    if not out:
        return keep, []
    return keep, [f"--what-if power={wi.power_watts:g} leaves out {', '.join(out)}: below {L.MIN_POWER_FRACTION:g} of "
                  "its rated power, or no rating to cap"]


def endless_line(options: list[sizing.Option]) -> list[str]:
    """A note naming the counts whose plan fits but whose run never ends (interruptions, each costing a
    restart and the work since the last checkpoint, come faster than it recovers): not "does not fit"."""
    endless = [o for o in options if o.best is not None and not o.feasible]
    if not endless:
        return []
    shown = ", ".join(f"{o.offering.name} x {o.num_gpus}" for o in endless[:4]) + (" ..." if len(endless) > 4 else "")
    return [f"{len(endless)} option(s) fit but never finish at these interruption and restart rates: {shown}"]


def beyond_any_deadline(options: list[sizing.Option]) -> list[str]:
    """A note where even the fastest option takes longer than any deadline `planner size` accepts (L.MAX_DAYS):
    its days and dollars are arithmetic, not a run anyone would plan."""
    feasible = [o for o in options if o.feasible]
    f = min(feasible, key=lambda o: o.days, default=None)
    if f is None or f.days <= L.MAX_DAYS:
        return []
    return [f"even the fastest option ({f.offering.name} x {f.num_gpus}) takes {f.days / 365.25:,.0f} years, past the "
            f"{L.MAX_DAYS:,.0f} days a deadline may be: train fewer tokens or allow more GPUs (--max-gpus)"]


def option_dict(o: sizing.Option) -> dict:
    s = o.offering.spec
    out = {"offering": o.offering.name, "gpu": o.offering.gpu.name, "num_gpus": o.num_gpus,
           "usd_per_gpu_hour": o.offering.usd_per_gpu_hour, "price_kind": s.price_kind, "price_date": s.price_date,
           "price_source": s.price_source, "fits": o.best is not None}
    if o.best is not None:  # it fits; does the run end before interruptions and restarts eat it?
        out["finishes"] = o.feasible
    if o.feasible:
        out.update({"days": o.days, "usd": o.usd, "steps": o.steps, "step_time_s": o.best.est.step_time_seconds,
                    "checkpoint_s": o.wall.checkpoint_seconds,
                    # no interruptions: Young's interval is infinite, no checkpoint is written
                    "checkpoint_interval_s": o.wall.checkpoint_interval_seconds
                    if math.isfinite(o.wall.checkpoint_interval_seconds) else None,
                    "expected_failures": o.wall.expected_failures,
                    "overhead_fraction": o.wall.overhead_fraction(o.step_seconds_total),
                    "estimate": report.to_dict(o.best)})
    return out


def choice_label(o: sizing.Option | None) -> str:
    return "-" if o is None else f"{o.offering.name} x {o.num_gpus}: {sizing.duration_text(o.days)}, ${o.usd:,.0f}"


def stability_rows(args: SizeRequest, base: dict, grid: list[whatif.WhatIf]) -> list[dict]:
    """The sizing again under each value of --what-if-grid, each with the standing --what-if assumptions
    beside it (whatif.beside): do the choices stay the same?"""
    same = lambda a, b: a is not None and b is not None and (a.offering.name, a.num_gpus) == (b.offering.name, b.num_gpus)  # noqa: E731
    rows = []
    for wi in grid:
        r = size(args, wi)
        rows.append({"assumption": wi.label(), "cheapest": choice_label(r["cheapest"]),
                     "fastest": choice_label(r["fastest"]), "cheapest_stays": same(r["cheapest"], base["cheapest"]),
                     "fastest_stays": same(r["fastest"], base["fastest"])})
    return rows




def size_dict(r: dict, stability: list[dict] | None = None) -> dict:
    """The JSON object of `planner size`: the result of `size` with its options as plain dicts."""
    out = dict(r)
    for key in ("cheapest", "fastest"):
        out[key] = option_dict(r[key]) if r[key] else None
    out["pareto"] = [option_dict(o) for o in r["pareto"]]
    out["options"] = [option_dict(o) for o in r["options"]]
    out["other_gpus"] = [{"gpu": o.offering.gpu.name, "offering": o.offering.name, "num_gpus": o.num_gpus,
                          "days": o.days, "usd": o.usd, "why": why} for o, why in r["other_gpus"]]
    out["stability"] = stability or []
    return out
