"""The operator's command line, `synaptum-lite`: list runs, read one, resolve what waits for a
person, migrate a run to a new agent, export and import. Built on the package's public API only.

A store is a SQLite file, a PostgreSQL URL (`postgresql://user@host/db`, with the schema
after `#` or in `--schema`) or a store server's URL (`http://host:8750`, its token in
SYNAPTUM_STORE_TOKEN). Output is plain text 80 columns wide, or as wide as `--width`,
`COLUMNS` or the terminal says; nothing printed holds a clock or a path the store does not
name, and a password in a URL is never printed.

Here: `runs`, `show`, `resolve`, and `main`/`run`, which turn every failure into an exit code.
- `migrate.py`: the `migrate` command, and how a migration's changes are said.
- `parser.py`: the arguments, `--help` and its exit codes, the checks of bad usage.
- `output.py`: printing, escaping what would steer a terminal, fitting text to columns.
- `transfer.py`: the `export` and `import` commands.
- `fork.py`: the `fork` command.
- `traces.py`: `export --otel`, a run's trace rebuilt from its journal.
- `runview.py`: the store a command names, and a run read as steps (nothing printed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import shutil
import sys
from collections.abc import AsyncIterator, Iterable, Sequence

from .. import (
    ApprovalStep,
    CorruptJournal,
    FinalStep,
    LocalGateway,
    MigrationStep,
    ModelStep,
    NothingToResolve,
    Phase,
    RunBusy,
    Session,
    StoreUnavailable,
    SynaptumError,
    ToolStep,
    Usage,
)
from .fork import command_fork
from .migrate import changes, command_migrate
from .output import OutputLost, columns, cut, json_line, pad, printable, say, token_counts, write
from .parser import check_arguments, parser
from .runview import (
    Failure,
    StepView,
    Store,
    call_of,
    check_journal,
    field_of,
    is_held,
    open_store,
    quoted,
    read_run,
    redact,
    run_ids,
)
from .transfer import command_export, command_import

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
            say(json_line({**found, "usage": {"in": counts[0], "out": counts[1]}}))
    elif args.state is None:
        await _table(rows(), [printable(r) for r in ids], store, args, width)
    else:  # a filter's column is as wide as the runs it shows
        listed = [row async for row in rows()]
        names = [printable(row[0]) for row in listed]
        await _table(_each(listed), names, store, args, width)
    if damaged:
        which = ", ".join(repr(r) for r in damaged)
        raise Failure(
            1,
            f"{len(damaged)} run(s) could not be read: {which}; see why with "
            "synaptum-lite show STORE RUN",
        )


#: The columns a row of `runs` takes besides its run id and detail (state, events, tokens and
#: the gaps), the columns a detail keeps before a long run id is cut to make room, and the
#: fewest a run id is cut to.
_FIXED, _DETAIL, _SHORTEST = 32, 10, 8


async def _table(
    rows: AsyncIterator[Row], names: list[str], store: Store, args: argparse.Namespace, width: int
) -> None:
    """The rows as a table `width` columns wide: a run id too long for its column is cut with
    … (`--wide` prints ids whole, as `--json` does)."""
    if not names:
        state = args.state
        say(f"no runs in {store.label}" + (f" in state {state}" if state else ""))
        return
    name = max(3, *(columns(n) for n in names))
    if not args.wide:
        name = min(name, max(width - _FIXED - _DETAIL, _SHORTEST))
    head = f"{'RUN':<{name}}  {'STATE':<9}  {'EVENTS':>6}  {'TOKENS':<9}  DETAIL"
    say(head if args.wide else cut(head, width))
    async for run_id, state_now, events, usage, detail in rows:
        count, tokens = "-" if events is None else events, token_counts(usage) if usage else "-"
        line = (
            f"{pad(cut(printable(run_id), name), name)}  {state_now:<9}  {count:>6}  {tokens:<9}  "
        )
        room = max(width - columns(line), _DETAIL) if args.wide else width - columns(line)
        say((line + (cut(detail, room) if room > 0 else "")).rstrip())


async def _each(rows: Iterable[Row]) -> AsyncIterator[Row]:
    for row in rows:
        yield row


async def command_show(args: argparse.Namespace, store: Store, width: int) -> None:
    run = await read_run(store, args.run)
    agent = run.agent  # the one it was started with, or its last migration's
    version = f" · version {agent['version']}" if agent.get("version") is not None else ""
    say(f"run {run.run_id} · agent {agent.get('name')}{version} · model {agent.get('model')}")
    say(cut(f"task: {run.header.get('task', '')}", width))
    source = field_of(run.header, "forked_from")
    if source:  # its steps before `at` are a copy of that run's
        at = f" at {source['at']}" if source.get("at") else " (a whole copy)"
        say(cut(f"forked from {source.get('run_id')}{at}", width))
    state = run.state + (f" ({run.detail})" if run.state == "closed" else "")
    say(f"{state} · {run.events} events · tokens in/out {token_counts(run.usage)}")
    say()
    column = max([16, *(len(s.step_id) + 2 for s in run.steps)])  # a migration's id is longer
    say(f"{'STEP':<{column}}{'PHASES':<8}WHAT")
    indent = " " * (column + 8)
    for step in run.steps:
        phases = " ".join(e.phase.value[0] for e in step.events)
        what, notes = _describe(step, args.times, run.held)
        say(cut(f"{step.step_id:<{column}}{phases:<8}{what}", width).rstrip())
        for note in notes:
            say(cut(indent + note, width))


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
            if event.replaced_by is not None:
                notes.append(f"answered by {event.replaced_by} in place of the model (a fork)")
    if isinstance(first, FinalStep):
        what = first.reason or "answered"
    if isinstance(first, MigrationStep):  # the steps after it run on the new configuration
        what, notes = f"migrated by {first.by}", changes(first)
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


# ── the entry point ────────────────────────────────────────────────────────────────────────


_INTERRUPTED = (
    "interrupted: a decision is written whole or not at all (show says which); an import may "
    "be cut short, and importing the same export again adds the rest"
)


COMMANDS = {
    "runs": command_runs,
    "show": command_show,
    "resolve": command_resolve,
    "fork": command_fork,
    "migrate": command_migrate,
    "export": command_export,
    "import": command_import,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see `cli_parser.EXIT_CODES`).

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
        check_arguments(args)
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
