"""The resume rules, counted: done / new / uncertain / closed, configuration and divergence."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ApprovalStep,
    ConfigurationChanged,
    FinalStep,
    MemoryCheckpointer,
    ModelStep,
    NothingToResolve,
    Phase,
    ReplayDivergence,
    Risk,
    Role,
    Session,
    SqliteCheckpointer,
    StepLimitExceeded,
    ToolContext,
    ToolResult,
    ToolResultNotSerializable,
    ToolStep,
    UncertainEffect,
    Verdict,
    load_events,
    tool,
)
from synaptum_lite.journal import Journal
from synaptum_lite.stores.transfer import export_run, import_run
from synaptum_lite.testing import ScriptedGateway, calls, says

from .conftest import run

TASK = "¿Cuánto hay en ES91?"


class Counter:
    def __init__(self) -> None:
        self.runs = 0
        self.keys: list[str] = []


def make_agent(
    counter: Counter, *, idempotent: bool = False, instructions: str = "Consulta saldos.", **kw: Any
):
    @tool(risk=Risk.READ, idempotent=idempotent)
    def consultar_saldo(cuenta: str, contexto: ToolContext) -> str:
        """Consulta el saldo de una cuenta."""
        counter.runs += 1
        counter.keys.append(contexto.idempotency_key)
        return f"{cuenta}: 4.200,00 €"

    return Agent(
        "cajero", model="guionizado", instructions=instructions, tools=[consultar_saldo], **kw
    )


def responder(request):
    if any(m.role is Role.TOOL for m in request.messages):
        return says("El saldo es de 4.200,00 €.")
    return calls("consultar_saldo", cuenta="ES91")


async def drive(
    agent: Agent, session: Session, stop_after: tuple[str, str] | None = None
) -> list[Any]:
    steps = []
    async for step in agent.run(TASK, session=session):
        steps.append(step)
        if (
            stop_after
            and (step.kind, getattr(step, "phase", None) and step.phase.value) == stop_after
        ):
            break
    return steps


def reached(step: Any, at: tuple[str, str]) -> bool:
    return (step.kind, getattr(step, "phase", None) and step.phase.value) == at


async def stop_at(agent: Agent, session: Session, at: tuple[str, str]) -> None:
    """Stop iterating right after receiving the event `at`, and close the run's generator."""
    steps = agent.run(TASK, session=session)
    async with contextlib.aclosing(steps):
        async for step in steps:
            if reached(step, at):
                return


async def crash(
    agent: Agent, session: Session, at: tuple[str, str], into: Any = None
) -> MemoryCheckpointer:
    """What a process killed right after receiving the event `at` leaves: the journal as it
    stands at that instant, copied into a store of its own (`into`, or a new one in memory).
    (Closing the generator is not a crash: the runtime journals what it knows as it closes.
    `test_kill` kills for real.)"""
    steps = agent.run(TASK, session=session)
    async with contextlib.aclosing(steps):
        async for step in steps:
            if reached(step, at):
                survivor = into if into is not None else MemoryCheckpointer()
                await import_run(survivor, await export_run(session.checkpointer, session.run_id))
                return survivor
    raise AssertionError(f"the run never yielded {at}")


def session(checkpointer, run_id: str = "r") -> tuple[Session, ScriptedGateway]:
    gateway = ScriptedGateway([responder] * 5)
    return Session(run_id, gateway, checkpointer), gateway


def test_resume_skips_tool_calls_already_journaled():
    counter, store = Counter(), MemoryCheckpointer()
    agent = make_agent(counter)
    first, gateway1 = session(store)
    run(drive(agent, first, stop_after=("tool", "completed")))
    assert (gateway1.model_calls, counter.runs) == (1, 1)

    second, gateway2 = session(store)
    steps = run(drive(agent, second))
    assert (gateway2.model_calls, counter.runs) == (1, 1)
    assert steps[-1].output == "El saldo es de 4.200,00 €."
    replayed = [(s.step_id, s.phase.value) for s in steps if s.replayed]
    assert replayed == [("000000-model", "completed"), ("000001-tool", "completed")]


