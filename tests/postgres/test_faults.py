"""Faults of the database under a run: its connections cut, the server restarted, a journal
row damaged by hand. Each ends in a clear error or a clean resume, and nothing is lost."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from synaptum_lite import CorruptJournal, Phase, Session, StoreUnavailable, load_events
from synaptum_lite.stores.postgres import PostgresCheckpointer
from synaptum_lite.stores.transfer import export_run
from tests.core import agents
from tests.core.agents import ANSWER, TASK, cajero, double
from tests.core.conftest import run
from tests.core.test_transfer import counted, drive

from .store import (
    can_restart,
    import_psycopg,
    require_server,
    restart_server,
    schema_for,
    with_parameter,
)

ONCE_EACH = {"consultar_saldo": 1, "transferir": 1, "notificar": 1}

psycopg = import_psycopg()


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects"
    monkeypatch.setattr(agents, "EFFECTS", path)
    return path


@pytest.fixture
def named_store(tmp_path: Path) -> tuple[PostgresCheckpointer, str]:
    """A checkpointer whose connections carry a name of their own, so a test can cut them."""
    name = f"faults-{uuid.uuid4().hex[:8]}"
    store = PostgresCheckpointer(
        with_parameter(require_server(), "application_name", name), schema=schema_for(tmp_path)
    )
    return store, name


def cut_connections(name: str) -> int:
    with psycopg.connect(require_server(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchall()
    return len(rows)


async def interrupted_by(fault, store: PostgresCheckpointer) -> tuple[list, StoreUnavailable, int]:
    """Drive the cashier and cause `fault` once the model has asked for the transfer: the
    transfer's write-ahead record is the next write, and it meets the fault."""
    gateway, seen = double(), []
    with pytest.raises(StoreUnavailable) as lost:
        async for step in cajero().run(TASK, session=Session("r", gateway, store)):
            seen.append(step)
            if (step.step_id, step.phase) == ("000002-model", Phase.COMPLETED):
                fault()
    return seen, lost.value, gateway.model_calls


def assert_resumes_where_it_stopped(store, seen, paid_before):
    persisted = run(load_events(PostgresCheckpointer(require_server(), schema=store.schema), "r"))
    assert [(e.step_id, e.phase) for e in persisted] == [(e.step_id, e.phase) for e in seen]
    steps, paid_after = run(drive(store, "r"))  # the same checkpointer: it reconnects
    assert steps[-1].output == ANSWER
    assert paid_before + paid_after == 4  # no model call paid twice
    return steps


def test_connections_cut_mid_run_stop_it_with_store_unavailable_and_lose_nothing(
    effects, named_store
):
    store, name = named_store
    seen, lost, paid = run(interrupted_by(lambda: cut_connections(name), store))
    assert "is unavailable" in str(lost) and "every event appended before this is kept" in str(lost)
    assert "password" not in str(lost)
    assert len(seen) == 6
    assert_resumes_where_it_stopped(store, seen, paid)
    assert counted(effects) == ONCE_EACH


def test_the_database_restarted_mid_run_stops_it_and_the_resume_loses_nothing(effects, tmp_path):
    if not can_restart():
        pytest.skip(
            "needs a server this test may restart on the same URL: the embedded one "
            "(SYNAPTUM_TEST_POSTGRES_URL unset; not on Windows) or one started with "
            "scripts/postgres_local.sh"
        )
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    seen, lost, paid = run(interrupted_by(restart_server, store))
    assert isinstance(lost, StoreUnavailable)
    assert_resumes_where_it_stopped(store, seen, paid)
    assert counted(effects) == ONCE_EACH


def damage(store: PostgresCheckpointer, seq: int, data: str) -> None:
    with psycopg.connect(require_server(), autocommit=True) as admin:
        admin.execute(
            f"""UPDATE {store.schema}.events SET data = %s
            WHERE run = (SELECT id FROM {store.schema}.runs WHERE run_id = 'r') AND seq = %s""",
            (data, seq),
        )


def test_a_journal_row_damaged_by_hand_is_named_and_resumes_cleanly_once_restored(
    effects, tmp_path
):
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    _, paid_before = run(drive(store, "r", stop_after=8))  # 8 events: through the transfer
    backup = [json.loads(line) for line in run(export_run(store, "r"))]
    assert backup[1 + 7]["step_id"] == "000003-tool"  # the transfer's result
    damage(store, 7, '{"content": "transferencia de 100')  # cut short, by hand

    with pytest.raises(CorruptJournal) as damaged:
        run(drive(store, "r"))
    assert (damaged.value.run_id, damaged.value.seq) == ("r", 7)
    assert "restore it from a backup or export the run" in str(damaged.value)
    assert len(run(store.records("r"))) == 8  # the refused resume wrote nothing

    damage(store, 7, backup[1 + 7]["data"])  # restored from the export
    steps, paid_after = run(drive(store, "r"))
    assert steps[-1].output == ANSWER
    assert paid_before + paid_after == 4
    assert counted(effects) == ONCE_EACH


def test_a_damaged_final_row_of_a_closed_run_is_a_clear_error_not_a_new_run(effects, tmp_path):
    store = PostgresCheckpointer(require_server(), schema=schema_for(tmp_path))
    run(drive(store, "r"))
    damage(store, 14, "no es JSON")
    gateway = double()

    async def resume():
        async for _ in cajero().run(TASK, session=Session("r", gateway, store)):
            pass

    with pytest.raises(CorruptJournal) as damaged:
        run(resume())
    assert (damaged.value.run_id, damaged.value.seq) == ("r", 14)
    assert gateway.model_calls == 0
    assert counted(effects) == ONCE_EACH
