"""Attacks on the MCP adapter that tests/mcp/test_mcp_hostil.py does not make, each from a real
server process written on the bare protocol (tests/mcp/ataque_servidor.py): a server's own
error under the codes the SDK uses for a lost answer, bytes that are not UTF-8, questions and
notifications from the server in the middle of a call, an answer under another id, a stdout
closed by a server that stays alive, a flood on stderr, tool pages that loop, schemas that are
not schemas, and an `errlog` the server cannot write to. Each is a clear error or an honest
result, and the server's own record shows no effect done twice."""

from __future__ import annotations

import asyncio
import inspect
import io
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import (
    Agent,
    ConfigurationChanged,
    ConfigurationError,
    InvalidToolCall,
    Phase,
    Role,
    Session,
    SqliteCheckpointer,
    ToolStep,
    UncertainEffect,
    load_events,
)
from synaptum_lite.integrations.mcp import McpServerLost, connect
from synaptum_lite.testing import ScriptedGateway, calls, says
from tests.bounds import HANG

from .efectos import count, records

SERVER = Path(__file__).with_name("ataque_servidor.py")


async def run(tmp: Path, run_id: str, *modes: str, **options: Any) -> list[Any]:
    """One pass of `run_id`: the model calls `h__enviar` once, then says what it read."""

    def responder(request: Any) -> Any:
        results = [m.content for m in request.messages if m.role is Role.TOOL]
        return says(results[0]) if results else calls("h__enviar", texto="hola")

    with open(tmp / "servidor.log", "a", encoding="utf-8") as log:
        options.setdefault("errlog", log)
        async with connect(
            sys.executable, str(SERVER), str(tmp / "efectos.jsonl"), *modes, prefix="h", **options
        ) as server:
            agent = Agent("a", model="m", instructions="x", tools=server.tools)
            gateway = ScriptedGateway([responder] * 3, tools=server.tools)
            session = Session(run_id, gateway, SqliteCheckpointer(tmp / "runs.db"))
            return [step async for step in agent.run("Envía.", session=session)]


def result_of(steps: list[Any]) -> Any:
    (result,) = [s.result for s in steps if isinstance(s, ToolStep) and s.result]
    return result


@pytest.mark.parametrize("code", [-32000, -32001])
def test_a_servers_own_error_under_the_codes_the_sdk_uses_for_a_lost_answer_is_an_answer(
    tmp_path, code
):
    # -32000 and -32001 are what the SDK says when the connection closes or a call times out,
    # and also JSON-RPC's "server error" range: a server that answered is not lost
    steps = asyncio.run(run(tmp_path, "r", f"error:{code}"))
    assert (result_of(steps).is_error, steps[-1].output) == (
        True,
        f"McpToolError: the MCP server answered with JSON-RPC error {code}: la base de datos "
        "no responde",
    )
    asyncio.run(run(tmp_path, "r", f"error:{code}"))  # the closed run calls nothing
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


def test_a_line_that_is_not_utf8_is_skipped_like_garbage_and_the_call_is_answered(tmp_path):
    # before: the SDK's reader died on the byte, and the call waited for call_timeout (for ever
    # without one), then a group of two raw exceptions left the block
    steps = asyncio.run(run(tmp_path, "r", "bytes", call_timeout=HANG))
    assert steps[-1].output == "enviado: hola"
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


def test_questions_and_notifications_from_the_server_mid_call_are_answered_and_the_call_ends(
    tmp_path,
):
    steps = asyncio.run(run(tmp_path, "r", "pregunta", call_timeout=HANG))
    assert steps[-1].output == "enviado: hola"
    answers = [(e["a"], e["error"]) for e in records(tmp_path / "efectos.jsonl") if e["que"] == (
        "respuesta")]  # fmt: skip
    assert answers == [  # what this client cannot do it refuses; a ping it answers
        ("sampling/createMessage", True),
        ("roots/list", True),
        ("elicitation/create", True),
        ("ping", False),
    ]
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