def test_a_closed_run_returns_its_final_step_and_calls_nothing(tmp_path: Path):
    counter = Counter()
    agent = make_agent(counter)
    run(drive(agent, session(SqliteCheckpointer(tmp_path / "r.db"))[0]))
    again, gateway = session(SqliteCheckpointer(tmp_path / "r.db"))
    steps = run(drive(agent, again))
    assert len(steps) == 1 and isinstance(steps[0], FinalStep) and steps[0].replayed
    assert steps[0].output == "El saldo es de 4.200,00 €."
    assert (gateway.model_calls, counter.runs) == (0, 1)


def test_a_resumed_journal_decodes_a_position_when_reached_and_lets_it_go_once_passed():
    """What a resume holds (journal.py): each position's records, decoded when the loop asks
    for them, and nothing once it has passed them; never the whole journal decoded beside."""
    store = MemoryCheckpointer()
    agent = make_agent(Counter())
    first, _ = session(store)
    run(drive(agent, first, stop_after=("tool", "completed")))
    journal, closed = run(Journal.open("r", store, agent.configuration, TASK))
    assert closed is None
    assert (sorted(journal._unread), journal._read) == ([0, 1], {})
    model = journal.peek()  # decoded, held until passed
    assert model is not None and isinstance(model.completed, ModelStep)
    assert (sorted(journal._unread), list(journal._read)) == ([1], [0])
    assert journal.next_step("model") == ("000000-model", model)
    assert (sorted(journal._unread), journal._read) == ([1], {})
    step_id, tool_step = journal.next_step("tool")
    assert step_id == "000001-tool" and isinstance(tool_step.completed, ToolStep)
    assert (journal._unread, journal._read) == ({}, {})
    assert journal.next_step("model") == ("000002-model", None)


def test_the_context_is_rederived_byte_for_byte():
    store = MemoryCheckpointer()
    agent = make_agent(Counter())
    whole, gateway_whole = session(MemoryCheckpointer())
    run(drive(agent, whole))
    first, _ = session(store)
    run(drive(agent, first, stop_after=("tool", "completed")))
    second, gateway2 = session(store)
    run(drive(agent, second))
    assert gateway2.requests[0].fingerprint() == gateway_whole.requests[1].fingerprint()
    assert gateway2.requests[0].messages == gateway_whole.requests[1].messages


def test_changed_instructions_are_refused_naming_the_field():
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0], stop_after=("tool", "completed")))
    with pytest.raises(ConfigurationChanged) as changed:
        run(drive(make_agent(Counter(), instructions="Otra cosa."), session(store)[0]))
    assert changed.value.fields == ["instructions"]
    assert "start a new run_id" in str(changed.value)


def test_a_renamed_tool_at_a_journaled_position_is_a_divergence_naming_the_step():
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0], stop_after=("tool", "completed")))

    @tool(risk=Risk.READ)
    def saldo(cuenta: str) -> str:
        """Consulta el saldo de una cuenta."""
        return "?"

    renamed = Agent("cajero", model="guionizado", instructions="Consulta saldos.", tools=[saldo])
    with pytest.raises(ReplayDivergence) as divergence:
        run(drive(renamed, session(store)[0]))
    assert divergence.value.step_id == "000001-tool"
    assert "consultar_saldo" in str(divergence.value)


def test_a_paid_model_step_whose_context_the_journal_no_longer_derives_is_refused():
    """Each paid model step keeps the fingerprint of the request that left; a journal whose
    tool result was changed by hand derives another context for the next model step."""
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0]))  # closed: two model steps paid
    *journaled, final = run(load_events(store, "r"))
    assert isinstance(final, FinalStep)
    # made by hand through the store's own API: the tool's result changed, and the final step
    # dropped, so the run is open again
    changed = [
        dataclasses.replace(e, result=ToolResult("ES91: 9.999,00 €"))
        if isinstance(e, ToolStep) and e.result is not None
        else e
        for e in journaled
    ]
    assert changed != journaled
    edited = MemoryCheckpointer()
    run(edited.start("r", run(store.load("r")).header))
    run(edited.append("r", changed))
    counter, (resumed, gateway) = Counter(), session(edited)
    with pytest.raises(ReplayDivergence) as divergence:
        run(drive(make_agent(counter), resumed))
    assert divergence.value.step_id == "000002-model"  # the first step derived otherwise
    assert (gateway.model_calls, counter.runs) == (0, 0)  # nothing paid, nothing run


