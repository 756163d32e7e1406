"""Spans to a file: OTLP/JSON lines, the form an OpenTelemetry Collector's `otlpjsonfile`
receiver reads, written by `OtlpJsonFile` and read back by `read_otlp_json`."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from .. import ConfigurationError

INSTALL = "pip install 'synaptum-lite[otel]' (or: uv sync --extra otel)"


def require_sdk() -> None:
    """Raise `ConfigurationError` saying how to install OpenTelemetry when it is missing."""
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            f"traces need OpenTelemetry's SDK, which is not installed (no module {exc.name!r}); "
            f"install the extra: {INSTALL}"
        ) from None


class OtlpJsonFile:
    """A span exporter (the SDK's `SpanExporter` interface) that appends each export to a
    file as one line of OTLP/JSON, the form an OpenTelemetry Collector's `otlpjsonfile`
    receiver reads. Each line reaches the operating system before `export` returns, so it
    survives a SIGKILL that follows. Raises `ConfigurationError` when the extra is missing."""

    def __init__(self, path: str | Path) -> None:
        require_sdk()
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    def export(self, spans: Any) -> Any:
        from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped,unused-ignore]
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        message = MessageToDict(encode_spans(spans))
        _hex_ids(message)
        try:
            with self.path.open("a", encoding="utf-8") as file:
                file.write(json.dumps(message, ensure_ascii=False) + "\n")
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _hex_ids(node: Any) -> None:
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON writes base64."""
    if isinstance(node, list):
        for item in node:
            _hex_ids(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)


def read_otlp_json(path: str | Path) -> list[dict[str, Any]]:
    """The spans in a file of OTLP/JSON lines (as `OtlpJsonFile` writes), each as a dict:
    `name`, `trace_id`, `span_id`, `parent_id` (hex, or None), `attributes`, `links` (each
    with `trace_id`, `span_id`, `attributes`). A missing file holds no spans."""
    found: list[dict[str, Any]] = []
    file = Path(path)
    lines = file.read_text(encoding="utf-8").splitlines() if file.exists() else []
    for line in lines:
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    found.append(
                        {
                            "name": span["name"],
                            "trace_id": span["traceId"],
                            "span_id": span["spanId"],
                            "parent_id": span.get("parentSpanId") or None,
                            "attributes": _values(span.get("attributes", [])),
                            "links": [
                                {
                                    "trace_id": link["traceId"],
                                    "span_id": link["spanId"],
                                    "attributes": _values(link.get("attributes", [])),
                                }
                                for link in span.get("links", [])
                            ],
                        }
                    )
    return found


def _values(attributes: list[dict[str, Any]]) -> dict[str, Any]:
    """OTLP/JSON attributes (`[{key, value: {intValue: "3"}}]`) as a plain dict."""
    plain: dict[str, Any] = {}
    for item in attributes:
        value = item.get("value", {})
        if "intValue" in value:
            plain[item["key"]] = int(value["intValue"])
        else:
            plain[item["key"]] = next(iter(value.values()), None)
    return plain
