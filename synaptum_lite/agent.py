"""The agent and its loop: a stream of steps, each journaled before it is yielded.

Per turn: model step *attempted* → *completed* → for each tool call: tool step *attempted* →
*completed* → … until the model answers without calling tools: the *final* step. Stopping
iteration interrupts the run; calling `run` again with the same `run_id` resumes it.

Every step follows the same three beats: look at the journal → act → record. What the
journal already holds at a position is never done again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

from .context import Context
from .errors import (
    ConfigurationError,
    InvalidToolCall,
    ProviderError,
    ReplayDivergence,
    StepLimitExceeded,
    SynaptumError,
    ToolDefinitionError,
    ToolResultNotSerializable,
    UncertainEffect,
)
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
from .journal import load_events
from .messages import (
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResult,
    Usage,
    journalable,
    lone_surrogate,
    without_surrogates,
)
from .policy import Action, Proposal, Verdict
from .replay import Journal, StepHistory
from .session import Session
from .tools import Risk, Tool, ToolContext, schema_of, to_result_text, tool


@dataclass(frozen=True, slots=True)
class TextFragment:
    """A piece of a model step's text, yielded by `Agent.stream` as it arrives. Not journaled."""

    kind = "text"
    step_id: str
    text: str


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
        self.name = name
        self.model = model
        self.instructions = instructions
        self.tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise ConfigurationError(
                    f"agent {name!r}: {item!r} is not a tool; decorate it with @tool"
                )
            if item.name in self.tools:
                raise ConfigurationError(f"agent {name!r}: two tools are named {item.name!r}")
            self.tools[item.name] = item
        self.delegates: dict[str, Agent] = {}
        for delegate in delegates:
            if not isinstance(delegate, Agent):
                raise ConfigurationError(f"agent {name!r}: delegate {delegate!r} is not an Agent")
            if delegate.name in self.tools or delegate.name in self.delegates:
                raise ConfigurationError(
                    f"agent {name!r}: two tools or delegates are named {delegate.name!r}"
                )
            self.delegates[delegate.name] = delegate
        self.description = description or instructions.strip().splitlines()[0]
        if output is not None and not (
            dataclasses.is_dataclass(output) and isinstance(output, type)
        ):
            raise ConfigurationError(
                f"agent {name!r}: output must be a dataclass type, got {output!r}"
            )
        if max_steps < 1:
            raise ConfigurationError(
                f"agent {name!r}: max_steps must be at least 1, got {max_steps}"
            )
        if max_tool_output is not None and (
            isinstance(max_tool_output, bool)
            or not isinstance(max_tool_output, int)
            or max_tool_output < 0
        ):
            raise ConfigurationError(
                f"agent {name!r}: max_tool_output must be None (no cap) or a number of "
                f"characters, 0 or more; got {max_tool_output!r}"
            )
        self.output = output
        self.max_steps = max_steps
        self.max_tool_output = max_tool_output
        self._output_schema, self._parse_output = None, None
        if output is not None:
            try:
                self._output_schema, self._parse_output = schema_of(output)
            except ToolDefinitionError as exc:
                raise ConfigurationError(
                    f"agent {name!r}: output={output.__name__} cannot be described: {exc.problem}"
                ) from None
        self._callable = {**self.tools, **{d.name: _as_tool(d) for d in self.delegates.values()}}
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
            "output": self._output_schema,
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
        _check_task(task, session.run_id)
        async with session.checkpointer.hold(session.run_id):
            journal, closed = await Journal.open(
                session.run_id, session.checkpointer, self.configuration, task
            )
            if closed is not None:
                yield self._typed(closed)
                return
            context = Context(self._system_prompt(), task, max_tool_output=self.max_tool_output)
            run = _Run(journal, session, context, Usage(0, 0, 0))
            for _turn in range(self.max_steps):
                # ── a model step: check the journal → call the model → record its response
                refusal = self._review_model_call(run)
                if refusal is not None:
                    yield await run.finish(reason=refusal)
                    return
                model_id, history = journal.next_step("model")
                request = ModelRequest(self.model, tuple(context.messages), self._specs)
                fingerprint = context.fingerprint(self.model, self._specs)
                _check_same_request(run, model_id, history, fingerprint)
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
                                            yield TextFragment(model_id, without_surrogates(item))
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
                    model_step = dataclasses.replace(
                        attempted, phase=Phase.COMPLETED, response=journalable(response)
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
                        verdict = self._review_tool_call(run, kind, call, target)
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
                        approval = _journaled_approval(run, call)
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
                        outcome = await self._refuse(run, kind, call, refusal_decision)
                    else:
                        tool_id, history = journal.next_step(kind)
                        _check_same_call(run, tool_id, history, call)
                        if history is not None and isinstance(history.completed, ToolStep):
                            outcome = history.completed.as_replayed()
                        else:
                            cls = DelegationStep if kind == "delegate" else ToolStep
                            attempted_call = cls(
                                run_id=session.run_id,
                                step_id=tool_id,
                                phase=Phase.ATTEMPTED,
                                attempt=_next_attempt(session, tool_id, call, target, history),
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
                                    await _record_not_started(journal, attempted_call)
                                raise
                            outcome = await self._perform(run, kind, call, target, attempted_call)
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
                output, problem = self._read_output(answer.text)
                if problem is not None:
                    context.add_feedback(problem)
                    continue
                yield await run.finish(text=answer.text, output=output)
                return
            # the last step on disk, which may lie past where this pass stopped: a run resumed
            # with a lower max_steps replays up to the limit and stops before its journal ends
            journaled = await load_events(session.checkpointer, session.run_id)
            raise StepLimitExceeded(session.run_id, self.max_steps, journaled[-1].step_id)

    def _review_model_call(self, run: _Run) -> str | None:
        """Ask the gateway whether a new model call may leave; the reason if it ends the run."""
        history = run.journal.peek()
        if history is not None and history.completed is not None:
            return None  # already paid: replayed, not reviewed again
        proposal = Proposal(run.session.run_id, step_id(run.journal.position, "model"), "model")
        verdict = run.session.gateway.review(proposal)
        if verdict.action is Action.TERMINATE:
            return verdict.reason
        if verdict.action is not Action.ALLOW:
            raise ConfigurationError(
                f"a model call can be allowed or terminated, the policy said {verdict.action.value}"
            )
        return None

    def _review_tool_call(
        self, run: _Run, kind: str, call: ToolCall, target: Tool | None
    ) -> Verdict:
        """Ask the gateway whether a call never journaled may run."""
        proposal = Proposal(
            run.session.run_id,
            step_id(run.journal.position, kind),
            kind,
            call,
            target.risk if target else None,
            target.idempotent if target else None,
        )
        return run.session.gateway.review(proposal)

    async def _refuse(self, run: _Run, kind: str, call: ToolCall, decision: Decision) -> ToolStep:
        """Record a call that was refused before it ran: an outcome the model reads, not an
        uncertain effect. Its attempted and completed events are one commit (neither was
        yielded before)."""
        refused_id, history = run.journal.next_step(kind)
        if history is not None and isinstance(history.completed, ToolStep):
            return history.completed.as_replayed()
        cls = DelegationStep if kind == "delegate" else ToolStep
        result = ToolResult(f"denied by {decision['by']}: {decision.get('reason')}", is_error=True)
        attempted = cls(
            run_id=run.session.run_id, step_id=refused_id, phase=Phase.ATTEMPTED, call=call
        )
        completed = dataclasses.replace(
            attempted, phase=Phase.COMPLETED, result=result, decision=decision
        )
        await run.journal.write(attempted, completed)
        return completed

    async def _perform(
        self, run: _Run, kind: str, call: ToolCall, target: Tool | None, attempted: ToolStep
    ) -> ToolStep:
        """Do the work of an attempted tool step (or delegation); its completed event."""
        context = ToolContext(run.session.run_id, attempted.step_id, attempted.attempt)
        if isinstance(attempted, DelegationStep):
            result, usage = await self._delegate(
                run.session, self.delegates[call.name], call, context
            )
            return dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result, usage=usage)
        result = await self._execute(run.session, target, call, context)
        return dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result)

    async def _execute(
        self, session: Session, tool: Tool | None, call: ToolCall, context: ToolContext
    ) -> ToolResult:
        """Run one tool call. What the model or the tool got wrong becomes an error result."""
        if tool is None:
            available = ", ".join(sorted(self._callable)) or "none"
            return ToolResult(
                f"there is no tool {call.name!r}; the tools are: {available}", is_error=True
            )
        try:
            arguments = tool.bind(call.arguments)
        except InvalidToolCall as exc:
            return ToolResult(str(exc), is_error=True)
        try:
            value = await session.gateway.call_tool(tool, arguments, context)
        except SynaptumError:
            raise
        except Exception as exc:  # the tool failed: the model reads why, and may adapt
            return ToolResult(f"{type(exc).__name__}: {exc}", is_error=True)
        try:
            return ToolResult(to_result_text(value))
        except TypeError:
            raise ToolResultNotSerializable(
                session.run_id, context.step_id, tool.name, type(value).__name__
            ) from None
        except ValueError as exc:
            raise ToolResultNotSerializable(
                session.run_id, context.step_id, tool.name, type(value).__name__, str(exc)
            ) from None

    async def _delegate(
        self, session: Session, agent: Agent, call: ToolCall, context: ToolContext
    ) -> tuple[ToolResult, Usage | None]:
        """Run (or resume) the sub-run of a delegation; its journal is its own."""
        try:
            task = self._callable[agent.name].bind(call.arguments)["task"]
        except InvalidToolCall as exc:
            return ToolResult(str(exc), is_error=True), None
        sub_session = dataclasses.replace(session, run_id=context.idempotency_key)
        final = None
        async for event in agent.run(task, session=sub_session):
            if isinstance(event, ApprovalStep):
                raise ConfigurationError(
                    f"sub-run {sub_session.run_id!r} asks for an approval; the lite core does not "
                    "suspend a parent run on a delegate's approval: require approval for the "
                    "delegation itself instead"
                )
            if isinstance(event, FinalStep):
                final = event
        assert final is not None  # a run that returns without suspending has a final step
        if final.reason is not None:
            return ToolResult(
                f"the sub-agent ended without an answer: {final.reason}", is_error=True
            ), final.usage
        return ToolResult(final.text or ""), final.usage

    # ── typed output ────────────────────────────────────────────────────────────────────────

    def _system_prompt(self) -> str:
        if self._output_schema is None:
            return self.instructions
        schema = json.dumps(self._output_schema, ensure_ascii=False, sort_keys=True)
        return (
            f"{self.instructions}\n\n"
            f"Answer with only a JSON object that matches this schema: {schema}"
        )

    def _read_output(self, text: str | None) -> tuple[Any, str | None]:
        """The caller's output from the final text, or the problem to tell the model."""
        if self._parse_output is None:
            return text, None
        body = (text or "").strip()
        if body.startswith("```"):
            body = body.strip("`").removeprefix("json").strip()
        try:
            return self._parse_output(json.loads(body)), None
        except ValueError as exc:
            problem = f"it is not JSON: {exc}"
        except InvalidToolCall as exc:
            problem = exc.problem
        return (
            None,
            f"Your answer is not valid ({problem}). "
            "Answer again with only a JSON object that matches the schema.",
        )

    def _typed(self, final: FinalStep) -> FinalStep:
        if self._parse_output is None or final.text is None or final.reason is not None:
            return final.as_replayed()
        output, _ = self._read_output(final.text)
        return dataclasses.replace(final, output=output, replayed=True)


