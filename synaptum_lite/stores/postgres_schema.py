"""The PostgreSQL journal's tables and statements: the only SQL text for PostgreSQL.

`PostgresCheckpointer` (postgres.py) owns the connections and the run locks, and runs what is
written here: `prepare` checks or creates a schema, `append` writes events in one transaction,
and `statements` are the rest, one query each.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from typing import Any

from ..checkpointer import FORMAT_VERSION
from ..codec import Encoded
from ..errors import DamagedStore, NotAJournal, StoreForbidden, UnsupportedFormat
from .alike import is_final, never_started

# The schema says what it is: its `meta` table names the application and the format. A run's
# events are keyed by (run, seq), so its journal is read in order from the primary key, and
# `runs.final_seq` finds the final event with one lookup. The unique event key makes
# appending an already journaled event a no-op. `data` is the event's JSON as text, exactly
# as encoded, so a record read back is the record written.
APPLICATION = "synaptum_lite"
_TABLES_OF_A_JOURNAL = (
    "CREATE SCHEMA IF NOT EXISTS {schema}",
    "CREATE TABLE {schema}.meta (application text NOT NULL, format integer NOT NULL)",
    """CREATE TABLE {schema}.runs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id text NOT NULL UNIQUE,
    header text NOT NULL,
    next_seq integer NOT NULL DEFAULT 0,
    final_seq integer
)""",
    """CREATE TABLE {schema}.events (
    run bigint NOT NULL REFERENCES {schema}.runs (id),
    seq integer NOT NULL,
    step_id text NOT NULL,
    phase text NOT NULL,
    attempt integer NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (run, seq),
    UNIQUE (run, step_id, phase, attempt)
)""",
)
# What the statements below rely on, table by table: each column they read or write, of its
# type, and the unique keys that make positions atomic and a repeated event a no-op. A journal
# lacking any of it was altered by hand, and is refused before any run is read or written.
_COLUMNS_OF_A_JOURNAL = {
    "runs": {
        "id": "bigint",
        "run_id": "text",
        "header": "text",
        "next_seq": "integer",
        "final_seq": "integer",
    },
    "events": {
        "run": "bigint",
        "seq": "integer",
        "step_id": "text",
        "phase": "text",
        "attempt": "integer",
        "data": "text",
    },
}
_KEYS_OF_A_JOURNAL: dict[str, list[tuple[str, ...]]] = {
    "runs": [("run_id",)],
    "events": [("run", "seq"), ("attempt", "phase", "run", "step_id")],
}
# PostgreSQL refuses to create a schema named pg_...: those are its own
SCHEMA_NAME = re.compile(r"(?!pg_)[a-z_][a-z0-9_]{0,62}")

_STATEMENTS = {
    # PostgreSQL's own lock functions, by their schema: a function of the same name in a schema
    # the session's search_path puts first must not decide who drives a run
    "try_lock": "SELECT pg_catalog.pg_try_advisory_lock(%s)",
    "unlock": "SELECT pg_catalog.pg_advisory_unlock(%s)",
    "load": """SELECT r.header, r.next_seq, e.seq, e.step_id, e.phase, e.attempt, e.data
FROM {schema}.runs r LEFT JOIN {schema}.events e ON e.run = r.id AND e.seq = r.final_seq
WHERE r.run_id = %s""",
    "start": """INSERT INTO {schema}.runs (run_id, header) VALUES (%s, %s)
ON CONFLICT (run_id) DO NOTHING""",
    "lock_run": "SELECT id, next_seq FROM {schema}.runs WHERE run_id = %s FOR UPDATE",
    # only the event key may conflict: a clash of (run, seq) is an error, never skipped
    "insert": """INSERT INTO {schema}.events (run, seq, step_id, phase, attempt, data)
VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (run, step_id, phase, attempt) DO NOTHING""",
    "advance": """UPDATE {schema}.runs SET next_seq = %s, final_seq = coalesce(%s, final_seq)
