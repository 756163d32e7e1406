"""The HTTP gateway against servers that misbehave on purpose, and answers of the wrong shape.

Every failure must be a `ProviderError` that says what happened, quotes the bad value (cut,
the key redacted) and says what to do next; nothing else may escape the gateway. And the run
loses nothing: the failed attempt stays in the journal as attempted, and a resume against a
healthy server pays only for the calls never answered, counted at the server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from synaptum_lite import (  # noqa: E402
    Agent,
    ModelResponse,
    Phase,
    ProviderError,
    Session,
    SqliteCheckpointer,
    ToolCall,
    Usage,
    load_events,
    run_usage,
)
from synaptum_lite.errors import ConfigurationError  # noqa: E402
from synaptum_lite.gateways.http import (
    ERROR_BODY_BYTES,
    MAX_RESPONSE_BYTES,
    OpenAICompatibleGateway,
)
from synaptum_lite.gateways.http_failures import retry_after  # noqa: E402
from tests.bounds import HANG  # noqa: E402

from .conftest import KEY, USAGE, chunk, completion, teller, tool_call_message  # noqa: E402
from .fault_server import Exchange, FaultServer  # noqa: E402
from .test_http_gateway import RUNS, SECRET, request, run_agent, shown, windows  # noqa: E402

# ── scenarios ──────────────────────────────────────────────────────────────────────────────────


def body(status: int, data: bytes, headers: dict[str, str] | None = None) -> Any:
    """A scenario answering `data` as it is, with a Content-Length that tells the truth."""

    async def answer(ex: Exchange) -> None:
        head = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        ex._head(status, {**head, **(headers or {})})
        ex.writer.write(data)
        await ex.writer.drain()

    return answer


def answers(message: Any, **extra: Any) -> Any:
    """A scenario answering a completion whose `choices[0].message` is `message`."""
    whole = {**completion({"role": "assistant", "content": "x"}), **extra}
    whole["choices"][0]["message"] = message
    return body(200, json.dumps(whole).encode())


def streams(*events: Any) -> Any:
    async def answer(ex: Exchange) -> None:
        await ex.start_sse()
        for event in events:
            await ex.send_event(event)
        await ex.end_sse()

    return answer


async def endless_body(ex: Exchange, status: int) -> None:
    """A chunked body that never ends (bounded: 64 MiB), until the client goes away."""
    ex._head(status, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    piece = b"x" * 65536
    for _ in range(1024):
        if ex.disconnected.is_set():
            return
        ex.writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        await ex.writer.drain()


async def endless_200(ex: Exchange) -> None:
    await endless_body(ex, 200)


async def endless_500(ex: Exchange) -> None:
    await endless_body(ex, 500)


async def endless_sse_line(ex: Exchange) -> None:
    """An SSE stream whose one line never ends (bounded: 64 MiB)."""
    await endless_body(ex, 200)


async def endless_sse_events(ex: Exchange) -> None:
    """An SSE stream of text that never finishes (bounded: 20,000 events of 4 KB)."""
    await ex.start_sse()
    for _ in range(20000):
        if ex.disconnected.is_set():
            return
        await ex.send_event(chunk({"content": "bla " * 1000}))


async def promises_more(ex: Exchange) -> None:
    """A Content-Length 100 bytes larger than the body, then the connection closes."""
    data = json.dumps(completion({"role": "assistant", "content": "Hola"})).encode()
    ex._head(200, {"Content-Type": "application/json", "Content-Length": str(len(data) + 100)})
    ex.writer.write(data)
    await ex.writer.drain()


async def chunks_cut(ex: Exchange) -> None:
    """A chunked body cut inside its first chunk."""
    ex._head(200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    ex.writer.write(b'40\r\n{"choices": [{"mes')
    await ex.writer.drain()


async def streams_plain_json(ex: Exchange) -> None:
    """Ignores "stream": true and answers one whole completion, as some servers do."""
    answered = any(m["role"] == "tool" for m in ex.body["messages"])
    if answered:
        message = {"role": "assistant", "content": "El saldo es de 4.200,00 €."}
    else:
        message = tool_call_message('{"cuenta": "ES91 2100 0418 45"}')
    await ex.send_json(200, completion(message))


async def streams_html(ex: Exchange) -> None:
    await ex.send_text(
        200, "<html>\n<body>Bienvenido</body>\n</html>\n", {"Content-Type": "text/html"}
    )


async def redirects_to_itself(ex: Exchange) -> None:
    ex._head(302, {"Location": ex.path + "/chat/completions", "Content-Length": "0"})
    await ex.writer.drain()


async def in_band_503(ex: Exchange) -> None:
    await ex.send_json(200, {"error": {"code": 503, "message": "the model is loading"}})


async def gzip_garbage_stream(ex: Exchange) -> None:
    ex._head(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"})
    ex.writer.write(b"data: these bytes are not gzip\n\n")
    await ex.writer.drain()


def call(call_id: str | None, name: Any, arguments: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "arguments": arguments}
    return {"type": "function", "function": function, **({"id": call_id} if call_id else {})}


def calls(*items: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(items)}


DEEP = "[" * 100_000 + "]" * 100_000

SCENARIOS = {
    "gzip_garbage": body(200, b"these bytes are not gzip", {"Content-Encoding": "gzip"}),
    "gzip_garbage_stream": gzip_garbage_stream,
    "endless_200": endless_200,
    "endless_500": endless_500,
    "endless_sse_line": endless_sse_line,
    "endless_sse_events": endless_sse_events,
    "promises_more": promises_more,
    "chunks_cut": chunks_cut,
    "streams_plain_json": streams_plain_json,
    "streams_html": streams_html,
    "redirects_to_itself": redirects_to_itself,
    "in_band_503": in_band_503,
    "deep_body": body(200, DEEP.encode()),
    "deep_event": streams(DEEP),
    "message_null": answers(None),
    "message_text": answers("Hola"),
    "content_number": answers({"role": "assistant", "content": 5}),
    "content_parts": answers(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "el saldo..."},
                {"type": "text", "text": "El saldo "},
                {"type": "text", "text": "es de 4.200,00 €."},
            ],
        }
    ),
    "tool_calls_object": answers(calls() | {"tool_calls": {"id": "a"}}),
    "tool_call_number": answers(calls() | {"tool_calls": [5]}),
    "function_text": answers(calls({"id": "a", "function": "consultar_saldo"})),
    "name_number": answers(calls(call("a", 5, "{}"))),
    "deep_arguments": answers(calls(call("a", "consultar_saldo", DEEP))),
    "stream_choices_number": streams({"choices": 5}),
    "stream_delta_text": streams({"choices": [{"index": 0, "delta": "Hola"}]}),
    "stream_pieces_text": streams(chunk({"tool_calls": "ab"})),
    "stream_piece_number": streams(chunk({"tool_calls": [5]})),
    "stream_function_text": streams(chunk({"tool_calls": [{"index": 0, "function": "x"}]})),
    "stream_name_number": streams(
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": 5}}]})
    ),
    "stream_arguments_number": streams(
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": 5}}]})
    ),
    "stream_content_parts": streams(
        chunk({"content": [{"type": "text", "text": "Hola, "}]}),
        chunk({"content": [{"type": "text", "text": "adiós"}]}, "stop"),
        "[DONE]",
    ),
    "stream_arguments_object": streams(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "a",
                        "function": {"name": "consultar_saldo", "arguments": {"cuenta": "ES91"}},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
        "[DONE]",
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    fault_server = FaultServer(SCENARIOS).start()
    yield fault_server
    fault_server.stop()


def gateway(server: FaultServer, scenario: str, **options: Any) -> OpenAICompatibleGateway:
    return OpenAICompatibleGateway(server.url(scenario), api_key=KEY, **options)


def call_model(server: FaultServer, scenario: str, *, streaming: bool, **options: Any) -> Any:
    model = gateway(server, scenario, timeout=5.0, deadline=30.0, **options)

    async def call() -> Any:
        if streaming:
            return [item async for item in model.stream(request())]
        return await model.complete(request())

    return asyncio.run(call())


def failure(
    server: FaultServer, scenario: str, *, streaming: bool, **options: Any
) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call_model(server, scenario, streaming=streaming, **options)
    error = caught.value
    assert KEY not in shown(error)
    return error


def requests_to(server: FaultServer, scenario: str) -> int:
    return sum(1 for r in server.requests if r.scenario == scenario)


# ── the transport: compression, length, redirects ─────────────────────────────────────────────


@pytest.mark.parametrize(
    ("scenario", "streaming"),
    [("gzip_garbage", False), ("gzip_garbage_stream", True)],
    ids=["complete", "stream"],
)
def test_a_body_that_does_not_decompress_is_a_provider_error_naming_the_encoding(
    server: FaultServer, scenario: str, streaming: bool
) -> None:
    error = failure(server, scenario, streaming=streaming)

    assert not error.retryable
    assert "does not decode as its Content-Encoding 'gzip' says" in str(error)
    assert "check the server or a proxy" in str(error)


@pytest.mark.parametrize(
    ("scenario", "streaming"),
    [("endless_200", False), ("endless_sse_line", True), ("endless_sse_events", True)],
    ids=["a-body", "one-sse-line", "sse-events"],
)
def test_an_answer_larger_than_the_bound_is_refused_once_the_bound_is_read(
    server: FaultServer, scenario: str, streaming: bool
) -> None:
    error = failure(server, scenario, streaming=streaming, max_response_bytes=1_000_000)

    assert not error.retryable and error.status is None
    assert "answered more than 1000000 bytes, the most this gateway reads" in str(error)
    assert "max_response_bytes=" in str(error)  # read whole: another error, or none at all


def test_the_bound_on_an_answer_has_a_documented_default_and_must_be_positive() -> None:
    assert OpenAICompatibleGateway("http://127.0.0.1:9/v1").max_response_bytes == MAX_RESPONSE_BYTES
    assert MAX_RESPONSE_BYTES == 32 * 1024 * 1024
    for bad in (0, -1, 1.5, True, "1000"):
        with pytest.raises(Exception, match="max_response_bytes must be a positive number"):
            OpenAICompatibleGateway("http://127.0.0.1:9/v1", max_response_bytes=bad)


def test_an_error_body_that_never_ends_is_cut_and_the_status_still_reported(
    server: FaultServer,
) -> None:
    error = failure(server, "endless_500", streaming=False)

    # Read whole, it would have run into the deadline (a different error, with no status).
    assert (error.retryable, error.status) == (True, 500)
    assert "answered HTTP 500: " + "x" * 300 + " …" in str(error)


async def error_body_cut(ex: Exchange) -> None:
    """A 500 whose body promises 1000 bytes, sends 23, and closes."""
    ex._head(500, {"Content-Type": "application/json", "Content-Length": "1000"})
    ex.writer.write(b'{"error": {"message": "')
    await ex.writer.drain()


def test_an_error_body_cut_short_still_reports_the_status(server: FaultServer) -> None:
    server.scenarios["error_body_cut"] = error_body_cut

    error = failure(server, "error_body_cut", streaming=False)

    assert (error.retryable, error.status) == (True, 500)
    assert "answered HTTP 500" in str(error)


@pytest.mark.parametrize("streaming", [False, True], ids=["error-body", "not-sse-body"])
def test_a_key_split_by_the_cut_of_a_body_read_in_part_does_not_show_in_half(
    server: FaultServer, streaming: bool
) -> None:
    # spaces, which the quote folds, then the key across the point where reading stops
    text = " " * (ERROR_BODY_BYTES - 10) + f"key={KEY} and more"

    async def echo(ex: Exchange) -> None:
        await ex.send_text(200 if streaming else 401, text, {"Content-Type": "text/html"})

    server.scenarios[f"split_key_{streaming}"] = echo
    error = failure(server, f"split_key_{streaming}", streaming=streaming)

    assert "key=" not in str(error)
    assert not [w for w in windows(SECRET) if w in shown(error)]


@pytest.mark.parametrize("scenario", ["promises_more", "chunks_cut"])
def test_a_body_cut_short_is_a_retryable_dropped_connection_not_an_unreachable_server(
    server: FaultServer, scenario: str
) -> None:
    error = failure(server, scenario, streaming=False)

    assert error.retryable
    assert "dropped the connection before its answer was complete" in str(error)
    assert "could not be reached" not in str(error)


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
def test_a_redirect_elsewhere_is_not_followed_so_the_key_never_leaves(
    server: FaultServer, streaming: bool
) -> None:
    elsewhere = FaultServer({"v1": teller}).start()
    try:
        target = f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions?key={KEY}"

        async def redirect(ex: Exchange) -> None:
            ex._head(307, {"Location": target, "Content-Length": "0"})
            await ex.writer.drain()

        server.scenarios[f"redirect_{streaming}"] = redirect
        error = failure(server, f"redirect_{streaming}", streaming=streaming)

        assert (error.retryable, error.status) == (False, 307)
        assert f"a redirect to 'http://127.0.0.1:{elsewhere.port}/v1/chat/" in str(error)
        assert "[redacted]" in str(error)
        assert "set SYNAPTUM_BASE_URL to the API root the server means" in str(error)
        assert elsewhere.requests == []  # nothing, and no key, went there
    finally:
        elsewhere.stop()


def test_a_redirect_loop_costs_one_request(server: FaultServer) -> None:
    error = failure(server, "redirects_to_itself", streaming=False)

    assert error.status == 302 and "which this client does not follow" in str(error)
    assert requests_to(server, "redirects_to_itself") == 1


def test_an_error_sent_inside_a_200_answer_is_classified_by_its_code(server: FaultServer) -> None:
    error = failure(server, "in_band_503", streaming=False)

    assert (error.retryable, error.status) == (True, 503)
    assert "failed with an error in a successful (HTTP 200) answer" in str(error)
    assert "the model is loading" in str(error)


@pytest.mark.parametrize(
    ("scenario", "streaming"), [("deep_body", False), ("deep_event", True)], ids=["body", "sse"]
)
def test_json_nested_too_deeply_to_read_is_a_provider_error(
    server: FaultServer, scenario: str, streaming: bool
) -> None:
    error = failure(server, scenario, streaming=streaming)

    assert not error.retryable
    assert "nested too deeply to read: '[[[[" in str(error)
    assert len(str(error)) < 600  # the quote is cut


# ── Retry-After, however a server writes it ───────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("nan", None),
        ("inf", None),
        ("1e999", None),
        ("-5", None),
        ("1_000", None),
        ("0x10", None),
        ("", None),
        ("99999999999", 99999999999.0),
        ("Thu, 01 Jan 1970 00:00:10 -0000", 0.0),
        ("Sun, 06 Nov 1994 08:49:37", 0.0),
    ],
)
def test_a_retry_after_that_is_not_a_count_of_seconds_is_unreadable(
    header: str, seconds: float | None
) -> None:
    assert retry_after(header) == seconds


def test_a_date_without_a_zone_is_read_in_utc_not_in_this_machines_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if hasattr(time, "tzset"):  # a machine six hours west of UTC (not on Windows)
        monkeypatch.setenv("TZ", "CST+6")
        time.tzset()
    try:
        assert retry_after("Thu, 01 Jan 1970 00:01:40 -0000", now=40.0) == 60.0
    finally:
        monkeypatch.undo()
        if hasattr(time, "tzset"):
            time.tzset()


@pytest.mark.parametrize(
    ("header", "slept"),
    [("-5", [0.5]), ("nan", [0.5]), ("99999999999", [30.0])],
    ids=["negative", "nan", "huge"],
)
def test_the_loop_waits_its_backoff_for_an_unreadable_retry_after_and_its_cap_for_a_huge_one(
    server: FaultServer, tmp_path: Path, header: str, slept: list[float]
) -> None:
    async def busy_then_teller(ex: Exchange) -> None:
        if ex.number == 1:
            await ex.send_json(503, {"error": {"message": "busy"}}, {"Retry-After": header})
        else:
            await teller(ex)

    name = f"busy_{header}"
    server.scenarios[name] = busy_then_teller
    waited: list[float] = []

    final = run_agent(gateway(server, name), tmp_path, slept=waited)

    assert final.text == "El saldo es de 4.200,00 €."
    assert waited == slept  # backoff 0.5 s (base, jitter 1.0), or the cap of 30 s
    assert requests_to(server, name) == 3


# ── a streamed request answered by something that is not a stream ─────────────────────────────


def test_a_server_that_ignores_stream_is_read_as_one_completion_and_paid_once(
    server: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    model = gateway(server, "streams_plain_json")

    final = run_agent(model, tmp_path, streaming=True)

    assert final.text == "El saldo es de 4.200,00 €."
    assert requests_to(server, "streams_plain_json") == 2  # two turns, nothing retried
    assert RUNS["consultar_saldo"] == 1
    assert final.usage == Usage(2 * USAGE["prompt_tokens"], 2 * USAGE["completion_tokens"])


def test_a_streamed_request_answered_with_html_is_not_retried(
    server: FaultServer, tmp_path: Path
) -> None:
    with pytest.raises(ProviderError) as caught:
        run_agent(gateway(server, "streams_html"), tmp_path, streaming=True)

    assert not caught.value.retryable
    assert "a body that is not server-sent events: '<html> <body>Bienvenido" in str(caught.value)
    assert requests_to(server, "streams_html") == 1


# ── valid HTTP, the wrong shape ────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("scenario", "streaming", "says"),
    [
        ("message_null", False, "with choices[0].message that is not an object: 'null'"),
        ("message_text", False, """with choices[0].message that is not an object: '"Hola"'"""),
        ("content_number", False, "content that is neither text nor a list of parts: '5'"),
        ("tool_calls_object", False, """tool_calls that is not a list: '{"id": "a"}'"""),
        ("tool_call_number", False, "tool_calls[0] that is not an object: '5'"),
        ("function_text", False, """tool_calls[0].function that is not an object: '"consult"""),
        ("name_number", False, "tool call 0's function name that is not text: '5'"),
        ("deep_arguments", False, "tool call 0's arguments nested deeper than 100 levels"),
        ("stream_choices_number", True, "an SSE event whose choices is not a list: '5'"),
        ("stream_delta_text", True, """an SSE event whose delta is not an object: '"Hola"'"""),
        ("stream_pieces_text", True, """delta.tool_calls is not a list: '"ab"'"""),
        ("stream_piece_number", True, "a tool-call piece that is not an object: '5'"),
        ("stream_function_text", True, """a tool call whose function is not an object: '"x"'"""),
        ("stream_name_number", True, "a tool-call name that is not text: '5'"),
        ("stream_arguments_number", True, "tool-call arguments that are not text: '5'"),
    ],
)
def test_an_answer_of_the_wrong_shape_names_where_and_the_bad_value(
    server: FaultServer, scenario: str, streaming: bool, says: str
) -> None:
    error = failure(server, scenario, streaming=streaming)

    assert not error.retryable
    assert says in str(error)
    assert "is SYNAPTUM_BASE_URL an OpenAI-compatible API root?" in str(error)


