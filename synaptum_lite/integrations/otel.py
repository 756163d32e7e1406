"""OpenTelemetry traces of durable runs: live from the step stream, and from the journal after
the fact, for the pass a SIGKILL stopped before it sent anything.

Needs the `otel` extra (`pip install 'synaptum-lite[otel]'`): OpenTelemetry's SDK, and its
OTLP/HTTP exporter. Imported only when a trace is made, so the package works without it.

    exportador = otlp_exporter("http://127.0.0.1:4318")
    async for paso in traced(agente.stream(tarea, session=sesion), session=sesion,
                             exporter=exportador):
        ...
    await export_journal(almacen, "pedido-7", exportador)  # every pass, from the journal

One span per step attempt, following OpenTelemetry's GenAI semantic conventions (`chat` for
a model call, `execute_tool` for a tool or a delegation, `invoke_agent` for a pass over a
run, whose root span it is; a delegation's sub-run hangs under its step). Token counts are
set only where the provider measured them. `synaptum_lite.integrations.otel_spans` derives
the spans and says what the journal can and cannot tell (it has no clock, and no record of
where a pass began); this module hands them to any SDK `SpanExporter`.

Live, each span is sent as soon as it ends, as the SDK's `SimpleSpanProcessor` does: a pass
killed mid-run has sent the spans of the steps it finished and never its root. A send that
fails live is a warning, never an error: the run matters more than its trace, and the
journal can give the trace again. After the fact, a send that fails raises
`TraceExportFailed`.
"""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.parse
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .. import (
    ApprovalStep,
    Checkpointer,
    ConfigurationError,
    DelegationStep,
    FinalStep,
    Phase,
    Session,
    Step,
    SynaptumError,
    load_events,
)
from .otel_file import INSTALL, OtlpJsonFile, read_otlp_json, require_sdk
from .otel_spans import (
    MEASURED,
    Link,
    Pass,
    SpanData,
    attempt_trace,
    describe,
    final_attributes,
    journal_spans,
    outcome,
    replay_of,
    root_attributes,
    root_of,
    split_passes,
    sub_run_spans,
    trace_of,
    work_of,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExportResult


class SpanExporter(Protocol):
    """Where spans go: any of the SDK's span exporters, or `OtlpJsonFile`."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult: ...


__all__ = [
    "INSTALL",
    "OtlpJsonFile",
    "SpanExporter",
    "TraceExportFailed",
    "TraceExportWarning",
    "export_journal",
    "otlp_exporter",
    "read_otlp_json",
    "to_otel",
    "traced",
]

SCOPE = "synaptum_lite.integrations.otel"


class TraceExportFailed(SynaptumError):
    """Spans from a journal could not be sent; the journal, which they came from, is intact."""

    def __init__(self, destination: str, spans: int, detail: str) -> None:
        self.destination, self.spans, self.detail = destination, spans, detail
        super().__init__(
            f"{spans} spans could not be sent to {destination} ({detail}); nothing is lost, the "
            "journal still holds the run: export it again once a receiver listens there "
            "(synaptum-lite export STORE RUN --otel URL)"
        )


class TraceExportWarning(UserWarning):
    """A live pass could not send a span; the run went on, and its journal has the trace."""


def _sdk() -> Any:
    """OpenTelemetry's SDK. Raises `ConfigurationError` saying how to install it."""
    require_sdk()
    import opentelemetry.sdk.trace as sdk_trace

    return sdk_trace


def to_otel(spans: list[SpanData]) -> list[ReadableSpan]:
    """The SDK's form of derived spans, for any `SpanExporter`."""
    sdk_trace = _sdk()
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    resource = Resource.create({"service.name": "synaptum-lite"})
    scope = InstrumentationScope(SCOPE)

    def context(trace_id: int, span_id: int) -> trace.SpanContext:
        return trace.SpanContext(trace_id, span_id, False, trace.TraceFlags(1))

    made = []
    for span in spans:
        links = [
            trace.Link(context(link.trace_id, link.span_id), {"synaptum.link": link.reason})
            for link in span.links
        ]
        status = (
            trace.Status(trace.StatusCode.ERROR, span.error)
            if span.error is not None
            else trace.Status(trace.StatusCode.UNSET)
        )
        parent = context(span.trace_id, span.parent_id) if span.parent_id else None
        kind = trace.SpanKind.CLIENT if span.client else trace.SpanKind.INTERNAL
        made.append(
            sdk_trace.ReadableSpan(
                span.name,
                context=context(span.trace_id, span.span_id),
                parent=parent,
                resource=resource,
                attributes=span.attributes,
                links=links,
                kind=kind,
                status=status,
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=scope,
            )
        )
    return made


# ── where spans go: an OTLP/HTTP receiver, or a file ────────────────────────────────────────


def otlp_exporter(endpoint: str, *, timeout: float = 10.0) -> SpanExporter:
    """The SDK's OTLP/HTTP exporter to `endpoint`: a collector's base URL
    (`http://127.0.0.1:4318`, to which `/v1/traces` is added) or the full traces URL.

    Raises `ConfigurationError` for a URL that is not http(s), or when the extra is missing."""
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"an OTLP/HTTP endpoint is an http(s) URL such as http://127.0.0.1:4318, got "
            f"{endpoint!r}"
        )
    _sdk()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ConfigurationError(
            f"OTLP/HTTP needs OpenTelemetry's exporter, which is not installed (no module "
            f"{exc.name!r}); install the extra: {INSTALL}"
        ) from None
    if parts.path in ("", "/"):
        endpoint = urllib.parse.urlunsplit(parts._replace(path="/v1/traces"))
    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout)


