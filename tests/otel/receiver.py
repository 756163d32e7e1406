"""A real OTLP/HTTP receiver for the tests: an HTTP server on 127.0.0.1 that decodes each
`ExportTraceServiceRequest` (protobuf) with opentelemetry-proto, independently of the code
under test, and keeps the spans it received."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True)
class Received:
    """One span as it arrived: ids in hex, attributes and links decoded."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    links: tuple[tuple[str, str, str], ...]  # (trace id, span id, synaptum.link)
    status_code: int
    start_ns: int
    end_ns: int

    @property
    def kind(self) -> str:
        return self.name.split(" ")[0]


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def decode(body: bytes) -> list[Received]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                attributes = {a.key: _value(a.value) for a in span.attributes}
                links = tuple(
                    (
                        link.trace_id.hex(),
                        link.span_id.hex(),
                        {a.key: _value(a.value) for a in link.attributes}.get("synaptum.link", ""),
                    )
                    for link in span.links
                )
                found.append(
                    Received(
                        span.name,
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex() or None,
                        attributes,
                        links,
                        span.status.code,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                    )
                )
    return found


class Receiver:
    """What the server received, in arrival order; `requests` counts the POSTs."""

    def __init__(self) -> None:
        self.spans: list[Received] = []
        self.requests = 0
        self.lock = threading.Lock()
        self.url = ""

    def take(self) -> list[Received]:
        """The spans received so far, forgetting them."""
        with self.lock:
            spans, self.spans = self.spans, []
        return spans


@contextlib.contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """An OTLP/HTTP receiver on 127.0.0.1 (a free port), stopped when the block ends."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            ok = self.path == "/v1/traces"
            if ok:
                spans = decode(body)
                with receiver.lock:
                    receiver.spans += spans
                    receiver.requests += 1
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200 if ok else 404)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
