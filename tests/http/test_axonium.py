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
from synaptum_lite.errors import ConfigurationError  # noqa: E402
from synaptum_lite.gateways.axonium import AxoniumGateway  # noqa: E402

from . import conftest  # noqa: E402
from .fault_server import Exchange, FaultServer  # noqa: E402
from .test_hostile_server import SCENARIOS as HOSTILE  # noqa: E402
from .test_hostile_server import finished_then_drops  # noqa: E402
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


# ── a platform that misbehaves: nothing but ProviderError leaves the adapter ───────────────────


def behind_auth(scenario: Any) -> Any:
    """`scenario` for the chat endpoint, with the token endpoint answering as the platform does."""

    async def answer(ex: Exchange) -> None:
        if ex.path.endswith("/oauth2/token"):
            await send_token(ex)
        else:
            await scenario(ex)

    return answer


def axo_failure(server: FaultServer, name: str, scenario: Any, *, streaming: bool) -> ProviderError:
    server.scenarios[name] = behind_auth(scenario)
    error = failure(server, name, streaming=streaming)
    assert SECRET not in "".join(traceback.format_exception(error))
    return error


@pytest.mark.parametrize(
    ("fault", "retryable", "says"),
    [
        ("gzip_garbage", False, "a body the SDK cannot read (DecodingError"),
        ("promises_more", True, "failed in transit (RemoteProtocolError"),
        ("deep_event", False, "JSON nested too deeply the SDK cannot read"),
        ("stream_delta_text", False, "a body the SDK cannot read (ValidationError"),
        ("stream_name_number", False, "a tool-call piece whose name is not text"),
        ("stream_arguments_object", False, "a tool-call piece whose arguments is not text"),
        ("streams_html", False, "answered a streamed request with no server-sent events"),
        ("in_band_503", False, "answered a streamed request with no server-sent events"),
    ],
)
def test_a_stream_the_sdk_cannot_use_is_a_provider_error_that_says_why(
    server: FaultServer, fault: str, retryable: bool, says: str
) -> None:
    error = axo_failure(server, f"axo_s_{fault}", HOSTILE[fault], streaming=True)

    assert error.retryable is retryable
    assert says in str(error)


async def stream_stops_without_finishing(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(conftest.chunk({"content": "El saldo "}))
    await ex.end_sse()


def test_a_stream_that_ends_without_a_finish_reason_is_retryable_not_an_empty_answer(
    server: FaultServer,
) -> None:
    error = axo_failure(server, "axo_unfinished", stream_stops_without_finishing, streaming=True)

    assert error.retryable and "ended the stream before it was complete" in str(error)
    assert "running the agent again with the same run_id resumes the run" in str(error)


def test_a_retryable_refusal_says_what_to_do_next(axo: FaultServer) -> None:
    error = failure(axo, "axo_rate_limited")

    assert error.retryable
    assert "running the agent again with the same run_id resumes the run" in str(error)


@pytest.mark.parametrize(
    ("fault", "retryable", "says"),
    [
        ("message_null", False, "answered without choices[0].message"),
        ("in_band_503", True, "with an error inside a successful (HTTP 200) answer"),
        ("deep_body", False, "JSON nested too deeply the SDK cannot read"),
        ("deep_arguments", False, "tool call 0's arguments nested deeper than 100 levels"),
    ],
)
def test_a_completion_without_an_answer_is_a_provider_error_not_an_empty_answer(
    server: FaultServer, fault: str, retryable: bool, says: str
) -> None:
    error = axo_failure(server, f"axo_c_{fault}", HOSTILE[fault], streaming=False)

    assert error.retryable is retryable
    assert says in str(error)


def test_two_calls_with_one_id_get_an_id_each_and_bad_usage_stays_unmeasured(
    server: FaultServer,
) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ],
    }
    usage = {"prompt_tokens": -5, "completion_tokens": 10**30}

    async def twins(ex: Exchange) -> None:
        await ex.send_json(200, conftest.completion(message, usage=usage))

    server.scenarios["axo_twins"] = behind_auth(twins)
    response = asyncio.run(gateway(server, "axo_twins").complete(request()))

    assert [call.id for call in response.tool_calls] == ["a", "a_1"]
    assert response.usage == Usage(None, None, None)


def test_a_stream_that_drops_after_its_finish_reason_keeps_the_answer(server: FaultServer) -> None:
    server.scenarios["axo_finished_then_drops"] = behind_auth(finished_then_drops)

    async def collect() -> list[Any]:
        model = gateway(server, "axo_finished_then_drops")
        return [item async for item in model.stream(request())]

    items = asyncio.run(collect())

    assert items == [
        "El saldo es de 4.200,00 €.",
        ModelResponse(text="El saldo es de 4.200,00 €.", usage=Usage()),
    ]


def test_a_bad_answer_mid_run_is_paid_once_more_on_resume_and_nothing_else_is(
    server: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    bad = HOSTILE["message_null"]

    async def teller_then_bad(ex: Exchange) -> None:
        if any(m["role"] == "tool" for m in (ex.body or {}).get("messages", ())):
            await bad(ex)
        else:
            await conftest.teller(ex)

    server.scenarios["axo_then_bad"] = behind_auth(teller_then_bad)
    server.scenarios["axo_healthy"] = behind_auth(conftest.teller)
    agent = Agent("cajero", model="modelo-x", instructions="Cajero.", tools=[consultar_saldo])

    def run(scenario: str) -> Any:
        session = Session(
            "run-axo", gateway(server, scenario), SqliteCheckpointer(tmp_path / "r.db")
        )

        async def drive() -> Any:
            return [s async for s in agent.run("¿Saldo de ES91?", session=session)][-1]

        return asyncio.run(drive())

    def chats(scenario: str) -> int:
        return sum(1 for r in server.requests if r.scenario == scenario and "chat" in r.path)

    with pytest.raises(ProviderError, match="without choices\\[0\\].message"):
        run("axo_then_bad")
    assert chats("axo_then_bad") == 2 and RUNS["consultar_saldo"] == 1

    final = run("axo_healthy")

    assert final.text == "El saldo es de 4.200,00 €."
    assert chats("axo_healthy") == 1 and RUNS["consultar_saldo"] == 1
