"""A hostile or unusual database under the PostgreSQL checkpointer, as an outside tester
would set one up: URLs libpq cannot read, schema names PostgreSQL keeps for itself, tables of
the same name from another application, a journal altered by hand, users without the
privileges the journal needs, servers whose transactions default to another isolation level
or to read-only, and targets that do not exist. Each ends in a clear error that names the
target without its password and says what to do, or in a journal that works; nothing the
checkpointer did not create is changed."""

from __future__ import annotations

import asyncio
import random
import re
import string
import time
from pathlib import Path

import pytest

from synaptum_lite import (
    ConfigurationError,
    DamagedStore,
    NotAJournal,
    RunBusy,
    Session,
    StoreUnavailable,
)
from synaptum_lite.errors import StoreForbidden, StoreUnreachable
from synaptum_lite.stores.postgres import PostgresCheckpointer
from tests.core.agents import ANSWER
from tests.core.conftest import run
from tests.core.test_conformance import HEADER, model_step
from tests.core.test_transfer import drive

from .store import import_psycopg, require_server, schema_for, with_parameter

psycopg = import_psycopg()


def admin():
    return psycopg.connect(require_server(), autocommit=True)


def tables_of(schema: str) -> list[tuple[str, str]]:
    """Every column of every table in `schema`, as (table, column): what a test compares
    before and after, to show nothing was changed."""
    with admin() as db:
        return db.execute(
            """SELECT table_name::text, column_name::text FROM information_schema.columns
            WHERE table_schema = %s ORDER BY 1, 2""",
            (schema,),
        ).fetchall()


def with_options(url: str, options: str) -> str:
    """`url` with libpq's `options` (server settings for its sessions), percent-encoded."""
    encoded = options.replace("\\", "%5C").replace(" ", "%20").replace("=", "%3D")
    return with_parameter(url, "options", encoded)


# ── URLs and names ───────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ana:secreto@[::1/db",  # libpq quotes the whole URL in its message
        "postgresql://ana:se%zzcreto@host/db",  # ...or the password alone
        "postgresql://ana:secreto@host/db?sslmode",
        "postgresql://ana@[::1/db?password=secreto",  # a password may be a parameter too
        "postgresql://ana@host/db?password=se%zzcreto",
        "postgresql://ana@host/db?sslmode=require&password=secreto&x",
    ],
)
def test_a_url_libpq_cannot_read_is_refused_without_showing_its_password(url):
    with pytest.raises(ConfigurationError) as refused:
        PostgresCheckpointer(url)
    message = str(refused.value)
    assert "cannot read the PostgreSQL URL" in message
    assert "secreto" not in message and "creto" not in message
    assert "postgresql://…@" in message or "postgresql://" not in message


@pytest.mark.parametrize("timeout", ["10", 2.5, None, True])
def test_a_connect_timeout_that_is_not_whole_seconds_is_refused_before_connecting(timeout):
    with pytest.raises(
        ConfigurationError, match=f"connect_timeout must be whole seconds.*{timeout!r}"
    ):
        PostgresCheckpointer("postgresql://ana@127.0.0.1:1/db", connect_timeout=timeout)


def test_a_schema_name_postgresql_keeps_for_itself_is_refused_before_connecting():
    # port 1: nothing listens there, so an attempt to connect would be another error
    with pytest.raises(ConfigurationError, match="cannot start with pg_"):
        PostgresCheckpointer("postgresql://ana@127.0.0.1:1/db", schema="pg_diario")


def test_a_database_that_does_not_exist_says_to_check_the_url_not_to_wait():
    url = re.sub(r"/[^/?]*(\?|$)", r"/no_existe_esta_base\1", require_server(), count=1)
    url = url.replace("://", "://postgres:secreto@", 1) if "@" not in url else url
    store = PostgresCheckpointer(url, schema="diario")
    with pytest.raises(StoreUnreachable) as unreachable:
        run(store.load("r"))
    message = str(unreachable.value)
    assert isinstance(unreachable.value, StoreUnavailable)  # what callers already catch
    assert "no_existe_esta_base" in message and "secreto" not in message
    assert "cannot be reached" in message and "database are right" in message


