"""A remote agent over A2A (protocol 1.0, JSON-RPC binding): a delegate whose work runs on
another server, journaled so that a resumed run re-attaches to the remote task.

    investigador = await remote_agent("http://127.0.0.1:8000", risk=Risk.READ)
    agencia = Agent("agencia", ..., delegates=[investigador])

`remote_agent` reads the server's card (`/.well-known/agent-card.json`) and picks its JSON-RPC
interface. A card declares skills, not risk: the caller declares `risk`, as for a tool. The
delegation is a durable step of the parent like any other; its sub-run journals the remote
exchange as two tool steps:

    000000-tool  SendMessage  attempted → completed with the remote task's id (returned at
                              once: `returnImmediately`), before anything waits on it
    000001-tool  GetTask      attempted → completed with the task's answer (polled)
    000002-final              the answer; usage unmeasured: A2A reports no token counts

A resumed sub-run never sends its message twice: with the task id journaled it asks for the
task (`GetTask`); with a send attempted and no id journaled (the process died while sending)
it asks for the tasks of its context (`ListTasks`, the context id is the sub-run id) and
re-attaches to the one it finds, sending only if the server has none. A server that cannot
answer that question leaves the send uncertain (`UncertainEffect`), for a person to resolve.

The protocol's JSON is written here, over httpx (the optional extra `a2a`), rather than
through the `a2a-sdk` package: four calls, visible in one module, and no dependency whose
API moves between protocol versions. httpx is imported on first use, and a clear error says
how to install it. The tests check this client against a server built with a2a-sdk
(tests/a2a/test_reference_server.py), so it is not only our own reading of the protocol.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from .agent import Agent, TextFragment
from .errors import (
    ConfigurationError,
    RemoteProtocolError,
    RemoteTaskLost,
    RemoteUnavailable,
    UncertainEffect,
)
from .events import FinalStep, Phase, Step, ToolStep
from .messages import ToolCall, ToolResult, Usage
from .replay import Journal, StepHistory
from .session import Session
from .tools import Risk

PROTOCOL_VERSION = "1.0"
CARD_PATH = "/.well-known/agent-card.json"
TERMINAL_STATES = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
#: States in which the task waits for the client (the lite client answers no questions).
INTERRUPTED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
STATES = TERMINAL_STATES | INTERRUPTED_STATES | {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
TASK_NOT_FOUND = -32001
METHOD_NOT_FOUND = -32601
UNSUPPORTED_OPERATION = -32004


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:  # pragma: no cover - depends on what is installed
        raise ConfigurationError(
            "synaptum_lite.a2a needs httpx, which is not installed; install the extra: "
            "pip install 'synaptum-lite[a2a]' (or, in this repository, uv sync --extra a2a)"
        ) from None
    return httpx


async def remote_agent(
    url: str,
    *,
    risk: Risk,
    name: str | None = None,
    poll_interval: float = 0.05,
    timeout: float = 10.0,
) -> RemoteAgent:
    """Read the agent card at `url` and return the remote agent it describes.

    `risk` is what the caller says the remote agent may do (a card does not say). `name` is
    how the model calls it (default: the card's name, as an identifier). Raises
    `RemoteUnavailable` when the card cannot be fetched and `RemoteProtocolError` when it is
    not an A2A 1.x card with a JSON-RPC interface.
    """
    httpx = _httpx()
    card_url = url.rstrip("/") + CARD_PATH
    label = name or "remote agent"
    async with httpx.AsyncClient(timeout=timeout) as http:
        try:
            response = await http.get(card_url)
        except httpx.TransportError as exc:
            raise RemoteUnavailable(
                label,
                card_url,
                f"its card could not be fetched ({type(exc).__name__}: {exc or 'no detail'})",
                then="; nothing was sent. Start the server or fix the URL, then try again",
            ) from None
    if response.status_code != 200:
        raise RemoteUnavailable(
            label,
            card_url,
            f"its card answered HTTP {response.status_code}",
            then="; nothing was sent. Check the URL: the card lives at " + CARD_PATH,
        )
    try:
        card = response.json()
    except ValueError:
        card = None
    if not isinstance(card, dict):
        raise RemoteProtocolError(
            label, card_url, f"its card is not a JSON object: {_excerpt(response.text)}"
        )
    return RemoteAgent(
        card, card_url=card_url, risk=risk, name=name, poll_interval=poll_interval, timeout=timeout
    )


class RemoteAgent(Agent):
    """An agent served elsewhere over A2A, usable wherever an `Agent` is a delegate.

    Built from its card by `remote_agent`. Its `configuration` is the card's identity (name,
    version, skills), the interface URL and the declared risk: a run refuses to resume when
    any of them changed. `run` journals the remote exchange (see the module docstring);
    `stream` is the same, without fragments. Usage is unmeasured: A2A carries no token counts.
    """

    def __init__(
        self,
        card: dict[str, Any],
        *,
        card_url: str,
        risk: Risk,
        name: str | None = None,
        poll_interval: float = 0.05,
        timeout: float = 10.0,
    ) -> None:
        label = name or str(card.get("name") or "remote agent")
        if not isinstance(risk, Risk):
            raise ConfigurationError(
                f"remote agent {label!r}: risk must be a Risk (Risk.READ, Risk.SOFT_WRITE, "
                f"Risk.HARD_WRITE or Risk.DESTRUCTIVE), got {risk!r}. An agent card declares "
                "skills, not risk: say what this agent may do, as for a tool"
            )
        missing = [f for f in ("name", "description", "supportedInterfaces") if not card.get(f)]
        if missing:
            raise RemoteProtocolError(
                label, card_url, f"its card lacks {', '.join(missing)}, which A2A requires"
            )
        self.url, self.tenant = _jsonrpc_interface(label, card_url, card["supportedInterfaces"])
        skills = card.get("skills") or []
        self.card = {
            "name": str(card["name"]),
            "version": str(card.get("version", "")),
            "skills": [str(s.get("id")) for s in skills if isinstance(s, dict)],
        }
        self._risk = risk
        self.poll_interval = poll_interval
        self.timeout = timeout
        described = str(card["description"]).strip()
        skill_names = [str(s.get("name") or s.get("id")) for s in skills if isinstance(s, dict)]
        if skill_names:
            described += " Skills: " + "; ".join(skill_names) + "."
        super().__init__(
            name or _identifier(str(card["name"])),
            model=f"a2a:{self.card['name']}",
            instructions=described,
            description=described,
        )

    def __repr__(self) -> str:
        return f"RemoteAgent({self.name!r}, url={self.url!r}, risk=Risk.{self._risk.name})"

    @property
    def configuration(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "instructions": self.instructions,
            "tools": {"SendMessage": PROTOCOL_VERSION, "GetTask": PROTOCOL_VERSION},
            "output": None,
            "max_tool_output": None,
            "delegates": {},
            "remote": {
                "url": self.url,
                "tenant": self.tenant,
                "card": self.card,
                "risk": self._risk.name.lower(),
            },
        }

    @property
    def risk(self) -> Risk:
        """What the caller declared this agent may do."""
        return self._risk

    def run(self, task: str, *, session: Session) -> AsyncIterator[Step]:
        """Drive the sub-run `session.run_id`: send `task` once, wait for its answer.

        Yields each step once journaled, like `Agent.run`. Raises `RemoteUnavailable`,
        `RemoteProtocolError`, `RemoteTaskLost`, and `UncertainEffect` when a send may have
        reached a server that cannot be asked whether it did.
        """
        return self._remote(task, session)

    def stream(self, task: str, *, session: Session) -> AsyncIterator[Step | TextFragment]:
        """Like `run` (a remote agent's text arrives whole)."""
        return self._remote(task, session)

    async def _remote(self, task: str, session: Session) -> AsyncIterator[Any]:
        httpx = _httpx()
        async with session.checkpointer.hold(session.run_id):
            journal, closed = await Journal.open(
                session.run_id, session.checkpointer, self.configuration, task
            )
            if closed is not None:
                yield closed.as_replayed()
                return
            async with httpx.AsyncClient(timeout=self.timeout) as http:
                rpc = _Rpc(self, http, session.run_id)
                # ── SendMessage: check the journal → send (or find what was sent) → record
                send_id, history = journal.next_step("tool")
                if history is not None and isinstance(history.completed, ToolStep):
                    sent = history.completed.as_replayed()
                else:
                    attempted, found = await self._send_attempt(rpc, session, send_id, history)
                    if found is None:
                        await journal.write(attempted)  # on disk before the message leaves
                        yield attempted
                        rpc.step_id = send_id
                        found = await rpc.send(task, message_id=f"{session.run_id}/{send_id}")
                    sent = dataclasses.replace(
                        attempted, phase=Phase.COMPLETED, result=ToolResult(json.dumps(found))
                    )
                    await journal.write(sent)  # the task id, before anything waits on it
                yield sent
                accepted = _accepted(sent)

                answer: ToolResult
                if "answer" in accepted:  # the server answered with a message, not a task
                    answer = ToolResult(
                        accepted["answer"], is_error=accepted.get("is_error", False)
                    )
                else:
                    # ── GetTask: check the journal → poll until the task ends → record
                    wait_id, history = journal.next_step("tool")
                    if history is not None and isinstance(history.completed, ToolStep):
                        waited = history.completed.as_replayed()
                    else:
                        attempted = ToolStep(
                            run_id=session.run_id,
                            step_id=wait_id,
                            phase=Phase.ATTEMPTED,
                            attempt=history.attempt + 1 if history is not None else 1,
                            call=ToolCall(wait_id, "GetTask", {"id": accepted["taskId"]}),
                        )
                        await journal.write(attempted)
                        yield attempted
                        rpc.step_id = wait_id
                        result = await rpc.wait(accepted["taskId"])
                        waited = dataclasses.replace(
                            attempted, phase=Phase.COMPLETED, result=result
                        )
                        await journal.write(waited)
                    yield waited
                    assert waited.result is not None  # a completed tool step holds its result
                    answer = waited.result

            final_id, _ = journal.next_step("final")
            final = FinalStep(
                run_id=session.run_id,
                step_id=final_id,
                text=None if answer.is_error else answer.content,
                output=None if answer.is_error else answer.content,
                reason=answer.content if answer.is_error else None,
                usage=Usage(),  # A2A reports no token counts: unmeasured, never zero
            )
            await journal.write(final)
            yield final

    async def _send_attempt(
        self, rpc: _Rpc, session: Session, send_id: str, history: StepHistory | None
    ) -> tuple[ToolStep, dict[str, Any] | None]:
        """The SendMessage attempt to make, and the task a previous attempt already created.

        With no attempt journaled: a new one, nothing found. With an attempt and no result (the
        process died while sending): the server is asked for the tasks of this context; the
        one it holds is the answer to that send, and nothing is sent again.
        """
        message_id = f"{session.run_id}/{send_id}"
        call = ToolCall(
            send_id, "SendMessage", {"messageId": message_id, "contextId": session.run_id}
        )
        if history is None or history.attempted is None:
            attempted = ToolStep(
                run_id=session.run_id, step_id=send_id, phase=Phase.ATTEMPTED, call=call
            )
            return attempted, None
        previous = history.attempted
        assert isinstance(previous, ToolStep)  # the journal holds a tool step here
        retry = dataclasses.replace(previous, attempt=previous.attempt + 1, replayed=False)
        if history.retry_allowed:  # a person said the message never arrived: send it again
            return retry, None
        rpc.step_id = send_id
        found = await rpc.find(session.run_id, previous.call)
        return (previous if found is not None else retry), found


class _Rpc:
    """The JSON-RPC calls of one pass, each turned into a result or a designed error."""

    def __init__(self, agent: RemoteAgent, http: Any, run_id: str) -> None:
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
            return {"answer": _text_of(result["message"].get("parts"))}
        raise self.garbled("SendMessage", f"a result with neither task nor message: {result!r}")

    async def find(self, context_id: str, call: ToolCall) -> dict[str, Any] | None:
        """The task a send in this context already created, or None if there is none."""
        try:
            result = await self.call("ListTasks", {"contextId": context_id, "historyLength": 0})
        except RemoteProtocolError as exc:
            if exc.code in (METHOD_NOT_FOUND, UNSUPPORTED_OPERATION):
                assert self.step_id is not None
                raise UncertainEffect(self.run_id, self.step_id, call.name, call.arguments) from exc
            raise
        tasks = result.get("tasks")
        if not isinstance(tasks, list):
            raise self.garbled("ListTasks", f"a result without a list of tasks: {result!r}")
        mine = [self.task(t, "ListTasks") for t in tasks if isinstance(t, dict)]
        mine = [t for t in mine if t.get("contextId") == context_id]
        if not mine:
            return None
        if len(mine) > 1:
            raise self.garbled(
                "ListTasks", f"{len(mine)} tasks in context {context_id!r}, where one was sent"
            )
        return {
            "taskId": mine[0]["id"],
            "contextId": context_id,
            "state": mine[0]["status"]["state"],
            "found": "ListTasks",
        }

    async def wait(self, task_id: str) -> ToolResult:
        """Poll the task until it ends; its answer (an error result if it did not succeed)."""
        while True:
            task = self.task(await self.call("GetTask", {"id": task_id}), "GetTask", task_id)
            state = task["status"]["state"]
            if state == "TASK_STATE_COMPLETED":
                parts = [p for a in task.get("artifacts") or [] for p in a.get("parts") or []]
                text = _text_of(parts) or _text_of(
                    (task["status"].get("message") or {}).get("parts")
                )
                return ToolResult(text)
            if state in TERMINAL_STATES or state in INTERRUPTED_STATES:
                said = _text_of((task["status"].get("message") or {}).get("parts"))
                return ToolResult(
                    f"the remote task {task_id} ended in {state}" + (f": {said}" if said else ""),
                    is_error=True,
                )
            await asyncio.sleep(self.agent.poll_interval)

    def task(self, task: Any, method: str, task_id: str | None = None) -> dict[str, Any]:
        """`task`, checked to be an A2A task (with the id asked for, when one was)."""
        status = task.get("status") if isinstance(task, dict) else None
        state = status.get("state") if isinstance(status, dict) else None
        if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
            raise self.garbled(method, f"a task without an id: {_excerpt(json.dumps(task))}")
        if state not in STATES:
            raise self.garbled(method, f"task {task['id']!r} in an unknown state {state!r}")
        if task_id is not None and task["id"] != task_id:
            raise self.garbled(method, f"task {task['id']!r} when {task_id!r} was asked for")
        return task

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One JSON-RPC request; its `result` object, or a designed error."""
        httpx = _httpx()
        self.calls += 1
        if self.agent.tenant is not None:
            params = {"tenant": self.agent.tenant, **params}
        body = {"jsonrpc": "2.0", "id": self.calls, "method": method, "params": params}
        try:
            response = await self.http.post(
                self.agent.url, json=body, headers={"A2A-Version": PROTOCOL_VERSION}
            )
        except httpx.TransportError as exc:
            raise self.unavailable(method, f"{type(exc).__name__}: {exc or 'no detail'}") from None
        if response.status_code >= 500:
            raise self.unavailable(method, f"HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
            raise self.garbled(
                method,
                f"HTTP {response.status_code} with a body that is not JSON-RPC: "
                f"{_excerpt(response.text)}",
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
                self.agent.name,
                self.agent.url,
                f"{method} failed with JSON-RPC error {code}: {error.get('message')!r}",
                run_id=self.run_id,
                step_id=self.step_id,
                code=code if isinstance(code, int) else None,
                then=self._then(method),
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            raise self.garbled(method, f"a JSON-RPC answer without a result object: {answer!r}")
        return result

    def _then(self, method: str) -> str:
        if method == "SendMessage":
            return (
                "; the attempt is journaled: run the same run_id again, and the server is "
                "asked for the task of this context before anything is sent"
            )
        return "; nothing was sent again: fix the server and run the same run_id again"

    def unavailable(self, method: str, problem: str) -> RemoteUnavailable:
        return RemoteUnavailable(
            self.agent.name,
            self.agent.url,
            f"{method} could not reach it ({problem})",
            run_id=self.run_id,
            step_id=self.step_id,
            then=self._then(method),
        )

    def garbled(self, method: str, problem: str) -> RemoteProtocolError:
        return RemoteProtocolError(
            self.agent.name,
            self.agent.url,
            f"{method} was answered with {problem}",
            run_id=self.run_id,
            step_id=self.step_id,
            then=self._then(method),
        )


def _accepted(sent: ToolStep) -> dict[str, Any]:
    """What a completed SendMessage step recorded: the task the server created, or the
    answer itself (a server that answered with a message, or a person who recorded the
    answer with `Session.record_result`)."""
    content = sent.result.content if sent.result is not None else ""
    try:
        recorded = json.loads(content)
    except ValueError:
        recorded = None
    if isinstance(recorded, dict) and ("taskId" in recorded or "answer" in recorded):
        return recorded
    is_error = sent.result.is_error if sent.result is not None else False
    return {"answer": content, "is_error": is_error}


def _jsonrpc_interface(label: str, card_url: str, interfaces: Any) -> tuple[str, str | None]:
    """The URL of the card's first JSON-RPC interface of A2A 1.x, and its tenant (which every
    request to it must carry), if it declares one."""
    offered = []
    for interface in interfaces if isinstance(interfaces, list) else []:
        if not isinstance(interface, dict):
            continue
        binding, version = interface.get("protocolBinding"), str(interface.get("protocolVersion"))
        offered.append(f"{binding} {version}")
        if binding == "JSONRPC" and version.split(".")[0] == "1" and interface.get("url"):
            tenant = interface.get("tenant")
            return str(interface["url"]), str(tenant) if tenant else None
    raise RemoteProtocolError(
        label,
        card_url,
        "its card offers no JSON-RPC interface of A2A 1.x (it offers: "
        f"{', '.join(offered) or 'nothing'}); this client speaks A2A 1.0 over JSON-RPC",
    )


def _identifier(text: str) -> str:
    """A card's name as a tool name: `Buscador de vuelos` → `buscador_de_vuelos`."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text.strip().lower()).strip("_")
    return name or "remote_agent"


def _text_of(parts: Any) -> str:
    """The text parts of a message or artifact, joined."""
    texts = [
        p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
    ]
    return "\n".join(texts)


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
