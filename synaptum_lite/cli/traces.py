"""The command line's `export --otel DEST`: a run's trace rebuilt from its journal, sent to an
OTLP/HTTP receiver (DEST an http(s) URL) or appended to a file as OTLP/JSON lines.

The journal has no clock: the spans' times are synthetic, in the journal's order, and say so
(`synaptum.time`). Needs the `otel` extra; without it the command says how to install it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator

from .. import ConfigurationError
from ..integrations.otel_file import require_sdk
from .output import say
from .runview import Failure, Store, read_run


def check_destination(args: argparse.Namespace) -> None:
    """Refuse, as bad usage before the store is opened, an `--otel` that names no receiver
    and no file, or one given with `--key-file`."""
    if args.key_file is not None:
        raise Failure(
            2,
            "--key-file signs a JSON-lines export; a trace (--otel) is not signed: give one "
            "of the two",
        )
    destination: str = args.otel
    if not destination.strip():
        raise Failure(2, "--otel is empty; give an http(s) URL (an OTLP/HTTP receiver) or a file")
    if "://" in destination and not destination.startswith(("http://", "https://")):
        raise Failure(
            2,
            f"--otel {destination!r}: traces go over OTLP/HTTP only; give an http(s) URL, or a "
            "file to write them to",
        )
    try:
        require_sdk()
    except ConfigurationError as exc:
        raise Failure(2, str(exc)) from None


async def command_export_otel(args: argparse.Namespace, store: Store) -> None:
    """Send the trace of `args.run` to `args.otel`, and say what was sent."""
    destination: str = args.otel
    await read_run(store, args.run, check_held=False)
    try:
        from ..integrations import otel

        if destination.startswith(("http://", "https://")):
            exporter = otel.otlp_exporter(destination)
        else:
            exporter = otel.OtlpJsonFile(destination)
    except ConfigurationError as exc:
        raise Failure(2, str(exc)) from None
    # the exporter logs each retry; the one message that matters is ours, at the end
    quiet = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    with _silenced(quiet):
        spans = await otel.export_journal(store.checkpointer, args.run, exporter)
    passes = {s.attributes["synaptum.pass"] for s in spans if s.parent_id is None}
    replays = sum(1 for s in spans if s.attributes.get("synaptum.replayed") is True)
    counted = f"{len(passes)} pass" + ("es" if len(passes) != 1 else "")
    say(
        f"sent {len(spans)} spans of run {args.run} to {destination}: {counted}, "
        f"{replays} replayed steps; times are synthetic (the journal has no clock)"
    )


@contextlib.contextmanager
def _silenced(logger: logging.Logger) -> Iterator[None]:
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
