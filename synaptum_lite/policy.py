"""Policy: what a gateway lets out. Every decision it takes becomes part of the journal.

A policy is a function from a `Proposal` (a model call or a tool call about to leave) to a
`Verdict`. A tool call may be allowed, denied (the model reads why and can adapt), sent to a
person for approval (the run suspends on disk), or end the run (`terminate`). A model call
may be allowed or end the run.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .messages import ToolCall
from .tools import Risk


class Action(enum.Enum):
    """What a policy decided."""

    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"
    TERMINATE = "terminate"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A policy's decision and the reason it gives (shown to the model or to a person)."""

    action: Action
    reason: str = ""

    @classmethod
    def allow(cls) -> Verdict:
        return cls(Action.ALLOW)

    @classmethod
    def deny(cls, reason: str) -> Verdict:
        return cls(Action.DENY, reason)

    @classmethod
    def require_approval(cls, reason: str) -> Verdict:
        return cls(Action.REQUIRE_APPROVAL, reason)

    @classmethod
    def terminate(cls, reason: str) -> Verdict:
        return cls(Action.TERMINATE, reason)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A call about to leave through the gateway.

    For a model call `kind == "model"` and `call` is None; for a tool call `kind` is
    `"tool"` (or `"delegate"` for a sub-agent) with the call, the tool's declared `risk` and
    whether it is `idempotent`.
    """

    run_id: str
    step_id: str
    kind: str
    call: ToolCall | None = None
    risk: Risk | None = None
    idempotent: bool | None = None

    @property
    def tool(self) -> str | None:
        return self.call.name if self.call is not None else None

    @property
    def arguments(self) -> dict[str, Any] | str:
        return self.call.arguments if self.call is not None else {}


Policy = Callable[[Proposal], Verdict]


def allow_everything(proposal: Proposal) -> Verdict:
    """The default policy."""
    return Verdict.allow()
