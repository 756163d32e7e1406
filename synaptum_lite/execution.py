"""The work of a tool step: a tool run through the gateway, or a delegation's sub-run.

What the model or the tool got wrong (a tool that does not exist, arguments that do not fit,
a tool that raised) becomes an error result the model reads and may act on. Misuse of the
library raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterable
from typing import Annotated, Any, Protocol, runtime_checkable

from .errors import (
    ConfigurationError,
    InvalidToolCall,
    SynaptumError,
    ToolResultNotSerializable,
)
from .events import ApprovalStep, FinalStep, Step
from .messages import ToolCall, ToolResult, Usage
from .session import Session
from .tools import Risk, Tool, ToolContext, to_result_text, tool


@runtime_checkable
class Delegate(Protocol):
    """What an agent's `delegates` are: something the model calls like a tool, taking a task,
    whose work is a durable sub-run of its own. An `Agent` is one; so is a remote agent
    (`synaptum_lite.integrations.a2a.RemoteAgent`)."""

    name: str
    description: str

    @property
    def risk(self) -> Risk:
        """The highest risk of what it can do."""
        ...

    @property
    def configuration(self) -> dict[str, Any]:
        """What the parent's journal records of it, and checks on resume."""
        ...

    def run(self, task: str, *, session: Session) -> AsyncIterator[Step]:
        """Drive the sub-run `session.run_id` on `task`, yielding each journaled step."""
        ...


async def run_tool(
    session: Session,
    target: Tool | None,
    call: ToolCall,
    context: ToolContext,
    names: Iterable[str],
) -> ToolResult:
    """Run one tool call; `names` are the tools the model could have called."""
    if target is None:
        available = ", ".join(sorted(names)) or "none"
        return ToolResult(
            f"there is no tool {call.name!r}; the tools are: {available}", is_error=True
        )
    try:
        arguments = target.bind(call.arguments)
    except InvalidToolCall as exc:
        return ToolResult(str(exc), is_error=True)
    try:
        value = await session.gateway.call_tool(target, arguments, context)
    except SynaptumError:
        raise
    except Exception as exc:  # the tool failed: the model reads why, and may adapt
        return ToolResult(f"{type(exc).__name__}: {exc}", is_error=True)
    try:
        return ToolResult(to_result_text(value))
    except TypeError:
        raise ToolResultNotSerializable(
            session.run_id, context.step_id, target.name, type(value).__name__
        ) from None
    except ValueError as exc:
        raise ToolResultNotSerializable(
            session.run_id, context.step_id, target.name, type(value).__name__, str(exc)
        ) from None


async def run_delegation(
    session: Session, agent: Delegate, shown_as: Tool, call: ToolCall, context: ToolContext
) -> tuple[ToolResult, Usage | None]:
    """Run (or resume) the sub-run of a delegation to `agent`; its journal is its own.

    The sub-run's id is the step's idempotency key, so a resumed delegation resumes its
    sub-run, which repeats nothing it journaled. `shown_as` is the tool the model called
    (see `as_tool`): it checks the arguments."""
    try:
        task = shown_as.bind(call.arguments)["task"]
    except InvalidToolCall as exc:
        return ToolResult(str(exc), is_error=True), None
    sub_session = dataclasses.replace(session, run_id=context.idempotency_key)
    final: FinalStep | None = None
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


def as_tool(agent: Delegate) -> Tool:
    """How a delegate is shown to the model: a tool taking the task."""

    def delegate(task: Annotated[str, "What the sub-agent must do, in full"]) -> str:
        raise AssertionError(
            "a delegation runs as a sub-run, never as a function"
        )  # pragma: no cover

    delegate.__doc__ = agent.description
    # running a delegation twice resumes its sub-run, whose own journal repeats nothing
    described: Tool = tool(delegate, name=agent.name, risk=agent.risk, idempotent=True)
    return described
