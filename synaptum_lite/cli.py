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
import io
import json
import os
import shutil
import sys
from collections.abc import Sequence

from . import (
    ApprovalStep,
    FinalStep,
    LocalGateway,
    ModelStep,
    NothingToResolve,
    Phase,
    RunBusy,
    Session,
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
    open_store,
    read_run,
    redact,
    run_ids,
)
from .transfer import export_run, import_run

EXIT_CODES = """exit codes:
  0  done
  1  the store failed or holds something else (not a journal, unreachable, damaged)
  2  bad usage: an unknown option, a bad URL or schema, conflicting options
  3  not found: no such file, run or step
  4  the step is not waiting for that decision (nothing was written)
  5  a driver holds the run now (nothing was written): wait for it, or stop it

phases in `show`: a attempted, c completed, r resolved (a person's decision)"""


def say(line: str = "") -> None:
    """One line of output (stdout is the command's result; errors go to stderr)."""
    sys.stdout.write(line + "\n")


# ── printing ───────────────────────────────────────────────────────────────────────────────


def _tokens(usage: Usage) -> str:
    counts = (usage.input_tokens, usage.output_tokens)
    return "/".join("-" if count is None else str(count) for count in counts)


def _cut(text: str, width: int) -> str:
    text = text.replace("\r", " ").replace("\n", " ")
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


# ── the commands ───────────────────────────────────────────────────────────────────────────


async def command_runs(args: argparse.Namespace, store: Store, width: int) -> None:
    open_only = args.state not in (None, "closed")  # every other state is a run not closed
    views = [await read_run(store, r) for r in await run_ids(store, open_only=open_only)]
    wanted = {"waiting": ("approval", "uncertain")}.get(args.state, (args.state,))
    views = [v for v in views if args.state is None or v.state in wanted]
    if args.json:
        for v in views:
            row = {"run": v.run_id, "state": v.state, "events": v.events, "detail": v.detail}
            row["usage"] = {"in": v.usage.input_tokens, "out": v.usage.output_tokens}
            say(json.dumps(row, ensure_ascii=False))
        return
    if not views:
        say(f"no runs in {store.label}" + (f" in state {args.state}" if args.state else ""))
        return
    name = max(3, *(len(v.run_id) for v in views))
    say(f"{'RUN':<{name}}  {'STATE':<9}  {'EVENTS':>6}  {'TOKENS':<9}  DETAIL")
    for v in views:
        line = f"{v.run_id:<{name}}  {v.state:<9}  {v.events:>6}  {_tokens(v.usage):<9}  "
        say((line + _cut(v.detail, max(width - len(line), 10))).rstrip())


async def command_show(args: argparse.Namespace, store: Store, width: int) -> None:
    run = await read_run(store, args.run)
    agent = run.header.get("agent", {})
    say(f"run {run.run_id} · agent {agent.get('name')} · model {agent.get('model')}")
    say(_cut(f"task: {run.header.get('task', '')}", width))
    state = run.state + (f" ({run.detail})" if run.state == "closed" else "")
    say(f"{state} · {run.events} events · tokens in/out {_tokens(run.usage)}")
    say()
    say(f"{'STEP':<16}{'PHASES':<8}WHAT")
    indent = " " * 24
    for step in run.steps:
        phases = " ".join(e.phase.value[0] for e in step.events)
        what, notes = _describe(step, args.times)
        say(_cut(f"{step.step_id:<16}{phases:<8}{what}", width).rstrip())
        for note in notes:
            say(_cut(indent + note, width))


_ACTIONS = {"retry": "retry allowed", "record": "result recorded", "not_started": "never began"}


def _describe(step: StepView, times: bool) -> tuple[str, list[str]]:
    """One line for the step, and a note per attempt, decision or wait."""
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
    if step.waiting == "approval":
        notes.append("waits for approval: resolve --approve or --deny")
    if step.waiting == "uncertain":
        notes.append("uncertain effect: resolve --result TEXT or --retry")
    return what, notes


