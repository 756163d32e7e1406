"""Fork: a new run whose journal is another run's prefix, from a step a person chooses on.

The original run is only read, never written. The fork starts with every event of the steps
before the fork point, and its header says where it came from; resumed by the same agent, it
replays that prefix (nothing is paid again) and does the fork point and what follows anew.
It is written in one transaction (the store's `start_with`), so a process killed during a
fork leaves no fork or the whole fork.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .checkpointer import Checkpointer
from .codec import Record, check_run_id, decode_all, encode
from .errors import ConfigurationError, JournalError, RunBusy
from .events import DelegationStep, ModelStep, Phase, Step, ToolStep, parse_step_id
from .messages import ModelResponse, Usage, check_text

_ANOTHER = "choose another new run id"


class ForkRefused(JournalError):
    """`fork` refused; nothing was written. `reason` is `busy`, `no run`, `taken` (the new
    run id exists), `no step` or `not a model step`; the message names the bad value."""

    def __init__(self, run_id: str, reason: str, problem: str) -> None:
        self.run_id, self.reason, self.problem = run_id, reason, problem
        super().__init__(f"cannot fork run {run_id!r}: {problem}; nothing was written")


class NewEffect(NamedTuple):
    """A call to a non-idempotent tool the original run made at or after the fork point.
    Made again by the fork, it is a new, real effect: its idempotency key is the fork's
    (`fork_key` at the same step), not the original's, so a service that deduplicates by key
    sees two requests."""

    step_id: str
    tool: str
    arguments: dict[str, Any] | str
    original_key: str
    fork_key: str


@dataclass(frozen=True, slots=True)
class Forked:
    """What `fork` wrote: the new run (`run_id`), the run and step it was forked from, how
    many events it starts with, the sub-runs copied with it, whether step `at` holds a
    person's answer, and the effects the fork makes anew if it calls those tools again."""

    run_id: str
    source: str
    at: str
    events: int
    sub_runs: tuple[str, ...]
    replaced: bool
    new_effects: tuple[NewEffect, ...]


async def fork(
    checkpointer: Checkpointer,
    run_id: str,
    *,
    at: int | str,
    new_run_id: str,
    answer: str | ModelResponse | None = None,
    by: str = "operator",
) -> Forked:
    """Start run `new_run_id` with the journal of `run_id` up to step `at`, not included.

    `at` is a step as `synaptum-lite show` lists it: its number (4) or its id
    (`'000004-model'`). Every event of the steps before it is copied, and so is the sub-run
    of each delegation among them (`new_run_id/000003-delegate`). With `answer` (text, or a
    `ModelResponse` that calls tools), step `at` must be a model step: it is journaled as
    answered by `by` in place of the model (`ModelStep.replaced_by`), with zero usage, as no
    model was called; later turns read it as the model's earlier answer.

    Raises `ForkRefused` (nothing written) when a driver holds either run, `run_id` does not
    exist, `new_run_id` does, or the run has no step `at` (or no model step, with `answer`);
    `ConfigurationError` for a bad argument or a store without `start_with`.
    """
    start_with = _start_with(checkpointer)
    check_run_id(run_id)
    check_run_id(new_run_id)
    if new_run_id == run_id:  # it exists (or is refused as missing): one hold, not two
        raise ForkRefused(run_id, "taken", f"run {run_id!r} is the run to fork: {_ANOTHER}")
    try:
        async with checkpointer.hold(run_id), checkpointer.hold(new_run_id):
            return await _fork_held(checkpointer, start_with, run_id, at, new_run_id, answer, by)
    except RunBusy as busy:
        problem = f"a driver holds run {busy.run_id!r} now ({busy.location})"
        then = "wait for it to finish or stop it, then fork again"
        raise ForkRefused(run_id, "busy", f"{problem}: {then}") from None


async def _fork_held(
    checkpointer: Checkpointer,
    start_with: StartWith,
    run_id: str,
    at: int | str,
    new_run_id: str,
    answer: str | ModelResponse | None,
    by: str,
) -> Forked:
    state = await checkpointer.load(run_id)
    if state.header is None:
        then = "name a run it holds (synaptum-lite runs STORE lists them)"
        raise ForkRefused(run_id, "no run", f"{checkpointer!r} holds no such run: {then}")
    if (await checkpointer.load(new_run_id)).header is not None:
        raise ForkRefused(run_id, "taken", f"run {new_run_id!r} already exists: {_ANOTHER}")
    events = decode_all(new_run_id, await checkpointer.records(run_id))
    position, start = _fork_point(run_id, events, at)
    prefix = [e for e in events if e.position < position]
    if answer is not None:
        prefix += _replacement(run_id, events, position, answer, by)
    header = {**state.header, "forked_from": {"run_id": run_id, "at": start}}
    sub_runs = await _sub_runs(checkpointer, run_id, new_run_id, prefix)
    left = [await _left_by_a_killed_fork(checkpointer, run_id, *r) for r in sub_runs]
    for sub_run, written in zip(sub_runs, left, strict=True):
        if not written:  # sub-runs first, the fork last: killed between, there is no fork
            await start_with(*sub_run)
    next_seq = await start_with(new_run_id, header, prefix)
    tools = state.header["agent"].get("tools", {})
    return Forked(
        new_run_id,
        run_id,
        start,
        next_seq,
        tuple(r[0] for r in sub_runs),
        answer is not None,
        _new_effects(run_id, new_run_id, events, position, tools),
    )


