"""The loop: a run as a stream of steps, each journaled before it is yielded.

Read it top to bottom. `drive` runs turns until the model answers without calling tools; a
turn is one `model_step` and one `tool_step` per tool call, and the run ends with `finish`.
Every step is written the same way, in the same order:

    check the journal  →  act  →  record

What the journal already holds at a position is never done again: a completed step is
yielded as recorded (replayed) and costs nothing. Stopping iteration interrupts the run;
calling `run` again with the same `run_id` resumes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from .agent_arguments import check_session, check_task
from .budget import Tally, models_of
from .checkpointer import load_events
from .context import Context
from .errors import ConfigurationError, ProviderError, StepLimitExceeded
from .events import (
    ApprovalStep,
    Decision,
    DelegationStep,
    FinalStep,
    ModelStep,
    Phase,
    Step,
    ToolStep,
    step_id,
)
from .execution import Delegate, run_delegation, run_tool
from .journal import Journal
from .messages import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    journalable,
    without_surrogates,
)
from .output import OutputFormat
from .policy import Action, Proposal, Verdict
from .prompt import Sampling
from .session import Session
from .tools import Tool, ToolContext


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


@dataclass(frozen=True)
class Plan:
    """What the loop needs of an agent: its configuration, as `Agent` hands it over."""

    name: str
    model: str
    instructions: str  # with the output schema's request, when there is one
    configuration: dict[str, Any]  # what the journal's header records and a resume checks
    tools: dict[str, Tool]  # what the model may call: the tools, and the delegates as tools
    delegates: dict[str, Delegate]
    output: OutputFormat
    specs: tuple[ToolSpec, ...]  # the tools' schemas, as the model reads them
    max_steps: int
    max_tool_output: int | None
    sampling: Sampling | None = None  # sent with each request; in `configuration` too


@dataclass
class Run:
    """One pass of a run: what its steps share."""

    plan: Plan
    session: Session
    journal: Journal
    context: Context
    streaming: bool
    usage: Usage = field(default_factory=lambda: Usage(0, 0, 0))
    answer: ModelResponse | None = None  # the last model step's response
    over: bool = False  # finished, or suspended until a person decides
    tally: Tally = field(default_factory=Tally)  # what its budget counted, in this pass

    @property
    def run_id(self) -> str:
        return self.session.run_id


async def drive(plan: Plan, task: str, session: Session, *, streaming: bool) -> AsyncIterator[Any]:
    """The run `session.run_id` on `task`: turns until the model answers without tools."""
    check_session(plan.name, session)
    check_task(task, session.run_id)
    async with session.checkpointer.hold(session.run_id):
        journal, closed = await Journal.open(
            session.run_id, session.checkpointer, plan.configuration, task
        )
        if closed is not None:  # a closed run returns what happened, and calls nothing
            yield plan.output.typed(closed)
            return
        context = Context(plan.instructions, task, max_tool_output=plan.max_tool_output)
        run = Run(plan, session, journal, context, streaming)
        for _turn in range(plan.max_steps):
            async with contextlib.aclosing(model_step(run)) as steps:
                async for event in steps:
                    yield event
            if run.over:
                return
            answer = run.answer
            assert answer is not None  # a model step that does not end the run answers
            for call in answer.tool_calls:
                # closing this run closes the step inside it at once (it may have to record)
                async with contextlib.aclosing(tool_step(run, call)) as steps:
                    async for event in steps:
                        if isinstance(event, DelegationStep):  # a sub-run or remote agent paid
                            run.tally.spent = None
                        yield event
                if run.over:
                    return
            if answer.tool_calls:
                continue
            output, problem = plan.output.read(answer.text)
            if problem is not None:  # an invalid typed answer: the model reads why, anew
                context.add_feedback(problem)
                continue
            for migration in journal.passed_migrations():
                yield migration
            yield await finish(run, text=answer.text, output=output)
            return
        # the last step on disk, which may lie past where this pass stopped: a run resumed
        # with a lower max_steps replays up to the limit and stops before its journal ends
        journaled = await load_events(session.checkpointer, session.run_id)
        raise StepLimitExceeded(session.run_id, plan.max_steps, journaled[-1].step_id)


# ── a model step ─────────────────────────────────────────────────────────────────────────────


async def model_step(run: Run) -> AsyncGenerator[Step | TextFragment]:
    """Check the journal → call the model → record its response."""
    run.answer = None
    for migration in run.journal.passed_migrations():  # an operator's, read as it is
        yield migration
    refusal = review_model_call(run)
    if refusal is not None:
        yield await finish(run, reason=refusal)
        return
    model_id, history = run.journal.next_step("model")
    fingerprint = run.context.fingerprint(run.plan.model, run.plan.specs)
    run.journal.check_same_request(model_id, history, fingerprint)
    if history is not None and isinstance(history.completed, ModelStep):
        step = history.completed.as_replayed()  # already paid: never again
    else:
        if run.session.budget is not None:  # what the journal says was spent, before paying
            models = models_of(run.plan.configuration)
            await run.session.budget._check(
                run.session.checkpointer,
                run.run_id,
                step_id=model_id,
                models=models,
                tally=run.tally,
            )
        attempted = ModelStep(
            run_id=run.run_id,
            step_id=model_id,
            phase=Phase.ATTEMPTED,
            attempt=history.attempt + 1 if history is not None else 1,
            fingerprint=fingerprint,
        )
        await run.journal.write(attempted)  # on disk before anyone hears of it
        yield attempted
        await run.journal.confirm_hold()  # still ours after the consumer's pause
        response = None
        async with contextlib.aclosing(call_model(run, model_id)) as answers:
            async for item in answers:
                if isinstance(item, TextFragment):
                    yield item
                else:
                    response = item
        assert response is not None  # call_model ends with the response, or raises
        # paid for: recorded whatever it holds (what a journal cannot keep becomes an error
        # the model reads, or U+FFFD in text), never lost to an encoding error
        step = dataclasses.replace(attempted, phase=Phase.COMPLETED, response=journalable(response))
        await run.journal.write(step)
        if run.session.budget is not None:
            run.session.budget._paid(run.tally, step, run.plan.configuration.get("model"))
    yield step
    answer = step.response
    assert answer is not None  # a completed model step holds its response
    run.usage += answer.usage
    run.context.add_response(answer)
    run.answer = answer


async def call_model(run: Run, model_id: str) -> AsyncGenerator[ModelResponse | TextFragment]:
    """The model's response to the context, retried with backoff on retryable errors only;
    streamed as fragments first when the caller streams."""
    session = run.session
    plan = run.plan
    request = ModelRequest(plan.model, tuple(run.context.messages), plan.specs, plan.sampling)
    for call_number in range(1, session.retry.max_attempts + 1):
        try:
            if not run.streaming:
                yield await session.gateway.complete(request)
                return
            # closing this generator closes the stream upstream at once
            async with contextlib.aclosing(session.gateway.stream(request)) as upstream:
                async for item in upstream:
                    if isinstance(item, ModelResponse):
                        yield item
                        return
                    yield TextFragment(model_id, without_surrogates(item), call_number)
            raise ConfigurationError(
                f"{type(session.gateway).__name__}.stream ended without a ModelResponse"
            )
        except ProviderError as exc:
            if not exc.retryable or call_number == session.retry.max_attempts:
                raise
            await session.sleep(session.retry.delay(call_number, exc.retry_after))


def review_model_call(run: Run) -> str | None:
    """Ask the gateway whether a new model call may leave; the reason if it ends the run."""
    history = run.journal.peek()
    if history is not None and history.completed is not None:
        return None  # already paid: replayed, not reviewed again
    proposal = Proposal(run.run_id, step_id(run.journal.position, "model"), "model")
    verdict = run.session.gateway.review(proposal)
    if verdict.action is Action.TERMINATE:
        return verdict.reason
    if verdict.action is not Action.ALLOW:
        raise ConfigurationError(
            f"a model call can be allowed or terminated, the policy said {verdict.action.value}"
        )
    return None


# ── a tool step ──────────────────────────────────────────────────────────────────────────────


async def tool_step(run: Run, call: ToolCall) -> AsyncGenerator[Step]:
    """Check the policy and the journal → run the tool (or refuse it) → record the outcome."""
    for migration in run.journal.passed_migrations():  # an operator's, read as it is
        yield migration
    kind = "delegate" if call.name in run.plan.delegates else "tool"
    refusal: Decision | None = None
    history = run.journal.peek()
    if history is None:  # never seen: the gateway reviews it now
        verdict = review_tool_call(run, kind, call)
        if verdict.action is Action.REQUIRE_APPROVAL:
            yield await ask_approval(run, call, verdict.reason)
            return
        refusal = refusal_by_policy(verdict)
    elif history.kind == "approval":  # a person was asked: what they decided
        approval = run.journal.approval(call)
        yield approval
        if approval.pending:
            run.over = True  # still waiting; nobody is asked twice
            return
        refusal = denial_by_person(approval)
    if refusal is not None:
        outcome = await refuse(run, kind, call, refusal)
    else:
        outcome = await begin(run, kind, call)
    if outcome.phase is Phase.ATTEMPTED:
        try:
            yield outcome  # the write-ahead record is on disk: the effect may happen now
        except BaseException:
            # Closed while suspended here (`aclose()`, or the event loop cancelling a run the
            # consumer abandoned): the tool never began, and only this process can know it (a
            # SIGKILL here leaves the step uncertain). Say so: a resume runs it without asking.
            await record_not_started(run, outcome)
            raise
        outcome = await act(run, outcome)
    yield outcome
    if isinstance(outcome, DelegationStep) and outcome.usage is not None:
        run.usage += outcome.usage
    if outcome.ends_run:
        yield await finish(run, reason=outcome.decision and outcome.decision.get("reason"))
        return
    assert outcome.result is not None  # a completed tool step holds its result
    run.context.add_result(call, outcome.result)


async def begin(run: Run, kind: str, call: ToolCall) -> ToolStep:
    """Check the journal → write the attempt ahead of the work: the attempted event, or the
    step's recorded outcome when the journal has it. Raises `UncertainEffect` when running
    it again could repeat an effect nobody allowed to repeat."""
    target = run.plan.tools.get(call.name)
    tool_id, history = run.journal.next_step(kind)
    run.journal.check_same_call(tool_id, history, call)
    if history is not None and isinstance(history.completed, ToolStep):
        return history.completed.as_replayed()
    idempotent = target is None or target.idempotent
    attempt = run.journal.next_attempt(tool_id, call, history, idempotent=idempotent)
    cls = DelegationStep if kind == "delegate" else ToolStep
    attempted = cls(
        run_id=run.run_id, step_id=tool_id, phase=Phase.ATTEMPTED, attempt=attempt, call=call
    )
    await run.journal.write(attempted)  # on disk before it is yielded, so before the effect
    return attempted


async def act(run: Run, attempted: ToolStep) -> ToolStep:
    """Run the tool (or the delegation's sub-run) → record its result."""
    call = attempted.call
    target = run.plan.tools.get(call.name)
    if target is not None and not target.idempotent:
        # the consumer may have paused long: if the run was taken meanwhile, its new driver
        # may have done this already
        await run.journal.confirm_hold()
    context = ToolContext(run.run_id, attempted.step_id, attempted.attempt)
    outcome: ToolStep
    if isinstance(attempted, DelegationStep):
        delegate, shown_as = run.plan.delegates[call.name], run.plan.tools[call.name]
        result, usage = await run_delegation(run.session, delegate, shown_as, call, context)
        outcome = dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result, usage=usage)
    else:
        result = await run_tool(run.session, target, call, context, run.plan.tools)
        outcome = dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result)
    await run.journal.write(outcome)
    return outcome


