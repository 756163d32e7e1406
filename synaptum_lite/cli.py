"""The operator's command line, `synaptum-lite`: list runs, read one, resolve what waits for a
person, export and import. Built on the package's public API only.

A store is a SQLite file or a PostgreSQL URL (`postgresql://user@host/db`, with the schema
after `#` or in `--schema`). Output is plain text 80 columns wide, or as wide as `--width`,
`COLUMNS` or the terminal says; nothing printed holds a clock or a path the store does not
name, and a password in a URL is never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import io
import json
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import AsyncIterator, Iterable, Sequence

from . import (
    ApprovalStep,
    CorruptJournal,
    FinalStep,
    LocalGateway,
    ModelStep,
    NotAJournal,
    NothingToResolve,
    Phase,
    RunBusy,
    Session,
    StoreUnavailable,
    SynaptumError,
    ToolStep,
    Usage,
)
from .runview import (
    STATES,
    Failure,
    StepView,
    Store,
    call_of,
    check_journal,
    field_of,
    has_journal,
    is_held,
    open_store,
    quoted,
    read_run,
    redact,
    run_ids,
)
from .transfer import export_run, import_run

EXIT_CODES = """exit codes:
  0  done
  1  the store failed or holds something else (not a journal, unreachable),
     or a run in it is damaged (runs lists the others)
  2  bad usage: an unknown option, a bad URL or schema, conflicting options
  3  not found: no such file, run or step
  4  the step is not waiting for that decision (nothing was written)
  5  a driver holds the run now (nothing was written): wait for it, or stop it
  6  stdout could not be written (a full disk; a reader that stops reading, as
     `| head` does, ends it quietly); what was written to the store stays
  130  interrupted (Ctrl-C): a decision is written whole or not at all

