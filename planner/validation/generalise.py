"""How well the fitted constants generalise: fit on one part of the published runs, judge on the rest.

- `generalisation(runs, fit_on)`: fit on the rows of one GPU generation (or all rows) and predict
  the other rows (`planner validate --fit-on`).
- `leave_one_out(runs)`: for each source group, fit on every other group and predict the held-out
  group's rows; the same per GPU generation, and per mixture-of-experts model over the MoE rows
  (`planner validate --leave-one-source-out`). Every row is predicted once by constants that never
  saw its source, which is the out-of-sample error.

Each fit is the one `planner validate --fit-on all` runs (fit.fit on step time, then fit.fit_memory
on the rows that publish a peak), from the same unfitted priors; only the rows differ.
"""
from __future__ import annotations

import time

from planner.errors import PlannerError
from planner.validation import fit
from planner.validation import runs as validation


def _key(run: validation.Run, by: str) -> str | None:
    """The split a row falls in: its source group, its GPU generation, or its mixture-of-experts model (None for a
    dense row, which that split never leaves out)."""
    if by == "moe_model":
        return run.model.name if run.model.moe is not None else None
    return run.group if by == "group" else validation.generation_of(run)


SPLIT_NAMES = {"group": "leave_one_source_out", "generation": "leave_one_generation_out",
               "moe_model": "leave_one_moe_model_out"}


def held_out_report(results: list[validation.Result]) -> dict:
    """Error statistics of held-out predictions: overall, per source group, per generation and per
    precision."""
    groups = sorted({r.run.group for r in results})
    return {"overall": validation.group_errors(results),
            "by_group": {g: validation.group_errors([r for r in results if r.run.group == g]) for g in groups},
            "by_generation": validation.summarise_by_generation(results),
            "by_precision": validation.summarise_by_precision(results)}


def row_record(held: validation.Result, in_sample: validation.Result | None, held_out_by: str) -> dict:
    """One held-out row: its out-of-sample prediction and, for contrast, its in-sample error."""
    return {"id": held.run.id, "group": held.run.group, "generation": held.generation,
            "precision": held.run.plan.precision, "held_out": _key(held.run, held_out_by),
            "predicted_step_time_s": held.predicted_step_seconds,
            "measured_step_time_s": held.run.measured.step_time_s, "step_time_error": held.step_error,
            "in_sample_step_time_error": None if in_sample is None else in_sample.step_error,
            "predicted_memory_gib": held.predicted_memory_gib,
            "measured_memory_gib": held.run.measured.peak_memory_gib, "memory_error": held.memory_error}


def generations(runs: list[validation.Run]) -> list[str]:
    """The GPU generations the rows hold, oldest first."""
    found = {validation.generation_of(r) for r in runs}
    return [g for g in validation.GENERATION_ORDER if g in found] + sorted(found - set(validation.GENERATION_ORDER))


def generalisation(runs: list[validation.Run], fit_on: str, workers: int | None = None) -> dict:
    """Fit the shared constants on rows of one GPU generation ('all' = every row) and report the
    error on those rows and on the held-out rest (overall, per source, generation and precision)."""
    gen = {r.id: validation.generation_of(r) for r in runs}
    if fit_on != "all" and fit_on not in gen.values():
        raise PlannerError(f"--fit-on {fit_on}: no validation rows of that generation; the rows have "
                           f"{', '.join(generations(runs))} (or use all)")
    train = [r for r in runs if (fit_on == "all" or gen[r.id] == fit_on) and not r.exclude]  # what fit.py fits on
    if not train:
        raise PlannerError(f"--fit-on {fit_on}: every row of it is excluded from scoring")
    held = [r for r in runs if fit_on != "all" and gen[r.id] != fit_on and not r.exclude]
    (eff, objective, train_memory_mape), = fit.fit_many([train], workers)
    results = validation.evaluate(held, eff)
    return {"fit_on": fit_on, "fitted": fit.fitted_values(eff), "train_rows": len(train),
            "train_mape": fit.step_mape(train, eff), "train_objective": objective,
            "train_memory_mape": train_memory_mape,
            "heldout_rows": len(held), "heldout_mape": fit.step_mape(held, eff) if held else None,
            "heldout_memory_mape": fit.memory_mape(held, eff) if held else None,
            "held_out": held_out_report(results),
            "rows": [row_record(r, None, "generation") for r in results]}


def leave_one_out(runs: list[validation.Run], workers: int | None = None,
                  by: tuple[str, ...] = ("group", "generation", "moe_model"), bounds: fit.Bounds | None = None) -> dict:
    """Out-of-sample errors: for each source group (by 'group'), each GPU generation (by 'generation') and
    each mixture-of-experts model (by 'moe_model': its rows only; the MoE rows are one source's, so leaving
    that source out fits the MoE constants on no MoE row, where this asks how they carry to a model they
    never saw; left out where the rows hold fewer than two), fit on the other rows and predict that one's; with
    the in-sample fit (all rows) for contrast. All fits run in one pool of `workers` processes, on the grid over
    `bounds` (fit.fit_many; default the shipped FIT_BOUNDS)."""
    scored = [r for r in runs if not r.exclude]
    splits: list[tuple[str, str]] = []  # (by, held-out key)
    for kind in by:
        keys = generations(scored) if kind == "generation" else sorted({_key(r, kind) for r in scored} - {None})
        if kind == "moe_model" and len(keys) < 2:  # rows (--group) with fewer MoE models: no such split
            continue
        if len(keys) < 2:
            raise PlannerError(f"leave one {'source' if kind == 'group' else 'generation'} out needs rows of at "
                               f"least two; these have {', '.join(keys) or 'none'}")
        splits += [(kind, k) for k in keys]
    train_sets = [list(runs)] + [[r for r in runs if _key(r, kind) != k] for kind, k in splits]
    start = time.perf_counter()
    fitted = fit.fit_many(train_sets, workers, bounds=bounds)
    seconds = time.perf_counter() - start

    all_eff, all_objective, all_memory = fitted[0]
    in_sample = validation.evaluate(runs, all_eff)
    in_by_id = {r.run.id: r for r in in_sample}
    in_report = held_out_report(in_sample)  # its overall step MAPE is the fit's train_mape on all rows
    out = {"rows": len(scored), "fits": len(train_sets), "fit_seconds": seconds,
           "in_sample": {"fitted": fit.fitted_values(all_eff), "train_mape": in_report["overall"]["step_time"]["mape"],
                         "train_objective": all_objective, "train_memory_mape": all_memory, **in_report}}
    for kind in dict.fromkeys(k for k, _ in splits):
        held_results: list[validation.Result] = []
        per_split = {}
        for (k_kind, key), train, (eff, objective, memory) in zip(splits, train_sets[1:], fitted[1:]):
            if k_kind != kind:
                continue
            results = validation.evaluate([r for r in scored if _key(r, kind) == key], eff)
            held_results += results
            in_rows = [in_by_id[r.run.id] for r in results]
            per_split[key] = {"train_rows": len([r for r in train if not r.exclude]), "fitted": fit.fitted_values(eff),
                              "train_mape": fit.step_mape(train, eff), "train_objective": objective,
                              "train_memory_mape": memory,
                              **validation.group_errors(results),
                              "in_sample": validation.group_errors(in_rows)}
        order = {r.id: i for i, r in enumerate(scored)}
        held_results.sort(key=lambda r: order[r.run.id])
        out[SPLIT_NAMES[kind]] = {"held_out": per_split, **held_out_report(held_results),
                     "rows": [row_record(r, in_by_id[r.run.id], kind) for r in held_results]}
    return out
