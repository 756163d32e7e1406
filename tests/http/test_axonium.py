"""The Axonium adapter, driven through the real `axonium` SDK against the local fault server.

There is no Axonium platform to reach from here: these tests run the SDK's own client, auth
and response types against a server that answers in the platform's documented wire format.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("axonium", reason="the Axonium adapter needs the `axonium` extra")

from synaptum_lite import (  # noqa: E402
    Agent,
    ModelResponse,
    ProviderError,
    RetryPolicy,
    Session,
    SqliteCheckpointer,
    ToolCall,
    Usage,
)
from synaptum_lite.axonium import AxoniumGateway  # noqa: E402
from synaptum_lite.errors import ConfigurationError  # noqa: E402

from . import conftest  # noqa: E402
from .fault_server import Exchange, FaultServer  # noqa: E402
from .test_http_gateway import RUNS, consultar_saldo, request  # noqa: E402

CLIENT_ID = "cliente-demo"
SECRET = "axo-secret-4b7e0c2a91d35f68"


def token() -> str:
    """A JWT-shaped token (the SDK reads its claims; nobody checks the signature here)."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    claims = {"sub": CLIENT_ID, "exp": int(time.time()) + 300, "scope": "inference:read"}
    return f"{part({'alg': 'none'})}.{part(claims)}.firma"


async def send_token(ex: Exchange) -> None:
    body = {"access_token": token(), "token_type": "Bearer", "expires_in": 300}
    await ex.send_json(200, body)


async def axo_teller(ex: Exchange) -> None:
    if ex.path.endswith("/oauth2/token"):
        await send_token(ex)
    else:
        await conftest.teller(ex)


async def axo_rate_limited(ex: Exchange) -> None:
    if ex.path.endswith("/oauth2/token"):
        return await send_token(ex)
    problem = {
        "type": "https://errors.prometheus.example/rate-limit-exceeded-requests",
        "title": "Rate limit exceeded",
        "status": 429,
        "detail": "The request budget for this minute is spent.",
    }
    await ex.send_json(
        429, problem, {"Retry-After": "5", "Content-Type": "application/problem+json"}
    )


async def axo_bad_client(ex: Exchange) -> None:
    """Refuses the credentials, echoing the form it was sent, as careless servers do."""
    body = {"error": "invalid_client", "error_description": f"unknown client: {ex.body}"}
    await ex.send_json(401, body)


async def axo_stream_cut(ex: Exchange) -> None:
    if ex.path.endswith("/oauth2/token"):
        return await send_token(ex)
    await ex.start_sse()
    await ex.send_event(conftest.chunk({"content": "El saldo "}))
    await ex.send_event({"error": {"message": "backend connection lost"}})
    await ex.end_sse()


@pytest.fixture
def axo(server: FaultServer) -> FaultServer:
    for scenario in (axo_teller, axo_rate_limited, axo_bad_client, axo_stream_cut):
        server.scenarios[scenario.__name__] = scenario
    return server


def gateway(server: FaultServer, scenario: str) -> AxoniumGateway:
    base = server.url(scenario).removesuffix("/v1")
    return AxoniumGateway(client_id=CLIENT_ID, client_secret=SECRET, gateway_base_url=base)


def failure(server: FaultServer, scenario: str, *, streaming: bool = False) -> ProviderError:
    async def call() -> None:
        model = gateway(server, scenario)
        if streaming:
            [item async for item in model.stream(request())]
        else:
            await model.complete(request())

    with pytest.raises(ProviderError) as caught:
        asyncio.run(call())
    return caught.value


def test_a_completion_through_the_sdk_becomes_tool_calls_and_usage(axo: FaultServer) -> None:
    response = asyncio.run(gateway(axo, "axo_teller").complete(request()))

    call = ToolCall("call_a", "consultar_saldo", {"cuenta": "ES91 2100 0418 45"})
    assert response == ModelResponse(tool_calls=(call,), usage=Usage(31, 12))
    minted, chat = [r for r in axo.requests if r.scenario == "axo_teller"][-2:]
    assert minted.path.endswith("/oauth2/token") and "client_credentials" in minted.body
    scheme, _, minted_token = chat.headers["authorization"].partition(" ")
    assert scheme == "Bearer" and minted_token.count(".") == 2 and SECRET not in minted_token
    assert chat.body["tools"][0]["function"]["name"] == "consultar_saldo"


def test_a_stream_through_the_sdk_yields_fragments_then_one_response(
    axo: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    agent = Agent("cajero", model="modelo-x", instructions="Cajero.", tools=[consultar_saldo])
    model = gateway(axo, "axo_teller")
    session = Session("run-axo", model, SqliteCheckpointer(tmp_path / "runs.db"))

    async def drive() -> list[Any]:
        return [s async for s in agent.stream("¿Saldo de ES91?", session=session)]

    events = asyncio.run(drive())
    fragments = [e.text for e in events if type(e).__name__ == "TextFragment"]

    assert fragments == ["El saldo ", "es de ", "4.200,00 €."]
    assert events[-1].text == "El saldo es de 4.200,00 €."
    assert model.model_calls == 2 and RUNS["consultar_saldo"] == 1


def test_a_rate_limit_keeps_the_sdks_verdict_and_is_retried_by_the_loop_only(
    axo: FaultServer,
) -> None:
    error = failure(axo, "axo_rate_limited")

    assert (error.retryable, error.status, error.retry_after) == (True, 429, 5.0)
    chats = [r for r in axo.requests if r.scenario == "axo_rate_limited" and "chat" in r.path]
    assert len(chats) == 1  # the SDK did not retry behind the loop's back


def test_refused_credentials_are_not_retryable_and_never_show_the_secret(
    axo: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    error = failure(axo, "axo_bad_client")

    assert not error.retryable
    assert "AXONIUM_CLIENT_SECRET" in str(error)
    shown = "".join(traceback.format_exception(error)) + repr(error.args) + caplog.text
    assert SECRET not in shown and SECRET not in repr(gateway(axo, "axo_bad_client"))


def test_a_stream_cut_mid_way_is_retryable(axo: FaultServer) -> None:
    error = failure(axo, "axo_stream_cut", streaming=True)

    assert error.retryable and "backend connection lost" in str(error)


def test_the_loop_honours_the_sdks_retry_after(axo: FaultServer, tmp_path: Path) -> None:
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    agent = Agent("cajero", model="modelo-x", instructions="Cajero.", tools=[consultar_saldo])
    session = Session(
        "run-429",
        gateway(axo, "axo_rate_limited"),
        SqliteCheckpointer(tmp_path / "runs.db"),
        retry=RetryPolicy(max_attempts=2),
        sleep=record,
    )

    async def drive() -> None:
        async for _ in agent.run("¿Saldo?", session=session):
            pass

    with pytest.raises(ProviderError):
        asyncio.run(drive())
    assert slept == [5.0]


def test_missing_credentials_say_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AXONIUM_CLIENT_ID", "AXONIUM_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(ConfigurationError, match="AXONIUM_CLIENT_SECRET"):
        AxoniumGateway.from_env(environ={})


def test_without_the_sdk_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "axonium", None)

    with pytest.raises(ConfigurationError, match=r"pip install 'synaptum-lite\[axonium\]'"):
        AxoniumGateway(client_id=CLIENT_ID, client_secret=SECRET)
