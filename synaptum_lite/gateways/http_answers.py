"""Reading the HTTP model's answer, whole or streamed, into a `ModelResponse`.

Every body is read with a bound, whatever `Content-Length` says: an answer up to the gateway's
`max_response_bytes` (`read_body`, `sse.SseLines`). A body is parsed as JSON and then read as
the chat-completions format (`wire`); what is not the format is a `ProviderError` worded by
`http_failures.ServerFailures`. Every answer a server sends (its text, tool-call ids, names and
arguments) has the gateway's secrets redacted before the loop journals it (`redacted_answer`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from ..messages import ModelResponse, ToolCall
from .http_failures import ERROR_BODY_BYTES, ServerFailures, cut
from .sse import SseLines, sse_data
from .wire import MalformedAnswer, StreamAssembly, completion_from_wire

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]


async def read_body(
    response: httpx.Response, limit: int, too_large: Callable[[], Exception]
) -> bytes:
    """The body, decompressed, read up to `limit` bytes: more raises `too_large()`."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def read_completion(raw: bytes, failures: ServerFailures) -> ModelResponse:
    """A whole (not streamed) answer's body as a `ModelResponse`, secrets redacted."""
    body = parse_json(raw, "a body", failures)
    if isinstance(body, dict) and body.get("error") is not None and "choices" not in body:
        raise failures.in_band(body["error"], streaming=False)
    try:
        return redacted_answer(completion_from_wire(body), failures)
    except MalformedAnswer as exc:
        raise failures.malformed(exc) from None


async def fragments(
    chunks: AsyncIterator[bytes],
    assembly: StreamAssembly,
    lines: SseLines,
    failures: ServerFailures,
) -> AsyncGenerator[str, None]:
    """Read server-sent events from `chunks` into `assembly`, yielding the text as it comes,
    redacted: what could begin a secret (a key cut across two fragments, or sent a character
    at a time) is held back until the next fragment, the answer's finish or its end says."""
    held = ""
    async for data in sse_data(lines.read(chunks, failures.too_large)):
        if data.strip() == "[DONE]":
            assembly.done = True
            break
        event = parse_json(data, "an SSE event", failures)
        if not isinstance(event, dict):
            raise failures.protocol("with an SSE event that is not an object", data)
        if event.get("error") is not None:  # some send "error": null
            raise failures.in_band(event["error"], streaming=True)
        try:
            fragment = assembly.feed(event)
        except MalformedAnswer as exc:
            raise failures.malformed(exc) from None
        held = failures.redact(held + fragment) if fragment else held
        keep = 0 if assembly.finished else failures.held_back(held)
        if len(held) > keep:  # whole once finished: a stall after it must not lose text
            yield held[: len(held) - keep]
            held = held[len(held) - keep :]
    if held:
        yield held


def assembled(assembly: StreamAssembly, lines: SseLines, failures: ServerFailures) -> ModelResponse:
    """The answer the events added up to; a `ProviderError` if they stopped short of one."""
    if not assembly.complete:
        if not lines.events and lines.sample.strip():
            raise failures.protocol(
                "to a streamed request with a body that is not server-sent events",
                cut(lines.sample, was_cut=len(lines.sample) > ERROR_BODY_BYTES),
            )
        raise failures.unfinished_stream()
    try:
        return redacted_answer(assembly.response(), failures)
    except MalformedAnswer as exc:
        raise failures.malformed(exc) from None


def parse_json(raw: bytes | str, what: str, failures: ServerFailures) -> Any:
    """`raw` as JSON; a `ProviderError` naming `what` when it is not, or nests too deeply."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise failures.protocol(f"with {what} nested too deeply to read", _text(raw)) from None
    except ValueError:
        raise failures.protocol(f"with {what} that is not JSON", _text(raw)) from None


def redacted_answer(response: ModelResponse, failures: ServerFailures) -> ModelResponse:
    """`response` with the gateway's secrets redacted from its text, ids and arguments.

    A server that echoes the key inside what the model "said" would otherwise put it in
    the journal, and in every later request. The same object when there is nothing to do.
    """
    if not failures.secrets:
        return response
    redact = failures.redact
    text = redact(response.text) if response.text is not None else None
    calls = tuple(
        ToolCall(redact(call.id), redact(call.name), _redacted(call.arguments, redact))
        for call in response.tool_calls
    )
    if text == response.text and calls == response.tool_calls:
        return response
    return dataclasses.replace(response, text=text, tool_calls=calls)


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """A JSON value with the secrets redacted from every string in it (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    if isinstance(value, dict):
        return {redact(k): _redacted(v, redact) for k, v in value.items()}
    return value


def is_json(response: httpx.Response) -> bool:
    """Whether the response says its body is JSON (`application/json`, `…+json`)."""
    kind: str = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def once(body: bytes) -> AsyncIterator[bytes]:
    """`body` as a stream of one chunk."""
    yield body


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw


async def until(deadline: float, items: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """`items`, each awaited no later than the event loop's time `deadline`, after which
    `TimeoutError` is raised. The bound never spans a `yield`, so it never cancels the
    consumer's own work."""
    while True:
        async with asyncio.timeout_at(deadline):
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
        yield item
