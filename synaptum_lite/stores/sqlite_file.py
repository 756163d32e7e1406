"""The SQLite journal's file: which files a journal may be, and the one connection to it.

Everything the SQLite store does to defend its file lives here, so that `sqlite.py` only
stores. A `JournalFile` hands the store a connection inside `reading` or `writing`, and:

- opens only one plain file with one name (`journal_path`, `runlock.refuse_odd_files`): no
  `file:` URI, no `:memory:`, no folder, device or pipe, no file with several hard links, a
  relative path or a symlink resolved once, for as long as the store lives;
- checks the file is a journal this version reads before anything else (`NotAJournal`,
  `UnsupportedFormat`), and creates one in a new or blank file only when asked to write;
- before this process first writes, runs SQLite's `quick_check`, and never writes into a file
  found damaged (`DamagedStore`);
- after every write, checks the file and its `-wal` and `-shm` are still the ones it opened
  (`StoreReplaced`, `StoreUnavailable`);
- keeps this process's lock descriptor on the file open while connected (`runlock.py`), so
  closing a descriptor never drops a lock; and turns SQLite's errors into the journal's.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator

from ..checkpointer import FORMAT_VERSION
from ..errors import (
    ConfigurationError,
    CorruptJournal,
    DamagedStore,
    LockFailed,
    NotAJournal,
    StoreFull,
    StoreReplaced,
    StoreUnavailable,
    UnsupportedFormat,
)
from . import runlock

APPLICATION_ID = 0x53594E4C  # "SYNL", in the file's header: a synaptum_lite journal
# The write-ahead log is folded into the file every 256 pages (1 MB) rather than SQLite's
# 1,000: the next opener after a kill reads back the log since the last fold before its first
# statement, 1.4 ms for 4 MB against 0.33 ms for 1 MB here.
CHECKPOINT_PAGES = 256
# SQLite's primary result codes told apart (`sqlite_errorcode` is the extended code; its low
# byte is the primary one)
READONLY, CORRUPT, FULL, CANTOPEN, NOTADB = 8, 11, 13, 14, 26


def journal_path(path: str | os.PathLike[str]) -> str:
    """The journal file's real path, resolved once: the run lock and SQLite must open the same
    file for as long as the store lives, whatever happens to the working folder or to a
    symlink on the way afterwards. An absolute path is also never read by SQLite as a URI.
    Raises `ConfigurationError` for what names no file of its own."""
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


class JournalFile:
    """The one connection to a journal file, used by one caller at a time (callers may be in
    several threads, each with its own event loop)."""

    def __init__(self, path: str, name: str, durability: str, schema: str) -> None:
        self.path = path
        self.name = name  # as errors show it
        self.durability = durability
        self.schema = schema  # the tables a new journal is given (sqlite.py)
        self.connection: sqlite3.Connection | None = None
        self.serialized = threading.Lock()
        self.locked: runlock.LockedFile | None = None  # this process's lock descriptor
        self.checked = False  # quick_check ran before this process first wrote
        self.damage: str | None = None  # what showed the file damaged, once seen
        self.files: tuple[tuple[int, int] | None, ...] = ()  # the file, -wal, -shm, opened

    @contextlib.contextmanager
    def reading(
        self, run_id: str, position: Callable[[], int | None] = lambda: None
    ) -> Iterator[sqlite3.Connection]:
        """The connection (a new or blank file is made a journal first). SQLite finding the
        file damaged is `CorruptJournal` naming `run_id` and the `position` being read (None:
        its header)."""
        with self.serialized, self._errors():
            connection = self._connect(create=True)
            assert connection is not None
            try:
                yield connection
            except sqlite3.DatabaseError as exc:
                if _code(exc) != CORRUPT:
                    raise
                corrupt = CorruptJournal(run_id, position(), f"SQLite: {exc}")
                self.damage = self.damage or f"{corrupt.detail}, reading run {run_id!r}"
                raise corrupt from exc

    def holds_journal(self) -> bool:
        """Whether the file is a journal already, asked without making a new or blank file
        one (a file that is something else raises, as `reading` does)."""
        with self.serialized, self._errors():
            return self._connect(create=False) is not None

    @contextlib.contextmanager
    def writing(self, run_id: str) -> Iterator[sqlite3.Connection]:
        """The connection inside one `BEGIN IMMEDIATE` transaction, committed when the block
        ends; never into a damaged file, and checked to be still this journal's afterwards."""
        with self.serialized, self._errors():
            connection = self._connect(create=True)
            assert connection is not None
            self._refuse_damage(run_id, connection)
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                # SQLite may have rolled back already (a full disk does): the first error is
                # the one to report, never "cannot rollback - no transaction is active"
                if connection.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        connection.execute("ROLLBACK")
                raise
            self._keep_log(connection)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self.locked is not None:
            runlock.leave_file(self.locked)
            self.locked = None

    def _refuse_damage(self, run_id: str, connection: sqlite3.Connection) -> None:
        """Before this process first writes, SQLite checks the file's structure (0.18 s for a
        140 MB journal here), so a new run is not written into a file damaged elsewhere."""
        if self.damage is None and not self.checked:
            try:
                rows = [row[0] for row in connection.execute("PRAGMA quick_check(3)")]
                problems = "" if rows == ["ok"] else "; ".join(rows)
            except sqlite3.DatabaseError as exc:  # too damaged for the check to finish
                if _code(exc) != CORRUPT:
                    raise
                problems = str(exc)
            if problems:
                self.damage = f"SQLite's quick_check: {problems}"
            self.checked = True
        if self.damage is not None:
            raise DamagedStore(self.name, f"{self.damage}; run {run_id!r} was not written")

    def _keep_log(self, connection: sqlite3.Connection) -> None:
        """Make sure what was just committed is in the journal's own files, with their names,
        before the caller yields it.

        A commit lands in the write-ahead log (`<name>-wal`), which SQLite keeps open: a log
        deleted while the journal is open still takes every commit, and they all vanish when
        the process dies. A deleted or replaced index (`<name>-shm`) lets the next process
        build another one, and two processes that do not see each other's writes can damage
        the file. A journal file replaced under its name pairs this connection's log with
        another file. So after each write the three files must still be the ones opened
        (three `stat` calls): if not, the log still open is folded into its own file (a
        synced checkpoint) and the connection closed; the next call opens the journal anew."""
        if _files_of(self.path) == self.files:
            return
        replaced = _identity(self.path) != self.files[0]
        try:
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
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

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as the journal's."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            code = _code(exc)
            if code == NOTADB:  # text, zeros, anything without SQLite's header
                self.close()
                raise NotAJournal(self.name, f"SQLite says: {exc}") from exc
            if code == CORRUPT:
                self.damage = self.damage or f"SQLite: {exc}"
                raise DamagedStore(self.name, f"SQLite: {exc}") from exc
            if code == FULL:
                raise StoreFull(self.name, f"SQLite: {exc}") from exc
            if code == READONLY:
                raise StoreUnavailable(
                    self.name, f"this process may only read the file; SQLite says: {exc}"
                ) from exc
            folder = os.path.dirname(self.path)
            if code == CANTOPEN and not os.access(folder, os.W_OK):
                raise StoreUnavailable(
                    self.name,
                    "SQLite cannot open it: this process may not write in its folder "
                    f"{os.path.basename(folder) or folder}, and SQLite keeps two files beside "
                    f"a journal even to read it ({self.name}-wal and {self.name}-shm): let this "
                    "process write in the folder, or copy the journal to a folder it can write in",
                ) from exc
            if code == CANTOPEN:
                raise StoreUnavailable(self.name, f"SQLite cannot open it: {exc}") from exc
            raise StoreUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        """The open connection; None when `create` is false and the file is no journal yet."""
        if self.connection is not None:
            return self.connection
        if not create and not os.path.exists(self.path):
            return None
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
            if not self._prepare(connection, create):
                connection.close()
                return None
        except BaseException:
            connection.close()
            raise
        self.connection = connection
        self.files = _files_of(self.path)
        if self.locked is None:
            with contextlib.suppress(LockFailed):  # then no hold can open the file either
                self.locked = runlock.enter_file(self.path)
        return connection

    def _prepare(self, connection: sqlite3.Connection, create: bool) -> bool:
        """Check the file is a journal this version reads, and make a new or blank file one
        when `create`; whether it is one now. Raises `NotAJournal` (another application's
        database) or `UnsupportedFormat`, changing nothing."""
        connection.execute("BEGIN")  # one snapshot: another process may be creating the file
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        tables = {table for (table,) in connection.execute(query)}
        connection.execute("COMMIT")
        if application_id != APPLICATION_ID and (tables or application_id or version):
            if tables:
                what = f"it holds other tables: {', '.join(sorted(tables))}"
            elif application_id:
                what = "another application's id"
            else:
                what = f"another application's version number {version}, and no tables"
            raise NotAJournal(self.name, what)
        if version > FORMAT_VERSION:
            raise UnsupportedFormat(self.name, version, FORMAT_VERSION)
        if application_id == APPLICATION_ID and not {"runs", "events"} <= tables:
            missing = ", ".join(sorted({"runs", "events"} - tables))
            what = f"it is marked as a journal but lacks its tables {missing}"
            raise DamagedStore(self.name, what)
        if application_id != APPLICATION_ID and not create:
            return False  # reading never makes a file a journal
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={self.durability.upper()}")
        connection.execute("PRAGMA busy_timeout=5000")
        connection.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        if application_id != APPLICATION_ID:
            connection.execute("BEGIN IMMEDIATE")  # two processes creating one file: one wins
            if connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                for statement in filter(str.strip, self.schema.split(";")):
                    connection.execute(statement)
                connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                connection.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            connection.execute("COMMIT")
        return True


def _code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


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