phases in `show`: a attempted, c completed, r resolved (a person's decision)"""


class OutputLost(Exception):
    """stdout could not be written: the command's result did not reach its reader."""


def say(line: str = "") -> None:
    """One line of output (stdout is the command's result; errors go to stderr), with every
    character that would steer the terminal shown as an escape (see `printable`)."""
    write(printable(line) + "\n")


def write(text: str) -> None:
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise OutputLost(OSError(errno.EBADF, "it is closed"))
    try:
        sys.stdout.write(text)
    except OSError as exc:  # a closed pipe, a full disk: said once, by `run`
        raise OutputLost(exc) from None


# What the journal holds is printed as it is, never obeyed: a run id, a tool's result or a
# model's answer may hold characters a terminal acts on (ANSI escapes recolour or erase lines,
# a newline makes a row of its own, U+202E reverses the text after it). They are written as
# escapes (\x1b, \n, \u202e), so every line printed is a line of the store's.
_STEERING = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with the characters a terminal acts on written as Python escapes."""
    return _STEERING.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    named = {10: "\\n", 13: "\\r", 9: "\\t"}.get(code)
    return named or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def _json_line(row: dict[str, object]) -> str:
    """`row` as one JSON line a terminal can show: steering characters as \\u escapes."""
    text = json.dumps(row, ensure_ascii=False)
    return _STEERING.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# ── printing ───────────────────────────────────────────────────────────────────────────────


def _tokens(usage: Usage) -> str:
    counts = (usage.input_tokens, usage.output_tokens)
    return "/".join("-" if count is None else str(count) for count in counts)


def _cut(text: str, width: int) -> str:
    """`text` on one line of `width` columns: line breaks and tabs as spaces, what else would
    steer the terminal as escapes, and … where it was cut."""
    text = printable(text.replace("\r", " ").replace("\n", " ").replace("\t", " "))
    if columns(text) <= width:
        return text
    kept, used = [], 0
    for character in text:
        used += _columns_of(character)
        if used > width - 1:
            break
        kept.append(character)
    return "".join(kept) + "…"


def columns(text: str) -> int:
    """The terminal columns `text` takes: a wide character (CJK, most emoji) two, a combining
    mark none, any other one."""
    return len(text) if text.isascii() else sum(_columns_of(c) for c in text)


def _columns_of(character: str) -> int:
    if character.isascii():
        return 1
    if unicodedata.category(character) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(character) in "WF" else 1


def _pad(text: str, width: int) -> str:
    return text + " " * (width - columns(text))


# ── the commands ───────────────────────────────────────────────────────────────────────────


Row = tuple[str, str, int | None, Usage | None, str]  # run, state, events, usage, detail


async def command_runs(args: argparse.Namespace, store: Store, width: int) -> None:
    """One row per run. Without `--state` each row is printed once its run is read, and only
    the row is kept: the first comes before the last run is read. A run whose journal cannot
    be decoded is listed as damaged, the others still are, and the exit code is 1."""
    open_only = args.state not in (None, "closed", "damaged")  # the others are not closed
    ids = await run_ids(store, open_only=open_only)
    wanted = {"waiting": ("approval", "uncertain")}.get(args.state, (args.state,))
    damaged: list[str] = []

    async def rows() -> AsyncIterator[Row]:
        for run_id in ids:
            try:
                v = await read_run(store, run_id)
                row: Row = (run_id, v.state, v.events, v.usage, v.detail)
            except CorruptJournal as exc:
                damaged.append(run_id)
                row = (run_id, "damaged", None, None, str(exc).partition("; ")[0])
            if args.state is None or row[1] in wanted:
                yield row

    if args.json:
        async for run_id, state, events, usage, detail in rows():
            counts = (usage.input_tokens, usage.output_tokens) if usage else (None, None)
            found = {"run": run_id, "state": state, "events": events, "detail": detail}
            say(_json_line({**found, "usage": {"in": counts[0], "out": counts[1]}}))
    elif args.state is None:
        await _table(rows(), [printable(r) for r in ids], store, args.state, width)
    else:  # a filter's column is as wide as the runs it shows
        listed = [row async for row in rows()]
        names = [printable(row[0]) for row in listed]
        await _table(_each(listed), names, store, args.state, width)
    if damaged:
        which = ", ".join(repr(r) for r in damaged)
        raise Failure(
            1,
            f"{len(damaged)} run(s) could not be read: {which}; see why with "
            "synaptum-lite show STORE RUN",
        )


async def _table(
    rows: AsyncIterator[Row], names: list[str], store: Store, state: str | None, width: int
) -> None:
    if not names:
        say(f"no runs in {store.label}" + (f" in state {state}" if state else ""))
        return
    name = max(3, *(columns(n) for n in names))
    say(f"{'RUN':<{name}}  {'STATE':<9}  {'EVENTS':>6}  {'TOKENS':<9}  DETAIL")
    async for run_id, state_now, events, usage, detail in rows:
        count, tokens = "-" if events is None else events, _tokens(usage) if usage else "-"
        line = f"{_pad(printable(run_id), name)}  {state_now:<9}  {count:>6}  {tokens:<9}  "
        say((line + _cut(detail, max(width - columns(line), 10))).rstrip())


async def _each(rows: Iterable[Row]) -> AsyncIterator[Row]:
    for row in rows:
        yield row


async def command_show(args: argparse.Namespace, store: Store, width: int) -> None:
    run = await read_run(store, args.run)
    agent = field_of(run.header, "agent")
    say(f"run {run.run_id} · agent {agent.get('name')} · model {agent.get('model')}")
    say(_cut(f"task: {run.header.get('task', '')}", width))
    state = run.state + (f" ({run.detail})" if run.state == "closed" else "")
    say(f"{state} · {run.events} events · tokens in/out {_tokens(run.usage)}")
    say()
    say(f"{'STEP':<16}{'PHASES':<8}WHAT")
    indent = " " * 24
    for step in run.steps:
        phases = " ".join(e.phase.value[0] for e in step.events)
        what, notes = _describe(step, args.times, run.held)
        say(_cut(f"{step.step_id:<16}{phases:<8}{what}", width).rstrip())
        for note in notes:
            say(_cut(indent + note, width))


_ACTIONS = {"retry": "retry allowed", "record": "result recorded", "not_started": "never began"}


def _describe(step: StepView, times: bool, held: bool = False) -> tuple[str, list[str]]:
    """One line for the step, and a note per attempt, decision or wait. While a driver holds
    the run, a step waiting for nobody's decision may be the one it is running now."""
    notes: list[str] = []
    first = step.events[0]
    what = call_of(step)
    for event in step.events:
        if event.attempt > 1 and event.phase is Phase.ATTEMPTED:
            notes.append(f"attempt {event.attempt}")
        decision = getattr(event, "decision", None)
        if isinstance(event, ApprovalStep) and event.phase is not Phase.ATTEMPTED and decision:
            verdict = "granted" if decision.get("granted") else "denied"
            if event.phase is Phase.RESOLVED:
                verdict = "not now (denied, may be decided again)"
            note = f"{verdict} by {decision.get('by')}"
            note += f": {decision['note']}" if decision.get("note") else ""
            notes.append(note + (f" at {decision.get('at')}" if times else ""))
        elif isinstance(event, ToolStep) and decision:
            said = _ACTIONS.get(str(decision.get("action")), str(decision.get("action")))
            notes.append(f"{said} by {decision['by']}" if "by" in decision else said)
        if isinstance(event, ToolStep) and event.result is not None:
            notes.append(f"→ {event.result.content}")
        if isinstance(event, ModelStep) and event.response is not None:
            response = event.response
            if response.tool_calls:
                what = "asks for " + ", ".join(c.name for c in response.tool_calls)
            else:
                what = f"says «{response.text or ''}»"
    if isinstance(first, FinalStep):
        what = first.reason or "answered"
    if isinstance(first, ApprovalStep) and first.reason:
        notes.insert(0, f"asks approval: {first.reason}")
    if (step.waiting or step.inside) and held:
        notes.append("a driver holds the run: it may be running this step")
    elif step.inside:
        notes.append(f"waits in its sub-run {step.inside}")
    elif step.waiting == "approval":
        notes.append("waits for approval: resolve --approve or --deny")
    elif step.waiting == "uncertain":
        notes.append("uncertain effect: resolve --result TEXT or --retry")
    return what, notes


def _decided(step: StepView) -> str:
    """The last decision journaled on the step, as `show` says it ('' when none)."""
    notes = [n for n in _describe(step, False)[1] if " by " in n or n == "never began"]
    return notes[-1] if notes else ""


async def command_resolve(args: argparse.Namespace, store: Store, width: int) -> None:
    run = await read_run(store, args.run, check_held=False)
    step = next((s for s in run.steps if s.step_id == args.step), None)
    if step is None:
        ids = [s.step_id for s in run.steps]
        if len(ids) > 8:  # a long run: its first and last steps, and how many
            ids = [*ids[:3], "…", *ids[-2:], f"{len(run.steps)} steps"]
        step_id = quoted(args.step) if len(args.step) > 62 else args.step
        raise Failure(3, f"run {quoted(args.run)} has no step {step_id} (it has: {', '.join(ids)})")
    flag = f"--{args.decision or 'result'}"
    wanted = "approval" if args.decision in ("approve", "deny") else "uncertain"
    if step.waiting != wanted:
        if await is_held(store, args.run):  # what it waits for is the driver's to change
            raise Failure(
                5, f"a driver holds run {quoted(args.run)} now; nothing was written: {_WAIT}"
            )
        if step.inside:
            message = f"run {quoted(args.run)}, step {args.step} is a delegation; what waits"
            there = f"synaptum-lite show STORE {step.inside}"
            raise Failure(
                4,
                f"{message} is in its sub-run {quoted(step.inside)}; nothing was written: resolve "
                f"it there (see {there})",
            )
        what, then = _NOT_WAITING.get(step.waiting, _NOT_WAITING[""])
        decided = _decided(step) if not step.waiting else ""
        then = f"it was already resolved ({decided}); {_SEE}" if decided else then
        message = (
            f"run {quoted(args.run)}, step {args.step} {what}, not for {flag}; nothing was written"
        )
        raise Failure(4, f"{message}: {then}")
    session = Session(args.run, LocalGateway(tools=[]), store.checkpointer)
    try:
        if args.decision == "retry":
            await session.allow_retry(args.step, by=args.by)
            done = "retry allowed"
        elif args.result is not None:
            await session.record_result(args.step, args.result, by=args.by)
            done = "result recorded"
        else:
            granted = args.decision == "approve"
            await session.decide(args.step, granted=granted, by=args.by, note=args.reason)
            done = "granted" if granted else "denied"
    except NothingToResolve as exc:  # decided by someone else since it was read
        message = (
            f"run {quoted(args.run)}, step {args.step} is {exc.state} now; nothing was written"
        )
        raise Failure(4, f"{message}: {_SEE}") from None
    args.written = f"the decision ({done} by {args.by}) was written"
    say(f"{args.run} {args.step}: {done} by {args.by}")
    say("the run goes on when its agent runs it again with the same run_id")


_WAIT = "wait for its driver to let go (or stop it), then resolve again"
_SEE = "see the step with synaptum-lite show STORE RUN"


_NOT_WAITING = {
    "approval": ("waits for an approval", "use --approve or --deny"),
    "uncertain": ("waits for an uncertain effect", "use --result TEXT or --retry"),
    "": ("is waiting for nobody", "see what waits with synaptum-lite runs STORE --state waiting"),
}


async def command_export(args: argparse.Namespace, store: Store, width: int) -> None:
    await read_run(store, args.run, check_held=False)
    for line in await export_run(store.checkpointer, args.run):
        write(line + "\n")


async def command_import(args: argparse.Namespace, store: Store, width: int) -> None:
    """Import what stdin holds. A refused export leaves the store as it was: no file or
    schema is created for it, and no run is started with a header the store cannot read."""
    text, named = _export_on_stdin(), None
    with contextlib.suppress(ValueError, AttributeError):  # else `import_run` says what is wrong
        named = json.loads(text.split("\n", 1)[0]).get("run_id")
    try:
        _check_headers(text)
        held = None
        if isinstance(named, str) and named and await has_journal(store):
            held = await store.checkpointer.load(named)
        run_id = await import_run(store.checkpointer, text)
    except NotAJournal as exc:
        message = f"the export is not a synaptum_lite journal ({exc.detail}); nothing was imported"
        raise Failure(1, f"{message}: give {_AN_EXPORT}") from None
    except CorruptJournal as exc:
        damage = str(exc).partition("; ")[0]
        raise Failure(1, f"the export is damaged ({damage}); nothing was imported") from None
    after = (await store.checkpointer.load(run_id)).next_seq
    new = after - (held.next_seq if held else 0)
    say(f"imported run {run_id} into {store.label}: {after} events, {new} new")


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


_INTERRUPTED = (
    "interrupted: a decision is written whole or not at all (show says which); an import may "
    "be cut short, and importing the same export again adds the rest"
)
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


# ── the parser and the entry point ─────────────────────────────────────────────────────────


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="synaptum-lite",
        description="Read and resolve durable runs in a journal store.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text, epilog=EXIT_CODES)
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        sub.add_argument("store", metavar="STORE", help="a SQLite file or a PostgreSQL URL")
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
    export = command("export", "write a run as JSON lines to stdout")
    export.add_argument("run", metavar="RUN")
    command("import", "read an exported run from stdin into STORE")
    return top


def _width(text: str) -> int:
    """`--width`: a whole number of columns, 40 or more (below that nothing fits)."""
    if not text.strip().isdigit() or int(text) < 40:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of columns, 40 or more")
    return int(text)


COMMANDS = {
    "runs": command_runs,
    "show": command_show,
    "resolve": command_resolve,
    "export": command_export,
    "import": command_import,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see `EXIT_CODES`).

    It reads and writes UTF-8 on every OS. Elsewhere Windows gives pipes and files its
    locale's code page, which cannot hold `→` or every character a journal holds, and an
    export must import back as it was."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8")
    try:
        code = asyncio.run(run(argv))
    except KeyboardInterrupt:
        sys.stderr.write(f"synaptum-lite: {_INTERRUPTED}\n")
        return 130
    if code == 6:  # what stdout still buffers would fail again as the interpreter exits
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


