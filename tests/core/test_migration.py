"""Runs across a deploy: pinning a run to the version that started it, and migrating an open
run to a new configuration from its next step on (`agent_for`, `migrate`)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from synaptum_lite import (
    Agent,
    ApprovalStep,
    ConfigurationChanged,
    ConfigurationError,
    FinalStep,
    LocalGateway,
    MemoryCheckpointer,
    MigrationRefused,
    MigrationStep,
    Phase,
    ReplayDivergence,
    Risk,
    RunBusy,
    Session,
    ToolStep,
    Verdict,
    VersionNotHeld,
    agent_for,
    load_events,
    migrate,
    tool,
)
from synaptum_lite.testing import ScriptedGateway

from .agents import (
    HERRAMIENTAS,
    TASK,
    cajero,
    cajero_v2,
    consultar_saldo,
    notificar,
    open_store,
    responder,
)
from .busy_child import held_elsewhere
from .test_kill import STORE_KINDS, store_in

ANSWER = "Transferidos 100,00 € y avisado el cliente."


def gateway(**options) -> ScriptedGateway:
    return ScriptedGateway([responder] * 20, tools=HERRAMIENTAS, **options)


async def drive(agent: Agent, store, run_id: str = "r", *, stop_at: int | None = None, **options):
    """The run's steps as they come; with `stop_at`, stop iterating after that many."""
    double = gateway(**options)
    steps = []
    async with contextlib.aclosing(agent.run(TASK, session=Session(run_id, double, store))) as it:
        async for step in it:
            steps.append(step)
            if stop_at is not None and len(steps) == stop_at:
                break
    return steps, double


def v1() -> Agent:
    return Agent(
        "cajero",
        model="guionizado",
        instructions="Opera con cuidado.",
        tools=HERRAMIENTAS,
        version="v1",
    )


def run(coroutine):
    return asyncio.run(coroutine)


# ── pinning ───────────────────────────────────────────────────────────────────────────────


def test_the_version_enters_the_configuration_and_a_changed_version_is_refused_by_name():
    store = MemoryCheckpointer()
    run(drive(v1(), store, stop_at=4))
    same_but_version = Agent(
        "cajero",
        model="guionizado",
        instructions="Opera con cuidado.",
        tools=HERRAMIENTAS,
        version="v1.1",
    )
    with pytest.raises(ConfigurationChanged) as changed:
        run(drive(same_but_version, store))
    assert changed.value.changes == {"version": ("v1", "v1.1")}
    assert "version: journaled 'v1', now 'v1.1'" in str(changed.value)
    assert "migrate it (synaptum-lite migrate)" in str(changed.value)


def test_an_agent_without_a_version_keeps_the_header_it_always_had():
    assert "version" not in cajero().configuration
    assert v1().configuration["version"] == "v1"
    with pytest.raises(ConfigurationError, match="version must be None or a non-empty str"):
        Agent("a", model="m", instructions="i", version="")


def test_each_run_resumes_on_the_version_that_started_it_and_pays_nothing_again():
    store = MemoryCheckpointer()
    run(drive(cajero(), store, "viejo", stop_at=8))  # started before the deploy
    run(drive(cajero_v2(), store, "nuevo", stop_at=4))  # started after it
    held = [cajero(), cajero_v2()]
    assert run(agent_for(store, "viejo", held)).version is None
    assert run(agent_for(store, "nuevo", held)).version == "v2"
    steps, double = run(drive(run(agent_for(store, "viejo", held)), store, "viejo"))
    assert double.model_calls == 2 and double.tool_calls == 1  # only what was left: notificar
    assert isinstance(steps[-1], FinalStep) and steps[-1].output == ANSWER
    assert sum(s.replayed for s in steps) == 4  # the paid model calls and the two tools


