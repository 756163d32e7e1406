"""The OpenAI-compatible HTTP gateway against a local server that fails on purpose."""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import socket
import threading
import traceback
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from synaptum_lite import (  # noqa: E402
    Agent,
    FinalStep,
    Message,
    ModelRequest,
    ModelResponse,
    ProviderError,
    RetryPolicy,
    Role,
    Session,
    SqliteCheckpointer,
    ToolCall,
    Usage,
    load_events,
    tool,
)
from synaptum_lite.errors import ConfigurationError  # noqa: E402
from synaptum_lite.gateways.http import DEADLINE, OpenAICompatibleGateway  # noqa: E402
from synaptum_lite.gateways.http_failures import retry_after  # noqa: E402
from tests.bounds import HANG  # noqa: E402

from .conftest import KEY, USAGE  # noqa: E402
from .fault_server import FaultServer  # noqa: E402

RUNS = {"consultar_saldo": 0}


@tool
async def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    RUNS["consultar_saldo"] += 1
    return f"{cuenta}: 4.200,00 €"


def request() -> ModelRequest:
    return ModelRequest(
        "modelo-x",
        (Message(Role.SYSTEM, "Eres un cajero."), Message(Role.USER, "¿Saldo de ES91?")),
        (consultar_saldo.spec,),
    )


def gateway(server: FaultServer, scenario: str, **options: Any) -> OpenAICompatibleGateway:
    return OpenAICompatibleGateway(server.url(scenario), api_key=KEY, **options)


def complete(server: FaultServer, scenario: str, **options: Any) -> ModelResponse:
    return asyncio.run(gateway(server, scenario, **options).complete(request()))


def stream(server: FaultServer, scenario: str) -> list[str | ModelResponse]:
    async def collect() -> list[str | ModelResponse]:
        return [item async for item in gateway(server, scenario).stream(request())]

    return asyncio.run(collect())


def failure(server: FaultServer, scenario: str, *, streaming: bool = False) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        stream(server, scenario) if streaming else complete(server, scenario, timeout=0.5)
    return caught.value


def shown(exc: BaseException) -> str:
    """Everything a person or a log could see of an exception."""
    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(exc.args)


# ── what a good server says, in the core's vocabulary ──────────────────────────────────────────


def test_a_completion_becomes_tool_calls_and_usage(server: FaultServer) -> None:
    response = complete(server, "tool_call")

    assert response.tool_calls == (ToolCall("call_a", "consultar_saldo", {"cuenta": "ES91"}),)
    assert response.usage == Usage(input_tokens=31, output_tokens=12)


def test_the_request_carries_messages_tools_the_model_and_the_key(server: FaultServer) -> None:
    complete(server, "tool_call")
    sent = server.last("tool_call")

    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "modelo-x"
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert sent.body["tools"][0]["type"] == "function"
    assert sent.body["tools"][0]["function"]["name"] == "consultar_saldo"
    assert "stream" not in sent.body


def test_unreported_usage_stays_unmeasured(server: FaultServer) -> None:
    response = complete(server, "no_usage")

    assert response.text == "Hola."
    assert response.usage == Usage() and not response.usage.measured


def test_unreadable_arguments_are_kept_as_the_models_raw_text(server: FaultServer) -> None:
    response = complete(server, "unreadable_arguments")

    assert response.tool_calls[0].arguments == '{"cuenta": "ES91'


