"""The fault-injecting server and its scenarios, shared by the HTTP gateway's tests."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from .fault_server import Exchange, FaultServer

#: The API key every test sends. Nothing the library prints, logs, raises or journals may hold it.
KEY = "sk-synaptum-test-7f3a9c1e55d04b2a"

USAGE = {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43}


def completion(message: dict[str, Any], *, usage: dict[str, Any] | None = USAGE) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def tool_call_message(arguments: str, *, call_id: str = "call_a") -> dict[str, Any]:
    function = {"name": "consultar_saldo", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "chatcmpl-s", "object": "chat.completion.chunk", "choices": [choice]}


# ── scenarios: one per behaviour of a server, good or bad ──────────────────────────────────────


async def tool_call(ex: Exchange) -> None:
    await ex.send_json(200, completion(tool_call_message('{"cuenta": "ES91"}')))


async def unreadable_arguments(ex: Exchange) -> None:
    await ex.send_json(200, completion(tool_call_message('{"cuenta": "ES91')))


async def no_usage(ex: Exchange) -> None:
    await ex.send_json(200, completion({"role": "assistant", "content": "Hola."}, usage=None))


async def teller(ex: Exchange) -> None:
    """Answers like the seed's model: calls the tool, then answers once it has its result."""
    answered = any(m["role"] == "tool" for m in ex.body["messages"])
    if ex.body.get("stream"):
        await ex.start_sse()
        await ex.send_event(chunk({"role": "assistant"}))
        if answered:
            for piece in ("El saldo ", "es de ", "4.200,00 €."):
                await ex.send_event(chunk({"content": piece}))
            await ex.send_event(chunk({}, "stop"))
        else:
            await _stream_tool_call(ex)
        await ex.send_event({"id": "chatcmpl-s", "choices": [], "usage": USAGE})
        await ex.send_event("[DONE]")
        await ex.end_sse()
        return
    if answered:
        message = {"role": "assistant", "content": "El saldo es de 4.200,00 €."}
    else:
        message = tool_call_message('{"cuenta": "ES91 2100 0418 45"}')
    await ex.send_json(200, completion(message))


