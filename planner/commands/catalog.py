"""`planner catalog gpus|clusters|models`: what the shipped catalogs hold, with sources and prices;
`--json` prints {"schema_version", "kind", "rows": [one object per entry]}.

Over planner.inputs.catalogs (gpu_rows, cluster_rows) and planner.inputs.loading.model_rows."""
from __future__ import annotations

import argparse

from planner.commands.common import print_json
from planner.errors import PlannerError

KINDS = ("clusters", "gpus", "models")

def cmd_catalog(args: argparse.Namespace) -> int:
    from planner.inputs import catalogs, loading

    rows = {"gpus": catalogs.gpu_rows, "clusters": catalogs.cluster_rows, "models": loading.model_rows}[args.kind]()
    if args.kind == "gpus":
        rows = [{**row, "published_runs_in": published_precisions(row["name"])} for row in rows]
    if args.json:
        print_json({"kind": args.kind, "rows": rows})
        return 0
    if not rows:
        raise PlannerError(f"the catalog holds no {args.kind} ({catalogs.catalog_dir()})")
    from rich.table import Table

    from planner.render.estimate import make_console

    table = Table(title=f"catalogs: {args.kind} ({catalogs.catalog_dir()})", title_justify="left")
    for key in rows[0]:
        names = key in ("name", "gpu")  # what a user copies into another command: never cut or wrapped
        table.add_column(key, justify="left" if names or key in ("generation", "mlp", "price_kind", "price_date")
                         else "right", no_wrap=names, min_width=max(len(str(r[key])) for r in rows) if names else None)
    for row in rows:
        table.add_row(*("-" if v is None or v == [] else ", ".join(v) if isinstance(v, list) else str(v)
                        for v in row.values()))
    make_console().print(table)
    return 0


def published_precisions(gpu: str) -> list[str]:
    """The precisions in which a scored published run on `gpu` is in validation/ (the MFU envelope's keys,
    planner/analysis/envelope.py); empty where the cost model was never judged on the GPU."""
    from planner.analysis import envelope

    return sorted({precision for name, precision, _ in envelope.shipped() if name == gpu})


def register(sub) -> None:
    p = sub.add_parser("catalog", help="list the shipped GPUs, clusters (with dated prices) or models",
                       description="List catalog entries; sources are in the YAML files under catalogs/.")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_catalog)
