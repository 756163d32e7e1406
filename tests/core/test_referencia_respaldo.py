"""What the reference's docstrings say and no other test proved: each test here backs a paragraph
of `docs/referencia.md` (tests/docs/referencia_afirmaciones.json binds them)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ConfigurationError,
    CorruptJournal,
    MemoryCheckpointer,
    ModelRequest,
    ModelResponse,
    ModelStep,
    NothingToResolve,
    ProviderError,
    Risk,
    Role,
    RunBusy,
    Session,
    SqliteCheckpointer,
    TextFragment,
    Usage,
    Verdict,
    load_events,
    run_usage,
    tool,
)
from synaptum_lite.messages import ContextDigest
from synaptum_lite.stores.transfer import export_run, import_runs
from synaptum_lite.testing import ScriptedGateway, calls, says

from .conftest import run

EFFECTS: list[str] = []


@tool(risk=Risk.READ, idempotent=True)
def leer(cuenta: str) -> str:
    """Lee el saldo."""
    return f"{cuenta}: 10 €"


@tool(risk=Risk.DESTRUCTIVE)
def borrar(cuenta: str) -> str:
    """Borra la cuenta."""
    EFFECTS.append(cuenta)
    return f"{cuenta} borrada"


def read_then_answer(request: ModelRequest) -> ModelResponse:
    if not any(m.role is Role.TOOL for m in request.messages):
        return calls("leer", cuenta="ES91")
    return says("Saldo leído.")


async def drive(agent: Agent, session: Session, task: str = "t") -> list[Any]:
    return [step async for step in agent.run(task, session=session)]


async def stream(agent: Agent, session: Session, task: str = "t") -> list[Any]:
    return [step async for step in agent.stream(task, session=session)]


def test_an_agents_risk_is_the_highest_of_its_tools_and_its_delegates():
    lector = Agent("lector", model="m", instructions="Lee.", tools=[leer], description="Lee.")
    borrador = Agent(
        "borrador", model="m", instructions="Borra.", tools=[borrar], description="Borra."
    )
    assert Agent("a", model="m", instructions="i").risk is Risk.READ
    assert Agent("a", model="m", instructions="i", tools=[leer]).risk is Risk.READ
    assert Agent("a", model="m", instructions="i", tools=[leer, borrar]).risk is Risk.DESTRUCTIVE
    mixed = Agent("a", model="m", instructions="i", tools=[leer], delegates=[borrador])
    assert mixed.risk is Risk.DESTRUCTIVE
    assert Agent("a", model="m", instructions="i", delegates=[lector]).risk is Risk.READ


class DropsOnce(ScriptedGateway):
    """Streams half of its first answer, then fails as a dropped connection would."""

    async def _stream(self, request: ModelRequest):  # type: ignore[override]
        if self.model_calls == 1:
            yield "Primera mitad "
            raise ProviderError("connection dropped mid-stream", retryable=True)
        async for item in super()._stream(request):
            yield item


def test_a_stream_retried_mid_way_numbers_its_calls_and_starts_the_text_again():
    async def no_wait(seconds: float) -> None:
        pass

    gateway = DropsOnce([says("respuesta"), says("La respuesta entera.")], chunk_size=5)
    agent = Agent("a", model="m", instructions="i")
    steps = run(stream(agent, Session("r", gateway, MemoryCheckpointer(), sleep=no_wait)))
    fragments = [s for s in steps if isinstance(s, TextFragment)]
    assert [(f.call, f.text) for f in fragments][0] == (1, "Primera mitad ")
    second = [f.text for f in fragments if f.call == 2]
    assert "".join(second) == "La respuesta entera."  # from its beginning
    assert steps[-1].output == "La respuesta entera."  # the failed call's text is not in it
    assert gateway.model_calls == 2


def test_a_model_step_replayed_from_the_journal_is_yielded_once_without_fragments():
    store = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([read_then_answer] * 2), store)))
    again = ScriptedGateway([])
    steps = run(stream(agent, Session("r", again, store)))
    assert not any(isinstance(s, TextFragment) for s in steps)
    assert again.model_calls == 0 and len(steps) == 1  # a closed run: its final step only
    assert steps[0].replayed


def test_only_assistant_messages_carry_tool_calls_and_only_tool_messages_answer_one():
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return read_then_answer(request)

    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([answer] * 2), MemoryCheckpointer())))
    messages = seen[-1].messages
    assert [m.role for m in messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]
    for message in messages:
        assert bool(message.tool_calls) == (message.role is Role.ASSISTANT)
        assert (message.tool_call_id is not None) == (message.role is Role.TOOL)
    assert messages[3].tool_call_id == messages[2].tool_calls[0].id


def test_the_fingerprint_the_loop_journals_incrementally_is_the_requests_own():
    """The loop keeps a running `ContextDigest` of its context (context.py); each model step
    journals its fingerprint, which must equal the one computed from the whole request."""
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return read_then_answer(request)

    store = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([answer] * 2), store)))
    journaled = [
        e.fingerprint
        for e in run(load_events(store, "r"))
        if isinstance(e, ModelStep) and e.phase.value == "completed"
    ]
    assert journaled == [request.fingerprint() for request in seen] and len(journaled) == 2
    digest = ContextDigest()
    for message in seen[-1].messages:
        digest.add(message)
    assert digest.fingerprint(seen[-1].model, seen[-1].tools) == seen[-1].fingerprint()


class Recording(ScriptedGateway):
    """The double, with the proposals its policy was shown."""

    def __init__(self, script: Any, **kwargs: Any) -> None:
        self.proposals: list[Any] = []

        def policy(proposal: Any) -> Verdict:
            self.proposals.append(proposal)
            return Verdict.allow()

        super().__init__(script, policy=policy, **kwargs)


def test_a_policy_is_shown_model_tool_and_delegate_calls_with_their_declarations():
    lector = Agent("lector", model="m", instructions="Lee.", tools=[leer], description="Lee.")

    def answer(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if m.role is Role.TOOL]
        system = request.messages[0].content
        if system == "Lee.":
            return calls("leer", cuenta="ES91") if not results else says("10 €")
        if not results:
            return calls("borrar", cuenta="ES91")
        return calls("lector", task="saldo") if len(results) == 1 else says("Hecho.")

    agent = Agent("a", model="m", instructions="i", tools=[borrar], delegates=[lector])
    gateway = Recording([answer] * 8)
    run(drive(agent, Session("r", gateway, MemoryCheckpointer())))
    kinds = {p.kind: p for p in reversed(gateway.proposals)}  # the first of each kind
    assert kinds["model"].call is None
    assert (kinds["tool"].call.name, kinds["tool"].risk, kinds["tool"].idempotent) == (
        "borrar",
        Risk.DESTRUCTIVE,
        False,
    )
    assert (kinds["delegate"].call.name, kinds["delegate"].risk) == ("lector", Risk.READ)
    assert {p.call.name for p in gateway.proposals if p.kind == "tool"} == {"borrar", "leer"}


def test_a_gateway_given_tools_refuses_any_other_and_allows_everything_by_default():
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    allowed = ScriptedGateway([read_then_answer] * 2)
    steps = run(drive(agent, Session("ok", allowed, MemoryCheckpointer())))
    assert steps[-1].output == "Saldo leído."  # no policy given: the call was allowed
    narrow = ScriptedGateway([read_then_answer] * 2, tools=[borrar])
    with pytest.raises(ConfigurationError, match="'leer' is not registered on this gateway"):
        run(drive(agent, Session("no", narrow, MemoryCheckpointer())))


def test_a_tool_that_raises_raises_out_of_call_tool():
    @tool(risk=Risk.READ, idempotent=True)
    def falla(cuenta: str) -> str:
        """Falla."""
        raise LookupError(f"no hay cuenta {cuenta}")

    gateway = ScriptedGateway([])
    context: Any = None
    with pytest.raises(LookupError, match="no hay cuenta ES91"):
        run(gateway.call_tool(falla, falla.bind({"cuenta": "ES91"}), context))


def test_the_double_measures_about_a_token_per_four_characters_and_no_cache():
    agent = Agent("a", model="m", instructions="x" * 40)
    gateway = ScriptedGateway([says("y" * 80)])
    steps = run(drive(agent, Session("r", gateway, MemoryCheckpointer()), task="z" * 40))
    usage = steps[-1].usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (20, 20, None)
    again = ScriptedGateway([says("y" * 80)])
    steps = run(drive(agent, Session("r2", again, MemoryCheckpointer()), task="z" * 40))
    assert steps[-1].usage == usage  # the same run measures the same


def test_turn_usage_says_how_much_the_input_grew_and_the_share_served_from_cache():
    def answer(request: ModelRequest) -> ModelResponse:
        done = any(m.role is Role.TOOL for m in request.messages)
        usage = Usage(200, 10, 150) if done else Usage(100, 10, 0)
        response = says("Saldo leído.") if done else calls("leer", cuenta="ES91")
        return ModelResponse(response.text, response.tool_calls, usage)

    store = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([answer] * 2), store)))
    turns = run(run_usage(store, "r")).turns
    assert [(t.input_growth, t.cached_share) for t in turns] == [(None, 0.0), (100, 0.75)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_hold_that_lasts_as_long_as_its_process_is_confirmed_without_asking(tmp_path, kind):
    store = MemoryCheckpointer() if kind == "memory" else SqliteCheckpointer(tmp_path / "r.db")

    async def scenario() -> bool:
        async with store.hold("r"):
            await store.confirm_hold("r")
            return await store.is_held("r")

    assert run(scenario()) is True


def test_a_sqlite_journal_is_created_on_first_use_with_its_parent_directory(tmp_path):
    path = tmp_path / "nueva" / "carpeta" / "runs.db"
    store = SqliteCheckpointer(path)
    assert not path.parent.exists()  # nothing made before it is used
    agent = Agent("a", model="m", instructions="i")
    run(drive(agent, Session("r", ScriptedGateway([says("hola")]), store)))
    assert path.is_file()


def test_a_closed_sqlite_checkpointer_reopens_on_its_next_call(tmp_path):
    store = SqliteCheckpointer(tmp_path / "runs.db")
    agent = Agent("a", model="m", instructions="i")
    run(drive(agent, Session("r", ScriptedGateway([says("hola")]), store)))
    run(store.close())
    assert run(store.load("r")).final.output == "hola"
    run(drive(agent, Session("s", ScriptedGateway([says("otra")]), store)))
    run(store.close())
    assert run(store.run_ids()) == ["r", "s"]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def test_an_exports_digest_chain_is_the_one_its_module_docstring_describes():
    """Recomputed here from the docstring's words, not with the module's own code: each link's
    digest is SHA-256 of the previous digest and the link's canonical bytes."""
    store = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([read_then_answer] * 2), store)))
    lines = [json.loads(line) for line in run(export_run(store, "r"))]
    description, events = lines[0], lines[1:]
    assert (description["synaptum_lite"], description["format"], description["run_id"]) == (
        "run",
        1,
        "r",
    )
    assert [e["seq"] for e in events] == list(range(len(events))) and len(events) == 7
    previous, digests = b"", []
    link = {k: description[k] for k in ("run_id", "format", "header")}
    for item in [link] + [
        {"run_id": "r", **{k: e[k] for k in ("seq", "step_id", "phase", "attempt", "data")}}
        for e in events
    ]:
        previous = hashlib.sha256(previous + _canonical(item)).digest()
        digests.append(previous.hex())
    assert description["chain"] == digests
    assert description["head"] == digests[-1]


