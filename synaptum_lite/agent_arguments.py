"""An `Agent`'s arguments, checked before anything is built.

Each refusal is a `ConfigurationError` naming the agent, the bad value and what to pass
instead. `Agent.__init__` calls `checked_parts` first (name, model, instructions,
description, then its tools and its delegates, each by its name) and `check_limits` once its
output format is read (`max_steps`, `max_tool_output`): the order the errors are raised in.
A delegate is shown to the model as a tool, so its name must be one a model API accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ConfigurationError
from .execution import Delegate
from .messages import check_text
from .session import Session
from .tools import TOOL_NAME, Tool


def checked_parts(
    name: str,
    *,
    model: str,
    instructions: str,
    description: str | None,
    tools: Iterable[Tool],
    delegates: Iterable[Delegate],
) -> tuple[dict[str, Tool], dict[str, Delegate]]:
    """The agent's tools and delegates by name, once its arguments are checked."""
    for what, value in (("name", name), ("model", model)):
        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError(
                f"agent {name!r}: {what} must be a non-empty str, got {value!r}"
            )
    if not isinstance(instructions, str):
        raise ConfigurationError(
            f"agent {name!r}: instructions must be a str (the system prompt) or a Template, got "
            f"{type(instructions).__name__} {instructions!r:.80}"
        )
    if description is not None and not isinstance(description, str):
        raise ConfigurationError(
            f"agent {name!r}: description must be a str or None, got {description!r:.80}"
        )
    if isinstance(tools, (str, bytes, Tool)) or not isinstance(tools, Iterable):
        raise ConfigurationError(
            f"agent {name!r}: tools must be a list of tools, got {tools!r:.80}; pass "
            "tools=[...] (or nothing, for none)"
        )
    if isinstance(delegates, (str, bytes, Delegate)) or not isinstance(delegates, Iterable):
        raise ConfigurationError(
            f"agent {name!r}: delegates must be a list of agents, got {delegates!r:.80}; "
            "pass delegates=[...] (or nothing, for none)"
        )
    tools_by_name = _by_name(name, tools)
    return tools_by_name, _delegates_by_name(name, delegates, tools_by_name)


def _by_name(name: str, tools: Iterable[Tool]) -> dict[str, Tool]:
    tools_by_name: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            raise ConfigurationError(
                f"agent {name!r}: {item!r} is not a tool; decorate it with @tool"
            )
        if item.name in tools_by_name:
            raise ConfigurationError(
                f"agent {name!r}: two tools are named {item.name!r}; give each its own name "
                "(two MCP servers: connect each with its own prefix)"
            )
        tools_by_name[item.name] = item
    return tools_by_name


def _delegates_by_name(
    name: str, delegates: Iterable[Delegate], tools_by_name: dict[str, Tool]
) -> dict[str, Delegate]:
    delegates_by_name: dict[str, Delegate] = {}
    for delegate in delegates:
        if not isinstance(delegate, Delegate):
            raise ConfigurationError(
                f"agent {name!r}: delegate {delegate!r:.80} is not an Agent (nor a remote "
                "agent); pass delegates=[Agent(...), ...]"
            )
        if delegate.name in tools_by_name or delegate.name in delegates_by_name:
            raise ConfigurationError(
                f"agent {name!r}: two tools or delegates are named {delegate.name!r}"
            )
        if not TOOL_NAME.fullmatch(delegate.name) or not delegate.description:
            raise ConfigurationError(
                f"agent {name!r}: delegate {delegate.name!r} is shown to the model as a "
                "tool, named by its name and described by its description (or its "
                "instructions' first line); "
                + (
                    "a model API accepts only letters A-Z, digits, '_' and '-' (1 to 64) "
                    "in a tool's name: rename the delegate"
                    if not TOOL_NAME.fullmatch(delegate.name)
                    else "it has no description and no instructions: give it description=..."
                )
            )
        delegates_by_name[delegate.name] = delegate
    return delegates_by_name


def check_limits(name: str, max_steps: int, max_tool_output: int | None) -> None:
    """Refuse a `max_steps` below 1 and a `max_tool_output` below 0 (or not a whole number)."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ConfigurationError(
            f"agent {name!r}: max_steps must be a whole number, at least 1; got {max_steps!r}"
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


def check_session(agent: str, session: Any) -> None:
    """Refuse a run's `session` that is not a `Session`."""
    if not isinstance(session, Session):
        raise ConfigurationError(
            f"agent {agent!r}: session must be a Session (which run, through which "
            f"gateway, journaled where), got {session!r:.80}; pass "
            "session=Session(run_id, gateway, checkpointer)"
        )


def check_task(task: Any, run_id: str) -> None:
    """Refuse a task a journal cannot keep, before anything is run or paid."""
    if not isinstance(task, str):
        raise ConfigurationError(
            f"run {run_id!r}: the task is a {type(task).__name__}, not a str; nothing was run "
            "or paid: pass the task as text"
        )
    check_text(f"run {run_id!r}: the task", task)