@pytest.mark.parametrize(
    ("scenario", "streaming"),
    [("content_parts", False), ("stream_content_parts", True)],
    ids=["complete", "stream"],
)
def test_content_sent_as_a_list_of_parts_is_read_as_its_text_parts(
    server: FaultServer, scenario: str, streaming: bool
) -> None:
    answer = call_model(server, scenario, streaming=streaming)

    if streaming:
        assert answer[:-1] == ["Hola, ", "adiós"]
        assert answer[-1].text == "Hola, adiós"
    else:
        assert answer.text == "El saldo es de 4.200,00 €."  # the reasoning part is not the answer


def test_streamed_arguments_sent_as_an_object_are_kept(server: FaultServer) -> None:
    answer = call_model(server, "stream_arguments_object", streaming=True)

    assert answer[-1].tool_calls == (ToolCall("a", "consultar_saldo", {"cuenta": "ES91"}),)


def scripted(*messages: Any) -> Any:
    """A scenario answering `messages[n]` to its (n+1)th request, and the last one after that."""

    async def answer(ex: Exchange) -> None:
        message = messages[min(ex.number, len(messages)) - 1]
        await ex.send_json(200, completion(message))

    return answer


SORRY = {"role": "assistant", "content": "Lo siento."}


def test_arguments_that_are_a_json_string_are_told_to_the_model_as_it_wrote_them(
    server: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    server.scenarios["json_string_arguments"] = scripted(
        calls(call("a", "consultar_saldo", '"ES91"')), SORRY
    )

    final = run_agent(gateway(server, "json_string_arguments"), tmp_path)

    assert final.text == "Lo siento." and RUNS["consultar_saldo"] == 0
    sent = server.last("json_string_arguments").body["messages"]
    assert sent[2]["tool_calls"][0]["function"]["arguments"] == '"ES91"'  # quotes and all
    assert "got '\"ES91\"', which is not one (it is a JSON str)" in sent[3]["content"]


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
def test_two_calls_with_one_id_get_an_id_each_so_each_result_answers_one_call(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    RUNS["consultar_saldo"] = 0
    first = calls(
        call("a", "consultar_saldo", '{"cuenta": "ES91"}'),
        call("a", "consultar_saldo", '{"cuenta": "ES42"}'),
    )

    async def twins(ex: Exchange) -> None:
        if any(m["role"] == "tool" for m in ex.body["messages"]):
            await scripted(SORRY)(ex)
        elif not streaming:
            await scripted(first)(ex)
        else:
            await ex.start_sse()
            for index, piece in enumerate(first["tool_calls"]):
                await ex.send_event(chunk({"tool_calls": [{"index": index, **piece}]}))
            await ex.send_event(chunk({}, "tool_calls"))
            await ex.send_event("[DONE]")
            await ex.end_sse()

    server.scenarios[f"twins_{streaming}"] = twins

    final = run_agent(gateway(server, f"twins_{streaming}"), tmp_path, streaming=streaming)

    assert final.text == "Lo siento." and RUNS["consultar_saldo"] == 2
    sent = server.last(f"twins_{streaming}").body["messages"]
    assert [c["id"] for c in sent[2]["tool_calls"]] == ["a", "a_1"]
    assert [(m["tool_call_id"], m["content"][:4]) for m in sent[3:5]] == [
        ("a", "ES91"),
        ("a_1", "ES42"),
    ]
    again = gateway(server, f"twins_{streaming}")  # closed: replayed from the journal
    assert run_agent(again, tmp_path).text == "Lo siento." and again.model_calls == 0


@pytest.mark.parametrize(
    ("usage", "measured"),
    [
        ({"prompt_tokens": -5, "completion_tokens": 3}, Usage(None, 3)),
        ({"prompt_tokens": 31.5, "completion_tokens": 12.0}, Usage(None, 12)),
        ({"prompt_tokens": "31", "completion_tokens": True}, Usage(None, None)),
        ({"prompt_tokens": 10**30, "completion_tokens": 2**53}, Usage(None, None)),
        (
            {
                "prompt_tokens": 31,
                "completion_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": -1},
            },
            Usage(31, 12, None),
        ),
        (
            {
                "prompt_tokens": 31,
                "completion_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 32},
            },
            Usage(31, 12, None),
        ),
    ],
    ids=[
        "negative",
        "fractional",
        "text-and-bool",
        "absurd",
        "negative-cached",
        "cached-over-input",
    ],
)
def test_a_usage_counter_that_is_not_a_count_stays_unmeasured_in_the_run_total(
    server: FaultServer, tmp_path: Path, usage: dict[str, Any], measured: Usage
) -> None:
    name = f"usage_{len(server.scenarios)}"
    server.scenarios[name] = body(200, json.dumps(completion(SORRY, usage=usage)).encode())

    final = run_agent(gateway(server, name), tmp_path)

    assert final.usage == measured
    checkpointer = SqliteCheckpointer(tmp_path / "runs.db")
    assert asyncio.run(run_usage(checkpointer, "run-1")).total == measured


# ── the run loses nothing: the journal, and what a resume pays ─────────────────────────────────


def first_turn_then(fault: Any) -> Any:
    """Answers the first turn well (a tool call) and every later one with `fault`."""

    async def answer(ex: Exchange) -> None:
        if any(m["role"] == "tool" for m in ex.body["messages"]):
            await fault(ex)
        else:
            await teller(ex)

    return answer


@pytest.mark.parametrize(
    ("fault", "streaming", "attempts"),
    [
        ("message_null", False, 1),
        ("content_number", False, 1),
        ("gzip_garbage", False, 1),
        ("deep_body", False, 1),
        ("deep_arguments", False, 1),
        ("stream_delta_text", True, 1),
        ("stream_name_number", True, 1),
        ("streams_html", True, 1),
        ("promises_more", False, 4),  # retryable: the loop's four attempts, one journal entry
        ("chunks_cut", True, 4),
    ],
)
def test_a_bad_answer_mid_run_is_journaled_as_attempted_and_a_resume_pays_only_for_it(
    server: FaultServer, tmp_path: Path, fault: str, streaming: bool, attempts: int
) -> None:
    RUNS["consultar_saldo"] = 0
    name = f"then_{fault}_{streaming}"
    server.scenarios[name] = first_turn_then(SCENARIOS[fault])

    with pytest.raises(ProviderError) as caught:
        run_agent(gateway(server, name), tmp_path, streaming=streaming)

    assert KEY not in shown(caught.value)
    if caught.value.retryable:  # what it tells its reader to do is what this test does next
        assert "running the agent again with the same run_id resumes the run" in str(caught.value)
    journal = asyncio.run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "run-1"))
    assert [(e.step_id, e.phase) for e in journal] == [
        ("000000-model", Phase.ATTEMPTED),
        ("000000-model", Phase.COMPLETED),
        ("000001-tool", Phase.ATTEMPTED),
        ("000001-tool", Phase.COMPLETED),
        ("000002-model", Phase.ATTEMPTED),
    ]
    assert requests_to(server, name) == 1 + attempts and RUNS["consultar_saldo"] == 1

    healthy = f"healthy_{fault}_{streaming}"
    server.scenarios[healthy] = teller
    final = run_agent(gateway(server, healthy), tmp_path, streaming=streaming)

    assert final.text == "El saldo es de 4.200,00 €."
    assert requests_to(server, healthy) == 1  # only the turn never answered
    assert RUNS["consultar_saldo"] == 1  # the tool is not run again
    journal = asyncio.run(load_events(SqliteCheckpointer(tmp_path / "runs.db"), "run-1"))
    second_turn = [(e.phase, e.attempt) for e in journal if e.step_id == "000002-model"]
    assert second_turn == [(Phase.ATTEMPTED, 1), (Phase.ATTEMPTED, 2), (Phase.COMPLETED, 2)]
    assert final.usage == Usage(2 * USAGE["prompt_tokens"], 2 * USAGE["completion_tokens"])
    assert KEY.encode() not in (tmp_path / "runs.db").read_bytes()


