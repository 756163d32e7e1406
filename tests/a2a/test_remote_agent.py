"""A remote agent over A2A: a real server process, real kills of the parent, and the count
of messages the server received. A resumed run asks for the task it already sent (by id, or
by its context when the id never reached the journal); it never sends the message again."""

from __future__ import annotations

import json
import signal

import _hijo_19 as hijo
import pytest

from synaptum_lite import (
    Agent,
    ConfigurationError,
    FinalStep,
    RemoteProtocolError,
    RemoteTaskLost,
    RemoteUnavailable,
    Risk,
    Session,
    load_events,
    run_usage,
)
from synaptum_lite.integrations.a2a import RemoteAgent, remote_agent
from synaptum_lite.tools import TOOL_NAME

ANSWER = "Viaje listo. Recomiendo el TP1947: sale a las 9:05 y cuesta 89 €."


def subrun(run_id: str) -> str:
    return f"{run_id}/000001-delegate"


async def drive(almacen, run_id, url):
    """Resume (or run) the parent in this process; its final step."""
    session = Session(run_id, hijo.puerta(), hijo.journal(almacen))
    final = None
    async for step in hijo.agencia(await hijo.remoto(url)).run(hijo.TAREA, session=session):
        if isinstance(step, FinalStep):
            final = step
    return final


def sent_by(server, run_id):
    """How many messages of run `run_id` the server received."""
    return sum(1 for m in server.mensajes() if m.startswith(f"{run_id}/"))


async def kill_while_waiting(tmp_path, run_id, server):
    """A child drives the parent; it is SIGKILLed once its sub-run waits on GetTask.

    `server` holds its task working until the test lets it go (`retenida`), so the child
    cannot finish before it is seen waiting, however slow the machine: the test waits on
    events (the journal's GetTask attempt), never on a task's duration."""
    almacen = tmp_path / "runs.db"
    child = await hijo.lanzar(almacen, run_id, server.url, tmp_path / "modelo.txt")
    waiting = await hijo.esperando(almacen, subrun(run_id), child)
    assert waiting, (await child.stderr.read()).decode()  # the child is still there
    child.kill()
    await child.wait()
    assert child.returncode == -signal.SIGKILL
    return almacen


async def test_a_delegation_to_a_remote_agent_journals_the_task_id_before_it_waits(
    tmp_path, arranca
):
    server = arranca(duracion=0.2)
    almacen = tmp_path / "runs.db"
    final = await drive(almacen, "entero", server.url)
    assert final.output == ANSWER
    assert sent_by(server, "entero") == 1
    events = await load_events(hijo.journal(almacen), subrun("entero"))
    story = [
        (e.step_id, e.phase.value, getattr(getattr(e, "call", None), "name", None)) for e in events
    ]
    assert story == [
        ("000000-tool", "attempted", "SendMessage"),
        ("000000-tool", "completed", "SendMessage"),
        ("000001-tool", "attempted", "GetTask"),
        ("000001-tool", "completed", "GetTask"),
        ("000002-final", "completed", None),
    ]
    accepted = json.loads(events[1].result.content)
    assert accepted["state"] == "TASK_STATE_WORKING"
    assert events[2].call.arguments == {"id": accepted["taskId"]}


async def test_remote_usage_the_server_does_not_report_is_unmeasured_not_zero(tmp_path, arranca):
    server = arranca(duracion=0.1)
    almacen = tmp_path / "runs.db"
    final = await drive(almacen, "consumo", server.url)
    usage = await run_usage(hijo.journal(almacen), "consumo")
    assert usage.own.input_tokens is not None and usage.own.input_tokens > 0
    assert (usage.delegated.input_tokens, usage.delegated.output_tokens) == (None, None)
    assert (usage.total.input_tokens, usage.total.output_tokens) == (None, None)
    assert final.usage == usage.total


@pytest.mark.posix_signals
async def test_a_parent_killed_while_the_remote_task_works_resumes_by_asking_for_the_task(
    tmp_path, serve
):
    # before: a task that ended 1.5 s after it was sent, a race with the watcher; on a busy
    # machine the child finished first and the kill raised ProcessLookupError
    server = serve("retenida")
    almacen = await kill_while_waiting(tmp_path, "esperando", server)
    assert sent_by(server, "esperando") == 1
    accepted = (await load_events(hijo.journal(almacen), subrun("esperando")))[1]
    assert server.estado_de(json.loads(accepted.result.content)["taskId"]) == "TASK_STATE_WORKING"
    server.suelta()  # the remote task may end now
    final = await drive(almacen, "esperando", server.url)
    assert final.output == "Viaje listo. Recomiendo el TP1947."
    assert sent_by(server, "esperando") == 1
    calls = [
        e.call.name
        for e in await load_events(hijo.journal(almacen), subrun("esperando"))
        if e.phase.value == "attempted"
    ]
    assert calls == ["SendMessage", "GetTask", "GetTask"]  # the wait, asked again