def test_unreadable_arguments_go_back_to_the_model_as_an_error(
    server: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    final = run_agent(gateway(server, "confused_then_teller"), tmp_path)

    assert final.text == "Lo siento."
    assert RUNS["consultar_saldo"] == 0
    feedback = server.last("confused_then_teller").body["messages"]
    assert feedback[2]["tool_calls"][0]["function"]["arguments"] == '{"cuenta": "ES91'
    assert feedback[3]["role"] == "tool" and "ES91" in feedback[3]["content"]


def test_a_stream_yields_fragments_then_one_complete_response(server: FaultServer) -> None:
    async def two_turns() -> tuple[list[Any], list[Any]]:
        model = gateway(server, "teller")
        first = [item async for item in model.stream(request())]
        call = first[-1].tool_calls[0]
        answered = ModelRequest(
            "modelo-x",
            request().messages
            + (
                Message(Role.ASSISTANT, None, tool_calls=(call,)),
                Message(Role.TOOL, "ES91: 4.200,00 €", tool_call_id=call.id),
            ),
        )
        second = [item async for item in model.stream(answered)]
        return first, second

    first, second = asyncio.run(two_turns())

    assert first == [
        ModelResponse(
            tool_calls=(ToolCall("call_s", "consultar_saldo", {"cuenta": "ES91 2100 0418 45"}),),
            usage=Usage(31, 12),
        )
    ]
    assert second[:-1] == ["El saldo ", "es de ", "4.200,00 €."]
    assert second[-1] == ModelResponse(text="El saldo es de 4.200,00 €.", usage=Usage(31, 12))
    sent = server.last("teller").body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["messages"][3] == {
        "role": "tool",
        "content": "ES91: 4.200,00 €",
        "tool_call_id": "call_s",
    }


# ── how each failure is classified ─────────────────────────────────────────────────────────────


def test_429_is_retryable_and_carries_retry_after(server: FaultServer) -> None:
    error = failure(server, "rate_limited")

    assert (error.retryable, error.status, error.retry_after) == (True, 429, 7.0)
    assert "HTTP 429" in str(error) and "rate limit reached" in str(error)


def test_retry_after_may_be_an_http_date(server: FaultServer) -> None:
    error = failure(server, "rate_limited_until")

    assert error.retryable and 25 <= error.retry_after <= 30


def test_500_is_retryable(server: FaultServer) -> None:
    error = failure(server, "server_error")

    assert (error.retryable, error.status) == (True, 500)
    assert "the backend crashed" in str(error)


def test_401_is_not_retryable_and_says_which_variable_to_check(server: FaultServer) -> None:
    error = failure(server, "unauthorized")

    assert (error.retryable, error.status) == (False, 401)
    assert "SYNAPTUM_API_KEY" in str(error)
    assert KEY not in shown(error)


def test_a_timeout_is_retryable(server: FaultServer) -> None:
    error = failure(server, "stalls")

    assert error.retryable and error.status is None
    assert "timed out" in str(error)


def test_an_unreachable_server_is_retryable() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleGateway(f"http://127.0.0.1:{port}/v1", api_key=KEY)

    with pytest.raises(ProviderError) as caught:
        asyncio.run(model.complete(request()))

    assert caught.value.retryable and "could not be reached" in str(caught.value)


def test_a_connection_dropped_mid_stream_is_retryable(server: FaultServer) -> None:
    error = failure(server, "stream_drops", streaming=True)

    assert error.retryable
    assert "dropped the connection while streaming" in str(error)


def test_a_stream_that_ends_without_finishing_is_retryable(server: FaultServer) -> None:
    error = failure(server, "stream_ends_early", streaming=True)

    assert error.retryable and "before it was complete" in str(error)


def test_malformed_sse_fails_clearly_and_is_not_retried(server: FaultServer) -> None:
    error = failure(server, "stream_malformed", streaming=True)

    assert not error.retryable
    assert "SSE event that is not JSON" in str(error)
    assert '{"choices": [{"delta": {"content": "es' in str(error)


def test_an_error_event_inside_the_stream_is_classified_by_its_code(server: FaultServer) -> None:
    error = failure(server, "stream_error_event", streaming=True)

    assert (error.retryable, error.status) == (True, 503)
    assert "the model was unloaded" in str(error)


def test_closing_the_stream_closes_the_http_response(server: FaultServer) -> None:
    async def read_two_then_close() -> tuple[list[Any], bool]:
        upstream = gateway(server, "stream_endless").stream(request())
        received = [await anext(upstream), await anext(upstream)]
        await upstream.aclose()
        # Still inside the loop: the connection must be gone now, not when the loop shuts down.
        exchange = server.last("stream_endless")
        for _ in range(int(HANG / 0.02)):  # a bound that only ends a hang
            if exchange.disconnected.is_set():
                break
            await asyncio.sleep(0.02)
        return received, exchange.disconnected.is_set()

    received, disconnected = asyncio.run(read_two_then_close())

    assert received == ["bla ", "bla "]
    assert disconnected
    assert server.last("stream_endless").events_sent < 100  # generation stopped early


# ── with the loop: retries, the journal, and the key ───────────────────────────────────────────


def run_agent(
    model: OpenAICompatibleGateway,
    tmp_path: Path,
    *,
    streaming: bool = False,
    slept: list[float] | None = None,
) -> FinalStep:
    agent = Agent(
        "cajero",
        model="modelo-x",
        instructions="Consultas saldos con la herramienta. Responde en una frase.",
        tools=[consultar_saldo],
    )

    async def record(seconds: float) -> None:
        if slept is not None:
            slept.append(seconds)

    session = Session(
        "run-1",
        model,
        SqliteCheckpointer(tmp_path / "runs.db"),
        retry=RetryPolicy(random=lambda: 1.0),
        sleep=record,
    )

    async def drive() -> FinalStep:
        steps = agent.stream if streaming else agent.run
        async for step in steps("¿Cuánto hay en ES91 2100 0418 45?", session=session):
            final = step
        return final

    return asyncio.run(drive())


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
def test_the_loop_retries_429_then_500_honouring_retry_after(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    server.scenarios[f"flaky_{streaming}"] = server.scenarios["flaky"]
    RUNS["consultar_saldo"] = 0
    slept: list[float] = []
    model = gateway(server, f"flaky_{streaming}")

    final = run_agent(model, tmp_path, streaming=streaming, slept=slept)

    assert final.text == "El saldo es de 4.200,00 €."
    assert slept == [3.0, 1.0]  # Retry-After, then the backoff (base 0.5 · 2)
    assert model.model_calls == 4 and RUNS["consultar_saldo"] == 1
    assert final.usage == Usage(2 * USAGE["prompt_tokens"], 2 * USAGE["completion_tokens"], None)


def test_the_key_appears_in_no_error_log_output_or_journal(
    server: FaultServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    errors = [
        failure(server, name) for name in ("unauthorized", "rate_limited", "server_error", "stalls")
    ] + [
        failure(server, name, streaming=True)
        for name in ("stream_drops", "stream_malformed", "stream_error_event")
    ]
    run_agent(gateway(server, "teller"), tmp_path, streaming=True)
    model = gateway(server, "teller")
    logging.getLogger("test").debug("gateway: %r %s", model, vars(model).keys())

    seen = [shown(e) for e in errors] + [caplog.text, repr(model)]
    seen += list(capsys.readouterr())
    journal = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert all(KEY not in text for text in seen)
    assert KEY.encode() not in journal
    assert server.last("teller").headers["authorization"] == f"Bearer {KEY}"  # it was sent


# ── configuration ──────────────────────────────────────────────────────────────────────────────


def test_from_env_reads_the_three_variables() -> None:
    model = OpenAICompatibleGateway.from_env(
        environ={
            "SYNAPTUM_BASE_URL": "http://127.0.0.1:8080/v1/",
            "SYNAPTUM_API_KEY": KEY,
            "SYNAPTUM_MODEL": "qwen",
        }
    )

    assert (model.base_url, model.model) == ("http://127.0.0.1:8080/v1", "qwen")
    assert KEY not in repr(model)


def test_from_env_reads_the_seconds_a_read_may_wait() -> None:
    root = {"SYNAPTUM_BASE_URL": "http://127.0.0.1:8080/v1"}

    assert OpenAICompatibleGateway.from_env(environ=root).timeout == 120.0
    assert (
        OpenAICompatibleGateway.from_env(environ={**root, "SYNAPTUM_TIMEOUT": "600"}).timeout == 600
    )
    for bad in ("diez", "0", "-5", "nan", "inf"):
        with pytest.raises(ConfigurationError) as refused:
            OpenAICompatibleGateway.from_env(environ={**root, "SYNAPTUM_TIMEOUT": bad})
        assert str(refused.value) == (
            f"SYNAPTUM_TIMEOUT must be a positive number of seconds, got {bad!r}; export one "
            "(for example 600) or unset it for the default (120)"
        )


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "120", True])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_refused(bad: Any) -> None:
    with pytest.raises(
        ConfigurationError,
        match=f"timeout must be a positive number of seconds, got {re.escape(repr(bad))}",
    ):
        OpenAICompatibleGateway("http://127.0.0.1:9/v1", timeout=bad)


def test_from_env_without_a_base_url_says_what_to_set() -> None:
    with pytest.raises(ConfigurationError, match="SYNAPTUM_BASE_URL is not set"):
        OpenAICompatibleGateway.from_env(environ={})


def test_a_base_url_with_credentials_is_never_printed_with_them() -> None:
    model = OpenAICompatibleGateway("http://user:hunter2@127.0.0.1:9/v1")

    assert model.base_url == "http://127.0.0.1:9/v1" and "hunter2" not in repr(model)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        ("0.5", 0.5),
        ("-3", None),
        ("soon", None),
        (None, None),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
    ],
)
def test_retry_after_is_read_as_seconds(header: str | None, seconds: float | None) -> None:
    assert retry_after(header) == seconds


