"""The SQLite checkpointer: the embedded default, one plain file. It owns the connection and
what SQLite's errors mean; the tables and statements it runs are in `sqlite_schema.py`.

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
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..checkpointer import RunState, holding, run_state
from ..codec import Encoded, Record, check_run_id, encode_events, encode_header
from ..errors import (
    ConfigurationError,
    CorruptJournal,
    DamagedStore,
    LockFailed,
    NotAJournal,
    StoreFull,
    StoreReplaced,
    StoreUnavailable,
)
from ..events import Step
from . import runlock
from . import sqlite_schema as sql

if TYPE_CHECKING:
    from pathlib import Path

T = TypeVar("T")


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
        self._path = journal_path(path)
        self.durability = durability
        # errors name the file as it was given (a symlink's own name, say)
        self._database = _Database(self._path, os.path.basename(os.fsdecode(path)), durability)
        self._serialized = threading.Lock()
        # the connection ends with its store
        weakref.finalize(self, runlock.close_collected, self._database.close)

    @property
    def path(self) -> Path:
        """The journal file's path."""
        # imported here: a run reads its file through os.path, and pathlib (with urllib.parse,
        # ipaddress and fnmatch) is 3-7 ms of an import
        from pathlib import Path

        return Path(self._path)

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({self._database.name!r})"

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

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        """`start`, then `append`, in one transaction: what `transfer.import_run` uses, so a
        process killed in the middle of an import leaves the run whole or absent, never a
        header without its events (a new run to the agent, which would pay every call and
        repeat every effect again). Returns the run's `next_seq` afterwards."""
        text = encode_header(check_run_id(run_id), header)
        encoded = encode_events(run_id, events)
        return await self._call(self._database.start_with, run_id, text, encoded)

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self._hold(check_run_id(run_id))

    @contextlib.asynccontextmanager
    async def _hold(self, run_id: str) -> AsyncIterator[None]:
        locked = runlock.enter_file(self._path, run_id)
        try:
            store = "sqlite:{}:{}".format(*locked.key)
            async with holding(
                store,
                self._database.name,
                run_id,
                lambda: runlock.lock_run(self._path, locked, run_id),
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


def journal_path(path: str | os.PathLike[str]) -> str:
    """The journal file's real path, resolved once: the run lock and SQLite must open the same
    file for as long as the store lives, whatever happens to the working folder or to a
    symlink on the way afterwards (a relative path read at each use would lock one file and
    write another once the process changes folder). An absolute path is also never read by
    SQLite as a URI. Raises `ConfigurationError` for what names no file of its own."""
    given = os.fsdecode(os.fspath(path))  # a bytes path, as the OS gives names, too
    problem = None
    if not given:
        problem = "it names no file"
    elif given == ":memory:":
        problem = (
            "SQLite would keep that journal in this connection's memory and lose it when the "
            "process ends; use MemoryCheckpointer for a journal in memory"
        )
    elif given.startswith("file:"):
        problem = (
            "it is a URI, and the run lock and SQLite would open two different files; "
            "give the file's path"
        )
    elif given.endswith(("/", os.sep)) or (os.altsep and given.endswith(os.altsep)):
        problem = "it names a folder; give the path of a file inside it, such as runs.db"
    if problem is not None:
        raise ConfigurationError(
            f"SqliteCheckpointer needs a journal file's path, got {given!r}: {problem}"
        )
    return os.path.realpath(given)


class _Database:
    """The connection, and what SQLite's errors mean; its checkpointer calls it one call at a
    time, and the statements are in `sqlite_schema.py`."""

    def __init__(self, path: str, name: str, durability: str) -> None:
        self.path = path
        self.name = name  # as errors show it
        self.durability = durability
        self._connection: sqlite3.Connection | None = None
        self._file: runlock.LockedFile | None = None  # keeps the lock descriptor open (runlock.py)
        self._checked = False  # the file's structure was checked before this process wrote
        self._damage: str | None = None  # what showed the file is damaged, once seen
        self._files: tuple[object, ...] = ()  # the file, its -wal and -shm, opened (`_keep_log`)

    def load(self, run_id: str) -> tuple[Any, Any]:
        return self._run(sql.load, run_id)

    def start(self, run_id: str, header: str) -> None:
        return self._write(sql.start, run_id, header)

    def append(self, run_id: str, encoded: list[Encoded]) -> int:
        return self._write(sql.append, run_id, encoded)

    def start_with(self, run_id: str, header: str, encoded: list[Encoded]) -> int:
        return self._write(sql.start_with, run_id, header, encoded)

    def records(self, run_id: str) -> list[Record]:
        return self._run(sql.records, run_id)

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
                problems = self._run(sql.quick_check)
            except DamagedStore as exc:  # too damaged for the check to finish
                problems = exc.detail.removeprefix("SQLite: ")
            if problems:
                self._damage = f"SQLite's quick_check: {problems}"
            self._checked = True
        if self._damage is not None:
            raise DamagedStore(self.name, f"{self._damage}; run {run_id!r} was not written")
        result = self._run(function, run_id, *args)
        self._keep_log()
        return result

    def _keep_log(self) -> None:
        """Make sure what was just committed is in the journal's own files, with their names,
        before the caller yields it.

        A commit lands in the write-ahead log (`<name>-wal`), which SQLite keeps open: a log
        deleted while the journal is open (a tidy-up script, a person cleaning the folder)
        still takes every commit, and they all vanish when the process dies, then the resume
        pays and does everything again. A deleted or replaced index (`<name>-shm`) lets the
        next process build another one, and two processes that do not see each other's
        writes can damage the file. A journal file replaced under its name (a backup moved
        over it) pairs this connection's log with another file. So after each write the three
        files must still be the ones this connection opened (three `stat` calls, about 6 us):
        if not, the log it still has open is folded into the file it belongs to (a synced
        checkpoint, which also empties the log by that name) and the connection is closed;
        the next call opens the journal anew."""
        if self._connection is None or _files_of(self.path) == self._files:
            return
        replaced = _identity(self.path) != self._files[0]
        try:
            busy, _, _ = self._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            busy, cause = 1, f"SQLite: {exc}"
        else:
            cause = "another connection was reading it"
        self.close()
        if replaced:
            raise StoreReplaced(
                self.name,
                "what it wrote went to the file it had opened, and its last write was not "
                "yielded; nothing was written into the file that now has the name",
            )
        if busy:
            raise StoreUnavailable(
                self.name,
                f"its write-ahead log {self.name}-wal or its index {self.name}-shm was deleted "
                "or replaced while the journal was open, and the last commits could not be "
                f"copied into the file ({cause}); leave the files beside a journal in place",
            )

    def _run(self, function: Callable[..., T], *args: Any) -> T:
        try:
            return function(self._connect(), *args)
        except CorruptJournal as exc:  # a statement found the file damaged in this run
            self._damage = self._damage or f"{exc.detail}, reading run {exc.run_id!r}"
            raise
        except sqlite3.DatabaseError as exc:
            code = sql.primary_code(exc)
            if self._connection is not None and code == sql.SQLITE_NOTADB:
                self.close()
                raise NotAJournal(self.name, "SQLite says: file is not a database") from exc
            if code == sql.SQLITE_CORRUPT:
                self._damage = self._damage or f"SQLite: {exc}"
                raise DamagedStore(self.name, f"SQLite: {exc}") from exc
            if code == sql.SQLITE_FULL:
                raise StoreFull(self.name, f"SQLite: {exc}") from exc
            if code == sql.SQLITE_READONLY:
                raise StoreUnavailable(
                    self.name, f"this process may only read the file; SQLite says: {exc}"
                ) from exc
            raise StoreUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        try:
            os.makedirs(os.path.dirname(self.path) or os.curdir, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                self.name, f"its folder cannot be made: {exc.strerror or exc}"
            ) from None
        try:
            runlock.refuse_odd_files(self.path, os.stat(self.path))
        except FileNotFoundError:
            pass  # SQLite creates it
        except OSError as exc:  # a symlink loop, a name too long, a folder it may not search
            raise StoreUnavailable(
                self.name, f"its path cannot be followed: {runlock.cause(exc)}"
            ) from None
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            sql.prepare(connection, self.name, self.durability)
        except StoreUnavailable as exc:
            connection.close()
            if not isinstance(exc.__cause__, sqlite3.Error):
                raise
            folder = os.path.dirname(self.path)
            if sql.primary_code(exc.__cause__) != sql.SQLITE_CANTOPEN or os.access(folder, os.W_OK):
                raise
            raise StoreUnavailable(
                self.name,
                f"SQLite cannot open it: this process may not write in its folder "
                f"{os.path.basename(folder) or folder}, and SQLite keeps two files beside a "
                f"journal even to read it ({self.name}-wal and {self.name}-shm): let this "
                "process write in the folder, or copy the journal to a folder it can write in",
            ) from exc.__cause__
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._files = _files_of(self.path)
        if self._file is None:
            with contextlib.suppress(LockFailed):  # then no hold can open the file either
                self._file = runlock.enter_file(self.path)
        return connection


def _files_of(path: str) -> tuple[tuple[int, int] | None, ...]:
    """The identity of the journal file, and of the write-ahead log and the index SQLite keeps
    beside it (None for one that does not exist)."""
    return _identity(path), _identity(path + "-wal"), _identity(path + "-shm")


def _identity(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino
