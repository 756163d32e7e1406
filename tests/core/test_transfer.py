"""Moving a run between stores: exported from SQLite as JSON lines, imported into each store
(memory, SQLite, PostgreSQL), it resumes there with zero repeated calls."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from synaptum_lite import (
    Agent,
    CorruptJournal,
    FinalStep,
    JournalError,
    MemoryCheckpointer,
    NotAJournal,
    Risk,
    Role,
    Session,
    SqliteCheckpointer,
    UnsupportedFormat,
    load_events,
    tool,
)
from synaptum_lite.stores.transfer import RefusedExport, copy_run, export_run, import_run, seal
from synaptum_lite.testing import ScriptedGateway, calls, says

from . import agents
from .agents import ANSWER, TASK, cajero, double
from .conftest import run

EVENTS_OF_A_WHOLE_RUN = 15


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cashier's tools count their effects in this file, one line per execution."""
    path = tmp_path / "effects"
    monkeypatch.setattr(agents, "EFFECTS", path)
    return path


def counted(path: Path) -> Counter[str]:
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(line.split(" ", 1)[0] for line in lines)


async def drive(store, run_id: str, *, stop_after: int | None = None) -> tuple[list, int]:
    """Drive the cashier's run; stop after `stop_after` steps. Returns the steps and the model
    calls paid."""
    gateway = double()
    steps = []
    iterator = cajero().run(TASK, session=Session(run_id, gateway, store))
    async for step in iterator:
        steps.append(step)
        if len(steps) == stop_after:
            break
    await iterator.aclose()
    return steps, gateway.model_calls


def test_a_run_moved_half_way_resumes_in_the_other_store_with_zero_repeated_calls(
    tmp_path, effects, store_factory
):
    source = SqliteCheckpointer(tmp_path / "source.db")

    async def scenario():
        # 8 steps: the balance is read and the transfer is done, the notification is not
        _, paid_before = await drive(source, "r", stop_after=8)
        destination = store_factory()
        moved = await copy_run(source, destination, "r")
        steps, paid_after = await drive(destination, "r")
        return moved, paid_before, steps, paid_after, destination

    moved, paid_before, steps, paid_after, destination = run(scenario())
    assert moved == 8
    assert (paid_before, paid_after) == (2, 2)  # four model calls in all, each paid once
    replayed = [s.step_id for s in steps if s.replayed]
    assert replayed == ["000000-model", "000001-tool", "000002-model", "000003-tool"]
    assert all(s.replayed for s in steps[:4]) and not any(s.replayed for s in steps[4:])
    assert isinstance(steps[-1], FinalStep) and steps[-1].output == ANSWER
    assert counted(effects) == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}
    assert run(destination.load("r")).next_seq == EVENTS_OF_A_WHOLE_RUN
    assert run(source.load("r")).next_seq == 8  # the source is left as it was


def test_a_closed_run_moved_returns_its_answer_and_calls_nothing(tmp_path, effects, store_factory):
    source = SqliteCheckpointer(tmp_path / "source.db")

    async def scenario():
        await drive(source, "r")
        destination = store_factory()
        await copy_run(source, destination, "r")
        return await drive(destination, "r")

    steps, paid = run(scenario())
    assert paid == 0
    assert [type(s) for s in steps] == [FinalStep] and steps[0].output == ANSWER
    assert counted(effects) == {"consultar_saldo": 1, "transferir": 1, "notificar": 1}


def test_the_imported_journal_is_the_exported_one_record_for_record(
    tmp_path, effects, store_factory
):
    source = SqliteCheckpointer(tmp_path / "source.db")

    async def scenario():
        await drive(source, "r")
        destination = store_factory()
        lines = await export_run(source, "r")
        await import_run(destination, lines)
        await import_run(destination, "\n".join(lines) + "\n")  # again, as text: a no-op
        return lines, await source.records("r"), await destination.records("r"), destination

    lines, before, after, destination = run(scenario())
    assert len(lines) == 1 + EVENTS_OF_A_WHOLE_RUN
    assert json.loads(lines[0])["synaptum_lite"] == "run"
    assert after == before
    assert run(load_events(destination, "r")) == run(load_events(source, "r"))


def test_an_export_that_extends_the_destination_adds_the_rest(tmp_path, effects):
    source, destination = SqliteCheckpointer(tmp_path / "source.db"), MemoryCheckpointer()

    async def scenario():
        await drive(source, "r", stop_after=4)
        await copy_run(source, destination, "r")
        await drive(source, "r")
        await copy_run(source, destination, "r")
        return await destination.records("r"), await source.records("r")

    after, before = run(scenario())
    assert after == before and len(after) == EVENTS_OF_A_WHOLE_RUN


