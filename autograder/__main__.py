"""Command line: ``python -m autograder COMMAND ...``; ``--help`` lists the commands.

Each command lives in its own module, which provides ``register(subparsers)`` (adding its
parser, with ``func`` set to a callable taking the parsed arguments and returning an exit
status).
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = ("release", "grade", "merge", "canvas", "student_repo", "backup")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Context Window Lab course tooling around nbgrader.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"autograder.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"autograder.{name}":
                continue  # a command not built yet
            raise
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
