"""Bad input gets a clear error and loses nothing."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ApprovalStep,
    ConfigurationError,
    CorruptJournal,
    MemoryCheckpointer,
    ModelResponse,
    NotAJournal,
    RetryPolicy,
    Risk,
    Session,
    SqliteCheckpointer,
    ToolCall,
    ToolDefinitionError,
    ToolResultNotSerializable,
    ToolStep,
    UnsupportedFormat,
    Verdict,
    load_events,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

from .conftest import run


def finish(path: Path) -> None:
    agent = Agent("a", model="m", instructions="i")
    run(
        _consume(
            agent.run(
                "t",
                session=Session("r", ScriptedGateway([says("hecho")]), SqliteCheckpointer(path)),
            )
        )
    )


async def _consume(steps):
    return [s async for s in steps]


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path):
    path = tmp_path / "notas.txt"
    path.write_text("esto no es una base de datos\n" * 200)
    before = path.read_bytes()
    with pytest.raises(NotAJournal) as error:
        run(SqliteCheckpointer(path).load("r"))
    assert "notas.txt is not a synaptum_lite journal" in str(error.value)
    assert "point the checkpointer at a new file" in str(error.value)
    assert path.read_bytes() == before


def test_a_sqlite_file_of_another_application_is_refused(tmp_path: Path):
    path = tmp_path / "otra.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE clientes (nombre TEXT)")
    with pytest.raises(NotAJournal, match="it holds other tables: clientes"):
        run(SqliteCheckpointer(path).load("r"))


def test_a_journal_of_a_newer_format_is_refused_untouched(tmp_path: Path):
    path = tmp_path / "runs.db"
    finish(path)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 99")
    with pytest.raises(UnsupportedFormat) as error:
        run(SqliteCheckpointer(path).load("r"))
    assert (error.value.found, error.value.supported) == (99, 1)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 1")
    assert run(SqliteCheckpointer(path).load("r")).final.output == "hecho"


def _resume_one_stored_event(path: Path, step_id: object, data: str) -> tuple[Any, int]:
    """Store a run `r` whose journal is one attempted event, written by hand (`step_id`,
    `data`); resume it. Returns what the resume raised and how often it called the model."""
    agent = Agent("a", model="m", instructions="i")
    run(SqliteCheckpointer(path).load("r"))  # creates the schema
    with sqlite3.connect(path) as connection:
        header = json.dumps({"format": 1, "agent": agent.configuration, "task": "t"})
        connection.execute(
            "INSERT INTO runs (run_id, header, next_seq) VALUES ('r', ?, 1)", (header,)
        )
        connection.execute(
            "INSERT INTO events VALUES ('r', 0, ?, 'attempted', 1, ?)", (step_id, data)
        )
    gateway = ScriptedGateway([says("no debería llamarse")])
    with pytest.raises(CorruptJournal) as error:
        run(_consume(agent.run("t", session=Session("r", gateway, SqliteCheckpointer(path)))))
    return error.value, gateway.model_calls


def test_a_corrupt_record_names_the_run_and_the_position(tmp_path: Path):
    error, model_calls = _resume_one_stored_event(tmp_path / "runs.db", "000000-model", "{not json")
    assert (error.run_id, error.seq, model_calls) == ("r", 0, 0)


@pytest.mark.parametrize("key", ["000000", "modelo", 7, 7.5, b"000000-model"], ids=repr)
def test_a_record_whose_key_is_not_a_step_id_names_the_run_and_the_position(
    tmp_path: Path, key: object
):
    error, model_calls = _resume_one_stored_event(tmp_path / "runs.db", key, '{"fp":"x"}')
    assert (error.run_id, error.seq, model_calls) == ("r", 0, 0)


def test_a_corrupt_record_deep_in_a_journal_stops_the_resume_before_anything_new(tmp_path: Path):
    """A resume decodes each position's records when the loop reaches it (journal.py), not
    all of them first: a record damaged halfway is still found before the run calls the
    model or runs a tool again, and named, with its position."""
    path = tmp_path / "runs.db"
    effects: list[int] = []

    @tool(risk=Risk.SOFT_WRITE)
    def apuntar(n: int) -> str:
        """Apunta n."""
        effects.append(n)
        return f"apuntado {n}"

    agent = Agent("a", model="m", instructions="i", tools=[apuntar])

    async def first_pass() -> None:  # three turns, then the process stops reading
        gateway = ScriptedGateway([calls("apuntar", n=n) for n in range(3)])
        async with contextlib.aclosing(
            agent.run("t", session=Session("r", gateway, SqliteCheckpointer(path)))
        ) as steps:
            async for step in steps:
                if isinstance(step, ToolStep) and step.result and step.call.arguments == {"n": 2}:
                    return

    run(first_pass())
    assert effects == [0, 1, 2]
    with sqlite3.connect(path) as connection:
        (seq,) = connection.execute(
            "SELECT seq FROM events WHERE step_id = '000003-tool' AND phase = 'completed'"
        ).fetchone()
        connection.execute("UPDATE events SET data = '{roto' WHERE seq = ?", (seq,))
    gateway = ScriptedGateway([says("no debería llamarse")])
    with pytest.raises(CorruptJournal) as error:
        run(_consume(agent.run("t", session=Session("r", gateway, SqliteCheckpointer(path)))))
    assert (error.value.run_id, error.value.seq) == ("r", seq)
    assert (gateway.model_calls, effects) == (0, [0, 1, 2])


def test_bad_arguments_to_the_library_are_named():
    with pytest.raises(ConfigurationError, match="durability must be 'full'"):
        SqliteCheckpointer("x.db", durability="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="run_id must be a non-empty string"):
        Session("", ScriptedGateway([]), MemoryCheckpointer())
    with pytest.raises(ConfigurationError, match="is not a tool; decorate it with @tool"):
        Agent("a", model="m", instructions="i", tools=[print])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="the script has 0 answer"):
        run(
            _consume(
                Agent("a", model="m", instructions="i").run(
                    "t", session=Session("r", ScriptedGateway([]), MemoryCheckpointer())
                )
            )
        )


def test_a_damaged_run_header_names_the_run(tmp_path: Path):
    path = tmp_path / "runs.db"
    finish(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE runs SET header = '{roto'")
    with pytest.raises(CorruptJournal) as error:
        run(SqliteCheckpointer(path).load("r"))
    assert (error.value.run_id, error.value.seq) == ("r", None)
    assert "the run's header cannot be decoded" in str(error.value)


# ── what a journal cannot keep (a surrogate code point, NaN): refused or made keepable ─────────

HALF = "\ud83d"  # half of the pair that encodes 😀; a JSON decoder returns it for "\ud83d" alone


def nested(depth: int) -> list[object]:
    """A list nested `depth` deep, built without recursion: `[[[...]]]`."""
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


@dataclasses.dataclass
class Informe:
    detalle: object


def test_a_task_holding_half_a_surrogate_pair_is_refused_before_anything_is_paid(tmp_path: Path):
    gateway = ScriptedGateway([says("hecho")])
    store = SqliteCheckpointer(tmp_path / "runs.db")
    agent = Agent("a", model="m", instructions="i")
    with pytest.raises(ConfigurationError) as error:
        run(_consume(agent.run(f"saluda {HALF}", session=Session("r", gateway, store))))
    assert (
        "run 'r': the task cannot be journaled: it holds '\\ud83d' at index 7, half of a "
        "surrogate pair and not a character, which UTF-8 has no form for; nothing was run or "
        "written: join a split surrogate pair, or put U+FFFD in its place"
    ) == str(error.value)
    assert gateway.model_calls == 0
    assert run(store.load("r")).header is None


def test_a_run_id_or_an_agent_holding_half_a_surrogate_pair_is_refused_at_once():
    with pytest.raises(ConfigurationError) as refused:
        Session(f"r{HALF}", ScriptedGateway([]), MemoryCheckpointer())
    assert str(refused.value).startswith(
        "run_id 'r\\ud83d' cannot be journaled: it holds '\\ud83d' at index 1, half of a "
        "surrogate pair"
    )
    assert str(refused.value).endswith("put U+FFFD in its place")
    with pytest.raises(ConfigurationError) as refused:  # a NUL no store can keep: refused now
        Session("a\x00b", ScriptedGateway([]), MemoryCheckpointer())
    assert str(refused.value) == (
        "run_id 'a\\x00b' cannot be journaled: it holds '\\x00' at index 1, a NUL character, "
        "which PostgreSQL's text cannot hold; nothing was run or written: leave NUL characters out"
    )
    with pytest.raises(ConfigurationError) as refused:  # who decides, in the same words
        run(
            Session("r", ScriptedGateway([]), MemoryCheckpointer()).allow_retry(
                "000001-tool", by=f"ana{HALF}"
            )
        )
    assert str(refused.value).startswith(
        "run 'r', step '000001-tool': by 'ana\\ud83d' cannot be journaled: it holds '\\ud83d' "
        "at index 3, half of a surrogate pair"
    )
    with pytest.raises(ConfigurationError) as refused:
        Agent("a", model="m", instructions=f"Saluda {HALF}")
    assert str(refused.value).startswith(
        "agent 'a': its configuration (name, model, instructions, tools' descriptions) cannot "
        "be journaled: it holds '\\ud83d' at index "
    )
    assert str(refused.value).endswith("put U+FFFD in its place")


def circular() -> list[object]:
    """A list that holds itself."""
    value: list[object] = ["ES91"]
    value.append(value)
    return value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (f"hola {HALF}", "it holds '\\ud83d' at index 5, half of a surrogate pair"),
        ({"saldo": float("nan")}, "it holds NaN or an infinite number"),
        (nested(100_000), "it nests lists or dicts deeper than JSON can be written"),
        (Informe(nested(100_000)), "it nests lists or dicts deeper than JSON can be written"),
        (circular(), "it contains itself (a circular reference)"),
    ],
    ids=["surrogate", "nan", "nested-100000-deep", "dataclass-nested-100000-deep", "circular"],
)
def test_a_tool_result_a_journal_cannot_keep_is_a_clear_error_naming_why(
    tmp_path: Path, value: object, problem: str
):
    @tool(risk=Risk.READ, idempotent=True)
    def consultar(cuenta: str) -> object:
        """Consulta."""
        return value

    store = SqliteCheckpointer(tmp_path / "runs.db")
    gateway = ScriptedGateway([calls("consultar", cuenta="ES91"), says("nunca")])
    agent = Agent("a", model="m", instructions="i", tools=[consultar])
    with pytest.raises(ToolResultNotSerializable) as error:
        run(_consume(agent.run("t", session=Session("r", gateway, store))))
    assert (error.value.step_id, error.value.tool) == ("000001-tool", "consultar")
    assert problem in str(error.value)
    assert gateway.model_calls == 1  # the next turn was not paid
    kept = [(e.step_id, e.phase.value) for e in run(load_events(store, "r"))]
    assert kept == [
        ("000000-model", "attempted"),
        ("000000-model", "completed"),
        ("000001-tool", "attempted"),
    ]
    # nor can an operator record it as the step's result: refused, naming why, nothing written
    with pytest.raises(ConfigurationError) as refused:
        run(Session("r", gateway, store).record_result("000001-tool", value, by="ana"))
    assert problem in str(refused.value)
    assert len(run(load_events(store, "r"))) == 3


def test_nan_in_paid_tool_arguments_is_journaled_and_the_model_is_told(tmp_path: Path):
    runs = []

    @tool(risk=Risk.HARD_WRITE)
    def transferir(importe: float) -> str:
        """Transfiere."""
        runs.append(importe)
        return "hecho"

    store = SqliteCheckpointer(tmp_path / "runs.db")
    gateway = ScriptedGateway([calls("transferir", importe=float("nan")), says("no pude")])
    agent = Agent("a", model="m", instructions="i", tools=[transferir])
    steps = run(_consume(agent.run("t", session=Session("r", gateway, store))))
    assert steps[-1].output == "no pude" and runs == []
    results = [s.result for s in steps if isinstance(s, ToolStep) and s.result is not None]
    assert results[0].is_error
    assert "got '{\"importe\": NaN}', which is not one (NaN is not a JSON number)" in (
        results[0].content
    )
    again = ScriptedGateway([])
    assert run(_consume(agent.run("t", session=Session("r", again, store))))[-1].output == (
        "no pude"
    )
    assert again.model_calls == 0


@pytest.mark.parametrize("cap", [-1, 2.5, True, "100"])
def test_a_tool_output_cap_that_is_not_a_count_of_characters_is_refused_naming_it(cap):
    with pytest.raises(ConfigurationError, match="max_tool_output") as refused:
        Agent("a", model="m", instructions="i", max_tool_output=cap)
    assert repr(cap) in str(refused.value)


def _tool_function(x: int) -> int:
    """Doubles x."""
    return 2 * x


def _añadir(x: int) -> int:
    """Adds."""
    return x


@pytest.mark.parametrize(
    ("declared", "named"),
    [
        ({"idempotent": "no"}, "idempotent='no'"),  # truthy: a resume would run it again
        ({"idempotent": 1}, "idempotent=1"),
        ({"risk": "read"}, "risk='read'"),
        ({"risk": 0}, "risk=0"),
        ({"name": ""}, "name=''"),
        ({"name": "buscar vuelos"}, "name='buscar vuelos'"),
        ({"name": "x" * 65}, "name='" + "x" * 65 + "'"),
        ({"name": 3}, "name=3"),
    ],
)
def test_a_tool_declared_with_a_value_it_cannot_mean_is_refused_naming_the_value(declared, named):
    with pytest.raises(ToolDefinitionError) as refused:
        tool(_tool_function, **declared)
    message = str(refused.value)
    assert named in message
    assert "_tool_function" in message
    assert ("declare" in message) or ("pass one" in message)


def test_a_tool_whose_function_a_model_api_cannot_name_or_describe_is_refused_at_once():
    with pytest.raises(ToolDefinitionError, match="@tool\\(name=...\\)") as refused:
        tool(_añadir)
    assert "'_añadir'" in str(refused.value)
    assert tool(_añadir, name="anadir").name == "anadir"
    with pytest.raises(ToolDefinitionError, match="signature cannot be read"):
        tool(int)
    with pytest.raises(ToolDefinitionError, match="not callable"):
        tool("buscar")  # type: ignore[arg-type]
    assert tool(_tool_function, risk=Risk.READ, idempotent=True).idempotent is True


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"max_steps": 2.5}, "max_steps must be a whole number, at least 1; got 2.5"),
        ({"max_steps": "3"}, "max_steps must be a whole number, at least 1; got '3'"),
        ({"max_steps": True}, "max_steps must be a whole number, at least 1; got True"),
        ({"max_steps": 0}, "max_steps must be a whole number, at least 1; got 0"),
        ({"name": ""}, "name must be a non-empty str, got ''"),
        ({"name": 3}, "name must be a non-empty str, got 3"),
        ({"model": None}, "model must be a non-empty str, got None"),
        ({"instructions": None}, "instructions must be a str"),
        ({"tools": None}, "tools must be a list of tools, got None"),
        ({"tools": "buscar"}, "tools must be a list of tools, got 'buscar'"),
        ({"description": 5}, "description must be a str or None, got 5"),
    ],
)
def test_an_agent_built_with_a_value_it_cannot_use_is_refused_naming_it(arguments, named):
    given: dict[str, Any] = {"name": "a", "model": "m", "instructions": "i", **arguments}
    with pytest.raises(ConfigurationError) as refused:
        Agent(given.pop("name"), **given)
    assert named in str(refused.value)


def test_an_agent_without_instructions_is_built_and_cannot_be_a_delegate_without_a_description():
    quiet = Agent("silencioso", model="m", instructions="")
    assert quiet.description == ""
    with pytest.raises(ConfigurationError, match="give it description=") as refused:
        Agent("a", model="m", instructions="i", delegates=[quiet])
    assert "'silencioso'" in str(refused.value)
    described = Agent("silencioso", model="m", instructions="", description="Calla.")
    assert Agent("a", model="m", instructions="i", delegates=[described]).delegates
    with pytest.raises(ConfigurationError, match="rename the delegate"):
        spaced = Agent("b c", model="m", instructions="i")
        Agent("a", model="m", instructions="i", delegates=[spaced])
    with pytest.raises(ConfigurationError, match="delegates must be a list of agents"):
        Agent("a", model="m", instructions="i", delegates=described)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"max_attempts": 2.5}, "max_attempts must be a whole number, at least 1"),
        ({"max_attempts": "3"}, "got '3'"),
        ({"base": -1}, "base must be a finite number of seconds, 0 or more; got -1"),
        ({"cap": float("nan")}, "cap must be a finite number of seconds, 0 or more; got nan"),
        ({"cap": float("inf")}, "got inf"),
        ({"random": 0.5}, "random must be a function"),
    ],
)
def test_a_retry_policy_that_cannot_mean_a_wait_is_refused_naming_it(arguments, named):
    with pytest.raises(ConfigurationError) as refused:
        RetryPolicy(**arguments)
    assert named in str(refused.value)


def test_a_session_without_a_gateway_or_a_checkpointer_is_refused_before_anything_runs(
    tmp_path: Path,
):
    gateway, store = ScriptedGateway([says("hecho")]), SqliteCheckpointer(tmp_path / "runs.db")
    with pytest.raises(ConfigurationError, match="the gateway None is not a Gateway") as refused:
        Session("r", None, store)  # type: ignore[arg-type]
    assert "LocalGateway(...)" in str(refused.value)
    with pytest.raises(ConfigurationError, match="has no hold, load, start, append, records"):
        Session("r", gateway, str(tmp_path / "runs.db"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="retry must be a RetryPolicy, got 3"):
        Session("r", gateway, store, retry=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="sleep must be a function"):
        Session("r", gateway, store, sleep=0)  # type: ignore[arg-type]
    assert not (tmp_path / "runs.db").exists()  # nothing was created by a refused session


def test_a_decision_that_does_not_say_yes_or_no_or_who_is_refused_and_nothing_is_recorded(
    tmp_path: Path,
):
    @tool(risk=Risk.HARD_WRITE)
    def transferir(euros: int) -> str:
        """Moves money."""
        raise AssertionError("nobody granted this call")

    gateway = ScriptedGateway(
        [calls("transferir", euros=80), says("hecho")],
        policy=lambda p: Verdict.require_approval("mueve dinero") if p.tool else Verdict.allow(),
    )
    agent = Agent("a", model="m", instructions="i", tools=[transferir])
    session = Session("r", gateway, SqliteCheckpointer(tmp_path / "runs.db"))
    [*_, pending] = run(_consume(agent.run("t", session=session)))
    assert isinstance(pending, ApprovalStep) and pending.pending
    before = run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r"))
    for arguments, named in [
        ({"granted": "no", "by": "ana"}, "granted must be True or False, got 'no'"),
        ({"granted": 1, "by": "ana"}, "granted must be True or False, got 1"),
        ({"granted": False, "final": "yes", "by": "ana"}, "final must be True or False"),
        ({"granted": False, "by": ""}, "by must name who decides"),
        ({"granted": False, "by": None}, "by must name who decides"),
        ({"granted": False, "by": "ana", "note": 3}, "note must be text, got 3"),
    ]:
        with pytest.raises(ConfigurationError) as refused:
            run(session.decide(pending.step_id, **arguments))
        assert named in str(refused.value)
    with pytest.raises(ConfigurationError, match="the step id must be text"):
        run(session.allow_retry(1, by="ana"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="by must name who decides"):
        run(session.record_result(pending.step_id, "hecho", by="  "))
    assert run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r")) == before
    [*_, still] = run(_consume(agent.run("t", session=session)))
    assert isinstance(still, ApprovalStep) and still.pending  # nobody granted anything


@pytest.mark.parametrize("session", [None, "pedido-1"])
def test_a_run_without_a_session_is_refused_naming_what_it_got(session):
    agent = Agent("a", model="m", instructions="i")
    with pytest.raises(ConfigurationError, match="session must be a Session") as refused:
        run(_consume(agent.run("t", session=session)))
    assert repr(session) in str(refused.value)


@pytest.mark.parametrize(
    "arguments",
    ["[" * 100_000 + "]" * 100_000, "x" * 1_000_000, ["ES91"] * 100_000],
    ids=["nested 100000 deep", "a megabyte of text", "a list of 100000"],
)
def test_tool_arguments_nobody_can_read_are_told_to_the_model_briefly_and_the_run_ends(
    tmp_path: Path, arguments
):
    @tool(risk=Risk.READ, idempotent=True)
    def saldo(cuenta: str) -> str:
        """Reads a balance."""
        raise AssertionError("never called with arguments it cannot read")

    unreadable = ModelResponse(tool_calls=(ToolCall("c", "saldo", arguments),))
    agent = Agent("a", model="m", instructions="i", tools=[saldo])
    store = SqliteCheckpointer(tmp_path / "runs.db")
    steps = run(
        _consume(
            agent.run(
                "t", session=Session("r", ScriptedGateway([unreadable, says("no pude")]), store)
            )
        )
    )
    result = next(s for s in steps if isinstance(s, ToolStep) and s.result is not None).result
    assert result.is_error and "arguments must be a JSON object" in result.content
    assert len(result.content) < 600  # quoted briefly: it is sent in every later request
    assert "characters in all" in result.content
    assert steps[-1].text == "no pude"  # the run ends; a resume returns it without raising
    again = ScriptedGateway([])
    assert run(_consume(agent.run("t", session=Session("r", again, store))))[-1].text == "no pude"


def test_a_lost_mcp_call_names_its_arguments_briefly():
    from synaptum_lite import McpServerLost

    huge = {"texto": "x" * 1_000_000}
    lost = McpServerLost("s", "EOF", tool="t", arguments=huge, run_id="r", step_id="000001-tool")
    assert len(str(lost)) < 1_000 and "characters in all" in str(lost)
    assert lost.arguments is huge  # the whole value stays on the exception
