"""The SQLite checkpointer: the embedded default, one plain file. The only module that writes SQL
for SQLite.

The file is opened in WAL mode. `durability="full"` (the default) syncs every commit, so an
appended event survives a power loss; `durability="normal"` syncs at checkpoints only, which
is faster and still survives the process being killed, but a power loss may take the last
commits. Every call runs in place, on the caller's thread (see `SqliteCheckpointer._call`).

One driver per run: `hold` takes an open-file-description lock on one byte of the journal
file itself, chosen by the run id, so every name of the file reaches the same lock (on macOS,
a `flock` on a file per run in `<file>.locks/`). The kernel drops it when its owner dies, so a
killed worker never blocks the resume. Where the platform runs one process and has no OS file
locks (Pyodide, WASI), the run lock is this process's own record of the runs it holds.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import struct
import sys
import threading
import weakref
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

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

# ── one driver per run: a lock on the database file itself ─────────────────────────────────
#
# A run's lock is taken on the journal file, not on a file beside it: every name of the file
# (relative, absolute, through a symlink) reaches the same lock, and there is no lock file to
# delete. On Linux it is an open-file-description lock on one byte of the file,
# at an offset chosen by the run id, far above the bytes SQLite locks (512 from 0x40000000):
# locks past the end of a file are allowed, change nothing in it, and never meet SQLite's.
#
# The descriptor that holds these locks must outlive every SQLite connection of this process
# to the file: closing *any* descriptor of a file drops the POSIX locks the process holds on
# it, SQLite's own included (its shared lock in WAL mode). So this process opens one
# descriptor per file (by device and inode), shared by every hold and every connection, and
# closes it when the last of them ends. (A `sqlite3` connection the program opens itself is
# not counted; closing any descriptor of the file under it is SQLite's own known hazard.)
#
# Where there are no open-file-description locks (macOS), each run is a `flock` on a file of
# its own in `<real path>.locks/`: it follows relative names and symlinks.
#
# A file with several hard links is refused everywhere: SQLite keeps its write-ahead log and
# its index beside the name it was given (`<name>-wal`, `<name>-shm`), so two names of one
# file would each see a different journal, and could damage it.

_OFD_LOCK = struct.Struct("hhqqi4x")  # struct flock on Linux: type, whence, start, len, pid
_RUN_LOCKS_FROM = 1 << 62  # byte offsets of run locks: [2**62, 2**62 + 2**61)
_BUSY = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)  # the lock is held by another


@dataclass(eq=False)
class _LockedFile:
    """This process's lock descriptor on one database file, and the runs it holds."""

    key: tuple[int, int]  # (st_dev, st_ino)
    fd: int
    writable: bool
    users: int = 0  # holds under way and open connections of this process
    held: set[int] = field(default_factory=set)  # run offsets held in this process


_FILES: dict[tuple[int, int], _LockedFile] = {}
_FILES_LOCK = threading.Lock()
_PARKED: list[int] = []  # descriptors that must stay open (see `_enter_file`)


def _enter_file(database: Path, run_id: str = "") -> _LockedFile:
    """The lock descriptor of the file at `database`, counted as one more user.

    Creates the file (empty: SQLite makes it a database) when it does not exist. A file this
    process may only read is opened read-only: its runs can then be read, never driven.
    Raises `LockFailed` naming the file and the cause."""
    _close_unreachable()
    with _FILES_LOCK:
        try:
            stat = os.stat(database)
            _refuse_hard_links(database, stat)
            key = _identity(stat)
        except FileNotFoundError:
            key = None
        except OSError as exc:
            raise LockFailed(database.name, run_id, _cause(exc)) from None
        locked = _FILES.get(key) if key is not None else None
        if locked is None:
            fd, writable = _open_for_locks(database, run_id)
            key = _identity(os.fstat(fd))
            locked = _FILES.get(key)
            if locked is None:
                locked = _FILES[key] = _LockedFile(key, fd, writable)
            else:  # the file was replaced between stat and open: keep the known descriptor
                _PARKED.append(fd)  # never closed: closing would drop this process's locks
        locked.users += 1
        return locked


def _refuse_hard_links(database: Path, stat: os.stat_result) -> None:
    if stat.st_nlink > 1:
        raise ConfigurationError(
            f"the journal {database.name} has {stat.st_nlink} names (hard links); SQLite keeps "
            "its write-ahead log beside each name, so each name would see another journal: "
            "remove the other links and use one name (a symlink is fine)"
        )


def _leave_file(locked: _LockedFile) -> None:
    with _FILES_LOCK:
        locked.users -= 1
        if locked.users == 0 and not locked.held:
            del _FILES[locked.key]
            os.close(locked.fd)  # nobody here holds a run or a connection on this file
    _close_unreachable()


_UNREACHABLE: list[_Database] = []  # connections of collected stores, not yet closed


def _collected(database: _Database) -> None:
    """Close the connection of a store nobody can reach any more (its finalizer).

    The garbage collector may run this in a thread that holds `_FILES_LOCK` (in the middle of
    `_enter_file`, say), where taking the lock again would wait forever: then the connection
    is closed by the next `_enter_file` or `_leave_file`, outside the lock."""
    _UNREACHABLE.append(database)
    if _FILES_LOCK.acquire(blocking=False):
        _FILES_LOCK.release()
        _close_unreachable()