def test_a_paid_answer_read_from_a_body_sent_gzipped_is_kept(server: FaultServer) -> None:
    data = gzip.compress(json.dumps(completion(SORRY)).encode())
    server.scenarios["gzipped"] = body(200, data, {"Content-Encoding": "gzip"})

    answer = call_model(server, "gzipped", streaming=False)

    assert answer == ModelResponse(text="Lo siento.", usage=Usage(31, 12))


# ── a stream, however its bytes are cut ───────────────────────────────────────────────────────


async def byte_by_byte_crlf(ex: Exchange) -> None:
    """The teller's answer as SSE with CRLF line ends, each byte in a chunk of its own (so a CR
    and its LF, and the three bytes of €, arrive apart), then an event with "error": null."""
    events = [
        chunk({"role": "assistant", "content": "El saldo "}) | {"error": None},
        chunk({"content": "es de 4.200,00 €."}),
        chunk({}, "stop"),
        {"choices": [], "usage": USAGE},
    ]
    ex._head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    text = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\r\n\r\n" for e in events)
    for byte in (text + "data: [DONE]\r\n\r\n").encode():
        ex.writer.write(b"1\r\n" + bytes([byte]) + b"\r\n")
    ex.writer.write(b"0\r\n\r\n")
    await ex.writer.drain()


