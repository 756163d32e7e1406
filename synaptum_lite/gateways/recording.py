"""Recording a real server's raw HTTP exchanges to a file, with no credential in it.

`RecordingGateway` is `http.OpenAICompatibleGateway` with one change: its httpx transport is
a `RecordingTransport`, which sends every request to the server as the adapter built it and
hands the adapter the server's response as it arrives, chunk by chunk, while it keeps a copy.
When the adapter closes the response, the exchange is written as one JSON line. Nothing the
adapter does differs from a live call: it is a live call. `replay.ReplayGateway` plays a file
back through the same adapter.

The file (JSON lines, UTF-8, keys sorted, one line per exchange after a header line):

    {"format": "synaptum-lite/http-recording", "version": 1}
    {"index": 0,
     "request": {"method": "POST", "path": "/v1/chat/completions",
                 "headers": {"accept": ..., "content-type": ...}, "body": {...the JSON sent}},
     "response": {"status": 200, "headers": {"content-type": ...},
                  "chunks": ["data: {...}\\n\\n", ...]}}

Headers are kept by name from a short list (`REQUEST_HEADERS`, `RESPONSE_HEADERS`: what the
adapter reads), never the rest: no `Authorization`, no cookie, no server's `Date`. A response's
`chunks` are its raw bytes as the network delivered them (still compressed if the server
compressed them): an SSE stream keeps every chunk boundary, since where a chunk ends is what
the adapter's line splitting must survive; any other body is one chunk. A chunk that is not
UTF-8 is written as `{"base64": ...}`. The chunks are those the adapter read: an adapter that
stops reading (at `[DONE]`, or a stream its caller closed) stops at the same point in a
replay, so what it never read is not needed. A connection that dropped mid-body is recorded
as `"dropped": {"error": <the httpx exception>, "message": ...}`, raised again by a replay
after the same chunks. What is not recorded: a request that got no response at all (refused,
timed out before the status), and time (a replay never waits, so a timeout is not replayed).

No secret of the gateway (its API key, the password of its base URL) is ever written, in any
form a server may echo it (`redaction.secret_patterns`): an exchange holding one is refused
whole with `SecretInRecording`, before the request is sent when the request holds it.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .http import OpenAICompatibleGateway
from .redaction import redact

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]

FORMAT = {"format": "synaptum-lite/http-recording", "version": 1}

#: The request headers a recording keeps: what a server reads to know what it was sent.
REQUEST_HEADERS = ("accept", "content-type")

#: The response headers a recording keeps: the ones the HTTP adapter reads.
RESPONSE_HEADERS = ("content-encoding", "content-type", "location", "retry-after")

#: A credential as a header carries it: a bearer token (with a digit: "Bearer authentication"
#: is prose) or Basic's base64 of `user:password`.
_CREDENTIAL = re.compile(r"\b(Bearer|Basic)\s+([A-Za-z0-9._~+/=-]{8,})")


class RecordingError(ConfigurationError):
    """A recording of HTTP exchanges cannot be written or played back as asked."""


class SecretInRecording(RecordingError):
    """An exchange to record, or a recording read back, holds a credential: refused whole."""

    def __init__(self, recording: str, index: int, where: str) -> None:
        self.recording, self.index, self.where = recording, index, where
        super().__init__(
            f"exchange {index} of {recording} holds a credential in {where}, so it is not "
            "recorded (nor read back): a recording is shared and kept in a repository; record "
            "with a key the server does not echo, or with no key, and record again"
        )


@dataclass
class Exchange:
    """One request and its response, as the recording holds them."""

    index: int
    request: dict[str, Any]
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    dropped: dict[str, str] | None = None

    def to_line(self) -> str:
        streamed = self.headers.get("content-type", "").startswith("text/event-stream")
        chunks = self.chunks if streamed else [b"".join(self.chunks)] if self.chunks else []
        response: dict[str, Any] = {
            "status": self.status,
            "headers": self.headers,
            "chunks": [_chunk_to_json(chunk) for chunk in chunks],
        }
        if self.dropped is not None:
            response["dropped"] = self.dropped
        record = {"index": self.index, "request": self.request, "response": response}
        return json.dumps(record, sort_keys=True, ensure_ascii=False)


def _chunk_to_json(chunk: bytes) -> str | dict[str, str]:
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(chunk).decode("ascii")}


def chunk_from_json(value: Any) -> bytes:
    """A chunk as `Exchange.to_line` wrote it; `ValueError` for anything else."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"], validate=True)
    raise ValueError(f"a chunk is text or {{'base64': ...}}, not {value!r}")