def test_a_run_id_too_long_for_postgresqls_index_is_refused_as_input_before_paying(tmp_path):
    """PostgreSQL cannot index a text over about 2,700 bytes (incompressible): such a run id
    is a bad input, said as such, not a store that "is unavailable" to be tried again; the
    model is never called, and the connection (and any run it holds) goes on."""
    from tests.core.agents import TASK, cajero, double

    chance = random.Random(7)
    long_id = "".join(chance.choice(string.ascii_letters) for _ in range(3000))
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    gateway = double()

    async def scenario():
        await store.start("corto", HEADER)
        with pytest.raises(ConfigurationError) as refused:
            await store.start(long_id, HEADER)
        async with store.hold("corto"):
            await store.append("corto", [model_step(0)])
            with pytest.raises(ConfigurationError):
                async for _ in cajero().run(TASK, session=Session(long_id, gateway, store)):
                    pass
            await store.append("corto", [model_step(1)])  # the held run's connection goes on
        return refused.value, await store.load("corto")

    refused, state = run(scenario())
    assert "use a shorter run_id" in str(refused) and "runs_run_id_key" in str(refused)
    assert gateway.model_calls == 0
    assert state.next_seq == 2


# ── tables that are not this journal's ───────────────────────────────────────────────────


def test_a_meta_table_of_another_application_is_not_a_journal_and_is_left_alone(tmp_path):
    schema = schema_for(tmp_path)
    with admin() as db:
        db.execute(f"CREATE SCHEMA {schema}")
        db.execute(f"CREATE TABLE {schema}.meta (clave text, valor text)")
        db.execute(f"INSERT INTO {schema}.meta VALUES ('version', '7')")
    before = tables_of(schema)
    with pytest.raises(NotAJournal, match="its meta table has the columns clave, valor"):
        run(PostgresCheckpointer(require_server(), schema=schema).load("r"))
    assert tables_of(schema) == before


@pytest.mark.parametrize(
    ("alteration", "named"),
    [
        ("ALTER TABLE {schema}.events DROP COLUMN attempt", "events.attempt"),
        ("DROP TABLE {schema}.events", "the table events"),
        ("ALTER TABLE {schema}.runs RENAME COLUMN final_seq TO ultimo", "runs.final_seq"),
        (
            "ALTER TABLE {schema}.events ALTER COLUMN data TYPE bytea "
            "USING convert_to(data, 'UTF8')",
            "events.data is bytea, not text",
        ),
        (
            # without it, appending an event already journaled would write it twice
            "ALTER TABLE {schema}.events DROP CONSTRAINT events_run_step_id_phase_attempt_key",
            "no unique key on events (attempt, phase, run, step_id)",
        ),
        (
            "ALTER TABLE {schema}.runs DROP CONSTRAINT runs_run_id_key",
            "no unique key on runs (run_id)",
        ),
    ],
)
def test_a_journal_altered_by_hand_is_named_damaged_and_left_alone(tmp_path, alteration, named):
    schema = schema_for(tmp_path)
    run(PostgresCheckpointer(require_server(), schema=schema).start("r", HEADER))
    with admin() as db:
        db.execute(alteration.format(schema=schema))
    before = tables_of(schema)
    with pytest.raises(DamagedStore) as damaged:
        run(PostgresCheckpointer(require_server(), schema=schema).load("r"))
    assert named in str(damaged.value)
    assert f"(schema {schema})" in str(damaged.value)
    assert tables_of(schema) == before


def test_a_journal_dropped_while_in_use_is_named_damaged_and_never_created_again(tmp_path):
    """The schema is dropped by hand while a checkpointer uses it. Creating it again would
    start every run over (and repeat its effects): each call says what happened instead."""
    schema = schema_for(tmp_path)
    store = PostgresCheckpointer(require_server(), schema=schema)

    async def scenario():
        await store.start("r", HEADER)
        await store.append("r", [model_step(0)])
        with admin() as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")
        errors = []
        for call in (
            lambda: store.load("r"),
            lambda: store.start("r", HEADER),
            lambda: store.append("r", [model_step(1)]),
        ):
            with pytest.raises(DamagedStore) as damaged:
                await call()
            errors.append(str(damaged.value))
        async with store.hold("r"):
            with pytest.raises(DamagedStore):
                await store.records("r")
        return errors

    errors = run(scenario())
    assert all("dropped or altered while in use" in error for error in errors)
    assert all(f"(schema {schema})" in error for error in errors)
    assert tables_of(schema) == []