@pytest.mark.parametrize("mode", ["id-ajeno", "cierra"])
def test_an_answer_under_another_id_or_a_stdout_closed_by_a_live_server_is_a_lost_call(
    tmp_path, mode
):
    # the answer under another id never arrives: the call times out (2 s); a closed stdout is
    # seen when it closes, so there only a hang is bounded
    with pytest.raises(McpServerLost) as lost:
        asyncio.run(run(tmp_path, "r", mode, call_timeout=2.0 if mode == "id-ajeno" else HANG))
    assert lost.value.detail == (
        "MCPError: Request 'tools/call' timed out"
        if mode == "id-ajeno"
        else "MCPError: Connection closed"
    )
    last = asyncio.run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r"))[-1]
    assert (last.kind, last.phase) == ("tool", Phase.ATTEMPTED)
    with pytest.raises(UncertainEffect):  # the effect was done: a person decides, not a retry
        asyncio.run(run(tmp_path, "r"))
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


def test_a_server_that_floods_its_stderr_does_not_block_and_its_log_keeps_every_byte(tmp_path):
    steps = asyncio.run(run(tmp_path, "r", "grita", call_timeout=HANG))
    assert steps[-1].output == "enviado: hola"
    assert (tmp_path / "servidor.log").stat().st_size >= 8 * 1024 * 1024


def test_an_errlog_without_a_file_descriptor_is_refused_before_the_server_starts(tmp_path):
    # before: «went away during its start-up (UnsupportedOperation: fileno)», as if the
    # server had failed
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", errlog=io.StringIO()))
    assert str(refused.value) == (
        "MCP server 'h': errlog=StringIO has no file descriptor (UnsupportedOperation: "
        "fileno), and the server writes its stderr to one directly; nothing was started. "
        "Pass an open file, e.g. errlog=open('server.log', 'w')"
    )
    assert not (tmp_path / "efectos.jsonl").exists()


def test_tool_pages_whose_cursor_loops_are_refused_at_once_naming_the_cursor(tmp_path):
    # before: the pages were read until start_timeout, then «it may be hung»
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", "bucle", start_timeout=60))
    assert str(refused.value) == (
        "MCP server 'ataque' lists its tools in pages that loop: the cursor 'otra' came back "
        "after 2 pages (2 tools so far); no tool was called: fix the server"
    )
    assert count(tmp_path / "efectos.jsonl", "enviar") == 0


def test_a_schema_whose_properties_are_null_is_refused_at_start_up_naming_them(tmp_path):
    # before: a raw AttributeError ('NoneType' object has no attribute 'items'); the SDK
    # refuses any other value that is not an object, and null passes it
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", "propiedades:null"))
    assert str(refused.value) == (
        "MCP server 'ataque': the input schema of its tool 'enviar' has properties None, "
        "not an object of argument schemas; no tool was called: fix the server"
    )


def test_a_type_list_with_something_that_is_not_a_type_name_keeps_the_names_it_has(tmp_path):
    # before: a raw TypeError (unhashable type: 'dict') at start-up
    schema = 'propiedades:{"texto": {"type": ["string", {"no": "es un tipo"}]}}'
    steps = asyncio.run(run(tmp_path, "r", schema))
    assert steps[-1].output == "enviado: hola"

    async def wrong_type() -> None:
        async with connect(
            sys.executable, str(SERVER), str(tmp_path / "e.jsonl"), schema, prefix="h"
        ) as server:
            server.tools[0].bind({"texto": 3})

    with pytest.raises(InvalidToolCall, match="texto must be string, got 3"):
        asyncio.run(wrong_type())


def test_a_required_that_is_null_is_refused_at_start_up_naming_it(tmp_path):
    # before: connect took it, and the first call ended the run with a raw TypeError ('NoneType'
    # object is not iterable); the SDK refuses any other value that is not a list of strings
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", "requerido:null"))
    assert str(refused.value) == (
        "MCP server 'ataque': the input schema of its tool 'enviar' has required None, "
        "not a list of argument names; no tool was called: fix the server"
    )


def test_a_schema_that_names_no_property_and_takes_any_passes_the_models_arguments_on(tmp_path):
    # before: every argument was refused, «unknown argument(s) texto»: the tool could not be
    # called with any; what the schema says of the others is still checked
    steps = asyncio.run(run(tmp_path, "r", "abierta"))
    assert (result_of(steps).is_error, steps[-1].output) == (False, "enviado: hola")

    async def bound(arguments: dict[str, Any]) -> dict[str, Any]:
        async with connect(
            sys.executable, str(SERVER), str(tmp_path / "e.jsonl"), "abierta", prefix="h"
        ) as server:
            return server.tools[0].bind(arguments)

    assert asyncio.run(bound({"texto": "hola", "otro": "sí"})) == {"texto": "hola", "otro": "sí"}
    with pytest.raises(InvalidToolCall, match="otro must be string, got 3"):
        asyncio.run(bound({"otro": 3}))
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


