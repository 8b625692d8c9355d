"""What several commands share: the MODEL/CLUSTER arguments, --what-if, and printing JSON (with its schema_version)."""
from __future__ import annotations

import argparse
import json

from planner.errors import PlannerError
from planner.inputs.argtypes import gpus_arg, seq_length_arg

# Version of the --json contract, the models of planner/commands/contract.py (which re-exports it):
# bump it with every change to them. It lives here so that printing JSON does not load the models.
SCHEMA_VERSION = "4"

EPILOG = """MODEL is a YAML file, a Hugging Face config.json, or a catalog name (planner catalog models);
CLUSTER is a YAML file or a catalog name (planner catalog clusters)."""


def add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model YAML, HF config.json, or catalog name (e.g. llama3-70b)")
    p.add_argument("cluster", metavar="CLUSTER", help="cluster YAML or catalog name (e.g. dgx-h100)")
    p.add_argument("--gpus", type=gpus_arg, help="number of GPUs (overrides the cluster's num_gpus)")
    p.add_argument("--seq-length", type=seq_length_arg, help="override the model's sequence length")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def add_what_if(p: argparse.ArgumentParser, verb: str = "re-score") -> None:
    p.add_argument("--what-if", action="append", metavar="KEY=VALUE",
                   help=f"{verb} under an assumption (repeatable): network=0.5, nvlink=0.8, hbm=0.9, "
                        "matmul_efficiency=0.9, price.GPU=2.10, rdma=false, power=500 (watts per GPU), "
                        "imbalance=1.3 (MoE: busiest expert rank's tokens over the balanced share)")


def versioned(obj: dict) -> dict:
    """`obj` with `schema_version` as its first key (the contract of planner/commands/contract.py)."""
    return {"schema_version": SCHEMA_VERSION, **obj}


def print_json(obj: dict) -> None:
    """One JSON object on stdout, `schema_version` first, that any strict parser reads: no NaN or Infinity."""
    try:
        text = json.dumps(versioned(obj), indent=2, allow_nan=False)
    except ValueError:
        raise PlannerError("the result holds a non-finite number (an input far outside any real system?)") from None
    print(text)