WHERE id = %s""",
    # One statement, so one round trip and its own transaction: lock the run's row, write the
    # events after its last one, move it on (a WITH's writes all run, read or not; all see
    # the run's row as locked). No ON CONFLICT here: an event already journaled
    # (or a position taken) fails the whole statement, which writes nothing, and `append`
    # then takes the transaction above, which skips what is already there.
    # Most appends carry one event: it is passed as plain values, which cost the client less
    # to send than arrays.
    **{
        name: """WITH
r AS (SELECT id, next_seq FROM {schema}.runs WHERE run_id = %s FOR UPDATE),
written AS (INSERT INTO {schema}.events (run, seq, step_id, phase, attempt, data)
    SELECT r.id, r.next_seq + e.i - 1, e.step_id, e.phase, e.attempt, e.data
    FROM r, EVENTS AS e (step_id, phase, attempt, data, i)),
moved AS (UPDATE {schema}.runs SET next_seq = r.next_seq + %s,
    final_seq = coalesce(r.next_seq + %s::integer, {schema}.runs.final_seq)
    FROM r WHERE {schema}.runs.id = r.id RETURNING {schema}.runs.next_seq)
SELECT (SELECT next_seq FROM moved)""".replace("EVENTS", events)
        for name, events in (
            ("append_one", "(VALUES (%s, %s, %s::integer, %s, 1))"),
            (
                "append_new",
                "unnest(%s::text[], %s::text[], %s::integer[], %s::text[]) WITH ORDINALITY",
            ),
        )
    },
    "records": """SELECT e.seq, e.step_id, e.phase, e.attempt, e.data
FROM {schema}.events e JOIN {schema}.runs r ON r.id = e.run WHERE r.run_id = %s ORDER BY e.seq""",
    "run_ids": "SELECT run_id FROM {schema}.runs ORDER BY id",
    # the open ones are picked by the final event the table points to, so listing them never
    # reads the journal of a closed run (benchmarks/many_runs.py: 10,000 closed beside 100 open)
    "open_run_ids": "SELECT run_id FROM {schema}.runs WHERE final_seq IS NULL ORDER BY id",
    # asked of a server never prepared (`prepare` would create the schema): is there a journal
    "has_journal": "SELECT pg_catalog.to_regclass(%s) IS NOT NULL",
    # whether some session holds a run's advisory lock, asked without taking it; a 64-bit key
    # is shown in pg_locks as its high and low 32 bits (classid, objid), with objsubid 1
    "is_held": """SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 1
    AND classid::bigint = %s AND objid::bigint = %s AND database =
    (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()))""",
}
# every table of a schema, with each of its columns and their types (a table without columns:
# one row, NULLs)
_COLUMNS = """SELECT c.relname::text, a.attname::text, pg_catalog.format_type(a.atttypid, NULL)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"""
SESSION_SETTINGS = ("default_transaction_isolation", "idle_session_timeout")
_SETTINGS_AND_LOCK = "SELECT {}, pg_catalog.pg_advisory_xact_lock(%s)".format(
    ", ".join(f"pg_catalog.current_setting('{name}', true)" for name in SESSION_SETTINGS)
)
# the unique keys of a schema's tables: each table's, as its columns in name order
_KEYS = """SELECT c.relname::text, array_agg(a.attname::text ORDER BY a.attname)
FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
WHERE n.nspname = %s AND i.indisunique AND i.indisvalid
    AND i.indpred IS NULL AND i.indexprs IS NULL
