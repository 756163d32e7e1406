"""A session: which run, through which gateway, remembered where; and people's decisions.

A person's decisions are journaled, so they survive. An operator resolves an uncertain effect
with `record_result` (the effect is known: record what the tool returned) or `allow_retry`
(the effect is known not to have happened, or is safe to repeat). A person answers an
approval request with `decide`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from .budget import Budget
from .checkpointer import Checkpointer, load_events
from .codec import check_run_id
from .errors import ConfigurationError, NothingToResolve, quoted
from .events import ApprovalDecision, ApprovalStep, Decision, Phase, Step, ToolStep
from .gateway import Gateway
from .journal import StepHistory, index
from .messages import ToolResult, check_text
from .tools import to_result_text


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How retryable provider errors are retried: exponential backoff with full jitter.

    Attempt n (from 1) waits `min(cap, base * 2**(n-1))` scaled by a random factor in
    [0.5, 1]; a `Retry-After` from the provider is honoured instead, up to `cap`. Only
    errors the provider marks retryable (timeouts, 429, 5xx) are retried.
    """

    max_attempts: int = 4
    base: float = 0.5
    cap: float = 30.0
    random: Callable[[], float] = field(default=random.random, compare=False)

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ConfigurationError(
                f"max_attempts must be a whole number, at least 1 (1: no retry); got {attempts!r}"
            )
        for name in ("base", "cap"):
            seconds = getattr(self, name)
            # NaN fails both comparisons: a wait that is no number of seconds
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not (0 <= seconds < float("inf"))
            ):
                raise ConfigurationError(
                    f"{name} must be a finite number of seconds, 0 or more; got {seconds!r}"
                )
        if not callable(self.random):
            raise ConfigurationError(
                f"random must be a function returning a number in [0, 1), got {self.random!r}"
            )

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt`."""
        if retry_after is not None:
            return min(self.cap, max(0.0, retry_after))
        backoff = min(self.cap, self.base * 2.0 ** (attempt - 1))
        return backoff * (0.5 + 0.5 * self.random())


def _now() -> datetime:
    """The time now, in UTC."""
    return datetime.now(UTC)


@dataclass(slots=True)
class Session:
    """Drive run `run_id` through `gateway`, journaled in `checkpointer`.

    `sleep` is how the loop waits between retries, and `clock` tells when a person decided
    (inject both to never wait for real and to print the same thing every time). `budget`
    limits what the run and its sub-runs spend, counted from the journal (`Budget`); like
    `retry`, it is the operator's for this pass, not the agent's configuration.
    """

    run_id: str
    gateway: Gateway
    checkpointer: Checkpointer
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    clock: Callable[[], datetime] = field(default=_now)
    budget: Budget | None = None

    def __post_init__(self) -> None:
        check_run_id(self.run_id)
        # each refused now, by name, rather than as an AttributeError in the middle of a run
        for role, value, needs in (
            ("gateway", self.gateway, ("complete", "stream", "call_tool", "review")),
            ("checkpointer", self.checkpointer, ("hold", "load", "start", "append", "records")),
        ):
            missing = [name for name in needs if not callable(getattr(value, name, None))]
            if missing:
                raise ConfigurationError(
                    f"run {self.run_id!r}: the {role} {value!r:.80} is not a {role.title()} "
                    f"(it has no {', '.join(missing)}); pass one, such as "
                    + ("LocalGateway(...)" if role == "gateway" else "SqliteCheckpointer(path)")
                )
        if not isinstance(self.retry, RetryPolicy):
            raise ConfigurationError(
                f"run {self.run_id!r}: retry must be a RetryPolicy, got {self.retry!r:.80}"
            )
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise ConfigurationError(
                f"run {self.run_id!r}: budget must be a Budget or None, got {self.budget!r:.80}"
            )
        for role in ("sleep", "clock"):
            if not callable(getattr(self, role)):
                raise ConfigurationError(
                    f"run {self.run_id!r}: {role} must be a function, got {getattr(self, role)!r}"
                )

    async def record_result(self, step_id: str, result: Any, *, by: str) -> None:
        """Record what an uncertain tool step returned, as found out by `by` (a person).

        The resumed run treats it as the step's result and never runs the tool.
        Raises `NothingToResolve` when the step is not attempted-and-uncompleted.
        """
        _check_person(self.run_id, step_id, by)
        try:
            result_text = ToolResult(to_result_text(result))
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"run {self.run_id!r}, step {step_id}: the result {quoted(result)} cannot be "
                f"journaled ({exc}); record str, a JSON value or a dataclass"
            ) from None
        async with self.checkpointer.hold(self.run_id):
            pending = await self._uncertain(step_id)
            decision: Decision = {"action": "record", "by": by}
            await self._append(
                replace(pending, phase=Phase.COMPLETED, result=result_text, decision=decision)
            )

    async def allow_retry(self, step_id: str, *, by: str) -> None:
        """Allow one more attempt of an uncertain tool step, on the word of `by`.

        Raises `NothingToResolve` when the step is not attempted-and-uncompleted.
        """
        _check_person(self.run_id, step_id, by)
        async with self.checkpointer.hold(self.run_id):
            pending = await self._uncertain(step_id)
            decision: Decision = {"action": "retry", "by": by}
            await self._append(replace(pending, phase=Phase.RESOLVED, decision=decision))

    async def decide(
        self, step_id: str, *, granted: bool, by: str, note: str = "", final: bool = True
    ) -> None:
        """Answer the approval request `step_id` on behalf of `by`, at `clock()`.

        A grant lets the call run exactly once when the run resumes; a final denial is told to
        the model. `final=False` with `granted=False` means "not now": the run stays suspended
        and a later decision supersedes this one. Raises `NothingToResolve` when the step is
        not an approval request waiting for a decision.
        """
        _check_person(self.run_id, step_id, by)
        if not isinstance(note, str):
            raise ConfigurationError(f"note must be text, got {note!r:.80}")
        check_text(f"run {self.run_id!r}, step {step_id!r}: the note", note)
        for name, value in (("granted", granted), ("final", final)):
            if not isinstance(value, bool):
                # a truthy granted="no" would let the call run
                raise ConfigurationError(
                    f"run {self.run_id!r}, step {step_id!r}: {name} must be True or False, got "
                    f"{value!r:.80}; nothing was decided"
                )
        async with self.checkpointer.hold(self.run_id):
            history = await self._history(step_id)
            request = history.attempted if history is not None else None
            if history is None or not isinstance(request, ApprovalStep):
                raise NothingToResolve(self.run_id, step_id, "not an approval request of this run")
            if history.completed is not None:
                raise NothingToResolve(self.run_id, step_id, "already decided")
            decision: ApprovalDecision = {
                "granted": granted,
                "by": by,
                "at": self.clock().isoformat(timespec="seconds"),
                "note": note,
                "call": request.call.to_json(),  # bound to the exact call
            }
            phase = Phase.COMPLETED if granted or final else Phase.RESOLVED
            attempt = len(history.decisions) + 1  # each decision is a key of its own
            await self._append(replace(request, phase=phase, attempt=attempt, decision=decision))

    async def _uncertain(self, step_id: str) -> ToolStep:
        """The attempted event of a tool step that is waiting for an operator."""
        history = await self._history(step_id)
        pending = history.attempted if history is not None else None
        if history is None or not isinstance(pending, ToolStep):
            raise NothingToResolve(self.run_id, step_id, "not an attempted tool step of this run")
        if history.completed is not None:
            raise NothingToResolve(self.run_id, step_id, "already completed")
        if history.retry_allowed:
            raise NothingToResolve(self.run_id, step_id, "already allowed to retry")
        return pending

    async def _history(self, step_id: str) -> StepHistory | None:
        steps = index(await load_events(self.checkpointer, self.run_id))
        return next((h for h in steps.values() if h.step_id == step_id), None)

    async def _append(self, event: Step) -> None:
        await self.checkpointer.append(self.run_id, [event])


def _check_person(run_id: str, step_id: Any, by: Any) -> None:
    """Refuse a decision that does not say which step, or who took it: a journal keeps both."""
    if not isinstance(step_id, str):
        raise ConfigurationError(
            f"run {run_id!r}: the step id must be text such as '000003-tool', got {step_id!r:.80}"
        )
    if not isinstance(by, str) or not by.strip():
        raise ConfigurationError(
            f"run {run_id!r}, step {step_id!r}: by must name who decides (a person, as text), "
            f"got {by!r:.80}; nothing was recorded"
        )
    check_text(f"run {run_id!r}, step {step_id!r}: by {by!r}", by)
