"""The journal as the loop reads it while driving a run: what it holds at each step.

The loop asks, at each step position, what the journal already holds there. The answers are
the resume rules: a completed step returns its recorded result; a step with no trace runs; a
step attempted and never completed runs again if it is safe to (`retryable`), and is
otherwise an uncertain effect. `Journal` also refuses to mix configurations and detects a
step of another kind at a journaled position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .checkpointer import FORMAT_VERSION, Checkpointer
from .codec import Record, decode
from .errors import (
    ConfigurationChanged,
    CorruptJournal,
    ReplayDivergence,
    UncertainEffect,
    quoted,
)
from .events import (
    ApprovalStep,
    FinalStep,
    MigrationStep,
    ModelStep,
    Phase,
    Step,
    ToolStep,
    allows_retry,
    parse_step_id,
    step_id,
)
from .messages import ToolCall


class StepHistory:
    """Everything the journal holds about one step."""

    __slots__ = ("step_id", "attempted", "completed", "decisions")

    def __init__(self, step_id: str) -> None:
        self.step_id = step_id
        self.attempted: Step | None = None
        self.completed: Step | None = None
        self.decisions: list[Step] = []

    @property
    def kind(self) -> str:
        return parse_step_id(self.step_id)[1]

    @property
    def attempt(self) -> int:
        """The number of the latest attempt (0 when never attempted)."""
        return self.attempted.attempt if self.attempted is not None else 0

    @property
    def retry_allowed(self) -> bool:
        """Whether the latest attempt may run again without asking: an operator allowed it
        (`retry`), or the runtime journaled that it never began (`not_started`)."""
        return any(
            isinstance(d, ToolStep) and allows_retry(d.decision) and d.attempt == self.attempt
            for d in self.decisions
        )

    def add(self, event: Step) -> None:
        if event.phase is Phase.ATTEMPTED:
            if self.attempted is None or event.attempt >= self.attempted.attempt:
                self.attempted = event
        elif event.phase is Phase.COMPLETED:
            self.completed = event
        else:
            self.decisions.append(event)


def index(events: list[Step]) -> dict[int, StepHistory]:
    """Group a run's events by step position."""
    steps: dict[int, StepHistory] = {}
    for event in events:
        position = event.position
        history = steps.get(position)
        if history is None:
            history = steps[position] = StepHistory(event.step_id)
        elif history.step_id != event.step_id:
            raise ReplayDivergence(
                event.run_id, event.step_id, f"step {history.step_id}", "two steps at one position"
            )
        history.add(event)
    return steps


def by_position(run_id: str, records: list[Record]) -> dict[int, list[Record]]:
    """Group a run's stored events by step position, undecoded: `index` before decoding.

    Raises `CorruptJournal` for a record whose key is not a step id, and `ReplayDivergence`
    for two steps at one position."""
    grouped: dict[int, list[Record]] = {}
    for record in records:
        try:
            position = parse_step_id(record.step_id)[0]
        except (ValueError, TypeError, AttributeError) as exc:
            raise CorruptJournal(run_id, record.seq, f"{type(exc).__name__}: {exc}") from exc
        same = grouped.get(position)
        if same is None:
            grouped[position] = [record]
        elif same[0].step_id != record.step_id:
            raise ReplayDivergence(
                run_id, record.step_id, f"step {same[0].step_id}", "two steps at one position"
            )
        else:
            same.append(record)
    return grouped


def history_of(run_id: str, records: list[Record]) -> StepHistory:
    """Decode the stored events of one position (`by_position`), read back as replayed: a
    completed step is yielded as it is, never copied."""
    history = StepHistory(records[0].step_id)
    attempted: Step | None = None
    for record in records:
        event = decode(run_id, record, attempted, replayed=True)
        if event.phase is Phase.ATTEMPTED:
            attempted = event
        history.add(event)
    return history


