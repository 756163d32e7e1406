"""The A2A client against a server built with the protocol's reference SDK (a2a-sdk), in its
own process: the same journal, the same re-attachment, and the message received once. A server
that is not ours cannot share our reading of the specification."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import _hijo_19 as hijo
import pytest

from synaptum_lite import FinalStep, Risk, Session, load_events
from synaptum_lite.integrations.a2a import remote_agent
from tests.bounds import HANG

REPO = Path(__file__).resolve().parents[2]
ANSWER = "Recomiendo el TP1947, según un servidor del SDK de referencia."


@pytest.fixture
def reference_server():
    """The SDK's server on a free port, its tasks held until `release()`; what it printed (one
    line per message) at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.a2a.sdk_server", "0", "held"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    ready = process.stdout.readline()
    assert ready.startswith("listening on "), ready
    received: list[str] = []

    class Server:
        url = ready.split()[-1]

        @staticmethod
        def release() -> None:
            """Every task, held working until now, may end."""
            with urllib.request.urlopen(f"{Server.url}/release", timeout=HANG) as answer:
                assert json.load(answer) == {"released": True}

        @staticmethod
        def stop() -> list[str]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            rest, _ = process.communicate(timeout=HANG)
            received.extend(
                line.split()[1] for line in rest.splitlines() if line.startswith("received")
            )
            return received

    yield Server
    Server.stop()


async def drive(almacen, run_id, buscador):
    session = Session(run_id, hijo.puerta(), hijo.journal(almacen))
    async for step in hijo.agencia(buscador).run(hijo.TAREA, session=session):
        if isinstance(step, FinalStep):
            return step
    return None


async def test_the_reference_servers_card_is_read_and_a_delegation_to_it_is_journaled(
    tmp_path, reference_server
):
    buscador = await remote_agent(reference_server.url, risk=Risk.READ, name="buscador")
    assert buscador.card == {
        "name": "Buscador de referencia",
        "version": "1.0.0",
        "skills": ["buscar-vuelos"],
    }
    driving = asyncio.create_task(drive(tmp_path / "runs.db", "referencia", buscador))
    sub = "referencia/000001-delegate"
    while not any(  # the task id journaled, and its wait begun: the task may end now
        getattr(e, "call", None) and e.call.name == "GetTask"
        for e in await load_events(hijo.journal(tmp_path / "runs.db"), sub)
    ):
        assert not driving.done(), driving.result()
        await asyncio.sleep(0.01)
    reference_server.release()
    final = await driving
    assert final.output == f"Viaje listo. {ANSWER}"
    events = await load_events(hijo.journal(tmp_path / "runs.db"), "referencia/000001-delegate")
    accepted = json.loads(events[1].result.content)
    assert accepted["contextId"] == "referencia/000001-delegate"  # our context id, kept
    assert accepted["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")  # not ended
    assert reference_server.stop() == ["referencia/000001-delegate/000000-tool"]


@pytest.mark.posix_signals
async def test_the_reference_server_receives_the_message_once_across_real_kills(
    tmp_path, reference_server
):
    url = reference_server.url
    # killed while the task works: the resume asks GetTask
    almacen = tmp_path / "esperando.db"
    child = await hijo.lanzar(almacen, "esperando", url, tmp_path / "m1.txt")
    # the task is held working: the child cannot end before it is seen waiting
    waiting = await hijo.esperando(almacen, "esperando/000001-delegate", child)
    assert waiting, (await child.stderr.read()).decode()
    child.kill()
    await child.wait()
    assert child.returncode == -signal.SIGKILL
    buscador = await remote_agent(url, risk=Risk.READ, name="buscador")
    reference_server.release()
    assert (await drive(almacen, "esperando", buscador)).output == f"Viaje listo. {ANSWER}"
    # killed after the send, before the task id is journaled: the resume finds it by context
    almacen = tmp_path / "al-enviar.db"
    child = await hijo.lanzar(almacen, "al-enviar", url, tmp_path / "m2.txt", "--muere-al-enviar")
    await child.wait()
    assert child.returncode == -signal.SIGKILL
    assert (await drive(almacen, "al-enviar", buscador)).output == f"Viaje listo. {ANSWER}"
    sent = (await load_events(hijo.journal(almacen), "al-enviar/000001-delegate"))[1]
    assert json.loads(sent.result.content)["found"] == "ListTasks"
    assert sorted(reference_server.stop()) == [
        "al-enviar/000001-delegate/000000-tool",
        "esperando/000001-delegate/000000-tool",
    ]
