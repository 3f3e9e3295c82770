"""`groupscope decode`: decode raw `__consumer_offsets` records given as text.

Input, one record per line (blank lines and lines starting with `#` are skipped):

* `KEY VALUE` in hex or base64, with `-` as VALUE for a tombstone (`--format hex|base64`, or
  `auto`: a token that is valid hex is read as hex, anything else as base64);
* a JSON object with `key` and `value` (hex or base64, value null = tombstone), or a line of a
  capture file `{"partition", "offset", "timestamp", "key", "value"}` (base64, as written by
  `groupscope capture`) (`--format jsonl`; `auto` treats lines starting with `{` this way).

Prints one canonical JSON record per decoded line on stdout. A line that cannot be read or
decoded is reported on stderr with its line number and skipped; the exit code is then 1.
"""
from __future__ import annotations

import argparse
import base64
import binascii
import json
import re
import sys
from typing import IO, Iterator

from coordinator.records import DecodeError, decode
from streaming.sources import capture_file
from streaming.errors import UserError

FORMATS = ("auto", "hex", "base64", "jsonl")
TOMBSTONE = "-"
_CAPTURE_FIELDS = frozenset({"partition", "offset", "timestamp"})
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")


class BadLine(Exception):
    """A line that is not a readable record; the message says why."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "decode", help="decode raw __consumer_offsets records (hex/base64 pairs or JSON lines)",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", default="-", help="input file, or - for stdin (default)")
    parser.add_argument("--format", choices=FORMATS, default="auto", help="input format (default: auto)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with _open(args.file) as stream:
        bad = 0
        for number, line in enumerate(stream, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                key, value = parse_line(text, args.format)
                record = decode(key, value)
            except BadLine as exc:
                bad += 1
                print(f"line {number}: {exc}", file=sys.stderr)
                continue
            except DecodeError as exc:
                bad += 1
                print(f"line {number}: cannot decode ({exc.reason}): {exc}", file=sys.stderr)
                continue
            print(json.dumps(record.to_dict(), ensure_ascii=False))
    return 1 if bad else 0


def _open(path: str) -> IO[str]:
    if path == "-":
        return _NoClose(sys.stdin)
    try:
        return open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None


class _NoClose:
    """Lets stdin be used in a `with` block without closing it."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __enter__(self) -> IO[str]:
        return self.stream

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> Iterator[str]:
        return iter(self.stream)


def parse_line(text: str, fmt: str) -> tuple[bytes, bytes | None]:
    """Returns the (key, value) bytes of one non-empty input line; raises BadLine."""
    if fmt == "jsonl" or (fmt == "auto" and text.startswith("{")):
        return _parse_json(text)
    parts = text.split()
    if len(parts) != 2:
        raise BadLine(f"expected 'KEY VALUE' (2 fields), got {len(parts)}")
    encoding = "auto" if fmt == "auto" else fmt
    key = _bytes(parts[0], encoding, "key")
    value = None if parts[1] == TOMBSTONE else _bytes(parts[1], encoding, "value")
    return key, value


def _parse_json(text: str) -> tuple[bytes, bytes | None]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"invalid JSON: {exc.msg}") from None
    if isinstance(obj, dict) and _CAPTURE_FIELDS <= obj.keys():
        # A capture-file line: always base64, read by the capture format's own parser.
        try:
            captured = capture_file.decode_line(text, "capture record")
        except ValueError as exc:
            raise BadLine(str(exc)) from None
        if captured.key is None:
            raise BadLine("capture record has a null key")
        return captured.key, captured.value
    if not isinstance(obj, dict) or "key" not in obj:
        raise BadLine("JSON line must be an object with a 'key' (and 'value')")
    if not isinstance(obj["key"], str):
        raise BadLine("'key' must be a hex or base64 string")
    value = obj.get("value")
    if value is not None and not isinstance(value, str):
        raise BadLine("'value' must be a hex or base64 string, or null for a tombstone")
    return _bytes(obj["key"], "auto", "key"), None if value is None else _bytes(value, "auto", "value")


def _bytes(token: str, encoding: str, what: str) -> bytes:
    if encoding in ("auto", "hex") and _HEX.fullmatch(token):
        return bytes.fromhex(token)
    if encoding == "hex":
        raise BadLine(f"{what} is not valid hex")
    try:
        return base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token
                                else None, validate=True)
    except (binascii.Error, ValueError):
        raise BadLine(f"{what} is neither hex nor base64" if encoding == "auto"
                      else f"{what} is not valid base64") from None
