"""The command line's `export` and `import`: a run as JSON lines on stdout, and an export read
from stdin into a store. An export the store could not read back is refused before anything is
written, and stdin that is a terminal, missing or not UTF-8 is refused with what to give.

An export carries a digest chain over its events (`synaptum_lite.stores.transfer`), checked on
import: it finds damage and edits made without recomputing it, not edits by someone who did.
`--key-file PATH` (on both commands) signs the chain's head with the key in that file
(HMAC-SHA256) and makes the import refuse an export not signed with it. The key is the file's
bytes without their trailing line end; keep the file private, as a password.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from .. import CorruptJournal, NotAJournal
from ..stores.transfer import RefusedExport, export_run, import_runs
from .output import say, write
from .runview import Failure, Store, read_run
from .traces import command_export_otel


async def command_export(args: argparse.Namespace, store: Store, width: int) -> None:
    if args.otel is not None:
        await command_export_otel(args, store)
        return
    key = _key(args.key_file)
    await read_run(store, args.run, check_held=False)
    for line in await export_run(store.checkpointer, args.run, key=key):
        write(line + "\n")


async def command_import(args: argparse.Namespace, store: Store, width: int) -> None:
    """Import what stdin holds. A refused export leaves the store as it was: no file or
    schema is created for it, and no run is started with a header the store cannot read."""
    key = _key(args.key_file)
    text, signed = _export_on_stdin(), False
    with contextlib.suppress(ValueError, AttributeError):  # else `import_runs` says what is wrong
        signed = "signature" in json.loads(text.split("\n", 1)[0])
    try:
        _check_headers(text)
        written = await import_runs(store.checkpointer, text, key=key)
    except NotAJournal as exc:
        message = f"the export is not a synaptum_lite journal ({exc.detail}); nothing was imported"
        raise Failure(1, f"{message}: give {_AN_EXPORT}") from None
    except CorruptJournal as exc:
        damage = str(exc).partition("; ")[0]
        raise Failure(1, f"the export is damaged ({damage}); nothing was imported") from None
    except RefusedExport as exc:
        raise Failure(1, str(exc)) from None
    for run_id, events, new in written:  # the run, then each sub-run it carried
        say(f"imported run {run_id} into {store.label}: {events} events, {new} new")
    if signed and key is None:
        say("its signature was not checked: give the key with --key-file to check it")


def _key(path: str | None) -> bytes | None:
    """The key in `--key-file`: the file's bytes without their trailing line end."""
    if path is None:
        return None
    try:
        key = Path(path).read_bytes().rstrip(b"\r\n")
    except FileNotFoundError:
        message = f"--key-file {path} does not exist; name the file that holds the key"
        raise Failure(3, message) from None
    except OSError as exc:
        raise Failure(1, f"--key-file {path} cannot be read ({exc.strerror or exc})") from None
    if not key:
        raise Failure(2, f"--key-file {path} is empty; put the key in it (e.g. 32 random bytes)")
    return key


def _check_headers(text: str) -> None:
    """Refuse an export whose run header names no agent: the store would write it, then refuse
    to read it back (`decode_header`), and the run would stay there, unreadable."""
    for number, line in enumerate(text.splitlines(), 1):
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict) and row.get("synaptum_lite") == "run":
                header = row.get("header")
                if not isinstance(header, dict) or "agent" not in header:
                    raise NotAJournal("the export", f"the run header on line {number} has no agent")


_AN_EXPORT = "a run as synaptum-lite export writes it"
_USE = "give it as synaptum-lite import STORE < run.jsonl"


def _export_on_stdin() -> str:
    """What stdin holds, refused (exit 2) when there is nothing to read: a terminal (it would
    wait for typing) or no stdin at all; and (exit 1) when it is not UTF-8 text."""
    if sys.stdin is None or sys.stdin.closed:
        raise Failure(2, f"import reads {_AN_EXPORT} from stdin, and there is none: {_USE}")
    if sys.stdin.isatty():
        raise Failure(2, f"import reads {_AN_EXPORT} from stdin, not a terminal: {_USE}")
    try:  # an editor on Windows may save it with a byte order mark first: not part of it
        return sys.stdin.read().removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        where = f"byte 0x{exc.object[exc.start]:02x} at {exc.start}"
        raise Failure(1, f"stdin is not UTF-8 text ({where}), so not {_AN_EXPORT}") from None