GROUP BY i.indexrelid, c.relname"""
_SCHEMA_EXISTS = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s)"


def _creating(schema: str) -> int:
    """The transaction-scoped advisory lock under which `schema` is checked or created, one
    creator at a time: 64 bits of a hash, as a run's lock (other applications lock small
    numbers, their rows' ids, and must not hold up a journal, nor one schema another)."""
    digest = hashlib.sha256(f"{APPLICATION}\0creating\0{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def statements(schema: str) -> dict[str, str]:
    """Every statement by name, for the tables of `schema` (a name `SCHEMA_NAME` accepts)."""
    return {name: text.format(schema=f'"{schema}"') for name, text in _STATEMENTS.items()}


async def prepare(connection: Any, schema: str, location: str) -> dict[str, str | None]:
    """Check the schema is a journal this version reads; create it when it is absent. Returns
    the session's settings the journal depends on (`SESSION_SETTINGS`; None: the server has
    no such setting).

    Raises `NotAJournal` (the schema holds other tables), `UnsupportedFormat` (a newer
    journal), `DamagedStore` (a journal whose tables were altered by hand) and
    `StoreForbidden` (the user may not create the schema or its tables); none changes it.
    The transaction must read committed data whatever the server's default isolation (the
    connection begins its transactions so), so that a checkpointer that waited for another
    creator's lock sees the journal that creator committed."""
    from psycopg.errors import InsufficientPrivilege  # psycopg is there: a connection is

    async with connection.transaction():
        cursor = await connection.execute(_SETTINGS_AND_LOCK, (_creating(schema),))
        *values, _ = await cursor.fetchone()
        settings = dict(zip(SESSION_SETTINGS, values, strict=True))
        cursor = await connection.execute(_COLUMNS, (schema,))
        columns: dict[str, dict[str, str]] = {}
        for table, column, kind in await cursor.fetchall():
            columns.setdefault(table, {}).update({column: kind} if column is not None else {})
        if "meta" in columns:
            await _check_journal(connection, schema, location, columns)
            return settings
        if columns:
            raise NotAJournal(
                location,
                f"schema {schema} holds other tables: {', '.join(sorted(columns))}; "
                "give the checkpointer another schema=",
            )
        # An administrator may have created the schema for a user who may not create schemas
        # (PostgreSQL checks that right even for CREATE SCHEMA IF NOT EXISTS): leave it be.
        cursor = await connection.execute(_SCHEMA_EXISTS, (schema,))
        (exists,) = await cursor.fetchone()
        try:
            for statement in _TABLES_OF_A_JOURNAL[1:] if exists else _TABLES_OF_A_JOURNAL:
                await connection.execute(statement.format(schema=f'"{schema}"'))
        except InsufficientPrivilege as exc:
            user = connection.info.user
            raise StoreForbidden(
                location,
                f"PostgreSQL: {str(exc).strip().splitlines()[0]}",
                f"the user {user} may not create the journal's "
                f"{'tables' if exists else 'schema'}: ask an administrator to run "
                f'CREATE SCHEMA "{schema}" AUTHORIZATION "{user}" (or to grant {user} CREATE '
                f"on {'that schema' if exists else 'the database'}), or pass schema= one "
                "where it may create tables",
            ) from exc
        await connection.execute(
            f'INSERT INTO "{schema}".meta VALUES (%s, %s)', (APPLICATION, FORMAT_VERSION)
        )
    return settings


async def _check_journal(
    connection: Any, schema: str, location: str, columns: dict[str, dict[str, str]]
) -> None:
    """Check that a schema with a `meta` table is a journal this version reads, whole."""
    meta = columns["meta"]
    if not {"application", "format"} <= meta.keys():
        raise NotAJournal(
            location,
            f"its meta table has the columns {', '.join(sorted(meta)) or '(none)'}, "
            "not application and format",
        )
    cursor = await connection.execute(f'SELECT application, format FROM "{schema}".meta')
    row = await cursor.fetchone()
    if row is None or row[0] != APPLICATION:
        raise NotAJournal(location, f"its meta table names {row[0] if row else 'no application'}")
    if not isinstance(row[1], int):
        raise NotAJournal(location, f"its meta table's format is {row[1]!r}, not a number")
    if row[1] > FORMAT_VERSION:
        raise UnsupportedFormat(location, row[1], FORMAT_VERSION)
    missing = [
        f"{table}.{column}" if table in columns else f"the table {table}"
        for table, expected in _COLUMNS_OF_A_JOURNAL.items()
        for column in (expected if table in columns else list(expected)[:1])
        if column not in columns.get(table, {})
    ]
    if missing:
        raise DamagedStore(
            location,
            f"its tables were altered: it lacks {', '.join(missing)}, which this version "
            "reads and writes",
        )
    changed = [
        f"{table}.{column} is {columns[table][column]}, not {kind}"
        for table, expected in _COLUMNS_OF_A_JOURNAL.items()
        for column, kind in expected.items()
        if columns[table][column] != kind
    ]
    cursor = await connection.execute(_KEYS, (schema,))
    keys = {(table, tuple(names)) for table, names in await cursor.fetchall()}
    changed += [
        f"there is no unique key on {table} ({', '.join(key)})"
        for table, wanted in _KEYS_OF_A_JOURNAL.items()
        for key in wanted
        if (table, key) not in keys
    ]
    if changed:
        raise DamagedStore(
            location,
            f"its tables were altered: {'; '.join(changed)}; this version needs them as it "
            "made them",
        )


async def append(connection: Any, sql: dict[str, str], run_id: str, encoded: list[Encoded]) -> int:
    """Write `encoded` at the end of the run's journal in one transaction; the next position.

    Raises the journal's "never started" error (`never_started`) when the run has no header.

    Events not journaled yet (the usual case: a run appends what it just did) are written by
    one statement, one round trip; when any of them is already there (a retry after a lost
    reply, a replay), or the run has no header, the transaction below decides."""
    from psycopg.errors import UniqueViolation  # psycopg is there: a connection is

    if encoded:
        with contextlib.suppress(UniqueViolation):
            columns: tuple[Any, ...] = (
                encoded[0]
                if len(encoded) == 1
                else tuple(list(column) for column in zip(*encoded, strict=True))
            )
            cursor = await connection.execute(
                sql["append_one" if len(encoded) == 1 else "append_new"],
                (run_id, *columns, len(encoded), _last_final(encoded)),
            )
            (next_seq,) = await cursor.fetchone()
            if next_seq is not None:  # else no run: nothing was written
                return int(next_seq)
    return await _append_one_by_one(connection, sql, run_id, encoded)


async def start_with(
    connection: Any, sql: dict[str, str], run_id: str, header: str, encoded: list[Encoded]
) -> int:
    """Record a run's header (unless it has one) and append `encoded`, in one transaction: the
    run is whole or absent. The next position."""
    async with connection.transaction():
        await connection.execute(sql["start"], (run_id, header))
        return await _append_one_by_one(connection, sql, run_id, encoded)


async def _append_one_by_one(
    connection: Any, sql: dict[str, str], run_id: str, encoded: list[Encoded]
) -> int:
    """`append`'s transaction: skips each event already journaled. Inside a transaction
    already begun, a savepoint of it."""
    # The run's row is locked for the transaction: concurrent appenders, in this process
    # or in another, take positions one after the other, never the same one twice.
    async with connection.transaction():
        row = await (await connection.execute(sql["lock_run"], (run_id,))).fetchone()
        if row is None:
            raise never_started(run_id)
        run, seq = row
        final_seq = None
        for step_id, phase, attempt, data in encoded:
            cursor = await connection.execute(
                sql["insert"], (run, seq, step_id, phase, attempt, data)
            )
            if cursor.rowcount:
                if is_final(step_id):
                    final_seq = seq
                seq += 1
        if seq != row[1]:
            await connection.execute(sql["advance"], (seq, final_seq, run))
    return int(seq)


def _last_final(encoded: list[Encoded]) -> int | None:
    """The position in `encoded` (0 first) of its last final event, or None."""
    finals = [i for i, (step_id, _, _, _) in enumerate(encoded) if is_final(step_id)]
    return finals[-1] if finals else None
