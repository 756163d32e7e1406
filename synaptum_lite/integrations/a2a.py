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
it looks for the task holding its message id (`ListTasks` with the tasks' history: in its
context, the sub-run id, and then, since a server may keep a context of its own, among every
task the server lists) and re-attaches to the one it finds, sending only if the server has
none. A server that cannot answer that question (it cannot list tasks, or lists some that
show neither our context nor which message created them) leaves the send uncertain
(`UncertainEffect`), for a person to resolve.
A task that does not end within `max_wait` leaves GetTask attempted (`RemoteTaskTimeout`):
the next pass waits for the same task.

This module is the durable sub-run; the protocol's wire (the card's interface, the JSON-RPC
calls and what each bad answer becomes) is `a2a_wire`, and reading what an answer holds (a
task's states and shape, its text) is `a2a_answers`. The wire writes its JSON over httpx (the
optional extra `a2a`), rather than through the `a2a-sdk` package: four calls, visible in one
module, and no dependency whose API moves between protocol versions. httpx is imported on
first use, and a clear error says how to install it. The tests check this client against a
server built with a2a-sdk (tests/a2a/test_reference_server.py), so it is not only our own
reading of the protocol.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import AsyncIterator, Iterable
from typing import Any

from ..errors import (
    ConfigurationError,
    RemoteProtocolError,
    RemoteTaskLost,
    RemoteUnavailable,
    UncertainEffect,
)
from ..events import FinalStep, Phase, Step, ToolStep
from ..gateways.redaction import redact, without_userinfo
from ..journal import Journal, StepHistory
from ..messages import ToolCall, ToolResult, Usage
from ..session import Session
from ..tools import Risk
from . import a2a_wire as wire
from .a2a_answers import bounded, credentials, decode, excerpt, url_problem
from .a2a_wire import RemoteTaskTimeout

__all__ = [
    "RemoteAgent",
    "RemoteProtocolError",
    "RemoteTaskLost",
    "RemoteTaskTimeout",
    "RemoteUnavailable",
    "UncertainEffect",
    "remote_agent",
]


async def remote_agent(
    url: str,
    *,
    risk: Risk,
    name: str | None = None,
    poll_interval: float = 0.05,
    max_wait: float = 600.0,
    timeout: float = 10.0,
    allow_origins: Iterable[str] = (),
) -> RemoteAgent:
    """Read the agent card at `url` and return the remote agent it describes.

    `risk` is what the caller says the remote agent may do (a card does not say). `name` is
    how the model calls it (default: the card's name, as an identifier). `max_wait` bounds, in
    seconds, how long one pass waits for the remote task (`RemoteTaskTimeout` then; a later
    pass waits for the same task, sending nothing); `poll_interval` is the first pause between
    two polls, which grows to one second; `timeout` bounds each HTTP request. A card whose
    JSON-RPC interface lives on another origin than the card is refused unless that origin is
    in `allow_origins`. A `user:password@` in `url` is sent as Basic auth, never in a URL, and
    redacted from every message and log line. Raises `ConfigurationError` when `url` is not an
    http(s) URL a request can be sent to, `RemoteUnavailable` when the card cannot be fetched
    and `RemoteProtocolError` when it is not an A2A 1.x card with a JSON-RPC interface.
    """
    httpx = wire.httpx_module()
    label = name or "remote agent"
    shown, auth, secrets = _card_url(label, url, httpx)
    timeout = _seconds(label, "timeout", timeout, "bounds each HTTP request")
    async with httpx.AsyncClient(timeout=timeout, auth=auth) as http:
        try:
            status, headers, body = await wire.read(http, "GET", shown, timeout)
        except (httpx.TransportError, TimeoutError) as exc:
            why = (
                f"{type(exc).__name__}: {redact(str(exc), secrets)}"
                if str(exc)
                else f"nothing in timeout={timeout:g} s"
            )
            raise RemoteUnavailable(
                label,
                shown,
                f"its card could not be fetched ({why})",
                then="; nothing was sent. Start the server or fix the URL, then try again",
            ) from None
        except ValueError as exc:
            raise RemoteProtocolError(label, shown, f"its card is {exc}") from None
    if 300 <= status < 400:
        location = headers.get("location")
        location = redact(without_userinfo(location), secrets) if location else location
        raise RemoteProtocolError(
            label,
            shown,
            f"its card answered HTTP {status}, a redirect to {location!r}, "
            "which is not followed; nothing was sent",
            then=". If you trust where it points, call remote_agent with that URL",
        )
    if status != 200:
        raise RemoteUnavailable(
            label,
            shown,
            f"its card answered HTTP {status}",
            then="; nothing was sent. Check the URL: the card lives at " + wire.CARD_PATH,
        )
    card, why = decode(body, secrets)
    if not isinstance(card, dict):
        why = f" ({why})" if why else ""
        raise RemoteProtocolError(
            label, shown, f"its card is not a JSON object{why}: {excerpt(body, secrets=secrets)}"
        )
    return RemoteAgent(
        card,
        card_url=url.rstrip("/") + wire.CARD_PATH,  # its user:password, for the interface
        risk=risk,
        name=name,
        poll_interval=poll_interval,
        max_wait=max_wait,
        timeout=timeout,
        allow_origins=allow_origins,
    )