# ── answers a journal could not keep as they came ──────────────────────────────────────────────


def journal_of(tmp_path: Path) -> list[Any]:
    return asyncio.run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "run-1"))


@pytest.mark.parametrize(
    ("scenario", "raw"),
    [
        ("nan_arguments_then_sorry", '{"cuenta": NaN}'),
        ("infinite_object_arguments_then_sorry", '{"cuenta": Infinity}'),
    ],
)
def test_nan_or_infinity_in_paid_arguments_is_journaled_and_told_to_the_model(
    server: FaultServer, tmp_path: Path, scenario: str, raw: str
) -> None:
    RUNS["consultar_saldo"] = 0
    model = gateway(server, scenario)

    final = run_agent(model, tmp_path)

    assert final.text == "Lo siento."
    assert model.model_calls == 2 and RUNS["consultar_saldo"] == 0
    told = server.last(scenario).body["messages"][3]
    assert told["role"] == "tool"
    assert f"got {raw!r}, which is not one" in told["content"]
    assert "is not a JSON number" in told["content"]
    calls = [e.response.tool_calls for e in journal_of(tmp_path) if getattr(e, "response", None)]
    assert calls[0][0].arguments == raw  # what the model sent, kept as its text
    # journaled, so paid once: the run is closed, and running it again pays nothing
    again = gateway(server, scenario)
    assert run_agent(again, tmp_path).text == "Lo siento." and again.model_calls == 0


