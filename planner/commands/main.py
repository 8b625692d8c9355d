"""Command line: `planner estimate|suggest|...`. User errors are one line on stderr, exit 2.

One module per command in this folder, each a thin layer over functions a Python user can call
(named in its docstring); `main` wires them into one parser.
"""
from __future__ import annotations

import sys

from planner.errors import PlannerError


def command_registrars() -> list:
    """One `register(subparsers)` per command, in the order `--help` lists them."""
    from planner.commands import calibrate, catalog, compare, emit, estimate, size, suggest, validate

    return [estimate.register, suggest.register, size.register, compare.register, emit.register, calibrate.register,
            validate.register, catalog.register]


def build_parser():
    from planner import __version__
    from planner.commands.common import EPILOG
    from planner.inputs.argtypes import OneLineParser

    parser = OneLineParser(
        prog="planner", description="Plan and score parallel layouts for distributed LLM training.", epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"planner {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=OneLineParser)
    for register in command_registrars():
        register(sub)
    return parser


def flush_notes(say: bool = True) -> None:
    """planner.inputs.loading.flush_notes when a command loaded a model (so `--help` imports nothing heavy)."""
    loading = sys.modules.get("planner.inputs.loading")
    if loading is not None:
        loading.flush_notes(say)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code = args.func(args)
        flush_notes()  # what a Hugging Face import left out, after the output it qualifies
        return code
    except PlannerError as err:
        flush_notes(say=False)  # one line on a failure: the error
        one_line = " ".join(str(err).split("\n"))  # a value the user typed may hold a newline
        print(f"planner: error: {one_line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("planner: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
