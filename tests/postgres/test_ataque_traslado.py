"""A run moved from a SQLite journal into PostgreSQL (`transfer.copy_run`), its importer
SIGKILLed in the middle of the import. Workers pull runs from the PostgreSQL journal: a run
found there with its header and without its events is a new run to them, which would pay
every model call and repeat every effect the source already journaled. So the import is
whole or absent; imported again, the run resumes where the source left it."""

from __future__ import annotations

import subprocess
import sys
import uuid

from synaptum_lite import SqliteCheckpointer
from synaptum_lite.stores.postgres import PostgresCheckpointer
from synaptum_lite.stores.transfer import copy_run
from tests.core import agents
from tests.core.agents import ANSWER
from tests.core.conftest import run
from tests.core.test_kill import ROOT
from tests.core.test_transfer import counted, drive

from .store import import_psycopg, require_server, schema_for, with_parameter

psycopg = import_psycopg()

IMPORTER = (
    "import asyncio, sys\n"
    "from synaptum_lite import SqliteCheckpointer\n"
    "from synaptum_lite.stores.postgres import PostgresCheckpointer\n"
    "from synaptum_lite.stores.transfer import copy_run\n"
    "source = SqliteCheckpointer(sys.argv[1])\n"
    "destination = PostgresCheckpointer(sys.argv[2], schema=sys.argv[3])\n"
    "asyncio.run(copy_run(source, destination, 'r'))\n"
)


def hold_inserts_of(schema: str, name: str) -> None:
    """A trigger that holds every insert of journal events made by sessions named `name`."""
    with psycopg.connect(require_server(), autocommit=True) as admin:
        admin.execute(
            f"""CREATE FUNCTION {schema}.retener() RETURNS trigger AS $$
            BEGIN
                IF current_setting('application_name') = '{name}'
                THEN PERFORM pg_sleep(600); END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql"""
        )
        admin.execute(
            f"""CREATE TRIGGER retener BEFORE INSERT ON {schema}.events
            FOR EACH ROW EXECUTE FUNCTION {schema}.retener()"""
        )


def wait_until_held(name: str) -> None:
    with psycopg.connect(require_server(), autocommit=True) as admin:
        for _ in range(6000):
            (held,) = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                "AND wait_event = 'PgSleep'",
                (name,),
            ).fetchone()
            if held:
                return
            admin.execute("SELECT pg_sleep(0.01)")
    raise AssertionError("the importer never reached the events' insert")


def test_an_import_killed_before_its_events_are_written_leaves_no_run_a_worker_would_start(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(agents, "EFFECTS", tmp_path / "effects")
    source = SqliteCheckpointer(tmp_path / "origen.db")
    _, paid_in_source = run(drive(source, "r", stop_after=8))  # through the transfer
    run(source.close())
    schema = schema_for(tmp_path)
    destination = PostgresCheckpointer(require_server(), schema=schema)
    run(destination.load("r"))  # the journal's tables, for the trigger
    name = f"importador-{uuid.uuid4().hex[:8]}"
    hold_inserts_of(schema, name)
    importer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            IMPORTER,
            str(tmp_path / "origen.db"),
            with_parameter(require_server(), "application_name", name),
            schema,
        ],
        cwd=ROOT,
    )
    try:
        wait_until_held(name)
    finally:
        importer.kill()  # SIGKILL, inside the import
        importer.wait()
    with psycopg.connect(require_server(), autocommit=True) as admin:
        # its session sleeps on in the trigger, unaware its client died, until ended
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        )
        admin.execute(f"DROP TRIGGER retener ON {schema}.events")

    state = run(PostgresCheckpointer(require_server(), schema=schema).load("r"))
    assert (state.header, state.next_seq) == (None, 0)  # nothing a worker could take up

    assert run(copy_run(SqliteCheckpointer(tmp_path / "origen.db"), destination, "r")) == 8
    steps, paid_in_destination = run(drive(destination, "r"))
    assert steps[-1].output == ANSWER
    assert paid_in_source + paid_in_destination == 4
    assert counted(tmp_path / "effects") == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
