"""What several commands share: the MODEL/CLUSTER arguments, --what-if, and printing JSON (with its schema_version)."""
from __future__ import annotations

import argparse
import json

from planner import SCHEMA_VERSION  # the --json contract's version (planner/__init__.py), re-exported
from planner.errors import PlannerError
from planner.inputs.argtypes import gpus_arg, seq_length_arg

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
                        "matmul_efficiency=0.9, price.GPU=2.10 (every offering of that GPU, reserved and spot too), "
                        "rdma=false, power=500 (watts per GPU), "
                        "imbalance=1.3 (MoE: busiest expert rank's tokens over the balanced share)")


class _Once(argparse.Action):
    """Store an option that may be given once: a repeat is an error, not the last one silently winning."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} given twice: one grid at a time ({getattr(namespace, self.dest)} "
                         f"and {values})")
        setattr(namespace, self.dest, values)


def add_what_if_grid(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--what-if-grid", action=_Once, metavar="KEY=V1,V2,...", help=help_text)


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
