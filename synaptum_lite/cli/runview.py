"""The operator's view of a store: open the store a command line names, list its runs, and
read a run as steps, with its state and what each step waits for. Nothing here prints; the
command line (`main.py`) does. Built on the package's public API only: every question to a
store is a `Checkpointer` method, and nothing here speaks SQL.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import (
    ApprovalStep,
    Checkpointer,
    DelegationStep,
    FinalStep,
    MigrationStep,
    ModelStep,
    Phase,
    SqliteCheckpointer,
    Step,
    StoreUnreachable,
    SynaptumError,
    ToolStep,
    Usage,
    load_events,
)

STATES = ("closed", "open", "held", "approval", "uncertain")


class Failure(Exception):
    """What the command line tells the operator, and its exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ── the store ──────────────────────────────────────────────────────────────────────────────


@dataclass
class Store:
    """A checkpointer, how to name it to people, and how to list its runs."""

    checkpointer: Checkpointer
    label: str
    secret: str = ""  # the URL's password: never printed
    given: str = ""  # the location as the command line named it


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
#: Where the command line reads a store server's token (the variable the server reads).
ENV_TOKEN = "SYNAPTUM_STORE_TOKEN"


def open_store(location: str, schema: str | None, *, create: bool = False) -> Store:
    """The store `location` names. Raises `Failure` (exit 1, 2 or 3) when it cannot be used.

    An http:// or https:// URL is a store server, reached with the token in
    SYNAPTUM_STORE_TOKEN. Only what is given as a PostgreSQL URL is one (its scheme in any
    case, as URLs allow); another scheme is refused, never read as a file's name. Reading
    (`create` false) never writes: a SQLite database without a journal is refused as it is,
    not made a journal."""
    scheme = _SCHEME.match(location)
    if scheme and scheme[1].lower() in ("postgresql", "postgres", "http", "https"):
        location = scheme[1].lower() + location[len(scheme[1]) :]
    elif scheme:
        raise Failure(
            2,
            f"{redact(location, '')} is a {scheme[1]}:// URL; a store is a SQLite file, a "
            "postgresql:// URL or a store server's http:// URL",
        )
    if location.startswith(("http://", "https://")):
        return _store_server(location, schema)
    if location.startswith(("postgresql://", "postgres://")):
        url, _, fragment = location.partition("#")
        try:
            parts = urllib.parse.urlsplit(url)
            secret = parts.password or ""
        except ValueError as exc:  # a bracketed host that is no IPv6 address, say
            raise Failure(2, f"the URL cannot be read ({exc}); fix the URL") from None
        try:
            parts.port  # noqa: B018 - reading it checks it
        except ValueError:
            port = parts.netloc.rpartition("@")[2].rpartition(":")[2]
            what = "is not a port (1 to 65535)" if port.isdigit() else "is not a number"
            raise Failure(2, f"the URL's port {port!r} {what}; fix the URL") from None
        if fragment and schema and fragment != schema:
            raise Failure(2, f"two schemas given: #{fragment} and --schema {schema}; give one")
        from ..stores.postgres import PostgresCheckpointer

        try:
            store = PostgresCheckpointer(url, schema=fragment or schema or "synaptum_lite")
        except SynaptumError as exc:
            raise Failure(2, redact(str(exc), secret)) from None
        return Store(store, store.location, secret, location)
    if schema:
        raise Failure(2, f"--schema is for a PostgreSQL URL; {location} is a SQLite file")
    path = Path(location)
    if path.is_dir():
        raise Failure(3, f"{location} is a folder, not a journal file; name the .db file")
    if not create and not path.exists():
        raise Failure(3, f"{location} does not exist; name a journal file or a PostgreSQL URL")
    if path.exists() and not path.is_file():
        raise Failure(
            1, f"{location} is not a regular file (a device, a pipe or a socket); name a journal"
        )
    if not create and path.stat().st_size == 0:
        raise Failure(1, f"{location} is empty, not a synaptum_lite journal; name a journal")
    return Store(SqliteCheckpointer(path), path.name, given=location)