async def run(argv: Sequence[str] | None = None) -> int:
    """`main` in the caller's event loop (where there are no processes, as in a browser)."""
    args = parser().parse_args(argv)
    told = "COLUMNS" in os.environ or bool(sys.stdout and sys.stdout.isatty())  # else 80
    width = args.width or (shutil.get_terminal_size().columns if told else 80)
    secret = ""
    try:
        _check_arguments(args)
        store = open_store(args.store, args.schema, create=args.command == "import")
        secret = store.secret
        if args.command != "import":
            await check_journal(store)
        await COMMANDS[args.command](args, store, max(width, 40))
        try:
            write(
                ""
            )  # stdout closed from the start is said, even by a command that printed nothing
            sys.stdout.flush()
        except OSError as exc:
            raise OutputLost(exc) from None
        return 0
    except OutputLost as lost:
        cause = lost.args[0]
        if isinstance(cause, BrokenPipeError):
            return 6  # the reader stopped reading (`| head`): nothing to say, nobody to say it
        message = f"stdout could not be written ({cause.strerror or cause})"
        written = getattr(args, "written", "")
        return _fail(6, f"{written}, but {message}" if written else message, secret)
    except Failure as failure:
        return _fail(failure.code, str(failure), secret)
    except RunBusy as exc:
        return _fail(5, f"{exc}; nothing was written", secret)
    except NothingToResolve as exc:
        return _fail(4, str(exc), secret)
    except CorruptJournal as exc:  # its remedy says to export the run, which cannot read it
        damage = str(exc).partition("; ")[0]
        then = "restore the journal from a backup; the other runs can still be read"
        return _fail(1, f"{damage}; {then} (synaptum-lite runs STORE)", secret)
    except StoreUnavailable as exc:  # its remedy speaks to a program that runs an agent
        then = "run the command again once it is back (a decision is never written twice)"
        return _fail(1, f"the store {exc.location} {exc.condition} ({exc.detail}); {then}", secret)
    except SynaptumError as exc:
        return _fail(1, str(exc), secret)
    except ImportError as exc:
        return _fail(2, f"{exc}; install the extra: pip install 'synaptum-lite[postgres]'", "")
    except Exception as exc:  # a driver's own error (psycopg's): said, never a traceback
        return _fail(1, f"{type(exc).__name__}: {str(exc).strip()}", secret)


def _fail(code: int, message: str, secret: str) -> int:
    """Say what failed on stderr, and return `code`: the code is the answer even when stderr
    cannot be written (closed, or a full disk)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"synaptum-lite: {printable(redact(message, secret))}\n")
        sys.stderr.flush()
    return code


_NAMED = {"run": "RUN", "step": "STEP", "by": "--by", "reason": "--reason", "result": "--result"}


def _check_arguments(args: argparse.Namespace) -> None:
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
        if not value.strip() and flag in ("STORE", "RUN", "STEP", "--by"):
            what = {"STORE": "a journal file or a PostgreSQL URL", "--by": "who decides"}
            name = what.get(flag, "a run" if flag == "RUN" else "a step")
            raise Failure(2, f"{flag} is empty; name {name} (see synaptum-lite --help)")
    if getattr(args, "by", None) and _STEERING.search(args.by):
        raise Failure(2, f"--by {args.by!r} holds a control character; give a name: --by ana")
    if getattr(args, "reason", "") and args.decision not in ("approve", "deny"):
        flag = f"--{args.decision or 'result'}"
        raise Failure(
            2,
            f"--reason is kept with --approve or --deny; the journal has no place for it with "
            f"{flag}, and it would be lost: leave it out",
        )
