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
from .policy import Action, Proposal
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
        at = lone_surrogate(task) if isinstance(task, str) else None
        if not isinstance(task, str) or at is not None:
            problem = (
                f"holds {task[at]!r} at index {at}, half of a surrogate pair and not a "
                "character, which a journal cannot keep (UTF-8 has no form for it)"
                if at is not None
                else f"is a {type(task).__name__}, not a str"
            )
            raise ConfigurationError(
                f"run {session.run_id!r}: the task {problem}; nothing was run or paid: pass "
                "the task as text (join a split surrogate pair, or put U+FFFD in its place)"
            )
        async with session.checkpointer.hold(session.run_id):
            journal, closed = await Journal.open(
                session.run_id, session.checkpointer, self.configuration, task
            )
            if closed is not None:
                yield self._typed(closed)
                return
            # closing this generator closes the step that is running, at once (a stream
            # stops upstream), instead of leaving it to the garbage collector
            async with contextlib.aclosing(
                self._turns(journal, session, task, streaming)
            ) as turns:
                async for event in turns:
                    yield event

    async def _turns(
        self, journal: Journal, session: Session, task: str, streaming: bool
    ) -> AsyncIterator[Any]:
        context = Context(self._system_prompt(), task, max_tool_output=self.max_tool_output)
        usage = Usage(0, 0, 0)
        for _turn in range(self.max_steps):
            refusal = self._review_model_call(journal, session)
            if refusal is not None:
                yield await self._finish(journal, session, usage, reason=refusal)
                return
            async with contextlib.aclosing(
                self._model_step(journal, session, context, streaming)
            ) as step:
                async for event in step:
                    yield event
            response: ModelResponse = event.response
            usage += response.usage
            context.add_response(response)
            for call in response.tool_calls:
                async with contextlib.aclosing(self._act(journal, session, call)) as step:
                    async for event in step:
                        yield event
                if isinstance(event, ApprovalStep):
                    return  # suspended on disk until a person decides (Session.decide)
                if isinstance(event, DelegationStep) and event.usage is not None:
                    usage += event.usage
                if event.decision and event.decision.get("action") == "terminate":
                    yield await self._finish(
                        journal, session, usage, reason=event.decision["reason"]
                    )
                    return
                context.add_result(call, event.result)
            if response.tool_calls:
                continue
            output, problem = self._read_output(response.text)
            if problem is not None:
                context.add_feedback(problem)
                continue
            yield await self._finish(journal, session, usage, text=response.text, output=output)
            return
        # the last step on disk, which may lie past where this pass stopped: a run resumed
        # with a lower max_steps replays up to the limit and stops before its journal ends
        journaled = await load_events(session.checkpointer, session.run_id)
        raise StepLimitExceeded(session.run_id, self.max_steps, journaled[-1].step_id)

    async def _finish(
        self,
        journal: Journal,
        session: Session,
        usage: Usage,
        *,
        text: str | None = None,
        output: Any = None,
        reason: str | None = None,
    ) -> FinalStep:
        final_id, _ = journal.next_step("final")
        final = FinalStep(
            run_id=session.run_id,
            step_id=final_id,
            text=text,
            output=output,
            reason=reason,
            usage=usage,
        )
        await journal.write(final)
        return final

    def _review_model_call(self, journal: Journal, session: Session) -> str | None:
        """Ask the gateway whether a new model call may leave; the reason if it ends the run."""
        history = journal.peek()
        if history is not None and history.completed is not None:
            return None  # already paid: replayed, not reviewed again
        proposal = Proposal(session.run_id, step_id(journal.position, "model"), "model")
        verdict = session.gateway.review(proposal)
        if verdict.action is Action.TERMINATE:
            return verdict.reason
        if verdict.action is not Action.ALLOW:
            raise ConfigurationError(
                f"a model call can be allowed or terminated, the policy said {verdict.action.value}"
            )
        return None

    async def _model_step(
        self, journal: Journal, session: Session, context: Context, streaming: bool
    ) -> AsyncIterator[Any]:
        step_id, history = journal.next_step("model")
        request = ModelRequest(self.model, tuple(context.messages), self._specs)
        fingerprint = context.fingerprint(self.model, self._specs)
        recorded = history and (history.completed or history.attempted)
        if isinstance(recorded, ModelStep) and recorded.fingerprint != fingerprint:
            raise ReplayDivergence(
                session.run_id, step_id, "a model call on another context", "a different context"
            )
        if history is not None and history.completed is not None:
            yield history.completed.as_replayed()
            return
        attempt = history.attempt + 1 if history is not None else 1
        attempted = ModelStep(
            run_id=session.run_id,
            step_id=step_id,
            phase=Phase.ATTEMPTED,
            attempt=attempt,
            fingerprint=fingerprint,
        )
        await journal.write(attempted)  # on disk before anyone hears of it, like every event
        yield attempted
        response: ModelResponse | None = None
        for call_number in range(1, session.retry.max_attempts + 1):
            try:
                if not streaming:
                    response = await session.gateway.complete(request)
                    break
                async with contextlib.aclosing(session.gateway.stream(request)) as upstream:
                    async for item in upstream:
                        if isinstance(item, ModelResponse):
                            response = item
                        else:
                            yield TextFragment(step_id, without_surrogates(item))
                break
            except ProviderError as exc:
                if not exc.retryable or call_number == session.retry.max_attempts:
                    raise
                await session.sleep(session.retry.delay(call_number, exc.retry_after))
        if response is None:
            raise ConfigurationError(
                f"{type(session.gateway).__name__}.stream ended without a ModelResponse"
            )
        # paid for: recorded whatever it holds (what a journal cannot keep becomes an error
        # the model reads, or U+FFFD in text), never lost to an encoding error
        response = journalable(response)
        completed = dataclasses.replace(attempted, phase=Phase.COMPLETED, response=response)
        await journal.write(completed)
        yield completed

    async def _act(self, journal: Journal, session: Session, call: ToolCall) -> AsyncIterator[Step]:
        """One tool call: reviewed by the policy (new positions only), perhaps approved by a
        person, then executed or refused. Ends with the step's last event."""
        kind = "delegate" if call.name in self.delegates else "tool"
        target = self._callable.get(call.name)
        history = journal.peek()
        if history is None:  # never seen: the gateway reviews it now
            proposal = Proposal(
                session.run_id,
                step_id(journal.position, kind),
                kind,
                call,
                target.risk if target else None,
                target.idempotent if target else None,
            )
            verdict = session.gateway.review(proposal)
            if verdict.action is Action.REQUIRE_APPROVAL:
                approval_id, _ = journal.next_step("approval")
                request = ApprovalStep(
                    run_id=session.run_id,
                    step_id=approval_id,
                    phase=Phase.ATTEMPTED,
                    call=call,
                    reason=verdict.reason,
                )
                await journal.write(request)
                yield request
                return
            if verdict.action in (Action.DENY, Action.TERMINATE):
                decision = {
                    "action": verdict.action.value,
                    "by": "policy",
                    "reason": verdict.reason,
                }
                yield await self._refuse(journal, session, kind, call, decision)
                return
        elif history.kind == "approval":
            approval_id, _ = journal.next_step("approval")
            request = history.attempted
            if not isinstance(request, ApprovalStep) or request.call != call:
                raise ReplayDivergence(
                    session.run_id, approval_id, f"an approval of {request!r}", f"a call {call!r}"
                )
            if history.completed is None:
                yield request.as_replayed()  # still waiting; nobody is asked twice
                return
            decision = history.completed.decision or {}  # type: ignore[attr-defined]
            yield history.completed.as_replayed()
            if not decision.get("granted"):
                refusal = {
                    "action": "deny",
                    "by": decision.get("by"),
                    "reason": decision.get("note") or "denied",
                }
                yield await self._refuse(journal, session, kind, call, refusal)
                return
        async with contextlib.aclosing(
            self._tool_step(journal, session, kind, call, target)
        ) as step:
            async for event in step:
                yield event

    async def _refuse(
        self,
        journal: Journal,
        session: Session,
        kind: str,
        call: ToolCall,
        decision: dict[str, Any],
    ) -> ToolStep:
        """Record a call that was refused before it ran: an outcome the model reads, not an
        uncertain effect."""
        refused_id, history = journal.next_step(kind)
        if history is not None and isinstance(history.completed, ToolStep):
            return history.completed.as_replayed()  # type: ignore[return-value]
        cls = DelegationStep if kind == "delegate" else ToolStep
        result = ToolResult(f"denied by {decision['by']}: {decision['reason']}", is_error=True)
        common = {"run_id": session.run_id, "step_id": refused_id, "call": call}
        attempted = cls(**common, phase=Phase.ATTEMPTED)
        completed = cls(**common, phase=Phase.COMPLETED, result=result, decision=decision)
        await journal.write(attempted, completed)  # one commit: neither was yielded before
        return completed

    async def _tool_step(
        self, journal: Journal, session: Session, kind: str, call: ToolCall, target: Tool | None
    ) -> AsyncIterator[Step]:
        step_id, history = journal.next_step(kind)
        recorded = history and (history.attempted or history.completed)
        if isinstance(recorded, ToolStep) and (recorded.call.name, recorded.call.arguments) != (
            call.name,
            call.arguments,
        ):
            raise ReplayDivergence(
                session.run_id,
                step_id,
                f"a call to {recorded.call.name!r} with {recorded.call.arguments!r}",
                f"a call to {call.name!r} with {call.arguments!r}",
            )
        if history is not None and history.completed is not None:
            yield history.completed.as_replayed()
            return
        attempt = _next_attempt(session, step_id, call, target, history)
        cls = DelegationStep if kind == "delegate" else ToolStep
        attempted = cls(
            run_id=session.run_id,
            step_id=step_id,
            phase=Phase.ATTEMPTED,
            attempt=attempt,
            call=call,
        )
        # write-ahead: on disk before it is yielded, and so before the effect can happen
        await journal.write(attempted)
        try:
            yield attempted
        except GeneratorExit:
            # Closed while suspended here: the tool never began, and only this process can
            # know it (a SIGKILL here leaves the step uncertain). Say so, so that a resume
            # runs it without asking a person.
            if target is not None and not target.idempotent:
                await _record_not_started(journal, attempted)
            raise
        context = ToolContext(session.run_id, step_id, attempt)
        if kind == "delegate":
            result, usage = await self._delegate(session, self.delegates[call.name], call, context)
            completed = dataclasses.replace(
                attempted, phase=Phase.COMPLETED, result=result, usage=usage
            )
        else:
            result = await self._execute(session, target, call, context)
            completed = dataclasses.replace(attempted, phase=Phase.COMPLETED, result=result)
        await journal.write(completed)
        yield completed

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
            return final.as_replayed()  # type: ignore[return-value]
        output, _ = self._read_output(final.text)
        return dataclasses.replace(final, output=output, replayed=True)


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
    decision = {
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
    return tool(delegate, name=agent.name, risk=agent.risk, idempotent=True)
