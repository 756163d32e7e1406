"""A run's trace as its journal tells it: passes, one span per step attempt, and the replays.

Standard library only: this module derives plain data (`SpanData`); `otel.py` hands it to
OpenTelemetry. Both paths of `otel.py` (live, and after the fact) name, identify and describe a
span here, so a span sent live and the same span rebuilt from the journal are one span.

What the journal records, and so what a trace can honestly say:

- **No clock.** An event is `(seq, step_id, phase, attempt, data)`; nothing says when. A
  span rebuilt from the journal has *synthetic* times that keep the journal's order and
  nothing else, and says so: `synaptum.time` is `journal_order` (live spans: `measured`).
- **No pass record.** A pass (one process driving the run until it ended or died) is found
  by evidence: a new pass begins at an *attempted* event whose attempt is above 1 (its
  earlier attempt never completed: the process that made it stopped), and after a person's
  decision (an approval answered, an uncertain step recorded or retried), which is written
  between passes. A kill *between* two steps leaves a journal identical to an uninterrupted
  run's, so the passes found are a lower bound, and such a pass is joined to the one before.
- **Replays.** A pass that starts reads back every step completed before it, in order, and
  does none of it again: each is a *replay* span (`synaptum.replayed` true, no usage), linked
  to the span of the attempt that did the work.

Identifiers are derived, never random: a pass's trace id from the run and the pass's first
position, a step attempt's span id from the run, the step and the attempt. Exporting the
same journal twice gives the same spans, and a replay's link points to a span whether or not
the process that made it lived to send it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .. import (
    ApprovalStep,
    Checkpointer,
    ConfigurationError,
    DelegationStep,
    FinalStep,
    ModelStep,
    Phase,
    Step,
    ToolStep,
    Usage,
    load_events,
)

MEASURED, SYNTHETIC = "measured", "journal_order"
"""The values of `synaptum.time`: times a live exporter saw, or the journal's order only."""


@dataclass(frozen=True, slots=True)
class Link:
    """A span link: to another span (maybe in another trace), and why (`synaptum.link`)."""

    trace_id: int
    span_id: int
    reason: str  # "previous_pass" or "replay_of"


@dataclass(slots=True)
class SpanData:
    """One span, ready for an exporter: OpenTelemetry's fields in plain Python."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    client: bool  # SpanKind.CLIENT (a model call leaves the process), else INTERNAL
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    links: list[Link] = field(default_factory=list)
    error: str | None = None  # the status description when the span ended in error


@dataclass(slots=True)
class Pass:
    """One pass over a run, as the journal shows it: where it began writing, what it wrote,
    and the completed steps it read back before that (what it replayed)."""

    number: int  # 1, 2, … in journal order
    first_seq: int
    events: list[tuple[int, Step]]
    replayed: list[Step]


def ident(*parts: object, size: int = 8) -> int:
    """A derived id of `size` bytes (8: span, 16: trace), never 0 (OpenTelemetry's invalid)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:size], "big") or 1


def trace_of(run_id: str, first_seq: int) -> int:
    """The trace of the pass over `run_id` that began writing at `first_seq`."""
    return ident("trace", run_id, first_seq, size=16)


def root_of(run_id: str, first_seq: int) -> int:
    """The root span of that pass (`invoke_agent`)."""
    return ident("pass", run_id, first_seq)


def work_of(run_id: str, step: str, attempt: int) -> int:
    """The span of one attempt of a step: the work, in the pass that made the attempt."""
    return ident("work", run_id, step, attempt)


def replay_of(run_id: str, step: str, first_seq: int) -> int:
    """The span of a step read back by the pass that began writing at `first_seq`."""
    return ident("replay", run_id, step, first_seq)


def by_a_person(event: Step) -> bool:
    """Whether a person wrote `event` (between passes), not a driving process."""
    if isinstance(event, ApprovalStep):
        return event.phase is not Phase.ATTEMPTED
    decision = event.decision if isinstance(event, ToolStep) else None
    return decision is not None and decision["action"] in ("record", "retry")


def split_passes(events: list[Step]) -> list[Pass]:
    """The passes a run's events show, in order (see the module's docstring)."""
    passes: list[Pass] = []
    current: Pass | None = None
    done: dict[str, Step] = {}  # completed steps so far, by id, in journal order
    for seq, event in enumerate(events):
        if by_a_person(event):
            current = None  # whatever the runtime writes next is a new pass
        elif current is None or (event.phase is Phase.ATTEMPTED and event.attempt > 1):
            current = Pass(len(passes) + 1, seq, [(seq, event)], list(done.values()))
            passes.append(current)
        else:
            current.events.append((seq, event))
        if event.phase is Phase.COMPLETED and not isinstance(event, FinalStep):
            done[event.step_id] = event
    return passes


# ── what a span says about a step ───────────────────────────────────────────────────────────


def usage_attributes(usage: Usage | None) -> dict[str, int]:
    """GenAI token counts, each only when measured: "not measured" is absent, never 0."""
    if usage is None:
        return {}
    counts = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
    }
    return {name: value for name, value in counts.items() if value is not None}


