"""How the HTTP model's failures become a `ProviderError`, worded for the one who reads it.

`http.OpenAICompatibleGateway` classifies every failure once, here:

    timeout, connection refused or dropped (also mid-stream)  retryable
    (a stream that stalls or drops after its finish_reason     kept: the answer is whole,
    is not a failure)                                          only the usage is unmeasured
    an attempt outlived its `attempt_timeout`                  retryable
    the call's deadline, across its attempts, is spent          not retryable: no time is left
    429, 408, 5xx                                              retryable, `Retry-After` parsed
    any other 4xx (401, 403, 404, 400 ...)                     not retryable
    a redirect (3xx): never followed, the key stays here       not retryable
    a body or an SSE event that is not the protocol            not retryable
    (not JSON, the wrong shape, undecodable gzip, too deep)
    an answer larger than `max_response_bytes`                 not retryable

An error body is read up to `ERROR_BODY_BYTES`, whatever `Content-Length` says. Every message
built here passes through `ServerFailures.redact` before it is cut, so no error carries a
secret of the gateway, whole or in part, raw or escaped. Retrying is the loop's job
(`Session.retry`), never this module's.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError
from .redaction import held_back, redact
from .wire import MalformedAnswer

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]

#: How much of an error body an exception message quotes.
BODY_EXCERPT = 300

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


@dataclass(frozen=True)
class ServerFailures:
    """The `ProviderError` each failure of the model server at `base_url` is, in one attempt
    of one call.

    `secrets` are the gateway's (`redaction.secret_patterns`); `deadline`, `attempt_timeout`
    and `max_response_bytes` are the bounds its messages name; `attempt` is the attempt's
    number in its call (1 for the first). `plain` are the secrets themselves, never shown
    (not in `repr`), to tell what of a streamed text could begin one (`held_back`).
    """

    base_url: str
    secrets: tuple[re.Pattern[str], ...]
    deadline: float
    max_response_bytes: int
    attempt_timeout: float | None = None
    attempt: int = 1
    plain: tuple[str, ...] = field(default=(), repr=False)

    def redact(self, text: str) -> str:
        """`text` with every secret of the gateway, in any form it can take, redacted.

        Called on whole texts, before anything is cut: a secret cut in two is no longer
        recognisable, and its first half would show.
        """
        return redact(text, self.secrets)

    def held_back(self, text: str) -> int:
        """How many characters at the end of `text` (redacted) could begin a secret."""
        return held_back(text, self.plain)

    async def refuse(self, response: httpx.Response) -> None:
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
        text = cut(text, was_cut=size >= ERROR_BODY_BYTES)
        if response.is_error:
            raise self.status(response, text)
        location = response.headers.get("Location")
        where = f"to {excerpt(self.redact(location))!r}" if location else "with no Location"
        message = (
            f"the model server at {self.base_url} answered HTTP {status}, a redirect {where}, "
            "which this client does not follow (the request carries the key); set "
            "SYNAPTUM_BASE_URL to the API root the server means"
        )
        raise ProviderError(self.redact(message), retryable=False, status=status)

    def status(self, response: httpx.Response, text: str) -> ProviderError:
        status = response.status_code
        retryable = status in (408, 429) or status >= 500
        detail = error_detail(self.redact(text))
        hint = {
            401: "; check SYNAPTUM_API_KEY (the server refused the key, or none was sent)",
            403: "; the key is valid but not allowed to use this model or endpoint",
            404: "; check SYNAPTUM_BASE_URL (the API root, up to /v1) and SYNAPTUM_MODEL",
        }.get(status, f"; {AGAIN}" if retryable else REFUSED)
        wait_for = retry_after(response.headers.get("Retry-After")) if retryable else None
        wait = f", Retry-After {wait_for:g} s" if wait_for is not None else ""
        message = (
            f"the model server at {self.base_url} answered HTTP {status}{wait}: {detail}{hint}"
        )
        return ProviderError(
            self.redact(message), retryable=retryable, status=status, retry_after=wait_for
        )

    def transport(self, what: str, exc: Exception) -> ProviderError:
        reason = excerpt(self.redact(str(exc))) or type(exc).__name__
        message = (
            f"the model server at {self.base_url} {what} ({type(exc).__name__}: {reason}); {AGAIN}"
        )
        return ProviderError(self.redact(message), retryable=True)

    def stream(self, exc: Exception) -> ProviderError:
        if isinstance(exc, httpx.TimeoutException):
            return self.transport("timed out while streaming", exc)
        if isinstance(exc, httpx.ConnectError):
            return self.transport("could not be reached", exc)
        return self.transport("dropped the connection while streaming", exc)

    @property
    def attempts(self) -> str:
        """`1 attempt`, `2 attempts`: how many this call made, up to this one."""
        return f"{self.attempt} attempt{'s' if self.attempt != 1 else ''}"

    def out_of_time(self, *, whole_call: bool) -> ProviderError:
        """The attempt ran out of time: the call's deadline when `whole_call` (not retried:
        no time is left for another attempt), else its `attempt_timeout` (retried)."""
        if not whole_call:
            message = (
                f"the model server at {self.base_url} did not finish attempt {self.attempt} of "
                f"the call within its attempt_timeout of {self.attempt_timeout:g} s (a server "
                "that trickles its answer or only sends keep-alive comments); the loop tries "
                f"again while the call's deadline of {self.deadline:g} s allows, and once its "
                "retries are spent, running the agent again with the same run_id resumes the run "
                "without paying again for what its journal holds"
            )
            return ProviderError(self.redact(message), retryable=True)
        return self.past_deadline()

    def past_deadline(self) -> ProviderError:
        """The call's deadline is spent, over `attempt` attempts: none more is started."""
        message = (
            f"the model server at {self.base_url} did not finish the call within its deadline "
            f"of {self.deadline:g} s, spent over {self.attempts} (a "
            "server that trickles its answer or only sends keep-alive comments, or failures "
            "retried until no time was left), so the loop does not retry it: give the call more "
            "time with deadline=, or run the agent again with the same run_id (its journal "
            "keeps what was paid for)"
        )
        return ProviderError(self.redact(message), retryable=False)

    def unfinished_stream(self) -> ProviderError:
        return ProviderError(
            f"the model server at {self.base_url} ended the stream before it was complete "
            f"(no finish_reason and no [DONE]); {AGAIN}",
            retryable=True,
        )

    def protocol(self, what: str, raw: str) -> ProviderError:
        message = (
            f"the model server at {self.base_url} answered {what}: "
            f"{excerpt(self.redact(raw))!r}; is SYNAPTUM_BASE_URL an OpenAI-compatible API root?"
        )
        return ProviderError(self.redact(message), retryable=False)

    def malformed(self, exc: MalformedAnswer) -> ProviderError:
        try:
            shown = json.dumps(exc.value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            shown = repr(exc.value)
        return self.protocol(f"with {exc.where}", shown)

    def too_large(self) -> ProviderError:
        message = (
            f"the model server at {self.base_url} answered more than {self.max_response_bytes} "
            "bytes, the most this gateway reads; give it more with max_response_bytes= if the "
            "answer is meant to be that long, or check the server"
        )
        return ProviderError(self.redact(message), retryable=False)

    def decoding(self, response: httpx.Response, exc: Exception) -> ProviderError:
        encoding = response.headers.get("Content-Encoding", "")
        message = (
            f"the model server at {self.base_url} answered a body that does not decode as its "
            f"Content-Encoding {excerpt(encoding)!r} says ({type(exc).__name__}: {exc}); "
            "check the server or a proxy in between"
        )
        return ProviderError(self.redact(message), retryable=False)

    def in_band(self, error: Any, *, streaming: bool) -> ProviderError:
        status = error.get("code") if isinstance(error, dict) else None
        status = status if isinstance(status, int) and not isinstance(status, bool) else None
        retryable = status is not None and (status in (408, 429) or status >= 500)
        try:
            raw = json.dumps({"error": error})
        except RecursionError:
            raw = "(an error nested too deeply to show)"
        detail = error_detail(self.redact(raw))
        when = "while streaming" if streaming else "with an error in a successful (HTTP 200) answer"
        then = f"; {AGAIN}" if retryable else REFUSED
        message = f"the model server at {self.base_url} failed {when}: {detail}{then}"
        return ProviderError(self.redact(message), retryable=retryable, status=status)


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
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


def error_detail(text: str) -> str:
    """The server's own error message when it sent the usual `{"error": {"message": ...}}`."""
    try:
        body = json.loads(text)
    except ValueError:
        return excerpt(text) or "(empty body)"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return excerpt(error["message"])
    if isinstance(error, str):
        return excerpt(error)
    return excerpt(text)


def excerpt(text: str) -> str:
    """`text` on one line, cut to `BODY_EXCERPT` characters."""
    text = " ".join(text.split())
    return text if len(text) <= BODY_EXCERPT else text[:BODY_EXCERPT] + " …"


def cut(text: str, *, was_cut: bool) -> str:
    """`text`, the start of a longer body when `was_cut`, without the word the cut split.

    A secret has no spaces in any of its forms, so a cut can only split one inside the last
    word; redaction would not recognise that half, and once `excerpt` folds the spaces
    before it, the half could show.
    """
    if not was_cut:
        return text
    word = re.search(r"\S+$", text)
    return text[: word.start()] if word is not None and word.start() > 0 else text
