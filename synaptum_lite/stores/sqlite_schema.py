"""The SQLite journal's tables and statements: the only SQL text for SQLite.

`SqliteCheckpointer` (sqlite.py) owns the connection, the run locks and what SQLite's errors
mean; it runs what is written here: `prepare` checks or creates the file's tables, `load`,
`start`, `append` and `records` are one call each, on a connection it gives them.
"""

from __future__ import annotations

import contextlib
import sqlite3
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from ..checkpointer import FORMAT_VERSION, is_final, never_started
from ..codec import Encoded, Record
from ..errors import CorruptJournal, DamagedStore, NotAJournal, StoreUnavailable, UnsupportedFormat

# The file says what it is: `application_id` marks a synaptum_lite journal and
# `user_version` is its format. Events live in a rowid table (rows of a kilobyte or more
# pack well there) whose rowid is `run << 32 | seq`: a run's journal is one contiguous range
# of the table, read in order with no index, and the final event is one lookup
# (`runs.final_event`). The only index is the event key, which makes appending an already
# journaled event a no-op. `data` is JSON text, or zlib-compressed JSON (a BLOB) when that
# saves at least a tenth of a record of 512 bytes or more.
APPLICATION_ID = 0x53594E4C  # "SYNL"
_TABLES = (
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
_TABLE_NAMES = ("runs", "events")
# Compression pays its rent in bytes, not time: benchmarks/core_journal.py (N=200 and 400,
# medians of 3, side by side) measured a prose-like journal at 1.01-1.05 x its payload with it
# and 1.85-1.89 x without (0.56 x the file), at the same CPU per step (0.76-0.79 ms against
# 0.75-0.77 ms, within the noise).
#
# Below 512 B it does not: a model's answer of 300 B saves 90 B, and unpacking any record
# costs about 4 us, more than decoding its JSON, which a resume pays for every record before
# its first call (0.8 ms for 200 such answers).
_COMPRESS_FROM = 512
_SMALL = 1 << 14  # from here zlib's default window pays for itself
# The write-ahead log is folded into the file every 256 pages (1 MB) rather than SQLite's
# 1,000: the next opener after a kill reads back the log since the last fold before its first
# statement, 1.4 ms for 4 MB against 0.33 ms for 1 MB here. Folding four times as often cost
# no CPU per step we could measure (benchmarks/core_journal.py, side by side).
_CHECKPOINT_PAGES = 256


def prepare(connection: sqlite3.Connection, name: str, durability: str) -> None:
    """Check the file `name` is a journal this version reads, create one in an empty file,
    and set the connection's journal mode and durability.

    Raises `NotAJournal` (not SQLite, or another application's database), `UnsupportedFormat`,
    `DamagedStore` (cut short or damaged), or `StoreUnavailable` when SQLite cannot open or
    read the file."""
    try:
        connection.execute("BEGIN")  # one snapshot: another process may be creating the file
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            table
            for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        connection.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        code = primary_code(exc)
        if code == SQLITE_NOTADB:  # text, zeros, anything without SQLite's header
            raise NotAJournal(name, f"SQLite says: {exc}") from exc
        if code == SQLITE_CORRUPT:  # a database cut short, or damaged
            raise DamagedStore(name, f"SQLite: {exc}; nothing was written") from exc
        if code == SQLITE_CANTOPEN:
            raise StoreUnavailable(name, f"SQLite cannot open it: {exc}") from exc
        raise StoreUnavailable(name, f"SQLite: {exc}") from exc  # the disk failed reading it
    if application_id != APPLICATION_ID and (tables or application_id or version):
        if tables:
            what = f"it holds other tables: {', '.join(sorted(tables))}"
        elif application_id:
            what = "another application's id"
        else:
            what = f"another application's version number {version}, and no tables"
        raise NotAJournal(name, what)
    if version > FORMAT_VERSION:
        raise UnsupportedFormat(name, version, FORMAT_VERSION)
    missing = sorted(set(_TABLE_NAMES) - tables) if application_id == APPLICATION_ID else []
    if missing:
        raise DamagedStore(
            name, f"it is marked as a journal but lacks its tables {', '.join(missing)}"
        )
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(f"PRAGMA synchronous={durability.upper()}")
    connection.execute("PRAGMA busy_timeout=5000")
    connection.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
    if application_id != APPLICATION_ID:
        connection.execute("BEGIN IMMEDIATE")  # two processes creating one file: one wins
        if connection.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            for statement in _TABLES:
                connection.execute(statement)
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            connection.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        connection.execute("COMMIT")


def load(connection: sqlite3.Connection, run_id: str) -> tuple[Any, Any]:
    """The run's row (header, next_seq, final_event) and its final record, each None if absent."""
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


def start(connection: sqlite3.Connection, run_id: str, header: str) -> None:
    """Add the run with its header; a run already started is left as it is."""
    connection.execute(
        "INSERT OR IGNORE INTO runs (run_id, header) VALUES (?, ?)", (run_id, header)
    )


def append(connection: sqlite3.Connection, run_id: str, encoded: list[Encoded]) -> int:
    """Write `encoded` at the end of the run's journal in one transaction; the next position."""
    return _in_one_transaction(connection, _append, run_id, encoded)


def start_with(
    connection: sqlite3.Connection, run_id: str, header: str, encoded: list[Encoded]
) -> int:
    """Add the run with its header and its events in one transaction (an import: no process
    ever sees the header without the events); the next position. A run already started keeps
    its header, and gets the events it lacks."""

    def write(connection: sqlite3.Connection, run_id: str) -> int:
        start(connection, run_id, header)
        return _append(connection, run_id, encoded)

    return _in_one_transaction(connection, write, run_id)


def _in_one_transaction(
    connection: sqlite3.Connection, write: Callable[..., int], *args: Any
) -> int:
    connection.execute("BEGIN IMMEDIATE")
    try:
        next_seq = write(connection, *args)
        connection.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk does): the first error is the one
        # to report, never "cannot rollback - no transaction is active"
        if connection.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
        raise
    return next_seq


