"""MCP tools: what a server's annotations, names and schemas become, and each thing that can go
wrong in a call: a clear error, and nothing repeated. Every test talks to notebook 17's server,
a real process (`notebooks/propiedades/_servidor_17.py`), over stdio."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from synaptum_lite import (
    Agent,
    ConfigurationChanged,
    ConfigurationError,
    FinalStep,
    Phase,
    Risk,
    Session,
    SqliteCheckpointer,
    ToolStep,
    UncertainEffect,
    load_events,
)
from synaptum_lite.integrations.mcp import McpServerLost, connect, risk_of
from synaptum_lite.testing import ScriptedGateway, calls, says

from .incidencias import (
    ANSWER,
    PREFIX,
    SERVER,
    TASK,
    agent,
    effects_of,
    server,
    servidor,
    session,
)


async def whole_run(store: Path, run_id: str, effects: Path, *flags: str) -> str | None:
    async with server(effects, *flags) as connected:
        async for step in agent(connected.tools).run(
            TASK, session=session(run_id, connected.tools, store)
        ):
            if isinstance(step, FinalStep):
                return step.output
    return None


def test_annotations_declare_risk_and_idempotency_and_no_annotations_is_the_worst_case():
    assert risk_of({"readOnlyHint": True}) == (Risk.READ, True)
    assert risk_of({"destructiveHint": False, "idempotentHint": True}) == (Risk.HARD_WRITE, True)
    assert risk_of({"destructiveHint": False, "idempotentHint": False}) == (Risk.HARD_WRITE, False)
    assert risk_of({"idempotentHint": True}) == (Risk.DESTRUCTIVE, True)
    assert risk_of({}) == (Risk.DESTRUCTIVE, False)


def test_the_servers_tools_enter_the_agent_prefixed_with_the_risk_their_annotations_say(tmp_path):
    async def catalogue():
        async with server(tmp_path / "efectos.jsonl") as connected:
            return connected.name, [
                (t.name, t.remote_name, t.annotations, t.risk, t.idempotent)
                for t in connected.tools
            ]

    name, tools = asyncio.run(catalogue())
    assert name == "incidencias"
    assert tools == [
        ("incidencias__consultar", "consultar", {"readOnlyHint": True}, Risk.READ, True),
        (
            "incidencias__asignar",
            "asignar",
            {"destructiveHint": False, "idempotentHint": True},
            Risk.HARD_WRITE,
            True,
        ),
        (
            "incidencias__comentar",
            "comentar",
            {"destructiveHint": False, "idempotentHint": False},
            Risk.HARD_WRITE,
            False,
        ),
        ("incidencias__avisar_cliente", "avisar_cliente", {}, Risk.DESTRUCTIVE, False),
    ]


def test_a_run_over_mcp_tools_does_each_effect_once_and_a_closed_run_calls_nothing(tmp_path):
    effects = tmp_path / "efectos.jsonl"
    assert asyncio.run(whole_run(tmp_path / "runs.db", "r", effects)) == ANSWER
    assert asyncio.run(whole_run(tmp_path / "runs.db", "r", effects)) == ANSWER
    assert effects_of(effects) == {"arranque": 2, "asignar": 1, "comentar": 1, "avisar_cliente": 1}


def test_two_servers_cannot_collide_their_prefixes_keep_the_names_apart(tmp_path):
    async def two(first: str, second: str):
        async with (
            connect(sys.executable, str(SERVER), str(tmp_path / "a.jsonl"), prefix=first) as a,
            connect(sys.executable, str(SERVER), str(tmp_path / "b.jsonl"), prefix=second) as b,
        ):
            return Agent("dos", model="m", instructions="x", tools=[*a.tools, *b.tools])

    assert sorted(asyncio.run(two("norte", "sur")).tools)[:2] == [
        "norte__asignar",
        "norte__avisar_cliente",
    ]
    with pytest.raises(ConfigurationError) as collided:
        asyncio.run(two("norte", "norte"))
    assert str(collided.value) == (
        "agent 'dos': two tools are named 'norte__consultar'; give each its own name (two MCP "
        "servers: connect each with its own prefix)"
    )


@pytest.mark.parametrize("prefix", ["", "con_guion_bajo", "1abc", "a b"])
def test_a_prefix_that_could_collide_is_refused_before_a_server_starts(tmp_path, prefix):
    async def start():
        async with connect(sys.executable, str(SERVER), str(tmp_path / "e.jsonl"), prefix=prefix):
            pass

    with pytest.raises(ConfigurationError, match="is not one: a letter, then letters, digits"):
        asyncio.run(start())
    assert not (tmp_path / "e.jsonl").exists()  # no server started


# ── Bad input: each a clear error, and nothing repeated ─────────────────────────────────


def test_an_error_result_is_the_tools_result_the_model_reads_and_is_never_called_again(tmp_path):
    effects, store = tmp_path / "efectos.jsonl", tmp_path / "runs.db"

    def responder(request):
        if not any(m.role.value == "tool" for m in request.messages):
            return calls(f"{PREFIX}__consultar", incidencia="INC-9")
        return says("No existe.")

    async def once():
        async with server(effects) as connected:
            gateway = ScriptedGateway([responder] * 3, tools=connected.tools)
            sesion = Session("error", gateway, SqliteCheckpointer(store))
            async for _step in agent(connected.tools).run("Mira INC-9.", session=sesion):
                pass
            return gateway

    first = asyncio.run(once())
    second = asyncio.run(once())
    events = asyncio.run(load_events(SqliteCheckpointer(store), "error"))
    (completed,) = [e for e in events if isinstance(e, ToolStep) and e.phase is Phase.COMPLETED]
    assert completed.result.is_error
    assert completed.result.content == (
        "McpToolError: the MCP server reports the tool failed: Error executing tool consultar: "
        "no existe la incidencia INC-9"
    )
    assert (first.tool_calls, second.tool_calls) == (1, 0)  # the closed run asks nobody
    assert isinstance(events[-1], FinalStep)


def test_a_server_that_dies_mid_call_stops_the_run_and_the_effect_is_left_to_a_person(tmp_path):
    effects, store = tmp_path / "efectos.jsonl", tmp_path / "runs.db"
    with pytest.raises(McpServerLost) as lost:
        asyncio.run(whole_run(store, "muere", effects, "--muere-dentro", "comentar"))
    assert str(lost.value) == (
        "MCP server 'incidencias' was lost during the call to tool 'incidencias__comentar' "
        "(run 'muere', step 000005-tool) with arguments {'incidencia': 'INC-7', 'texto': "
        "'Cambiado el tóner.'} (MCPError: Connection closed); whether the call had its effect "
        "is unknown, so nothing was retried and the step stays attempted. Start the server "
        "again and run the same run_id: an idempotent tool runs again, a non-idempotent one "
        "raises UncertainEffect for a person to resolve"
    )
    last = asyncio.run(load_events(SqliteCheckpointer(store), "muere"))[-1]
    assert (last.step_id, last.phase) == ("000005-tool", Phase.ATTEMPTED)

    with pytest.raises(UncertainEffect) as uncertain:
        asyncio.run(whole_run(store, "muere", effects))
    assert (uncertain.value.step_id, uncertain.value.tool) == ("000005-tool", f"{PREFIX}__comentar")
    assert effects_of(effects)["comentar"] == 1  # done once, by the server that died

    async def resolve_and_finish():
        async with server(effects) as connected:
            sesion = session("muere", connected.tools, store)
            await sesion.record_result("000005-tool", "comentario añadido a INC-7", by="operadora")
        return await whole_run(store, "muere", effects)

    assert asyncio.run(resolve_and_finish()) == ANSWER
    assert effects_of(effects) == {
        "arranque": 4,
        "asignar": 1,
        "comentar": 1,
        "avisar_cliente": 1,
    }


def test_an_idempotent_tool_whose_server_died_mid_call_simply_runs_again(tmp_path):
    effects, store = tmp_path / "efectos.jsonl", tmp_path / "runs.db"
    with pytest.raises(McpServerLost):
        asyncio.run(whole_run(store, "asigna", effects, "--muere-dentro", "asignar"))
    assert asyncio.run(whole_run(store, "asigna", effects)) == ANSWER
    assert effects_of(effects) == {
        "arranque": 2,
        "asignar": 2,  # the server said it is idempotent: its word, and it ran again
        "comentar": 1,
        "avisar_cliente": 1,
    }


def test_a_schema_changed_on_the_server_between_two_passes_is_refused_naming_the_tool(tmp_path):
    effects, store = tmp_path / "efectos.jsonl", tmp_path / "runs.db"
    with pytest.raises(McpServerLost):
        asyncio.run(whole_run(store, "cambia", effects, "--muere-dentro", "avisar_cliente"))
    before = effects_of(effects)
    with pytest.raises(ConfigurationChanged) as changed:
        asyncio.run(whole_run(store, "cambia", effects, "--esquema-nuevo"))
    assert changed.value.changes == {
        "tools": (["incidencias__comentar"], ["incidencias__comentar"])
    }
    assert (
        "tools: declared otherwise (description, parameters, risk or idempotency) "
        "['incidencias__comentar']"
    ) in str(changed.value)
    after = effects_of(effects)
    assert after - before == {"arranque": 1}  # the new server started; no tool was called


def test_a_server_that_goes_silent_mid_call_is_lost_after_the_timeout_and_nothing_repeats(
    tmp_path,
):
    effects, store = tmp_path / "efectos.jsonl", tmp_path / "runs.db"

    async def up_to_the_call():
        # Every call before the one the server goes silent in, under the default timeout: on a
        # busy machine one of them could take over a second to answer, and none is this test's.
        async with server(effects) as connected:
            async for step in agent(connected.tools).run(
                TASK, session=session("calla", connected.tools, store)
            ):
                if step.step_id == "000006-model" and step.phase is Phase.COMPLETED:
                    return  # the model has asked for avisar_cliente, not yet called

    async def until_silence():
        # The run resumed: its one new call is the one the server goes silent in, the only call
        # under the 1 s timeout.
        with open(tmp_path / "servidor.log", "w", encoding="utf-8") as log:
            async with connect(
                sys.executable,
                str(SERVER),
                str(effects),
                "--calla-dentro",
                "avisar_cliente",
                prefix=PREFIX,
                errlog=log,
                call_timeout=1.0,
            ) as connected:
                async for _step in agent(connected.tools).run(
                    TASK, session=session("calla", connected.tools, store)
                ):
                    pass

    asyncio.run(up_to_the_call())
    assert effects_of(effects)["avisar_cliente"] == 0
    with pytest.raises(McpServerLost) as lost:
        asyncio.run(until_silence())
    assert str(lost.value).startswith(
        "MCP server 'incidencias' was lost during the call to tool 'incidencias__avisar_cliente' "
        "(run 'calla', step 000007-tool)"
    )
    assert lost.value.detail.startswith("MCPError: ")  # the SDK's words for the timeout
    with pytest.raises(UncertainEffect):
        asyncio.run(whole_run(store, "calla", effects))
    assert effects_of(effects)["avisar_cliente"] == 1


def test_a_server_that_exits_before_answering_is_a_clear_error_at_start_up(tmp_path):
    quits = tmp_path / "se_va.py"
    quits.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")

    async def start():
        async with connect(sys.executable, str(quits), prefix="nada"):
            pass

    with pytest.raises(McpServerLost, match=r"^MCP server 'nada' went away during its start-up"):
        asyncio.run(start())


def test_without_the_sdk_the_error_says_what_to_install():
    code = (
        "import sys, asyncio; sys.modules['mcp'] = None\n"
        "from synaptum_lite.integrations.mcp import connect\n"
        "async def main():\n"
        "    async with connect('x', prefix='p'):\n"
        "        pass\n"
        "try:\n"
        "    asyncio.run(main())\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "ConfigurationError synaptum_lite.integrations.mcp needs the MCP SDK, and the `mcp` "
        "package is not installed; install the extra: pip install 'synaptum-lite[mcp]' "
        "(or: uv sync --extra mcp)"
    )


def test_the_adapter_module_imports_without_the_sdk():
    code = (
        "import sys; sys.modules['mcp'] = None; import synaptum_lite.integrations.mcp; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_each_effect_in_the_servers_record_carries_its_steps_idempotency_key(tmp_path):
    effects, store = tmp_path / "efectos.jsonl", tmp_path / "runs.db"
    assert asyncio.run(whole_run(store, "r", effects)) == ANSWER
    events = asyncio.run(load_events(SqliteCheckpointer(store), "r"))
    steps = {e.call.name.removeprefix(f"{PREFIX}__"): e.step_id for e in events
             if isinstance(e, ToolStep) and e.phase is Phase.COMPLETED}  # fmt: skip
    keys = {e["que"]: e["clave"] for e in servidor.leer_apuntes(effects) if e["que"] != "arranque"}
    assert keys == {tool: f"r/{steps[tool]}" for tool in ("asignar", "comentar", "avisar_cliente")}
