"""The OpenAI-compatible HTTP model: chat completions, tool calls and SSE streaming over httpx.

Needs the `http` extra (`pip install 'synaptum-lite[http]'`). Any server that speaks
`POST {base_url}/chat/completions` works: llama.cpp's `llama-server`, vLLM, Ollama, a hosted API.

Failures are classified once, here, into `ProviderError`:

    timeout, connection refused or dropped (also mid-stream)  retryable
    the call's total deadline passed (a trickling server)      retryable
    429, 408, 5xx                                              retryable, `Retry-After` parsed
    any other 4xx (401, 403, 404, 400 ...)                     not retryable
    a body or an SSE event that is not the protocol            not retryable

Retrying is the loop's job (`Session.retry`), never this module's. The API key is sent in one
header and nowhere else: it is not an attribute a `repr` shows, and every message this module
builds passes through `_redact` before it is cut, so neither an error, a log line nor a journal
can carry it, whole or in part, raw or escaped (JSON `\\u002d`, URL `%2D`, HTML `&#45;`). A
password in the base URL (`https://user:password@host/v1`) is sent as Basic auth, never as
part of a URL, and is redacted the same way; the log lines of httpx and httpcore that this
module causes pass through the same redaction (`RedactSecrets`).
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import os
import time
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any

from .errors import ConfigurationError, ProviderError
from .gateway import LocalGateway
from .messages import ModelRequest, ModelResponse
from .policy import Policy, allow_everything
from .redaction import RedactSecrets, redact, secret_patterns, userinfo, without_userinfo
from .tools import Tool
from .wire import StreamAssembly, request_body, tool_call_from_wire, usage_from_wire

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]

ENV_BASE_URL = "SYNAPTUM_BASE_URL"
ENV_API_KEY = "SYNAPTUM_API_KEY"
ENV_MODEL = "SYNAPTUM_MODEL"

#: How much of an error body an exception message quotes.
BODY_EXCERPT = 300

#: The default total time a model call may take, in seconds, however the server sends it.
DEADLINE = 600.0


class OpenAICompatibleGateway(LocalGateway):
    """A model behind an OpenAI-compatible `/chat/completions` endpoint; tools run locally.

    `base_url` is the API root, up to and including `/v1` (`http://127.0.0.1:8080/v1`).
    The model name sent is the request's (the agent's `model`); `model` here is used only
    when a request carries none. `api_key`, when given, is sent as `Authorization: Bearer`.
    `tools` and `policy` are `LocalGateway`'s: which tools may run, and who decides.
    `timeout` bounds each read (seconds); connecting has its own short bound. `deadline`
    bounds the whole call (seconds, `DEADLINE` = 600 by default), streamed or not: a server
    that trickles bytes or sends SSE keep-alive comments cannot keep a call open past it.
    Passing it is a retryable `ProviderError`.

    Tool-call arguments that are not valid JSON do not raise: the `ToolCall` carries the raw
    text as its `arguments` (a `str`), which the loop turns into an error result the model
    reads in its next turn. Usage the server does not report stays `None` (not measured).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        deadline: float = DEADLINE,
        tools: Iterable[Tool] | None = None,
        policy: Policy = allow_everything,
        transport: Any = None,
    ) -> None:
        if httpx is None:
            raise ConfigurationError(
                "OpenAICompatibleGateway needs httpx, which is not installed; "
                "install the extra: pip install 'synaptum-lite[http]' (or uv sync --extra http)"
            )
        if not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"base_url must start with http:// or https://, got {without_userinfo(base_url)!r}"
            )
        if not deadline > 0:
            raise ConfigurationError(
                f"deadline must be a positive number of seconds, got {deadline!r}"
            )
        super().__init__(tools=tools, policy=policy)
        self.base_url = without_userinfo(base_url.rstrip("/"))
        self.model = model
        self.timeout = timeout
        self.deadline = deadline
        self._url = self.base_url + "/chat/completions"
        self._api_key = api_key or None
        self._auth = userinfo(base_url)
        self._transport = transport
        secrets = [self._api_key] if self._api_key else []
        if self._auth is not None:
            user, password = self._auth
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            secrets += [password, urllib.parse.quote(password, safe=""), basic]
        self._secrets = secret_patterns(secrets)
        RedactSecrets.install(self._secrets)

    @classmethod
    def from_env(
        cls,
        *,
        tools: Iterable[Tool] | None = None,
        policy: Policy = allow_everything,
        environ: Mapping[str, str] | None = None,
    ) -> OpenAICompatibleGateway:
        """Build the gateway from `SYNAPTUM_BASE_URL`, `SYNAPTUM_API_KEY`, `SYNAPTUM_MODEL`.

        Raises `ConfigurationError` when `SYNAPTUM_BASE_URL` is not set.
        """
        env = os.environ if environ is None else environ
        base_url = env.get(ENV_BASE_URL, "").strip()
        if not base_url:
            raise ConfigurationError(
                f"{ENV_BASE_URL} is not set; export the server's API root, "
                "for example http://127.0.0.1:8080/v1"
            )
        return cls(
            base_url,
            model=env.get(ENV_MODEL) or None,
            api_key=env.get(ENV_API_KEY) or None,
            tools=tools,
            policy=policy,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    # ── the two model calls ─────────────────────────────────────────────────────────────────

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        payload = self._payload(request, stream=False)
        async with self._client() as client:
            try:
                async with asyncio.timeout(self.deadline):
                    response = await client.post(self._url, json=payload)
            except TimeoutError:
                raise self._deadline_error() from None
            except httpx.TimeoutException as exc:
                raise self._transport_error("timed out", exc) from None
            except httpx.TransportError as exc:
                raise self._transport_error("could not be reached", exc) from None
            if response.is_error:
                raise self._status_error(response)
            try:
                body = response.json()
            except ValueError:
                raise self._protocol_error(
                    "answered with a body that is not JSON", response.text
                ) from None
        return self._read_completion(body)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        payload = self._payload(request, stream=True)
        deadline = asyncio.get_running_loop().time() + self.deadline
        # The `async with` and `finally` blocks are what make `aclose()` stop generation
        # upstream: closing this generator unwinds them, which closes the response and its
        # connection, and a server stops generating when its client goes away.
        async with self._client() as client:
            try:
                async with asyncio.timeout_at(deadline):
                    response = await client.send(
                        client.build_request("POST", self._url, json=payload), stream=True
                    )
                try:
                    if response.is_error:
                        async with asyncio.timeout_at(deadline):
                            await response.aread()
                        raise self._status_error(response)
                    assembly = StreamAssembly()
                    async for data in _sse_data(_until(deadline, response.aiter_lines())):
                        if data == "[DONE]":
                            assembly.done = True
                            break
                        try:
                            event = json.loads(data)
                        except ValueError:
                            raise self._protocol_error(
                                "sent an SSE event that is not JSON", data
                            ) from None
                        if not isinstance(event, dict):
                            raise self._protocol_error(
                                "sent an SSE event that is not an object", data
                            )
                        if "error" in event:
                            raise self._in_band_error(event["error"])
                        fragment = assembly.feed(event)
                        if fragment:
                            yield fragment
                finally:
                    await response.aclose()
            except TimeoutError:
                raise self._deadline_error() from None
            except httpx.TimeoutException as exc:
                raise self._transport_error("timed out while streaming", exc) from None
            except httpx.TransportError as exc:
                raise self._transport_error("dropped the connection while streaming", exc) from None
        if not assembly.complete:
            raise ProviderError(
                f"the model server at {self.base_url} ended the stream before it was complete "
                "(no finish_reason and no [DONE]); the call can be made again",
                retryable=True,
            )
        yield assembly.response()

    # ── wire format ─────────────────────────────────────────────────────────────────────────

    def _client(self) -> httpx.AsyncClient:
        # One client per call: a client's pool belongs to one event loop, and notebooks and
        # scripts may drive the same gateway from several (`asyncio.run` per round).
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return httpx.AsyncClient(
            headers=headers,
            auth=self._auth,
            timeout=httpx.Timeout(self.timeout, connect=10.0),
            transport=self._transport,
        )

    def _payload(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        payload = request_body(request, self.model)
        if stream:
            payload["stream"] = True
            payload["stream_options"] = {"include_usage": True}
        return payload

    def _read_completion(self, body: Any) -> ModelResponse:
        try:
            message = body["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise self._protocol_error(
                "answered without choices[0].message", json.dumps(body)
            ) from None
        calls = tuple(
            tool_call_from_wire(index, raw.get("id"), raw.get("function") or {})
            for index, raw in enumerate(message.get("tool_calls") or ())
        )
        return ModelResponse(
            text=message.get("content") or None,
            tool_calls=calls,
            usage=usage_from_wire(body.get("usage")),
        )

    # ── errors ──────────────────────────────────────────────────────────────────────────────

    def _redact(self, text: str) -> str:
        """`text` with every secret of this gateway, in any form it can take, redacted.

        Called on whole texts, before anything is cut: a secret cut in two is no longer
        recognisable, and its first half would show.
        """
        return redact(text, self._secrets)

    def _status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        retryable = status in (408, 429) or status >= 500
        detail = _error_detail(self._redact(response.text))
        hint = {
            401: "; check SYNAPTUM_API_KEY (the server refused the key, or none was sent)",
            403: "; the key is valid but not allowed to use this model or endpoint",
            404: "; check SYNAPTUM_BASE_URL (the API root, up to /v1) and SYNAPTUM_MODEL",
        }.get(status, "")
        retry_after = _retry_after(response.headers.get("Retry-After")) if retryable else None
        wait = f", Retry-After {retry_after:g} s" if retry_after is not None else ""
        message = (
            f"the model server at {self.base_url} answered HTTP {status}{wait}: {detail}{hint}"
        )
        return ProviderError(
            self._redact(message), retryable=retryable, status=status, retry_after=retry_after
        )

    def _transport_error(self, what: str, exc: Exception) -> ProviderError:
        reason = str(exc) or type(exc).__name__
        message = f"the model server at {self.base_url} {what} ({type(exc).__name__}: {reason})"
        return ProviderError(self._redact(message), retryable=True)

    def _deadline_error(self) -> ProviderError:
        message = (
            f"the model server at {self.base_url} did not finish the call within its deadline "
            f"of {self.deadline:g} s (a server that trickles its answer or only sends keep-alive "
            "comments); the call can be made again, or given more time with deadline="
        )
        return ProviderError(self._redact(message), retryable=True)

    def _protocol_error(self, what: str, raw: str) -> ProviderError:
        message = (
            f"the model server at {self.base_url} {what}: {_excerpt(self._redact(raw))!r}; "
            "is SYNAPTUM_BASE_URL an OpenAI-compatible API root?"
        )
        return ProviderError(self._redact(message), retryable=False)

    def _in_band_error(self, error: Any) -> ProviderError:
        status = error.get("code") if isinstance(error, dict) else None
        status = status if isinstance(status, int) else None
        retryable = status is not None and (status == 429 or status >= 500)
        detail = _error_detail(self._redact(json.dumps({"error": error})))
        message = f"the model server at {self.base_url} failed while streaming: {detail}"
        return ProviderError(self._redact(message), retryable=retryable, status=status)


# ── helpers ─────────────────────────────────────────────────────────────────────────────


def _retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date; `None` when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _error_detail(text: str) -> str:
    """The server's own error message when it sent the usual `{"error": {"message": ...}}`."""
    try:
        body = json.loads(text)
    except ValueError:
        return _excerpt(text) or "(empty body)"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return _excerpt(error["message"])
    if isinstance(error, str):
        return _excerpt(error)
    return _excerpt(text)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= BODY_EXCERPT else text[:BODY_EXCERPT] + " …"


async def _until(deadline: float, items: AsyncIterator[str]) -> AsyncIterator[str]:
    """`items`, each awaited no later than the event loop's time `deadline`, after which
    `TimeoutError` is raised. The bound never spans a `yield`, so it never cancels the
    consumer's own work."""
    while True:
        async with asyncio.timeout_at(deadline):
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
        yield item


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined); comments skipped."""
    buffer: list[str] = []
    async for line in lines:
        if line == "":
            if buffer:
                yield "\n".join(buffer)
                buffer = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if name == "data":
            buffer.append(value[1:] if value.startswith(" ") else value)
    if buffer:
        yield "\n".join(buffer)
