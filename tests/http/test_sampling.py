"""Sampling parameters on the wire: the HTTP gateway sends an agent's temperature, top_p and
seed in every request's body (to a local server that records each body), and sends none of
them for an agent without sampling; a recording made without them is stale for an agent with
them, and says where."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from scripts import grabaciones  # noqa: E402
from synaptum_lite import (  # noqa: E402
    Agent,
    FinalStep,
    ModelRequest,
    Sampling,
    Session,
    SqliteCheckpointer,
)
from synaptum_lite.gateways.http import OpenAICompatibleGateway  # noqa: E402
from synaptum_lite.gateways.replay import RecordingMismatch, ReplayGateway  # noqa: E402

from .conftest import KEY  # noqa: E402
from .fault_server import FaultServer  # noqa: E402
from .test_http_gateway import consultar_saldo  # noqa: E402

SAMPLED = ("temperature", "top_p", "seed")


def bodies_of_a_run(
    server: FaultServer, tmp_path: Path, sampling: Sampling | None, *, streaming: bool
) -> list[dict[str, object]]:
    """The body of each request one whole run of the cashier sent to the `teller` scenario."""
    agent = Agent(
        "cajero",
        model="modelo-x",
        instructions="Consultas saldos con la herramienta. Responde en una frase.",
        tools=[consultar_saldo],
        sampling=sampling,
    )
    gateway = OpenAICompatibleGateway(server.url("teller"), api_key=KEY)
    session = Session("r", gateway, SqliteCheckpointer(tmp_path / "runs.db"))
    before = len(server.requests)

    async def drive() -> object:
        steps = agent.stream if streaming else agent.run
        async for step in steps("¿Cuánto hay en ES91?", session=session):
            last = step
        return last

    assert isinstance(asyncio.run(drive()), FinalStep)
    return [r.body for r in server.requests[before:]]


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
def test_every_request_of_a_run_carries_the_agents_sampling(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    sampling = Sampling(temperature=0.3, top_p=0.9, seed=42)
    bodies = bodies_of_a_run(server, tmp_path, sampling, streaming=streaming)
    assert len(bodies) == 2  # the tool call, then the answer
    for body in bodies:
        assert {k: body[k] for k in SAMPLED} == {"temperature": 0.3, "top_p": 0.9, "seed": 42}


def test_only_the_parameters_given_are_sent(server: FaultServer, tmp_path: Path) -> None:
    (first, *_) = bodies_of_a_run(server, tmp_path, Sampling(seed=7), streaming=False)
    assert first["seed"] == 7 and "temperature" not in first and "top_p" not in first


def test_an_agent_without_sampling_sends_none_of_them(server: FaultServer, tmp_path: Path) -> None:
    for body in bodies_of_a_run(server, tmp_path, None, streaming=False):
        assert not set(SAMPLED) & set(body)


def test_a_recording_made_without_sampling_is_stale_for_a_request_with_it() -> None:
    texto = grabaciones.TEXTO
    sampled = ModelRequest(texto.model, texto.messages, texto.tools, Sampling(temperature=0.3))
    gateway = ReplayGateway(grabaciones.FOLDER / "texto.jsonl")
    with pytest.raises(RecordingMismatch) as caught:
        asyncio.run(gateway.complete(sampled))
    assert (caught.value.index, caught.value.where) == (0, "$.temperature")
    assert repr(caught.value.recorded) == "<absent>" and caught.value.sent == 0.3
    assert "at $.temperature: recorded nothing, sent 0.3" in str(caught.value)