def test_a_journaled_tool_step_for_another_call_is_refused():
    store = MemoryCheckpointer()
    agent = make_agent(Counter())
    run(drive(agent, session(store)[0], stop_after=("model", "completed")))
    # the journal now claims a tool step at position 1 for another call than the model made
    foreign = ToolStep(
        run_id="r",
        step_id="000001-tool",
        phase=Phase.ATTEMPTED,
        call=calls("borrar", todo=True).tool_calls[0],
    )
    run(store.append("r", [foreign]))
    counter = Counter()
    with pytest.raises(ReplayDivergence) as divergence:
        run(drive(make_agent(counter), session(store)[0]))
    assert divergence.value.step_id == "000001-tool"
    assert counter.runs == 0


@pytest.mark.parametrize(
    "forged",
    [{"arguments": {"cuenta": "ES12"}}, {"id": "call_9_9"}],
    ids=["other-arguments", "other-call-id"],
)
def test_a_journaled_call_to_the_same_tool_with_other_arguments_or_id_is_a_divergence(
    tmp_path: Path, forged: dict[str, Any]
):
    """A journal made by hand through the store's own API, in a real SQLite file: at position
    1 it holds a completed call to the very tool the model calls there, with other arguments
    or another call id. Its result answers another call: it is neither returned nor re-run."""
    path = tmp_path / "runs.db"
    run(drive(make_agent(Counter()), session(SqliteCheckpointer(path))[0], ("model", "completed")))
    store = SqliteCheckpointer(path)
    model = run(load_events(store, "r"))[-1]
    assert isinstance(model, ModelStep) and model.response is not None
    made = model.response.tool_calls[0]
    other = dataclasses.replace(made, **forged)
    attempted = ToolStep(run_id="r", step_id="000001-tool", phase=Phase.ATTEMPTED, call=other)
    result = ToolResult("ES12: 0,00 €")
    run(
        store.append(
            "r", [attempted, dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result)]
        )
    )

    counter = Counter()
    resumed, gateway = session(SqliteCheckpointer(path))
    with pytest.raises(ReplayDivergence) as divergence:
        run(drive(make_agent(counter), resumed))
    assert divergence.value.step_id == "000001-tool"
    assert divergence.value.recorded == (
        f"a call {other.id!r} to 'consultar_saldo' with {other.arguments!r}"
    )
    assert divergence.value.produced == (
        f"a call {made.id!r} to 'consultar_saldo' with {{'cuenta': 'ES91'}}"
    )
    assert (gateway.model_calls, counter.runs) == (0, 0)  # nothing paid, nothing run
    assert len(run(load_events(store, "r"))) == 4  # and nothing written


def test_an_attempted_non_idempotent_tool_is_uncertain_until_an_operator_records_its_result():
    first, _ = session(MemoryCheckpointer())
    store = run(crash(make_agent(Counter()), first, at=("tool", "attempted")))

    counter = Counter()
    with pytest.raises(UncertainEffect) as uncertain:
        run(drive(make_agent(counter), session(store)[0]))
    error = uncertain.value
    assert (error.run_id, error.step_id, error.tool, error.arguments) == (
        "r",
        "000001-tool",
        "consultar_saldo",
        {"cuenta": "ES91"},
    )
    assert counter.runs == 0

    operator, _ = session(store)
    run(operator.record_result("000001-tool", "ES91: 4.200,00 €", by="ana"))
    with pytest.raises(NothingToResolve):
        run(operator.record_result("000001-tool", "otra vez", by="ana"))
    steps = run(drive(make_agent(counter), session(store)[0]))
    assert counter.runs == 0
    assert steps[-1].output == "El saldo es de 4.200,00 €."
    decided = [e for e in run(load_events(store, "r")) if isinstance(e, ToolStep) and e.decision]
    assert decided[0].decision == {"action": "record", "by": "ana"}


