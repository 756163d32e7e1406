"""A hostile or broken A2A server, each in a real process on 127.0.0.1: a task that never ends,
«not now» while polling, another task than the one asked for, a task that asks a question, a
huge or unreadable answer, a card that redirects or sends requests elsewhere. Each is a clear
error or a result the parent's model reads, and the server receives the message once: counted
by the server, over two passes of the same run."""

from __future__ import annotations

import _hijo_19 as hijo
import pytest

from synaptum_lite import (
    ConfigurationError,
    FinalStep,
    RemoteProtocolError,
    RemoteUnavailable,
    Risk,
    Session,
    load_events,
)
from synaptum_lite.integrations.a2a import RemoteTaskTimeout, remote_agent

ANSWER = "Viaje listo. Recomiendo el TP1947: sale a las 9:05 y cuesta 89 €."


async def drive(almacen, run_id, buscador):
    """Run (or resume) the parent with this remote agent; its final step."""
    session = Session(run_id, hijo.puerta(), hijo.journal(almacen))
    final = None
    async for step in hijo.agencia(buscador).run(hijo.TAREA, session=session):
        if isinstance(step, FinalStep):
            final = step
    return final


async def twice_refused(tmp_path, server, run_id, error_type, **options):
    """Two passes of one run, each ending in `error_type`; the last error."""
    buscador = await remote_agent(server.url, risk=Risk.READ, name="buscador", **options)
    for _pass in range(2):
        with pytest.raises(error_type) as error:
            await drive(tmp_path / "runs.db", run_id, buscador)
    return error.value


def sent_by(server, run_id):
    return sum(1 for m in server.mensajes() if m.startswith(f"{run_id}/"))


def where(server, run_id, step="000001-tool"):
    return (
        f"run '{run_id}/000001-delegate', step {step}: remote agent 'buscador' at {server.url}/a2a"
    )


async def waits(almacen, run_id):
    """The attempts of the sub-run's GetTask step, as journaled."""
    events = await load_events(hijo.journal(almacen), f"{run_id}/000001-delegate")
    return [e.attempt for e in events if getattr(e, "call", None) and e.call.name == "GetTask"]


async def test_a_remote_task_that_never_ends_stops_at_max_wait_and_is_not_sent_again(
    tmp_path, arranca
):
    server = arranca(modo="eterna", duracion=0.0)
    error = await twice_refused(tmp_path, server, "eterna", RemoteTaskTimeout, max_wait=0.4)
    assert sent_by(server, "eterna") == 1
    assert str(error) == (
        f"{where(server, 'eterna')}: task {error.task_id!r} did not end within max_wait=0.4 s "
        "(last seen in TASK_STATE_WORKING); the message was not sent again. Run the same "
        "run_id again to go on waiting for the same task, or give it more time with "
        "remote_agent(..., max_wait=SECONDS)"
    )
    assert await waits(tmp_path / "runs.db", "eterna") == [1, 2]  # attempted twice, never ended


async def test_a_pass_that_timed_out_is_resumed_with_more_time_and_gets_the_same_task(
    tmp_path, serve
):
    # the task is held working until the test lets it go: before, it ended 1.5 s after it was
    # sent, and a machine slow enough to spend that before max_wait ran out saw no timeout
    server = serve("retenida")
    almacen = tmp_path / "runs.db"
    impatient = await remote_agent(server.url, risk=Risk.READ, name="buscador", max_wait=0.2)
    with pytest.raises(RemoteTaskTimeout):
        await drive(almacen, "paciencia", impatient)
    server.suelta()
    patient = await remote_agent(server.url, risk=Risk.READ, name="buscador", max_wait=60)
    final = await drive(almacen, "paciencia", patient)
    assert final.output == "Viaje listo. Recomiendo el TP1947."
    assert sent_by(server, "paciencia") == 1
    assert await waits(almacen, "paciencia") == [1, 2, 2]  # attempted, attempted again, done


