"""The PostgreSQL checkpointer: one database for many workers on many machines. It owns the
connections and the run locks; the tables and statements it runs are in `postgres_schema.py`;
the URL shown without its password, a connection, and what psycopg's errors mean for the
journal are in `postgres_connection.py`.

Needs the `postgres` extra (`pip install 'synaptum-lite[postgres]'`), which brings psycopg 3;
importing this module does not import psycopg, so `import synaptum_lite` stays standard
library only.

One driver per run: `hold` takes a *session* advisory lock (`pg_try_advisory_lock`) on a
connection of its own, kept for as long as the run is held. The server drops the lock when
that connection ends, for whatever reason (the worker exits, is SIGKILLed, loses its
network), so a dead worker never blocks the resume. While a run is held, every read and write
of its journal travels on that same connection: a worker that lost its lock has lost the
connection its writes need, so it cannot append after another worker took the run over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..checkpointer import RunState
from ..codec import Record, check_run_id, encode_events, encode_header
from ..errors import ConfigurationError, StoreUnavailable, StoreUnreachable
from ..events import Step
from .alike import holding, run_state
from .postgres_connection import (
    Link,
    abandon_all,
    close_link,
    first_line,
    forbidden,
    hide_password,
    import_psycopg,
    lost,
    refusal,
    session_setup,
    unavailable,
    without_password,
)
from .postgres_schema import SCHEMA_NAME, append, start_with, statements
from .postgres_schema import prepare as prepare_schema

T = TypeVar("T")

_IDLE_LOCK_CONNECTIONS = 4  # kept open after a run is released, for the next hold


class PostgresCheckpointer:
    """A journal in a PostgreSQL database, in the tables of one schema (created on first use).

    `url` is a libpq URL (`postgresql://user:password@host:5432/dbname`); `schema` lets several
    journals share a database. Raises `NotAJournal` when the schema holds other tables,
    `UnsupportedFormat` when it was written by a newer format version and `DamagedStore` when
    its tables were altered by hand; none changes it. A server that refuses the journal
    (the user may not create or write its tables, or it accepts no writes) raises
    `StoreForbidden`; one that cannot be connected to, `StoreUnreachable`. Connection loss
    under a run this checkpointer holds raises `StoreUnavailable` (its lock went with the
    connection); a call on runs not held is tried once more on a new connection. Either way
    every append that returned is committed, and the same checkpointer reconnects on its next
    call.

    Calls on runs not held share one connection, one call at a time; each held run has its
    own connection (the one holding its lock).
    """

    def __init__(
        self, url: str, *, schema: str = "synaptum_lite", connect_timeout: int = 10
    ) -> None:
        psycopg = import_psycopg()
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise ConfigurationError(
                "PostgresCheckpointer needs a URL like "
                "postgresql://user:password@host:5432/dbname, "
                f"got {url if not isinstance(url, str) else without_password(url, psycopg)!r}"
            )
        if not isinstance(schema, str) or not SCHEMA_NAME.fullmatch(schema):
            raise ConfigurationError(
                "schema must be a lowercase SQL name (letters, digits and _, at most 63) that "
                f"cannot start with pg_ (PostgreSQL keeps those for itself), got {schema!r}"
            )
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, int):
            raise ConfigurationError(
                f"connect_timeout must be whole seconds (0: wait for ever), got {connect_timeout!r}"
            )
        try:
            params = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ConfigurationError(
                f"cannot read the PostgreSQL URL {without_password(url, psycopg)}: "
                f"{hide_password(url, first_line(exc))}; write it as "
                "postgresql://user:password@host:5432/dbname, with any of its parts that "
                "holds @, :, /, ? or % percent-encoded"
            ) from None
        self.url = url
        self.schema = schema
        self.location = f"{without_password(url, psycopg)} (schema {schema})"
        self._psycopg = psycopg
        self._options = {
            "autocommit": True,
            **({} if "application_name" in params else {"application_name": "synaptum_lite"}),
            **({} if "connect_timeout" in params else {"connect_timeout": connect_timeout}),
        }
        # where the advisory locks live: one database (whatever URL reaches it), one schema
        self._store = (
            f"{params.get('host', '')}:{params.get('port', '')}/{params.get('dbname', '')}/{schema}"
        )
        self._sql = statements(schema)
        self._prepared = False
        self._setup = ""  # what each new connection must set first, as `prepare` found out
        self._shared: dict[asyncio.AbstractEventLoop, Link] = {}  # one per event loop
        self._idle: list[Link] = []
        self._held: dict[str, Link] = {}
        # every open connection; an unclosed checkpointer ends their sessions when collected
        self._links: set[Link] = set()
        weakref.finalize(self, abandon_all, self._links)

    def __repr__(self) -> str:
        return f"PostgresCheckpointer({self.location})"

    # ── the protocol ──────────────────────────────────────────────────────────────────────

    async def load(self, run_id: str) -> RunState:
        check_run_id(run_id)
        row = await self._on(run_id, lambda c: self._fetchone(c, "load", (run_id,)))
        if row is None:
            return run_state(run_id, None, 0, None)
        header, next_seq, *final = row
        return run_state(run_id, header, next_seq, Record(*final) if final[0] is not None else None)

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        text = encode_header(check_run_id(run_id), header)
        await self._on(run_id, lambda c: c.execute(self._sql["start"], (run_id, text)))

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        encoded = encode_events(run_id, events)
        return await self._on(run_id, lambda c: append(c, self._sql, run_id, encoded))

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        """`start`, then `append`, in one transaction: what `transfer.import_run` uses, so a
        process killed in the middle of an import leaves the run whole or absent, never a
        header without its events (a new run to a worker, which would pay every call and
        repeat every effect again). Returns the run's `next_seq` afterwards."""
        text = encode_header(check_run_id(run_id), header)
        encoded = encode_events(run_id, events)
        return await self._on(run_id, lambda c: start_with(c, self._sql, run_id, text, encoded))

    async def records(self, run_id: str) -> list[Record]:
        check_run_id(run_id)

        async def read(connection: Any) -> list[Record]:
            cursor = await connection.execute(self._sql["records"], (run_id,))
            return [Record(*row) for row in await cursor.fetchall()]

        return await self._on(run_id, read)

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        check_run_id(run_id)
        return holding(self._store, self.location, run_id, lambda: self._try_hold(run_id))

    async def confirm_hold(self, run_id: str) -> None:
        """Raise `StoreUnavailable` unless the session holding `run_id`'s lock is still there:
        one round trip over it. The server may end a session (a restart, an administrator, a
        timeout) without its client knowing until it next speaks; the loop asks before an
        effect that must not happen twice, and before paying for a model call."""
        await self._on(run_id, lambda c: c.execute("SELECT 1"))

    async def run_ids(self, *, open_only: bool = False) -> list[str] | None:
        if not self._prepared and not await self._has_journal():
            return None  # asked without creating the schema
        name = "open_run_ids" if open_only else "run_ids"

        async def read(connection: Any) -> list[str]:
            cursor = await connection.execute(self._sql[name])
            return [run_id for (run_id,) in await cursor.fetchall()]

        return await self._on("", read)

    async def is_held(self, run_id: str) -> bool:
        """Asked of the server's `pg_locks` for the run's advisory lock, without taking it."""
        if check_run_id(run_id) in self._held:
            return True  # a driver of this checkpointer
        key = lock_key(self.schema, run_id) & 0xFFFF_FFFF_FFFF_FFFF  # as unsigned 64 bits
        row = await self._on(run_id, lambda c: self._fetchone(c, "is_held", divmod(key, 1 << 32)))
        return bool(row[0])

    async def close(self) -> None:
        """Close the connections of runs not held (a later call reopens them)."""
        links, self._idle = [*self._shared.values(), *self._idle], []
        self._shared = {}
        for link in links:
            self._links.discard(link)
            await close_link(link)

    # ── the lock ──────────────────────────────────────────────────────────────────────────

    async def _try_hold(self, run_id: str) -> Callable[[], Awaitable[None]] | None:
        """Take the run's advisory lock; the function that releases it, or None when busy.

        While held, the run's reads and writes go over the lock's own connection.

        A run held through this checkpointer stays held until its driver lets go, even when
        the server has dropped the lock (it ended the session): the driver does not know yet,
        and every call for the run is routed by run id alone, so a second driver here would
        share its calls with it. The first finds out at its next call, and lets go. Another
        process may take the run meanwhile: the first driver's calls then fail."""
        held = self._held.get(run_id)
        if held is not None:
            if not held.loop.is_closed():
                return None
            del self._held[run_id]  # held in an event loop closed without letting go
            self._drop(held)
        key = lock_key(self.schema, run_id)
        link = await self._try_lock(key)
        if link is None:
            return None
        self._held[run_id] = link

        async def release() -> None:
            try:
                await self._unlock(link, key)
            finally:
                if self._held.get(run_id) is link:
                    del self._held[run_id]

        return release

    async def _try_lock(self, key: int) -> Link | None:
        """A connection holding the run's advisory lock, or None when another session holds it.

        A connection kept idle may have died meanwhile (the server restarted): then one more
        try, on a new connection."""
        link = self._take_idle()
        if link is not None:
            try:
                return await self._lock_on(link, key)
            except StoreUnavailable:
                pass
        return await self._lock_on(await self._connect(), key)

    async def _lock_on(self, link: Link, key: int) -> Link | None:
        try:
            cursor = await link.connection.execute(self._sql["try_lock"], (key,))
            (locked,) = await cursor.fetchone()
        except BaseException as exc:
            self._drop(link)
            if lost(exc, self._psycopg):
                raise unavailable(self.location, exc) from exc
            raise
        if not locked:
            self._keep_idle(link)
        return link if locked else None

    async def _unlock(self, link: Link, key: int) -> None:
        try:
            cursor = await link.connection.execute(self._sql["unlock"], (key,))
            (unlocked,) = await cursor.fetchone()
        except BaseException as exc:
            self._drop(link)  # the session ends, and its lock with it
            if lost(exc, self._psycopg):
                return  # the connection was lost: the server already dropped the lock
            raise
        if unlocked:
            self._keep_idle(link)
        else:  # never expected; a session whose locks we cannot account for is not reused
            self._drop(link)

    def _drop(self, link: Link) -> None:
        self._links.discard(link)
        link.abandon()

    def _take_idle(self) -> Link | None:
        while self._idle:
            link = self._idle.pop()
            if link.usable():
                return link
            self._drop(link)
        return None

    def _keep_idle(self, link: Link) -> None:
        if len(self._idle) < _IDLE_LOCK_CONNECTIONS and link.usable():
            self._idle.append(link)
        else:
            self._drop(link)

    # ── connections ───────────────────────────────────────────────────────────────────────

    async def _on(self, run_id: str, work: Callable[[Any], Awaitable[T]]) -> T:
        """Run `work` on the connection holding `run_id` when a task of this event loop holds it
        through this checkpointer, or on this loop's shared one (a reader in another thread).

        A held run never moves to another connection: if the one holding its lock is gone, so
        is the lock, and the run must stop. The shared connection may have died while unused
        (the server restarted): every call is idempotent, so it is tried once more on a new
        connection."""
        held = self._held.get(run_id)
        loop = asyncio.get_running_loop()
        if held is not None and held.loop is loop:  # held by a task of this event loop
            if not held.usable():
                raise StoreUnavailable(
                    self.location,
                    f"the connection holding run {run_id!r} was lost, and its lock with it",
                )
            return await self._run(held, work)
        shared = self._shared.get(loop)
        fresh = shared is None or not shared.usable()
        try:
            return await self._run(await self._shared_link(), work)
        except StoreUnavailable:
            if fresh:
                raise
        return await self._run(await self._shared_link(), work)

    async def _shared_link(self) -> Link:
        """This event loop's shared connection. Each loop has its own: a connection belongs to
        the loop that made it, and threads with loops of their own may share a checkpointer."""
        loop = asyncio.get_running_loop()
        for other, link in list(self._shared.items()):
            if other.is_closed() or (other is loop and not link.usable()):
                if self._shared.pop(other, None) is link:  # threads may purge at once
                    self._drop(link)  # lost, or made in an event loop that has ended
        if loop not in self._shared:
            link = await self._connect()
            if loop not in self._shared:
                self._shared[loop] = link
            else:  # another call connected meanwhile: this one waits for a hold
                self._keep_idle(link)
        return self._shared[loop]

    async def _run(self, link: Link, work: Callable[[Any], Awaitable[T]]) -> T:
        async with link.lock:
            try:
                return await work(link.connection)
            except self._psycopg.Error as exc:
                refused = refusal(exc, link.connection, self.location, self.schema)
                if refused is not None:  # the session is still fine
                    raise refused from exc
                if not lost(exc, self._psycopg):
                    raise
                self._drop(link)
                raise unavailable(self.location, exc) from exc
            except (asyncio.CancelledError, KeyboardInterrupt):
                self._drop(link)  # stopped mid-statement: the session's state is unknown
                raise

    async def _has_journal(self) -> bool:
        """Whether the schema holds a journal, asked on a connection of its own that never
        prepares the schema (which would create it)."""
        link = await self._connect(prepare=False)
        try:
            row = await self._run(
                link, lambda c: self._fetchone(c, "has_journal", (f'"{self.schema}".meta',))
            )
        finally:
            self._links.discard(link)
            await close_link(link)
        return bool(row[0])

    async def _connect(self, *, prepare: bool = True) -> Link:
        try:
            connection = await self._psycopg.AsyncConnection.connect(self.url, **self._options)
        except self._psycopg.Error as exc:
            raise StoreUnreachable(self.location, hide_password(self.url, first_line(exc))) from exc
        link = Link(connection, asyncio.get_running_loop(), asyncio.Lock())
        self._links.add(link)
        try:
            # The journal's statements are written for read committed: each sees what others
            # committed, and the run's row lock orders its writers. Under a server (or a role,
            # or a URL) defaulting to repeatable read or serializable, a checkpointer that
            # waited for another to create the schema would miss it, and a writer that waited
            # for a run's row would fail to serialize. Transactions say so as they begin
            # (psycopg adds it to BEGIN: no round trip); the session's settings that differ
            # from what the journal needs (`prepare` reads them once) are set on each new
            # connection, in one round trip, only when there are any.
            await connection.set_isolation_level(self._psycopg.IsolationLevel.READ_COMMITTED)
            if prepare and not self._prepared:
                settings = await prepare_schema(connection, self.schema, self.location)
                self._setup = session_setup(settings)
                self._prepared = True
            if prepare and self._setup:
                await connection.execute(self._setup)
        except BaseException as exc:
            self._drop(link)
            if lost(exc, self._psycopg):
                raise unavailable(self.location, exc) from exc
            refused = forbidden(exc, connection, self.location, self.schema)
            if refused is not None:
                raise refused from exc
            raise
        return link

    # ── statements ────────────────────────────────────────────────────────────────────────

    async def _fetchone(self, connection: Any, name: str, params: tuple[Any, ...]) -> Any:
        cursor = await connection.execute(self._sql[name], params)
        return await cursor.fetchone()


def lock_key(schema: str, run_id: str) -> int:
    """The advisory lock of a run: 64 bits of a hash of its schema and id (`is_held` looks for
    it in `pg_locks`). Two runs sharing a key (odds of 2**-64) would only be told "busy" while
    the other runs."""
    return int.from_bytes(
        hashlib.sha256(f"{schema}\0{run_id}".encode()).digest()[:8], "big", signed=True
    )