@pytest.mark.posix_signals
async def test_a_parent_killed_before_the_sent_task_id_is_journaled_finds_it_by_context(
    tmp_path, arranca
):
    server = arranca(duracion=0.5)
    almacen = tmp_path / "runs.db"
    child = await hijo.lanzar(
        almacen, "al-enviar", server.url, tmp_path / "m.txt", "--muere-al-enviar"
    )
    await child.wait()
    assert child.returncode == -signal.SIGKILL, (await child.stderr.read()).decode()
    before = await load_events(hijo.journal(almacen), subrun("al-enviar"))
    assert [(e.step_id, e.phase.value) for e in before] == [("000000-tool", "attempted")]
    assert sent_by(server, "al-enviar") == 1
    final = await drive(almacen, "al-enviar", server.url)
    assert final.output == ANSWER
    assert sent_by(server, "al-enviar") == 1
    sent = (await load_events(hijo.journal(almacen), subrun("al-enviar")))[1]
    assert json.loads(sent.result.content)["found"] == "ListTasks"


@pytest.mark.posix_signals
async def test_a_parent_killed_after_each_of_its_events_sends_the_remote_message_once(
    tmp_path, arranca
):
    server = arranca(duracion=0.3)
    reference = await drive(tmp_path / "entero.db", "entero", server.url)
    parent_events = len(await load_events(hijo.journal(tmp_path / "entero.db"), "entero"))
    assert parent_events == 7
    counts = {}
    for n in range(1, parent_events + 1):
        place = tmp_path / f"tras-{n}"
        place.mkdir()
        run_id = f"tras-{n}"
        child = await hijo.lanzar(
            place / "runs.db", run_id, server.url, place / "modelo.txt", "--muere-tras", str(n)
        )
        await child.wait()
        assert child.returncode == -signal.SIGKILL, (await child.stderr.read()).decode()
        hijo.MODELO = place / "modelo.txt"
        try:
            final = await drive(place / "runs.db", run_id, server.url)
        finally:
            hijo.MODELO = None
        assert final.output == reference.output
        counts[n] = (sent_by(server, run_id), hijo.llamadas_al_modelo(place / "modelo.txt"))
    # the message at most once, and each model turn paid once between the two processes
    assert counts == {n: (1, 2) for n in range(1, 8)}


async def test_a_server_that_is_down_is_a_clear_error_before_anything_is_sent(arranca):
    server = arranca()
    url = server.url
    server.para()
    with pytest.raises(RemoteUnavailable) as error:
        await remote_agent(url, risk=Risk.READ, name="buscador")
    assert str(error.value) == (
        f"remote agent 'buscador' at {url}/.well-known/agent-card.json: its card could not be "
        "fetched (ConnectError: All connection attempts failed); nothing was sent. Start the "
        "server or fix the URL, then try again"
    )


@pytest.mark.posix_signals
async def test_a_server_down_while_the_task_works_is_a_clear_error_and_nothing_is_resent(
    tmp_path, serve
):
    server = serve("retenida")
    almacen = await kill_while_waiting(tmp_path, "caido", server)
    buscador = await hijo.remoto(server.url)
    assert sent_by(server, "caido") == 1
    server.para()
    session = Session("caido", hijo.puerta(), hijo.journal(almacen))
    with pytest.raises(RemoteUnavailable) as error:
        async for _ in hijo.agencia(buscador).run(hijo.TAREA, session=session):
            pass
    assert str(error.value) == (
        f"run 'caido/000001-delegate', step 000001-tool: remote agent 'buscador' at "
        f"{server.url}/a2a: GetTask could not reach it (ConnectError: All connection attempts "
        "failed); nothing was sent again: fix the server and run the same run_id again"
    )
    attempted = [
        e.call.name
        for e in await load_events(hijo.journal(almacen), subrun("caido"))
        if e.phase.value == "attempted"
    ]
    assert attempted.count("SendMessage") == 1


