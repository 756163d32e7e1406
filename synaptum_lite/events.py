"""Step events: what the loop yields and the journal records, and their stored form.

A step has a deterministic id derived from its position (`000003-tool`) and passes through
phases: *attempted* before the work, *completed* after it. An operator's decision on a step
is a *resolved* event of that step. Each event is keyed by `(step_id, phase, attempt)`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, NotRequired, Self, TypedDict

from .messages import ModelResponse, ToolCall, ToolResult, Usage


class Phase(enum.Enum):
    """Where a step is: before its work, after it, or decided by an operator."""

    ATTEMPTED = "attempted"
    COMPLETED = "completed"
    RESOLVED = "resolved"


def step_id(position: int, kind: str) -> str:
    """The id of the step at `position` (dense, from 0): `000003-tool`."""
    return f"{position:06d}-{kind}"


def parse_step_id(text: str) -> tuple[int, str]:
    """The position and kind a step id names: `000003-tool` → `(3, "tool")`.

    Raises `ValueError` when `text` is not a step id."""
    position, separator, kind = text.partition("-")
    if not separator or not position.isdigit() or not kind:
        raise ValueError(f"{text!r} is not a step id (like '000003-tool')")
    return int(position), kind


class Decision(TypedDict):
    """What was decided about a tool step without running it, and by whom (stored as is).

    `record`: an operator recorded the result of an uncertain step; `retry`: an operator
    allowed one more attempt; `not_started`: the runtime knows the attempt never began;
    `deny`: the call was refused (by the policy, or a person denied its approval), and the
    model reads `reason`; `terminate`: refused, and the run ends with `reason`.
    """

    action: Literal["record", "retry", "not_started", "deny", "terminate"]
    by: str
    reason: NotRequired[str]


def allows_retry(decision: Decision | None) -> bool:
    """Whether a decision lets the latest attempt of a tool step run again without asking."""
    return decision is not None and decision["action"] in ("retry", "not_started")


class ApprovalDecision(TypedDict):
    """A person's answer to an approval request, bound to the exact call it approves."""

    granted: bool
    by: str
    at: str
    note: str
    call: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One journal event. `replayed` is True when it comes from the journal, not from work."""

    kind: ClassVar[str] = "step"
    run_id: str
    step_id: str
    phase: Phase
    attempt: int = 1
    replayed: bool = field(default=False, compare=False)

    def payload(self) -> dict[str, Any]:
        """The JSON data this event adds to the journal (besides its key)."""
        return {}

    @property
    def position(self) -> int:
        return parse_step_id(self.step_id)[0]

    def as_replayed(self) -> Self:
        return self if self.replayed else replace(self, replayed=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStep(Step):
    """A model call. `fingerprint` identifies the request; `response` is set once completed.
    `replaced_by` names the person whose answer a fork journaled in place of the model's."""

    kind: ClassVar[str] = "model"
    fingerprint: str
    response: ModelResponse | None = None
    replaced_by: str | None = None

    def payload(self) -> dict[str, Any]:
        # what the attempted event journaled is not repeated by the completed one
        if self.phase is Phase.ATTEMPTED or self.response is None:
            return {"fp": self.fingerprint}
        by = {} if self.replaced_by is None else {"replaced_by": self.replaced_by}
        return self.response.to_json() | by


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStep(Step):
    """A tool call. `result` is set once completed; `decision` on an operator's event."""

    kind: ClassVar[str] = "tool"
    call: ToolCall
    result: ToolResult | None = None
    decision: Decision | None = None

    @property
    def ends_run(self) -> bool:
        """Whether the decision recorded on this step ends its run (a policy's `terminate`)."""
        return self.decision is not None and self.decision.get("action") == "terminate"

    def payload(self) -> dict[str, Any]:
        # the call is journaled once, by the attempted event
        data: dict[str, Any] = (
            {"call": self.call.to_json()} if self.phase is Phase.ATTEMPTED else {}
        )
        if self.result is not None:
            data.update(self.result.to_json())
        if self.decision is not None:
            data["decision"] = self.decision
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationStep(ToolStep):
    """A call to a sub-agent: a durable step whose work is a run of its own, `sub_run_id`.

    Completed, it carries the sub-run's answer as `result` and its total `usage`.
    """

    kind: ClassVar[str] = "delegate"
    usage: Usage | None = None

    @property
    def sub_run_id(self) -> str:
        return f"{self.run_id}/{self.step_id}"

    def payload(self) -> dict[str, Any]:
        data = ToolStep.payload(self)
        if self.usage is not None:
            data["usage"] = self.usage.to_json()
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalStep(Step):
    """A tool call waiting for a person. *Attempted* is the request (the call and the
    policy's `reason`); a person's decision is *completed* (final) or *resolved* (a denial
    that may be reconsidered). `decision` holds `granted`, `by`, `at` and `note`.
    """

    kind: ClassVar[str] = "approval"
    call: ToolCall
    reason: str = ""
    decision: ApprovalDecision | None = None

    @property
    def pending(self) -> bool:
        return self.phase is Phase.ATTEMPTED

    @property
    def granted(self) -> bool:
        return bool(self.decision and self.decision.get("granted"))

    def payload(self) -> dict[str, Any]:
        if self.phase is Phase.ATTEMPTED:
            return {"call": self.call.to_json(), "reason": self.reason}
        return {"decision": self.decision}


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalStep(Step):
    """The end of a run: the answer (`output`), or the `reason` it ended without one.

    `text` is the answer as the model wrote it (what the journal keeps); `output` is what the
    caller receives: the same text, or an instance of the agent's `output` type. `usage` is
    the run's total, sub-runs included.
    """

    kind: ClassVar[str] = "final"
    phase: Phase = Phase.COMPLETED
    text: str | None = None
    output: Any = None
    reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"usage": self.usage.to_json()}
        if self.text is not None:
            data["text"] = self.text
        if self.reason is not None:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrationStep(Step):
    """An operator moved the run to another configuration (`migrate`): the steps after this
    position run on `configuration`; `changed` names each field that changed, as
    `[before, after]` (for `tools`: the names gone or redeclared, and the names new or
    redeclared). It occupies a position of its own, and is never work to redo."""

    kind: ClassVar[str] = "migration"
    phase: Phase = Phase.COMPLETED
    by: str
    configuration: dict[str, Any]
    changed: dict[str, list[Any]]

    def payload(self) -> dict[str, Any]:
        return {"by": self.by, "configuration": self.configuration, "changed": self.changed}


KINDS: dict[str, type[Step]] = {
    cls.kind: cls
    for cls in (ModelStep, ToolStep, DelegationStep, ApprovalStep, FinalStep, MigrationStep)
}