def test_allowing_a_retry_of_a_step_that_is_not_uncertain_is_refused():
    store = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([read_then_answer] * 2), store)))
    operator = Session("r", ScriptedGateway([]), store)
    with pytest.raises(NothingToResolve) as refused:
        run(operator.allow_retry("000001-tool", by="ana"))
    assert (refused.value.run_id, refused.value.step_id) == ("r", "000001-tool")
    with pytest.raises(NothingToResolve):
        run(operator.record_result("000001-tool", "otra cosa", by="ana"))
    assert len(run(load_events(store, "r"))) == 7  # nothing was recorded


def test_import_runs_says_what_it_wrote_of_each_run_the_run_first():
    lector = Agent("lector", model="m", instructions="Lee.", tools=[leer], description="Lee.")

    def answer(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if m.role is Role.TOOL]
        if request.messages[0].content == "Lee.":
            return calls("leer", cuenta="ES91") if not results else says("10 €")
        return calls("lector", task="saldo") if not results else says("Hecho.")

    source, destination = MemoryCheckpointer(), MemoryCheckpointer()
    agent = Agent("jefe", model="m", instructions="i", delegates=[lector])
    run(drive(agent, Session("r", ScriptedGateway([answer] * 4), source)))
    lines = run(export_run(source, "r"))
    written = run(import_runs(destination, lines))
    assert [(i.run_id, i.events, i.new) for i in written] == [
        ("r", 7, 7),
        ("r/000001-delegate", 7, 7),
    ]
    again = run(import_runs(destination, lines))  # idempotent: nothing new
    assert [(i.run_id, i.new) for i in again] == [("r", 0), ("r/000001-delegate", 0)]


