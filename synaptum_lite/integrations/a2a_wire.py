"""The A2A protocol's wire (1.0, JSON-RPC binding) for `synaptum_lite.integrations.a2a`: the card's
interface, the four calls (SendMessage, GetTask, ListTasks and the wait on GetTask), and every
answer a server can give turned into a result or a designed error.

What a hostile or broken server meets here, each a `RemoteAgentError` naming the method:

    a body that is not UTF-8, not JSON, JSON with NaN or nested past reason   RemoteProtocolError
    a body larger than `MAX_ANSWER_BYTES`                                     RemoteProtocolError
    a redirect (3xx): not followed, its target named                          RemoteProtocolError
    HTTP 5xx or 429 on SendMessage, ListTasks                                 RemoteUnavailable
    an answer not whole within `timeout` (one that trickles, or hangs)        RemoteUnavailable
    HTTP 5xx or 429 while waiting: asked again (its Retry-After honoured) until `max_wait`
    a task that does not end within `max_wait`                                RemoteTaskTimeout
    another task than the one asked for, or the answer to another request     RemoteProtocolError
    a task in no A2A state, or whose message, artifacts or parts are not one  RemoteProtocolError
    ListTasks pages that loop (read page after page, up to `MAX_LIST_PAGES`)  RemoteProtocolError
    tasks whose history cannot say whether one holds the message sent         UncertainEffect

A `user:password@` in a URL never reaches httpx: `a2a_answers.credentials` takes it out to be
sent as Basic auth; every answer, every message built here and every log line of httpx and
httpcore has the password, its Basic form and any `Basic`/`Bearer` credential a server echoes
redacted (`gateways.redaction`), before anything is cut.

How a body, a task and a message's text are read and checked (a task's states and shape, a
lone surrogate, a value of the server's cut in a message) are in `a2a_answers`, whose
docstring says; this module raises what its checks find.

None of them sends the message again; the module docstring of `synaptum_lite.integrations.a2a`
says what a resumed run does instead.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from ..errors import (
    ConfigurationError,
    RemoteAgentError,
    RemoteProtocolError,
    RemoteTaskLost,
    RemoteUnavailable,
    UncertainEffect,
)
from ..gateways.redaction import redact, without_userinfo
from ..messages import ToolCall, ToolResult
from .a2a_answers import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    bounded,
    decode,
    excerpt,
    retry_after_seconds,
    task_problem,
    task_result,
    text_of,
    url_problem,
    whose,
)


class Remote(Protocol):
    """What the wire needs of a remote agent (`a2a.RemoteAgent` is one)."""

    name: str
    url: str  # as printed: without a password
    endpoint: str  # where requests go: without a password too (it is sent apart)
    tenant: str | None
    secrets: tuple[re.Pattern[str], ...]  # what is redacted from an answer and a message
    timeout: float
    poll_interval: float
    max_wait: float


PROTOCOL_VERSION = "1.0"
CARD_PATH = "/.well-known/agent-card.json"
TASK_NOT_FOUND = -32001
METHOD_NOT_FOUND = -32601
UNSUPPORTED_OPERATION = -32004
#: The largest answer read from a server (bytes); a larger one is refused, not truncated.
MAX_ANSWER_BYTES = 4 * 1024 * 1024
#: The longest pause between two GetTask while waiting (seconds): the interval grows to it.
MAX_POLL_INTERVAL = 1.0
#: The most pages of ListTasks read while looking for the task a send created.
MAX_LIST_PAGES = 100


class RemoteTaskTimeout(RemoteAgentError):
    """The remote task `task_id` did not end within `max_wait` seconds of one pass. The message
    was sent once; a later pass of the same run waits for the same task again, sending nothing."""

    def __init__(self, rpc: Rpc, task_id: str, *, last: str) -> None:
        self.task_id, self.max_wait = task_id, rpc.agent.max_wait
        super().__init__(
            rpc.agent.name,
            rpc.agent.url,
            f"task {task_id!r} did not end within max_wait={self.max_wait:g} s ({last}); the "
            "message was not sent again",
            run_id=rpc.run_id,
            step_id=rpc.step_id,
            then=(
                ". Run the same run_id again to go on waiting for the same task, or give it "
                "more time with remote_agent(..., max_wait=SECONDS)"
            ),
        )


class _Busy(RemoteUnavailable):
    """HTTP 5xx or 429: the server is there and says «not now» (`retry_after`, seconds)."""

    retry_after: float | None = None


def httpx_module() -> Any:
    try:
        import httpx
    except ImportError:  # pragma: no cover - depends on what is installed
        raise ConfigurationError(
            "synaptum_lite.integrations.a2a needs httpx, which is not installed; install the "
            "extra: pip install 'synaptum-lite[a2a]' (or, in this repository, uv sync --extra a2a)"
        ) from None
    return httpx


def jsonrpc_interface(
    label: str, card_url: str, interfaces: Any, allow_origins: frozenset[str]
) -> tuple[str, str | None]:
    """The URL of the card's first JSON-RPC interface of A2A 1.x, and its tenant (which every
    request to it must carry), if it declares one. An interface on another origin than the
    card's is refused unless the caller named that origin in `allow_origins`: a card must not
    send our messages where we did not choose to."""
    offered, shown = [], without_userinfo(card_url)  # a password in a URL is never printed
    for interface in interfaces if isinstance(interfaces, list) else []:
        if not isinstance(interface, dict):
            continue
        binding, version = interface.get("protocolBinding"), str(interface.get("protocolVersion"))
        offered.append(f"{binding} {version}")
        if binding == "JSONRPC" and version.split(".")[0] == "1" and interface.get("url"):
            url, tenant = str(interface["url"]), interface.get("tenant")
            where, card = urlsplit(url), urlsplit(card_url)
            wrong = url_problem(without_userinfo(url), httpx_module())
            if wrong:
                shown_url = without_userinfo(url)
                problem = f"its JSON-RPC interface URL {shown_url!r} cannot be used ({wrong})"
                raise RemoteProtocolError(label, shown, problem + "; nothing was sent")
            origin = _origin(where)
            if origin != _origin(card) and origin not in allow_origins:
                raise RemoteProtocolError(
                    label,
                    shown,
                    f"its card sends requests to {without_userinfo(url)}, on another origin "
                    "than the card's; nothing was sent",
                    then=f". If you trust it, pass remote_agent(..., allow_origins=[{origin!r}])",
                )
            if "@" in card.netloc and "@" not in where.netloc and origin == _origin(card):
                # the card's origin, reached with a user:password: so is its interface
                url = url.replace("://", "://" + card.netloc.rsplit("@", 1)[0] + "@", 1)
            return url, str(tenant) if tenant else None
    raise RemoteProtocolError(
        label,
        shown,
        "its card offers no JSON-RPC interface of A2A 1.x (it offers: "
        f"{', '.join(offered) or 'nothing'}); this client speaks A2A 1.0 over JSON-RPC",
    )


async def read(
    http: Any, method: str, url: str, total: float, **request: Any
) -> tuple[int, Any, bytes]:
    """One HTTP request: its status, headers and body, read up to `MAX_ANSWER_BYTES` (raises
    ValueError beyond) within `total` seconds (TimeoutError: a server that trickles its answer
    meets no per-read timeout). Redirects are not followed."""
    async with (
        asyncio.timeout(total),
        http.stream(method, url, follow_redirects=False, **request) as response,
    ):
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise ValueError(f"an answer larger than {MAX_ANSWER_BYTES} bytes")
        return response.status_code, response.headers, bytes(body)


class Rpc:
    """The JSON-RPC calls of one pass, each turned into a result or a designed error."""

    def __init__(self, agent: Remote, http: Any, run_id: str) -> None:
        self.agent = agent
        self.http = http
        self.run_id = run_id
        self.step_id: str | None = None
        self.calls = 0

    async def send(self, task: str, *, message_id: str) -> dict[str, Any]:
        """Send the task once, returning at once with the task the server created."""
        result = await self.call(
            "SendMessage",
            {
                "message": {
                    "messageId": message_id,
                    "contextId": self.run_id,
                    "role": "ROLE_USER",
                    "parts": [{"text": task}],
                },
                "configuration": {"returnImmediately": True},
            },
        )
        if isinstance(result.get("task"), dict):
            task_state = self.task(result["task"], "SendMessage")
            return {
                "taskId": task_state["id"],
                "contextId": task_state.get("contextId", ""),
                "state": task_state["status"]["state"],
            }
        if isinstance(result.get("message"), dict):
            return {"answer": text_of(result["message"].get("parts"))}
        raise self.garbled(
            "SendMessage", f"a result with neither task nor message: {bounded(result)}"
        )

    async def find(self, message_id: str, call: ToolCall) -> dict[str, Any] | None:
        """The task the send of `message_id` already created, or None if the server has none.

        A2A 1.0 finds no task by a message id: the tasks of this context are listed with their
        history, then, if none is ours (a server may keep a context of its own instead of
        ours), every task the server lists. Which is ours is `a2a_answers.whose`. A task that
        could be ours but does not show it (no history, and another context), or a server that
        cannot list tasks, leaves the send uncertain: it is never sent on a guess."""
        context_id, unknown = self.run_id, {}
        for scope in ({"contextId": context_id}, {}):
            tasks = await self.list_tasks(scope, call)
            seen = {t["id"]: (t, whose(t, context_id, message_id)) for t in tasks}
            mine = [t for t, verdict in seen.values() if verdict == "ours"]
            if len(mine) > 1:
                raise self.garbled(
                    "ListTasks",
                    f"{len(mine)} tasks holding message {message_id!r}, where one was sent",
                )
            if mine:
                return {
                    "taskId": mine[0]["id"],
                    "contextId": mine[0].get("contextId", ""),
                    "state": mine[0]["status"]["state"],
                    "found": "ListTasks",
                }
            unknown.update({i: t for i, (t, verdict) in seen.items() if verdict == "?"})
        if unknown:
            raise self.uncertain(
                call,
                f"ListTasks shows {len(unknown)} task(s) of other contexts without the history "
                f"that would say whether message {message_id!r} created one; nothing was sent "
                "again",
            )
        return None

    async def list_tasks(self, scope: dict[str, Any], call: ToolCall) -> list[dict[str, Any]]:
        """Every task ListTasks gives in `scope`, page after page, with its whole history (no
        `historyLength`: A2A's «no limit»), each checked to be a task."""
        tasks: list[Any] = []
        token, seen = "", set()
        while True:  # every page: a server may page, and may not filter by context
            params = {**scope, "pageToken": token} if token else dict(scope)
            try:
                result = await self.call("ListTasks", params)
            except RemoteProtocolError as exc:
                if exc.code in (METHOD_NOT_FOUND, UNSUPPORTED_OPERATION):
                    raise self.uncertain(call, "the server cannot list its tasks") from exc
                raise
            page = result.get("tasks")
            if not isinstance(page, list):
                raise self.garbled(
                    "ListTasks", f"a result without a list of tasks: {bounded(result)}"
                )
            tasks += page
            seen.add(token)
            token = result.get("nextPageToken") or ""
            if not token:
                break
            if not isinstance(token, str):
                raise self.garbled("ListTasks", f"a page token that is not one: {bounded(token)}")
            if token in seen:
                problem = f"pages that loop: page token {bounded(token)} came back after "
                raise self.garbled("ListTasks", problem + f"{len(seen)} pages")
            if len(seen) >= MAX_LIST_PAGES:
                raise self.garbled("ListTasks", f"more than {MAX_LIST_PAGES} pages of tasks")
        return [self.task(t, "ListTasks") for t in tasks if isinstance(t, dict)]

    def uncertain(self, call: ToolCall, why: str) -> UncertainEffect:
        """The send of `call` may have arrived and the server cannot say: for a person."""
        assert self.step_id is not None
        error = UncertainEffect(self.run_id, self.step_id, call.name, call.arguments)
        error.add_note(f"remote agent {self.agent.name!r} at {self.agent.url}: {why}")
        return error

    async def wait(self, task_id: str) -> ToolResult:
        """Poll the task until it ends, at most `max_wait` seconds; its answer (an error result
        if it did not succeed). The pause between two polls grows from `poll_interval` to
        `MAX_POLL_INTERVAL`; a server that says «not now» (5xx, 429) is asked again later."""
        interval, last = self.agent.poll_interval, "the server never answered"
        try:
            async with asyncio.timeout(self.agent.max_wait):
                while True:
                    pause = interval
                    try:
                        got = await self.call("GetTask", {"id": task_id})
                    except _Busy as busy:
                        last = f"its last answer: {busy.problem}"
                        pause = max(pause, busy.retry_after or 0.0)
                    else:
                        task = self.task(got, "GetTask", task_id)
                        state = task["status"]["state"]
                        if state in TERMINAL_STATES or state in INTERRUPTED_STATES:
                            return task_result(task_id, task, state)
                        last = f"last seen in {state}"
                    await asyncio.sleep(pause)
                    interval = min(interval * 1.5, max(self.agent.poll_interval, MAX_POLL_INTERVAL))
        except TimeoutError:
            raise RemoteTaskTimeout(self, task_id, last=last) from None

    def task(self, task: Any, method: str, task_id: str | None = None) -> dict[str, Any]:
        """`task`, checked to be an A2A task (with the id asked for, when one was)."""
        wrong = task_problem(task, task_id)
        if wrong:
            raise self.garbled(method, wrong)
        return cast(dict[str, Any], task)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC request; its `result` object, or a designed error."""
        httpx = httpx_module()
        self.calls += 1
        if self.agent.tenant is not None:
            params = {"tenant": self.agent.tenant, **params}
        body = {"jsonrpc": "2.0", "id": self.calls, "method": method, "params": params}
        try:
            version = {"A2A-Version": PROTOCOL_VERSION}
            status, headers, raw = await read(
                self.http,
                "POST",
                self.agent.endpoint,
                self.agent.timeout,
                json=body,
                headers=version,
            )
        except httpx.TransportError as exc:
            detail = redact(str(exc), self.agent.secrets) or "no detail"
            raise self.unavailable(method, f"{type(exc).__name__}: {detail}") from None
        except TimeoutError:
            detail = f"no whole answer in timeout={self.agent.timeout:g} s"
            raise self.unavailable(method, detail) from None
        except ValueError as exc:
            raise self.garbled(method, str(exc)) from None
        if status >= 500 or status == 429:
            busy = _Busy(**self._where(method), problem=f"{method} answered HTTP {status}")
            busy.retry_after = retry_after_seconds(headers.get("retry-after"))
            raise busy
        if status in (401, 403):
            raise RemoteProtocolError(
                **{
                    **self._where(method),
                    "then": "; the message did not get in: give a user:password in the URL, "
                    "or use a server that needs no more, then run the same run_id again",
                },
                problem=f"{method} answered HTTP {status}: the server wants credentials (what its "
                "card's securitySchemes say) that this client does not send, beyond a "
                "user:password in the URL",
            )
        if 300 <= status < 400:
            location = headers.get("location")
            if location is not None:
                location = redact(without_userinfo(location), self.agent.secrets)
            raise self.garbled(
                method,
                f"HTTP {status}, a redirect to {location!r}, which this client "
                "does not follow (use the URL it points to, if you trust it)",
            )
        answer, why = decode(raw, self.agent.secrets)  # every string, redacted
        if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
            raise self.garbled(
                method,
                f"HTTP {status} with a body that is not JSON-RPC"
                + (f" ({why})" if why else "")
                + f": {excerpt(raw, secrets=self.agent.secrets)}",
            )
        if answer.get("id") != self.calls:  # JSON-RPC: an answer carries its request's id
            raise self.garbled(
                method, f"the answer to request {bounded(answer.get('id'))}, not {self.calls}"
            )
        error = answer.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            if code == TASK_NOT_FOUND and method == "GetTask":
                assert self.step_id is not None
                raise RemoteTaskLost(
                    self.agent.name,
                    self.agent.url,
                    str(params.get("id")),
                    run_id=self.run_id,
                    step_id=self.step_id,
                )
            raise RemoteProtocolError(
                **self._where(method),
                problem=f"{method} failed with JSON-RPC error {bounded(code)}: "
                f"{bounded(error.get('message'))}",
                code=code if isinstance(code, int) else None,
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            raise self.garbled(
                method, f"a JSON-RPC answer without a result object: {excerpt(json.dumps(answer))}"
            )
        return result

    def _where(self, method: str) -> dict[str, Any]:
        if method == "SendMessage":
            then = (
                "; the attempt is journaled: run the same run_id again, and the server is "
                "asked for the task holding this message before anything is sent"
            )
        else:
            then = "; nothing was sent again: fix the server and run the same run_id again"
        return {
            "agent": self.agent.name,
            "url": self.agent.url,
            "run_id": self.run_id,
            "step_id": self.step_id,
            "then": then,
        }

    def unavailable(self, method: str, problem: str) -> RemoteUnavailable:
        return RemoteUnavailable(
            **self._where(method), problem=f"{method} could not reach it ({problem})"
        )

    def garbled(self, method: str, problem: str) -> RemoteProtocolError:
        return RemoteProtocolError(
            **self._where(method), problem=f"{method} was answered with {problem}"
        )


def _origin(url: Any) -> str:
    """A split URL's origin, `scheme://host[:port]`, without any `user:password@`."""
    return f"{url.scheme}://{url.netloc.rsplit('@', 1)[-1]}"