class RemoteAgent:
    """An agent served elsewhere over A2A: a delegate (`execution.Delegate`), usable wherever
    an `Agent` is one.

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
        max_wait: float = 600.0,
        timeout: float = 10.0,
        allow_origins: Iterable[str] = (),
    ) -> None:
        label = name or str(card.get("name") or "remote agent")
        self.poll_interval = _seconds(
            label,
            "poll_interval",
            poll_interval,
            "is the pause between two polls of the remote task",
        )
        self.max_wait = _seconds(
            label, "max_wait", max_wait, "bounds how long one pass waits for the remote task"
        )
        self.timeout = _seconds(label, "timeout", timeout, "bounds each HTTP request")
        if not isinstance(risk, Risk):
            raise ConfigurationError(
                f"remote agent {label!r}: risk must be a Risk (Risk.READ, Risk.SOFT_WRITE, "
                f"Risk.HARD_WRITE or Risk.DESTRUCTIVE), got {risk!r}. An agent card declares "
                "skills, not risk: say what this agent may do, as for a tool"
            )
        shown, _, card_secrets = credentials(card_url)  # a password is never printed
        missing = [f for f in ("name", "description", "supportedInterfaces") if not card.get(f)]
        if missing:
            raise RemoteProtocolError(
                label, shown, f"its card lacks {', '.join(missing)}, which A2A requires"
            )
        endpoint, self.tenant = wire.jsonrpc_interface(
            label, card_url, card["supportedInterfaces"], frozenset(allow_origins)
        )
        #: Where requests go, as printed and journaled: without a `user:password@`, which is
        #: sent apart, as Basic auth (`_auth`), and redacted with `secrets`.
        self.endpoint, self._auth, secrets = credentials(endpoint)
        self.secrets = tuple(dict.fromkeys((*card_secrets, *secrets)))
        self.url = self.endpoint
        skills = card.get("skills") or []
        if not isinstance(skills, list):
            raise RemoteProtocolError(
                label, shown, f"its card's skills are {bounded(skills)}, not a list"
            )
        self.card = {
            "name": str(card["name"]),
            "version": str(card.get("version", "")),
            "skills": [str(s.get("id")) for s in skills if isinstance(s, dict)],
        }
        self._risk = risk
        described = str(card["description"]).strip()
        skill_names = [str(s.get("name") or s.get("id")) for s in skills if isinstance(s, dict)]
        if skill_names:
            described += " Skills: " + "; ".join(skill_names) + "."
        self.name = name or _identifier(str(card["name"]))
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigurationError(
                f"remote agent {label!r}: name must be a non-empty str, got {name!r}"
            )
        self.description = described

    def __repr__(self) -> str:
        return f"RemoteAgent({self.name!r}, url={self.url!r}, risk=Risk.{self._risk.name})"

    @property
    def configuration(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "tools": {"SendMessage": wire.PROTOCOL_VERSION, "GetTask": wire.PROTOCOL_VERSION},
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

    def stream(self, task: str, *, session: Session) -> AsyncIterator[Step]:
        """Like `run` (a remote agent's text arrives whole)."""
        return self._remote(task, session)

    async def _remote(self, task: str, session: Session) -> AsyncIterator[Any]:
        httpx = wire.httpx_module()
        async with session.checkpointer.hold(session.run_id):
            journal, closed = await Journal.open(
                session.run_id, session.checkpointer, self.configuration, task
            )
            if closed is not None:
                yield closed.as_replayed()
                return
            async with httpx.AsyncClient(timeout=self.timeout, auth=self._auth) as http:
                rpc = wire.Rpc(self, http, session.run_id)
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
        self, rpc: wire.Rpc, session: Session, send_id: str, history: StepHistory | None
    ) -> tuple[ToolStep, dict[str, Any] | None]:
        """The SendMessage attempt to make, and the task a previous attempt already created.

        With no attempt journaled: a new one, nothing found. With an attempt and no result (the
        process died while sending): the server is asked for the task holding this message
        (`Rpc.find`); the one it holds is the answer to that send, and nothing is sent again.
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
        found = await rpc.find(message_id, previous.call)
        return (previous if found is not None else retry), found


def _card_url(
    label: str, url: Any, httpx: Any
) -> tuple[str, tuple[str, str] | None, tuple[re.Pattern[str], ...]]:
    """The card's URL without a password, the `user:password` to send apart, and what redacts
    it; a ConfigurationError, before anything is fetched, for a URL no request can go to."""
    if not isinstance(url, str):
        raise ConfigurationError(
            f"remote agent {label!r}: url must be a str, the server's base URL such as "
            f"http://127.0.0.1:8000, got {type(url).__name__}"
        )
    shown, auth, secrets = credentials(url.rstrip("/") + wire.CARD_PATH)
    wrong = url_problem(shown, httpx)
    if not wrong and (httpx.URL(shown).query or httpx.URL(shown).fragment):
        wrong = "it has a ?query or #fragment, which the card's path would not end"
    if wrong:
        # a URL without a scheme keeps its user:password@ from without_userinfo: cut it here
        printable = without_userinfo(url) if "://" in url else url.rsplit("@", 1)[-1]
        raise ConfigurationError(
            f"remote agent {label!r}: {printable!r} is not a URL httpx can use "
            f"({redact(wrong, secrets)}); nothing was fetched or sent. Give the server's base "
            "URL, such as http://127.0.0.1:8000"
        )
    return shown, auth, secrets


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


def _identifier(text: str) -> str:
    """A card's name as a tool name a model API takes (at most 64 characters):
    `Buscador de vuelos` → `buscador_de_vuelos`."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text.strip().lower()).strip("_")[:64].rstrip("_")
    return name or "remote_agent"


def _seconds(label: str, what: str, value: Any, purpose: str) -> float:
    """`value` as a positive, finite number of seconds, or a ConfigurationError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigurationError(
            f"remote agent {label!r}: {what} must be a positive number of seconds, got "
            f"{value!r}; it {purpose}"
        )
    return float(value)
