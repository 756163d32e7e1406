"""synaptum_lite on PostgreSQL: the same agent as `lite`, journaled in a schema of its own
(STORE is `URL#SCHEMA`). Needs psycopg (the `postgres` extra)."""

from __future__ import annotations

import psycopg

from benchmarks.contenders.lite import build
from benchmarks.workload import Workload
from synaptum_lite import Session
from synaptum_lite.stores.postgres import PostgresCheckpointer


def _split(store: str) -> tuple[str, str]:
    url, _, schema = store.rpartition("#")
    return url, schema


async def open(store: str) -> PostgresCheckpointer:
    url, schema = _split(store)
    checkpointer = PostgresCheckpointer(url, schema=schema)
    await checkpointer.load("warm-up")  # connected, schema created and read
    return checkpointer


async def drive(checkpointer: PostgresCheckpointer, work: Workload) -> int:
    agent, gateway = build(work)
    steps = 0
    async for _ in agent.run("go", session=Session("r", gateway, checkpointer)):
        steps += 1
    return steps


async def close(checkpointer: PostgresCheckpointer) -> None:
    await checkpointer.close()


def stored_bytes(store: str) -> int:
    """Every table of the schema with its indexes and TOAST, as the server counts them."""
    url, schema = _split(store)
    with psycopg.connect(url, autocommit=True) as connection:
        for table in ("runs", "events"):  # dead row versions left by updates are not the journal
            connection.execute(f'VACUUM "{schema}".{table}')
        row = connection.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN "
            "pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
    return int(row[0])


def discard(store: str) -> None:
    url, schema = _split(store)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
