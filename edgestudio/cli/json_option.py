"""The one ``--json`` convention of every command: ``--json PATH`` writes the command's result as
JSON to PATH (atomically), ``--json -`` to standard output, the human-readable output then going
to standard error so that the JSON can be piped. A bare ``--json`` (what ``inspect`` and
``diff`` took before) still means standard output, with a deprecation note, for one release."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.paths import write_atomically

STDOUT = "-"
_BARE = "\0bare"  # what argparse stores for a bare --json
DEPRECATED_BARE = (
    "edgestudio: note: a bare --json is deprecated and will be removed in the "
    "next release; write --json - (standard output) or --json PATH"
)
# Where ``--json -`` writes: the real standard output, while the command's own printing goes
# to standard error (set by :func:`json_to_stdout`).
_json_stream: TextIO | None = None


def add_json_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--json PATH`` (``-``: standard output) writing ``what`` as JSON."""
    parser.add_argument(
        "--json",
        nargs="?",
        const=_BARE,
        metavar="PATH",
        help=f"write {what} as JSON to PATH ('-': standard output, the "
        "table then goes to standard error)",
    )


def resolve(args: argparse.Namespace) -> None:
    """Turn a bare ``--json`` into ``-`` (saying it is deprecated) before the command runs."""
    if getattr(args, "json", None) == _BARE:
        print(DEPRECATED_BARE, file=sys.stderr)
        args.json = STDOUT


@contextlib.contextmanager
def json_to_stdout(args: argparse.Namespace) -> Iterator[None]:
    """With ``--json -``, run the command with its printing on standard error."""
    global _json_stream
    if getattr(args, "json", None) != STDOUT:
        yield
        return
    _json_stream = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _json_stream = None


def write_json(target: str, data: Any, default: Callable[[Any], Any] | None = str) -> None:
    """Write ``data`` as JSON to ``target`` (a path, written atomically, or ``-``)."""
    text = json.dumps(data, indent=2, default=default)
    if target == STDOUT:
        stream = _json_stream or sys.stdout
        stream.write(text + "\n")
        stream.flush()
        return
    path = Path(target)
    try:
        write_atomically(path, text)
    except OSError as exc:  # a read-only or missing folder: said as every job says it
        why = (
            f"the folder {path.parent} is not writable"
            if isinstance(exc, PermissionError) or exc.errno == errno.EROFS
            else f"{path.parent} is not a folder"
            if isinstance(exc, NotADirectoryError)
            else f"the folder {path.parent} does not exist"
            if isinstance(exc, FileNotFoundError)
            else exc.strerror or str(exc)
        )
        raise EdgeStudioError(f"--json {target}: cannot be written: {why}.") from exc