class Journal:
    """One run's journal, opened by its single driver.

    The step counter (`position`) is bumped in exactly one place, `next_step`; step ids are
    derived from it, so a replay mints the same ids as the first pass. A position's stored
    events are decoded when the loop reaches it and let go when it passes it: a resume holds
    the journal's rows once, never a decoded copy of all of them beside.
    """

    def __init__(
        self,
        run_id: str,
        checkpointer: Checkpointer,
        unread: dict[int, list[Record]] | None = None,
        *,
        read: dict[int, StepHistory] | None = None,
        cut: int = 0,
    ) -> None:
        self.run_id = run_id
        self.checkpointer = checkpointer
        self.position = 0
        # the first position after the last migration: the steps before it were made on an
        # earlier configuration, so their requests are not compared with this agent's
        self.cut = cut
        self._unread = unread if unread is not None else {}
        self._read = read if read is not None else {}

    @classmethod
    async def open(
        cls, run_id: str, checkpointer: Checkpointer, configuration: dict[str, Any], task: str
    ) -> tuple[Journal, FinalStep | None]:
        """Open the run's journal, starting it if new. Returns the final step of a closed run.

        Raises `ConfigurationChanged` when the run runs on another configuration (the one
        that started it, or the last one it was migrated to) or another task, and
        `ReplayDivergence` when a tool the journal used is gone. A closed run also returns
        its final step to the configuration that started it: it calls nothing.
        """
        state = await checkpointer.load(run_id)
        if state.header is None:
            await checkpointer.start(
                run_id, {"format": FORMAT_VERSION, "agent": configuration, "task": task}
            )
            return cls(run_id, checkpointer), None
        same_task = state.header.get("task") == task
        if state.closed and same_task and not differences(state.header["agent"], configuration):
            return cls(run_id, checkpointer), state.final  # without reading the journal
        unread = by_position(run_id, await checkpointer.records(run_id))
        migrations = {  # decoded now, and handed to the journal as read
            p: history_of(run_id, unread.pop(p))
            for p in sorted(unread)
            if parse_step_id(unread[p][0].step_id)[1] == "migration"
        }
        recorded = in_effect(
            state.header["agent"], [h.completed for h in migrations.values() if h.completed]
        )
        changes = differences(recorded, configuration)
        tools = changes.pop("tools", None)
        if not same_task:
            changes["task"] = (state.header.get("task"), task)
        if tools is not None:  # a journaled call to a tool that is gone names its step
            if not state.closed:
                steps = {p: history_of(run_id, records) for p, records in unread.items()}
                _check_used_tools(run_id, steps, recorded["tools"], configuration["tools"])
            changes["tools"] = tools
        if changes:
            raise ConfigurationChanged(run_id, changes)
        if state.closed:
            return cls(run_id, checkpointer), state.final
        cut = max((p + 1 for p in migrations), default=0)
        return cls(run_id, checkpointer, unread, read=migrations, cut=cut), None

    def _history(self, position: int) -> StepHistory | None:
        """What the journal holds at `position`, decoded the first time it is asked for."""
        history = self._read.get(position)
        if history is None:
            records = self._unread.pop(position, None)
            if records is None:
                return None
            history = self._read[position] = history_of(self.run_id, records)
        return history

    def _passed(self) -> StepHistory | None:
        """What the journal holds at the next position, and move past it: a position the
        loop passed is never asked for again, so its events are let go."""
        history = self._history(self.position)
        self._read.pop(self.position, None)
        self.position += 1
        return history

    def peek(self) -> StepHistory | None:
        """What the journal holds at the next position, without minting a step."""
        return self._history(self.position)

    def passed_migrations(self) -> list[MigrationStep]:
        """The migrations journaled at the next position, stepped over: an operator's events
        have positions of their own, and are never work of the loop's."""
        passed = []
        while (history := self._history(self.position)) is not None and isinstance(
            history.completed, MigrationStep
        ):
            passed.append(history.completed)
            self._passed()
        return passed

    def next_step(self, kind: str) -> tuple[str, StepHistory | None]:
        """Mint the next step's id and return what the journal holds at its position.

        Raises `ReplayDivergence` when the journal holds a step of another kind there.
        """
        self.passed_migrations()
        new_id = step_id(self.position, kind)
        history = self._passed()
        if history is not None and history.step_id != new_id:
            raise ReplayDivergence(self.run_id, new_id, f"a {history.kind} step", f"a {kind} step")
        return new_id, history

    async def write(self, *events: Step) -> None:
        """Append events in one commit. The loop yields an event only after writing it."""
        await self.checkpointer.append(self.run_id, events)

    async def confirm_hold(self) -> None:
        """Make sure the run is still held, where a store can lose a hold without its holder
        knowing (PostgreSQL: the server ended the lock's session while the consumer held the
        last event). Raises `StoreUnavailable` then; a store whose hold cannot be lost while
        its process lives (SQLite, memory) has nothing to ask."""
        await self.checkpointer.confirm_hold(self.run_id)

    # ── the checks of a resume: the journal's step must be the step the loop makes now ──────

    def check_same_request(
        self, model_id: str, history: StepHistory | None, fingerprint: str
    ) -> None:
        """Raise `ReplayDivergence` when the journal's model call was made on another context."""
        recorded = history and (history.completed or history.attempted)
        if parse_step_id(model_id)[0] < self.cut:
            return  # made on the configuration before a migration: another request by design
        if isinstance(recorded, ModelStep) and recorded.fingerprint != fingerprint:
            raise ReplayDivergence(
                self.run_id, model_id, "a model call on another context", "a different context"
            )

    def check_same_call(self, tool_id: str, history: StepHistory | None, call: ToolCall) -> None:
        """Raise `ReplayDivergence` when the journal's tool step is another call than the
        model's: another tool, other arguments, or another call id."""
        recorded = history and (history.attempted or history.completed)
        if isinstance(recorded, ToolStep) and recorded.call != call:
            said = [
                f"a call {c.id!r} to {c.name!r} with {quoted(c.arguments)}"
                for c in (recorded.call, call)
            ]
            raise ReplayDivergence(self.run_id, tool_id, *said)

    def next_attempt(
        self, tool_id: str, call: ToolCall, history: StepHistory | None, *, idempotent: bool
    ) -> int:
        """The attempt number of a tool step about to run. Raises `UncertainEffect` when
        running it again could repeat an effect nobody allowed to repeat."""
        if history is None or history.attempted is None:
            return 1
        if not idempotent and not history.retry_allowed:
            raise UncertainEffect(self.run_id, tool_id, call.name, call.arguments)
        return history.attempt + 1

    def approval(self, call: ToolCall) -> ApprovalStep:
        """Mint the approval step of `call`: the request if nobody decided yet, else the
        decision. Raises `ReplayDivergence` when the journal approves another call there."""
        approval_id, history = self.next_step("approval")
        request = history.attempted if history is not None else None
        if not isinstance(request, ApprovalStep) or request.call != call:
            raise ReplayDivergence(
                self.run_id, approval_id, f"an approval of {request!r}", f"a call {call!r}"
            )
        decided = history.completed if history is not None else None
        if isinstance(decided, ApprovalStep):
            return decided.as_replayed()
        return request.as_replayed()


