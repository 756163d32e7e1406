"""The OpenAI-compatible HTTP model: chat completions, tool calls and SSE streaming over httpx.

Needs the `http` extra (`pip install 'synaptum-lite[http]'`). Any server that speaks
`POST {base_url}/chat/completions` works: llama.cpp's `llama-server`, vLLM, Ollama, a hosted API.

A server that ignores `"stream": true` and answers one JSON completion is read as that
completion, and one that streams although not asked to is read as its stream (either way, it was
paid for). How failures become a `ProviderError` is in `http_failures`; how an answer's bytes
become a `ModelResponse` (bounded, redacted) is in `http_answers`.

Retrying is the loop's job (`Session.retry`), never this module's, but the call's `deadline` spans
its attempts: the loop retries a failed call with the same `ModelRequest` object, in the same
task, and that is how an attempt is told from a new call (`_Call`). The API key is sent in one
header and nowhere else: it is not an attribute a `repr` shows, and every message this module
builds is redacted before it is cut (`http_failures`), so neither an error, a log line nor a
journal can carry it, whole or in part, raw or escaped (JSON `\\u002d`, URL `%2D`, HTML `&#45;`). A
password in the base URL (`https://user:password@host/v1`) is sent as Basic auth, never as
part of a URL, and is redacted the same way; the log lines of httpx and httpcore that this
module causes pass through the same redaction (`RedactSecrets`), and so does every answer a
server sends (its text, tool-call ids, names and arguments) before the loop journals it, and
every streamed fragment before the caller sees it (a key cut across two fragments included).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import time
import urllib.parse
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from ..gateway import LocalGateway
from ..messages import ModelRequest, ModelResponse
from ..policy import Policy, allow_everything
from ..tools import Tool
from .http_answers import assembled, fragments, is_json, once, read_body, read_completion, until
from .http_failures import AGAIN as AGAIN
from .http_failures import BODY_EXCERPT as BODY_EXCERPT
from .http_failures import ERROR_BODY_BYTES as ERROR_BODY_BYTES
from .http_failures import REFUSED as REFUSED
from .http_failures import ServerFailures
from .redaction import RedactSecrets, secret_patterns, userinfo, without_userinfo
from .sse import SseLines, looks_like_sse
from .wire import StreamAssembly, request_body

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]

ENV_BASE_URL = "SYNAPTUM_BASE_URL"
ENV_API_KEY = "SYNAPTUM_API_KEY"
ENV_MODEL = "SYNAPTUM_MODEL"
ENV_TIMEOUT = "SYNAPTUM_TIMEOUT"

#: The default time one read may wait for the server, in seconds (`SYNAPTUM_TIMEOUT`).
TIMEOUT = 120.0

#: The default total time a model call may take, in seconds, across all its attempts (the
#: loop's retries and the waits between them), however the server sends its answer.
DEADLINE = 600.0

#: The default most an answer may hold, in bytes once decompressed, streamed or not. A long
#: streamed answer costs about 200 bytes of SSE per token, so 32 MiB holds some 160,000 tokens.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class OpenAICompatibleGateway(LocalGateway):
    """A model behind an OpenAI-compatible `/chat/completions` endpoint; tools run locally.

    `base_url` is the API root, up to and including `/v1` (`http://127.0.0.1:8080/v1`).
    The model name sent is the request's (the agent's `model`); `model` here is used only
    when a request carries none. `api_key`, when given, is sent as `Authorization: Bearer`.
    `tools` and `policy` are `LocalGateway`'s: which tools may run, and who decides.
    `timeout` bounds each read (seconds); connecting has its own short bound. `deadline`
    bounds the whole call (seconds, `DEADLINE` = 600 by default), streamed or not, across the
    loop's retries and the waits between them: a server that trickles bytes or sends SSE
    keep-alive comments cannot keep a call open past it, nor can retrying. Passing it is a
    `ProviderError` that is not retried (it says over how many attempts the deadline was
    spent), and no attempt starts once it has passed (the loop's wait before a retry counts).
    `attempt_timeout` bounds one attempt (seconds; by default only the deadline does):
    passing it is a retryable `ProviderError`, and the loop tries again within the deadline.
    `max_response_bytes` bounds what an answer may hold once decompressed
    (`MAX_RESPONSE_BYTES`, 32 MiB, by default); a larger one is a `ProviderError` that is
    not retried.

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
        timeout: float = TIMEOUT,
        deadline: float = DEADLINE,
        attempt_timeout: float | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
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
        for name, seconds in (
            ("timeout", timeout),
            ("deadline", deadline),
            ("attempt_timeout", attempt_timeout),
        ):
            if seconds is not None and not (
                isinstance(seconds, (int, float))
                and not isinstance(seconds, bool)
                and 0 < seconds < float("inf")
            ):
                raise ConfigurationError(
                    f"{name} must be a positive number of seconds, got {seconds!r}"
                )
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise ConfigurationError(
                f"max_response_bytes must be a positive number of bytes, got {max_response_bytes!r}"
            )
        super().__init__(tools=tools, policy=policy)
        self.max_response_bytes = max_response_bytes
        self.base_url = without_userinfo(base_url.rstrip("/"))
        self.model = model
        self.timeout = timeout
        self.deadline = deadline
        self.attempt_timeout = attempt_timeout
        self._url = self.base_url + "/chat/completions"
        _check_url(without_userinfo(base_url), self._url)
        self._api_key = api_key or None
        self._auth = userinfo(base_url)
        self._transport = transport
        secrets = [self._api_key] if self._api_key else []
        if self._auth is not None:
            user, password = self._auth
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            secrets += [password, urllib.parse.quote(password, safe=""), basic]
        self._secrets = secret_patterns(secrets)
        self._plain = tuple(dict.fromkeys(s for s in secrets if len(s) >= 4))
        RedactSecrets.install(self._secrets)

    @classmethod
    def from_env(
        cls,
        *,
        tools: Iterable[Tool] | None = None,
        policy: Policy = allow_everything,
        environ: Mapping[str, str] | None = None,
    ) -> OpenAICompatibleGateway:
        """Build the gateway from `SYNAPTUM_BASE_URL`, `SYNAPTUM_API_KEY`, `SYNAPTUM_MODEL` and
        `SYNAPTUM_TIMEOUT` (`timeout`, in seconds: a slow local model that writes a whole
        answer before its first byte may need more than the default).

        Raises `ConfigurationError` when `SYNAPTUM_BASE_URL` is not set, or when
        `SYNAPTUM_TIMEOUT` is not a positive number of seconds.
        """
        env = os.environ if environ is None else environ
        base_url = env.get(ENV_BASE_URL, "").strip()
        if not base_url:
            raise ConfigurationError(
                f"{ENV_BASE_URL} is not set; export the server's API root, "
                "for example http://127.0.0.1:8080/v1"
            )
        timeout = TIMEOUT
        if raw := env.get(ENV_TIMEOUT, "").strip():
            try:
                timeout = float(raw)
            except ValueError:
                timeout = float("nan")  # refused below, naming the value
            if not 0 < timeout < float("inf"):
                raise ConfigurationError(
                    f"{ENV_TIMEOUT} must be a positive number of seconds, got {raw!r}; "
                    f"export one (for example 600) or unset it for the default ({TIMEOUT:g})"
                )
        return cls(
            base_url,
            model=env.get(ENV_MODEL) or None,
            api_key=env.get(ENV_API_KEY) or None,
            timeout=timeout,
            tools=tools,
            policy=policy,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def _attempt(self, request: ModelRequest) -> _Attempt:
        """Begin an attempt of the call `request` belongs to, or refuse to: its deadline is
        spent. A call is the loop's: its first attempt, and its retries of the same request
        object in the same task (a `ContextVar`, so concurrent runs sharing this gateway, or
        a run resumed later, each have their own call and deadline)."""
        now = time.monotonic()
        call = _CALL.get()
        if call is None or call.gateway is not self or call.request is not request:
            call = _Call(self, request, now + self.deadline)
            _CALL.set(call)
        left = call.ends - now
        if left <= 0:  # spent, in the loop's wait before this attempt: none is started
            self.model_calls -= 1  # counted by `complete`/`stream`, but it reaches no model
            raise self._failures(call).past_deadline()
        call.attempts += 1
        bound = left if self.attempt_timeout is None else min(left, self.attempt_timeout)
        ends = asyncio.get_running_loop().time() + bound
        return _Attempt(self._failures(call), ends, whole_call=bound == left)

    def _failures(self, call: _Call) -> ServerFailures:
        """How this gateway words the failures of `call`'s latest attempt."""
        return ServerFailures(
            self.base_url,
            self._secrets,
            self.deadline,
            self.max_response_bytes,
            self.attempt_timeout,
            max(call.attempts, 1),
            self._plain,
        )

    # ── the two model calls ─────────────────────────────────────────────────────────────────

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        payload = self._payload(request, stream=False)
        attempt = self._attempt(request)
        failures = attempt.failures
        async with self._client() as client:
            try:
                async with (
                    asyncio.timeout_at(attempt.ends),
                    client.stream("POST", self._url, json=payload) as response,
                ):
                    await failures.refuse(response)
                    body = await read_body(response, self.max_response_bytes, failures.too_large)
            except TimeoutError:
                raise failures.out_of_time(whole_call=attempt.whole_call) from None
            except httpx.TimeoutException as exc:
                raise failures.transport("timed out", exc) from None
            except httpx.ConnectError as exc:
                raise failures.transport("could not be reached", exc) from None
            except httpx.TransportError as exc:
                what = "dropped the connection before its answer was complete"
                raise failures.transport(what, exc) from None
            except httpx.DecodingError as exc:
                raise failures.decoding(response, exc) from None
        if looks_like_sse(body):  # it streamed although asked not to: the answer is in there
            assembly, lines = StreamAssembly(), SseLines(self.max_response_bytes, ERROR_BODY_BYTES)
            async for _ in fragments(once(body), assembly, lines, failures):
                pass
            answer = assembled(assembly, lines, failures)
        else:
            answer = read_completion(body, failures)
        _CALL.set(None)  # answered: the call is over
        return answer

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        payload = self._payload(request, stream=True)
        attempt = self._attempt(request)
        failures, deadline = attempt.failures, attempt.ends
        # The `async with` and `finally` blocks are what make `aclose()` stop generation
        # upstream: closing this generator unwinds them, which closes the response and its
        # connection, and a server stops generating when its client goes away.
        assembly = StreamAssembly()
        lines = SseLines(self.max_response_bytes, ERROR_BODY_BYTES)
        async with self._client() as client:
            try:
                async with asyncio.timeout_at(deadline):
                    response = await client.send(
                        client.build_request("POST", self._url, json=payload), stream=True
                    )
                try:
                    async with asyncio.timeout_at(deadline):
                        await failures.refuse(response)
                    chunks = until(deadline, response.aiter_bytes())
                    if is_json(response):
                        async with asyncio.timeout_at(deadline):
                            body = await read_body(
                                response, self.max_response_bytes, failures.too_large
                            )
                        if not looks_like_sse(body):  # it ignored "stream": one completion
                            whole = read_completion(body, failures)
                            _CALL.set(None)  # answered: the call is over
                            if whole.text:
                                yield whole.text
                            yield whole
                            return
                        chunks = once(body)  # server-sent events labelled as JSON
                    async with contextlib.aclosing(
                        fragments(chunks, assembly, lines, failures)
                    ) as pieces:
                        async for piece in pieces:
                            yield piece
                finally:
                    await response.aclose()
            except (TimeoutError, httpx.TransportError) as exc:
                # After a finish_reason the answer is whole: a stall or a drop then loses only
                # the usage (unmeasured) and [DONE], not an answer paid for.
                if not assembly.finished:
                    if isinstance(exc, TimeoutError):
                        raise failures.out_of_time(whole_call=attempt.whole_call) from None
                    raise failures.stream(exc) from None
            except httpx.DecodingError as exc:
                raise failures.decoding(response, exc) from None
        answer = assembled(assembly, lines, failures)
        _CALL.set(None)  # answered: the call is over
        yield answer

    # ── the request ─────────────────────────────────────────────────────────────────────────

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


@dataclass(eq=False)
class _Call:
    """One model call: `request` sent through `gateway`, first as itself and then as the
    loop's retries, until the `time.monotonic()` it `ends` at (its deadline)."""

    gateway: OpenAICompatibleGateway
    request: ModelRequest
    ends: float
    attempts: int = 0


#: The call the current task is making (the loop retries in the task that called).
_CALL: ContextVar[_Call | None] = ContextVar("synaptum_lite_http_call", default=None)


@dataclass(frozen=True)
class _Attempt:
    """One attempt of a call: how its failures are worded, the event loop's time it `ends`
    at, and whether that is the call's deadline (`whole_call`) or its `attempt_timeout`."""

    failures: ServerFailures
    ends: float
    whole_call: bool


def _check_url(base_url: str, url: str) -> None:
    """Refuse, before anything is run or paid, a base URL no request could be sent to.

    Unchecked, httpx refuses it only at the first call (an `InvalidURL`, or a port out of
    range as an `ExceptionGroup`), or an empty host fails like a dropped connection and is
    retried. `base_url` is shown without its `user:password@`.
    """
    problem = None
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        problem = str(exc).rstrip(".")
    else:
        if not parsed.host:
            problem = "it names no host"
        elif parsed.port is not None and not 0 < parsed.port < 65536:
            problem = f"port {parsed.port} is not between 1 and 65535"
        elif parsed.query or parsed.fragment:
            problem = "it has a ?query or #fragment, so /chat/completions would not end its path"
    if problem is not None:
        raise ConfigurationError(
            f"base_url {base_url!r} cannot be sent to: {problem}; set SYNAPTUM_BASE_URL to "
            "the API root, for example http://127.0.0.1:8080/v1"
        )