def test_an_import_into_a_run_a_worker_drives_is_refused_as_busy(tmp_path):
    source = MemoryCheckpointer()
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([read_then_answer] * 2), source)))
    lines = run(export_run(source, "r"))
    destination = SqliteCheckpointer(tmp_path / "runs.db")
    worker = SqliteCheckpointer(tmp_path / "runs.db")

    async def scenario() -> None:
        async with worker.hold("r"):
            await import_runs(destination, lines)

    with pytest.raises(RunBusy):
        run(scenario())
    assert run(destination.load("r")).next_seq == 0


def test_a_damaged_journal_still_exports_and_it_is_the_import_that_refuses_it(tmp_path):
    path = tmp_path / "runs.db"
    store = SqliteCheckpointer(path)
    agent = Agent("a", model="m", instructions="i", tools=[leer])
    run(drive(agent, Session("r", ScriptedGateway([read_then_answer] * 2), store)))
    run(store.close())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET data = 'no es json' WHERE run_id = 'r' AND seq = 3")
    db.close()
    damaged = SqliteCheckpointer(path)
    with pytest.raises(CorruptJournal):
        run(load_events(damaged, "r"))
    lines = run(export_run(damaged, "r"))  # the data travels undecoded
    assert json.loads(lines[4])["data"] == "no es json"
    with pytest.raises(CorruptJournal) as refused:
        run(import_runs(MemoryCheckpointer(), lines))
    assert (refused.value.run_id, refused.value.seq) == ("r", 3)