def _append(connection: sqlite3.Connection, run_id: str, encoded: list[Encoded]) -> int:
    row = connection.execute("SELECT id, next_seq FROM runs WHERE run_id = ?", (run_id,)).fetchone()
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
    return int(seq)


def records(connection: sqlite3.Connection, run_id: str) -> list[Record]:
    """The run's records in order ([] for a run never started)."""
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


# SQLite's primary result codes the store tells apart (`sqlite3.Error.sqlite_errorcode`
# holds the extended code; its low byte is the primary one)
SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = (
    8,
    11,
    13,
    14,
    26,
)


def primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


@contextlib.contextmanager
def _damage_names(run_id: str, seq: int | Callable[[], int] | None) -> Iterator[None]:
    """Turn SQLite finding the file damaged into `CorruptJournal` naming the run and the
    position being read (None: the run's header)."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if primary_code(exc) != SQLITE_CORRUPT:
            raise
        position = seq() if callable(seq) else seq
        raise CorruptJournal(run_id, position, f"SQLite: {exc}") from exc


def quick_check(connection: sqlite3.Connection) -> str:
    """What SQLite's structural check finds wrong with the file ('' when nothing)."""
    rows = [row[0] for row in connection.execute("PRAGMA quick_check(3)")]
    return "" if rows == ["ok"] else "; ".join(rows)


def _pack(data: str) -> str | bytes:
    if len(data) < _COMPRESS_FROM:
        return data
    raw = data.encode()
    if len(raw) >= _SMALL:
        packed = zlib.compress(raw, 1)
    else:
        # A window and hash no larger than the record needs: zlib's defaults (a 32 KB window,
        # a 64 K-entry hash) take longer to set up than a kilobyte takes to compress (50 us
        # against 17 us for 1 KB here). A reader takes the window size from the header.
        bits = max(9, len(raw).bit_length())
        compressor = zlib.compressobj(1, zlib.DEFLATED, bits, bits - 7)
        packed = compressor.compress(raw) + compressor.flush()
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