def test_an_allowed_retry_runs_the_tool_once_with_the_same_idempotency_key():
    first, _ = session(MemoryCheckpointer())
    store = run(crash(make_agent(Counter()), first, at=("tool", "attempted")))
    operator, _ = session(store)
    run(operator.allow_retry("000001-tool", by="ana"))
    counter = Counter()
    store = run(crash(make_agent(counter), session(store)[0], at=("tool", "attempted")))
    # the retry was itself interrupted: uncertain again, not silently retried twice
    with pytest.raises(UncertainEffect):
        run(drive(make_agent(counter), session(store)[0]))
    operator, _ = session(store)
    run(operator.allow_retry("000001-tool", by="ana"))
    run(drive(make_agent(counter), session(store)[0]))
    assert counter.runs == 1
    assert counter.keys == ["r/000001-tool"]
    attempts = [
        e.attempt
        for e in run(load_events(store, "r"))
        if e.step_id == "000001-tool" and e.phase is Phase.ATTEMPTED
    ]
    assert attempts == [1, 2, 3]


@pytest.mark.parametrize("closing", ["aclose", "break"])
def test_a_run_closed_right_after_a_non_idempotent_tools_attempted_event_runs_it_on_resume_unasked(
    tmp_path: Path, closing: str
):
    store = SqliteCheckpointer(tmp_path / "runs.db")
    if closing == "aclose":
        run(stop_at(make_agent(Counter()), session(store)[0], ("tool", "attempted")))
    else:  # the consumer just stops; the event loop closes the generator
        run(drive(make_agent(Counter()), session(store)[0], stop_after=("tool", "attempted")))

    counter = Counter()
    steps = run(drive(make_agent(counter), session(SqliteCheckpointer(tmp_path / "runs.db"))[0]))
    assert steps[-1].output == "El saldo es de 4.200,00 €."
    assert counter.runs == 1 and counter.keys == ["r/000001-tool"]
    journal = [
        (e.step_id, e.phase.value, e.attempt, getattr(e, "decision", None))
        for e in run(load_events(store, "r"))
        if e.step_id == "000001-tool"
    ]
    not_started = {
        "action": "not_started",
        "by": "runtime",
        "reason": "the run was closed before the tool began",
    }
    assert journal == [
        ("000001-tool", "attempted", 1, None),
        ("000001-tool", "resolved", 1, not_started),
        ("000001-tool", "attempted", 2, None),
        ("000001-tool", "completed", 2, None),
    ]


def test_an_attempted_idempotent_tool_simply_runs_again():
    store = MemoryCheckpointer()
    run(
        drive(
            make_agent(Counter(), idempotent=True),
            session(store)[0],
            stop_after=("tool", "attempted"),
        )
    )
    counter = Counter()
    steps = run(drive(make_agent(counter, idempotent=True), session(store)[0]))
    assert counter.runs == 1 and steps[-1].output == "El saldo es de 4.200,00 €."


def test_an_interrupted_model_call_is_paid_again_only_once():
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0], stop_after=("model", "attempted")))
    again, gateway = session(store)
    run(drive(make_agent(Counter()), again))
    assert gateway.model_calls == 2  # the interrupted call, then the final answer
    model_attempts = [
        e.attempt
        for e in run(load_events(store, "r"))
        if isinstance(e, ModelStep) and e.phase is Phase.ATTEMPTED
    ]
    assert model_attempts == [1, 2, 1]


def test_tool_failures_and_bad_calls_become_results_the_model_reads():
    @tool(risk=Risk.READ, idempotent=True)
    def dividir(a: int, b: int) -> float:
        """Divide a entre b."""
        return a / b

    script = [
        calls("dividir", a=1, b=0),
        calls("dividir", a="uno", b=2),
        calls("dividir", a=1),
        calls("multiplicar", a=1, b=2),
        calls("dividir", a=4, b=2),
        says("2.0"),
    ]
    agent = Agent("calc", model="m", instructions="Calcula.", tools=[dividir])
    gateway = ScriptedGateway(script)
    steps = run(drive(agent, Session("r", gateway, MemoryCheckpointer())))
    results = [s.result for s in steps if isinstance(s, ToolStep) and s.phase is Phase.COMPLETED]
    assert [r.is_error for r in results] == [True, True, True, True, False]
    assert results[0].content == "ZeroDivisionError: division by zero"
    assert "dividir.a must be integer, got 'uno'" in results[1].content
    assert "missing required argument(s) b" in results[2].content
    assert "there is no tool 'multiplicar'" in results[3].content
    assert results[4].content == "2.0"
    last_request = gateway.requests[-1]
    assert [m.is_error for m in last_request.messages if m.role is Role.TOOL] == [
        True,
        True,
        True,
        True,
        False,
    ]