async def test_polling_slows_down_to_one_request_a_second_not_a_busy_loop(tmp_path, arranca):
    server = arranca(modo="eterna", duracion=0.0)
    await twice_refused(tmp_path, server, "pausas", RemoteTaskTimeout, max_wait=2.5)
    # pauses of 0.05 s growing by half each time to 1 s: at most 9 polls fit in 2.5 s (a busy
    # machine only makes them fewer); at a fixed 0.05 s it would be 50
    assert 2 <= server.peticiones("GetTask") <= 2 * 9
    assert sent_by(server, "pausas") == 1


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("max_wait", 0, "bounds how long one pass waits for the remote task"),
        ("poll_interval", 0, "is the pause between two polls of the remote task"),
        ("timeout", float("inf"), "bounds each HTTP request"),
        ("max_wait", "600", "bounds how long one pass waits for the remote task"),
    ],
)
async def test_a_wait_that_is_not_a_positive_number_of_seconds_is_refused_naming_it(
    arranca, option, value, said
):
    server = arranca()
    with pytest.raises(ConfigurationError) as error:
        await remote_agent(server.url, risk=Risk.READ, name="buscador", **{option: value})
    assert str(error.value) == (
        f"remote agent 'buscador': {option} must be a positive number of seconds, got "
        f"{value!r}; it {said}"
    )


async def test_a_server_that_says_not_now_while_polling_is_asked_again_and_answers(
    tmp_path, arranca
):
    server = arranca(modo="ocupado", duracion=0.1)
    buscador = await remote_agent(server.url, risk=Risk.READ, name="buscador")
    final = await drive(tmp_path / "runs.db", "ocupado", buscador)
    assert final.output == ANSWER
    assert sent_by(server, "ocupado") == 1
    assert server.peticiones("GetTask") >= 4  # 429, 503, 503, then the task


@pytest.mark.parametrize("modo", ["rechaza-envio", "cae-al-contestar"])
async def test_a_send_answered_429_or_503_is_resumed_by_asking_the_context_and_arrives_once(
    tmp_path, arranca, modo
):
    server = arranca(modo=modo, duracion=0.1)
    buscador = await remote_agent(server.url, risk=Risk.READ, name="buscador")
    with pytest.raises(RemoteUnavailable) as error:
        await drive(tmp_path / "runs.db", modo, buscador)
    status = 429 if modo == "rechaza-envio" else 503
    assert str(error.value) == (
        f"{where(server, modo, '000000-tool')}: SendMessage answered HTTP {status}; the attempt "
        "is journaled: run the same run_id again, and the server is asked for the task "
        "holding this message before anything is sent"
    )
    assert (await drive(tmp_path / "runs.db", modo, buscador)).output == ANSWER
    # 429: it never read the message, so the resume finds no task (in its context, then among
    # every task, each showing the message that created it) and sends it, once; 503 after
    # creating the task: the resume finds it in its context and sends nothing
    assert sent_by(server, modo) == 1
    assert server.peticiones("ListTasks") == (2 if modo == "rechaza-envio" else 1)
    assert server.peticiones("SendMessage") == (2 if modo == "rechaza-envio" else 1)


async def test_a_server_that_always_says_not_now_stops_at_max_wait_naming_its_answer(
    tmp_path, arranca
):
    server = arranca(modo="saturado", duracion=0.1)
    error = await twice_refused(tmp_path, server, "saturado", RemoteTaskTimeout, max_wait=0.3)
    assert "(its last answer: GetTask answered HTTP 503)" in str(error)
    assert sent_by(server, "saturado") == 1


async def test_a_server_that_trickles_its_answer_stops_at_timeout_not_at_each_read(
    tmp_path, arranca
):
    server = arranca(modo="gotea", duracion=0.1)
    error = await twice_refused(tmp_path, server, "gotea", RemoteUnavailable, timeout=0.5)
    assert str(error) == (
        f"{where(server, 'gotea')}: GetTask could not reach it (no whole answer in "
        "timeout=0.5 s); nothing was sent again: fix the server and run the same run_id again"
    )
    assert sent_by(server, "gotea") == 1


async def test_a_server_that_answers_another_task_is_a_protocol_error(tmp_path, arranca):
    server = arranca(modo="otra-tarea", duracion=0.1)
    error = await twice_refused(tmp_path, server, "otra", RemoteProtocolError)
    task_id = (await load_events(hijo.journal(tmp_path / "runs.db"), "otra/000001-delegate"))[
        2
    ].call.arguments["id"]
    assert str(error).startswith(f"{where(server, 'otra')}: GetTask was answered with task '")
    assert str(error).endswith(
        f"' when {task_id!r} was asked for; nothing was sent again: fix the server and run "
        "the same run_id again"
    )
    assert sent_by(server, "otra") == 1


