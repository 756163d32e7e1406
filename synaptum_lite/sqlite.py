"""The SQLite checkpointer: the embedded default, one plain file. The only module that writes SQL
for SQLite.

The file is opened in WAL mode. `durability="full"` (the default) syncs every commit, so an
appended event survives a power loss; `durability="normal"` syncs at checkpoints only, which
is faster and still survives the process being killed, but a power loss may take the last
commits. Every call runs in place, on the caller's thread (see `SqliteCheckpointer._call`).

One driver per run: `hold` takes the run's lock on the journal file itself (`runlock.py`), so
every name of the file reaches the same lock, and the OS drops it when its owner dies.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from . import runlock
from .errors import (
    ConfigurationError,
    CorruptJournal,
    DamagedStore,
    LockFailed,
    NotAJournal,
    StoreFull,
    StoreUnavailable,
    UnsupportedFormat,
)
from .events import Record, Step
from .journal import (
    FORMAT_VERSION,
    Encoded,
    RunState,
    check_run_id,
    encode_events,
    encode_header,
    holding,
    is_final,
    never_started,
    run_state,
)

T = TypeVar("T")

# The file says what it is: `application_id` marks a synaptum_lite journal and
# `user_version` is its format. Events live in a rowid table (rows of a kilobyte or more
# pack well there) whose rowid is `run << 32 | seq`: a run's journal is one contiguous range
# of the table, read in order with no index, and the final event is one lookup
# (`runs.final_event`). The only index is the event key, which makes appending an already
# journaled event a no-op. `data` is JSON text, or zlib-compressed JSON (a BLOB) when that
# saves at least a tenth of a record of 256 bytes or more.
APPLICATION_ID = 0x53594E4C  # "SYNL"
_SCHEMA = (
    """CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    header TEXT NOT NULL,
    next_seq INTEGER NOT NULL DEFAULT 0,
    final_event INTEGER
)""",
    """CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    step_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    data NOT NULL,
    UNIQUE (run, step_id, phase, attempt)
)""",
)
# Compression pays its rent in bytes, not time: benchmarks/core_journal.py (N=200 and 400,
# medians of 3, side by side) measured a prose-like journal at 1.01-1.05 x its payload with it
# and 1.85-1.89 x without (0.56 x the file), at the same CPU per step (0.76-0.79 ms against
# 0.75-0.77 ms, within the noise).
_COMPRESS_FROM = 256


class SqliteCheckpointer:
    """A journal in one SQLite file (created on first use, with its parent directory).

    Raises `NotAJournal` when the file holds something else, and `UnsupportedFormat` when it
    was written by a newer format version; neither changes the file.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, durability: Literal["full", "normal"] = "full"
    ) -> None:
        if durability not in ("full", "normal"):
            raise ConfigurationError(
                "durability must be 'full' (survives power loss) or 'normal' (faster), "
                f"got {durability!r}"
            )
        self.path = Path(path)
        self.durability = durability
        self._database = _Database(self.path, durability)
        self._serialized = threading.Lock()
        # the connection ends with its store
        weakref.finalize(self, runlock.close_collected, self._database.close)

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({self.path.name!r})"

    # ── the protocol ──────────────────────────────────────────────────────────────────────

    async def load(self, run_id: str) -> RunState:
        row, final = await self._call(self._database.load, check_run_id(run_id))
        return run_state(run_id, row[0] if row else None, row[1] if row else 0, final)

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        text = encode_header(check_run_id(run_id), header)
        await self._call(self._database.start, run_id, text)

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        encoded = encode_events(run_id, events)
        return await self._call(self._database.append, run_id, encoded)

    async def records(self, run_id: str) -> list[Record]:
        return await self._call(self._database.records, check_run_id(run_id))

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self._hold(check_run_id(run_id))

    @contextlib.asynccontextmanager
    async def _hold(self, run_id: str) -> AsyncIterator[None]:
        locked = runlock.enter_file(self.path, run_id)
        try:
            store = "sqlite:{}:{}".format(*locked.key)
            async with holding(
                store, self.path.name, run_id, lambda: runlock.lock_run(self.path, locked, run_id)
            ):
                yield
        finally:
            runlock.leave_file(locked)

    async def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        await self._call(self._database.close)

    # ── one connection, called in place ───────────────────────────────────────────────────
    #
    # Every call runs on the caller's own thread, inside its event loop: no worker thread, so
    # the store also works where threads do not exist (Pyodide). A worker thread paid no rent:
    # measured here it cost 0.3 ms of CPU per step (1.1 against 0.8 at N=200), and 20 runs
    # sharing one loop finished sooner without it (0.70 s against 0.94 s), because one
    # connection commits one transaction at a time anyway. The lock serializes callers from
    # several threads, each with its own event loop, on the one connection.

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        with self._serialized:
            return function(*args)