def _fork_point(run_id: str, events: list[Step], at: int | str) -> tuple[int, str]:
    """The position and id of step `at`. Raises `ForkRefused` when the run has no such step."""
    steps = {e.position: e.step_id for e in events}
    if isinstance(at, bool) or not isinstance(at, int | str):
        raise ConfigurationError(
            f"at must be a step number or a step id as synaptum-lite show lists it "
            f"('000003-tool'), got {at!r:.80}"
        )
    if not steps:
        raise ForkRefused(run_id, "no step", "it has no steps yet: run it, there is no past")
    position = at if isinstance(at, int) else _position(at)
    if position not in steps or at not in (position, steps[position]):
        last = max(steps)
        valid = f"0 to {last} ({steps[0]} to {steps[last]})"
        problem = f"it has no step {at!r}: its steps are {valid}"
        raise ForkRefused(run_id, "no step", f"{problem}; fork at one of them")
    return position, steps[position]


def _position(text: str) -> int:
    try:
        return parse_step_id(text)[0]
    except ValueError:
        return -1


def _replacement(
    run_id: str, events: list[Step], position: int, answer: str | ModelResponse, by: str
) -> list[Step]:
    """Step `position` answered by `by`: its request as the original journaled it, and the
    person's answer, marked as theirs. Raises `ForkRefused` when it is no model step."""
    asked = [e for e in events if e.position == position and isinstance(e, ModelStep)]
    if not asked:
        models = ", ".join(sorted({e.step_id for e in events if isinstance(e, ModelStep)}))
        at = next(e.step_id for e in events if e.position == position)
        problem = f"step {at} is not a model step, and an answer replaces a model's"
        raise ForkRefused(run_id, "not a model step", f"{problem}: fork at one of {models}")
    if not isinstance(by, str) or not by.strip():
        raise ConfigurationError(f"by must name who answers (a person, as text), got {by!r:.80}")
    check_text(f"by {by!r}", by)
    if not isinstance(answer, str | ModelResponse):
        raise ConfigurationError(f"answer must be text or a ModelResponse, got {answer!r:.80}")
    response = ModelResponse(text=answer) if isinstance(answer, str) else answer
    request = dataclasses.replace(
        asked[0], phase=Phase.ATTEMPTED, attempt=1, response=None, replaced_by=None
    )
    paid_nothing = dataclasses.replace(response, usage=Usage(0, 0, 0))  # no model was called
    answered = dataclasses.replace(
        request, phase=Phase.COMPLETED, response=paid_nothing, replaced_by=by
    )
    try:
        encode(answered)
    except ValueError as exc:
        raise ConfigurationError(f"the answer cannot be journaled: {exc}") from None
    return [request, answered]


Run = tuple[str, dict[str, Any], list[Step]]  # a run to write: its id, header and events


async def _sub_runs(
    checkpointer: Checkpointer, source: str, target: str, events: list[Step]
) -> list[Run]:
    """The sub-run of each delegation in `events`, under the fork's name, deepest first."""
    runs: list[Run] = []
    for step_id in dict.fromkeys(e.step_id for e in events if isinstance(e, DelegationStep)):
        old, new = f"{source}/{step_id}", f"{target}/{step_id}"  # as `sub_run_id` names them
        state = await checkpointer.load(old)
        if state.header is None:
            continue  # never began
        copied = decode_all(new, await checkpointer.records(old))
        runs += await _sub_runs(checkpointer, old, new, copied)
        runs.append((new, {**state.header, "forked_from": {"run_id": old}}, copied))
    return runs


async def _left_by_a_killed_fork(
    checkpointer: Checkpointer, run_id: str, target: str, header: dict[str, Any], events: list[Step]
) -> bool:
    """Whether `target` holds exactly this already (a sub-run written by a fork killed before
    it wrote the fork itself). Raises `ForkRefused` when it holds anything else."""
    held = (await checkpointer.load(target)).header
    if held is None:
        return False
    if held == header and _same(await checkpointer.records(target), events):
        return True
    raise ForkRefused(run_id, "taken", f"run {target!r} already exists: {_ANOTHER}")


def _same(records: Sequence[Record], events: Sequence[Step]) -> bool:
    def key(step_id: str, phase: str, attempt: int, data: str) -> tuple[Any, ...]:
        return step_id, phase, attempt, json.loads(data)

    return [key(*r[1:]) for r in records] == [key(*encode(e)) for e in events]


def _new_effects(
    run_id: str, new_run_id: str, events: list[Step], position: int, tools: dict[str, Any]
) -> tuple[NewEffect, ...]:
    """The non-idempotent tool calls the original made at or after `position` (refused ones
    never ran: left out)."""
    made: dict[str, NewEffect] = {}
    for e in events:
        if not isinstance(e, ToolStep) or isinstance(e, DelegationStep) or e.position < position:
            continue
        if (tools.get(e.call.name) or {}).get("idempotent") is True:
            continue
        if e.decision is not None and e.decision.get("action") in ("deny", "terminate"):
            made.pop(e.step_id, None)
            continue
        keys = f"{run_id}/{e.step_id}", f"{new_run_id}/{e.step_id}"
        made[e.step_id] = NewEffect(e.step_id, e.call.name, e.call.arguments, *keys)
    return tuple(made.values())


StartWith = Callable[[str, dict[str, Any], Sequence[Step]], Awaitable[int]]


def _start_with(checkpointer: Checkpointer) -> StartWith:
    start_with: StartWith | None = getattr(checkpointer, "start_with", None)
    if not callable(start_with):
        raise ConfigurationError(
            f"{checkpointer!r} has no start_with(run_id, header, events): a fork is written in "
            "one transaction, so that a process killed during it leaves no fork or the whole "
            "fork; fork in a store that has it (memory, SQLite, PostgreSQL)"
        )
    return start_with
