"""Approvals and policy, streaming, retries, capping, usage and delegation: counted."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ApprovalStep,
    DelegationStep,
    FinalStep,
    MemoryCheckpointer,
    NothingToResolve,
    Phase,
    ProviderError,
    ReplayDivergence,
    Risk,
    Role,
    Session,
    TextFragment,
    ToolStep,
    Usage,
    Verdict,
    load_events,
    run_usage,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

from .conftest import run

TRANSFERS: list[str] = []


@tool(risk=Risk.DESTRUCTIVE)
def transferir(destino: str, importe: float) -> str:
    """Transfiere dinero."""
    TRANSFERS.append(destino)
    return f"transferidos {importe:.2f} € a {destino}"


@tool(risk=Risk.READ, idempotent=True)
def consultar(cuenta: str) -> str:
    """Consulta el saldo."""
    return f"{cuenta}: 4.200,00 €"


def responder(request):
    """Transfer once; then say what the tool answered (or that it was refused)."""
    results = [m for m in request.messages if m.role is Role.TOOL]
    if not results:
        return calls("transferir", destino="ES12", importe=100.0)
    return says(("No pude: " if results[-1].is_error else "Hecho: ") + results[-1].content)


def careful(proposal):
    if proposal.risk is Risk.DESTRUCTIVE:
        return Verdict.require_approval("mueve dinero")
    return Verdict.allow()


AGENTE = Agent("cajero", model="m", instructions="Opera.", tools=[transferir, consultar])
NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def session(store, policy=careful, run_id="r") -> tuple[Session, ScriptedGateway]:
    gateway = ScriptedGateway([responder] * 5, policy=policy)
    return Session(run_id, gateway, store, clock=lambda: NOON), gateway


async def drive(agent: Agent, session: Session, task: str = "Transfiere 100 € a ES12") -> list[Any]:
    return [step async for step in agent.run(task, session=session)]


@pytest.fixture(autouse=True)
def _clean():
    TRANSFERS.clear()


def test_an_approval_suspends_the_run_and_a_grant_runs_the_call_exactly_once():
    store = MemoryCheckpointer()
    first, gateway = session(store)
    steps = run(drive(AGENTE, first))
    assert isinstance(steps[-1], ApprovalStep) and steps[-1].pending
    assert (steps[-1].step_id, steps[-1].reason, gateway.model_calls, TRANSFERS) == (
        "000001-approval",
        "mueve dinero",
        1,
        [],
    )
    assert run(store.load("r")).final is None  # suspended on disk, not closed

    run(first.decide("000001-approval", granted=True, by="ana"))
    with pytest.raises(NothingToResolve):
        run(first.decide("000001-approval", granted=False, by="ana"))

    second, gateway2 = session(store)
    steps = run(drive(AGENTE, second))
    assert steps[-1].output == "Hecho: transferidos 100.00 € a ES12"
    assert (gateway2.model_calls, TRANSFERS) == (1, ["ES12"])
    decision = next(s for s in steps if isinstance(s, ApprovalStep)).decision
    assert {k: decision[k] for k in ("granted", "by", "at")} == {
        "granted": True,
        "by": "ana",
        "at": "2026-11-29T12:00:00+00:00",
    }
    assert decision["call"] == {
        "id": "call_2_0",
        "name": "transferir",
        "arguments": {"destino": "ES12", "importe": 100.0},
    }

    third, gateway3 = session(store)
    assert len(run(drive(AGENTE, third))) == 1
    assert (gateway3.model_calls, TRANSFERS) == (0, ["ES12"])


def test_a_waiting_run_resumed_before_the_decision_asks_nobody_again():
    store = MemoryCheckpointer()
    run(drive(AGENTE, session(store)[0]))
    again, gateway = session(store)
    steps = run(drive(AGENTE, again))
    assert [(type(s).__name__, s.replayed) for s in steps][-1] == ("ApprovalStep", True)
    assert gateway.model_calls == 0
    assert [e.step_id for e in run(load_events(store, "r"))].count("000001-approval") == 1


def test_a_denial_is_told_to_the_model_and_is_final():
    store = MemoryCheckpointer()
    first, _ = session(store)
    run(drive(AGENTE, first))
    run(first.decide("000001-approval", granted=False, by="ana", note="importe sin justificar"))
    steps = run(drive(AGENTE, session(store)[0]))
    assert steps[-1].output == "No pude: denied by ana: importe sin justificar"
    assert TRANSFERS == []


def test_a_later_grant_supersedes_a_not_now_and_a_crash_after_the_execution_does_not_repeat_it():
    store = MemoryCheckpointer()
    first, _ = session(store)
    run(drive(AGENTE, first))
    run(first.decide("000001-approval", granted=False, by="ana", note="ahora no", final=False))
    steps = run(drive(AGENTE, session(store)[0]))
    assert isinstance(steps[-1], ApprovalStep) and steps[-1].pending and TRANSFERS == []
    run(first.decide("000001-approval", granted=True, by="luis"))

    async def crash_after_the_transfer():
        async for step in AGENTE.run("Transfiere 100 € a ES12", session=session(store)[0]):
            if isinstance(step, ToolStep) and step.phase.value == "completed":
                return

    run(crash_after_the_transfer())
    steps = run(drive(AGENTE, session(store)[0]))
    assert steps[-1].output == "Hecho: transferidos 100.00 € a ES12"
    assert TRANSFERS == ["ES12"]


def test_a_policy_denial_is_a_recorded_outcome_and_terminate_closes_the_run():
    store = MemoryCheckpointer()
    steps = run(
        drive(
            AGENTE,
            session(
                store,
                policy=lambda p: Verdict.deny("fuera de horario") if p.tool else Verdict.allow(),
            )[0],
        )
    )
    refused = [s for s in steps if isinstance(s, ToolStep) and s.decision]
    assert refused[0].decision == {"action": "deny", "by": "policy", "reason": "fuera de horario"}
    assert steps[-1].output == "No pude: denied by policy: fuera de horario"

    store = MemoryCheckpointer()
    stop = session(
        store,
        policy=lambda p: Verdict.terminate("riesgo") if p.tool else Verdict.allow(),
        run_id="t",
    )[0]
    steps = run(drive(AGENTE, stop))
    final = steps[-1]
    assert isinstance(final, FinalStep) and (final.output, final.reason) == (None, "riesgo")
    assert TRANSFERS == [] and run(store.load("t")).closed


def test_streaming_yields_fragments_inside_the_model_step_and_closing_stops_upstream():
    long_text = "El saldo de la cuenta ES91 es de 4.200,00 euros a día de hoy."
    agent = Agent("a", model="m", instructions="i")
    gateway = ScriptedGateway([says(long_text)], chunk_size=8)
    steps = run(_collect(agent.stream("t", session=Session("r", gateway, MemoryCheckpointer()))))
    kinds = [(s.kind, getattr(s, "phase", None) and s.phase.value) for s in steps]
    assert (
        kinds[0] == ("model", "attempted")
        and kinds[-2] == ("model", "completed")
        and kinds[-1][0] == "final"
    )
    assert "".join(s.text for s in steps if isinstance(s, TextFragment)) == long_text
    assert gateway.chunks_emitted == 8 and not gateway.stream_closed

    cut = ScriptedGateway([says(long_text)], chunk_size=8)
    store = MemoryCheckpointer()

    async def three_fragments():
        received = 0
        stream = agent.stream("t", session=Session("c", cut, store))
        async with contextlib.aclosing(stream):
            async for step in stream:
                if isinstance(step, TextFragment):
                    received += 1
                    if received == 3:
                        break
        return received

    assert run(three_fragments()) == 3
    assert (cut.chunks_emitted, cut.stream_closed) == (3, True)
    assert [(e.step_id, e.phase.value) for e in run(load_events(store, "c"))] == [
        ("000000-model", "attempted")
    ]
    # resumed: the step runs again whole; nothing journaled is replayed as fragments
    again = ScriptedGateway([says(long_text)])
    steps = run(_collect(agent.stream("t", session=Session("c", again, store))))
    assert steps[-1].output == long_text and again.model_calls == 1


def test_retryable_errors_are_retried_with_backoff_and_retry_after_others_fail_at_once():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    agent = Agent("a", model="m", instructions="i")
    script = [
        ProviderError("rate limited", retryable=True, status=429, retry_after=7.0),
        ProviderError("server error", retryable=True, status=500),
        says("por fin"),
    ]
    gateway = ScriptedGateway(script)
    from synaptum_lite import RetryPolicy

    retry = RetryPolicy(base=0.5, random=lambda: 1.0)
    steps = run(
        drive(agent, Session("r", gateway, MemoryCheckpointer(), retry=retry, sleep=sleep), "t")
    )
    assert steps[-1].output == "por fin"
    assert (waits, gateway.model_calls) == ([7.0, 1.0], 3)

    waits.clear()
    bad = ScriptedGateway(
        [ProviderError("bad request", retryable=False, status=400), says("nunca")]
    )
    with pytest.raises(ProviderError, match="bad request"):
        run(drive(agent, Session("b", bad, MemoryCheckpointer(), sleep=sleep), "t"))
    assert (waits, bad.model_calls) == ([], 1)


def test_a_retry_after_longer_than_the_cap_waits_the_cap():
    from synaptum_lite import RetryPolicy

    retry = RetryPolicy(cap=30.0, random=lambda: 1.0)
    assert retry.delay(1, 3600) == 30.0 == retry.cap
    assert retry.delay(1, 7) == 7.0

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    gateway = ScriptedGateway(
        [ProviderError("come back in an hour", retryable=True, status=429, retry_after=3600.0)]
        + [says("por fin")]
    )
    agent = Agent("a", model="m", instructions="i")
    steps = run(
        drive(agent, Session("r", gateway, MemoryCheckpointer(), retry=retry, sleep=sleep), "t")
    )
    assert steps[-1].output == "por fin" and waits == [30.0]


def test_a_failing_non_idempotent_tool_is_not_retried():
    runs = []

    @tool(risk=Risk.HARD_WRITE)
    def cobrar(importe: float) -> str:
        """Cobra."""
        runs.append(importe)
        raise TimeoutError("el banco no contesta")

    agent = Agent("a", model="m", instructions="i", tools=[cobrar])
    gateway = ScriptedGateway([calls("cobrar", importe=5.0), says("no se pudo cobrar")])
    steps = run(drive(agent, Session("r", gateway, MemoryCheckpointer()), "t"))
    assert runs == [5.0] and steps[-1].output == "no se pudo cobrar"


def test_a_failing_idempotent_tool_is_not_retried_either():
    # the runtime retries no failed tool: being idempotent makes a retry safe, not automatic
    runs = []

    @tool(risk=Risk.READ, idempotent=True)
    def consultar(cuenta: str) -> str:
        """Consulta."""
        runs.append(cuenta)
        raise ConnectionError("el banco no contesta")

    agent = Agent("a", model="m", instructions="i", tools=[consultar])
    gateway = ScriptedGateway([calls("consultar", cuenta="ES91"), says("no contesta")])
    store = MemoryCheckpointer()
    steps = run(drive(agent, Session("r", gateway, store), "t"))
    assert runs == ["ES91"] and steps[-1].output == "no contesta"
    [completed] = [s for s in steps if isinstance(s, ToolStep) and s.phase.value == "completed"]
    assert completed.result.is_error and "ConnectionError" in completed.result.content


def test_tool_output_is_capped_where_the_context_is_assembled_and_kept_whole_in_the_journal():
    @tool(risk=Risk.READ, idempotent=True)
    def listar(n: int) -> str:
        """Lista."""
        return "x" * n

    agent = Agent("a", model="m", instructions="i", tools=[listar], max_tool_output=10)
    store = MemoryCheckpointer()

    def answer(request):
        tool_messages = [m for m in request.messages if m.role is Role.TOOL]
        return says(tool_messages[0].content) if tool_messages else calls("listar", n=25)

    gateway = ScriptedGateway([answer, answer])
    steps = run(drive(agent, Session("r", gateway, store), "t"))
    assert steps[-1].output == "xxxxxxxxxx\n[… 15 characters omitted]"
    journaled = [e for e in run(load_events(store, "r")) if isinstance(e, ToolStep) and e.result]
    assert journaled[0].result.content == "x" * 25


def test_usage_keeps_unmeasured_apart_from_zero():
    assert Usage(3, None) + Usage(2, 5) == Usage(5, None, None)
    assert Usage(3, 1, 0) + Usage(2, 5, 1) == Usage(5, 6, 1)
    assert not Usage().measured


def test_usage_from_the_journal_counts_a_resumed_run_once_and_rolls_up_sub_runs():
    investigador = Agent(
        "investigador", model="m", instructions="Investiga y resume.", tools=[consultar]
    )
    jefe = Agent("jefe", model="m", instructions="Delega.", delegates=[investigador])
    assert jefe.risk is Risk.READ

    def answer(request):
        system = request.messages[0].content
        results = [m for m in request.messages if m.role is Role.TOOL]
        if system.startswith("Investiga"):
            return (
                calls("consultar", cuenta="ES91")
                if not results
                else says("Saldo: " + results[0].content)
            )
        return (
            calls("investigador", task="averigua el saldo de ES91")
            if not results
            else says(results[0].content)
        )

    store = MemoryCheckpointer()

    async def die_after_delegation():
        async for step in jefe.run(
            "¿saldo?", session=Session("padre", ScriptedGateway([answer] * 4), store)
        ):
            if isinstance(step, DelegationStep) and step.phase.value == "completed":
                return step

    delegation = run(die_after_delegation())
    assert delegation.sub_run_id == "padre/000001-delegate"
    assert run(store.load("padre/000001-delegate")).closed

    gateway = ScriptedGateway([answer] * 4)
    steps = run(drive(jefe, Session("padre", gateway, store), "¿saldo?"))
    assert gateway.model_calls == 1  # the child is not run again; only the parent's answer
    assert steps[-1].output == "Saldo: ES91: 4.200,00 €"
    report = run(run_usage(store, "padre"))
    child = run(run_usage(store, "padre/000001-delegate"))
    assert report.delegated == child.total and child.total.input_tokens > 0
    assert report.total == report.own + child.total == steps[-1].usage
    assert [t.input_growth for t in report.turns][0] is None and report.turns[1].input_growth > 0


async def _collect(steps):
    return [step async for step in steps]


def test_a_grant_journaled_for_another_call_never_runs_the_call_the_model_made():
    store = MemoryCheckpointer()
    first, _ = session(store)
    steps = run(drive(AGENTE, first))
    assert isinstance(steps[-1], ApprovalStep) and steps[-1].pending  # asked about ES12
    # a journal (copied, merged, edited) whose request and grant at that position are for
    # another call: the grant a person gave is bound to the call it names
    other = calls("transferir", destino="ES99", importe=9999.0).tool_calls[0]
    foreign = ApprovalStep(
        run_id="r", step_id="000001-approval", phase=Phase.ATTEMPTED, call=other, reason="otra"
    )
    granted = dataclasses.replace(
        foreign,
        phase=Phase.COMPLETED,
        attempt=1,
        decision={"granted": True, "by": "ana", "at": "", "note": "", "call": other.to_json()},
    )
    forged = MemoryCheckpointer()  # made by hand through the store's own API
    run(forged.start("r", run(store.load("r")).header))
    journaled = run(load_events(store, "r"))
    run(forged.append("r", [*journaled[:-1], foreign, granted]))  # not the request for ES12
    second, gateway = session(forged)
    with pytest.raises(ReplayDivergence) as divergence:
        run(drive(AGENTE, second))
    assert divergence.value.step_id == "000001-approval"
    assert (TRANSFERS, gateway.model_calls) == ([], 0)