def test_a_run_whose_version_is_gone_names_the_recorded_version_and_the_ones_held():
    store = MemoryCheckpointer()
    run(drive(v1(), store, stop_at=2))
    with pytest.raises(VersionNotHeld) as gone:
        run(agent_for(store, "r", [cajero_v2()]))
    assert (gone.value.recorded, gone.value.held) == (
        "'cajero' version 'v1'",
        ["'cajero' version 'v2'"],
    )
    assert str(gone.value) == (
        "run 'r' runs on 'cajero' version 'v1'; the agents held are 'cajero' version 'v2': "
        "deploy that version beside the new one until its runs end, or migrate the run"
    )


def test_agent_for_refuses_a_run_never_started_and_two_agents_of_one_version():
    store = MemoryCheckpointer()
    with pytest.raises(ConfigurationError, match="never started .* runs on no version yet"):
        run(agent_for(store, "nadie", [v1()]))
    run(drive(v1(), store, stop_at=2))
    with pytest.raises(ConfigurationError, match="two agents are 'cajero' version 'v1'"):
        run(agent_for(store, "r", [v1(), v1()]))
    with pytest.raises(ConfigurationError, match="non-empty list of Agent"):
        run(agent_for(store, "r", []))


# ── migration ─────────────────────────────────────────────────────────────────────────────


def test_a_migrated_run_runs_its_next_steps_on_the_new_agent_and_refuses_the_old():
    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=8))  # two model calls and two tools paid
    migration = run(migrate(store, "r", cajero_v2(), by="operadora"))
    assert migration.step_id == "000004-migration"
    assert migration.changed == {
        "version": [None, "v2"],
        "instructions": ["Opera con cuidado.", "Opera con cuidado y confirma cada paso."],
    }
    with pytest.raises(ConfigurationChanged) as old:
        run(drive(cajero(), store))
    assert old.value.fields == ["instructions", "version"]
    steps, double = run(drive(cajero_v2(), store))
    assert (double.model_calls, double.tool_calls) == (2, 1)
    assert [s.step_id for s in steps if not s.replayed][0] == "000005-model"
    assert [s for s in steps if isinstance(s, MigrationStep)] == [migration.as_replayed()]
    # the requests after the cut carry the new instructions; nothing before it was asked again
    assert all("confirma cada paso" in r.messages[0].content for r in double.requests)
    assert isinstance(steps[-1], FinalStep) and steps[-1].output == ANSWER
    assert run(agent_for(store, "r", [cajero(), cajero_v2()])).version == "v2"


def test_a_closed_migrated_run_returns_its_final_step_and_calls_nothing():
    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=8))
    run(migrate(store, "r", cajero_v2(), by="operadora"))
    run(drive(cajero_v2(), store))
    for agent in (cajero_v2(), cajero()):  # the one it ended on, and the one that started it
        steps, double = run(drive(agent, store))
        assert len(steps) == 1 and steps[0].output == ANSWER and double.model_calls == 0
    other = Agent("cajero", model="otro", instructions="x", tools=HERRAMIENTAS)
    with pytest.raises(ConfigurationChanged):
        run(drive(other, store))


def test_migrating_twice_applies_the_last_configuration():
    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=4))
    run(migrate(store, "r", v1(), by="ana"))
    run(drive(v1(), store, stop_at=5))  # two replayed steps, the migration, a model call
    second = run(migrate(store, "r", cajero_v2(), by="ana"))
    assert second.changed["version"] == ["v1", "v2"]
    steps, double = run(drive(cajero_v2(), store))
    assert [type(s).__name__ for s in steps].count("MigrationStep") == 2
    assert isinstance(steps[-1], FinalStep) and double.tool_calls == 2


def test_a_tool_the_journal_never_called_may_go_and_a_new_one_may_come():
    @tool(risk=Risk.READ, idempotent=True)
    def auditar(nota: str) -> str:
        """Apunta una nota de auditoría."""
        return "apuntado"

    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=4))  # only consultar_saldo was called
    tools = [consultar_saldo, HERRAMIENTAS[1], notificar, auditar]
    newer = Agent("cajero", model="guionizado", instructions="Opera.", tools=tools, version="v3")
    migration = run(migrate(store, "r", newer, by="ana"))
    assert migration.changed["tools"] == [[], ["auditar"]]
    steps, _ = run(drive(newer, store))
    assert steps[-1].output == ANSWER