@pytest.mark.posix_signals
async def test_a_server_that_lost_the_task_is_a_clear_error_and_the_message_is_not_sent_again(
    tmp_path, arranca, serve
):
    server = serve("retenida")  # the same card as notebook 19's server
    almacen = await kill_while_waiting(tmp_path, "perdida", server)
    task_id = json.loads(
        (await load_events(hijo.journal(almacen), subrun("perdida")))[1].result.content
    )["taskId"]
    server.para()  # its tasks lived in its memory
    restarted = arranca(duracion=1.5, puerto=server.puerto)
    with pytest.raises(RemoteTaskLost) as error:
        await drive(almacen, "perdida", restarted.url)
    assert error.value.task_id == task_id
    assert str(error.value) == (
        f"run 'perdida/000001-delegate', step 000001-tool: remote agent 'buscador' at "
        f"{restarted.url}/a2a: it no longer knows task {task_id!r}, which it accepted and the "
        "journal keeps (TaskNotFoundError); the message was not sent again. Find out whether "
        "the work was done, then record its answer with "
        "Session('perdida/000001-delegate', ...).record_result('000001-tool', answer, by=...), "
        "or start a new run_id to send the task anew"
    )
    assert restarted.mensajes() == []
    # what the error says to do works, and still sends nothing
    sub = Session(subrun("perdida"), hijo.puerta(), hijo.journal(almacen))
    await sub.record_result("000001-tool", "El TP1947, según el registro.", by="operadora")
    final = await drive(almacen, "perdida", restarted.url)
    assert final.output == "Viaje listo. El TP1947, según el registro."
    assert restarted.mensajes() == []


async def test_a_server_that_answers_garbage_is_a_clear_error_and_a_second_pass_sends_nothing(
    tmp_path, arranca
):
    server = arranca(modo="basura")
    almacen = tmp_path / "runs.db"
    for _pass in range(2):
        with pytest.raises(RemoteProtocolError) as error:
            await drive(almacen, "basura", server.url)
    assert sent_by(server, "basura") == 1
    assert str(error.value) == (
        f"run 'basura/000001-delegate', step 000000-tool: remote agent 'buscador' at "
        f"{server.url}/a2a: ListTasks was answered with HTTP 200 with a body that is not "
        "JSON-RPC: '<html><body>Servicio en mantenimiento</body></html>'; nothing was sent "
        "again: fix the server and run the same run_id again"
    )


async def test_a_send_answered_with_neither_task_nor_message_is_a_clear_error(tmp_path, arranca):
    server = arranca(modo="incompleta")
    with pytest.raises(RemoteProtocolError) as error:
        await drive(tmp_path / "runs.db", "incompleta", server.url)
    assert str(error.value) == (
        f"run 'incompleta/000001-delegate', step 000000-tool: remote agent 'buscador' at "
        f"{server.url}/a2a: SendMessage was answered with a result with neither task nor "
        "message: {'estado': 'recibido'}; the attempt is journaled: run the same run_id "
        "again, and the server is asked for the task holding this message before anything is "
        "sent"
    )
    assert sent_by(server, "incompleta") == 1


