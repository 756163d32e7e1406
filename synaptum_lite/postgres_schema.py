"""The PostgreSQL journal's tables and statements: the only SQL text for PostgreSQL.

`PostgresCheckpointer` (postgres.py) owns the connections and the run locks, and runs what is
written here: `prepare` checks or creates a schema, `append` writes events in one transaction,
and `statements` are the rest, one query each.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from .errors import NotAJournal, UnsupportedFormat
from .journal import FORMAT_VERSION, Encoded, is_final, never_started

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
_CREATING = 0x53594E4C  # "SYNL": the transaction-scoped lock under which a schema is created
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

_STATEMENTS = {
    "try_lock": "SELECT pg_try_advisory_lock(%s)",
    "unlock": "SELECT pg_advisory_unlock(%s)",
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
}
_TABLES = """SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"""


def statements(schema: str) -> dict[str, str]:
    """Every statement by name, for the tables of `schema` (a name `SCHEMA_NAME` accepts)."""
    return {name: text.format(schema=f'"{schema}"') for name, text in _STATEMENTS.items()}


async def prepare(connection: Any, schema: str, location: str) -> None:
    """Check the schema is a journal this version reads; create it when it is absent."""
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATING,))  # one creator
        cursor = await connection.execute(_TABLES, (schema,))
        tables = sorted(name for (name,) in await cursor.fetchall())
        if "meta" in tables:
            cursor = await connection.execute(f'SELECT application, format FROM "{schema}".meta')
            row = await cursor.fetchone()
            if row is None or row[0] != APPLICATION:
                raise NotAJournal(
                    location, f"its meta table names {row[0] if row else 'no application'}"
                )
            if row[1] > FORMAT_VERSION:
                raise UnsupportedFormat(location, row[1], FORMAT_VERSION)
            return
        if tables:
            raise NotAJournal(
                location,
                f"schema {schema} holds other tables: {', '.join(tables)}; "
                "give the checkpointer another schema=",
            )
        for statement in _TABLES_OF_A_JOURNAL:
            await connection.execute(statement.format(schema=f'"{schema}"'))
        await connection.execute(
            f'INSERT INTO "{schema}".meta VALUES (%s, %s)', (APPLICATION, FORMAT_VERSION)
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