async def command_resolve(args: argparse.Namespace, store: Store, width: int) -> None:
    run = await read_run(store, args.run, check_held=False)
    step = next((s for s in run.steps if s.step_id == args.step), None)
    if step is None:
        ids = ", ".join(s.step_id for s in run.steps)
        raise Failure(3, f"run {args.run!r} has no step {args.step} (it has: {ids})")
    flag = f"--{args.decision or 'result'}"
    wanted = "approval" if args.decision in ("approve", "deny") else "uncertain"
    if step.waiting != wanted:
        what, then = _NOT_WAITING.get(step.waiting, _NOT_WAITING[""])
        message = f"run {args.run!r}, step {args.step} {what}, not for {flag}; nothing was written"
        raise Failure(4, f"{message}: {then}")
    session = Session(args.run, LocalGateway(tools=[]), store.checkpointer)
    if args.decision == "retry":
        await session.allow_retry(args.step, by=args.by)
        say(f"{args.run} {args.step}: retry allowed by {args.by}")
    elif args.result is not None:
        await session.record_result(args.step, args.result, by=args.by)
        say(f"{args.run} {args.step}: result recorded by {args.by}")
    else:
        granted = args.decision == "approve"
        await session.decide(args.step, granted=granted, by=args.by, note=args.reason)
        say(f"{args.run} {args.step}: {'granted' if granted else 'denied'} by {args.by}")
    say("the run goes on when its agent runs it again with the same run_id")


_NOT_WAITING = {
    "approval": ("waits for an approval", "use --approve or --deny"),
    "uncertain": ("waits for an uncertain effect", "use --result TEXT or --retry"),
    "": ("is waiting for nobody", "see what waits with synaptum-lite runs STORE --state waiting"),
}


async def command_export(args: argparse.Namespace, store: Store, width: int) -> None:
    await read_run(store, args.run, check_held=False)
    for line in await export_run(store.checkpointer, args.run):
        sys.stdout.write(line + "\n")


async def command_import(args: argparse.Namespace, store: Store, width: int) -> None:
    text, named = sys.stdin.read(), None
    with contextlib.suppress(ValueError, AttributeError):  # else `import_run` says what is wrong
        named = json.loads(text.split("\n", 1)[0]).get("run_id")
    held = await store.checkpointer.load(named) if isinstance(named, str) and named else None
    run_id = await import_run(store.checkpointer, text)
    after = (await store.checkpointer.load(run_id)).next_seq
    new = after - (held.next_seq if held else 0)
    say(f"imported run {run_id} into {store.label}: {after} events, {new} new")


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
        sub.add_argument("--width", type=int, help="columns of output (default 80)")
        return sub

    runs = command("runs", "every run, with its state and usage")
    runs.add_argument("--state", choices=(*STATES, "waiting"), help="only runs in this state")
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
    resolve.add_argument("--reason", default="", help="why (kept with a denial or grant)")
    resolve.add_argument("--by", default="operator", help="who decides (default operator)")
    export = command("export", "write a run as JSON lines to stdout")
    export.add_argument("run", metavar="RUN")
    command("import", "read an exported run from stdin into STORE")
    return top


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
    return asyncio.run(run(argv))


async def run(argv: Sequence[str] | None = None) -> int:
    """`main` in the caller's event loop (where there are no processes, as in a browser)."""
    args = parser().parse_args(argv)
    told = sys.stdout.isatty() or "COLUMNS" in os.environ  # else 80, whatever runs it
    width = args.width or (shutil.get_terminal_size().columns if told else 80)
    secret = ""
    try:
        store = open_store(args.store, args.schema, create=args.command == "import")
        secret = store.secret
        if args.command != "import":
            await check_journal(store)
        await COMMANDS[args.command](args, store, max(width, 40))
        return 0
    except Failure as failure:
        return _fail(failure.code, str(failure), secret)
    except RunBusy as exc:
        return _fail(5, f"{exc}; nothing was written", secret)
    except NothingToResolve as exc:
        return _fail(4, str(exc), secret)
    except SynaptumError as exc:
        return _fail(1, str(exc), secret)
    except ImportError as exc:
        return _fail(2, f"{exc}; install the extra: pip install 'synaptum-lite[postgres]'", "")
    except Exception as exc:  # a driver's own error (psycopg's): said, never a traceback
        return _fail(1, f"{type(exc).__name__}: {str(exc).strip()}", secret)


def _fail(code: int, message: str, secret: str) -> int:
    sys.stderr.write(f"synaptum-lite: {redact(message, secret)}\n")
    return code