def test_a_result_that_cannot_be_journaled_is_a_clear_error_and_loses_nothing():
    @tool(risk=Risk.READ, idempotent=True)
    def abrir(nombre: str) -> object:
        """Abre algo."""
        return object()

    store = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[abrir])
    with pytest.raises(ToolResultNotSerializable) as error:
        run(drive(agent, Session("r", ScriptedGateway([calls("abrir", nombre="x")]), store)))
    assert (error.value.step_id, error.value.tool, error.value.value_type) == (
        "000001-tool",
        "abrir",
        "object",
    )
    kept = [(e.step_id, e.phase.value) for e in run(load_events(store, "r"))]
    assert kept == [
        ("000000-model", "attempted"),
        ("000000-model", "completed"),
        ("000001-tool", "attempted"),
    ]


def test_max_steps_stops_a_looping_model_and_says_where():
    agent = make_agent(Counter(), max_steps=3)
    looping = ScriptedGateway([calls("consultar_saldo", cuenta="ES91")] * 10)
    store = MemoryCheckpointer()
    with pytest.raises(StepLimitExceeded) as limit:
        run(drive(agent, Session("r", looping, store)))
    assert looping.model_calls == 3
    assert limit.value.last_step_id == "000005-tool"
    assert run(store.load("r")).next_seq == 12


def test_max_steps_lowered_on_resume_names_the_last_step_on_disk_and_pays_nothing():
    store = MemoryCheckpointer()
    first = ScriptedGateway([calls("consultar_saldo", cuenta="ES91")] * 10)
    with pytest.raises(StepLimitExceeded) as limit:
        run(drive(make_agent(Counter(), max_steps=5), Session("r", first, store)))
    assert (first.model_calls, limit.value.last_step_id) == (5, "000009-tool")

    again = ScriptedGateway([calls("consultar_saldo", cuenta="ES91")] * 10)
    with pytest.raises(StepLimitExceeded) as lower:
        run(drive(make_agent(Counter(), max_steps=3), Session("r", again, store)))
    # it stops after replaying three turns, but the journal goes on to 000009-tool
    assert again.model_calls == 0
    assert lower.value.last_step_id == "000009-tool"
    assert run(load_events(store, "r"))[-1].step_id == "000009-tool"


def test_typed_output_shows_an_invalid_answer_to_the_model_and_returns_the_object():
    @dataclasses.dataclass
    class Saldo:
        cuenta: str
        euros: float

    agent = Agent("cajero", model="m", instructions="Responde en JSON.", output=Saldo)
    gateway = ScriptedGateway(
        [says("4.200 €"), says('```json\n{"cuenta": "ES91", "euros": 4200}\n```')]
    )
    store = MemoryCheckpointer()
    steps = run(drive(agent, Session("r", gateway, store)))
    assert steps[-1].output == Saldo("ES91", 4200.0)
    assert gateway.model_calls == 2
    assert "Your answer is not valid" in gateway.requests[1].messages[-1].content
    closed = run(drive(agent, Session("r", ScriptedGateway([]), store)))
    assert closed[0].output == Saldo("ES91", 4200.0)


def test_runs_side_by_side_share_one_file_and_one_event_loop(tmp_path: Path):
    import asyncio

    counter = Counter()
    agent = make_agent(counter)

    async def both():
        return await asyncio.gather(
            *(
                drive(agent, session(SqliteCheckpointer(tmp_path / "r.db"), f"run-{i}")[0])
                for i in range(8)
            )
        )

    results = run(both())
    assert [r[-1].output for r in results] == ["El saldo es de 4.200,00 €."] * 8
    assert counter.runs == 8


def test_a_closed_run_is_not_returned_to_another_agent_and_the_error_names_only_what_changed():
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0]))
    with pytest.raises(ConfigurationChanged) as changed:
        run(drive(make_agent(Counter(), instructions="Otra cosa."), session(store)[0]))
    assert changed.value.changes == {"instructions": ("Consulta saldos.", "Otra cosa.")}


