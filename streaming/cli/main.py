"""The `groupscope` command line.

Each sub-command lives in its own module under `streaming.cli.commands` and exposes
`register(subparsers)`, which adds its parser and sets `func` (a callable taking the parsed
namespace and returning an exit code). User errors raise `UserError` and print one clear line,
never a stack trace.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from streaming.cli import commands
from streaming.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groupscope",
        description="Live monitor for Kafka consumer groups, built on __consumer_offsets.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"groupscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