def test_a_lone_surrogate_in_a_paid_answer_is_journaled_as_the_replacement_character(
    server: FaultServer, tmp_path: Path
) -> None:
    final = run_agent(gateway(server, "lone_surrogate"), tmp_path)

    assert final.text == "Hola \ufffd"
    again = gateway(server, "lone_surrogate")
    assert run_agent(again, tmp_path).text == "Hola \ufffd" and again.model_calls == 0


def test_a_surrogate_pair_split_across_two_sse_events_is_joined(
    server: FaultServer, tmp_path: Path
) -> None:
    items = stream(server, "stream_split_surrogate_pair")

    assert items[:-1] == ["Hola ", "😀 adi", "ós"]
    assert items[-1].text == "Hola 😀 adiós"

    final = run_agent(gateway(server, "stream_split_surrogate_pair"), tmp_path, streaming=True)
    assert final.text == "Hola 😀 adiós"
    assert [e.response.text for e in journal_of(tmp_path) if getattr(e, "response", None)] == [
        "Hola 😀 adiós"
    ]


# ── the key, however a server echoes it ────────────────────────────────────────────────────────

SECRET = KEY.removeprefix("sk-synaptum-test-")  # the part of the key that is secret


def escaped(text: str, form: str) -> str:
    if form == "json_dash":
        return text.replace("-", "\\u002d")
    if form == "json_all":
        return "".join(f"\\u{ord(c):04X}" for c in text)
    if form == "url":
        return "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in text)
    if form == "url_all_lower":
        return "".join(f"%{ord(c):02x}" for c in text)
    if form == "html":
        return "".join(f"&#{ord(c)};" for c in text)
    return text


def windows(text: str, size: int = 6) -> list[str]:
    return [text[i : i + size] for i in range(len(text) - size + 1)]