def describe(event: Step, agent: dict[str, Any]) -> tuple[str, bool, dict[str, Any]]:
    """A step's span name, whether it is a client span, and its attributes (GenAI semantic
    conventions, then `synaptum.*`), from any of its events. `agent` is the run header's."""
    common = {
        "gen_ai.agent.name": agent.get("name", ""),
        "gen_ai.conversation.id": event.run_id,
        "synaptum.run.id": event.run_id,
        "synaptum.step.id": event.step_id,
        "synaptum.step.kind": event.kind,
    }
    if isinstance(event, ModelStep):
        model = agent.get("model", "")
        chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
        return f"chat {model}", True, common | chat
    if isinstance(event, ApprovalStep):
        asked = {"gen_ai.tool.name": event.call.name, "gen_ai.tool.call.id": event.call.id}
        return f"approval {event.call.name}", False, common | asked
    if isinstance(event, ToolStep):
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.call.name,
            "gen_ai.tool.call.id": event.call.id,
            "gen_ai.tool.type": "function",
        }
        if isinstance(event, DelegationStep):
            tool["synaptum.sub_run.id"] = event.sub_run_id
        return f"execute_tool {event.call.name}", False, common | tool
    raise ValueError(f"step {event.step_id} ({event.kind}) has no span of its own")


def outcome(completed: Step | None) -> tuple[dict[str, Any], str | None]:
    """What an attempt's completion adds to its span: usage, decisions; and an error, if any
    (an attempt with no completion: its pass ended first, by a crash or a kill)."""
    if completed is None:
        return {"synaptum.step.completed": False}, "no completion in the journal: its pass ended"
    extra: dict[str, Any] = {"synaptum.step.completed": True}
    error = None
    if isinstance(completed, ModelStep) and completed.response is not None:
        extra |= usage_attributes(completed.response.usage)
    if isinstance(completed, DelegationStep):
        extra |= {
            f"synaptum.sub_run.{k.removeprefix('gen_ai.')}": v
            for k, v in usage_attributes(completed.usage).items()
        }
    if isinstance(completed, ToolStep):
        if completed.decision is not None:
            extra["synaptum.decision.action"] = completed.decision["action"]
            extra["synaptum.decision.by"] = completed.decision["by"]
        if completed.result is not None and completed.result.is_error:
            extra["error.type"] = "tool_error"
            error = completed.result.content[:200]
    if isinstance(completed, ApprovalStep):
        extra["synaptum.approval.granted"] = completed.granted
    return extra, error