@pytest.mark.parametrize(
    ("modo", "waits_for"), [("pregunta", "input"), ("autoriza", "authorization")]
)
async def test_a_task_that_asks_a_question_is_a_result_the_parent_model_reads(
    tmp_path, arranca, modo, waits_for
):
    server = arranca(modo=modo, duracion=0.1)
    buscador = await remote_agent(server.url, risk=Risk.READ, name="buscador")
    final = await drive(tmp_path / "runs.db", modo, buscador)
    state = "TASK_STATE_INPUT_REQUIRED" if modo == "pregunta" else "TASK_STATE_AUTH_REQUIRED"
    assert final.output.startswith("Viaje listo. the sub-agent ended without an answer: the ")
    assert final.output.endswith(
        f" stopped in {state}: it waits for {waits_for} this client cannot give: "
        "¿Qué viernes, exactamente?"
    )
    again = await drive(tmp_path / "runs.db", modo, buscador)  # a closed run, replayed
    assert again.output == final.output
    assert sent_by(server, modo) == 1


async def test_an_answer_to_another_json_rpc_request_is_a_protocol_error(tmp_path, arranca):
    server = arranca(modo="otro-id", duracion=0.1)
    error = await twice_refused(tmp_path, server, "otro-id", RemoteProtocolError)
    assert str(error) == (  # the second pass asks GetTask first: its request 1
        f"{where(server, 'otro-id')}: GetTask was answered with the answer to request 999, "
        "not 1; nothing was sent again: fix the server and run the same run_id again"
    )
    assert sent_by(server, "otro-id") == 1


async def test_a_huge_answer_is_refused_not_read_into_the_journal(tmp_path, arranca):
    server = arranca(modo="enorme", duracion=0.1)
    error = await twice_refused(tmp_path, server, "enorme", RemoteProtocolError)
    assert str(error) == (
        f"{where(server, 'enorme')}: GetTask was answered with an answer larger than 4194304 "
        "bytes; nothing was sent again: fix the server and run the same run_id again"
    )
    assert sent_by(server, "enorme") == 1


@pytest.mark.parametrize(
    ("modo", "why"),
    [
        ("latin1", "not UTF-8 (byte 0xf1 at "),
        ("nan", "NaN is not JSON"),
        ("anidada", "JSON nested too deep to read"),
    ],
)
async def test_an_answer_that_is_not_utf8_or_not_strict_json_is_a_protocol_error(
    tmp_path, arranca, modo, why
):
    server = arranca(modo=modo, duracion=0.1)
    error = await twice_refused(tmp_path, server, modo, RemoteProtocolError)
    assert str(error).startswith(
        f"{where(server, modo)}: GetTask was answered with HTTP 200 with a body that is not "
        f"JSON-RPC ({why}"
    )
    assert str(error).endswith(
        "; nothing was sent again: fix the server and run the same run_id again"
    )
    assert sent_by(server, modo) == 1


async def test_a_card_that_redirects_is_not_followed_and_names_where_it_points(arranca):
    server = arranca(modo="redirige")
    with pytest.raises(RemoteProtocolError) as error:
        await remote_agent(server.url, risk=Risk.READ, name="buscador")
    assert str(error.value) == (
        f"remote agent 'buscador' at {server.url}/.well-known/agent-card.json: its card "
        f"answered HTTP 302, a redirect to '{server.url}/otra/.well-known/agent-card.json', "
        "which is not followed; nothing was sent. If you trust where it points, call "
        "remote_agent with that URL"
    )
    assert server.mensajes() == []


async def test_a_card_that_sends_requests_to_another_origin_is_refused_until_it_is_allowed(
    tmp_path, arranca
):
    elsewhere = arranca(duracion=0.1)
    server = arranca(interfaz=f"{elsewhere.url}/a2a")
    with pytest.raises(RemoteProtocolError) as error:
        await remote_agent(server.url, risk=Risk.READ, name="buscador")
    assert str(error.value) == (
        f"remote agent 'buscador' at {server.url}/.well-known/agent-card.json: its card sends "
        f"requests to {elsewhere.url}/a2a, on another origin than the card's; nothing was "
        f"sent. If you trust it, pass remote_agent(..., allow_origins=['{elsewhere.url}'])"
    )
    assert (server.mensajes(), elsewhere.mensajes()) == ([], [])
    allowed = await remote_agent(
        server.url, risk=Risk.READ, name="buscador", allow_origins=[elsewhere.url]
    )
    assert (await drive(tmp_path / "runs.db", "otro", allowed)).output == ANSWER
    assert (sent_by(server, "otro"), sent_by(elsewhere, "otro")) == (0, 1)