async def _stream_tool_call(ex: Exchange) -> None:
    first = {"index": 0, "id": "call_s", "type": "function"}
    first["function"] = {"name": "consultar_saldo", "arguments": ""}
    await ex.send_event(chunk({"tool_calls": [first]}))
    for piece in ('{"cuenta": ', '"ES91 2100', ' 0418 45"}'):
        await ex.send_event(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    await ex.send_event(chunk({}, "tool_calls"))


async def confused_then_teller(ex: Exchange) -> None:
    """First turn: arguments that are not JSON; after that, a well-behaved model."""
    if ex.number == 1:
        await unreadable_arguments(ex)
    else:
        await ex.send_json(200, completion({"role": "assistant", "content": "Lo siento."}))


async def rate_limited(ex: Exchange) -> None:
    error = {"error": {"message": "rate limit reached", "type": "rate_limit"}}
    await ex.send_json(429, error, {"Retry-After": "7"})


async def rate_limited_until(ex: Exchange) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    await ex.send_json(429, {"error": {"message": "slow down"}}, {"Retry-After": when})


async def server_error(ex: Exchange) -> None:
    await ex.send_json(500, {"error": {"message": "the backend crashed"}})


async def unauthorized(ex: Exchange) -> None:
    """Echoes the credential it refused, as careless servers do."""
    echoed = ex.headers.get("authorization", "")
    await ex.send_json(401, {"error": {"message": f"Invalid API key: {echoed}"}})


async def flaky(ex: Exchange) -> None:
    """429 with Retry-After, then 500, then a well-behaved model."""
    if ex.number == 1:
        await rate_limited_short(ex)
    elif ex.number == 2:
        await server_error(ex)
    else:
        await teller(ex)


async def rate_limited_short(ex: Exchange) -> None:
    await ex.send_json(429, {"error": {"message": "rate limit reached"}}, {"Retry-After": "3"})


async def stalls(ex: Exchange) -> None:
    await asyncio.sleep(3)


async def stream_drops(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo "}))
    await ex.send_event(chunk({"content": "es"}))
    ex.drop()


async def stream_ends_early(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo "}))
    await ex.end_sse()


async def stream_malformed(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo "}))
    await ex.send_event('{"choices": [{"delta": {"content": "es')
    await ex.send_event("[DONE]")
    await ex.end_sse()


async def stream_error_event(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo "}))
    await ex.send_event({"error": {"code": 503, "message": "the model was unloaded"}})
    await ex.end_sse()


async def stream_endless(ex: Exchange) -> None:
    """Generates until the client goes away (bounded: 500 events, about 10 s)."""
    await ex.start_sse()
    for _ in range(500):
        if ex.disconnected.is_set():
            return
        await ex.send_event(chunk({"content": "bla "}))
        await asyncio.sleep(0.02)
    await ex.end_sse()


async def nan_arguments_then_sorry(ex: Exchange) -> None:
    """First turn: arguments with NaN, which Python's json.loads accepts; then an apology."""
    if ex.number == 1:
        await ex.send_json(200, completion(tool_call_message('{"cuenta": NaN}')))
    else:
        await ex.send_json(200, completion({"role": "assistant", "content": "Lo siento."}))


async def infinite_object_arguments_then_sorry(ex: Exchange) -> None:
    """First turn: the arguments sent as an object holding Infinity; then an apology."""
    if ex.number == 1:
        message = tool_call_message("")
        message["tool_calls"][0]["function"]["arguments"] = {"cuenta": float("inf")}
        await ex.send_json(200, completion(message))
    else:
        await ex.send_json(200, completion({"role": "assistant", "content": "Lo siento."}))


async def lone_surrogate(ex: Exchange) -> None:
    """Half of a surrogate pair, escaped, alone: JSON decoders return it as a code point."""
    await ex.send_json(200, completion({"role": "assistant", "content": "Hola \ud83d"}))


async def stream_split_surrogate_pair(ex: Exchange) -> None:
    """An emoji sent as two escapes, in two SSE events (as a server cutting tokens does)."""
    await ex.start_sse()
    await ex.send_event(chunk({"role": "assistant", "content": "Hola "}))
    await ex.send_event('{"choices": [{"index": 0, "delta": {"content": "\\ud83d"}}]}')
    await ex.send_event('{"choices": [{"index": 0, "delta": {"content": "\\ude00 adi"}}]}')
    await ex.send_event(chunk({"content": "ós"}, "stop"))
    await ex.send_event("[DONE]")
    await ex.end_sse()


async def echoes_the_key_in_a_header(ex: Exchange) -> None:
    """Answers well, and echoes the credential in a response header (httpcore logs those)."""
    echoed = {"X-Echo": ex.headers.get("authorization", "")}
    await ex.send_json(200, completion({"role": "assistant", "content": "Hola."}), echoed)


async def trickles(ex: Exchange) -> None:
    """A body promised whole, sent one byte every 0.2 s: no single read ever times out."""
    body = json.dumps(completion({"role": "assistant", "content": "Hola." * 40})).encode()
    ex._head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})
    for byte in body:
        if ex.disconnected.is_set():
            return
        ex.writer.write(bytes([byte]))
        await ex.writer.drain()
        await asyncio.sleep(0.2)


async def stream_keep_alive_forever(ex: Exchange) -> None:
    """An SSE stream that only ever sends keep-alive comments (bounded: about 40 s)."""
    await ex.start_sse()
    for _ in range(200):
        if ex.disconnected.is_set():
            return
        payload = b": keep-alive\n\n"
        ex.writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        await ex.writer.drain()
        await asyncio.sleep(0.2)


async def trickles_forever(ex: Exchange) -> None:
    """A body promised and never finished: a byte every 0.05 s until the client goes away, so
    an attempt ends only when the client's own bound ends it, however fast the machine is."""
    ex._head(200, {"Content-Type": "application/json", "Content-Length": "1000000000"})
    while not ex.disconnected.is_set():
        ex.writer.write(b" ")
        await ex.writer.drain()
        await asyncio.sleep(0.05)


async def stream_keep_alive_until_gone(ex: Exchange) -> None:
    """An SSE stream of keep-alive comments that ends only when the client goes away."""
    await ex.start_sse()
    while not ex.disconnected.is_set():
        payload = b": keep-alive\n\n"
        ex.writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        await ex.writer.drain()
        await asyncio.sleep(0.05)


async def fails_then_trickles_forever(ex: Exchange) -> None:
    """500 at once; every later attempt trickles forever."""
    if ex.number == 1:
        await server_error(ex)
    else:
        await trickles_forever(ex)


async def fails_then_keeps_alive_forever(ex: Exchange) -> None:
    """500 at once; every later attempt is an SSE stream of keep-alive comments, forever."""
    if ex.number == 1:
        await server_error(ex)
    else:
        await stream_keep_alive_until_gone(ex)


SCENARIOS = {
    name: function
    for name, function in globals().items()
    if callable(function)
    and getattr(function, "__module__", None) == __name__
    and asyncio.iscoroutinefunction(function)
    and not name.startswith("_")
}


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    fault_server = FaultServer(SCENARIOS).start()
    yield fault_server
    fault_server.stop()