@pytest.mark.parametrize(
    ("form", "body"),
    [
        # the key straddles the 300-character cut of the quoted body
        ("raw", '{"error": {"message": "' + "x" * 257 + ' Invalid API key: {key}"}}'),
        ("json_dash", '{"detail": "Invalid API key: {key}"}'),  # not the usual error shape
        ("json_all", '{"detail": "Invalid API key: {key}"}'),
        ("url", "refused: https://api.example/v1?key={key}"),
        ("url_all_lower", "refused: key={key}"),
        ("html", "<p>Invalid API key: {key}</p>"),
    ],
    ids=["raw-across-the-cut", "json-dash", "json-all", "url", "url-all-lower", "html"],
)
def test_the_key_is_redacted_before_the_body_is_cut_in_every_form_it_is_echoed(
    server: FaultServer, form: str, body: str
) -> None:
    echoed = escaped(KEY, form)

    async def echo(ex: Any) -> None:
        await ex.send_text(401, body.replace("{key}", echoed))

    server.scenarios[f"echo_{form}"] = echo
    error = failure(server, f"echo_{form}")

    seen = shown(error)
    assert "[redacted]" in str(error)
    assert not [w for w in windows(escaped(SECRET, form)) if w in seen], seen


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG], ids=["info", "debug"])
def test_a_password_in_the_base_url_is_sent_as_basic_auth_and_shows_in_no_log_or_error(
    server: FaultServer, caplog: pytest.LogCaptureFixture, level: int
) -> None:
    caplog.set_level(level)
    password = "pw-" + SECRET
    basic = base64.b64encode(f"ana:{password}".encode()).decode()
    url = server.url("tool_call").replace("http://", f"http://ana:{password}@")

    asyncio.run(OpenAICompatibleGateway(url).complete(request()))
    with pytest.raises(ProviderError) as refused:  # this server echoes the credential
        asyncio.run(
            OpenAICompatibleGateway(url.replace("tool_call", "unauthorized")).complete(request())
        )

    assert server.last("tool_call").headers["authorization"] == f"Basic {basic}"  # it was sent
    assert "HTTP Request: POST http://127.0.0.1:" in caplog.text  # the line httpx logs
    seen = caplog.text + shown(refused.value)
    assert not [w for w in windows(SECRET) if w in seen]
    assert basic not in seen and basic[:12] not in seen


def test_a_key_echoed_in_a_response_header_shows_in_no_debug_log_line(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    complete(server, "echoes_the_key_in_a_header")

    assert "X-Echo" in caplog.text  # httpcore logged the response headers
    assert not [w for w in windows(SECRET) if w in caplog.text]


# ── a call has a deadline, however the server sends its answer ─────────────────────────────────


@pytest.mark.parametrize(
    ("scenario", "streaming"),
    [("trickles", False), ("stream_keep_alive_forever", True)],
    ids=["a-body-one-byte-at-a-time", "sse-keep-alive-comments"],
)
def test_a_call_that_outlives_its_deadline_is_a_provider_error_the_loop_does_not_retry(
    server: FaultServer, scenario: str, streaming: bool
) -> None:
    model = gateway(server, scenario, timeout=5.0, deadline=1.0)

    async def call() -> Any:
        if streaming:
            return [item async for item in model.stream(request())]
        return await model.complete(request())

    with pytest.raises(ProviderError) as caught:
        asyncio.run(call())

    error = caught.value
    assert not error.retryable and error.status is None
    assert "did not finish the call within its deadline of 1 s, spent over 1 attempt " in str(error)
    assert "give the call more time with deadline=" in str(error)
    exchange = server.last(scenario)
    assert server.wait_disconnected(exchange, timeout=HANG)  # and the connection was closed


def run_until_it_fails(
    model: OpenAICompatibleGateway,
    tmp_path: Path,
    *,
    streaming: bool,
    attempts: int = 4,
    sleep: Any = None,
) -> ProviderError:
    """Run the cashier through the real loop (`attempts` at most, waits not slept unless
    `sleep` says so) until the model call fails for good; the error it fails with."""
    agent = Agent("cajero", model="modelo-x", instructions="Cajero.", tools=[consultar_saldo])

    async def no_wait(seconds: float) -> None:
        pass

    session = Session(
        "run-1",
        model,
        SqliteCheckpointer(tmp_path / "runs.db"),
        retry=RetryPolicy(max_attempts=attempts),
        sleep=sleep or no_wait,
    )

    async def drive() -> None:
        steps = agent.stream if streaming else agent.run
        async for _ in steps("¿Saldo de ES91?", session=session):
            pass

    with pytest.raises(ProviderError) as caught:
        asyncio.run(drive())
    return caught.value


STREAMS = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])


def own_copy(server: FaultServer, scenario: str, tmp_path: Path) -> str:
    """A name of this test's own for `scenario`, so its requests are counted apart."""
    name = f"{scenario}_{tmp_path.name}"
    server.scenarios[name] = server.scenarios[scenario]
    return name


