"""The stored form of events and headers: what a store writes, and how it is read back.

An event is stored as `(step_id, phase, attempt, data)`, `data` being compact JSON of its
payload; a header as JSON with sorted keys. Every store keeps text as UTF-8, so both are
checked before anything is written: a value no store can keep is refused, naming the step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from .errors import ConfigurationError, CorruptJournal
from .events import (
    KINDS,
    ApprovalStep,
    DelegationStep,
    FinalStep,
    MigrationStep,
    ModelStep,
    Phase,
    Step,
    ToolStep,
    parse_step_id,
)
from .messages import ModelResponse, ToolCall, ToolResult, Usage, check_text, text_problem


class Record(NamedTuple):
    """An event as a store keeps it, a row: its position in the journal, its key and its data."""

    seq: int
    step_id: str
    phase: str
    attempt: int
    data: str


def encode(event: Step) -> tuple[str, str, int, str]:
    """The stored form of an event: `(step_id, phase, attempt, data)`.

    Raises `TypeError`/`ValueError` when the payload is not JSON a store can keep as UTF-8 (a
    tool result that could not be described, NaN, a surrogate code point), naming the step;
    every store refuses the same events alike.
    """
    try:
        data = json.dumps(
            event.payload(), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except ValueError as exc:
        raise ValueError(f"step {event.step_id} ({event.phase.value}) is not JSON: {exc}") from None
    problem = text_problem(data)
    if problem is not None:
        raise ValueError(
            f"step {event.step_id} ({event.phase.value}) cannot be journaled: {problem}"
        )
    return event.step_id, event.phase.value, event.attempt, data


def decode(
    run_id: str, record: Record, attempted: Step | None = None, *, replayed: bool = False
) -> Step:
    """Rebuild an event from its stored form. Raises `CorruptJournal` when it cannot.

    A completed or resolved model or tool event needs its step's `attempted` event, which
    holds what it does not repeat (the fingerprint, the call). `replayed` marks the event as
    read back by a resumed loop.
    """
    try:
        return _step(run_id, record, attempted, replayed)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, AssertionError) as exc:
        raise CorruptJournal(run_id, record.seq, f"{type(exc).__name__}: {exc}") from exc


def _migration(common: dict[str, Any], data: dict[str, Any]) -> MigrationStep:
    changed, configuration = data["changed"], data["configuration"]
    if not isinstance(changed, dict) or not isinstance(configuration, dict):
        raise ValueError("a migration's configuration and changes must be JSON objects")
    return MigrationStep(**common, by=data["by"], configuration=configuration, changed=changed)


def _step(run_id: str, record: Record, attempted: Step | None, replayed: bool) -> Step:
    """`decode`'s work; a stored form it cannot read raises whatever reading it raised."""
    kind = parse_step_id(record.step_id)[1]
    cls = KINDS[kind]
    data = json.loads(record.data)
    phase = _PHASES.get(record.phase)
    if phase is None:
        raise ValueError(f"{record.phase!r} is not a phase")
    common: dict[str, Any] = {
        "run_id": run_id,
        "step_id": record.step_id,
        "attempt": record.attempt,
        "phase": phase,
        "replayed": replayed,
    }
    if cls is FinalStep:
        return FinalStep(
            **common,
            text=data.get("text"),
            output=data.get("text"),
            reason=data.get("reason"),
            usage=Usage.from_json(data.get("usage", {})),
        )
    if cls is MigrationStep:
        return _migration(common, data)
    if phase is not Phase.ATTEMPTED and attempted is None:
        raise ValueError(f"a {phase.value} {kind} event without an attempted one before it")
    if cls is ModelStep:
        if phase is Phase.ATTEMPTED:
            return ModelStep(**common, fingerprint=data["fp"])
        assert isinstance(attempted, ModelStep)
        return ModelStep(
            **common,
            fingerprint=attempted.fingerprint,
            response=ModelResponse.from_json(data),
            replaced_by=data.get("replaced_by"),
        )
    if phase is Phase.ATTEMPTED:
        call = ToolCall.from_json(data["call"])
    elif isinstance(attempted, ToolStep | ApprovalStep):
        call = attempted.call
    else:
        raise ValueError(f"a {phase.value} {kind} event after a {attempted!r}")
    if cls is ApprovalStep:
        if phase is Phase.ATTEMPTED:
            reason = data["reason"]
        elif isinstance(attempted, ApprovalStep):
            reason = attempted.reason
        else:
            raise ValueError(f"a {phase.value} approval event after a {attempted!r}")
        return ApprovalStep(**common, call=call, reason=reason, decision=data.get("decision"))
    result = ToolResult.from_json(data) if "content" in data else None
    if cls is DelegationStep:
        usage = Usage.from_json(data["usage"]) if "usage" in data else None
        return DelegationStep(
            **common, call=call, result=result, decision=data.get("decision"), usage=usage
        )
    return ToolStep(**common, call=call, result=result, decision=data.get("decision"))


_PHASES = {phase.value: phase for phase in Phase}


def decode_final(run_id: str, record: Record) -> FinalStep:
    """A run's final event from its stored form. Raises `CorruptJournal` when it is not one."""
    event = decode(run_id, record)
    if not isinstance(event, FinalStep):
        raise CorruptJournal(run_id, record.seq, f"step {record.step_id} is not a final step")
    return event


def decode_all(run_id: str, records: list[Record], *, replayed: bool = False) -> list[Step]:
    """Rebuild a run's events in order, each completed event joined to its attempted one."""
    attempted: dict[str, Step] = {}
    events = []
    for record in records:
        event = decode(run_id, record, attempted.get(record.step_id), replayed=replayed)
        if event.phase is Phase.ATTEMPTED:
            attempted[record.step_id] = event
        events.append(event)
    return events


# ── what every store can keep ──────────────────────────────────────────────────────────────
#
# Every store keeps text as UTF-8, and PostgreSQL's text cannot hold NUL. So a run id must be
# UTF-8 without NUL, and a header must encode to UTF-8 (its JSON escapes NUL); an event is
# checked by `encode`. Each store checks before it touches storage: the same input gets
# the same answer, and a refused call writes nothing.


def check_run_id(run_id: Any) -> str:
    """`run_id`, when every store can keep it. Raises `ConfigurationError` naming the problem."""
    if not isinstance(run_id, str) or not run_id:
        raise ConfigurationError(f"run_id must be a non-empty string, got {run_id!r}")
    return check_text(f"run_id {run_id!r}", run_id, nul=True)


def encode_header(run_id: str, header: dict[str, Any]) -> str:
    """A run's header as stored. Raises `ConfigurationError` when it cannot be kept."""
    text = json.dumps(header, sort_keys=True, ensure_ascii=False)
    return check_text(f"run {run_id!r}: its header (the agent's configuration and the task)", text)


def decode_header(run_id: str, text: str) -> dict[str, Any]:
    """A run's stored header. Raises `CorruptJournal` when it cannot be read."""
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise CorruptJournal(run_id, None, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(header, dict) or "agent" not in header:
        raise CorruptJournal(run_id, None, "it is not a run header")
    return header


Encoded = tuple[str, str, int, str]
"""An event as `encode` gives it: `(step_id, phase, attempt, data)`."""


def encode_events(run_id: str, events: Sequence[Step]) -> list[Encoded]:
    """Check `run_id` and encode every event before anything is written: all or nothing."""
    check_run_id(run_id)
    return [encode(event) for event in events]