def root_attributes(run_id: str, agent: dict[str, Any], number: int) -> dict[str, Any]:
    """The attributes of a pass's root span (`invoke_agent`)."""
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent.get("name", ""),
        "gen_ai.request.model": agent.get("model", ""),
        "gen_ai.conversation.id": run_id,
        "synaptum.run.id": run_id,
        "synaptum.pass": number,
    }


def final_attributes(final: FinalStep) -> dict[str, Any]:
    """What a run's final step adds to the root span of the pass that wrote it."""
    # the run's total, under names of its own: a sum of gen_ai.usage.* over the spans stays
    # the sum of the model calls
    total = {
        f"synaptum.run.{name.removeprefix('gen_ai.')}": value
        for name, value in usage_attributes(final.usage).items()
    }
    extra: dict[str, Any] = {"synaptum.run.closed": True} | total
    if final.reason is not None:
        extra["synaptum.run.reason"] = final.reason
    return extra


# ── the journal's trace ─────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class Place:
    """Where a pass's spans go: the trace of each pass of its run (by first position), the
    span they hang from (None: a root), and when they start and end (None: `unit_ns` a
    moment, as long as the pass needs)."""

    traces: dict[int, int]
    parent_id: int | None
    start_ns: int
    end_ns: int | None


async def journal_spans(
    checkpointer: Checkpointer, run_id: str, *, start_ns: int, unit_ns: int = 1_000_000
) -> list[SpanData]:
    """Every span the journal of `run_id` gives, sub-runs included (see the module's
    docstring). Times are synthetic: from `start_ns`, `unit_ns` apart at the top level.

    Raises `ConfigurationError` when the store holds no run `run_id`."""
    state = await checkpointer.load(run_id)
    if state.header is None:
        raise ConfigurationError(
            f"run {run_id!r} is not in this store, so it has no trace; name a run it holds"
        )
    passes = split_passes(await load_events(checkpointer, run_id))
    traces = {p.first_seq: trace_of(run_id, p.first_seq) for p in passes}
    spans: list[SpanData] = []
    clock = start_ns
    for pass_ in passes:
        place = Place(traces, None, clock, None)
        spans += await _pass_spans(
            checkpointer, state.header["agent"], run_id, passes, pass_, place, unit_ns
        )
        clock = max(span.end_ns for span in spans) + unit_ns
    return spans