ANSWERED = (
    "McpToolError: the MCP server answered, so the tool ran (its effect, if it has one, "
    "happened), and its answer was not read: "
)
MIB = 1024 * 1024


def completed_once(tmp: Path, *modes: str, **options: Any) -> None:
    """The step was journaled attempted then completed, and a second pass of the closed run
    calls nothing: the server's record holds one effect."""
    events = asyncio.run(load_events(SqliteCheckpointer(tmp / "runs.db"), "r"))
    assert [e.phase for e in events if isinstance(e, ToolStep)] == [
        Phase.ATTEMPTED,
        Phase.COMPLETED,
    ]
    asyncio.run(run(tmp, "r", *modes, **options))
    assert count(tmp / "efectos.jsonl", "enviar") == 1


@pytest.mark.parametrize(
    "modes",
    [("largo:2097152",), ("largo:2097152", "id-al-final"), ("sin-fin:2097152",)],
    ids=["id-first", "id-last", "never-ends"],
)
def test_an_answer_past_max_answer_bytes_is_refused_at_once_and_the_step_says_the_tool_ran(
    tmp_path, modes
):
    # before: no bound. The SDK read 100 MB in 502 s (its reader's cost grows with the square
    # of a line), and past call_timeout a payment the server had made and answered was «lost»,
    # an uncertain effect for a person; an answer that never ends waited for call_timeout.
    # Now the answer is refused as it passes the bound: call_timeout stays the default (600 s),
    # and for the answer that never ends only that refusal can end the call.
    steps = asyncio.run(run(tmp_path, "r", *modes, max_answer_bytes=MIB))
    result = result_of(steps)
    refused = re.fullmatch(
        re.escape(ANSWERED) + r"it had reached (\d+) bytes when it was refused, over "
        r"max_answer_bytes=1048576; to read answers this long, give "
        r"connect\(\.\.\., max_answer_bytes=\.\.\.\) a larger bound",
        result.content,
    )
    assert result.is_error and refused, result.content[:300]
    assert int(refused.group(1)) > MIB
    assert steps[-1].output == result.content  # the model read it
    completed_once(tmp_path, *modes, max_answer_bytes=MIB)


def test_a_larger_max_answer_bytes_reads_the_same_answer_whole(tmp_path):
    steps = asyncio.run(run(tmp_path, "r", "largo:2097152", max_answer_bytes=3 * MIB))
    assert (result_of(steps).is_error, result_of(steps).content) == (False, "x" * 2097152)
    assert inspect.signature(connect).parameters["max_answer_bytes"].default == 4 * MIB


def test_a_start_up_answer_past_max_answer_bytes_is_refused_naming_its_size_and_the_bound(
    tmp_path,
):
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", "lista-larga:2097152", max_answer_bytes=MIB))
    assert re.fullmatch(
        r"MCP server 'ataque' answered its start-up, and the answer was not read: it had "
        r"reached \d+ bytes when it was refused, over max_answer_bytes=1048576; to read "
        r"answers this long, give connect\(\.\.\., max_answer_bytes=\.\.\.\) a larger "
        r"bound; no tool was called",
        str(refused.value),
    ), str(refused.value)
    assert count(tmp_path / "efectos.jsonl", "enviar") == 0


@pytest.mark.parametrize("bound", [0, -1, True, 1.5, "4MB"])
def test_a_max_answer_bytes_that_is_not_a_bound_is_refused_before_the_server_starts(
    tmp_path, bound
):
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", max_answer_bytes=bound))
    assert str(refused.value) == (
        f"MCP server 'h': max_answer_bytes={bound!r} is not a bound; nothing was started: "
        "pass a whole number of bytes, at least 1 (the default is 4194304)"
    )
    assert not (tmp_path / "efectos.jsonl").exists()


def test_structured_content_holding_nan_is_the_tools_result_as_its_json_text(tmp_path):
    # before: ToolResultNotSerializable stopped the run with the step attempted, and the next
    # pass asked a person about an effect whose answer had arrived
    steps = asyncio.run(run(tmp_path, "r", "nan"))
    assert (result_of(steps).is_error, steps[-1].output) == (
        False,
        '{"importe":NaN,"saldo":Infinity,"moneda":"EUR"}',
    )
    completed_once(tmp_path, "nan")