def test_a_remote_agent_without_a_declared_risk_is_refused_naming_why():
    card = {
        "name": "Buscador de vuelos",
        "description": "Busca vuelos.",
        "supportedInterfaces": [
            {
                "url": "http://127.0.0.1:1/a2a",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
        ],
    }
    with pytest.raises(ConfigurationError) as error:
        RemoteAgent(card, card_url="http://127.0.0.1:1/.well-known/agent-card.json", risk="read")
    assert "An agent card declares skills, not risk" in str(error.value)
    card_url = "http://127.0.0.1:1/.well-known/agent-card.json"
    assert RemoteAgent(card, card_url=card_url, risk=Risk.HARD_WRITE).risk is Risk.HARD_WRITE


def test_a_card_without_a_jsonrpc_interface_of_a2a_1_is_refused_naming_what_it_offers():
    card = {
        "name": "Viejo",
        "description": "Habla A2A 0.3.",
        "supportedInterfaces": [
            {"url": "http://127.0.0.1:1/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
        ],
    }
    with pytest.raises(RemoteProtocolError) as error:
        RemoteAgent(card, card_url="http://127.0.0.1:1/card", risk=Risk.READ)
    assert str(error.value) == (
        "remote agent 'Viejo' at http://127.0.0.1:1/card: its card offers no JSON-RPC "
        "interface of A2A 1.x (it offers: JSONRPC 0.3); this client speaks A2A 1.0 over JSON-RPC"
    )


async def test_the_declared_risk_reaches_the_policy_which_can_stop_the_delegation_before_sending(
    tmp_path, arranca
):
    from synaptum_lite import ApprovalStep, Verdict
    from synaptum_lite.testing import ScriptedGateway

    seen = []

    def policy(proposal):
        if proposal.kind == "delegate":
            seen.append(proposal.risk)
            if proposal.risk >= Risk.HARD_WRITE:
                return Verdict.require_approval("a remote agent that writes")
        return Verdict.allow()

    server = arranca(duracion=0.1)
    buscador = await remote_agent(server.url, risk=Risk.HARD_WRITE, name="buscador")
    session = Session(
        "aprobar",
        ScriptedGateway([hijo.responder] * 4, policy=policy),
        hijo.journal(tmp_path / "r.db"),
    )
    steps = [step async for step in hijo.agencia(buscador).run(hijo.TAREA, session=session)]
    assert isinstance(steps[-1], ApprovalStep) and steps[-1].pending
    assert seen == [Risk.HARD_WRITE]
    assert server.mensajes() == []


async def test_a_remote_task_that_fails_is_a_result_the_parent_model_reads_not_an_exception(
    tmp_path, arranca
):
    server = arranca(duracion=0.1, modo="falla")
    almacen = tmp_path / "runs.db"
    final = await drive(almacen, "falla", server.url)
    events = await load_events(hijo.journal(almacen), "falla")
    delegation = next(e for e in events if e.kind == "delegate" and e.phase.value == "completed")
    assert delegation.result.is_error
    assert delegation.result.content.startswith("the sub-agent ended without an answer: the remote")
    assert delegation.result.content.endswith("ended in TASK_STATE_FAILED: No hay vuelos ese día.")
    assert final.output == f"Viaje listo. {delegation.result.content}"
    assert sent_by(server, "falla") == 1


@pytest.mark.posix_signals
async def test_a_send_cut_before_its_id_on_a_server_that_cannot_list_tasks_is_an_uncertain_effect(
    tmp_path, arranca
):
    from synaptum_lite import UncertainEffect

    server = arranca(duracion=0.2, modo="sin-lista")
    almacen = tmp_path / "runs.db"
    child = await hijo.lanzar(
        almacen, "sin-lista", server.url, tmp_path / "m.txt", "--muere-al-enviar"
    )
    await child.wait()
    assert child.returncode == -signal.SIGKILL
    for _pass in range(2):  # asked twice, sent never again
        with pytest.raises(UncertainEffect) as error:
            await drive(almacen, "sin-lista", server.url)
    assert (error.value.run_id, error.value.step_id, error.value.tool) == (
        "sin-lista/000001-delegate",
        "000000-tool",
        "SendMessage",
    )
    assert sent_by(server, "sin-lista") == 1
    # a person who knows the message never arrived allows one more attempt: sent once more
    sub = Session("sin-lista/000001-delegate", hijo.puerta(), hijo.journal(almacen))
    await sub.allow_retry("000000-tool", by="operadora")
    assert (await drive(almacen, "sin-lista", server.url)).output == ANSWER
    assert sent_by(server, "sin-lista") == 2


@pytest.mark.posix_signals
async def test_an_uncertain_send_resolved_with_the_known_answer_sends_nothing_more(
    tmp_path, arranca
):
    from synaptum_lite import UncertainEffect

    server = arranca(duracion=0.2, modo="sin-lista")
    almacen = tmp_path / "runs.db"
    child = await hijo.lanzar(
        almacen, "sabida", server.url, tmp_path / "m.txt", "--muere-al-enviar"
    )
    await child.wait()
    with pytest.raises(UncertainEffect):
        await drive(almacen, "sabida", server.url)
    sub = Session("sabida/000001-delegate", hijo.puerta(), hijo.journal(almacen))
    await sub.record_result("000000-tool", "El TP1947, según el registro.", by="operadora")
    final = await drive(almacen, "sabida", server.url)
    assert final.output == "Viaje listo. El TP1947, según el registro."
    assert sent_by(server, "sabida") == 1


def test_a_remote_agent_named_by_a_long_card_is_a_delegate_a_model_api_takes():
    long_name = "Buscador de vuelos baratos para viajes de empresa " * 3  # 150 characters
    card = {
        "name": long_name,
        "description": "Busca vuelos.",
        "supportedInterfaces": [
            {
                "url": "http://127.0.0.1:1/a2a",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
        ],
    }
    remote = RemoteAgent(card, card_url="http://127.0.0.1:1/card", risk=Risk.READ)
    assert TOOL_NAME.fullmatch(remote.name), remote.name
    assert remote.name.startswith("buscador_de_vuelos_baratos")
    parent = Agent("organizador", model="m", instructions="Organiza.", delegates=[remote])
    assert list(parent.delegates) == [remote.name]