def kept_headers(headers: httpx.Headers, names: tuple[str, ...]) -> dict[str, str]:
    """The headers named in `names`, lower-cased, in that order; every other one dropped."""
    return {name: headers[name] for name in names if name in headers}


async def request_record(request: httpx.Request) -> dict[str, Any]:
    """What a recording keeps of `request`: method, path, kept headers and body (its JSON, or
    `{"text": ...}` for a body that is not JSON)."""
    raw = await request.aread()
    body: Any
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = {"text": raw.decode("utf-8", errors="replace")}
    return {
        "method": request.method,
        "path": request.url.raw_path.decode("ascii"),
        "headers": kept_headers(request.headers, REQUEST_HEADERS),
        "body": body,
    }


def secret_in(text: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    """Whether `text` holds a secret of `patterns` in any form, or a credential header's value."""
    return redact(text, patterns) != text or any(map(_is_credential, _CREDENTIAL.finditer(text)))


def _is_credential(found: re.Match[str]) -> bool:
    scheme, token = found.groups()
    if scheme == "Bearer":
        return any(c.isdigit() for c in token)
    try:
        return b":" in base64.b64decode(token, validate=True)
    except ValueError:
        return False


class RecordingTransport(httpx.AsyncBaseTransport if httpx else object):  # type: ignore[misc]
    """An httpx transport that sends each request to the server and records the exchange to
    `path` (started afresh, with its header line, by `start()`).

    `secrets` are the gateway's (`redaction.secret_patterns`), set by `RecordingGateway`. The
    connection pool is made per client and closed with it, as the adapter's own clients are
    (one per call: a pool belongs to one event loop); the exchange count runs across clients.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.secrets: tuple[re.Pattern[str], ...] = ()
        self.exchanges = 0
        self._inner: httpx.AsyncHTTPTransport | None = None

    def start(self) -> None:
        """Start the file afresh: its header line, and no exchange."""
        self.path.write_text(json.dumps(FORMAT, sort_keys=True) + "\n", encoding="utf-8")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = Exchange(self.exchanges, await request_record(request))
        self.exchanges += 1
        if secret_in(json.dumps(exchange.request, ensure_ascii=False), self.secrets):
            raise SecretInRecording(str(self.path), exchange.index, "its request")
        if self._inner is None:
            self._inner = httpx.AsyncHTTPTransport()
        response = await self._inner.handle_async_request(request)
        exchange.status = response.status_code
        exchange.headers = kept_headers(response.headers, RESPONSE_HEADERS)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_KeptStream(response.stream, exchange, self._write),
            extensions=response.extensions,
        )

    def _write(self, exchange: Exchange) -> None:
        line = exchange.to_line()
        if secret_in(line, self.secrets):
            raise SecretInRecording(str(self.path), exchange.index, "its response")
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")

    async def aclose(self) -> None:
        if self._inner is not None:
            inner, self._inner = self._inner, None
            await inner.aclose()


class _KeptStream(httpx.AsyncByteStream if httpx else object):  # type: ignore[misc]
    """A response body passed on as it arrives, each raw chunk kept; written once closed."""

    def __init__(self, inner: httpx.AsyncByteStream, exchange: Exchange, write: Any) -> None:
        self._inner, self._exchange, self._write = inner, exchange, write
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._exchange.chunks.append(chunk)
                yield chunk
        except httpx.TransportError as exc:
            # a replay raises it again at this point
            self._exchange.dropped = {"error": type(exc).__name__, "message": str(exc)}
            raise

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._inner.aclose()
        self._write(self._exchange)


class RecordingGateway(OpenAICompatibleGateway):
    """`OpenAICompatibleGateway` that records every exchange with the server to `recording`.

    Takes the same options (`base_url`, `model`, `api_key`, `tools`, `policy`, bounds); each
    call is the live call it would be without recording. The file is started afresh. Raises
    `SecretInRecording` from a call whose exchange holds the gateway's key or password (the
    request is then not sent when the request held it; the file keeps the exchanges before).
    """

    def __init__(self, base_url: str, recording: Path | str, **options: Any) -> None:
        if "transport" in options:
            raise ConfigurationError(
                "RecordingGateway makes its own transport (it records what goes through it); "
                "pass no transport="
            )
        if httpx is None:  # the base class says how to install it
            super().__init__(base_url, **options)
        self.recorder = RecordingTransport(recording)
        super().__init__(base_url, transport=self.recorder, **options)
        self.recorder.secrets = self._secrets  # the key's and password's every form
        self.recorder.start()  # only once the options are known good: nothing lost before

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, recording={str(self.recorder.path)!r})"
