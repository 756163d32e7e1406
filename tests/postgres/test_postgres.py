"""What only the PostgreSQL checkpointer has to say: its optional dependency, its URL, the
schema it owns, and how its lock and its writes share one connection."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from synaptum_lite import (
    ConfigurationError,
    FinalStep,
    NotAJournal,
    Phase,
    RunBusy,
    Session,
    StoreUnavailable,
    UnsupportedFormat,
)
from synaptum_lite.stores.postgres import PostgresCheckpointer
from tests.bounds import HANG
from tests.core.agents import TASK, cajero, double
from tests.core.conftest import run
from tests.core.test_conformance import HEADER, model_step

from .store import import_psycopg, require_server, schema_for, with_parameter

psycopg = import_psycopg()


def test_the_module_imports_without_psycopg_and_says_how_to_install_it():
    code = (
        "import sys; sys.modules['psycopg'] = None\n"  # as if it were not installed
        "import synaptum_lite.stores.postgres, synaptum_lite.stores.transfer\n"
        "try:\n"
        "    synaptum_lite.stores.postgres.PostgresCheckpointer('postgresql://localhost/db')\n"
        "except synaptum_lite.ConfigurationError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "needs psycopg 3" in out.stdout
    assert "pip install 'synaptum-lite[postgres]'" in out.stdout


def test_a_url_is_required_and_its_password_is_never_shown():
    with pytest.raises(ConfigurationError, match="needs a URL like postgresql://"):
        PostgresCheckpointer("host=localhost dbname=runs")
    with pytest.raises(ConfigurationError, match="lowercase SQL name"):
        PostgresCheckpointer("postgresql://localhost/db", schema="Runs; DROP")
    store = PostgresCheckpointer("postgresql://ana:secreto@127.0.0.1:1/runs", connect_timeout=2)
    assert "secreto" not in repr(store)
    with pytest.raises(StoreUnavailable) as unavailable:
        run(store.load("r"))  # nothing listens on port 1
    assert "secreto" not in str(unavailable.value)
    assert "postgresql://ana@127.0.0.1:1/runs" in str(unavailable.value)


def test_a_schema_that_holds_other_tables_is_not_a_journal_and_is_left_alone(tmp_path):
    schema = schema_for(tmp_path)
    with psycopg.connect(require_server(), autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
        db.execute(f"CREATE TABLE {schema}.facturas (id integer)")
        with pytest.raises(NotAJournal, match="holds other tables: facturas"):
            run(PostgresCheckpointer(require_server(), schema=schema).load("r"))
        tables = db.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchone()
    assert tables == (1,)


def test_a_journal_of_a_newer_format_is_refused_unchanged(tmp_path):
    schema = schema_for(tmp_path)
    run(PostgresCheckpointer(require_server(), schema=schema).start("r", HEADER))
    with psycopg.connect(require_server(), autocommit=True) as db:
        db.execute(f"UPDATE {schema}.meta SET format = 2")
        with pytest.raises(UnsupportedFormat) as newer:
            run(PostgresCheckpointer(require_server(), schema=schema).load("r"))
        assert db.execute(f"SELECT format FROM {schema}.meta").fetchone() == (2,)
    assert (newer.value.found, newer.value.supported) == (2, 1)


def test_a_held_run_writes_on_the_connection_holding_its_lock_and_stops_when_it_is_lost(tmp_path):
    """No write after the lock is lost: the lock and the writes share one connection."""
    name = "holder-" + schema_for(tmp_path)[-12:]
    url = with_parameter(require_server(), "application_name", name)
    store, other = (PostgresCheckpointer(url, schema=schema_for(tmp_path)) for _ in range(2))

    async def scenario():
        await store.start("r", HEADER)
        await store.load("r")  # the shared connection is open, and stays healthy
        async with store.hold("r"):
            await store.append("r", [model_step(0)])
            with psycopg.connect(require_server(), autocommit=True) as admin:
                admin.execute(
                    """SELECT pg_terminate_backend(l.pid) FROM pg_locks l
                    JOIN pg_stat_activity a ON a.pid = l.pid
                    WHERE l.locktype = 'advisory' AND a.application_name = %s""",
                    (name,),
                )
            with pytest.raises(StoreUnavailable) as lost:
                await store.append("r", [model_step(1)])
            async with other.hold("r"):  # the lock died with its connection
                pass
        return lost.value, (await store.load("r")).next_seq

    lost, next_seq = run(scenario())
    assert "is unavailable" in str(lost)
    assert next_seq == 1  # the second event never reached the journal


def test_a_run_abandoned_by_break_resumes_at_once_in_the_same_process(tmp_path):
    """As the notebooks do: stop iterating, then run again with the same run_id."""
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))

    async def scenario():
        async for step in cajero().run(TASK, session=Session("r", double(), store)):
            if step.step_id == "000001-tool":
                break  # the generator still holds the run until Python finalizes it
        return [step async for step in cajero().run(TASK, session=Session("r", double(), store))]

    steps = run(scenario())
    assert isinstance(steps[-1], FinalStep)


def test_a_second_process_is_told_busy_while_a_run_is_held(tmp_path):
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    code = (
        "import asyncio, sys\n"
        "from synaptum_lite import RunBusy\n"
        "from synaptum_lite.stores.postgres import PostgresCheckpointer\n"
        "async def main():\n"
        "    try:\n"
        "        async with PostgresCheckpointer(sys.argv[1], schema=sys.argv[2]).hold('r'):\n"
        "            print('held')\n"
        "    except RunBusy as busy:\n"
        "        print(busy)\n"
        "asyncio.run(main())\n"
    )

    async def scenario():
        async with store.hold("r"):
            inside = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-c", code, require_server(), store.schema],
                capture_output=True,
                text=True,
                timeout=HANG,
            )
        return inside

    inside = run(scenario())
    assert "'r' is being driven by another worker" in inside.stdout, inside.stderr


def test_one_checkpointer_serves_several_event_loops(tmp_path):
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    run(store.start("r", HEADER))
    run(store.append("r", [model_step(0)]))  # another asyncio.run: another event loop
    with pytest.raises(RunBusy):

        async def twice():
            async with store.hold("r"), store.hold("r"):
                pass

        run(twice())
    assert run(store.load("r")).next_seq == 1


def test_new_events_are_appended_in_one_statement_and_a_journaled_one_sends_it_to_the_transaction(
    tmp_path, monkeypatch
):
    """One round trip per append of what a run just did; a repeat writes only what is new."""
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    run(store.start("r", HEADER))
    sent: list[str] = []
    execute = psycopg.AsyncConnection.execute

    async def counted(self, query, *args, **kwargs):
        sent.append(str(query).split()[0])
        return await execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "execute", counted)
    first = run(store.append("r", [model_step(0, Phase.ATTEMPTED), model_step(0)]))
    one_statement = list(sent)
    sent.clear()
    again = run(store.append("r", [model_step(0), model_step(1, Phase.ATTEMPTED)]))
    repeated = list(sent)
    sent.clear()
    alone = run(store.append("r", [model_step(1)]))  # one event: plain values, not arrays
    one_event = list(sent)
    records = run(store.records("r"))
    assert one_statement == ["WITH"] and one_event == ["WITH"]
    assert repeated[0] == "WITH" and "SELECT" in repeated[1:]  # refused whole, then the transaction
    assert (first, again, alone) == (2, 3, 4)
    assert [(r.seq, r.step_id, r.phase) for r in records] == [
        (0, "000000-model", "attempted"),
        (1, "000000-model", "completed"),
        (2, "000001-model", "attempted"),
        (3, "000001-model", "completed"),
    ]


def test_two_connections_appending_to_one_run_at_once_take_distinct_dense_positions(tmp_path):
    """The one-statement append locks the run's row: no position is taken twice, none skipped."""
    schema = schema_for(tmp_path)
    stores = [PostgresCheckpointer(require_server(), schema=schema) for _ in range(2)]
    final = FinalStep(run_id="r", step_id="000060-final", text="fin", output="fin")

    async def scenario():
        await stores[0].start("r", HEADER)
        await asyncio.gather(
            *(
                stores[i % 2].append("r", [model_step(i, Phase.ATTEMPTED), model_step(i)])
                for i in range(60)
            )
        )
        await stores[1].append("r", [final])
        return await stores[0].records("r"), await PostgresCheckpointer(
            require_server(), schema=schema
        ).load("r")

    records, state = run(scenario())
    assert [r.seq for r in sorted(records, key=lambda r: r.seq)] == list(range(121))
    assert len({(r.step_id, r.phase) for r in records}) == 121
    assert state.closed and state.next_seq == 121 and state.final == final