# ── privileges and read-only servers ─────────────────────────────────────────────────────


@pytest.fixture
def role(tmp_path: Path):
    """A login role without CREATE on the database (PostgreSQL grants PUBLIC only CONNECT and
    TEMPORARY), and a URL that connects as it. Dropped with what it owns at the end."""
    name = "rol_" + schema_for(tmp_path)[-12:]
    with admin() as db:
        try:
            db.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'secreto'")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test server's user may not create roles")
        database = db.execute("SELECT current_database()").fetchone()[0]
        db.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM {name}')
    url = re.sub(r"^(postgres(?:ql)?://)([^@/]*@)?", rf"\1{name}:secreto@", require_server())
    yield name, url
    with admin() as db:
        db.execute(f"DROP OWNED BY {name} CASCADE")
        db.execute(f"DROP ROLE {name}")


def test_a_user_without_create_on_the_database_journals_in_a_schema_made_for_it(
    tmp_path, role, monkeypatch
):
    """An administrator creates the schema for the application's user; the journal's tables
    are created in it on first use, and a run goes to its end."""
    name, url = role
    schema = schema_for(tmp_path)
    with admin() as db:
        db.execute(f"CREATE SCHEMA {schema} AUTHORIZATION {name}")
    monkeypatch.setattr("tests.core.agents.EFFECTS", tmp_path / "effects")
    steps, paid = run(drive(PostgresCheckpointer(url, schema=schema), "r"))
    assert steps[-1].output == ANSWER and paid == 4
    assert ("meta", "application") in tables_of(schema)


def test_a_user_who_may_not_create_the_schema_is_told_what_to_ask_for(tmp_path, role):
    name, url = role
    schema = schema_for(tmp_path)
    with pytest.raises(StoreForbidden) as forbidden:
        run(PostgresCheckpointer(url, schema=schema).load("r"))
    message = str(forbidden.value)
    assert "permission denied" in message and "secreto" not in message
    assert f'CREATE SCHEMA "{schema}" AUTHORIZATION' in message
    assert tables_of(schema) == []


def test_a_user_who_may_read_but_not_write_the_journal_reads_it_and_is_refused_writes(
    tmp_path, role
):
    name, url = role
    schema = schema_for(tmp_path)
    run(PostgresCheckpointer(require_server(), schema=schema).start("r", HEADER))
    with admin() as db:
        db.execute(f"GRANT USAGE ON SCHEMA {schema} TO {name}")
        db.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {name}")
    reader = PostgresCheckpointer(url, schema=schema)

    async def scenario():
        state = await reader.load("r")
        with pytest.raises(StoreForbidden) as forbidden:
            await reader.append("r", [model_step(0)])
        return state, forbidden.value, await reader.load("r")  # the same connection goes on

    state, forbidden, after = run(scenario())
    assert state.header == HEADER and after.next_seq == 0
    assert "permission denied for table" in str(forbidden)
    assert f"on the tables of schema {schema}" in str(forbidden)


def test_a_server_that_accepts_no_writes_is_named_as_such(tmp_path):
    """A standby, or sessions that default to read-only transactions: the journal cannot be
    created or written, and the error says so instead of a raw SQL error."""
    schema = schema_for(tmp_path)
    run(PostgresCheckpointer(require_server(), schema=schema).start("r", HEADER))
    read_only = with_options(require_server(), "-c default_transaction_read_only=on")
    for store, call in (
        (PostgresCheckpointer(read_only, schema=schema + "_nuevo"), "load"),
        (PostgresCheckpointer(read_only, schema=schema), "append"),
    ):
        with pytest.raises(StoreForbidden, match="accepts no writes"):
            if call == "load":
                run(store.load("r"))
            else:
                run(store.append("r", [model_step(0)]))
    assert tables_of(schema + "_nuevo") == []
    assert run(PostgresCheckpointer(require_server(), schema=schema).load("r")).next_seq == 0