@dataclass(slots=True)
class _Run:
    """What one pass of a run carries from step to step."""

    journal: Journal
    session: Session
    context: Context
    usage: Usage

    async def finish(
        self, *, text: str | None = None, output: Any = None, reason: str | None = None
    ) -> FinalStep:
        """Record the run's final step: its answer, or the reason it ended without one."""
        final_id, _ = self.journal.next_step("final")
        final = FinalStep(
            run_id=self.session.run_id,
            step_id=final_id,
            text=text,
            output=output,
            reason=reason,
            usage=self.usage,
        )
        await self.journal.write(final)
        return final


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


def _check_same_request(
    run: _Run, model_id: str, history: StepHistory | None, fingerprint: str
) -> None:
    """Raise `ReplayDivergence` when the journal's model call was made on another context."""
    recorded = history and (history.completed or history.attempted)
    if isinstance(recorded, ModelStep) and recorded.fingerprint != fingerprint:
        raise ReplayDivergence(
            run.session.run_id, model_id, "a model call on another context", "a different context"
        )


def _check_same_call(run: _Run, tool_id: str, history: StepHistory | None, call: ToolCall) -> None:
    """Raise `ReplayDivergence` when the journal's tool step called something else."""
    recorded = history and (history.attempted or history.completed)
    if isinstance(recorded, ToolStep) and (recorded.call.name, recorded.call.arguments) != (
        call.name,
        call.arguments,
    ):
        raise ReplayDivergence(
            run.session.run_id,
            tool_id,
            f"a call to {recorded.call.name!r} with {recorded.call.arguments!r}",
            f"a call to {call.name!r} with {call.arguments!r}",
        )


