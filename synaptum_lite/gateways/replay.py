"""Playing a recording back through the real HTTP adapter, with no server.

`ReplayGateway` is `http.OpenAICompatibleGateway` whose httpx transport is a `ReplayTransport`:
the adapter builds its request, httpx hands it to the transport, and the transport answers
with the recorded status, headers and raw chunks (`recording`), one exchange per request, in
order. Everything above the transport is the live code path: httpx's client (its headers,
its decompression), the adapter's status classification, its bounded reads, SSE line
splitting across the recorded chunk boundaries, stream assembly, redaction. What is not run is
below it: the socket and the HTTP/1.1 parser, which are httpcore's, not the adapter's.

Why a transport and not a loopback server: a transport hands the adapter each recorded chunk
as one read, so the chunk boundaries a replay tests are the recorded ones; over a socket, TCP
may join or split them. (It is httpx's own seam for this, as `httpx.MockTransport` is.)

Before answering, the transport checks that the request is the recorded one (method, path,
kept headers, JSON body). The first that is not raises `RecordingMismatch`, naming the
request's index and the first JSON path where it differs (`$.messages[1].content`), and how
to record again. A request past the recording's end is refused the same way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .http import OpenAICompatibleGateway
from .recording import (
    FORMAT,
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    RecordingError,
    SecretInRecording,
    chunk_from_json,
    request_record,
    secret_in,
)

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]

#: What a mismatch tells its reader to do when the caller names no command.
RECORD_AGAIN = "record it again against the server with RecordingGateway"


class RecordingMismatch(RecordingError):
    """A request differs from the one recorded at its position: the recording is stale."""

    def __init__(
        self, recording: str, index: int, where: str, recorded: Any, sent: Any, again: str
    ) -> None:
        self.recording, self.index, self.where = recording, index, where
        self.recorded, self.sent = recorded, sent
        super().__init__(
            f"request {index} differs from exchange {index} of {recording} at {where}: "
            f"recorded {_shown(recorded)}, sent {_shown(sent)}; the adapter or the request "
            f"changed since it was recorded: {again}"
        )


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:120] + " …"


_ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "<absent>"})()


def first_difference(recorded: Any, sent: Any, where: str = "$") -> tuple[str, Any, Any] | None:
    """The first JSON path at which `sent` differs from `recorded` (objects by sorted key, then
    arrays by position), with both values there; `None` when they are equal. A value of
    another JSON type differs (`1` is not `true`, nor `1.0`); a missing one is `_ABSENT`."""
    if type(recorded) is not type(sent):
        return where, recorded, sent
    if isinstance(recorded, dict):
        for key in sorted(set(recorded) | set(sent)):
            step = f"{where}.{key}" if key.isidentifier() else f"{where}[{json.dumps(key)}]"
            found = first_difference(recorded.get(key, _ABSENT), sent.get(key, _ABSENT), step)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list):
        for position in range(max(len(recorded), len(sent))):
            found = first_difference(
                recorded[position] if position < len(recorded) else _ABSENT,
                sent[position] if position < len(sent) else _ABSENT,
                f"{where}[{position}]",
            )
            if found is not None:
                return found
        return None
    return None if recorded == sent else (where, recorded, sent)


def read_recording(path: Path | str) -> list[dict[str, Any]]:
    """The exchanges of the recording at `path`, in order.

    Raises `RecordingError` naming the line that is not the format, and `SecretInRecording`
    for a request header a recording never keeps (`Authorization`) or a credential anywhere.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"cannot read the recording {path}: {exc}") from None
    exchanges: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            if number == 1:
                if record != FORMAT:
                    raise ValueError(f"its header is not {json.dumps(FORMAT)}")
                continue
            index, request, response = record["index"], record["request"], record["response"]
            if index != len(exchanges):
                raise ValueError(f"exchange {index} where exchange {len(exchanges)} belongs")
            chunks = [chunk_from_json(c) for c in response["chunks"]]
            headers = {str(k): str(v) for k, v in response["headers"].items()}
            status = int(response["status"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RecordingError(
                f"line {number} of the recording {path} is not an exchange as RecordingGateway "
                f"writes them ({type(exc).__name__}: {exc}); record it again"
            ) from None
        unknown = set(request.get("headers", {})) - set(REQUEST_HEADERS)
        if unknown or secret_in(line, ()):
            where = f"the request header {sorted(unknown)[0]}" if unknown else "its text"
            raise SecretInRecording(str(path), index, where)
        exchanges.append({**record, "response": {**response, "headers": headers}})
        exchanges[-1]["response"].update(status=status, chunks=chunks)
    return exchanges


class ReplayTransport(httpx.AsyncBaseTransport if httpx else object):  # type: ignore[misc]
    """An httpx transport answering each request with the next exchange of a recording.

    `played` counts the exchanges answered, across the clients the adapter makes (one per
    call); `unplayed` lists the ones left. Exchanges are played in order: calls made
    concurrently through one replay would take them in whatever order they arrive.
    """

    def __init__(self, path: Path | str, *, record_again: str = RECORD_AGAIN) -> None:
        self.path = Path(path)
        self.exchanges = read_recording(self.path)
        self.record_again = record_again
        self.played = 0

    @property
    def unplayed(self) -> list[int]:
        return list(range(self.played, len(self.exchanges)))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index, sent = self.played, await request_record(request)
        if index >= len(self.exchanges):
            where = f"its end (it holds {len(self.exchanges)} exchanges)"
            raise RecordingMismatch(
                str(self.path), index, where, _ABSENT, sent["body"], self.record_again
            )
        recorded = self.exchanges[index]
        found = first_difference(recorded["request"], sent)
        if found is not None:
            where, was, now = found
            raise RecordingMismatch(
                str(self.path), index, _named(where), was, now, self.record_again
            )
        self.played += 1
        response = recorded["response"]
        return httpx.Response(
            response["status"],
            headers=[(k, v) for k, v in response["headers"].items() if k in RESPONSE_HEADERS],
            stream=_RecordedStream(response["chunks"], response.get("dropped")),
            request=request,
        )


def _named(where: str) -> str:
    """A difference's place as its reader knows it: a JSON path in the body, or a part of the
    request (`$.body.model` is `$.model`; `$.headers.accept` is `its header accept`)."""
    if where.startswith("$.body"):
        return "$" + where[len("$.body") :]
    part = where[2:].replace("headers.", "header ").replace("headers[", "header [")
    return f"its {part}"


class _RecordedStream(httpx.AsyncByteStream if httpx else object):  # type: ignore[misc]
    """The recorded chunks of a body, each one read as the network delivered it; then, if the
    connection dropped there, the httpx exception it dropped with."""

    def __init__(self, chunks: list[bytes], dropped: dict[str, str] | None) -> None:
        self._chunks, self._dropped = chunks, dropped

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        if self._dropped is not None:
            error = getattr(httpx, str(self._dropped.get("error")), None)
            if not (isinstance(error, type) and issubclass(error, httpx.TransportError)):
                error = httpx.ReadError  # not one httpx raises for a dropped connection
            raise error(str(self._dropped.get("message", "")))


class ReplayGateway(OpenAICompatibleGateway):
    """`OpenAICompatibleGateway` answered by a recording instead of a server.

    `recording` is a file `RecordingGateway` wrote. `record_again` is what a
    `RecordingMismatch` tells its reader to do (the command that records the file again).
    Takes the adapter's other options (`model`, `tools`, `policy`, bounds). `base_url` is by
    default `http://replay.invalid` plus the recorded path's root (`/v1`): a name that never
    resolves, so nothing can reach a network, and the one the adapter's messages show.
    """

    def __init__(
        self,
        recording: Path | str,
        *,
        base_url: str | None = None,
        record_again: str = RECORD_AGAIN,
        **options: Any,
    ) -> None:
        if "transport" in options:
            raise ConfigurationError("ReplayGateway answers from its recording; pass no transport=")
        if httpx is None:  # the base class says how to install it
            super().__init__("http://replay.invalid", **options)
        self.replay = ReplayTransport(recording, record_again=record_again)
        if base_url is None:
            first = self.replay.exchanges[0]["request"]["path"] if self.replay.exchanges else ""
            base_url = "http://replay.invalid" + first.removesuffix("/chat/completions")
        super().__init__(base_url, transport=self.replay, **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(recording={str(self.replay.path)!r}, model={self.model!r})"
