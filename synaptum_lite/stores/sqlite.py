"""The SQLite checkpointer: the embedded default, one plain file. It only stores: these two
tables, and one statement or one transaction per call.

An event is one row of `events`, keyed `(run_id, seq)`: `codec.encode` makes the row from the
step and `codec.decode` the step from the row. `runs` keeps each run's header, its next
position and where its final event is, so a closed run is returned with one lookup.

The file is opened in WAL mode. `durability="full"` (the default) syncs every commit, so an
appended event survives a power loss; `durability="normal"` syncs at checkpoints only, which
is faster and still survives the process being killed, but a power loss may take the last
commits. Every call runs in place, on the caller's thread: no worker thread, so the store also
works where threads do not exist (Pyodide).

What defends the file (which files a journal may be, its format, `quick_check`, the `-wal`
and `-shm` beside it) is `sqlite_file.py`; one driver per run, a lock the OS drops when its
owner dies, is `runlock.py`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import weakref
import zlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Literal

from ..checkpointer import RunState
from ..codec import Encoded, Record, check_run_id, encode_events, encode_header
from ..errors import ConfigurationError, RunBusy
from ..events import Step
from . import runlock
from .alike import holding, is_final, never_started, run_state
from .sqlite_file import JournalFile, journal_path

# `sqlite_file` creates these in a new file statement by statement: no ";" inside them
SCHEMA = """
CREATE TABLE runs (
    run_id    TEXT PRIMARY KEY,
    header    TEXT NOT NULL,               -- JSON: the agent's configuration and the task
    next_seq  INTEGER NOT NULL DEFAULT 0,  -- how many events the run has
    final_seq INTEGER                      -- where its final event is (NULL: open)
);
CREATE TABLE events (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,              -- 0, 1, 2... with no gap
    step_id TEXT NOT NULL,                 -- 000003-tool
    phase   TEXT NOT NULL,                 -- attempted, completed, resolved
    attempt INTEGER NOT NULL,
    data    NOT NULL,                      -- JSON text, or zlib-compressed JSON: see `pack`
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, step_id, phase, attempt)  -- appending an event twice is a no-op
);
"""

# Compression pays its rent in bytes: benchmarks/core_journal.py at N=200 measured the journal
# of prose-like payloads at 1.12 x the payload with it, 1.94 x without (the guard rail is 2 x).
# Below 512 B it saves little, and unpacking costs more than decoding the JSON.
COMPRESS_FROM = 512


def pack(data: str) -> str | bytes:
    """An event's JSON as stored: compressed (a BLOB) when it is 512 bytes or more and that
    saves at least a tenth, else as text."""
    if len(data) < COMPRESS_FROM:
        return data
    raw = data.encode()
    packed = zlib.compress(raw, 1)
    return packed if len(packed) * 10 <= len(raw) * 9 else data


def _record(seq: int, step_id: str, phase: str, attempt: int, data: str | bytes) -> Record:
    if isinstance(data, bytes):
        try:
            data = zlib.decompress(data).decode()
        except (zlib.error, UnicodeDecodeError) as exc:
            data = f"<undecodable: {exc}>"  # decode() says CorruptJournal, with the position
    return Record(seq, step_id, phase, attempt, data)


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
        self.durability = durability
        # errors name the file as it was given (a symlink's own name, say)
        name = os.path.basename(os.fsdecode(path))
        self._file = JournalFile(journal_path(path), name, durability, SCHEMA)
        weakref.finalize(self, runlock.close_collected, self._file.close)

    @property
    def path(self) -> Path:
        """The journal file's path."""
        return Path(self._file.path)

    def __repr__(self) -> str:
        return f"SqliteCheckpointer({self._file.name!r})"

    # ── the protocol ──────────────────────────────────────────────────────────────────────

    async def load(self, run_id: str) -> RunState:
        with self._file.reading(check_run_id(run_id)) as db:
            row = db.execute(
                "SELECT r.header, r.next_seq, e.seq, e.step_id, e.phase, e.attempt, e.data"
                " FROM runs r LEFT JOIN events e ON e.run_id = r.run_id AND e.seq = r.final_seq"
                " WHERE r.run_id = ?",
                (run_id,),
            ).fetchone()
        if row is None:
            return run_state(run_id, None, 0, None)
        header, next_seq, *final = row
        return run_state(run_id, header, next_seq, None if final[0] is None else _record(*final))

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        text = encode_header(check_run_id(run_id), header)
        with self._file.writing(run_id) as db:
            _start(db, run_id, text)

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        rows = encode_events(run_id, events)
        with self._file.writing(run_id) as db:
            return _append(db, run_id, rows)

    async def records(self, run_id: str) -> list[Record]:
        found: list[Record] = []
        with self._file.reading(check_run_id(run_id), lambda: len(found)) as db:
            query = "SELECT seq, step_id, phase, attempt, data FROM events WHERE run_id = ?"
            for row in db.execute(query + " ORDER BY seq", (run_id,)):
                found.append(_record(*row))
        return found

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        return self._hold(check_run_id(run_id))

    async def confirm_hold(self, run_id: str) -> None:
        """Nothing to ask: the OS keeps a run's lock for as long as its process lives."""
        check_run_id(run_id)

    async def run_ids(self, *, open_only: bool = False) -> list[str] | None:
        query = "SELECT run_id FROM runs" + (" WHERE final_seq IS NULL" if open_only else "")
        if not self._file.holds_journal():
            return None  # a new or blank file, left as it is
        with self._file.reading("") as db:
            return [run_id for (run_id,) in db.execute(query + " ORDER BY rowid")]

    async def is_held(self, run_id: str) -> bool:
        """Asked of the file without taking the lock on Linux (`runlock.held`). Where a lock
        cannot be asked about (macOS's flock, Windows, Pyodide) it is taken and let go at
        once, and a driver asking for the run in that instant is told it is busy."""
        held = runlock.held(self._file.path, check_run_id(run_id))
        if held is not None:
            return held
        try:
            async with self.hold(run_id):
                return False
        except RunBusy:
            return True

    # ── beyond the protocol ───────────────────────────────────────────────────────────────

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        """`start`, then `append`, in one transaction: what `transfer.import_run` uses, so a
        process killed in the middle of an import leaves the run whole or absent, never a
        header without its events (a new run to the agent, which would pay every call and
        repeat every effect again). Returns the run's `next_seq` afterwards."""
        text = encode_header(check_run_id(run_id), header)
        rows = encode_events(run_id, events)
        with self._file.writing(run_id) as db:
            _start(db, run_id, text)
            return _append(db, run_id, rows)

    async def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        with self._file.serialized:
            self._file.close()

    @contextlib.asynccontextmanager
    async def _hold(self, run_id: str) -> AsyncIterator[None]:
        path = self._file.path
        locked = runlock.enter_file(path, run_id)
        try:
            store = "sqlite:{}:{}".format(*locked.key)
            take = lambda: runlock.lock_run(path, locked, run_id)  # noqa: E731
            async with holding(store, self._file.name, run_id, take):
                yield
        finally:
            runlock.leave_file(locked)


def _start(db: sqlite3.Connection, run_id: str, header: str) -> None:
    db.execute("INSERT OR IGNORE INTO runs (run_id, header) VALUES (?, ?)", (run_id, header))


def _append(db: sqlite3.Connection, run_id: str, rows: list[Encoded]) -> int:
    """Write `rows` after the run's last event, skipping any already there; the next position.
    The caller's transaction (`BEGIN IMMEDIATE`) makes positions atomic."""
    found = db.execute("SELECT next_seq FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if found is None:
        raise never_started(run_id)
    seq, final_seq = found[0], None
    for step_id, phase, attempt, data in rows:
        written = db.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (run_id, step_id, phase, attempt) DO NOTHING",
            (run_id, seq, step_id, phase, attempt, pack(data)),
        ).rowcount
        if written:
            final_seq = seq if is_final(step_id) else final_seq
            seq += 1
    db.execute(
        "UPDATE runs SET next_seq = ?, final_seq = coalesce(?, final_seq) WHERE run_id = ?",
        (seq, final_seq, run_id),
    )
    return int(seq)