def test_a_stream_cut_at_every_byte_with_crlf_line_ends_reads_as_sent(
    server: FaultServer,
) -> None:
    server.scenarios["byte_by_byte_crlf"] = byte_by_byte_crlf

    items = call_model(server, "byte_by_byte_crlf", streaming=True)

    assert items[:-1] == ["El saldo ", "es de 4.200,00 €."]
    assert items[-1] == ModelResponse(text="El saldo es de 4.200,00 €.", usage=Usage(31, 12))


# ── a typed answer that cannot be read ────────────────────────────────────────────────────────


@dataclasses.dataclass
class Saldo:
    cuenta: str
    importe: float

    def __post_init__(self) -> None:
        if self.importe < 0:
            raise ValueError(f"importe must not be negative, got {self.importe}")
        if not self.cuenta.startswith("ES"):
            raise TypeError(f"cuenta must be a Spanish IBAN, got {self.cuenta!r}")


@pytest.mark.parametrize(
    ("bad", "told"),
    [
        (DEEP, "it nests too deeply to read"),
        ('{"cuenta": "ES91", "importe": -3}', "ValueError: importe must not be negative, got -3.0"),
        (
            '{"cuenta": "FR76", "importe": 3}',
            "TypeError: cuenta must be a Spanish IBAN, got 'FR76'",
        ),
    ],
    ids=["nested-too-deeply", "refused-with-valueerror", "refused-with-typeerror"],
)
def test_a_typed_answer_that_cannot_be_read_is_told_to_the_model_and_never_raises_on_resume(
    server: FaultServer, tmp_path: Path, bad: str, told: str
) -> None:
    name = f"typed_{len(bad)}"
    good = '{"cuenta": "ES91", "importe": 4200.0}'
    server.scenarios[name] = scripted(
        {"role": "assistant", "content": bad}, {"role": "assistant", "content": good}
    )
    agent = Agent("cajero", model="modelo-x", instructions="Responde el saldo.", output=Saldo)

    def run(model: OpenAICompatibleGateway) -> Any:
        session = Session("run-1", model, SqliteCheckpointer(tmp_path / "runs.db"))

        async def drive() -> Any:
            return [step async for step in agent.run("¿Saldo de ES91?", session=session)][-1]

        return asyncio.run(drive())

    final = run(gateway(server, name))

    assert final.output == Saldo("ES91", 4200.0)
    feedback = server.last(name).body["messages"][-1]
    assert (
        feedback["role"] == "user" and f"Your answer is not valid ({told})" in feedback["content"]
    )
    again = gateway(server, name)  # closed: the typed output is read again from the journal
    assert run(again).output == Saldo("ES91", 4200.0) and again.model_calls == 0


