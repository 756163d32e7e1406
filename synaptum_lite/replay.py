"""Replay: the journal as the loop reads it while driving a run.

The loop asks, at each step position, what the journal already holds there. The answers are
the resume rules: a completed step returns its recorded result; a step with no trace runs; a
step attempted and never completed runs again if it is safe to (`retryable`), and is
otherwise an uncertain effect. `Journal` also refuses to mix configurations and detects a
step of another kind at a journaled position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationChanged, ReplayDivergence
from .events import FinalStep, Phase, Step, ToolStep, allows_retry, parse_step_id, step_id
from .journal import FORMAT_VERSION, Checkpointer, load_events


@dataclass(slots=True)
class StepHistory:
    """Everything the journal holds about one step."""

    step_id: str
    attempted: Step | None = None
    completed: Step | None = None
    decisions: list[Step] = field(default_factory=list)

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
        history = steps.get(event.position)
        if history is None:
            history = steps[event.position] = StepHistory(event.step_id)
        elif history.step_id != event.step_id:
            raise ReplayDivergence(
                event.run_id, event.step_id, f"step {history.step_id}", "two steps at one position"
            )
        history.add(event)
    return steps


class Journal:
    """One run's journal, opened by its single driver.

    The step counter (`position`) is bumped in exactly one place, `next_step`; step ids are
    derived from it, so a replay mints the same ids as the first pass.
    """

    def __init__(
        self, run_id: str, checkpointer: Checkpointer, steps: dict[int, StepHistory]
    ) -> None:
        self.run_id = run_id
        self.checkpointer = checkpointer
        self.steps = steps
        self.position = 0

    @classmethod
    async def open(
        cls, run_id: str, checkpointer: Checkpointer, configuration: dict[str, Any], task: str
    ) -> tuple[Journal, FinalStep | None]:
        """Open the run's journal, starting it if new. Returns the final step of a closed run.

        Raises `ConfigurationChanged` when the run was started by an agent configured otherwise
        (or for another task), and `ReplayDivergence` when a tool the journal used is gone.
        """
        state = await checkpointer.load(run_id)
        if state.header is None:
            await checkpointer.start(
                run_id, {"format": FORMAT_VERSION, "agent": configuration, "task": task}
            )
            return cls(run_id, checkpointer, {}), None
        recorded = state.header["agent"]
        changes = {
            name: (recorded.get(name), configuration.get(name))
            for name in configuration
            if name != "tools" and recorded.get(name) != configuration.get(name)
        }
        if state.header.get("task") != task:
            changes["task"] = (state.header.get("task"), task)
        tools_changed = recorded.get("tools") != configuration["tools"]
        if state.closed:  # returned without reading the journal, but never to another agent
            if tools_changed:
                changes["tools"] = _tool_changes(recorded["tools"], configuration["tools"])
            if changes:
                raise ConfigurationChanged(run_id, changes)
            return cls(run_id, checkpointer, {}), state.final
        steps = index(await load_events(checkpointer, run_id))
        if tools_changed:  # a journaled call to a tool that is gone names its step
            _check_used_tools(run_id, steps, recorded["tools"], configuration["tools"])
            changes["tools"] = _tool_changes(recorded["tools"], configuration["tools"])
        if changes:
            raise ConfigurationChanged(run_id, changes)
        return cls(run_id, checkpointer, steps), None

    def peek(self) -> StepHistory | None:
        """What the journal holds at the next position, without minting a step."""
        return self.steps.get(self.position)

    def next_step(self, kind: str) -> tuple[str, StepHistory | None]:
        """Mint the next step's id and return what the journal holds at its position.

        Raises `ReplayDivergence` when the journal holds a step of another kind there.
        """
        position = self.position
        self.position += 1
        new_id = step_id(position, kind)
        history = self.steps.get(position)
        if history is not None and history.step_id != new_id:
            raise ReplayDivergence(self.run_id, new_id, f"a {history.kind} step", f"a {kind} step")
        return new_id, history

    async def write(self, *events: Step) -> None:
        """Append events in one commit. The loop yields an event only after writing it."""
        await self.checkpointer.append(self.run_id, events)


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
