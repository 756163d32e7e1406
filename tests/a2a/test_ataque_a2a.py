"""Attacks on the A2A client that tests/a2a/test_ataques.py does not make, each from a real
server process on 127.0.0.1 (tests/a2a/ataque_servidor.py): a task that ends in each state,
or in one A2A does not have; a task whose parts are not parts; an error or a result of a
megabyte; ListTasks in pages, or in pages that loop. Each is a clear, bounded error or a
result the parent's model reads, and the server receives the message once."""

from __future__ import annotations

import base64
import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from synaptum_lite import (
    ConfigurationError,
    FinalStep,
    RemoteProtocolError,
    RemoteUnavailable,
    Risk,
    Session,
    SqliteCheckpointer,
    UncertainEffect,
    load_events,
)
from synaptum_lite.integrations.a2a import RemoteAgent, remote_agent
from synaptum_lite.testing import ScriptedGateway

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "Recomiendo el TP1947."


async def drive(tmp: Path, server: Any, run_id: str = "r") -> FinalStep:
    """One pass of the remote agent's own run `run_id`; its final step."""
    remote = await remote_agent(server.url, risk=Risk.READ, name="buscador", poll_interval=0.01)
    session = Session(run_id, ScriptedGateway([]), SqliteCheckpointer(tmp / "runs.db"))
    steps = [step async for step in remote.run("Busca un vuelo.", session=session)]
    assert isinstance(steps[-1], FinalStep)
    return steps[-1]


def where(server: Any, step: str = "000001-tool") -> str:
    return f"run 'r', step {step}: remote agent 'buscador' at {server.url}/a2a"