def test_importing_over_another_journal_of_the_same_run_is_refused(tmp_path, effects):
    ours, theirs = SqliteCheckpointer(tmp_path / "ours.db"), MemoryCheckpointer()

    async def scenario():
        await drive(ours, "r")
        await theirs.start("r", {**(await ours.load("r")).header, "task": "otra tarea"})
        with pytest.raises(JournalError, match="started by another agent or task") as refused:
            await copy_run(ours, theirs, "r")
        return refused.value, await theirs.records("r")

    refused, records = run(scenario())
    assert "nothing was imported" in str(refused)
    assert records == []


def test_an_export_that_is_not_one_is_refused_and_imports_nothing():
    store = MemoryCheckpointer()
    with pytest.raises(NotAJournal, match="does not describe a synaptum_lite run"):
        run(import_run(store, ['{"hola": 1}']))
    newer = json.dumps({"synaptum_lite": "run", "format": 99, "run_id": "r", "header": {}})
    with pytest.raises(UnsupportedFormat) as unsupported:
        run(import_run(store, [newer]))
    assert (unsupported.value.found, unsupported.value.supported) == (99, 1)
    assert run(store.run_ids()) == []


def test_a_damaged_event_in_an_export_is_named_and_nothing_is_imported(tmp_path, effects):
    source, destination = SqliteCheckpointer(tmp_path / "source.db"), MemoryCheckpointer()

    async def scenario():
        await drive(source, "r")
        lines = await export_run(source, "r")
        event = json.loads(lines[4])
        event["data"] = event["data"][:-3]  # a record cut short
        lines[4] = json.dumps(event)
        with pytest.raises(RefusedExport) as unchained:  # its digest no longer matches
            await import_run(destination, lines)
        assert (unchained.value.run_id, unchained.value.seq) == ("r", 3)
        with pytest.raises(CorruptJournal) as damaged:  # with its chain made again, undecodable
            await import_run(destination, seal(lines))
        return damaged.value

    damaged = run(scenario())
    assert (damaged.run_id, damaged.seq) == ("r", 3)
    assert run(destination.run_ids()) == []


def test_exporting_a_run_that_does_not_exist_is_refused():
    with pytest.raises(JournalError, match="'nadie' does not exist"):
        run(export_run(MemoryCheckpointer(), "nadie"))


class Stop(BaseException):
    """Stops the process's run where it is, as a kill would (tools never catch it)."""


def test_a_run_moved_in_the_middle_of_a_delegation_takes_its_sub_run_along(store_factory):
    effects, stop = Counter(), {"armed": True}

    @tool(risk=Risk.READ, idempotent=True)
    def consultar(cuenta: str) -> str:
        """Consulta un saldo."""
        if stop["armed"]:
            stop["armed"] = False
            raise Stop  # before its effect: the sub-run's tool step stays attempted
        effects[cuenta] += 1
        return f"{cuenta}: 4.200,00 €"

    investigador = Agent("investigador", model="m", instructions="Investiga.", tools=[consultar])
    jefe = Agent("jefe", model="m", instructions="Delega.", delegates=[investigador])

    def answer(request):
        system, results = (
            request.messages[0].content,
            [m for m in request.messages if m.role is Role.TOOL],
        )
        if system.startswith("Investiga"):
            return (
                says("Saldo: " + results[0].content)
                if results
                else calls("consultar", cuenta="ES91")
            )
        return says(results[0].content) if results else calls("investigador", task="saldo de ES91")

    async def drive_jefe(store) -> tuple[list, int]:
        gateway = ScriptedGateway([answer] * 4)
        steps = [step async for step in jefe.run("tarea", session=Session("r", gateway, store))]
        return steps, gateway.model_calls

    source = MemoryCheckpointer()

    async def scenario():
        with pytest.raises(Stop):
            await drive_jefe(source)
        destination = store_factory()
        moved = await copy_run(source, destination, "r")
        return moved, await drive_jefe(destination)

    moved, (steps, paid_after) = run(scenario())
    # the parent: its model step and the delegation attempted; the sub-run: its model step and
    # its tool attempted
    assert moved == 3 + 3
    assert paid_after == 2  # the sub-run's last answer and the parent's: none paid twice
    assert steps[-1].output == "Saldo: ES91: 4.200,00 €"
    assert effects == {"ES91": 1}
