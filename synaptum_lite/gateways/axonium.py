"""The Axonium platform SDK as a gateway: chat completions through `axonium.AsyncAxonium`.

Needs the `axonium` extra (`pip install 'synaptum-lite[axonium]'`). Selected by
`AXONIUM_CLIENT_ID` (with `AXONIUM_CLIENT_SECRET`); the SDK reads its own `AXONIUM_*`
settings (`AXONIUM_GATEWAY_BASE_URL` among them) and mints its own tokens.

The SDK's own retries are switched off (`RetryPolicy(max_attempts=1)`): retrying is the loop's
job, and a retry the loop does not see is an attempt the journal does not record. SDK errors
become `ProviderError` with the SDK's own verdict on `retryable` and `retry_after`; a stream cut
mid-way and a transport failure are retryable (a model call is safe to repeat here: its result
is journaled only once it completes), and so are a stream that ends without a `finish_reason`
and a connection httpx reports dropped mid-stream (the SDK lets that through unwrapped), unless
the stream had its `finish_reason`: then the answer is whole and kept, its usage unmeasured. Not
retried: a body that does not decompress, a chunk of the wrong shape, JSON nested too deeply,
a stream with no events at all, a completion without a message, and a streamed tool-call piece
the SDK would drop in part (a name or arguments that are not text). Nothing else escapes. The
client secret never reaches a message this module builds: the SDK holds it as a `SecretStr`,
and `_redact` removes it from what the SDK says.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError, ProviderError
from ..gateway import LocalGateway
from ..messages import ModelRequest, ModelResponse, ToolCall, Usage
from ..policy import Policy, allow_everything
from ..tools import Tool
from .http import AGAIN
from .wire import MalformedAnswer, request_body, token_count, tool_call_from_wire, with_unique_ids

INSTALL = "pip install 'synaptum-lite[axonium]' (or: uv sync --extra axonium)"
ENV_CLIENT_ID = "AXONIUM_CLIENT_ID"


def _sdk() -> Any:
    try:
        import axonium
    except ImportError:
        raise ConfigurationError(
            f"{ENV_CLIENT_ID} is set, so the Axonium platform SDK was asked for, but the "
            f"`axonium` package is not installed; install the extra: {INSTALL}"
        ) from None
    return axonium


class AxoniumGateway(LocalGateway):
    """A model on the Axonium platform, reached through its SDK; tools run locally.

    `client` is an `axonium.AsyncAxonium` to use as is. Without one, a client is built from
    `settings` (any `AxoniumConfig` field) and the environment, with the SDK's retries off.
    The model name sent is the request's (the agent's `model`), or `model` when a request
    carries none. `tools` and `policy` are `LocalGateway`'s.
    """

    def __init__(
        self,
        *,
        client: Any = None,
        model: str | None = None,
        tools: Iterable[Tool] | None = None,
        policy: Policy = allow_everything,
        **settings: Any,
    ) -> None:
        self._axonium = _sdk()
        import httpx  # the SDK's own transport, installed with it

        # What a call through the SDK may raise when the platform or the network misbehaves:
        # the SDK's errors, and what it lets through (httpx while streaming; pydantic's
        # ValidationError, a ValueError, for a chunk of the wrong shape; RecursionError for
        # JSON nested too deeply). Each becomes a ProviderError; nothing else escapes.
        self._failures: tuple[type[BaseException], ...] = (
            self._axonium.AxoniumError,
            httpx.HTTPError,
            ValueError,
            RecursionError,
        )
        super().__init__(tools=tools, policy=policy)
        self.model = model
        self._settings = settings
        self._given = client
        self._client: Any = client
        self._loop: asyncio.AbstractEventLoop | None = None
        if client is None:
            self._client = self._build_client()  # fails now, not at the first call
        config = self._client.config
        self.base_url = config.gateway_base_url
        self._secret = (
            config.client_secret.get_secret_value() if config.client_secret is not None else None
        )

    @classmethod
    def from_env(
        cls,
        *,
        tools: Iterable[Tool] | None = None,
        policy: Policy = allow_everything,
        environ: Mapping[str, str] | None = None,
    ) -> AxoniumGateway:
        """Build the gateway from the SDK's `AXONIUM_*` variables and `SYNAPTUM_MODEL`.

        Raises `ConfigurationError` when the SDK is missing or the credentials are incomplete.
        """
        env = os.environ if environ is None else environ
        settings: dict[str, Any] = {}
        if environ is not None:  # the SDK reads os.environ itself; a mapping is passed on
            for field in ("client_id", "client_secret", "gateway_base_url", "scope"):
                value = env.get(f"AXONIUM_{field.upper()}")
                if value:
                    settings[field] = value
        return cls(model=env.get("SYNAPTUM_MODEL") or None, tools=tools, policy=policy, **settings)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    # ── the two model calls ─────────────────────────────────────────────────────────────────

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        try:
            completion = await self._current().chat.completions.create(
                **request_body(request, self.model)
            )
        except self._failures as exc:
            raise self._provider_error(exc) from None
        choice = completion.choices[0] if completion.choices else None
        if choice is None or choice.message is None:
            error = (completion.model_extra or {}).get("error")
            if error is not None:  # an error inside a successful (HTTP 200) answer
                what = "with an error inside a successful (HTTP 200) answer"
                raise self._unreadable(what, error, retryable=_retryable_code(error))
            raise self._unreadable("without choices[0].message", completion.model_dump())
        return ModelResponse(
            text=completion.content or None,
            tool_calls=self._calls(completion.tool_calls),
            usage=_usage(completion.usage),
        )

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        chunks, finished = 0, False
        s: Any = None
        try:
            # Leaving this block (also by `aclose()`) closes the SDK's stream and its response.
            async with self._current().chat.completions.stream(
                **request_body(request, self.model)
            ) as s:
                async for chunk in s:
                    chunks += 1
                    finished = finished or bool(chunk.finish_reason)
                    for piece in chunk.tool_call_fragments:
                        self._check_piece(piece)
                    if chunk.content:
                        yield chunk.content
                if not finished:
                    # The SDK ends quietly on a body that is no stream at all (a JSON answer, an
                    # HTML page) and on a stream cut short: neither is an answer to journal.
                    if chunks == 0:
                        raise ProviderError(
                            f"Axonium at {self.base_url} answered a streamed request with no "
                            "server-sent events (a whole JSON answer, a page, a redirect?); "
                            "check AXONIUM_GATEWAY_BASE_URL",
                            retryable=False,
                        )
                    raise ProviderError(
                        f"Axonium at {self.base_url} ended the stream before it was complete "
                        f"(no finish_reason); {AGAIN}",
                        retryable=True,
                    )
                response = ModelResponse(
                    text=s.content or None,
                    tool_calls=self._calls(s.tool_calls),
                    usage=_usage(s.usage()),
                )
        except self._failures as exc:
            error = self._provider_error(exc)
            # After a finish_reason the answer is whole: a drop then loses only the usage and
            # [DONE], not an answer paid for (the SDK keeps what arrived, `s.content`).
            if not (finished and error.retryable and s is not None):
                raise error from None
            response = ModelResponse(
                text=s.content or None,
                tool_calls=self._calls(s.tool_calls),
                usage=_usage(s.usage()),
            )
        yield response

    # ── helpers ─────────────────────────────────────────────────────────────────────────────

    def _build_client(self) -> Any:
        sdk = self._axonium
        try:
            return sdk.AsyncAxonium(retry=sdk.RetryPolicy(max_attempts=1), **self._settings)
        except sdk.ConfigurationError as exc:
            raise ConfigurationError(
                f"the Axonium SDK cannot be configured: {exc} "
                f"(set {ENV_CLIENT_ID} and AXONIUM_CLIENT_SECRET)"
            ) from None

    def _current(self) -> Any:
        """The client, rebuilt when the event loop changed (an httpx pool is bound to one)."""
        loop = asyncio.get_running_loop()
        if self._given is None and self._loop is not None and self._loop is not loop:
            self._client = self._build_client()
        self._loop = loop
        return self._client

    def _calls(self, calls: Any) -> tuple[ToolCall, ...]:
        """The SDK's tool calls as `ToolCall`s, each with an id of its own."""
        try:
            return with_unique_ids(
                [
                    tool_call_from_wire(index, call.id, call.function.model_dump())
                    for index, call in enumerate(calls)
                ]
            )
        except MalformedAnswer as exc:
            message = (
                f"Axonium at {self.base_url} answered with {exc.where}: "
                f"{_excerpt(repr(exc.value))}; the answer cannot be used as it is"
            )
            raise ProviderError(self._redact(message), retryable=False) from None

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "[redacted]") if self._secret else text

    def _provider_error(self, exc: BaseException) -> ProviderError:
        sdk = self._axonium
        where = f"Axonium at {self.base_url}"
        if isinstance(exc, sdk.APIError):
            wait = f", Retry-After {exc.retry_after:g} s" if exc.retry_after is not None else ""
            then = f"; {AGAIN}" if exc.retryable else ""
            message = f"{where} answered HTTP {exc.status}{wait}: {exc}{then}"
            return ProviderError(
                self._redact(message),
                retryable=bool(exc.retryable),
                status=exc.status,
                retry_after=exc.retry_after,
            )
        if isinstance(exc, sdk.OAuthError):
            message = (
                f"{where} refused the credentials ({type(exc).__name__}: {exc}); "
                f"check {ENV_CLIENT_ID} and AXONIUM_CLIENT_SECRET"
            )
            return ProviderError(self._redact(message), retryable=False)
        if isinstance(exc, sdk.TransportError | sdk.StreamInterruptedError):
            message = f"{where} failed in transit ({type(exc).__name__}: {exc}); {AGAIN}"
            return ProviderError(self._redact(message), retryable=True)
        if not isinstance(exc, sdk.AxoniumError):
            import httpx

            if isinstance(exc, httpx.TransportError):
                detail = _excerpt(self._redact(str(exc)))
                message = f"{where} failed in transit ({type(exc).__name__}: {detail}); {AGAIN}"
                return ProviderError(self._redact(message), retryable=True)
            what = "JSON nested too deeply" if isinstance(exc, RecursionError) else "a body"
            message = (
                f"{where} answered {what} the SDK cannot read ({type(exc).__name__}: "
                f"{_excerpt(self._redact(str(exc)))}); check AXONIUM_GATEWAY_BASE_URL"
            )
            return ProviderError(self._redact(message), retryable=False)
        message = f"{where}: the SDK refused the call ({type(exc).__name__}: {exc})"
        return ProviderError(self._redact(message), retryable=False)

    def _unreadable(self, what: str, value: Any, *, retryable: bool = False) -> ProviderError:
        try:
            shown = json.dumps(value, ensure_ascii=False, default=repr)
        except (ValueError, RecursionError):
            shown = repr(value)
        message = (
            f"Axonium at {self.base_url} answered {what}: {_excerpt(self._redact(shown))!r}; "
            "check AXONIUM_GATEWAY_BASE_URL"
        )
        return ProviderError(self._redact(message), retryable=retryable)

    def _check_piece(self, piece: Any) -> None:
        """Refuse a streamed tool-call piece the SDK would drop in part (a name that is not
        text, arguments sent as an object or a number): the call would run without them."""
        function = piece.get("function") if isinstance(piece, dict) else None
        if function is None and isinstance(piece, dict):
            return
        if not isinstance(function, dict):
            raise self._unreadable("a tool-call piece whose function is not an object", piece)
        for field in ("name", "arguments"):
            if function.get(field) is not None and not isinstance(function[field], str):
                raise self._unreadable(f"a tool-call piece whose {field} is not text", piece)


def _usage(usage: Any) -> Usage:
    """The SDK's `Usage` (or `None`) as `Usage`; what it did not report stays `None`."""
    if usage is None:
        return Usage()
    return Usage(
        input_tokens=token_count(usage.prompt_tokens),
        output_tokens=token_count(usage.completion_tokens),
        cached_tokens=token_count(usage.cache_read_tokens),
    )


def _retryable_code(error: Any) -> bool:
    code = error.get("code") if isinstance(error, dict) else None
    return (
        isinstance(code, int) and not isinstance(code, bool) and (code in (408, 429) or code >= 500)
    )


def _excerpt(text: str, size: int = 300) -> str:
    return text if len(text) <= size else text[:size] + " …"
