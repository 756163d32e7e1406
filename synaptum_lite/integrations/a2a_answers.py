"""What an A2A server's answers hold, read and checked for `a2a_wire`: a JSON
body, a task (its states, its shape, and the answer it gives when it stops), a message's text,
a `Retry-After` header, and a value of the server's quoted in a message. Nothing here sends: a
check returns what is wrong, and `a2a_wire` turns that into a `RemoteProtocolError` naming the
method.

A value of the server's in a message is cut to about 80 characters, after the secrets a server
may echo (the password of the URL, its Basic form) are redacted from every string of the
answer. A lone surrogate in an answer's text (JSON can escape one; no journal can keep it)
becomes U+FFFD; in a task id, it is a RemoteProtocolError.

Which task a send created is read here too (`whose`): A2A 1.0 has no call that finds a task by
the id of the message that created it, so the client lists tasks and reads their history. And
what the client gives before anything is sent: a URL checked (`url_problem`), and its
`user:password@` taken apart, to be sent as Basic auth and redacted (`credentials`).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any, Literal

from ..gateways.redaction import RedactSecrets, redact, secret_patterns, userinfo, without_userinfo
from ..messages import ToolResult, lone_surrogate, without_surrogates

TERMINAL_STATES = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
#: States in which the task waits for the client (the lite client answers no questions).
INTERRUPTED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
STATES = TERMINAL_STATES | INTERRUPTED_STATES | {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
#: A credential a server may echo from a header (`Authorization: Basic …`, `Bearer …`), whoever
#: it belongs to: redacted from every answer, message and log line. A token holds a digit or a
#: sign, so that prose («Basic authentication») is left alone.
ECHOED_CREDENTIAL = re.compile(
    r"(?i)\b(?:basic|bearer)\s+(?=[A-Za-z0-9._~+/-]*[0-9._~+/=-])[A-Za-z0-9._~+/-]{8,}=*"
)


def decode(body: bytes, secrets: Iterable[re.Pattern[str]] = ()) -> tuple[Any, str]:
    """The JSON value of `body` (UTF-8, strict JSON), or None and why it is not one. Every
    string in it (keys too) has `secrets` redacted, before anything quotes or keeps it."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        value = json.loads(body.decode("utf-8"), parse_constant=refuse)
        return _scrubbed(value, tuple(secrets)), ""
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {body[exc.start]:#04x} at {exc.start})"
    except RecursionError:
        return None, "JSON nested too deep to read"
    except json.JSONDecodeError:
        return None, ""  # the excerpt shows what it is
    except ValueError as exc:  # NaN, Infinity
        return None, str(exc)


def excerpt(body: bytes | str, limit: int = 80, secrets: Iterable[re.Pattern[str]] = ()) -> str:
    """The start of a body in a message, `secrets` redacted before it is cut."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = redact(text, secrets)
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


def whose(task: dict[str, Any], context_id: str, message_id: str) -> Literal["ours", "other", "?"]:
    """Whether a listed task is the one our send of `message_id` in `context_id` created.

    Ours when its history holds the message id, or when it is in our context (only that send
    used it). Another's when its history shows a user's message with another id (this client
    sends one message per task, and A2A keeps a message's id). Otherwise (no history, or only
    the newest agent messages), nothing says: unknown."""
    history = task.get("history")
    messages = [m for m in history if isinstance(m, dict)] if isinstance(history, list) else []
    if any(m.get("messageId") == message_id for m in messages):
        return "ours"
    if task.get("contextId") == context_id:
        return "ours"
    return "other" if any(m.get("role") != "ROLE_AGENT" for m in messages) else "?"


def _scrubbed(value: Any, secrets: tuple[re.Pattern[str], ...]) -> Any:
    if not secrets or isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_scrubbed(item, secrets) for item in value]
    return {redact(k, secrets): _scrubbed(v, secrets) for k, v in value.items()}


def credentials(url: str) -> tuple[str, tuple[str, str] | None, tuple[re.Pattern[str], ...]]:
    """`url` without its `user:password@`, that pair (sent apart, as Basic auth), and the
    patterns that redact it (the password, or a user without one, raw, URL-quoted and in its
    Basic form), with `ECHOED_CREDENTIAL`. The log records of httpx and httpcore pass through
    them."""
    auth, secrets = userinfo(url), []
    if auth is not None:
        basic = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        secret = auth[1] or auth[0]  # `token@host`: the user is the secret
        secrets = [secret, urllib.parse.quote(secret, safe=""), basic]
    patterns = (*secret_patterns(secrets), ECHOED_CREDENTIAL)
    RedactSecrets.install(patterns)
    return without_userinfo(url), auth, patterns


def url_problem(url: str, httpx: Any) -> str:
    """What makes `url` (without a password) one no request can be sent to; empty if nothing.

    Unchecked, httpx refuses a port out of range only when connecting, as a raw ExceptionGroup
    (an OverflowError inside), and an empty host like a dropped connection."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        return f"InvalidURL: {exc}"
    if parsed.scheme not in ("http", "https"):
        scheme = f"its scheme is {parsed.scheme!r}" if "://" in url else "it has no scheme"
        return f"{scheme}: it must start with http:// or https://"
    if not parsed.host:
        return "it names no host"
    if parsed.port is not None and not 0 < parsed.port < 65536:
        return f"port {parsed.port} is not between 1 and 65535"
    return ""