def test_an_invalid_typed_answer_is_explained_to_the_model_in_its_own_words():
    @dataclasses.dataclass
    class Presupuesto:
        noches: int

    agent = Agent("a", model="m", instructions="i", output=Presupuesto)
    gateway = ScriptedGateway([says('{"noches": "tres"}'), says("tres"), says('{"noches": 3}')])
    steps = run(drive(agent, Session("r", gateway, MemoryCheckpointer())))
    assert steps[-1].output == Presupuesto(3)
    feedback = [r.messages[-1].content for r in gateway.requests[1:]]
    assert feedback[0].startswith(
        "Your answer is not valid (output.noches must be integer, got 'tres')."
    )
    assert feedback[1].startswith("Your answer is not valid (it is not JSON: ")


# ── guarantees each held only because nobody broke them ──────────────────────────────────────


def cajero_with(*, idempotent: bool = False, risk: Risk = Risk.READ, cuenta: type = str) -> Agent:
    """The cashier of `make_agent`, its tool changed under the same name and description."""
    counter = Counter()

    def consultar_saldo(cuenta: str, contexto: ToolContext) -> str:
        """Consulta el saldo de una cuenta."""
        counter.runs += 1
        return f"{cuenta}: 4.200,00 €"

    consultar_saldo.__annotations__["cuenta"] = cuenta
    agent = Agent(
        "cajero",
        model="guionizado",
        instructions="Consulta saldos.",
        tools=[tool(consultar_saldo, risk=risk, idempotent=idempotent)],
    )
    agent.counter = counter  # type: ignore[attr-defined]
    return agent


@pytest.mark.parametrize(
    "changed",
    [{"idempotent": True}, {"risk": Risk.DESTRUCTIVE}, {"cuenta": int}],
    ids=["idempotent", "risk", "schema"],
)
@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
def test_a_tool_changed_under_the_same_name_refuses_the_resume_naming_tools(changed, closed):
    """Open or closed alike: a closed run returns what happened, but never to another agent."""
    store = MemoryCheckpointer()
    run(drive(cajero_with(), session(store)[0], None if closed else ("model", "completed")))
    assert run(store.load("r")).closed is closed

    agent = cajero_with(**changed)
    again, gateway = session(store)
    with pytest.raises(ConfigurationChanged) as error:
        run(drive(agent, again))
    assert error.value.fields == ["tools"]
    assert error.value.changes["tools"] == (["consultar_saldo"], ["consultar_saldo"])
    assert (gateway.model_calls, agent.counter.runs) == (0, 0)


@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
@pytest.mark.parametrize("more", [True, False], ids=["a-tool-more", "a-tool-less"])
def test_a_run_is_refused_to_an_agent_with_a_tool_more_or_less(closed, more):
    @tool(risk=Risk.READ, idempotent=True)
    def consultar_iban(cuenta: str) -> str:
        """Consulta el IBAN de una cuenta."""
        return "ES91 0000"

    store = MemoryCheckpointer()
    run(drive(cajero_with(), session(store)[0], None if closed else ("model", "completed")))
    tools = [*cajero_with().tools.values(), consultar_iban] if more else []
    agent = Agent("cajero", model="guionizado", instructions="Consulta saldos.", tools=tools)
    again, gateway = session(store)
    with pytest.raises(ConfigurationChanged) as error:
        run(drive(agent, again))
    gone, new = ([], ["consultar_iban"]) if more else (["consultar_saldo"], [])
    assert error.value.changes == {"tools": (gone, new)}
    assert (f"new {new!r}" if more else f"gone {gone!r}") in str(error.value)
    assert gateway.model_calls == 0


@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
@pytest.mark.parametrize(("before", "after"), [(100, 10), (None, 10), (10, None)])
def test_a_changed_tool_output_cap_is_refused_naming_the_field(closed, before, after):
    """The cap shapes every later context (where a result is cut): a resume under another cap
    would mix two contexts in one journal."""
    store = MemoryCheckpointer()
    first = make_agent(Counter(), max_tool_output=before)
    run(drive(first, session(store)[0], None if closed else ("tool", "completed")))

    counter = Counter()
    again, gateway = session(store)
    with pytest.raises(ConfigurationChanged) as changed:
        run(drive(make_agent(counter, max_tool_output=after), again))
    assert changed.value.changes == {"max_tool_output": (before, after)}
    assert f"max_tool_output: journaled {before!r}, now {after!r}" in str(changed.value)
    assert (gateway.model_calls, counter.runs) == (0, 0)


