"""The agent and its loop: a stream of steps, each journaled before it is yielded.

Per turn: model step *attempted* → *completed* → for each tool call: tool step *attempted* →
*completed* → … until the model answers without calling tools: the *final* step. Stopping
iteration interrupts the run; calling `run` again with the same `run_id` resumes it.

Every step follows the same three beats: look at the journal → act → record. What the
journal already holds at a position is never done again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from .agent_arguments import check_limits, checked_parts
from .checkpointer import load_events
from .context import Context
from .errors import ConfigurationError, ProviderError, StepLimitExceeded
from .events import ApprovalStep, Decision, DelegationStep, ModelStep, Phase, Step, ToolStep
from .execution import as_tool
from .journal import Journal
from .messages import (
    ModelRequest,
    ModelResponse,
    Usage,
    journalable,
    lone_surrogate,
    without_surrogates,
)
from .output import OutputFormat
from .policy import Action
from .session import Session
from .steps import RunPass
from .tools import Risk, Tool


@dataclass(frozen=True, slots=True)
class TextFragment:
    """A piece of a model step's text, yielded by `Agent.stream` as it arrives. Not journaled.

    `call` numbers the calls this pass makes to the model for the step, from 1: when one
    fails mid-stream and is retried, the next fragment has a higher `call` and the text starts
    again from its beginning (what the failed call sent is not part of the answer)."""

    kind = "text"
    step_id: str
    text: str
    call: int = 1


class Agent:
    """A model, its instructions and its tools: what a run executes.

    `output`, a dataclass, asks for a typed answer: the final text is parsed into it, and an
    invalid answer is shown to the model in a new turn. `max_steps` bounds the model turns of
    one run. `max_tool_output` caps each tool result where it enters the context.
    `delegates` are sub-agents the model can call like tools (`description` is how this agent
    is presented when it is a delegate); each call is a durable step running a sub-run of
    its own. Everything but `max_steps` is the agent's *configuration*: a run refuses to
    resume under a different one.
    """

    def __init__(
        self,
        name: str,
        *,
        model: str,
        instructions: str,
        tools: Iterable[Tool] = (),
        output: type | None = None,
        max_steps: int = 25,
        max_tool_output: int | None = None,
        delegates: Iterable[Agent] = (),
        description: str | None = None,
    ) -> None:
        tools_by_name, delegates_by_name = checked_parts(
            name,
            model=model,
            instructions=instructions,
            description=description,
            tools=tools,
            delegates=delegates,
            agent_class=Agent,
        )
        self.name = name
        self.model = model
        self.instructions = instructions
        self.tools: dict[str, Tool] = tools_by_name
        self.delegates: dict[str, Agent] = delegates_by_name
        lines = instructions.strip().splitlines()
        self.description: str = description or (lines[0] if lines else "")
        self._output = OutputFormat(name, output)
        check_limits(name, max_steps, max_tool_output)
        self.output = output
        self.max_steps = max_steps
        self.max_tool_output = max_tool_output
        self._callable = {**self.tools, **{d.name: as_tool(d) for d in self.delegates.values()}}
        self._specs = tuple(t.spec for t in self._callable.values())
        described = json.dumps(self.configuration, ensure_ascii=False, default=repr)
        at = lone_surrogate(described)
        if at is not None:  # a journal could not keep it: refused before anything is paid
            raise ConfigurationError(
                f"agent {name!r}: its name, model, instructions or a tool's description holds "
                f"{described[at]!r}, half of a surrogate pair and not a character, which a "
                "journal cannot keep (UTF-8 has no form for it); decode that text properly"
            )

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model!r}, tools={list(self.tools)})"

    @property
    def configuration(self) -> dict[str, Any]:
        """What a journal records of the agent that started a run, and checks on resume."""
        return {
            "name": self.name,
            "model": self.model,
            "instructions": self.instructions,
            "tools": {name: t.fingerprint() for name, t in self.tools.items()},
            "output": self._output.schema,
            "max_tool_output": self.max_tool_output,
            "delegates": {name: d.configuration for name, d in self.delegates.items()},
        }

    @property
    def risk(self) -> Risk:
        """The highest risk of what this agent can do, through its tools and its delegates."""
        risks = [t.risk for t in self.tools.values()] + [d.risk for d in self.delegates.values()]
        return max(risks, default=Risk.READ)

    def run(self, task: str, *, session: Session) -> AsyncIterator[Step]:
        """Drive the run `session.run_id` on `task`, yielding each step once it is journaled.

        A new run starts; a journaled one resumes (completed steps are yielded as replayed and
        cost nothing); a closed one yields its final step only. A run waiting for a person
        yields the pending `ApprovalStep` and ends without a final step. Raises `RunBusy`,
        `ConfigurationChanged`, `ReplayDivergence`, `UncertainEffect`, `StepLimitExceeded`,
        and `ProviderError` once retries are exhausted.
        """
        return self._drive(task, session, streaming=False)

    def stream(self, task: str, *, session: Session) -> AsyncIterator[Step | TextFragment]:
        """Like `run`, with each new model step's text yielded as `TextFragment`s as it arrives.

        Closing the iterator (`aclose()`) stops the generation upstream. A replayed model step
        is yielded once, as its recorded result, without fragments.
        """
        return self._drive(task, session, streaming=True)

    # ── the loop ────────────────────────────────────────────────────────────────────────────

    async def _drive(self, task: str, session: Session, *, streaming: bool) -> AsyncIterator[Any]:
        """The loop: each step looks at the journal, acts, and records, in that order."""
        if not isinstance(session, Session):
            raise ConfigurationError(
                f"agent {self.name!r}: session must be a Session (which run, through which "
                f"gateway, journaled where), got {session!r:.80}; pass "
                "session=Session(run_id, gateway, checkpointer)"
            )
        _check_task(task, session.run_id)
        async with session.checkpointer.hold(session.run_id):
            journal, closed = await Journal.open(
                session.run_id, session.checkpointer, self.configuration, task
            )
            if closed is not None:
                yield self._output.typed(closed)
                return
            instructions = self._output.instructions(self.instructions)
            context = Context(instructions, task, max_tool_output=self.max_tool_output)
            run = RunPass(journal, session, context, Usage(0, 0, 0), self._callable, self.delegates)
            for _turn in range(self.max_steps):
                # ── a model step: check the journal → call the model → record its response
                refusal = run.review_model_call()
                if refusal is not None:
                    yield await run.finish(reason=refusal)
                    return
                model_id, history = journal.next_step("model")
                fingerprint = context.fingerprint(self.model, self._specs)
                journal.check_same_request(model_id, history, fingerprint)
                if history is not None and isinstance(history.completed, ModelStep):
                    model_step = history.completed.as_replayed()  # already paid: never again
                else:
                    attempted = ModelStep(
                        run_id=session.run_id,
                        step_id=model_id,
                        phase=Phase.ATTEMPTED,
                        attempt=history.attempt + 1 if history is not None else 1,
                        fingerprint=fingerprint,
                    )
                    await journal.write(attempted)  # on disk before anyone hears of it
                    yield attempted
                    await journal.confirm_hold()  # still ours after the consumer's pause
                    request = ModelRequest(self.model, tuple(context.messages), self._specs)
                    response: ModelResponse | None = None
                    for call_number in range(1, session.retry.max_attempts + 1):
                        try:
                            if streaming:
                                # closing this generator closes the stream upstream at once
                                async with contextlib.aclosing(
                                    session.gateway.stream(request)
                                ) as upstream:
                                    async for item in upstream:
                                        if isinstance(item, ModelResponse):
                                            response = item
                                        else:
                                            yield TextFragment(
                                                model_id, without_surrogates(item), call_number
                                            )
                            else:
                                response = await session.gateway.complete(request)
                            break
                        except ProviderError as exc:
                            if not exc.retryable or call_number == session.retry.max_attempts:
                                raise
                            await session.sleep(session.retry.delay(call_number, exc.retry_after))
                    if response is None:
                        raise ConfigurationError(
                            f"{type(session.gateway).__name__}.stream ended without a ModelResponse"
                        )
                    # paid for: recorded whatever it holds (what a journal cannot keep becomes
                    # an error the model reads, or U+FFFD in text), never lost to an encoding
                    # error
                    model_step = ModelStep(
                        run_id=session.run_id,
                        step_id=model_id,
                        phase=Phase.COMPLETED,
                        attempt=attempted.attempt,
                        fingerprint=fingerprint,
                        response=journalable(response),
                    )
                    await journal.write(model_step)
                yield model_step
                answer = model_step.response
                assert answer is not None  # a completed model step holds its response
                run.usage += answer.usage
                context.add_response(answer)

                for call in answer.tool_calls:
                    # ── a tool step: check the policy and the journal → act → record
                    kind = "delegate" if call.name in self.delegates else "tool"
                    target = self._callable.get(call.name)
                    refusal_decision: Decision | None = None
                    history = journal.peek()
                    if history is None:  # never seen: the gateway reviews it now
                        verdict = run.review_tool_call(kind, call, target)
                        if verdict.action is Action.REQUIRE_APPROVAL:
                            approval_id, _ = journal.next_step("approval")
                            request_event = ApprovalStep(
                                run_id=session.run_id,
                                step_id=approval_id,
                                phase=Phase.ATTEMPTED,
                                call=call,
                                reason=verdict.reason,
                            )
                            await journal.write(request_event)
                            yield request_event
                            return  # suspended on disk until a person decides (Session.decide)
                        if verdict.action in (Action.DENY, Action.TERMINATE):
                            ends = verdict.action is Action.TERMINATE
                            refusal_decision = {
                                "action": "terminate" if ends else "deny",
                                "by": "policy",
                                "reason": verdict.reason,
                            }
                    elif history.kind == "approval":  # a person was asked: what they decided
                        approval = journal.approval(call)
                        yield approval
                        if approval.pending:
                            return  # still waiting; nobody is asked twice
                        if not approval.granted:
                            denial = approval.decision
                            assert denial is not None  # a decided approval holds its decision
                            refusal_decision = {
                                "action": "deny",
                                "by": str(denial.get("by")),
                                "reason": denial.get("note") or "denied",
                            }
                    if refusal_decision is not None:
                        outcome = await run.refuse(kind, call, refusal_decision)
                    else:
                        tool_id, history = journal.next_step(kind)
                        journal.check_same_call(tool_id, history, call)
                        if history is not None and isinstance(history.completed, ToolStep):
                            outcome = history.completed.as_replayed()
                        else:
                            cls = DelegationStep if kind == "delegate" else ToolStep
                            attempted_call = cls(
                                run_id=session.run_id,
                                step_id=tool_id,
                                phase=Phase.ATTEMPTED,
                                attempt=journal.next_attempt(
                                    tool_id,
                                    call,
                                    history,
                                    idempotent=target is None or target.idempotent,
                                ),
                                call=call,
                            )
                            # write-ahead: on disk before it is yielded, so before the effect
                            await journal.write(attempted_call)
                            try:
                                yield attempted_call
                            except BaseException:
                                # Closed while suspended here (`aclose()`, or the event loop
                                # cancelling a generator the consumer abandoned): the tool never
                                # began, and only this process can know it (a SIGKILL here
                                # leaves the step uncertain). Say so, so that a resume runs it
                                # without asking.
                                if target is not None and not target.idempotent:
                                    await run.record_not_started(attempted_call)
                                raise
                            if target is not None and not target.idempotent:
                                # the consumer may have paused for long: if the run was taken
                                # meanwhile, its new driver may have done this already
                                await journal.confirm_hold()
                            outcome = await run.perform(call, target, attempted_call)
                            await journal.write(outcome)
                    yield outcome
                    if isinstance(outcome, DelegationStep) and outcome.usage is not None:
                        run.usage += outcome.usage
                    if outcome.decision and outcome.decision.get("action") == "terminate":
                        yield await run.finish(reason=outcome.decision.get("reason"))
                        return
                    assert outcome.result is not None  # a completed tool step holds its result
                    context.add_result(call, outcome.result)

                if answer.tool_calls:
                    continue
                output, problem = self._output.read(answer.text)
                if problem is not None:
                    context.add_feedback(problem)
                    continue
                yield await run.finish(text=answer.text, output=output)
                return
            # the last step on disk, which may lie past where this pass stopped: a run resumed
            # with a lower max_steps replays up to the limit and stops before its journal ends
            journaled = await load_events(session.checkpointer, session.run_id)
            raise StepLimitExceeded(session.run_id, self.max_steps, journaled[-1].step_id)


def _check_task(task: Any, run_id: str) -> None:
    """Refuse a task a journal cannot keep, before anything is run or paid."""
    at = lone_surrogate(task) if isinstance(task, str) else None
    if isinstance(task, str) and at is None:
        return
    problem = (
        f"holds {task[at]!r} at index {at}, half of a surrogate pair and not a "
        "character, which a journal cannot keep (UTF-8 has no form for it)"
        if at is not None
        else f"is a {type(task).__name__}, not a str"
    )
    raise ConfigurationError(
        f"run {run_id!r}: the task {problem}; nothing was run or paid: pass "
        "the task as text (join a split surrogate pair, or put U+FFFD in its place)"
    )
