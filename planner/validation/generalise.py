"""How well the fitted constants generalise: fit on one part of the published runs, judge on the rest."""
from __future__ import annotations

from planner.errors import PlannerError
from planner.validation import fit
from planner.validation import runs as validation


def generalisation(runs: list[validation.Run], fit_on: str) -> dict:
    """Fit the shared constants on rows of one GPU generation ('all' = every row) and report the
    step-time MAPE on those rows and on the held-out rest."""
    gen = {r.id: validation.generation_of(r) for r in runs}
    train = [r for r in runs if fit_on == "all" or gen[r.id] == fit_on]
    held = [r for r in runs if fit_on != "all" and gen[r.id] != fit_on and not r.exclude]
    if not train:
        raise PlannerError(f"--fit-on {fit_on}: no validation rows of that generation")
    eff, train_mape = fit.fit(train)
    eff, train_memory_mape = fit.fit_memory(train, eff)
    return {"fit_on": fit_on, "fitted": fit.fitted_values(eff), "train_rows": len(train), "train_mape": train_mape,
            "train_memory_mape": train_memory_mape,
            "heldout_rows": len(held), "heldout_mape": fit.step_mape(held, eff) if held else None,
            "heldout_memory_mape": fit.memory_mape(held, eff) if held else None}