def _journaled_approval(run: _Run, call: ToolCall) -> ApprovalStep:
    """The journaled approval at the next position: the request if nobody decided yet, else
    the decision. Raises `ReplayDivergence` when it approves another call."""
    approval_id, history = run.journal.next_step("approval")
    request = history.attempted if history is not None else None
    if not isinstance(request, ApprovalStep) or request.call != call:
        raise ReplayDivergence(
            run.session.run_id, approval_id, f"an approval of {request!r}", f"a call {call!r}"
        )
    decided = history.completed if history is not None else None
    if isinstance(decided, ApprovalStep):
        return decided.as_replayed()
    return request.as_replayed()


def _next_attempt(
    session: Session, step: str, call: ToolCall, target: Tool | None, history: StepHistory | None
) -> int:
    """The attempt number of a step about to run; raises `UncertainEffect` when running it
    again could repeat an effect nobody allowed to repeat."""
    if history is None or history.attempted is None:
        return 1
    if target is not None and not target.idempotent and not history.retry_allowed:
        raise UncertainEffect(session.run_id, step, call.name, call.arguments)
    return history.attempt + 1


async def _record_not_started(journal: Journal, attempted: ToolStep) -> None:
    """Journal that the attempt `attempted` never began: the runtime's own decision."""
    decision: Decision = {
        "action": "not_started",
        "by": "runtime",
        "reason": "the run was closed before the tool began",
    }
    try:
        await journal.write(dataclasses.replace(attempted, phase=Phase.RESOLVED, decision=decision))
    except Exception:  # noqa: BLE001 - unrecorded, the step stays uncertain, as after a crash
        pass


def _as_tool(agent: Agent) -> Tool:
    """How a delegate is shown to the model: a tool taking the task."""

    def delegate(task: Annotated[str, "What the sub-agent must do, in full"]) -> str:
        raise AssertionError(
            "a delegation runs as a sub-run, never as a function"
        )  # pragma: no cover

    delegate.__doc__ = agent.description
    # running a delegation twice resumes its sub-run, whose own journal repeats nothing
    described: Tool = tool(delegate, name=agent.name, risk=agent.risk, idempotent=True)
    return described
