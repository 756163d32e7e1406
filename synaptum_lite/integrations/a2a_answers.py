"""What an A2A server's answers hold, read and checked for `a2a_wire`: a JSON
body, a task (its states, its shape, and the answer it gives when it stops), a message's text,
a `Retry-After` header, and a value of the server's quoted in a message. Nothing here sends: a
check returns what is wrong, and `a2a_wire` turns that into a `RemoteProtocolError` naming the
method.

A value of the server's in a message is cut to about 80 characters. A lone surrogate in an
answer's text (JSON can escape one; no journal can keep it) becomes U+FFFD; in a task id, it is
a RemoteProtocolError.
"""

from __future__ import annotations

import json
from typing import Any

from ..messages import ToolResult, lone_surrogate, without_surrogates

TERMINAL_STATES = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
#: States in which the task waits for the client (the lite client answers no questions).
INTERRUPTED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
STATES = TERMINAL_STATES | INTERRUPTED_STATES | {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}


def decode(body: bytes) -> tuple[Any, str]:
    """The JSON value of `body` (UTF-8, strict JSON), or None and why it is not one."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(body.decode("utf-8"), parse_constant=refuse), ""
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {body[exc.start]:#04x} at {exc.start})"
    except RecursionError:
        return None, "JSON nested too deep to read"
    except json.JSONDecodeError:
        return None, ""  # the excerpt shows what it is
    except ValueError as exc:  # NaN, Infinity
        return None, str(exc)


def excerpt(body: bytes | str, limit: int = 80) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    return repr(text if len(text) <= limit else text[:limit] + "…")


def bounded(value: Any, limit: int = 80) -> str:
    """A server's value in a message, at most about `limit` characters: a long text is cut
    and its length said; anything else is its `repr`, cut."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def text_of(parts: Any) -> str:
    """The text parts of a message or artifact, joined; a lone surrogate (JSON can escape
    one, and it is not a character) becomes U+FFFD, as a UTF-8 decoder does, so that the
    answer can be journaled."""
    texts = [
        p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]
    return without_surrogates("\n".join(texts))


def task_problem(task: Any, task_id: str | None = None) -> str:
    """What makes `task` not an A2A task (or not the one asked for, when `task_id` says which);
    empty when nothing does."""
    status = task.get("status") if isinstance(task, dict) else None
    state = status.get("state") if isinstance(status, dict) else None
    if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
        return f"a task without an id: {excerpt(json.dumps(task))}"
    named = f"task {bounded(task['id'])}"
    if lone_surrogate(task["id"]) is not None:  # no journal can keep it, nor ask for it
        return f"{named}, an id holding a lone surrogate, not text"
    if not isinstance(state, str) or state not in STATES:
        return f"{named} in an unknown state {bounded(state)}"
    if task_id is not None and task["id"] != task_id:
        return f"{named} when {task_id!r} was asked for"
    assert isinstance(status, dict)  # its state was read from it
    wrong = _misshapen(status, task.get("artifacts"))
    return f"{named} with {wrong}" if wrong else ""


def task_result(task_id: str, task: dict[str, Any], state: str) -> ToolResult:
    """The result a task that stopped in `state` gives: its artifacts' text (or its status
    message's) when it completed, an error result saying why otherwise."""
    said = text_of((task["status"].get("message") or {}).get("parts"))
    if state == "TASK_STATE_COMPLETED":
        parts = [p for a in task.get("artifacts") or [] for p in a.get("parts") or []]
        return ToolResult(text_of(parts) or said)
    if state in INTERRUPTED_STATES:
        problem = (
            f"the remote task {task_id} stopped in {state}: it waits for "
            f"{'input' if state.endswith('INPUT_REQUIRED') else 'authorization'} "
            "this client cannot give"
        )
    else:
        problem = f"the remote task {task_id} ended in {state}"
    return ToolResult(problem + (f": {said}" if said else ""), is_error=True)


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` in seconds when it is a number; None otherwise (the interval then)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _misshapen(status: dict[str, Any], artifacts: Any) -> str:
    """What in a task's status message or artifacts is not the shape A2A gives it (the parts
    of each are a list; each artifact is an object); empty when nothing is."""
    message = status.get("message")
    if message is not None and not isinstance(message, dict):
        return f"a status message that is not an object: {bounded(message)}"
    if artifacts is not None and not isinstance(artifacts, list):
        return f"artifacts that are not a list: {bounded(artifacts)}"
    for artifact in artifacts or []:
        if not isinstance(artifact, dict):
            return f"an artifact that is not an object: {bounded(artifact)}"
    for holder in [message or {}, *(artifacts or [])]:
        parts = holder.get("parts")
        if parts is not None and not isinstance(parts, list):
            return f"parts that are not a list: {bounded(parts)}"
    return ""