def renamed(tool_name: str) -> list:
    """The cashier's tools with one of them under another name (the journal's name gone)."""

    @tool(risk=Risk.READ, idempotent=True)
    def consultar_cuenta(cuenta: str) -> str:
        """Consulta el saldo de una cuenta."""
        return f"{cuenta}: 4.200,00 €"

    return [consultar_cuenta if t.name == tool_name else t for t in HERRAMIENTAS]


def redeclared(**declared) -> list:
    @tool(**declared)
    def consultar_saldo(cuenta: str) -> str:
        """Consulta el saldo de una cuenta."""
        return f"{cuenta}: 4.200,00 €"

    return [consultar_saldo, *HERRAMIENTAS[1:]]


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        (
            renamed("consultar_saldo"),
            "tool 'consultar_saldo', which the new configuration does not have",
        ),
        (
            redeclared(risk=Risk.SOFT_WRITE, idempotent=True),
            "tool 'consultar_saldo', declared with risk 'read', now 'soft_write'",
        ),
        (
            redeclared(risk=Risk.READ),
            "tool 'consultar_saldo', declared with idempotent True, now False",
        ),
    ],
    ids=["tool-gone", "risk-changed", "idempotency-changed"],
)
def test_a_migration_that_changes_what_a_journaled_call_means_is_refused_and_writes_nothing(
    tools, said
):
    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=4))
    before = run(store.records("r"))
    newer = Agent("cajero", model="guionizado", instructions="Opera.", tools=tools, version="v3")
    with pytest.raises(MigrationRefused) as refused:
        run(migrate(store, "r", newer, by="ana"))
    assert str(refused.value) == (
        f"run 'r' cannot be migrated: step 000000-model called {said}, so the journal's "
        "positions would mean other steps; keep it in the new configuration, or start a new "
        "run_id; nothing was written"
    )
    assert run(store.records("r")) == before
    steps, double = run(drive(cajero(), store))  # the old agent goes on as if nothing happened
    assert steps[-1].output == ANSWER and double.model_calls == 3


def test_a_renamed_delegate_the_journal_called_is_refused():
    def parent(delegate_name: str, version: str) -> Agent:
        child = Agent(
            delegate_name, model="m", instructions="Consulta saldos.", tools=[consultar_saldo]
        )
        return Agent("jefe", model="m", instructions="Delega.", delegates=[child], version=version)

    store = MemoryCheckpointer()
    gateway_ = ScriptedGateway(
        [lambda r: __import__("synaptum_lite.testing").testing.calls("ayudante", task="saldo")]
        + [lambda r: __import__("synaptum_lite.testing").testing.says("4.200")] * 3
    )
    session = Session("r", gateway_, store)

    async def first_turns():
        async with contextlib.aclosing(parent("ayudante", "v1").run("t", session=session)) as it:
            async for step in it:
                if step.step_id == "000001-delegate" and step.phase is Phase.COMPLETED:
                    break

    run(first_turns())
    with pytest.raises(
        MigrationRefused, match="delegate 'ayudante', which the new configuration does not have"
    ):
        run(migrate(store, "r", parent("asistente", "v2"), by="ana"))
    assert run(migrate(store, "r", parent("ayudante", "v2"), by="ana")).changed == {
        "version": ["v1", "v2"]
    }