def _store_server(url: str, schema: str | None) -> Store:
    """A store server (`python -m synaptum_lite.stores.http_server`), reached with the token in
    SYNAPTUM_STORE_TOKEN, as the server reads its own."""
    from ..stores.http_client import HttpCheckpointer

    shown = redact(url, "")
    if schema:
        raise Failure(2, f"--schema is for a PostgreSQL URL; {shown} is a store server")
    token = os.environ.get(ENV_TOKEN, "")
    if not token:
        raise Failure(
            2,
            f"{shown} is a store server, and it needs its token: set {ENV_TOKEN} to the token "
            "the server was started with",
        )
    try:
        store = HttpCheckpointer(url, token=token)
    except SynaptumError as exc:
        raise Failure(2, redact(str(exc), token)) from None
    return Store(store, store.location, token, url)


async def check_journal(store: Store) -> None:
    """Refuse a store that holds no journal yet: reading must not create one."""
    try:
        if await store.checkpointer.run_ids() is not None:
            return
    except StoreUnreachable as exc:
        message = f"cannot read {store.label}: {exc.detail}; check the URL and the server"
        raise Failure(1, message) from None
    if isinstance(store.checkpointer, SqliteCheckpointer):  # `open_store` refused no file
        raise Failure(
            1,
            f"{store.given} is a SQLite database without tables, not a synaptum_lite journal; "
            "nothing was changed: name a journal",
        )
    raise Failure(3, f"{store.label} holds no synaptum_lite journal; check the URL and the schema")


async def has_journal(store: Store) -> bool:
    """Whether the store already holds a journal, asked without creating one."""
    return await store.checkpointer.run_ids() is not None


async def run_ids(store: Store, *, open_only: bool = False) -> list[str]:
    """Every run of the store, in the order they were started, sub-runs included; with
    `open_only`, only those without a final step ([] where there is no journal)."""
    return await store.checkpointer.run_ids(open_only=open_only) or []


async def is_held(store: Store, run_id: str) -> bool:
    """Whether a driver holds the run now (`Checkpointer.is_held`)."""
    return await store.checkpointer.is_held(run_id)


# ── a run as the operator reads it ─────────────────────────────────────────────────────────


@dataclass
class StepView:
    """One step's events, in order, and what it waits for (approval, uncertain, or ''). A
    delegation whose sub-run waits for a person names it in `inside`, with what waits there:
    the decision is taken in the sub-run, never on this step."""

    step_id: str
    events: list[Step] = field(default_factory=list)
    waiting: str = ""
    inside: str = ""  # the sub-run where a person must decide
    inside_waiting: str = ""
    inside_detail: str = ""


@dataclass
class RunView:
    run_id: str
    header: dict[str, Any]
    events: int
    steps: list[StepView]
    final: FinalStep | None
    usage: Usage
    held: bool = False
    agent: dict[str, Any] = field(default_factory=dict)  # the configuration it runs on now

    @property
    def state(self) -> str:
        if self.final is not None:
            return "closed"
        if self.held:
            return "held"
        waiting = [s.waiting or s.inside_waiting for s in self.steps]
        return next((w for w in reversed(waiting) if w), "open")

    @property
    def detail(self) -> str:
        if self.final is not None:
            return self.final.reason or "answered"
        for s in reversed(self.steps):  # the same step `state` names
            if s.waiting:
                return f"{s.step_id}: {call_of(s)}"
            if s.inside_waiting:
                return f"{s.step_id}: in {s.inside}: {s.inside_detail}"
        return ""


async def read_run(store: Store, run_id: str, *, check_held: bool = True) -> RunView:
    """The run as the journal holds it. Raises `Failure` (3) when the store has no such run."""
    state = await store.checkpointer.load(run_id)
    if state.header is None:
        raise Failure(3, f"no run {quoted(run_id)} in {store.label}; list them: synaptum-lite runs")
    events = await load_events(store.checkpointer, run_id)
    # what a tool is declared as, in the configuration the run runs on now (a migration's)
    agent = field_of(state.header, "agent")
    for event in events:
        agent = event.configuration if isinstance(event, MigrationStep) else agent
    tools = field_of(agent, "tools")
    steps: dict[str, StepView] = {}
    for event in events:
        steps.setdefault(event.step_id, StepView(event.step_id)).events.append(event)
    for view in steps.values():
        view.waiting = _waiting(view, tools)
        await _sub_run_waits(store, view)
    usage = usage_of(events)
    run = RunView(run_id, state.header, len(events), list(steps.values()), state.final, usage)
    run.agent = agent
    if check_held and not run.final:
        run.held = await is_held(store, run_id)
    return run


