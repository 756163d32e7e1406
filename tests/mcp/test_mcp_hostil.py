"""A hostile MCP server (tests/mcp/hostil.py, a real process written on the bare protocol, no
SDK) against the adapter: each bad thing it does is a clear error or an honest result, and its
own record of its effects shows nothing done twice."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ConfigurationChanged,
    ConfigurationError,
    Phase,
    Role,
    Session,
    SqliteCheckpointer,
    ToolStep,
    UncertainEffect,
    load_events,
)
from synaptum_lite.integrations.mcp import IDEMPOTENCY_KEY, McpServerLost, connect
from synaptum_lite.testing import ScriptedGateway, calls, says

from .efectos import count, records

HOSTIL = Path(__file__).with_name("hostil.py")


async def run(tmp: Path, run_id: str, tool: str, *modes: str, **options: Any) -> list[Any]:
    """One pass of the run `run_id`: the model calls `tool` once, then answers."""
    cap = options.pop("max_tool_output", None)

    def responder(request: Any) -> Any:
        results = [m.content for m in request.messages if m.role is Role.TOOL]
        # the answer says how long the result the model read was, and how it began
        return (
            says(f"{len(results[0])}: {results[0][:20]}") if results else calls(tool, texto="hola")
        )

    with open(tmp / "servidor.log", "a", encoding="utf-8") as log:
        async with connect(
            sys.executable, str(HOSTIL), str(tmp / "efectos.jsonl"), *modes,
            prefix="h", errlog=log, **options,
        ) as server:  # fmt: skip
            agent = Agent("a", model="m", instructions="x", tools=server.tools, max_tool_output=cap)
            gateway = ScriptedGateway([responder] * 3, tools=server.tools)
            session = Session(run_id, gateway, SqliteCheckpointer(tmp / "runs.db"))
            return [step async for step in agent.run("Envía.", session=session)]


def start(tmp: Path, *modes: str, **options: Any) -> list[str]:
    async def names() -> list[str]:
        async with connect(
            sys.executable, str(HOSTIL), str(tmp / "efectos.jsonl"), *modes, prefix="h", **options
        ) as server:
            return [t.name for t in server.tools]

    return asyncio.run(names())


def test_a_server_that_lists_a_tool_twice_is_refused_at_start_up_naming_it(tmp_path):
    with pytest.raises(ConfigurationError) as refused:
        start(tmp_path, "doble")
    assert str(refused.value) == (
        "MCP server 'hostil' lists the tool(s) ['enviar'] more than once: a call could reach "
        "either, so none is used; fix the server"
    )
    assert count(tmp_path / "efectos.jsonl", "enviar") == 0


@pytest.mark.parametrize("name", ["enviar.correo", "enviar correo", "e" * 62])
def test_a_name_a_model_api_would_refuse_is_refused_at_start_up_and_rename_fixes_it(tmp_path, name):
    with pytest.raises(ConfigurationError) as refused:
        start(tmp_path, f"nombre:{name}")
    assert str(refused.value) == (
        f"MCP server 'hostil': its tool {name!r} would be named 'h__{name}' ({len(name) + 3} "
        "characters), which a model API refuses: a tool's name is 1 to 64 letters, digits, "
        f"'_' or '-'. Pass connect(..., rename={{{name!r}: 'a_name'}}) or a shorter prefix"
    )
    renamed = start(tmp_path, f"nombre:{name}", rename={name: "enviar_correo"})
    assert renamed == ["h__enviar_correo", "h__grande", "h__imagen", "h__falla"]
    with pytest.raises(ConfigurationError, match=r"rename names tools MCP server 'hostil' does"):
        start(tmp_path, rename={"no_existe": "x"})


def test_prefixes_keep_two_servers_apart_and_a_double_underscore_in_a_tool_is_no_ambiguity(
    tmp_path,
):
    # 'h__a__b' is tool 'a__b' of prefix 'h'; the prefix 'h__a' (with tool 'b') is refused
    assert start(tmp_path, "nombre:a__b")[0] == "h__a__b"

    async def other() -> None:
        async with connect(sys.executable, str(HOSTIL), str(tmp_path / "e.jsonl"), prefix="h__a"):
            pass

    with pytest.raises(ConfigurationError, match="MCP prefix 'h__a' is not one"):
        asyncio.run(other())
    assert not (tmp_path / "e.jsonl").exists()  # refused before the server started


def test_a_server_that_never_answers_initialize_is_lost_after_start_timeout(tmp_path):
    with pytest.raises(McpServerLost) as lost:
        start(tmp_path, "mudo", start_timeout=1.0)
    assert str(lost.value) == (
        "MCP server 'h' went away during its start-up (it did not introduce itself and list its "
        "tools within start_timeout=1.0 s; it may be hung); no tool was called: check its "
        "command and what it wrote to stderr, then connect again"
    )


def test_a_server_that_exits_after_listing_is_lost_mid_call_and_its_step_stays_attempted(
    tmp_path,
):
    with pytest.raises(McpServerLost, match="during the call to tool 'h__enviar'"):
        asyncio.run(run(tmp_path, "r", "h__enviar", "se-va"))
    last = asyncio.run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r"))[-1]
    assert (last.kind, last.phase) == ("tool", Phase.ATTEMPTED)
    with pytest.raises(UncertainEffect):  # no annotations: not idempotent, a person decides
        asyncio.run(run(tmp_path, "r", "h__enviar"))
    assert count(tmp_path / "efectos.jsonl", "enviar") == 0


def test_garbage_on_the_servers_stdout_is_skipped_and_the_effect_happens_once(tmp_path):
    steps = asyncio.run(run(tmp_path, "r", "h__enviar", "basura"))
    assert steps[-1].output == "13: enviado: hola"
    asyncio.run(run(tmp_path, "r", "h__enviar", "basura"))  # the closed run calls nothing
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


def test_content_that_is_not_text_is_named_not_dropped_and_an_error_without_text_says_so(
    tmp_path,
):
    image = asyncio.run(run(tmp_path, "img", "h__imagen"))
    (result,) = [s.result for s in image if isinstance(s, ToolStep) and s.result]
    assert result.content == "el informe\n[left out, not text: image (image/png)]"
    failed = asyncio.run(run(tmp_path, "err", "h__falla"))
    (result,) = [s.result for s in failed if isinstance(s, ToolStep) and s.result]
    assert (result.is_error, result.content) == (
        True,
        "McpToolError: the MCP server reports the tool failed: (it gave no text)",
    )


def test_a_huge_result_is_journaled_once_and_max_tool_output_caps_what_the_model_reads(tmp_path):
    steps = asyncio.run(run(tmp_path, "big", "h__grande", max_tool_output=100))
    (result,) = [s.result for s in steps if isinstance(s, ToolStep) and s.result]
    assert len(result.content) == 1_000_000  # the journal keeps it whole
    read = int(steps[-1].output.split(":")[0])
    assert 100 <= read < 1_000  # the model read the first 100 characters and a note


def test_each_call_carries_the_steps_idempotency_key_and_a_deduplicating_server_sends_once(
    tmp_path,
):
    with pytest.raises(McpServerLost):  # it dies inside enviar, the effect done
        asyncio.run(run(tmp_path, "r", "h__enviar", "idempotente", "muere"))
    steps = asyncio.run(run(tmp_path, "r", "h__enviar", "idempotente"))
    assert steps[-1].output == "13: enviado: hola"
    log = records(tmp_path / "efectos.jsonl")
    (sent,) = [e for e in log if e["que"] == "enviar"]
    (again,) = [e for e in log if e["que"] == "repetida"]
    step = next(s for s in steps if isinstance(s, ToolStep))
    assert sent["clave"] == again["clave"] == f"r/{step.step_id}"
    assert IDEMPOTENCY_KEY == "synaptum-lite/idempotency-key"


def test_annotations_changed_between_passes_do_not_make_an_attempted_step_retryable(tmp_path):
    with pytest.raises(McpServerLost):  # no annotations: destructive, not idempotent
        asyncio.run(run(tmp_path, "r", "h__enviar", "muere"))
    with pytest.raises(ConfigurationChanged) as changed:  # now it says it is idempotent
        asyncio.run(run(tmp_path, "r", "h__enviar", "idempotente"))
    assert changed.value.changes == {"tools": (["h__enviar"], ["h__enviar"])}
    assert str(changed.value).endswith(
        "declared otherwise (description, parameters, risk or idempotency) ['h__enviar']); "
        "a journal never mixes two configurations: resume it on the agent that started it "
        "(agent_for), migrate it (synaptum-lite migrate), or start a new run_id"
    )
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1
    with pytest.raises(UncertainEffect):  # the same word as before: a person decides
        asyncio.run(run(tmp_path, "r", "h__enviar"))
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


def test_annotations_that_are_not_mcp_are_refused_at_start_up_saying_which_and_what(tmp_path):
    with pytest.raises(ConfigurationError) as refused:
        start(tmp_path, "rara")
    assert str(refused.value) == (
        "MCP server 'hostil' answered its start-up with something that is not MCP "
        "(tools.0.annotations.idempotentHint: Input should be a valid boolean, unable to "
        "interpret input, got 'sí'); no tool was called: fix the server"
    )


def test_an_answer_that_is_not_mcp_is_the_tools_error_result_and_is_not_asked_again(tmp_path):
    steps = asyncio.run(run(tmp_path, "r", "h__imagen", "video"))
    (result,) = [s.result for s in steps if isinstance(s, ToolStep) and s.result]
    assert (result.is_error, result.content) == (
        True,
        "McpToolError: the MCP server's answer is not MCP: content.0: none of the forms MCP "
        "allows there fits, got {'type': 'video'}",
    )
    events = asyncio.run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r"))
    assert [e.phase for e in events if isinstance(e, ToolStep)] == [
        Phase.ATTEMPTED,
        Phase.COMPLETED,
    ]


def test_a_server_that_will_not_stop_is_killed_when_the_block_ends(tmp_path):
    sys.path.insert(0, str(HOSTIL.parents[2] / "notebooks"))
    from comun import vivo  # portable: os.kill(pid, 0) would kill it on Windows

    assert start(tmp_path, "terco") == ["h__enviar", "h__grande", "h__imagen", "h__falla"]
    (started,) = records(tmp_path / "efectos.jsonl")
    assert not vivo(started["pid"])  # stdin closed and SIGTERM ignored: the SDK killed it