async def _pass_spans(
    checkpointer: Checkpointer,
    agent: dict[str, Any],
    run_id: str,
    passes: list[Pass],
    pass_: Pass,
    place: Place,
    unit_ns: int,
) -> list[SpanData]:
    """The spans of one pass: its root, a replay span per step read back, a span per attempt
    it made (with a delegation's sub-run under it). One moment per span start, in order."""
    moments = 2 + len(pass_.replayed) + len(pass_.events)
    if place.end_ns is not None:
        unit_ns = max(1, (place.end_ns - place.start_ns) // moments)

    def at(moment: int) -> int:
        return place.start_ns + moment * unit_ns

    trace_id, root = place.traces[pass_.first_seq], root_of(run_id, pass_.first_seq)
    attributes = root_attributes(run_id, agent, pass_.number) | {"synaptum.time": SYNTHETIC}
    links = []
    if pass_.number > 1:
        before = passes[pass_.number - 2].first_seq
        links.append(Link(place.traces[before], root_of(run_id, before), "previous_pass"))
    end = at(moments - 1)
    name = f"invoke_agent {agent.get('name', '')}"
    spans = [SpanData(name, trace_id, root, place.parent_id, False, at(0), end, attributes, links)]
    for moment, step in enumerate(pass_.replayed, 1):
        name, client, attributes = describe(step, agent)
        attempt = 1 if isinstance(step, ApprovalStep) else step.attempt
        did = Link(
            attempt_trace(passes, place.traces, step.step_id, attempt),
            work_of(run_id, step.step_id, attempt),
            "replay_of",
        )
        attributes |= {
            "synaptum.replayed": True,
            "synaptum.pass": pass_.number,
            "synaptum.time": SYNTHETIC,
        }
        span_id = replay_of(run_id, step.step_id, pass_.first_seq)
        spans.append(
            SpanData(
                name, trace_id, span_id, root, client, at(moment), at(moment), attributes, [did]
            )
        )
    first = 1 + len(pass_.replayed)
    ends = {
        (e.step_id, e.attempt): (first + i, e)
        for i, (_, e) in enumerate(pass_.events)
        if e.phase is Phase.COMPLETED
    }
    attempts = _attempts(passes)
    for moment, (_, event) in enumerate(pass_.events, first):
        if isinstance(event, FinalStep):
            spans[0].attributes |= final_attributes(event)
        if event.phase is not Phase.ATTEMPTED or isinstance(event, FinalStep):
            continue
        stop, done = ends.get((event.step_id, event.attempt), (moments - 1, None))
        name, client, attributes = describe(event, agent)
        extra, error = outcome(done)
        if isinstance(event, ApprovalStep) and done is None:  # the pass waits for a person
            stop, error = moment, None
        attributes |= extra | {
            "synaptum.replayed": False,
            "synaptum.pass": pass_.number,
            "synaptum.step.attempt": event.attempt,
            "synaptum.time": SYNTHETIC,
        }
        span_id = work_of(run_id, event.step_id, event.attempt)
        work = SpanData(
            name, trace_id, span_id, root, client, at(moment), at(stop), attributes, error=error
        )
        spans.append(work)
        if isinstance(event, DelegationStep):
            where = [
                attempt_trace(passes, place.traces, event.step_id, a)
                for a in range(1, attempts[event.step_id] + 1)
            ]
            spans += await sub_run_spans(checkpointer, event, where, work)
    return spans


def _attempts(passes: list[Pass]) -> dict[str, int]:
    """How many times each step was attempted, over every pass."""
    counts: dict[str, int] = {}
    for pass_ in passes:
        for _, event in pass_.events:
            if event.phase is Phase.ATTEMPTED:
                counts[event.step_id] = max(counts.get(event.step_id, 0), event.attempt)
    return counts


def attempt_trace(passes: list[Pass], traces: dict[int, int], step: str, attempt: int) -> int:
    """The trace of the pass that made an attempt of a step (`traces`: by first position)."""
    for pass_ in passes:
        if any(e.step_id == step and e.attempt == attempt for _, e in pass_.events):
            return traces[pass_.first_seq]
    return traces[passes[0].first_seq]  # a person recorded it: no pass made it


async def sub_run_spans(
    checkpointer: Checkpointer, attempt: DelegationStep, where: list[int], parent: SpanData
) -> list[SpanData]:
    """The spans of a delegation's sub-run made during one attempt, under that attempt's span;
    `where` holds the trace of each attempt of the delegation.

    The sub-run's passes are matched to the delegation's attempts one to one when there are
    as many; otherwise all of them go under the latest attempt (a kill between two steps of
    the sub-run leaves no evidence of where its passes met)."""
    sub_id = attempt.sub_run_id
    state = await checkpointer.load(sub_id)
    if state.header is None:
        return []  # the parent died before the sub-run wrote its header
    passes = split_passes(await load_events(checkpointer, sub_id))
    if len(passes) == len(where):
        mine = [passes[attempt.attempt - 1]]
        traces = {p.first_seq: trace for p, trace in zip(passes, where, strict=True)}
    else:
        mine = passes if attempt.attempt == len(where) else []
        traces = {p.first_seq: parent.trace_id for p in passes}
    spans: list[SpanData] = []
    width = (parent.end_ns - parent.start_ns) // max(1, len(mine))
    for index, pass_ in enumerate(mine):
        start = parent.start_ns + index * width
        place = Place(traces, parent.span_id, start, start + width)
        spans += await _pass_spans(
            checkpointer, state.header["agent"], sub_id, passes, pass_, place, 1
        )
    return spans