class _Database:
    """The connection and every statement; its checkpointer calls it one call at a time."""

    def __init__(self, path: Path, durability: str) -> None:
        self.path = path
        self.durability = durability
        self._connection: sqlite3.Connection | None = None
        self._file: runlock.LockedFile | None = None  # keeps the lock descriptor open (runlock.py)
        self._checked = False  # the file's structure was checked before this process wrote
        self._damage: str | None = None  # what showed the file is damaged, once seen

    def load(self, run_id: str) -> tuple[Any, Any]:
        return self._run(self._load, run_id)

    def start(self, run_id: str, header: str) -> None:
        return self._write(self._start, run_id, header)

    def append(self, run_id: str, encoded: list[Encoded]) -> int:
        return self._write(self._append, run_id, encoded)

    def records(self, run_id: str) -> list[Record]:
        return self._run(self._records, run_id)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._file is not None:
            runlock.leave_file(self._file)
            self._file = None

    def _write(self, function: Callable[..., T], run_id: str, *args: Any) -> T:
        """Run a statement that writes, never into a damaged file.

        Before this process first writes, SQLite checks the file's structure (`quick_check`:
        0.18 s for a 140 MB journal here), so a new run is not written into a file already
        damaged elsewhere."""
        if self._damage is None and not self._checked:
            try:
                problems = self._run(_quick_check)
            except DamagedStore as exc:  # too damaged for the check to finish
                problems = exc.detail.removeprefix("SQLite: ")
            if problems:
                self._damage = f"SQLite's quick_check: {problems}"
            self._checked = True
        if self._damage is not None:
            raise DamagedStore(self.path.name, f"{self._damage}; run {run_id!r} was not written")
        return self._run(function, run_id, *args)

    def _run(self, function: Callable[..., T], *args: Any) -> T:
        try:
            return function(self._connect(), *args)
        except CorruptJournal as exc:  # a statement found the file damaged in this run
            self._damage = self._damage or f"{exc.detail}, reading run {exc.run_id!r}"
            raise
        except sqlite3.DatabaseError as exc:
            code = _primary_code(exc)
            if self._connection is not None and code == _SQLITE_NOTADB:
                self.close()
                raise NotAJournal(self.path.name, "SQLite says: file is not a database") from exc
            if code == _SQLITE_CORRUPT:
                self._damage = self._damage or f"SQLite: {exc}"
                raise DamagedStore(self.path.name, f"SQLite: {exc}") from exc
            if code == _SQLITE_FULL:
                raise StoreFull(self.path.name, f"SQLite: {exc}") from exc
            if code == _SQLITE_READONLY:
                raise StoreUnavailable(
                    self.path.name, f"this process may only read the file; SQLite says: {exc}"
                ) from exc
            raise StoreUnavailable(self.path.name, f"{type(exc).__name__}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            runlock.refuse_hard_links(self.path, os.stat(self.path))
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._prepare(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        if self._file is None:
            with contextlib.suppress(LockFailed):  # then no hold can open the file either
                self._file = runlock.enter_file(self.path)
        return connection

    def _prepare(self, connection: sqlite3.Connection) -> None:
        try:
            connection.execute("BEGIN")  # one snapshot: another process may be creating the file
            application_id = connection.execute("PRAGMA application_id").fetchone()[0]
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                name
                for (name,) in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                )
            }
            connection.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if _primary_code(exc) == _SQLITE_CANTOPEN:
                raise StoreUnavailable(self.path.name, f"SQLite cannot open it: {exc}") from exc
            raise NotAJournal(self.path.name, f"SQLite says: {exc}") from exc
        if application_id != APPLICATION_ID and (tables or application_id):
            what = (
                f"it holds other tables: {', '.join(sorted(tables))}"
                if tables
                else "another application's id"
            )
            raise NotAJournal(self.path.name, what)
        if version > FORMAT_VERSION:
            raise UnsupportedFormat(self.path.name, version, FORMAT_VERSION)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={self.durability.upper()}")
        connection.execute("PRAGMA busy_timeout=5000")
        if application_id != APPLICATION_ID:
            connection.execute("BEGIN IMMEDIATE")  # two processes creating one file: one wins
            if connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                connection.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            connection.execute("COMMIT")

    @staticmethod
    def _load(connection: sqlite3.Connection, run_id: str) -> tuple[Any, Any]:
        with _damage_names(run_id, None):
            row = connection.execute(
                "SELECT header, next_seq, final_event FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None or row[2] is None:
            return row, None
        with _damage_names(run_id, row[2] & 0xFFFFFFFF):
            final = connection.execute(
                "SELECT id & 4294967295, step_id, phase, attempt, data FROM events WHERE id = ?",
                (row[2],),
            ).fetchone()
        return row, _record(final)

    @staticmethod
    def _start(connection: sqlite3.Connection, run_id: str, header: str) -> None:
        connection.execute(
            "INSERT OR IGNORE INTO runs (run_id, header) VALUES (?, ?)", (run_id, header)
        )

    @staticmethod
    def _append(connection: sqlite3.Connection, run_id: str, encoded: list[Encoded]) -> int:
        connection.execute("BEGIN IMMEDIATE")
        try:
            row = connection.execute(
                "SELECT id, next_seq FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise never_started(run_id)
            run, seq = row
            final_event = None
            for step_id, phase, attempt, data in encoded:
                cursor = connection.execute(
                    "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?, ?)",
                    (run << 32 | seq, run, step_id, phase, attempt, _pack(data)),
                )
                if cursor.rowcount:
                    if is_final(step_id):
                        final_event = cursor.lastrowid
                    seq += 1
            connection.execute(
                "UPDATE runs SET next_seq = ?, final_event = coalesce(?, final_event) WHERE id = ?",
                (seq, final_event, run),
            )
            connection.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk does): the first error is the one
            # to report, never "cannot rollback - no transaction is active"
            if connection.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
            raise
        return int(seq)

    @staticmethod
    def _records(connection: sqlite3.Connection, run_id: str) -> list[Record]:
        with _damage_names(run_id, None):
            row = connection.execute("SELECT id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return []
        records: list[Record] = []
        with _damage_names(run_id, lambda: len(records)):  # positions are dense from 0
            for found in connection.execute(
                "SELECT id & 4294967295, step_id, phase, attempt, data FROM events"
                " WHERE id BETWEEN ? AND ? ORDER BY id",
                (row[0] << 32, row[0] << 32 | 0xFFFFFFFF),
            ):
                records.append(_record(found))
        return records


# SQLite's primary result codes this module tells apart (`sqlite3.Error.sqlite_errorcode`
# holds the extended code; its low byte is the primary one)
_SQLITE_READONLY, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = (
    8,
    11,
    13,
    14,
    26,
)


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


@contextlib.contextmanager
def _damage_names(run_id: str, seq: int | Callable[[], int] | None) -> Iterator[None]:
    """Turn SQLite finding the file damaged into `CorruptJournal` naming the run and the
    position being read (None: the run's header)."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if _primary_code(exc) != _SQLITE_CORRUPT:
            raise
        position = seq() if callable(seq) else seq
        raise CorruptJournal(run_id, position, f"SQLite: {exc}") from exc


def _quick_check(connection: sqlite3.Connection) -> str:
    """What SQLite's structural check finds wrong with the file ('' when nothing)."""
    rows = [row[0] for row in connection.execute("PRAGMA quick_check(3)")]
    return "" if rows == ["ok"] else "; ".join(rows)


def _pack(data: str) -> str | bytes:
    if len(data) < _COMPRESS_FROM:
        return data
    raw = data.encode()
    packed = zlib.compress(raw, 1)
    return packed if len(packed) * 10 <= len(raw) * 9 else data


def _record(row: tuple[Any, ...]) -> Record:
    seq, step_id, phase, attempt, data = row
    if not isinstance(data, bytes):
        return Record._make(row)
    try:
        data = zlib.decompress(data).decode()
    except (zlib.error, UnicodeDecodeError) as exc:
        data = f"<undecodable: {exc}>"  # decode() turns this into CorruptJournal with the seq
    return Record(seq, step_id, phase, attempt, data)
