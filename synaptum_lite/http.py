"""The OpenAI-compatible HTTP model: chat completions, tool calls and SSE streaming over httpx.

Needs the `http` extra (`pip install 'synaptum-lite[http]'`). Any server that speaks
`POST {base_url}/chat/completions` works: llama.cpp's `llama-server`, vLLM, Ollama, a hosted API.

Failures are classified once, here, into `ProviderError`:

    timeout, connection refused or dropped (also mid-stream)  retryable
    (a stream that stalls or drops after its finish_reason     kept: the answer is whole,
    is not a failure)                                          only the usage is unmeasured
    the call's total deadline passed (a trickling server)      retryable
    429, 408, 5xx                                              retryable, `Retry-After` parsed
    any other 4xx (401, 403, 404, 400 ...)                     not retryable
    a redirect (3xx): never followed, the key stays here       not retryable
    a body or an SSE event that is not the protocol            not retryable
    (not JSON, the wrong shape, undecodable gzip, too deep)
    an answer larger than `max_response_bytes`                 not retryable

Every body is read with a bound, whatever `Content-Length` says: an answer up to
`max_response_bytes`, an error body up to `ERROR_BODY_BYTES`. A server that ignores
`"stream": true` and answers one JSON completion is read as that completion, and one that
streams although not asked to is read as its stream (either way, it was paid for).

Retrying is the loop's job (`Session.retry`), never this module's. The API key is sent in one
header and nowhere else: it is not an attribute a `repr` shows, and every message this module
builds passes through `_redact` before it is cut, so neither an error, a log line nor a journal
can carry it, whole or in part, raw or escaped (JSON `\\u002d`, URL `%2D`, HTML `&#45;`). A
password in the base URL (`https://user:password@host/v1`) is sent as Basic auth, never as
part of a URL, and is redacted the same way; the log lines of httpx and httpcore that this
module causes pass through the same redaction (`RedactSecrets`), and so does every answer a
server sends (its text, tool-call ids, names and arguments) before the loop journals it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import datetime
import email.utils
import json
import math
import os
import re
import time
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any

from .errors import ConfigurationError, ProviderError
from .gateway import LocalGateway
from .messages import ModelRequest, ModelResponse, ToolCall
from .policy import Policy, allow_everything
from .redaction import RedactSecrets, redact, secret_patterns, userinfo, without_userinfo
from .tools import Tool
from .wire import (
    MalformedAnswer,
    SseLines,
    StreamAssembly,
    completion_from_wire,
    looks_like_sse,
    request_body,
    sse_data,
)

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

#: The default most an answer may hold, in bytes once decompressed, streamed or not. A long
#: streamed answer costs about 200 bytes of SSE per token, so 32 MiB holds some 160,000 tokens.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024

#: How much of an error body (or of a redirect's) is read: what a message quotes is cut from it.
ERROR_BODY_BYTES = 64 * 1024

#: What a retryable error tells its reader to do next.
AGAIN = (
    "the call can be made again: the loop retries it, and once its retries are spent, running "
    "the agent again with the same run_id resumes the run without paying again for what its "
    "journal holds"
)

#: What an error the server will give again tells its reader to do next.
REFUSED = (
    "; the server will refuse this request again as it is: check SYNAPTUM_MODEL, the request "
    "and the server's log, then run the agent again with the same run_id"
)


class OpenAICompatibleGateway(LocalGateway):
    """A model behind an OpenAI-compatible `/chat/completions` endpoint; tools run locally.

    `base_url` is the API root, up to and including `/v1` (`http://127.0.0.1:8080/v1`).
    The model name sent is the request's (the agent's `model`); `model` here is used only
    when a request carries none. `api_key`, when given, is sent as `Authorization: Bearer`.
    `tools` and `policy` are `LocalGateway`'s: which tools may run, and who decides.
    `timeout` bounds each read (seconds); connecting has its own short bound. `deadline`
    bounds the whole call (seconds, `DEADLINE` = 600 by default), streamed or not: a server
    that trickles bytes or sends SSE keep-alive comments cannot keep a call open past it.
    Passing it is a retryable `ProviderError`. `max_response_bytes` bounds what an answer may
    hold once decompressed (`MAX_RESPONSE_BYTES`, 32 MiB, by default); a larger one is a
    `ProviderError` that is not retried.

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
        if not deadline > 0:
            raise ConfigurationError(
                f"deadline must be a positive number of seconds, got {deadline!r}"
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
                async with (
                    asyncio.timeout(self.deadline),
                    client.stream("POST", self._url, json=payload) as response,
                ):
                    await self._refuse_failure(response)
                    body = await self._read(response, self.max_response_bytes)
            except TimeoutError:
                raise self._deadline_error() from None
            except httpx.TimeoutException as exc:
                raise self._transport_error("timed out", exc) from None
            except httpx.ConnectError as exc:
                raise self._transport_error("could not be reached", exc) from None
            except httpx.TransportError as exc:
                what = "dropped the connection before its answer was complete"
                raise self._transport_error(what, exc) from None
            except httpx.DecodingError as exc:
                raise self._decoding_error(response, exc) from None
        if looks_like_sse(body):  # it streamed although asked not to: the answer is in there
            assembly, lines = StreamAssembly(), SseLines(self.max_response_bytes, ERROR_BODY_BYTES)
            async for _ in self._fragments(_once(body), assembly, lines):
                pass
            return self._assembled(assembly, lines)
        return self._read_completion(body)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        payload = self._payload(request, stream=True)
        deadline = asyncio.get_running_loop().time() + self.deadline
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
                        await self._refuse_failure(response)
                    chunks = _until(deadline, response.aiter_bytes())
                    if _is_json(response):
                        async with asyncio.timeout_at(deadline):
                            body = await self._read(response, self.max_response_bytes)
                        if not looks_like_sse(body):  # it ignored "stream": one completion
                            whole = self._read_completion(body)
                            if whole.text:
                                yield whole.text
                            yield whole
                            return
                        chunks = _once(body)  # server-sent events labelled as JSON
                    async with contextlib.aclosing(
                        self._fragments(chunks, assembly, lines)
                    ) as fragments:
                        async for fragment in fragments:
                            yield fragment
                finally:
                    await response.aclose()
            except (TimeoutError, httpx.TransportError) as exc:
                # After a finish_reason the answer is whole: a stall or a drop then loses only
                # the usage (unmeasured) and [DONE], not an answer paid for.
                if not assembly.finished:
                    raise self._stream_failure(exc) from None
            except httpx.DecodingError as exc:
                raise self._decoding_error(response, exc) from None
        yield self._assembled(assembly, lines)

    async def _fragments(
        self, chunks: AsyncIterator[bytes], assembly: StreamAssembly, lines: SseLines
    ) -> AsyncGenerator[str, None]:
        """Read server-sent events from `chunks` into `assembly`, yielding each text fragment."""
        async for data in sse_data(lines.read(chunks, self._too_large)):
            if data.strip() == "[DONE]":
                assembly.done = True
                return
            event = self._json(data, "an SSE event")
            if not isinstance(event, dict):
                raise self._protocol_error("with an SSE event that is not an object", data)
            if event.get("error") is not None:  # some send "error": null
                raise self._in_band_error(event["error"], streaming=True)
            try:
                fragment = assembly.feed(event)
            except MalformedAnswer as exc:
                raise self._malformed(exc) from None
            if fragment:  # a key split across two fragments shows here only
                yield self._redact(fragment)

    def _assembled(self, assembly: StreamAssembly, lines: SseLines) -> ModelResponse:
        """The answer the events added up to; a `ProviderError` if they stopped short of one."""
        if not assembly.complete:
            if not lines.events and lines.sample.strip():
                raise self._protocol_error(
                    "to a streamed request with a body that is not server-sent events",
                    _cut(lines.sample, was_cut=len(lines.sample) > ERROR_BODY_BYTES),
                )
            raise ProviderError(
                f"the model server at {self.base_url} ended the stream before it was complete "
                f"(no finish_reason and no [DONE]); {AGAIN}",
                retryable=True,
            )
        try:
            return self._redact_answer(assembly.response())
        except MalformedAnswer as exc:
            raise self._malformed(exc) from None

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

    async def _read(self, response: httpx.Response, limit: int) -> bytes:
        """The body, decompressed, read up to `limit` bytes: more is a `ProviderError`."""
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                raise self._too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    async def _refuse_failure(self, response: httpx.Response) -> None:
        """Raise the `ProviderError` a redirect or an error status is; return on success."""
        status = response.status_code
        if not (300 <= status < 400 or response.is_error):
            return
        chunks, size = [], 0
        try:
            async for chunk in response.aiter_bytes():  # a bounded excerpt, whatever it sends
                chunks.append(chunk)
                size += len(chunk)
                if size >= ERROR_BODY_BYTES:
                    break
        except (httpx.TransportError, httpx.DecodingError):
            pass  # the status says what happened; what came of the body is quoted
        text = b"".join(chunks)[:ERROR_BODY_BYTES].decode("utf-8", errors="replace")
        text = _cut(text, was_cut=size >= ERROR_BODY_BYTES)
        if response.is_error:
            raise self._status_error(response, text)
        location = response.headers.get("Location")
        where = f"to {_excerpt(self._redact(location))!r}" if location else "with no Location"
        message = (
            f"the model server at {self.base_url} answered HTTP {status}, a redirect {where}, "
            "which this client does not follow (the request carries the key); set "
            "SYNAPTUM_BASE_URL to the API root the server means"
        )
        raise ProviderError(self._redact(message), retryable=False, status=status)

    def _json(self, raw: bytes | str, what: str) -> Any:
        try:
            return json.loads(raw)
        except RecursionError:
            raise self._protocol_error(
                f"with {what} nested too deeply to read", _text(raw)
            ) from None
        except ValueError:
            raise self._protocol_error(f"with {what} that is not JSON", _text(raw)) from None

    def _read_completion(self, raw: bytes) -> ModelResponse:
        body = self._json(raw, "a body")
        if isinstance(body, dict) and body.get("error") is not None and "choices" not in body:
            raise self._in_band_error(body["error"], streaming=False)
        try:
            return self._redact_answer(completion_from_wire(body))
        except MalformedAnswer as exc:
            raise self._malformed(exc) from None

    def _redact_answer(self, response: ModelResponse) -> ModelResponse:
        """`response` with this gateway's secrets redacted from its text, ids and arguments.

        A server that echoes the key inside what the model "said" would otherwise put it in
        the journal, and in every later request. The same object when there is nothing to do.
        """
        if not self._secrets:
            return response
        text = self._redact(response.text) if response.text is not None else None
        calls = tuple(
            ToolCall(self._redact(call.id), self._redact(call.name), self._redacted(call.arguments))
            for call in response.tool_calls
        )
        if text == response.text and calls == response.tool_calls:
            return response
        return dataclasses.replace(response, text=text, tool_calls=calls)

    def _redacted(self, value: Any) -> Any:
        """A JSON value with the secrets redacted from every string in it (keys included)."""
        if isinstance(value, str):
            return self._redact(value)
        if isinstance(value, list):
            return [self._redacted(item) for item in value]
        if isinstance(value, dict):
            return {self._redact(k): self._redacted(v) for k, v in value.items()}
        return value

    # ── errors ──────────────────────────────────────────────────────────────────────────────

    def _redact(self, text: str) -> str:
        """`text` with every secret of this gateway, in any form it can take, redacted.

        Called on whole texts, before anything is cut: a secret cut in two is no longer
        recognisable, and its first half would show.
        """
        return redact(text, self._secrets)

    def _status_error(self, response: httpx.Response, text: str) -> ProviderError:
        status = response.status_code
        retryable = status in (408, 429) or status >= 500
        detail = _error_detail(self._redact(text))
        hint = {
            401: "; check SYNAPTUM_API_KEY (the server refused the key, or none was sent)",
            403: "; the key is valid but not allowed to use this model or endpoint",
            404: "; check SYNAPTUM_BASE_URL (the API root, up to /v1) and SYNAPTUM_MODEL",
        }.get(status, f"; {AGAIN}" if retryable else REFUSED)
        retry_after = _retry_after(response.headers.get("Retry-After")) if retryable else None
        wait = f", Retry-After {retry_after:g} s" if retry_after is not None else ""
        message = (
            f"the model server at {self.base_url} answered HTTP {status}{wait}: {detail}{hint}"
        )
        return ProviderError(
            self._redact(message), retryable=retryable, status=status, retry_after=retry_after
        )

    def _transport_error(self, what: str, exc: Exception) -> ProviderError:
        reason = _excerpt(self._redact(str(exc))) or type(exc).__name__
        message = (
            f"the model server at {self.base_url} {what} ({type(exc).__name__}: {reason}); {AGAIN}"
        )
        return ProviderError(self._redact(message), retryable=True)

    def _stream_failure(self, exc: Exception) -> ProviderError:
        if isinstance(exc, TimeoutError):
            return self._deadline_error()
        if isinstance(exc, httpx.TimeoutException):
            return self._transport_error("timed out while streaming", exc)
        if isinstance(exc, httpx.ConnectError):
            return self._transport_error("could not be reached", exc)
        return self._transport_error("dropped the connection while streaming", exc)

    def _deadline_error(self) -> ProviderError:
        message = (
            f"the model server at {self.base_url} did not finish the call within its deadline "
            f"of {self.deadline:g} s (a server that trickles its answer or only sends keep-alive "
            "comments); the call can be made again, or given more time with deadline="
        )
        return ProviderError(self._redact(message), retryable=True)

    def _protocol_error(self, what: str, raw: str) -> ProviderError:
        message = (
            f"the model server at {self.base_url} answered {what}: "
            f"{_excerpt(self._redact(raw))!r}; is SYNAPTUM_BASE_URL an OpenAI-compatible API root?"
        )
        return ProviderError(self._redact(message), retryable=False)

    def _malformed(self, exc: MalformedAnswer) -> ProviderError:
        try:
            shown = json.dumps(exc.value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            shown = repr(exc.value)
        return self._protocol_error(f"with {exc.where}", shown)

    def _too_large(self) -> ProviderError:
        message = (
            f"the model server at {self.base_url} answered more than {self.max_response_bytes} "
            "bytes, the most this gateway reads; give it more with max_response_bytes= if the "
            "answer is meant to be that long, or check the server"
        )
        return ProviderError(self._redact(message), retryable=False)

    def _decoding_error(self, response: httpx.Response, exc: Exception) -> ProviderError:
        encoding = response.headers.get("Content-Encoding", "")
        message = (
            f"the model server at {self.base_url} answered a body that does not decode as its "
            f"Content-Encoding {_excerpt(encoding)!r} says ({type(exc).__name__}: {exc}); "
            "check the server or a proxy in between"
        )
        return ProviderError(self._redact(message), retryable=False)

    def _in_band_error(self, error: Any, *, streaming: bool) -> ProviderError:
        status = error.get("code") if isinstance(error, dict) else None
        status = status if isinstance(status, int) and not isinstance(status, bool) else None
        retryable = status is not None and (status in (408, 429) or status >= 500)
        try:
            raw = json.dumps({"error": error})
        except RecursionError:
            raw = "(an error nested too deeply to show)"
        detail = _error_detail(self._redact(raw))
        when = "while streaming" if streaming else "with an error in a successful (HTTP 200) answer"
        then = f"; {AGAIN}" if retryable else REFUSED
        message = f"the model server at {self.base_url} failed {when}: {detail}{then}"
        return ProviderError(self._redact(message), retryable=retryable, status=status)


# ── helpers ─────────────────────────────────────────────────────────────────────────────


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


def _retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date; `None` when absent or unreadable.

    Unreadable includes what is not a count of seconds (`-3`, `nan`, `inf`, `1e999`): the
    loop then waits its own backoff instead of not waiting at all. A date already past is 0.
    """
    if value is None:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # "-0000": the date is in UTC, not in this machine's zone
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_SECONDS = re.compile(r"[0-9]{1,12}(\.[0-9]{1,6})?")


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


def _cut(text: str, *, was_cut: bool) -> str:
    """`text`, the start of a longer body when `was_cut`, without the word the cut split.

    A secret has no spaces in any of its forms, so a cut can only split one inside the last
    word; redaction would not recognise that half, and once `_excerpt` folds the spaces
    before it, the half could show.
    """
    if not was_cut:
        return text
    word = re.search(r"\S+$", text)
    return text[: word.start()] if word is not None and word.start() > 0 else text


def _is_json(response: httpx.Response) -> bool:
    kind: str = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw


async def _until(deadline: float, items: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
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