def in_effect(started: dict[str, Any], events: Sequence[Step]) -> dict[str, Any]:
    """The configuration a run runs on: the one that `started` it, or the last one an operator
    migrated it to."""
    configuration = started
    for event in events:
        if isinstance(event, MigrationStep):
            configuration = event.configuration
    return configuration


def differences(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Each field of two configurations that differs, as `(before, after)`; for `tools`, the
    names gone or redeclared and the names new or redeclared. Tools come last."""
    names = [*after, *(name for name in before if name not in after)]
    changes = {
        name: (before.get(name), after.get(name))
        for name in names
        if name != "tools" and before.get(name) != after.get(name)
    }
    if before.get("tools") != after.get("tools"):
        changes["tools"] = _tool_changes(before.get("tools") or {}, after.get("tools") or {})
    return changes


def _tool_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The tool names only in `before` and only in `after` (changed ones appear in both)."""
    changed = sorted(name for name in before.keys() & after.keys() if before[name] != after[name])
    return sorted(before.keys() - after.keys()) + changed, sorted(
        after.keys() - before.keys()
    ) + changed


def _check_used_tools(
    run_id: str, steps: dict[int, StepHistory], before: dict[str, Any], tools: dict[str, Any]
) -> None:
    """Name the first journaled step that called a tool the agent no longer has."""
    for position in sorted(steps):
        history = steps[position]
        event = history.attempted or history.completed
        if (
            isinstance(event, ToolStep)
            and event.call.name in before
            and event.call.name not in tools
        ):
            raise ReplayDivergence(
                run_id,
                history.step_id,
                f"a call to tool {event.call.name!r}",
                f"an agent without that tool (it has: {', '.join(sorted(tools)) or 'none'})",
            )