def test_a_step_of_another_kind_at_a_journaled_position_is_a_divergence_naming_both_kinds():
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0], stop_after=("model", "completed")))
    # the journal claims a model step at position 1, where the loop makes a tool step
    foreign = ModelStep(
        run_id="r", step_id="000001-model", phase=Phase.ATTEMPTED, fingerprint="0" * 24
    )
    run(store.append("r", [foreign]))

    counter = Counter()
    with pytest.raises(ReplayDivergence) as divergence:
        run(drive(make_agent(counter), session(store)[0]))
    assert divergence.value.step_id == "000001-tool"
    assert (divergence.value.recorded, divergence.value.produced) == (
        "a model step",
        "a tool step",
    )
    assert counter.runs == 0


def test_a_closed_run_called_with_another_task_is_refused_naming_the_task():
    store = MemoryCheckpointer()
    run(drive(make_agent(Counter()), session(store)[0]))

    again, gateway = session(store)

    async def other_task() -> list[Any]:
        return [s async for s in make_agent(Counter()).run("¿Y en ES12?", session=again)]

    with pytest.raises(ConfigurationChanged) as changed:
        run(other_task())
    assert changed.value.changes == {"task": (TASK, "¿Y en ES12?")}
    assert gateway.model_calls == 0


def test_replayed_model_calls_are_not_reviewed_by_the_policy_again():
    reviewed: list[tuple[str, str]] = []

    def policy(proposal):
        reviewed.append((proposal.step_id, proposal.kind))
        return Verdict.allow()

    store = MemoryCheckpointer()
    agent = make_agent(Counter(), idempotent=True)
    first = Session("r", ScriptedGateway([responder] * 5, policy=policy), store)
    run(drive(agent, first, stop_after=("tool", "completed")))
    assert reviewed == [("000000-model", "model"), ("000001-tool", "tool")]

    reviewed.clear()
    second = Session("r", ScriptedGateway([responder] * 5, policy=policy), store)
    steps = run(drive(agent, second))
    assert steps[-1].output == "El saldo es de 4.200,00 €."
    assert reviewed == [("000002-model", "model")]  # only the call that was paid now


def test_every_operator_decision_is_journaled_with_who_took_it(tmp_path: Path):
    path = tmp_path / "runs.db"
    # an uncertain step: one run killed after the attempt; a person records the result
    first, _ = session(MemoryCheckpointer(), "recorded")
    run(crash(make_agent(Counter()), first, ("tool", "attempted"), SqliteCheckpointer(path)))
    operator, _ = session(SqliteCheckpointer(path), "recorded")
    run(operator.record_result("000001-tool", "ES91: 4.200,00 €", by="marta"))
    # another: a person allows the retry
    first, _ = session(MemoryCheckpointer(), "retried")
    run(crash(make_agent(Counter()), first, ("tool", "attempted"), SqliteCheckpointer(path)))
    operator, _ = session(SqliteCheckpointer(path), "retried")
    run(operator.allow_retry("000001-tool", by="luis"))
    # an approval: a person grants it
    needs_approval = ScriptedGateway(
        [responder] * 5,
        policy=lambda p: Verdict.require_approval("mira") if p.tool else Verdict.allow(),
    )
    approver = Session("approved", needs_approval, SqliteCheckpointer(path))
    run(drive(make_agent(Counter()), approver))
    run(approver.decide("000001-approval", granted=True, by="ana", note="visto"))

    def decisions(run_id: str) -> list[tuple[str, str, dict[str, Any]]]:
        events = run(load_events(SqliteCheckpointer(path), run_id))  # read back from the file
        return [
            (e.step_id, e.phase.value, e.decision) for e in events if getattr(e, "decision", None)
        ]

    assert decisions("recorded") == [
        ("000001-tool", "completed", {"action": "record", "by": "marta"})
    ]
    assert decisions("retried") == [("000001-tool", "resolved", {"action": "retry", "by": "luis"})]
    [(step, phase, granted)] = decisions("approved")
    assert (step, phase) == ("000001-approval", "completed")
    assert {k: granted[k] for k in ("granted", "by", "note")} == {
        "granted": True,
        "by": "ana",
        "note": "visto",
    }
    assert isinstance(run(load_events(SqliteCheckpointer(path), "approved"))[-1], ApprovalStep)