def _close_unreachable() -> None:
    while True:
        try:
            database = _UNREACHABLE.pop()
        except IndexError:  # another thread took the last one
            return
        database.close()


def _open_for_locks(database: Path, run_id: str) -> tuple[int, bool]:
    try:
        database.parent.mkdir(parents=True, exist_ok=True)
        return os.open(database, os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o644), True
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise LockFailed(database.name, run_id, _cause(exc)) from None
    try:
        return os.open(database, os.O_RDONLY | _CLOEXEC), False
    except OSError as exc:
        raise LockFailed(database.name, run_id, _cause(exc)) from None


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return stat.st_dev, stat.st_ino


def _cause(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{name}: {exc.strerror or exc}"


def _lock_run(database: Path, locked: _LockedFile, run_id: str) -> Callable[[], None] | None:
    """Lock `run_id` of the file `locked`; the function that releases it, or None when another
    driver (in this process or another) holds it.

    A read-only file gets a shared lock: any number of readers, never while a driver holds
    the run. Raises `LockFailed` when locking fails for another reason (the file system has no
    locks, say), and `ConfigurationError` where there are no POSIX file locks at all."""
    digest = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big")
    offset = _RUN_LOCKS_FROM + (digest >> 3)
    if _single_process_platform():
        return _hold_in_process(locked, offset)
    try:
        import fcntl  # imported here: the package itself imports on any platform
    except ImportError:
        raise ConfigurationError(
            "SqliteCheckpointer needs POSIX file locks (Linux or macOS) to give a run one "
            "driver; on this platform use MemoryCheckpointer or PostgresCheckpointer"
        ) from None
    ofd = getattr(fcntl, "F_OFD_SETLK", None)
    with _FILES_LOCK:
        if offset in locked.held:
            return None
        if ofd is None:
            release = _flock_run(database, offset, run_id, fcntl)
        else:
            kind = fcntl.F_WRLCK if locked.writable else fcntl.F_RDLCK
            try:
                fcntl.fcntl(locked.fd, ofd, _OFD_LOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
            except OSError as exc:
                if exc.errno in _BUSY:
                    return None
                raise LockFailed(database.name, run_id, _cause(exc)) from None

            def release() -> None:
                unlock = _OFD_LOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, offset, 1, 0)
                fcntl.fcntl(locked.fd, ofd, unlock)

        if release is None:
            return None
        locked.held.add(offset)

    def release_run() -> None:
        with _FILES_LOCK:
            try:
                release()
            finally:
                locked.held.discard(offset)

    return release_run


def _single_process_platform() -> bool:
    """True where this Python is the only process that reaches its files and the OS has no
    file locks to give: Pyodide (Emscripten) and WASI.

    There `fcntl` exists but locks nothing (under Pyodide 314, `F_OFD_SETLK` fails with
    EINVAL and `flock` succeeds on two descriptors of one file at once), so none is attempted.
    Files the host shares with another process (a Node `NODEFS` mount, say) are not
    protected between those processes: each Pyodide is its own single process."""
    return sys.platform in ("emscripten", "wasi")


def _hold_in_process(locked: _LockedFile, offset: int) -> Callable[[], None] | None:
    """The run lock of a single-process platform: exact, because every driver is in `held`."""
    with _FILES_LOCK:
        if offset in locked.held:
            return None
        locked.held.add(offset)

    def release_run() -> None:
        with _FILES_LOCK:
            locked.held.discard(offset)

    return release_run


def _flock_run(database: Path, offset: int, run_id: str, fcntl: Any) -> Callable[[], None] | None:
    """Where there are no open-file-description locks: `flock` on a file of the run's own."""
    real = Path(os.path.realpath(database))
    path = real.with_name(real.name + ".locks") / f"{offset:x}.lock"
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o644)
    except OSError as exc:
        raise LockFailed(database.name, run_id, _cause(exc)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in _BUSY:
            return None
        raise LockFailed(database.name, run_id, _cause(exc)) from None
    return lambda: os.close(fd)  # closing the description releases its lock


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
        weakref.finalize(self, _collected, self._database)  # the connection ends with its store

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
        locked = _enter_file(self.path, run_id)
        try:
            store = "sqlite:{}:{}".format(*locked.key)
            async with holding(
                store, self.path.name, run_id, lambda: _lock_run(self.path, locked, run_id)
            ):
                yield
        finally:
            _leave_file(locked)

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
        self._file: _LockedFile | None = None  # keeps the lock descriptor open (see above)
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
            _leave_file(self._file)
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
            _refuse_hard_links(self.path, os.stat(self.path))
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._prepare(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        if self._file is None:
            with contextlib.suppress(LockFailed):  # then no hold can open the file either
                self._file = _enter_file(self.path)
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
    if isinstance(data, bytes):
        try:
            data = zlib.decompress(data).decode()
        except (zlib.error, UnicodeDecodeError) as exc:
            data = f"<undecodable: {exc}>"  # decode() turns this into CorruptJournal with the seq
    return Record(seq, step_id, phase, attempt, data)
