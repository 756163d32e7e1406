"""The key reaches no one by the two ways no other test watched: the text of a connection-level
error, and the text fragments a streamed answer yields as it arrives.

A connection-level error carries what the HTTP library says, and h11 quotes the bytes it could
not read: a server that echoes the `Authorization` header in a header line that is not one
(`illegal header line: bytearray(b'X-Echo Bearer sk-…')`), in a chunk header or in its status
line puts the key in the `RemoteProtocolError` the gateway turns into a `ProviderError`. A
streamed answer is redacted whole before it is journaled, but its fragments reach the caller
first, one by one: a key sent in one fragment, or cut across two, must not show in them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from synaptum_lite import (  # noqa: E402
    Agent,
    FinalStep,
    ModelStep,
    ProviderError,
    Session,
    SqliteCheckpointer,
    TextFragment,
)
from synaptum_lite.gateways.http import OpenAICompatibleGateway  # noqa: E402

from .conftest import KEY, chunk  # noqa: E402
from .fault_server import Exchange, FaultServer  # noqa: E402
from .test_http_gateway import request  # noqa: E402


def shown(exc: BaseException) -> str:
    """Everything a person or a log could see of an exception, its causes included."""
    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(exc.args)


# ── a connection-level error that quotes what the server sent ────────────────────────────────


def _echoed(ex: Exchange) -> bytes:
    return ex.headers.get("authorization", "").encode()


async def header_line_without_colon(ex: Exchange) -> None:
    """A header line h11 cannot read, holding the echoed credential; then the server leaves."""
    ex.writer.write(b"HTTP/1.1 200 OK\r\nX-Echo " + _echoed(ex) + b"\r\n\r\n")
    await ex.writer.drain()


async def status_line_with_the_key(ex: Exchange) -> None:
    ex.writer.write(b"HTTP/1.1 2OO " + _echoed(ex) + b"\r\n\r\n")
    await ex.writer.drain()


async def chunk_header_with_the_key(ex: Exchange) -> None:
    """A chunked body whose chunk header is the echoed credential, mid-answer."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    ex.writer.write(head + b"\r\n" + _echoed(ex) + b"\r\n")
    await ex.writer.drain()


async def chunk_header_with_the_key_while_streaming(ex: Exchange) -> None:
    await ex.start_sse()
    await ex.send_event(chunk({"content": "El saldo "}))
    ex.writer.write(_echoed(ex) + b"\r\n")
    await ex.writer.drain()


CONNECTION = {
    f.__name__: f
    for f in (
        header_line_without_colon,
        status_line_with_the_key,
        chunk_header_with_the_key,
        chunk_header_with_the_key_while_streaming,
    )
}


@pytest.fixture(scope="module")
def server() -> Any:
    fault_server = FaultServer(CONNECTION).start()
    yield fault_server
    fault_server.stop()


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("scenario", sorted(CONNECTION))
def test_a_connection_error_that_quotes_the_key_is_redacted_in_the_error_and_the_log(
    server: FaultServer, scenario: str, streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    model = OpenAICompatibleGateway(server.url(scenario), api_key=KEY)

    async def call() -> Any:
        if streaming:
            return [item async for item in model.stream(request())]
        return await model.complete(request())

    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as caught:
        asyncio.run(call())

    error = caught.value
    assert error.retryable  # the connection was dropped: a transport failure
    # what h11 quoted is there, the key is not
    assert "(RemoteProtocolError: illegal " in str(error)
    assert "Bearer [redacted]" in str(error)
    assert KEY not in shown(error)
    assert KEY not in caplog.text


# ── the fragments of a streamed answer ──────────────────────────────────────────────────────


def stream_of(pieces: list[str]) -> Any:
    async def answer(ex: Exchange) -> None:
        await ex.start_sse()
        await ex.send_event(chunk({"role": "assistant"}))
        key = ex.headers["authorization"].removeprefix("Bearer ")
        for piece in pieces:
            await ex.send_event(chunk({"content": piece.replace("KEY", key)}))
        await ex.send_event(chunk({}, "stop"))
        await ex.send_event("[DONE]")
        await ex.end_sse()

    return answer


HALF = len(KEY) // 2
STREAMS = {
    "whole_in_one_fragment": ["Tu clave ", "es KEY, ", "guárdala."],
    # the key cut in two: each half alone is no key, and each alone would be let through
    "cut_across_two_fragments": ["Tu clave es ", KEY[:HALF], KEY[HALF:] + ", guárdala."],
    "one_character_at_a_time": ["Clave: ", *KEY, "."],
    "escaped_and_cut": ["Clave: ", json.dumps(KEY)[1:8].replace("-", "\\u002d"), KEY[7:], "."],
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_no_streamed_fragment_shows_the_key_nor_do_they_joined(
    server: FaultServer, tmp_path: Path, name: str
) -> None:
    pieces = [p if p != "KEY" else KEY for p in STREAMS[name]]
    scenario = f"fragments_{name}"
    server.scenarios[scenario] = stream_of(pieces)
    model = OpenAICompatibleGateway(server.url(scenario), api_key=KEY)
    agent = Agent("cajero", model="modelo-x", instructions="Cajero.")
    session = Session("run-1", model, SqliteCheckpointer(tmp_path / "runs.db"))

    async def drive() -> list[Any]:
        return [step async for step in agent.stream("¿Mi clave?", session=session)]

    steps = asyncio.run(drive())

    fragments = [s.text for s in steps if isinstance(s, TextFragment)]
    answer = next(s for s in steps if isinstance(s, ModelStep) and s.response is not None)
    final = steps[-1]
    assert isinstance(final, FinalStep) and answer.response is not None
    assert fragments  # it streamed
    joined = "".join(fragments)
    assert KEY not in joined, fragments
    assert all(KEY[:HALF] not in f and KEY[HALF:] not in f for f in fragments), fragments
    assert "[redacted]" in joined
    # what the caller saw as it came is what was journaled
    assert joined == answer.response.text == final.text
    assert KEY.encode() not in (tmp_path / "runs.db").read_bytes()
