"""Dump the command-line options of Megatron-LM's pretrain_gpt.py (names, whether they take a value,
their choices, whether the parser hides them from --help) from a Megatron-LM checkout, as JSON: the data
tests/test_emit_megatron_options.py checks every emitted flag against. Run by hand, not in CI
(Megatron-LM's training package is not on PyPI):

    MEGATRON_LM=path/to/Megatron-LM python tests/tools/dump_megatron_options.py > tests/data/emit/megatron_options.json

It needs torch, triton, einops, numpy and packaging importable. Nothing of Megatron-LM's code is kept:
only the option table its own parser builds.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import typing
import warnings


def main() -> None:
    root = os.environ["MEGATRON_LM"]
    sys.path.insert(0, root)
    if not hasattr(typing, "override"):  # Python < 3.12
        typing.override = lambda f: f
    warnings.simplefilter("ignore")
    from megatron.training.arguments import add_megatron_arguments

    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_megatron_arguments(parser)
    options = {}
    for action in parser._actions:
        for name in action.option_strings:
            takes = action.nargs != 0
            options[name] = {"value": takes, "nargs": action.nargs if isinstance(action.nargs, (str, int)) else None,
                             "choices": [str(getattr(c, "name", c)) for c in action.choices] if action.choices else None,
                             "hidden": action.help == argparse.SUPPRESS}  # deprecated aliases the parser hides
    commit = subprocess.run(["git", "-C", root, "log", "-1", "--format=%H %cs"], capture_output=True,
                            text=True).stdout.strip()
    json.dump({"source": f"NVIDIA/Megatron-LM {commit}, megatron/training/arguments.py add_megatron_arguments",
               "options": dict(sorted(options.items()))}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