def test_a_missing_a_closed_an_unchanged_or_an_in_flight_run_is_refused():
    store = MemoryCheckpointer()
    with pytest.raises(MigrationRefused, match="holds no such run"):
        run(migrate(store, "nadie", cajero_v2(), by="ana"))
    run(drive(cajero(), store, "cerrado"))
    with pytest.raises(MigrationRefused, match="it is closed"):
        run(migrate(store, "cerrado", cajero_v2(), by="ana"))
    run(drive(cajero(), store, "igual", stop_at=4))
    with pytest.raises(MigrationRefused, match="already runs on that configuration"):
        run(migrate(store, "igual", cajero(), by="ana"))
    run(drive(cajero(), store, "en-vuelo", stop_at=7))  # the transfer attempted, not completed
    with pytest.raises(MigrationRefused) as in_flight:
        run(migrate(store, "en-vuelo", cajero_v2(), by="ana"))
    assert "step 000003-tool is in flight (attempted, never completed)" in str(in_flight.value)
    for bad_by in ("", "  ", None):
        with pytest.raises(ConfigurationError, match="by must name who migrates"):
            run(migrate(store, "igual", cajero_v2(), by=bad_by))
    with pytest.raises(ConfigurationError, match="migrate to an Agent"):
        run(migrate(store, "igual", "cajero_v2", by="ana"))


def test_a_run_suspended_for_approval_migrates_and_is_asked_nothing_twice():
    def policy(proposal):
        if proposal.risk is Risk.HARD_WRITE:
            return Verdict.require_approval("una transferencia pide una persona")
        return Verdict.allow()

    store = MemoryCheckpointer()
    steps, _ = run(drive(cajero(), store, policy=policy))
    request = steps[-1]
    assert isinstance(request, ApprovalStep) and request.pending
    migration = run(migrate(store, "r", cajero_v2(), by="ana"))
    assert migration.step_id == "000004-migration"
    session = Session("r", LocalGateway(tools=[]), store)
    run(session.decide(request.step_id, granted=True, by="ana"))
    steps, double = run(drive(cajero_v2(), store, policy=policy))
    assert steps[-1].output == ANSWER
    assert double.tool_calls == 2  # the transfer, once, and the notification
    assert [s.step_id for s in steps if isinstance(s, ToolStep) and not s.replayed][
        0
    ] == "000005-tool"


@pytest.mark.posix_signals
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_held_run_is_not_migrated_while_another_process_drives_it(tmp_path: Path, kind: str):
    store = store_in(kind, tmp_path)
    with held_elsewhere(store, "pago", tmp_path / "suelta"):
        with pytest.raises(RunBusy):
            run(migrate(open_store(store), "pago", cajero_v2(), by="ana"))
    # the driver let go and finished its run: nothing of a migration was written meanwhile
    assert not any(
        isinstance(e, MigrationStep) for e in run(load_events(open_store(store), "pago"))
    )


def test_a_migration_survives_an_export_and_an_import_and_its_digest_covers_it():
    from synaptum_lite.stores.transfer import export_run, import_run

    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=8))
    run(migrate(store, "r", cajero_v2(), by="operadora"))
    lines = run(export_run(store, "r"))
    assert any('"000004-migration"' in line for line in lines)
    elsewhere = MemoryCheckpointer()
    run(import_run(elsewhere, lines))
    assert run(elsewhere.records("r")) == run(store.records("r"))
    with pytest.raises(ConfigurationChanged):
        run(drive(cajero(), elsewhere))
    steps, double = run(drive(cajero_v2(), elsewhere))
    assert steps[-1].output == ANSWER and (double.model_calls, double.tool_calls) == (2, 1)
    edited = [line.replace('\\"by\\":\\"operadora\\"', '\\"by\\":\\"mallory\\"') for line in lines]
    assert edited != lines
    with pytest.raises(Exception, match="digest|chain"):
        run(import_run(MemoryCheckpointer(), edited))


def test_a_step_that_meant_another_tool_still_diverges_after_a_migration():
    """The fingerprint check is skipped before the cut only; a journaled call is still the
    call the model's recorded answer makes, and a gone tool is still named on resume."""
    store = MemoryCheckpointer()
    run(drive(cajero(), store, stop_at=4))
    run(migrate(store, "r", cajero_v2(), by="ana"))
    gone = Agent(
        "cajero",
        model="guionizado",
        instructions="Opera con cuidado y confirma cada paso.",
        tools=renamed("consultar_saldo"),
        version="v2",
    )
    with pytest.raises(ReplayDivergence, match="000000-tool|000001-tool"):
        run(drive(gone, store))