@STREAMS
def test_the_deadline_is_the_whole_call_so_a_server_that_never_finishes_is_asked_once(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    # Each attempt ends only by the deadline (the server never finishes, however fast the
    # machine is), so no time is left for a second: one request, where the loop allows four.
    scenario = "stream_keep_alive_until_gone" if streaming else "trickles_forever"
    name = own_copy(server, scenario, tmp_path)

    # 2 s: time enough for the request to leave on a busy machine (the server may read it
    # later: `FaultServer.requests` waits for it)
    error = run_until_it_fails(gateway(server, name, deadline=2.0), tmp_path, streaming=streaming)

    assert requests_to(server, name) == 1  # before: 4, each with a deadline of its own
    assert not error.retryable
    assert "within its deadline of 2 s, spent over 1 attempt " in str(error)


@STREAMS
def test_a_retry_has_only_what_is_left_of_the_calls_deadline(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    # The first attempt fails at once (500), the second never finishes: it ends at the call's
    # deadline, and no third starts.
    scenario = "fails_then_keeps_alive_forever" if streaming else "fails_then_trickles_forever"
    name = own_copy(server, scenario, tmp_path)

    error = run_until_it_fails(gateway(server, name, deadline=3.0), tmp_path, streaming=streaming)

    assert requests_to(server, name) == 2  # before: 4
    assert not error.retryable
    assert "within its deadline of 3 s, spent over 2 attempts " in str(error)


@STREAMS
def test_no_attempt_starts_once_the_loops_wait_has_spent_the_deadline(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    # The server asks to wait (429, then 500, then it answers); the loop's wait is longer
    # than the whole deadline, so the second attempt is never sent.
    name = own_copy(server, "flaky", tmp_path)
    waited: list[float] = []

    async def past_the_deadline(seconds: float) -> None:
        waited.append(seconds)
        await asyncio.sleep(1.5)  # at least this long: the 1 s deadline has passed

    model = gateway(server, name, deadline=1.0)
    error = run_until_it_fails(model, tmp_path, streaming=streaming, sleep=past_the_deadline)

    assert requests_to(server, name) == 1 and waited == [3.0]  # before: 3 requests, answered
    assert model.model_calls == 1  # the attempt refused was never sent, nor counted
    assert not error.retryable
    assert "within its deadline of 1 s, spent over 1 attempt " in str(error)


@STREAMS
def test_an_attempt_that_outlives_its_attempt_timeout_is_retried_within_the_deadline(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    scenario = "stream_keep_alive_until_gone" if streaming else "trickles_forever"
    name = own_copy(server, scenario, tmp_path)
    # 1 s: time enough for each request to leave on a busy machine (the server may read it
    # later: `FaultServer.requests` waits for it)
    model = gateway(server, name, attempt_timeout=1.0)  # and the default deadline, 600 s

    error = run_until_it_fails(model, tmp_path, streaming=streaming, attempts=3)

    assert requests_to(server, name) == 3  # every attempt the loop allows
    assert error.retryable  # the loop's attempts were spent, not the deadline
    assert "did not finish attempt 3 of the call within its attempt_timeout of 1 s" in str(error)


def requests_to(server: FaultServer, scenario: str) -> int:
    return sum(1 for r in server.requests if r.scenario == scenario)


def test_a_request_the_server_has_not_read_yet_is_counted_once_it_catches_up(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a count right after a client gave up missed under eight CPU hogs (2 of 3 attempts):
    the last request had reached the server, whose thread had not read it yet. Here the
    server's loop is held while a client sends a request and leaves; the request is unread
    then, and the count, asked then, lets the server go on and waits for it to catch up."""
    name = own_copy(server, "trickles_forever", tmp_path)
    holding, held = threading.Event(), threading.Event()

    def hold() -> None:  # the server's thread, busy elsewhere
        holding.set()
        held.wait(HANG)

    server._loop.call_soon_threadsafe(hold)
    assert holding.wait(HANG)
    with socket.create_connection(("127.0.0.1", server.port), timeout=HANG) as client:
        body = b"{}"
        head = f"POST /{name}/v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n"
        client.sendall(head.encode() + body)
    assert not [r for r in server._requests if r.scenario == name]  # sent, and not read yet

    caught_up = server._caught_up

    def asked():  # the count has begun: the server's thread may go on
        held.set()
        return caught_up()

    monkeypatch.setattr(server, "_caught_up", asked)
    assert requests_to(server, name) == 1


def test_the_deadline_has_a_documented_default_and_must_be_positive() -> None:
    model = OpenAICompatibleGateway("http://127.0.0.1:9/v1")
    assert model.deadline == DEADLINE == 600.0 and model.attempt_timeout is None
    for name in ("deadline", "attempt_timeout"):
        for bad in (0, -1, float("nan"), float("inf"), True, "5"):
            with pytest.raises(ConfigurationError, match=f"{name} must be a positive number"):
                OpenAICompatibleGateway("http://127.0.0.1:9/v1", **{name: bad})