def test_a_lock_function_of_the_same_name_earlier_on_the_search_path_is_not_the_lock(tmp_path):
    """Someone created `pg_try_advisory_lock(bigint)` answering true in a schema that the
    sessions' search_path puts before pg_catalog (here through the URL; a role's or a
    database's settings do the same). Two checkpointers must still not hold one run at once:
    the lock is PostgreSQL's own, named with its schema."""
    schema = schema_for(tmp_path)
    impostor = schema + "_impostor"
    with admin() as db:
        db.execute(f"CREATE SCHEMA {impostor}")
        db.execute(
            f"""CREATE FUNCTION {impostor}.pg_try_advisory_lock(bigint) RETURNS boolean
            AS 'SELECT true' LANGUAGE sql"""
        )
        db.execute(
            f"""CREATE FUNCTION {impostor}.pg_advisory_unlock(bigint) RETURNS boolean
            AS 'SELECT true' LANGUAGE sql"""
        )
    url = with_options(require_server(), f"-c search_path={impostor},pg_catalog,public")
    first, second = (PostgresCheckpointer(url, schema=schema) for _ in range(2))

    async def scenario():
        async with first.hold("r"):
            with pytest.raises(RunBusy):
                async with second.hold("r"):
                    pass

    run(scenario())


def test_another_applications_advisory_lock_does_not_hold_up_the_journal(tmp_path):
    """Applications lock rows by their ids with the same advisory locks (`pg_advisory_lock(id)`).
    One holds the lock of its row 1398361676 for as long as it likes; a checkpointer opening
    its journal must not wait for it (here it would give up after 2 s: lock_timeout)."""
    schema = schema_for(tmp_path)
    url = with_options(require_server(), "-c lock_timeout=2000")
    with admin() as other_application:
        other_application.execute("SELECT pg_advisory_lock(1398361676)")
        state = run(PostgresCheckpointer(url, schema=schema).load("r"))
    assert state.next_seq == 0


# ── isolation levels ─────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_six_checkpointers_first_using_a_schema_at_once_under_another_isolation_level_share_it(
    tmp_path, isolation
):
    """The server's sessions default to another isolation level (`default_transaction_isolation`
    in postgresql.conf, the role or, here, the URL). Six checkpointers meet a schema that does
    not exist yet at once: one creates the journal, the others use it; then all six append to
    one run at once, and get dense, distinct positions."""
    schema = schema_for(tmp_path)
    setting = "-c default_transaction_isolation=" + isolation.replace(" ", "\\ ")
    url = with_options(require_server(), setting)
    stores = [PostgresCheckpointer(url, schema=schema) for _ in range(6)]

    async def scenario():
        loaded = await asyncio.gather(*(store.load("r") for store in stores))
        await stores[0].start("r", HEADER)
        await asyncio.gather(*(stores[i % 6].append("r", [model_step(i)]) for i in range(90)))
        return loaded, await stores[0].records("r")

    loaded, records = run(scenario())
    assert [state.header for state in loaded] == [None] * 6
    assert sorted(r.seq for r in records) == list(range(90))
    assert len({r.step_id for r in records}) == 90


# ── a server that reaps idle sessions ────────────────────────────────────────────────────


def test_a_run_whose_model_thinks_longer_than_the_servers_idle_session_timeout_goes_on(
    tmp_path, monkeypatch
):
    """`idle_session_timeout` (PostgreSQL 14+) ends sessions idle for longer than it; the
    lock of a run is a session's, idle while the model thinks. Here the server reaps after
    0.3 s and one model call takes 1 s: the run still ends, paying each call once."""
    from synaptum_lite.testing import ScriptedGateway
    from tests.core.agents import HERRAMIENTAS, TASK, cajero, responder

    monkeypatch.setattr("tests.core.agents.EFFECTS", tmp_path / "effects")
    url = with_options(require_server(), "-c idle_session_timeout=300")
    store = PostgresCheckpointer(url, schema=schema_for(tmp_path))
    calls = []

    def slow(request):
        calls.append(len(request.messages))
        if len(calls) == 2:
            time.sleep(1.0)  # longer than the server lets a session idle
        return responder(request)

    async def scenario():
        session = Session("r", ScriptedGateway([slow] * 8, tools=HERRAMIENTAS), store)
        return [step async for step in cajero().run(TASK, session=session)]

    steps = run(scenario())
    assert steps[-1].output == ANSWER
    assert len(calls) == 4