async def _sub_run_waits(store: Store, view: StepView) -> None:
    """Fill `view.inside` when the step is a delegation not completed whose sub-run waits for
    a person: resuming the run stops there until that person decides."""
    attempted = [e for e in view.events if e.phase is Phase.ATTEMPTED]
    if not attempted or any(e.phase is Phase.COMPLETED for e in view.events):
        return
    if not isinstance(attempted[-1], DelegationStep):
        return
    sub_run_id = attempted[-1].sub_run_id
    if (await store.checkpointer.load(sub_run_id)).header is None:
        return  # killed before the sub-run began: it begins on resume
    sub = await read_run(store, sub_run_id, check_held=False)
    if sub.state in ("approval", "uncertain"):
        view.inside, view.inside_waiting, view.inside_detail = sub_run_id, sub.state, sub.detail


def usage_of(events: list[Step]) -> Usage:
    """The run's total usage, as `run_usage(...).total` computes it, from events already read
    (`run_usage` would read the journal a second time: a third of listing many runs)."""
    total = Usage(0, 0, 0)
    for event in events:
        if event.phase is not Phase.COMPLETED:
            continue
        if isinstance(event, ModelStep) and event.response is not None:
            total += event.response.usage
        elif isinstance(event, DelegationStep) and event.usage is not None:
            total += event.usage
    return total


def _waiting(view: StepView, tools: dict[str, Any]) -> str:
    """What a person must decide for this step: 'approval', 'uncertain', or nothing."""
    attempted = [e for e in view.events if e.phase is Phase.ATTEMPTED]
    if not attempted or any(e.phase is Phase.COMPLETED for e in view.events):
        return ""
    latest = attempted[-1]
    if isinstance(latest, ApprovalStep):
        return "approval"
    if not isinstance(latest, ToolStep) or isinstance(latest, DelegationStep):
        return ""  # a model call or a delegation runs again on resume
    if field_of(tools, latest.call.name).get("idempotent", False) is True:
        return ""  # an idempotent tool simply runs again
    for e in view.events:  # an operator, or the runtime, allowed this attempt to run again
        if isinstance(e, ToolStep) and e.phase is Phase.RESOLVED and e.attempt == latest.attempt:
            if e.decision and e.decision.get("action") in ("retry", "not_started"):
                return ""
    return "uncertain"


def field_of(mapping: dict[str, Any], key: str) -> dict[str, Any]:
    """`mapping[key]` when it is an object, else {}: a header comes from the store, and an
    import takes any JSON object as one."""
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def call_of(view: StepView) -> str:
    for event in view.events:
        if isinstance(event, ToolStep | ApprovalStep) and event.phase is Phase.ATTEMPTED:
            call = event.call
            if isinstance(call.arguments, str):
                return f"{call.name}({call.arguments!r})"
            arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
            return f"{call.name}({arguments})"
    return ""


_PASSWORDS = (
    re.compile(r"(://[^/\s:@]*:)[^\s@/]*@"),  # scheme://user:password@host
    re.compile(r"(password\s*=\s*)('[^']*'|[^\s&]+)", re.IGNORECASE),  # password=... as libpq
)


def quoted(value: str) -> str:
    """`value` quoted as Python would, and cut when long: a message names a bad value, and a
    value of thousands of characters would bury what the message says."""
    text = repr(value)
    return text if len(text) <= 64 else f"{text[:60]}…' ({len(value)} characters)"


def redact(text: str, secret: str) -> str:
    """`text` with the URL's password (plain or quoted) as ***, and any other password a URL
    or a libpq connection string in it shows."""
    for form in {secret, urllib.parse.quote(secret, safe="")} - {""}:
        text = text.replace(form, "***")
    for pattern in _PASSWORDS:
        text = pattern.sub(r"\1***" + ("@" if pattern is _PASSWORDS[0] else ""), text)
    return text
