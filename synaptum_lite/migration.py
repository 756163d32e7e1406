"""Runs across a deploy: which of the versions a worker holds a run resumes on (`agent_for`),
and an operator moving an open run to another configuration from its next step on (`migrate`).

A migration is one event, appended in one commit: a store killed during it keeps the journal
as it was or with the migration, never a part of it. The journal's steps before it stay what
they were; a resume replays them and runs the steps after it on the new configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .agent import Agent
from .checkpointer import Checkpointer, load_events
from .codec import check_run_id
from .errors import ConfigurationError, SynaptumError
from .events import ApprovalStep, MigrationStep, ModelStep, ToolStep, step_id
from .journal import StepHistory, differences, in_effect, index
from .messages import check_text


async def agent_for(checkpointer: Checkpointer, run_id: str, agents: Iterable[Agent]) -> Agent:
    """The agent among `agents` that the run `run_id` runs on: the one with the name and
    version its journal recorded when it started, or when it was last migrated.

    Raises `VersionNotHeld` naming the recorded version and the ones held, and
    `ConfigurationError` for a run never started (no version yet: start it with the agent
    you deploy) or for two agents with one name and version.
    """
    held = list(agents)
    if not held or any(not isinstance(a, Agent) for a in held):
        raise ConfigurationError(f"agents must be a non-empty list of Agent, got {held!r:.80}")
    labels = [_label(a.configuration) for a in held]
    if len(set(labels)) < len(labels):
        raise ConfigurationError(
            f"two agents are {max(labels, key=labels.count)}; give each version its own label"
        )
    state = await checkpointer.load(check_run_id(run_id))
    if state.header is None:
        raise ConfigurationError(
            f"run {run_id!r} was never started in {checkpointer!r}, so it runs on no version "
            "yet; start it with the agent you deploy"
        )
    recorded = _label(in_effect(state.header["agent"], await load_events(checkpointer, run_id)))
    for agent, label in zip(held, labels, strict=True):
        if label == recorded:
            return agent
    raise VersionNotHeld(run_id, recorded, labels)


class VersionNotHeld(SynaptumError):
    """None of the agents a worker holds has the name and version a run runs on (`agent_for`)."""

    def __init__(self, run_id: str, recorded: str, held: list[str]) -> None:
        self.run_id, self.recorded, self.held = run_id, recorded, held
        super().__init__(
            f"run {run_id!r} runs on {recorded}; the agents held are {', '.join(held) or 'none'}"
            ": deploy that version beside the new one until its runs end, or migrate the run"
        )


class MigrationRefused(SynaptumError):
    """A run cannot be moved to another configuration; `reason` says why and what to do."""

    def __init__(self, run_id: str, reason: str) -> None:
        self.run_id, self.reason = run_id, reason
        super().__init__(f"run {run_id!r} cannot be migrated: {reason}; nothing was written")


def _label(configuration: dict[str, Any]) -> str:
    version = configuration.get("version")
    which = f"version {version!r}" if version is not None else "without a version"
    return f"{configuration.get('name')!r} {which}"


async def migrate(
    checkpointer: Checkpointer, run_id: str, agent: Agent, *, by: str
) -> MigrationStep:
    """Move the open run `run_id` to `agent`'s configuration from its next step on, on the
    word of `by` (a person). Returns the migration event, journaled after the run's last step:
    resuming with `agent` works from then on, and with the agent before it is refused.

    Raises `RunBusy` when a driver holds the run, and `MigrationRefused` when the run does not
    exist or is closed, when a step is in flight (attempted, never completed), when nothing
    changes, or when a journaled step would mean another step under `agent`: a tool it called
    is gone or declared with another risk or idempotency, a delegate it called is gone (or
    renamed), a name is a tool in one configuration and a delegate in the other.
    """
    check_run_id(run_id)
    if not isinstance(agent, Agent):
        raise ConfigurationError(f"run {run_id!r}: migrate to an Agent, got {agent!r:.80}")
    if not isinstance(by, str) or not by.strip():
        raise ConfigurationError(
            f"run {run_id!r}: by must name who migrates (a person, as text), got {by!r:.80}; "
            "nothing was written"
        )
    check_text(f"run {run_id!r}: by {by!r}", by)
    async with checkpointer.hold(run_id):
        state = await checkpointer.load(run_id)
        if state.header is None:
            raise MigrationRefused(run_id, f"{checkpointer!r} holds no such run; list its runs")
        if state.closed:
            raise MigrationRefused(run_id, "it is closed, and a closed run runs no step again")
        events = await load_events(checkpointer, run_id)
        before, after = in_effect(state.header["agent"], events), agent.configuration
        changed = differences(before, after)
        if not changed:
            raise MigrationRefused(run_id, "it already runs on that configuration")
        steps = index(events)
        for position in sorted(steps):
            _check_step(run_id, steps[position], before, after)
        migration = MigrationStep(
            run_id=run_id,
            step_id=step_id(max(steps, default=-1) + 1, "migration"),
            by=by,
            configuration=after,
            changed={name: list(change) for name, change in changed.items()},
        )
        await checkpointer.append(run_id, [migration])
    return migration


def _check_step(
    run_id: str, history: StepHistory, before: dict[str, Any], after: dict[str, Any]
) -> None:
    """Refuse a step in flight, and a step whose calls would mean other steps after `after`."""
    if history.completed is None and history.kind not in ("approval", "migration"):
        raise MigrationRefused(
            run_id,
            f"step {history.step_id} is in flight (attempted, never completed): let it "
            "complete on the agent that started it (agent_for), or resolve it, then migrate",
        )
    event = history.completed or history.attempted
    calls = event.response.tool_calls if isinstance(event, ModelStep) and event.response else ()
    if isinstance(event, ToolStep | ApprovalStep):
        calls = (event.call,)
    for call in calls:
        problem = _meaning_changed(call.name, before, after)
        if problem is not None:
            raise MigrationRefused(
                run_id,
                f"step {history.step_id} called {problem}, so the journal's positions would "
                "mean other steps; keep it in the new configuration, or start a new run_id",
            )


def _meaning_changed(name: str, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """What about a called name changes between two configurations, said; None if nothing."""
    was, now = (name in (c.get("delegates") or {}) for c in (before, after))
    if was and not now:
        return f"delegate {name!r}, which the new configuration does not have (renamed or gone)"
    if now and not was:
        return f"{name!r}, a tool then and a delegate in the new configuration"
    old, new = ((c.get("tools") or {}).get(name) for c in (before, after))
    if was or old is None:
        return None  # a delegate kept, or a name that was no tool (the model read an error)
    if new is None:
        return f"tool {name!r}, which the new configuration does not have"
    for key in ("risk", "idempotent"):
        if old.get(key) != new.get(key):
            return f"tool {name!r}, declared with {key} {old.get(key)!r}, now {new.get(key)!r}"
    return None