#: Parameters that only shape the message (what to do next), not fields.
_MESSAGE_ONLY = {"remedy", "then", "message"}
_SAMPLES = {"str": "x", "int": 1, "float": 1.0, "bool": True}


def test_constructing_any_exception_has_no_side_effect_and_keeps_the_fields_it_names(
    tmp_path, monkeypatch, caplog
):
    import inspect
    import logging

    from synaptum_lite import errors

    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.DEBUG)
    classes = [
        c
        for c in vars(errors).values()
        if inspect.isclass(c) and issubclass(c, errors.SynaptumError)
    ]
    assert len(classes) >= 28
    for cls in classes:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        values: dict[str, Any] = {}
        for parameter in parameters:
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            annotation = str(parameter.annotation).split(" | ")[0]
            values[parameter.name] = _SAMPLES.get(annotation, {} if "dict" in annotation else "x")
        positional = [values.pop(p.name) for p in parameters if p.kind == p.POSITIONAL_ONLY] or (
            [values.pop("message", "x")] if not parameters or parameters[0].name == "args" else []
        )
        error = cls(*positional, **values)
        for name, value in values.items():
            if name not in _MESSAGE_ONLY:
                assert getattr(error, name) == value, f"{cls.__name__}.{name}"
        assert str(error)
    assert list(tmp_path.iterdir()) == [] and caplog.records == []


def test_a_remote_agents_stream_is_its_run_and_a_changed_declaration_refuses_the_resume(tmp_path):
    """Against notebook 19's A2A server, a real process: `stream` journals what `run` does and
    yields no fragments; a run started under one declared risk refuses another."""
    import sys
    from pathlib import Path

    from synaptum_lite import ConfigurationChanged
    from synaptum_lite.integrations.a2a import remote_agent

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "notebooks" / "propiedades"))
    import _servidor_19 as servidor

    server = servidor.Proceso(duracion=0.1)
    try:

        async def scenario() -> tuple[list[Any], list[Any], Any, Any]:
            store = SqliteCheckpointer(tmp_path / "runs.db")
            remote = await remote_agent(server.url, risk=Risk.READ, name="buscador")
            streamed = [
                s
                async for s in remote.stream(
                    "vuelos", session=Session("s", ScriptedGateway([]), store)
                )
            ]
            ran = [
                s
                async for s in remote.run(
                    "vuelos", session=Session("r", ScriptedGateway([]), store)
                )
            ]
            riskier = await remote_agent(server.url, risk=Risk.DESTRUCTIVE, name="buscador")
            with pytest.raises(ConfigurationChanged) as changed:
                async for _ in riskier.run(
                    "vuelos", session=Session("r", ScriptedGateway([]), store)
                ):
                    pass
            return streamed, ran, changed.value, await load_events(store, "s")

        streamed, ran, changed, events = run(scenario())
        assert not any(isinstance(s, TextFragment) for s in streamed)
        shape = [(s.step_id, s.phase, s.kind) for s in streamed]
        assert shape == [(s.step_id, s.phase, s.kind) for s in ran] and len(shape) == 5
        assert [(e.step_id, e.phase, e.kind) for e in events] == shape
        assert streamed[-1].output == ran[-1].output
        assert "remote" in changed.fields
        assert len(server.mensajes()) == 2  # one message per run; the refused resume sent none
    finally:
        server.para()
