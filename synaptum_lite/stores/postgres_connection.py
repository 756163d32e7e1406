"""Reaching the PostgreSQL journal's server: its URL, shown without the password; a connection
and the event loop it belongs to; the settings each new session needs; and what a psycopg
error means for the journal. `PostgresCheckpointer` (postgres.py) opens the connections,
decides which one a call travels on and holds the run locks; `postgres_schema.py` has the SQL.

A psycopg error is one of two kinds. Either the server refused one statement and the session
is still fine (`refusal`): no room on disk (`StoreFull`), no privilege or no writes accepted
(`StoreForbidden`), a value larger than an index entry (`ConfigurationError`), tables dropped
or altered while in use (`DamagedStore`). Or the connection is gone (`lost`): the checkpointer
drops it and raises `StoreUnavailable` (`unavailable`).

Needs psycopg 3 (`import_psycopg` says how to install it when it is missing); importing this
module does not import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError, DamagedStore, StoreForbidden, StoreFull, StoreUnavailable


def import_psycopg() -> Any:
    """The psycopg module, or a `ConfigurationError` saying how to install it."""
    try:
        import psycopg
        import psycopg.conninfo
    except ImportError:
        raise ConfigurationError(
            "PostgresCheckpointer needs psycopg 3, which is not installed; "
            "install the extra: pip install 'synaptum-lite[postgres]' (or uv sync --extra postgres)"
        ) from None
    return psycopg


# ── a connection ──────────────────────────────────────────────────────────────────────────


@dataclass(slots=True, eq=False)
class Link:
    """A connection, the event loop it belongs to, and the lock that keeps one operation on it
    at a time (a transaction must not interleave with another)."""

    connection: Any  # psycopg.AsyncConnection
    loop: asyncio.AbstractEventLoop
    lock: asyncio.Lock

    def usable(self) -> bool:
        return self.loop is asyncio.get_running_loop() and not self.connection.closed

    def abandon(self) -> None:
        """Close the socket without a round trip (the server then ends the session and drops
        its locks). Works from any loop, or none."""
        with contextlib.suppress(Exception):
            self.connection.pgconn.finish()


async def close_link(link: Link) -> None:
    """Close `link` politely when it belongs to this event loop, else abandon it."""
    if link.usable():
        with contextlib.suppress(Exception):
            await link.connection.close()
            return
    link.abandon()


def abandon_all(links: set[Link]) -> None:
    """Abandon every link in `links` (what an unclosed checkpointer does when collected)."""
    for link in links:
        link.abandon()


def session_setup(settings: dict[str, str | None]) -> str:
    """The statements that make a session of this server what the journal needs, from the
    settings `prepare` read (`""` when it already is).

    Its transactions read committed data (see `PostgresCheckpointer._connect`). And its
    sessions are never ended for idling (`idle_session_timeout`, PostgreSQL 14+: None before):
    a run's lock is its connection's session, idle while the model thinks or a tool runs, and
    a server that reaped it would stop every run whose model takes longer, at each resume
    again."""
    setup = []
    if settings["default_transaction_isolation"] != "read committed":
        setup.append("SET default_transaction_isolation TO 'read committed'")
    if settings["idle_session_timeout"] not in (None, "0"):
        setup.append("SET idle_session_timeout TO 0")
    return "; ".join(setup)


# ── what the server's errors mean ─────────────────────────────────────────────────────────

_DISK_FULL = "53100"  # SQLSTATE disk_full: the server could not write, the session goes on
_READ_ONLY = "25006"  # read_only_sql_transaction: a standby, or default_transaction_read_only
_NO_PRIVILEGE = "42501"  # insufficient_privilege
_GONE = ("3F000", "42P01", "42703")  # no such schema, table or column
_TOO_LARGE = "54000"  # program_limit_exceeded: a run id longer than an index entry may be


def refusal(exc: BaseException, connection: Any, location: str, schema: str) -> Exception | None:
    """What to raise when the server refused a statement and the session is still fine: the
    disk is full, the user may not (`forbidden`), a value is too large to index, or the
    journal's tables are gone. None for any other error."""
    state = getattr(exc, "sqlstate", None)
    if state == _DISK_FULL:
        return StoreFull(location, f"PostgreSQL: {first_line(exc)}")
    refused = forbidden(exc, connection, location, schema)
    if refused is not None:
        return refused
    if state == _TOO_LARGE:
        return ConfigurationError(
            f"the journal store {location} cannot keep a value this large "
            f"(PostgreSQL: {first_line(exc)}); nothing was written: a run id "
            "must fit PostgreSQL's index (about 2,700 bytes): use a shorter "
            "run_id, a hash of it for instance"
        )
    if state in _GONE:
        # checked when the checkpointer first connected: changed since, by hand.
        # Never created again: a run would start over and repeat its effects.
        return DamagedStore(
            location,
            f"its tables were dropped or altered while in use: PostgreSQL: {first_line(exc)}",
        )
    return None


def forbidden(
    exc: BaseException, connection: Any, location: str, schema: str
) -> StoreForbidden | None:
    """What to say when the server refused a statement for good: the user lacks a
    privilege, or the server accepts no writes. None for any other error."""
    state = getattr(exc, "sqlstate", None)
    if state == _READ_ONLY:
        return StoreForbidden(
            location,
            f"PostgreSQL: {first_line(exc)}",
            "the server accepts no writes (a standby, or sessions that default to "
            "read-only transactions): point the URL at the primary server, or let the "
            "user write",
        )
    if state == _NO_PRIVILEGE:
        user = connection.info.user
        return StoreForbidden(
            location,
            f"PostgreSQL: {first_line(exc)}",
            f"grant the user {user} USAGE on schema {schema} and SELECT, INSERT and "
            f"UPDATE on the tables of schema {schema}, or connect as the user that "
            "created the journal",
        )
    return None


def lost(exc: BaseException, psycopg: Any) -> bool:
    """Whether `exc` means the connection is gone (as opposed to a mistake in a query)."""
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


def unavailable(location: str, exc: BaseException) -> StoreUnavailable:
    """The `StoreUnavailable` for a connection lost with `exc`."""
    return StoreUnavailable(location, f"{type(exc).__name__}: {first_line(exc)}")


def first_line(exc: BaseException) -> str:
    """The first line of `exc`'s message, or its type's name when it has none."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# ── the URL, without its password ─────────────────────────────────────────────────────────


def without_password(url: str, psycopg: Any) -> str:
    """The URL as it may be shown: user, host, port and database, never the password."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return _redacted(url)
    user = f"{params['user']}@" if params.get("user") else ""
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{params.get('host', '')}{port}/{params.get('dbname', '')}"


def _redacted(url: str) -> str:
    """`url` as written, without what may hold a password: the user part, and the value of a
    `password=` parameter."""
    return re.sub(r"([?&]password=)[^&#]*", r"\1…", re.sub(r"//[^@/?#]*@", "//…@", url))


def hide_password(url: str, text: str) -> str:
    """`text` (a message of libpq's about `url`) without the URL's password, or the URL whole.

    libpq quotes what it could not read: the whole URL, or the part at fault, which may be
    the password itself (after the user, or in a `password=` parameter)."""
    text = text.replace(url, _redacted(url))
    userinfo = re.match(r"[a-z]+://([^@/?#]*)@", url)
    secrets = [userinfo.group(1).partition(":")[2]] if userinfo else []
    secrets += re.findall(r"[?&]password=([^&#]*)", url)
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "…")
    return text