def send(exporter: SpanExporter, spans: list[SpanData]) -> None:
    """Export `spans`. Raises `TraceExportFailed` when the exporter says it failed."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    if exporter.export(to_otel(spans)) is not SpanExportResult.SUCCESS:
        raise TraceExportFailed(_destination(exporter), len(spans), _why(exporter))


def _destination(exporter: Any) -> str:
    return str(getattr(exporter, "_endpoint", None) or exporter)


def _why(exporter: Any) -> str:
    """Why an export failed, as far as asking the endpoint again tells."""
    url = getattr(exporter, "_endpoint", None)
    if not isinstance(url, str):
        return "the exporter reported a failure"
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=5):
            pass
    except OSError as exc:
        return f"{parts.hostname}:{port} is unreachable: {exc.strerror or exc}"
    return "the receiver refused the spans"


# ── after the fact: from the journal ────────────────────────────────────────────────────────


async def export_journal(
    checkpointer: Checkpointer,
    run_id: str,
    exporter: SpanExporter,
    *,
    start_ns: int | None = None,
) -> list[SpanData]:
    """Send the trace the journal of `run_id` gives (every pass, replays, sub-runs) and
    return its spans. Times are synthetic, in the journal's order from `start_ns` (default:
    now), and marked so (`synaptum.time`: `journal_order`).

    Raises `ConfigurationError` for a run the store does not hold, `TraceExportFailed` when
    the exporter cannot send."""
    start = time.time_ns() if start_ns is None else start_ns
    spans = await journal_spans(checkpointer, run_id, start_ns=start)
    send(exporter, spans)
    return spans


# ── live: a consumer of the step stream ─────────────────────────────────────────────────────

Item = TypeVar("Item")


async def traced(
    steps: AsyncIterator[Item],
    *,
    session: Session,
    exporter: SpanExporter,
    clock: Callable[[], int] = time.time_ns,
) -> AsyncIterator[Item]:
    """Yield what `steps` (`agent.run(...)` or `agent.stream(...)` on `session`) yields,
    sending a span for each step as it ends, and the pass's root span when the pass ends.

    Times are `clock()`'s (nanoseconds) when each event reaches this consumer, marked
    `measured`; a delegation's sub-run is read from its journal when the delegation
    completes, with synthetic times inside the delegation's span. Closing this iterator
    closes `steps`."""
    live = _LivePass(session, exporter, clock)
    await live.begin()
    failure: BaseException | None = None
    try:
        async for item in steps:
            await live.see(item)
            yield item
    except BaseException as exc:
        failure = exc
        raise
    finally:
        aclose = getattr(steps, "aclose", None)
        if aclose is not None:
            await aclose()
        live.end(failure)


class _LivePass:
    """What a live pass has seen: its root span, the attempts still open."""

    def __init__(self, session: Session, exporter: SpanExporter, clock: Callable[[], int]):
        self.checkpointer, self.run_id = session.checkpointer, session.run_id
        self.exporter, self.clock = exporter, clock
        self.agent: dict[str, Any] = {}
        self.open: dict[str, tuple[int, Step]] = {}
        self.warned = False

    async def begin(self) -> None:
        """Read what the journal holds before this pass: its passes, where this one begins."""
        state = await self.checkpointer.load(self.run_id)
        events = await load_events(self.checkpointer, self.run_id) if state.header else []
        self.before: list[Pass] = split_passes(events)
        self.traces = {p.first_seq: trace_of(self.run_id, p.first_seq) for p in self.before}
        self.first_seq = state.next_seq
        self.trace_id = trace_of(self.run_id, self.first_seq)
        self.traces[self.first_seq] = self.trace_id
        number = len(self.before) + 1
        links = []
        if self.before:
            last = self.before[-1].first_seq
            links.append(Link(self.traces[last], root_of(self.run_id, last), "previous_pass"))
        self.root = SpanData(
            "invoke_agent",
            self.trace_id,
            root_of(self.run_id, self.first_seq),
            None,
            False,
            self.clock(),
            0,
            {"synaptum.pass": number, "synaptum.time": MEASURED},
            links,
        )

    async def see(self, item: object) -> None:
        if not isinstance(item, Step):
            return  # a TextFragment: part of the model step's span
        if not self.agent:
            state = await self.checkpointer.load(self.run_id)
            self.agent = state.header["agent"] if state.header else {}
            self.root.name = f"invoke_agent {self.agent.get('name', '')}"
            self.root.attributes |= root_attributes(
                self.run_id, self.agent, self.root.attributes["synaptum.pass"]
            )
        now = self.clock()
        if isinstance(item, FinalStep):
            self.root.attributes |= final_attributes(item)
        elif item.replayed:
            self._send([self._replay(item, now)])
        elif item.phase is Phase.ATTEMPTED and isinstance(item, ApprovalStep):
            self._send([self._work(item, now, now, None)])
        elif item.phase is Phase.ATTEMPTED:
            self.open[item.step_id] = (now, item)
        elif item.phase is Phase.COMPLETED:
            # a call refused before it ran is yielded once, completed: its span has no length
            start, attempted = self.open.pop(item.step_id, (now, item))
            work = self._work(attempted, start, now, item)
            spans = [work]
            if isinstance(item, DelegationStep):
                where = [
                    attempt_trace(self.before, self.traces, item.step_id, a)
                    for a in range(1, item.attempt)
                ] + [self.trace_id]
                spans += await sub_run_spans(self.checkpointer, item, where, work)
            self._send(spans)

    def _replay(self, step: Step, now: int) -> SpanData:
        name, client, attributes = describe(step, self.agent)
        attempt = 1 if isinstance(step, ApprovalStep) else step.attempt
        work = work_of(self.run_id, step.step_id, attempt)
        did = Link(
            attempt_trace(self.before, self.traces, step.step_id, attempt), work, "replay_of"
        )
        attributes |= {
            "synaptum.replayed": True,
            "synaptum.pass": self.root.attributes["synaptum.pass"],
            "synaptum.time": MEASURED,
        }
        span_id = replay_of(self.run_id, step.step_id, self.first_seq)
        return SpanData(
            name, self.trace_id, span_id, self.root.span_id, client, now, now, attributes, [did]
        )

    def _work(self, attempted: Step, start: int, end: int, done: Step | None) -> SpanData:
        name, client, attributes = describe(attempted, self.agent)
        extra, error = outcome(done)
        if isinstance(attempted, ApprovalStep):
            error = None  # waiting for a person is how an approval's pass ends
        attributes |= extra | {
            "synaptum.replayed": False,
            "synaptum.pass": self.root.attributes["synaptum.pass"],
            "synaptum.step.attempt": attempted.attempt,
            "synaptum.time": MEASURED,
        }
        span_id = work_of(self.run_id, attempted.step_id, attempted.attempt)
        parent = self.root.span_id
        return SpanData(
            name, self.trace_id, span_id, parent, client, start, end, attributes, error=error
        )

    def end(self, failure: BaseException | None) -> None:
        """Send the attempts left open (their pass ended first) and the root span; nothing
        when the pass yielded no step (refused before it began: busy, changed, unknown)."""
        if not self.agent:
            return
        now = self.clock()
        spans = [self._work(attempted, start, now, None) for start, attempted in self.open.values()]
        self.root.end_ns = now
        if failure is not None and not isinstance(failure, GeneratorExit):
            self.root.error = f"{type(failure).__name__}: {str(failure)[:200]}"
        self._send([*spans, self.root])

    def _send(self, spans: list[SpanData]) -> None:
        try:
            send(self.exporter, spans)
        except (TraceExportFailed, ConfigurationError) as exc:
            if not self.warned:  # once a pass: the next ones would say the same
                warnings.warn(f"{exc} (the run goes on)", TraceExportWarning, stacklevel=2)
                self.warned = True
        except Exception as exc:  # an exporter's own error: the run still goes on
            with contextlib.suppress(Exception):
                warnings.warn(f"an exporter failed: {exc!r}", TraceExportWarning, stacklevel=2)
