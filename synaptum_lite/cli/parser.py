"""The command line's arguments: the parser (its `--help` text and the exit codes it lists),
and the checks that refuse bad usage (exit 2) before a store is opened.
"""

from __future__ import annotations

import argparse

from .output import STEERING
from .runview import STATES, Failure
from .traces import check_destination

EXIT_CODES = """exit codes:
  0  done
  1  the store failed or holds something else (not a journal, unreachable),
     or a run in it is damaged (runs lists the others)
  2  bad usage: an unknown option, a bad URL or schema, conflicting options,
     a fork onto a run id that exists or an answer at a step not the model's
  3  not found: no such file, run or step
  4  the step is not waiting for that decision, or the run cannot be migrated
     (nothing was written)
  5  a driver holds the run now (nothing was written): wait for it, or stop it
  6  stdout could not be written (a full disk; a reader that stops reading, as
     `| head` does, ends it quietly); what was written to the store stays
  130  interrupted (Ctrl-C): a decision is written whole or not at all

phases in `show`: a attempted, c completed, r resolved (a person's decision)"""


CHAIN = """an export carries a digest chain (SHA-256) over its runs and events.
import checks it and refuses an export changed, cut or extended since it was
written, naming the first event that does not match, and a run that is not
the one it names nor one of its sub-runs. Without a key the chain finds damage
and careless edits only: anyone can compute it again. With --key-file on both
commands its head is signed (HMAC-SHA256), and import refuses an export that
is unsigned or signed with another key. The key is the file's bytes (without
a final line end): keep the file as private as a password. Exports from before
the chain are refused: export the run again with this version."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="synaptum-lite",
        description="Read, resolve and migrate durable runs in a journal store.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text, epilog=EXIT_CODES)
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        sub.add_argument(
            "store",
            metavar="STORE",
            help="a SQLite file, a PostgreSQL URL or a store server's URL (its token in "
            "SYNAPTUM_STORE_TOKEN)",
        )
        sub.add_argument("--schema", help="the PostgreSQL schema (default synaptum_lite)")
        sub.add_argument("--width", type=_width, help="columns of output (default 80)")
        return sub

    runs = command("runs", "every run, with its state and usage")
    states = (*STATES, "waiting", "damaged")
    runs.add_argument(
        "--state",
        choices=states,
        metavar="STATE",
        help=f"only runs in this state: {', '.join(states)} (waiting: approval or uncertain)",
    )
    runs.add_argument("--json", action="store_true", help="one JSON object per run")
    runs.add_argument(
        "--wide",
        action="store_true",
        help="print run ids whole, however long; without it an id too long for the width is "
        "cut with … (--json prints them whole too)",
    )
    show = command("show", "a run's timeline: steps, phases, calls, decisions")
    show.add_argument("run", metavar="RUN")
    show.add_argument("--times", action="store_true", help="when people decided (if journaled)")
    resolve = command("resolve", "record a person's decision on a waiting step")
    resolve.add_argument("run", metavar="RUN")
    resolve.add_argument("step", metavar="STEP")
    decision = resolve.add_mutually_exclusive_group(required=True)
    for name, text in (
        ("retry", "the effect did not happen: let it run again"),
        ("approve", "grant an approval request"),
        ("deny", "deny an approval request"),
    ):
        decision.add_argument(
            f"--{name}", dest="decision", action="store_const", const=name, help=text
        )
    decision.add_argument("--result", metavar="TEXT", help="the effect happened; its result")
    resolve.add_argument("--reason", default="", help="why (with --approve or --deny only)")
    resolve.add_argument("--by", default="operator", help="who decides (default operator)")
    forked = command("fork", "a new run from a past step of another (the original untouched)")
    forked.add_argument("run", metavar="RUN")
    forked.add_argument(
        "step", metavar="STEP", help="where the fork begins anew: 4 or 000004-model"
    )
    forked.add_argument("new", metavar="NEW", help="the new run's id")
    forked.add_argument("--answer", metavar="TEXT", help="a person's answer at STEP (a model step)")
    forked.add_argument("--by", default="operator", help="who answers (default operator)")
    migrate = command("migrate", "move an open run to another agent from its next step on")
    migrate.add_argument("run", metavar="RUN")
    migrate.add_argument(
        "--to",
        required=True,
        metavar="MODULE:NAME",
        help="the new agent: an Agent (or a function returning one) in a module importable "
        "from here, as the worker imports it",
    )
    migrate.add_argument("--by", default="operator", help="who migrates (default operator)")
    export = command("export", "write a run as JSON lines to stdout (or its trace: --otel)")
    export.add_argument("run", metavar="RUN")
    export.add_argument(
        "--key-file",
        metavar="PATH",
        help="sign the export's digest chain with the key in this file (HMAC-SHA256)",
    )
    export.add_argument(
        "--otel",
        metavar="DEST",
        help="send the run's trace instead, rebuilt from its journal (OpenTelemetry; needs the "
        "otel extra): to an OTLP/HTTP receiver (DEST an http(s) URL, e.g. "
        "http://127.0.0.1:4318) or appended to a file as OTLP/JSON lines",
    )
    imported = command("import", "read an exported run from stdin into STORE")
    imported.add_argument(
        "--key-file",
        metavar="PATH",
        help="refuse an export not signed with the key in this file",
    )
    for sub in (export, imported):
        sub.epilog = f"{CHAIN}\n\n{EXIT_CODES}"
    return top


def _width(text: str) -> int:
    """`--width`: a whole number of columns, 40 or more (below that nothing fits)."""
    if not text.strip().isdigit() or int(text) < 40:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of columns, 40 or more")
    return int(text)


_NAMED = {
    "run": "RUN",
    "step": "STEP",
    "new": "NEW",
    "by": "--by",
    "reason": "--reason",
    "result": "--result",
    "answer": "--answer",
    "to": "--to",
}


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, as bad usage and before the store is opened, an argument that names nothing or
    is not text: bytes the terminal sent that are not UTF-8, an empty run, step or `--by`."""
    given = {"STORE": args.store, "--schema": args.schema}
    given |= {flag: getattr(args, name) for name, flag in _NAMED.items() if hasattr(args, name)}
    for flag, value in given.items():
        if value is None:
            continue
        raw = next((i for i, c in enumerate(value) if "\udc80" <= c <= "\udcff"), None)
        if raw is not None:
            byte = ord(value[raw]) - 0xDC00
            raise Failure(
                2,
                f"{flag} is not UTF-8 text (byte 0x{byte:02x} at index {raw}); give it in "
                "UTF-8, the encoding a journal keeps (is the terminal's encoding UTF-8?)",
            )
        if not value.strip() and flag in ("STORE", "RUN", "STEP", "NEW", "--by"):
            what = {"STORE": "a journal file or a PostgreSQL URL", "--by": "who decides"}
            name = what.get(flag, "a step" if flag == "STEP" else "a run")
            raise Failure(2, f"{flag} is empty; name {name} (see synaptum-lite --help)")
    if getattr(args, "by", None) and STEERING.search(args.by):
        raise Failure(2, f"--by {args.by!r} holds a control character; give a name: --by ana")
    if getattr(args, "otel", None) is not None:
        check_destination(args)
    if getattr(args, "reason", "") and args.decision not in ("approve", "deny"):
        flag = f"--{args.decision or 'result'}"
        raise Failure(
            2,
            f"--reason is kept with --approve or --deny; the journal has no place for it with "
            f"{flag}, and it would be lost: leave it out",
        )