# ── a server that echoes the key inside a successful answer ───────────────────────────────────


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
def test_a_key_echoed_inside_an_answer_reaches_neither_the_journal_nor_the_next_request(
    server: FaultServer, tmp_path: Path, streaming: bool
) -> None:
    RUNS["consultar_saldo"] = 0

    async def echoes(ex: Exchange) -> None:
        key = ex.headers["authorization"].removeprefix("Bearer ")
        if any(m["role"] == "tool" for m in ex.body["messages"]):
            message: dict[str, Any] = {"role": "assistant", "content": f"Tu clave: {key}."}
        else:
            message = calls(call(f"id-{key}", "consultar_saldo", json.dumps({"cuenta": key})))
        if not streaming:
            await ex.send_json(200, completion(message))
            return
        await ex.start_sse()
        if message.get("tool_calls"):
            piece = {"index": 0, **message["tool_calls"][0]}
            await ex.send_event(chunk({"tool_calls": [piece]}, "tool_calls"))
        else:
            await ex.send_event(chunk({"content": message["content"]}, "stop"))
        await ex.send_event("[DONE]")
        await ex.end_sse()

    name = f"echoes_{streaming}"
    server.scenarios[name] = echoes

    final = run_agent(gateway(server, name), tmp_path, streaming=streaming)

    assert final.text == "Tu clave: [redacted]."
    assert RUNS["consultar_saldo"] == 1
    assert KEY.encode() not in (tmp_path / "runs.db").read_bytes()
    sent = server.last(name)
    assert KEY not in json.dumps(sent.body)  # the context sent back holds it nowhere
    assert sent.body["messages"][2]["tool_calls"][0]["id"] == "id-[redacted]"