@pytest.mark.parametrize(
    "state", ["TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]
)
async def test_a_task_that_ends_without_success_is_a_result_naming_its_state_and_reason(
    tmp_path, serve, state
):
    server = serve(f"estado:{state}")
    final = await drive(tmp_path, server)
    assert final.output is None
    assert final.reason.startswith("the remote task ")
    assert final.reason.endswith(f" ended in {state}: Motivo del agente.")
    assert (await drive(tmp_path, server)).reason == final.reason  # closed: asks nothing
    assert (server.sent(), server.requests("GetTask")) == (1, 1)


@pytest.mark.parametrize(
    ("mode", "shown"),
    [
        ("estado:TASK_STATE_UNSPECIFIED", "'TASK_STATE_UNSPECIFIED'"),
        ("estado:RARO", "'RARO'"),
        ("estado-objeto", "{'nombre': 'TASK_STATE_COMPLETED'}"),
    ],
)
async def test_a_task_in_a_state_a2a_does_not_have_is_a_protocol_error_naming_it(
    tmp_path, serve, mode, shown
):
    # before, a state that is a JSON object: a raw TypeError (unhashable type: 'dict')
    server = serve(mode)
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert str(error.value).startswith(f"{where(server)}: GetTask was answered with task '")
    assert str(error.value).endswith(
        f"' in an unknown state {shown}; nothing was sent again: fix the server and run the "
        "same run_id again"
    )
    assert server.sent() == 1


@pytest.mark.parametrize(
    ("mode", "what"),
    [
        ("mensaje-texto", "a status message that is not an object: 'Motivo del agente.'"),
        ("artefacto-texto", "an artifact that is not an object: 'Recomiendo el TP1947.'"),
        ("partes-numero", "parts that are not a list: 5"),
    ],
)
async def test_a_task_whose_message_artifacts_or_parts_are_not_what_a2a_says_is_a_protocol_error(
    tmp_path, serve, mode, what
):
    # before: a raw AttributeError or TypeError ('str' object has no attribute 'get', 'int'
    # object is not iterable), the same on every pass
    server = serve(mode)
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert str(error.value).startswith(f"{where(server)}: GetTask was answered with task '")
    assert str(error.value).endswith(
        f"' with {what}; nothing was sent again: fix the server and run the same run_id again"
    )
    assert server.sent() == 1


async def test_an_error_of_a_megabyte_is_named_in_a_bounded_message(tmp_path, serve):
    server = serve("error-enorme")
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert str(error.value) == (
        f"{where(server)}: GetTask failed with JSON-RPC error -32603: '{'y' * 80}'… (1000000 "
        "characters); nothing was sent again: fix the server and run the same run_id again"
    )
    assert server.sent() == 1


async def test_a_result_of_a_megabyte_with_neither_task_nor_message_is_named_bounded(
    tmp_path, serve
):
    server = serve("resultado-enorme")
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert len(str(error.value)) < 600
    assert str(error.value).startswith(
        f"{where(server, '000000-tool')}: SendMessage was answered with a result with neither "
        "task nor message: {'recibido': 'xxxx"
    )
    assert server.sent() == 1


async def test_a_resumed_send_finds_its_task_on_a_later_page_of_list_tasks_and_sends_nothing(
    tmp_path, serve
):
    # before: only the first page was read, the task was not on it, and the message was sent
    # a second time
    server = serve("paginas")
    with pytest.raises(RemoteUnavailable):  # the server created the task, then answered 503
        await drive(tmp_path, server)
    assert (await drive(tmp_path, server)).output == ANSWER
    assert server.sent() == 1
    assert server.requests("ListTasks") == 4  # three tasks of other contexts, then ours


async def test_list_tasks_pages_that_loop_are_a_protocol_error_and_nothing_is_sent_again(
    tmp_path, serve
):
    server = serve("paginas-bucle")
    with pytest.raises(RemoteUnavailable):
        await drive(tmp_path, server)
    for _pass in range(2):
        with pytest.raises(RemoteProtocolError) as error:
            await drive(tmp_path, server)
    assert str(error.value) == (
        f"{where(server, '000000-tool')}: ListTasks was answered with pages that loop: page "
        "token '1' came back after 2 pages; nothing was sent again: fix the server and run "
        "the same run_id again"
    )
    assert server.sent() == 1


async def test_a_card_whose_skills_are_not_a_list_is_a_protocol_error_naming_them(serve):
    # before: a raw TypeError ('int' object is not iterable)
    server = serve("habilidades-numero")
    with pytest.raises(RemoteProtocolError) as error:
        await remote_agent(server.url, risk=Risk.READ, name="buscador")
    assert str(error.value) == (
        f"remote agent 'buscador' at {server.url}/.well-known/agent-card.json: its card's "
        "skills are 5, not a list"
    )
    assert server.sent() == 0


async def test_a_url_httpx_cannot_parse_is_a_configuration_error_naming_it():
    # before: httpx's own InvalidURL, raw
    with pytest.raises(ConfigurationError) as error:
        await remote_agent("http://[::1", risk=Risk.READ, name="buscador")
    assert str(error.value) == (
        "remote agent 'buscador': 'http://[::1' is not a URL httpx can use (InvalidURL: "
        "Invalid port: ':1'); nothing was fetched or sent. Give the server's base URL, such as "
        "http://127.0.0.1:8000"
    )


async def test_an_answer_holding_a_lone_surrogate_is_journaled_with_a_replacement_character(
    tmp_path, serve
):
    # before: the journal refused the completed step (a raw ValueError) on every pass, so the
    # answer the server kept giving was never kept
    server = serve("surrogado")
    assert (await drive(tmp_path, server)).output == "TP\ufffd"
    assert (await drive(tmp_path, server)).output == "TP\ufffd"  # closed: asks nothing
    assert (server.sent(), server.requests("GetTask")) == (1, 1)


async def test_a_task_id_holding_a_lone_surrogate_is_a_protocol_error_and_nothing_is_resent(
    tmp_path, serve
):
    # before: a raw ValueError from the journal, which cannot keep the id to ask for it
    server = serve("id-surrogado")
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert str(error.value).startswith(
        f"{where(server, '000000-tool')}: SendMessage was answered with task '"
    )
    assert "', an id holding a lone surrogate, not text; the attempt is journaled" in str(
        error.value
    )
    with pytest.raises(RemoteProtocolError, match="ListTasks was answered with task '"):
        await drive(tmp_path, server)  # it asks for the task of its context, sending nothing
    assert server.sent() == 1


async def test_a_password_in_the_url_reaches_the_server_and_no_message_or_journal(tmp_path, serve):
    # before: the card's origin with «ana:s3creto-largo@» was not the interface's, so the card
    # was refused, printing the password; and a server that was down printed it too
    server = serve("normal")
    url = server.url.replace("http://", "http://ana:s3creto-largo@")
    remote = await remote_agent(url, risk=Risk.READ, name="buscador", poll_interval=0.01)
    session = Session("r", ScriptedGateway([]), SqliteCheckpointer(tmp_path / "runs.db"))
    steps = [step async for step in remote.run("Busca un vuelo.", session=session)]
    assert steps[-1].output == ANSWER
    assert server.counted()["con_credenciales"] == server.requests("SendMessage") + (
        server.requests("GetTask")
    )  # every JSON-RPC request carried them, as the card's did
    assert (repr(remote), remote.configuration["remote"]["url"]) == (
        f"RemoteAgent('buscador', url='{server.url}/a2a', risk=Risk.READ)",
        f"{server.url}/a2a",
    )
    assert not any(b"s3creto" in f.read_bytes() for f in tmp_path.iterdir())
    server.stop()
    with pytest.raises(RemoteUnavailable) as error:
        await remote_agent(url, risk=Risk.READ, name="buscador")
    assert str(error.value).startswith(
        f"remote agent 'buscador' at {server.url}/.well-known/agent-card.json: its card could "
        "not be fetched ("
    )


def kill_inside_the_send(tmp: Path, server: Any, run_id: str = "r") -> None:
    """A real driver (tests/a2a/ataque_hijo.py) SIGKILLed while SendMessage waits: once its
    attempt is journaled (the line it prints) and the server received the message."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.a2a.ataque_hijo", server.url, str(tmp / "runs.db"),
         run_id],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert child.stdout is not None and child.stderr is not None
    line = child.stdout.readline()
    assert line.split() == ["000000-tool", "attempted"], line + child.stderr.read()
    while server.sent() == 0:  # the message arrives after the attempt is journaled
        assert child.poll() is None, "the driver ended before its message arrived"
        time.sleep(0.01)
    child.kill()
    assert child.wait() == -signal.SIGKILL
    child.stdout.close()
    child.stderr.close()


async def test_a_driver_killed_inside_the_send_resumes_by_finding_its_task_on_a_later_page(
    tmp_path, serve
):
    # a real SIGKILL while SendMessage waits: the server holds the task, the journal only
    # the attempt; the resume pages through ListTasks (three tasks of other contexts first)
    server = serve("paginas-cuelga")
    kill_inside_the_send(tmp_path, server)
    assert (await drive(tmp_path, server)).output == ANSWER
    assert (server.sent(), server.requests("SendMessage")) == (1, 1)
    assert server.requests("ListTasks") == 4


async def test_a_send_to_a_server_that_keeps_its_own_context_is_found_by_its_message_id(
    tmp_path, serve
):
    # before: the resume asked for the tasks of its own context, with no history; the server
    # had filed the task under a context of its own, so none was found, and the same message
    # id arrived a second time
    server = serve("contexto-propio")
    kill_inside_the_send(tmp_path, server)
    assert (await drive(tmp_path, server)).output == ANSWER
    assert server.mensajes() == ["r/000000-tool"]  # exactly once
    assert server.requests("ListTasks") == 2  # in its context (none), then every task
    events = await load_events(SqliteCheckpointer(tmp_path / "runs.db"), "r")
    found = json.loads(events[1].result.content)
    assert (found["found"], found["contextId"]) == ("ListTasks", f"suyo-{found['taskId']}")
    assert (await drive(tmp_path, server)).output == ANSWER  # closed: asks nothing more
    assert (server.sent(), server.requests("ListTasks")) == (1, 2)


async def test_a_send_the_server_cannot_place_by_its_history_is_uncertain_and_never_resent(
    tmp_path, serve
):
    # its own contexts, and tasks listed without the history that says which message made
    # each: the message may have arrived, and nothing says; before, it was sent again
    server = serve("contexto-propio-sin-historia")
    kill_inside_the_send(tmp_path, server)
    for _pass in range(2):
        with pytest.raises(UncertainEffect) as error:
            await drive(tmp_path, server)
    assert (error.value.run_id, error.value.step_id, error.value.tool) == (
        "r",
        "000000-tool",
        "SendMessage",
    )
    assert error.value.__notes__ == [
        f"remote agent 'buscador' at {server.url}/a2a: ListTasks shows 3 task(s) of other "
        "contexts without the history that would say whether message 'r/000000-tool' created "
        "one; nothing was sent again"
    ]
    assert server.mensajes() == ["r/000000-tool"]
    # what the error says to do works: the person who checked records the answer
    session = Session("r", ScriptedGateway([]), SqliteCheckpointer(tmp_path / "runs.db"))
    await session.record_result("000000-tool", "El TP1947, según el servidor.", by="operadora")
    assert (await drive(tmp_path, server)).output == "El TP1947, según el servidor."
    assert server.mensajes() == ["r/000000-tool"]


async def test_a_stream_of_events_where_json_was_asked_for_is_a_protocol_error_showing_it(
    tmp_path, serve
):
    server = serve("sse")
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert str(error.value).startswith(
        f"{where(server)}: GetTask was answered with HTTP 200 with a body that is not JSON-RPC: "
        '\'data: {"jsonrpc": "2.0", '
    )
    assert server.sent() == 1


async def test_a_task_listed_on_two_pages_is_one_task_and_the_resume_sends_nothing(tmp_path, serve):
    # before: «2 tasks in context 'r', where one was sent», on every pass
    server = serve("paginas-repetida")
    with pytest.raises(RemoteUnavailable):
        await drive(tmp_path, server)
    assert (await drive(tmp_path, server)).output == ANSWER
    assert (server.sent(), server.requests("ListTasks")) == (1, 5)


async def test_a_page_token_that_is_not_a_string_is_a_protocol_error_naming_it(tmp_path, serve):
    # before this check was ordered: a raw TypeError (unhashable type: 'dict')
    server = serve("paginas-objeto")
    with pytest.raises(RemoteUnavailable):
        await drive(tmp_path, server)
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path, server)
    assert str(error.value) == (
        f"{where(server, '000000-tool')}: ListTasks was answered with a page token that is not "
        "one: {'pagina': '1'}; nothing was sent again: fix the server and run the same run_id "
        "again"
    )
    assert server.sent() == 1


async def test_a_server_that_wants_credentials_says_so_and_never_received_the_message(
    tmp_path, serve
):
    # before: «HTTP 401 with a body that is not JSON-RPC: ''»
    server = serve("credenciales")
    for _pass in range(2):
        with pytest.raises(RemoteProtocolError) as error:
            await drive(tmp_path, server)
    assert str(error.value) == (
        f"{where(server, '000000-tool')}: ListTasks answered HTTP 401: the server wants "
        "credentials (what its card's securitySchemes say) that this client does not send, "
        "beyond a user:password in the URL; the message did not get in: give a user:password "
        "in the URL, or use a server that needs no more, then run the same run_id again"
    )
    assert server.sent() == 0


PASSWORD = "s3creto-largo"
BASIC = base64.b64encode(f"ana:{PASSWORD}".encode()).decode()


def with_password(server: Any) -> str:
    return server.url.replace("http://", f"http://ana:{PASSWORD}@")


def leaks(*texts: str, folder: Path | None = None, basic: str = BASIC) -> list[str]:
    """Which of the password's forms (raw, Basic) shows in `texts` or in a file of `folder`."""
    files = [f.read_bytes().decode("utf-8", "replace") for f in folder.iterdir()] if folder else []
    every = "".join(texts) + "".join(files)
    return [form for form in (PASSWORD, basic) if form in every]


@pytest.mark.parametrize("userinfo", [f"ana:{PASSWORD}", PASSWORD])  # a token as the user
async def test_a_server_error_quoting_the_authorization_header_shows_no_password_nor_log(
    tmp_path, serve, caplog, userinfo
):
    # before: httpx was handed the URL with «ana:s3creto-largo@» (its INFO line printed it),
    # and the server's error quoting the Authorization header put «Basic <base64 of
    # ana:s3creto-largo>» in the RemoteProtocolError
    caplog.set_level(logging.DEBUG)  # httpx's INFO lines and httpcore's DEBUG ones
    server = serve("eco-autorizacion")
    url = server.url.replace("http://", f"http://{userinfo}@")
    basic = base64.b64encode(f"{userinfo}{'' if ':' in userinfo else ':'}".encode()).decode()
    remote = await remote_agent(url, risk=Risk.READ, name="buscador")
    session = Session("r", ScriptedGateway([]), SqliteCheckpointer(tmp_path / "runs.db"))
    errors = []
    for _pass in range(2):
        with pytest.raises(RemoteProtocolError) as error:
            _ = [step async for step in remote.run("Busca un vuelo.", session=session)]
        errors.append(error.value)
    assert [str(e) for e in errors] == [
        f"{where(server, '000000-tool')}: SendMessage failed with JSON-RPC error -32603: "
        "'rechazada: Authorization: Basic [redacted]'; the attempt is journaled: run the same "
        "run_id again, and the server is asked for the task holding this message before "
        "anything is sent",
        f"{where(server, '000000-tool')}: ListTasks failed with JSON-RPC error -32603: "
        "'rechazada: Authorization: Basic [redacted]'; nothing was sent again: fix the server "
        "and run the same run_id again",
    ]
    assert f"HTTP Request: POST {server.url}/a2a " in caplog.text  # logged, without it
    shown = [f"{e}{e!r}" for e in errors]
    assert leaks(caplog.text, *shown, folder=tmp_path, basic=basic) == []
    assert server.counted()["con_credenciales"] == 1  # sent as a header, apart from the URL
    assert server.mensajes() == ["r/000000-tool"]


async def test_an_answer_quoting_the_authorization_header_is_journaled_redacted(
    tmp_path, serve, caplog
):
    # before: the answer was journaled as the server wrote it, Basic credentials and all
    caplog.set_level(logging.DEBUG)
    server = serve("eco-en-respuesta")
    remote = await remote_agent(with_password(server), risk=Risk.READ, name="buscador")
    session = Session("r", ScriptedGateway([]), SqliteCheckpointer(tmp_path / "runs.db"))
    steps = [step async for step in remote.run("Busca un vuelo.", session=session)]
    assert steps[-1].output == f"{ANSWER} (me llegó Authorization: Basic [redacted])"
    assert leaks(caplog.text, folder=tmp_path) == []
    assert server.counted()["con_credenciales"] == 2  # SendMessage and GetTask


@pytest.mark.parametrize(
    ("url", "shown", "problem"),
    [
        ("http://127.0.0.1:99999", None, "port 99999 is not between 1 and 65535"),
        (f"http://ana:{PASSWORD}@127.0.0.1:99999", "http://127.0.0.1:99999", "port 99999 is "
         "not between 1 and 65535"),
        ("http://127.0.0.1:0", None, "port 0 is not between 1 and 65535"),
        ("http://127.0.0.1:-1", None, "port -1 is not between 1 and 65535"),
        ("127.0.0.1:8000", None, "it has no scheme: it must start with http:// or https://"),
        (f"ana:{PASSWORD}@127.0.0.1:8000", "127.0.0.1:8000", "it has no scheme: it must start "
         "with http:// or https://"),
        ("", None, "it has no scheme: it must start with http:// or https://"),
        ("ftp://127.0.0.1:8000", None, "its scheme is 'ftp': it must start with http:// or "
         "https://"),
        ("http://", None, "it names no host"),
        ("http://:8000", None, "it names no host"),
        ("http://127.0.0.1:8000/?clave=1", None, "it has a ?query or #fragment, which the "
         "card's path would not end"),
    ],
)  # fmt: skip
async def test_a_url_no_request_can_go_to_is_a_configuration_error_naming_it(url, shown, problem):
    # before: port 99999 (or -1) was a raw ExceptionGroup with an OverflowError inside; no
    # scheme, ftp:// and an empty host were «its card could not be fetched», as if the server
    # were down; port 0 a ConnectError, and a ?query was sent on as part of the card's path
    with pytest.raises(ConfigurationError) as error:
        await remote_agent(url, risk=Risk.READ, name="buscador")
    assert str(error.value) == (
        f"remote agent 'buscador': {shown if shown is not None else url!r} is not a URL httpx "
        f"can use ({problem}); nothing was fetched or sent. Give the server's base URL, such as "
        "http://127.0.0.1:8000"
    )
    assert leaks(str(error.value)) == []


def test_a_card_whose_interface_has_a_port_out_of_range_is_refused_before_anything_is_sent():
    # before: accepted, and the first SendMessage (its attempt journaled) raised a raw
    # ExceptionGroup, on every pass
    card = {
        "name": "Buscador",
        "description": "Busca vuelos.",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:99999/a2a", "protocolBinding": "JSONRPC",
             "protocolVersion": "1.0"}
        ],
    }  # fmt: skip
    with pytest.raises(RemoteProtocolError) as error:
        RemoteAgent(card, card_url="http://127.0.0.1:99999/card", risk=Risk.READ)
    assert str(error.value) == (
        "remote agent 'Buscador' at http://127.0.0.1:99999/card: its JSON-RPC interface URL "
        "'http://127.0.0.1:99999/a2a' cannot be used (port 99999 is not between 1 and 65535); "
        "nothing was sent"
    )