def test_structured_content_nested_past_what_can_be_read_is_an_answer_not_a_lost_call(
    tmp_path,
):
    # before: the SDK dropped the line (its parser's recursion limit), the call waited for
    # call_timeout and was lost: an uncertain effect for a person, though the server answered
    steps = asyncio.run(run(tmp_path, "r", "profundo", call_timeout=HANG))
    result = result_of(steps)
    assert result.is_error
    assert result.content.startswith(
        ANSWERED + "it is not JSON-RPC (Invalid JSON: recursion limit exceeded at line 1 "
    )
    assert len(result.content) < 500  # the line itself is cut
    completed_once(tmp_path, "profundo")


def test_an_answer_the_sdk_cannot_read_is_the_calls_error_result_naming_why(tmp_path):
    # a lone surrogate, which JSON can escape and the SDK refuses. Before: the line was
    # dropped, the call waited for call_timeout and was lost, for a person to decide
    steps = asyncio.run(run(tmp_path, "r", "surrogado", call_timeout=HANG))
    result = result_of(steps)
    assert result.is_error
    assert result.content.startswith(
        ANSWERED + "it is not JSON-RPC (Invalid JSON: unexpected end of hex escape at line 1 "
    )
    completed_once(tmp_path, "surrogado")


def test_a_line_it_cannot_read_that_answers_no_call_is_dropped_and_a_lost_call_names_it(
    tmp_path,
):
    # the same line under an id no call has: it answers nothing, so it is dropped, the answer
    # never arrives, and the error says more than «timed out»
    with pytest.raises(McpServerLost) as lost:
        asyncio.run(run(tmp_path, "r", "surrogado", "id-ajeno", call_timeout=2.0))
    assert lost.value.detail.startswith(
        "MCPError: Request 'tools/call' timed out; meanwhile it wrote 1 line(s) that are not "
        "JSON-RPC, and an answer written so is dropped unread (the last: Invalid JSON: "
    )
    assert len(lost.value.detail) < 400  # the line itself is cut
    with pytest.raises(UncertainEffect):
        asyncio.run(run(tmp_path, "r"))
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1


def test_a_call_is_bounded_by_default_so_a_server_that_never_answers_does_not_hang_the_run():
    # before: call_timeout=None, and a dropped or never-written answer made the run wait for ever
    assert inspect.signature(connect).parameters["call_timeout"].default == 600.0


def test_a_server_that_refuses_initialize_is_a_configuration_error_not_a_server_gone(tmp_path):
    # before: «went away during its start-up (MCPError: versión no soportada)»: it was there
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", "init-error"))
    assert str(refused.value) == (
        "MCP server 'h' refused its start-up with JSON-RPC error -32602: 'versión no "
        "soportada'; no tool was called: check its command, arguments and version, and what "
        "it wrote to stderr"
    )


def test_a_server_speaking_a_protocol_version_the_sdk_lacks_is_a_configuration_error(tmp_path):
    # before: the SDK's RuntimeError, raw
    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(run(tmp_path, "r", "version-rara"))
    assert str(refused.value) == (
        "MCP server 'h' cannot be used (RuntimeError: Unsupported protocol version from the "
        "server: 1999-01-01); no tool was called: update the server or the MCP SDK so that "
        "they share a protocol version"
    )
    assert count(tmp_path / "efectos.jsonl", "enviar") == 0


def test_a_tool_the_server_added_between_two_passes_is_a_configuration_change_naming_it(
    tmp_path,
):
    with pytest.raises(McpServerLost):
        asyncio.run(run(tmp_path, "r", "cierra", call_timeout=10.0))
    with pytest.raises(ConfigurationChanged) as changed:
        asyncio.run(run(tmp_path, "r", "otra"))
    assert changed.value.changes == {"tools": ([], ["h__otra"])}
    assert "(tools: new ['h__otra'])" in str(changed.value)
    assert count(tmp_path / "efectos.jsonl", "enviar") == 1  # the second pass called nothing


def test_an_argument_no_process_can_be_given_is_a_configuration_error_naming_it():
    # before: the SDK's ValueError (embedded null byte), raw
    async def start() -> None:
        async with connect(sys.executable, "-c", "\0", prefix="h"):
            pass

    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(start())
    assert str(refused.value).startswith(
        "MCP server 'h' cannot be started (ValueError: embedded null byte): its command "
    )
    assert str(refused.value).endswith(
        ", arguments ['-c', '\\x00'], env or cwd hold what no process can be given; nothing "
        "was started: fix them"
    )