# ── a base URL no request could be sent to ─────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:99999/v1", "port 99999 is not between 1 and 65535"),
        ("http://[::1/v1", "Invalid port: ':1'"),
        ("http:///v1", "it names no host"),
        ("https://", "it names no host"),
        ("http://127.0.0.1:8080/v1\r\nX-Otra: 1", "Invalid non-printable ASCII character"),
        ("http://127.0.0.1:8080/v1?clave=1", "it has a ?query or #fragment"),
        ("http://ana:hunter2@[::1/v1", "Invalid port: ':1'"),
    ],
)
def test_a_base_url_no_request_could_be_sent_to_is_refused_when_the_gateway_is_built(
    url: str, problem: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        OpenAICompatibleGateway(url, api_key=KEY)

    message = str(caught.value)
    assert problem in message and "set SYNAPTUM_BASE_URL to the API root" in message
    assert "hunter2" not in message and KEY not in message


# ── server-sent events as servers really send them ────────────────────────────────────────────


def sse_body(*, bom: bool = False, keep_alive_data: bool = False, done: str = "[DONE]") -> str:
    events = [chunk({"content": "Hola, "}), chunk({"content": "adiós"})]
    text = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
    if keep_alive_data:  # events whose data is empty, which SSE does not dispatch
        text = "data:\n\n" + text.replace("\n\n", "\n\ndata: \n\n", 1)
    return ("\ufeff" if bom else "") + text + f"data: {done}\n\n"


@pytest.mark.parametrize(
    ("text", "content_type"),
    [
        (sse_body(bom=True), "text/event-stream"),
        (sse_body(keep_alive_data=True), "text/event-stream"),
        (sse_body(), "application/json"),
        (sse_body(done="[DONE] "), "text/event-stream"),
    ],
    ids=["a-byte-order-mark-first", "events-with-empty-data", "labelled-as-json", "done-spaced"],
)
def test_a_stream_reads_as_sse_says_it_should(
    server: FaultServer, text: str, content_type: str
) -> None:
    name = f"sse_{len(text)}_{content_type.split('/')[1]}"
    server.scenarios[name] = body(200, text.encode(), {"Content-Type": content_type})

    items = call_model(server, name, streaming=True)

    # "adiós" may come as "adió" and "s": an "s" that ends a fragment could begin the key
    # ("sk-…"), so it waits for what follows (here, the end of the stream)
    assert items[0] == "Hola, " and "".join(items[1:-1]) == "adiós"
    assert items[-1].text == "Hola, adiós"


# ── a whole answer, then the stream goes wrong ────────────────────────────────────────────────


async def finished_then_drops(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo es de 4.200,00 €."}))
    await ex.send_event(chunk({}, "stop"))
    ex.drop()  # before the usage chunk and [DONE]


async def finished_then_stalls(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo es de 4.200,00 €."}))
    await ex.send_event(chunk({}, "stop"))
    try:  # silent until the client goes away (bounded only to end a hang)
        await asyncio.wait_for(ex.disconnected.wait(), HANG)
    except TimeoutError:
        pass


@pytest.mark.parametrize("fault", [finished_then_drops, finished_then_stalls])
def test_a_stream_that_fails_after_its_finish_reason_keeps_the_answer_and_pays_once(
    server: FaultServer, tmp_path: Path, fault: Any
) -> None:
    name = fault.__name__
    server.scenarios[name] = fault

    final = run_agent(gateway(server, name, timeout=0.5), tmp_path, streaming=True)

    assert final.text == "El saldo es de 4.200,00 €."
    assert final.usage == Usage()  # the usage chunk never came: unmeasured, not zero
    assert requests_to(server, name) == 1


def test_a_request_the_server_refuses_says_it_will_be_refused_again_and_what_to_check(
    server: FaultServer,
) -> None:
    problem = {"error": {"message": "This model's maximum context length is 4096 tokens"}}
    server.scenarios["bad_request"] = body(400, json.dumps(problem).encode())

    error = failure(server, "bad_request", streaming=False)

    assert (error.retryable, error.status) == (False, 400)
    assert "maximum context length is 4096 tokens" in str(error)
    assert "the server will refuse this request again as it is: check SYNAPTUM_MODEL" in str(error)


# ── what the model gets wrong inside a well-formed answer is told to it ───────────────────────


@pytest.mark.parametrize(
    ("first", "told"),
    [
        (calls(call("a", "borrar_todo", "{}")), "there is no tool 'borrar_todo'"),
        (calls(call("a", None, "{}")), "there is no tool ''"),
        (calls(call("a", "consultar_saldo", "[1, 2]")), "arguments must be a JSON object"),
    ],
    ids=["a-tool-it-does-not-have", "no-tool-name", "arguments-not-an-object"],
)
def test_a_call_the_agent_cannot_make_is_told_to_the_model_and_runs_nothing(
    server: FaultServer, tmp_path: Path, first: dict[str, Any], told: str
) -> None:
    RUNS["consultar_saldo"] = 0
    name = f"told_{told[:20].replace(' ', '_')}"
    server.scenarios[name] = scripted(first, SORRY)

    final = run_agent(gateway(server, name), tmp_path)

    assert final.text == "Lo siento." and RUNS["consultar_saldo"] == 0
    result = server.last(name).body["messages"][3]
    assert result["role"] == "tool" and result["tool_call_id"] == "a"
    assert told in result["content"]


def test_calls_without_ids_get_positional_ids_that_a_replay_derives_again(
    server: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    first = calls(
        call(None, "consultar_saldo", '{"cuenta": "ES91"}'),
        call(None, "consultar_saldo", '{"cuenta": "ES42"}'),
    )
    server.scenarios["no_ids"] = scripted(first, SORRY)

    final = run_agent(gateway(server, "no_ids"), tmp_path)

    assert final.text == "Lo siento." and RUNS["consultar_saldo"] == 2
    sent = server.last("no_ids").body["messages"]
    assert [m["tool_call_id"] for m in sent[3:5]] == ["call_0", "call_1"]
    again = gateway(server, "no_ids")
    assert run_agent(again, tmp_path).text == "Lo siento." and again.model_calls == 0


async def always_streams(ex: Exchange) -> None:
    """Streams its answers whatever the request asks (a proxy that forces streaming)."""
    ex.body["stream"] = True
    await teller(ex)


def test_a_server_that_streams_although_not_asked_is_read_as_its_stream_and_paid_once(
    server: FaultServer, tmp_path: Path
) -> None:
    RUNS["consultar_saldo"] = 0
    server.scenarios["always_streams"] = always_streams

    final = run_agent(gateway(server, "always_streams"), tmp_path)  # not streaming

    assert final.text == "El saldo es de 4.200,00 €."
    assert requests_to(server, "always_streams") == 2 and RUNS["consultar_saldo"] == 1
    assert final.usage == Usage(2 * USAGE["prompt_tokens"], 2 * USAGE["completion_tokens"])
