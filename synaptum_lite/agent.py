"""The agent and its loop: a stream of steps, each journaled before it is yielded.

Per turn: model step *attempted* → *completed* → for each tool call: tool step *attempted* →
*completed* → … until the model answers without calling tools: the *final* step. Stopping
iteration interrupts the run; calling `run` again with the same `run_id` resumes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from .context import Context
from .errors import (
    ConfigurationError,
    InvalidToolCall,
    ProviderError,
    ReplayDivergence,
    StepLimitExceeded,
    SynaptumError,
    ToolResultNotSerializable,
    UncertainEffect,
)
from .events import FinalStep, ModelStep, Phase, Step, ToolStep
from .messages import ModelRequest, ModelResponse, ToolCall, ToolResult, Usage
from .replay import Journal
from .session import Session
from .tools import Tool, ToolContext, schema_of, to_result_text


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
    Everything but `max_steps` is the agent's *configuration*: a run refuses to resume under a
    different one.
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
    ) -> None:
        self.name = name
        self.model = model
        self.instructions = instructions
        self.tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise ConfigurationError(f"agent {name!r}: {item!r} is not a tool; decorate it with @tool")
            if item.name in self.tools:
                raise ConfigurationError(f"agent {name!r}: two tools are named {item.name!r}")
            self.tools[item.name] = item
        if output is not None and not (dataclasses.is_dataclass(output) and isinstance(output, type)):
            raise ConfigurationError(f"agent {name!r}: output must be a dataclass type, got {output!r}")
        if max_steps < 1:
            raise ConfigurationError(f"agent {name!r}: max_steps must be at least 1, got {max_steps}")
        self.output = output
        self.max_steps = max_steps
        self.max_tool_output = max_tool_output
        self._output_schema, self._parse_output = schema_of(output, name) if output else (None, None)
        self._specs = tuple(t.spec for t in self.tools.values())

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
        }

    def run(self, task: str, *, session: Session) -> AsyncIterator[Step]:
        """Drive the run `session.run_id` on `task`, yielding each step once it is journaled.

        A new run starts; a journaled one resumes (completed steps are yielded as replayed and
        cost nothing); a closed one yields its final step only. Raises `RunBusy`,
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
        async with session.checkpointer.hold(session.run_id):
            journal, closed = await Journal.open(session.run_id, session.checkpointer, self.configuration, task)
            if closed is not None:
                yield self._typed(closed)
                return
            try:
                # closing this generator closes the step that is running, at once (a stream
                # stops upstream), instead of leaving it to the garbage collector
                async with contextlib.aclosing(self._turns(journal, session, task, streaming)) as turns:
                    async for event in turns:
                        yield event
            finally:
                await journal.flush()

    async def _turns(self, journal: Journal, session: Session, task: str, streaming: bool) -> AsyncIterator[Any]:
        context = Context(self._system_prompt(), task, max_tool_output=self.max_tool_output)
        usage = Usage(0, 0, 0)
        for _turn in range(self.max_steps):
            async with contextlib.aclosing(self._model_step(journal, session, context, streaming)) as step:
                async for event in step:
                    yield event
            response: ModelResponse = event.response
            usage += response.usage
            context.add_response(response)
            for call in response.tool_calls:
                async for event in self._tool_step(journal, session, call):
                    yield event
                context.add_result(call, event.result)
            if response.tool_calls:
                continue
            output, problem = self._read_output(response.text)
            if problem is not None:
                context.add_feedback(problem)
                continue
            final_id, _ = journal.next_step("final")
            final = FinalStep(
                run_id=session.run_id, step_id=final_id, text=response.text, output=output, usage=usage
            )
            await journal.write(final)
            yield final
            return
        raise StepLimitExceeded(session.run_id, self.max_steps, event.step_id)


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
            run_id=session.run_id, step_id=step_id, phase=Phase.ATTEMPTED, attempt=attempt, fingerprint=fingerprint
        )
        journal.defer(attempted)  # written with the completed event: see Journal.defer
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
                            yield TextFragment(step_id, item)
                break
            except ProviderError as exc:
                if not exc.retryable or call_number == session.retry.max_attempts:
                    raise
                await session.sleep(session.retry.delay(call_number, exc.retry_after))
        if response is None:
            raise ConfigurationError(f"{type(session.gateway).__name__}.stream ended without a ModelResponse")
        completed = ModelStep(
            run_id=session.run_id,
            step_id=step_id,
            phase=Phase.COMPLETED,
            attempt=attempt,
            fingerprint=fingerprint,
            response=response,
        )
        await journal.write(completed)
        yield completed

    async def _tool_step(self, journal: Journal, session: Session, call: ToolCall) -> AsyncIterator[Step]:
        step_id, history = journal.next_step("tool")
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
        tool = self.tools.get(call.name)
        attempt = 1
        if history is not None and history.attempted is not None:
            if tool is not None and not tool.idempotent and not history.retry_allowed:
                raise UncertainEffect(session.run_id, step_id, call.name, call.arguments)
            attempt = history.attempt + 1
        attempted = ToolStep(run_id=session.run_id, step_id=step_id, phase=Phase.ATTEMPTED, attempt=attempt, call=call)
        if tool is not None and not tool.idempotent:
            await journal.write(attempted)  # write-ahead: on disk before the effect can happen
        else:
            journal.defer(attempted)  # running it twice is safe, so the record can wait
        yield attempted
        result = await self._execute(session, tool, call, ToolContext(session.run_id, step_id, attempt))
        completed = ToolStep(
            run_id=session.run_id, step_id=step_id, phase=Phase.COMPLETED, attempt=attempt, call=call, result=result
        )
        await journal.write(completed)
        yield completed

    async def _execute(self, session: Session, tool: Tool | None, call: ToolCall, context: ToolContext) -> ToolResult:
        """Run one tool call. What the model or the tool got wrong becomes an error result."""
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return ToolResult(f"there is no tool {call.name!r}; the tools are: {available}", is_error=True)
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
        except (TypeError, ValueError):
            raise ToolResultNotSerializable(session.run_id, context.step_id, tool.name, type(value).__name__) from None

    # ── typed output ────────────────────────────────────────────────────────────────────────

    def _system_prompt(self) -> str:
        if self._output_schema is None:
            return self.instructions
        schema = json.dumps(self._output_schema, ensure_ascii=False, sort_keys=True)
        return f"{self.instructions}\n\nAnswer with only a JSON object that matches this schema: {schema}"

    def _read_output(self, text: str | None) -> tuple[Any, str | None]:
        """The caller's output from the final text, or the problem to tell the model."""
        if self._parse_output is None:
            return text, None
        body = (text or "").strip()
        if body.startswith("```"):
            body = body.strip("`").removeprefix("json").strip()
        try:
            return self._parse_output(json.loads(body)), None
        except (ValueError, InvalidToolCall) as exc:
            return None, (
                f"Your answer is not valid ({exc}). Answer again with only a JSON object "
                f"that matches the schema."
            )

    def _typed(self, final: FinalStep) -> FinalStep:
        if self._parse_output is None or final.text is None or final.reason is not None:
            return final.as_replayed()  # type: ignore[return-value]
        output, _ = self._read_output(final.text)
        return dataclasses.replace(final, output=output, replayed=True)