def review_tool_call(run: Run, kind: str, call: ToolCall) -> Verdict:
    """Ask the gateway whether a call never journaled may run."""
    target = run.plan.tools.get(call.name)
    proposal = Proposal(
        run.run_id,
        step_id(run.journal.position, kind),
        kind,
        call,
        target.risk if target else None,
        target.idempotent if target else None,
    )
    return run.session.gateway.review(proposal)


async def refuse(run: Run, kind: str, call: ToolCall, decision: Decision) -> ToolStep:
    """Check the journal → record a call refused before it ran: an outcome the model reads,
    not an uncertain effect. Its attempted and completed events are one commit."""
    refused_id, history = run.journal.next_step(kind)
    if history is not None and isinstance(history.completed, ToolStep):
        return history.completed.as_replayed()
    cls = DelegationStep if kind == "delegate" else ToolStep
    result = ToolResult(f"denied by {decision['by']}: {decision.get('reason')}", is_error=True)
    attempted = cls(run_id=run.run_id, step_id=refused_id, phase=Phase.ATTEMPTED, call=call)
    completed = dataclasses.replace(
        attempted, phase=Phase.COMPLETED, result=result, decision=decision
    )
    await run.journal.write(attempted, completed)
    return completed


def refusal_by_policy(verdict: Verdict) -> Decision | None:
    """What the journal records of a call the policy did not let run (None: it may run)."""
    if verdict.action not in (Action.DENY, Action.TERMINATE):
        return None
    if verdict.action is Action.TERMINATE:
        return {"action": "terminate", "by": "policy", "reason": verdict.reason}
    return {"action": "deny", "by": "policy", "reason": verdict.reason}


def denial_by_person(approval: ApprovalStep) -> Decision | None:
    """What the journal records of a call a person denied (None: granted)."""
    if approval.granted:
        return None
    denial = approval.decision
    assert denial is not None  # a decided approval holds its decision
    return {"action": "deny", "by": str(denial.get("by")), "reason": denial.get("note") or "denied"}


async def record_not_started(run: Run, attempted: ToolStep) -> None:
    """Journal that the attempt `attempted` never began: the runtime's own decision. Only a
    tool that is not idempotent needs it: anything else simply runs again on resume."""
    target = run.plan.tools.get(attempted.call.name)
    if target is None or target.idempotent:
        return
    decision: Decision = {
        "action": "not_started",
        "by": "runtime",
        "reason": "the run was closed before the tool began",
    }
    resolved = dataclasses.replace(attempted, phase=Phase.RESOLVED, decision=decision)
    with contextlib.suppress(Exception):  # unrecorded, it stays uncertain, as after a crash
        await run.journal.write(resolved)


# ── an approval, and the end ─────────────────────────────────────────────────────────────────


async def ask_approval(run: Run, call: ToolCall, reason: str) -> ApprovalStep:
    """Record that a person must decide on `call`; the run is suspended on disk until then
    (`Session.decide`), and resumes where it was."""
    approval_id, _ = run.journal.next_step("approval")
    request = ApprovalStep(
        run_id=run.run_id, step_id=approval_id, phase=Phase.ATTEMPTED, call=call, reason=reason
    )
    await run.journal.write(request)
    run.over = True
    return request


async def finish(
    run: Run, *, text: str | None = None, output: Any = None, reason: str | None = None
) -> FinalStep:
    """Record the run's final step: its answer, or the reason it ended without one."""
    final_id, _ = run.journal.next_step("final")
    final = FinalStep(
        run_id=run.run_id,
        step_id=final_id,
        text=text,
        output=output,
        reason=reason,
        usage=run.usage,
    )
    await run.journal.write(final)
    run.over = True
    return final
