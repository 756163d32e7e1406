"""The journal behind an HTTP service: a `Checkpointer` that asks a store server
(`http_server.py`) for everything, so a harness in another process, or another language, shares
one journal with its workers.

Every call is one JSON `POST` with the token as `Authorization: Bearer`; the server answers from
the store it serves (SQLite, memory, PostgreSQL), with that store's guarantees. Events are
encoded here, by the same codec every store uses, so a value no store can keep is refused
before anything is sent.

One driver per run: `hold` is a request the server keeps open for as long as the run is held
(its answer starts with the hold's id and never ends). The server holds the run in its store
while that connection lives, and lets go when it ends, for whatever reason: the client lets go
(it asks the server to release, and waits for it), or its process dies (SIGKILL closes its
sockets). No lease to renew and no thread: a hold is a connection, as PostgreSQL's session lock
is. Writes to a held run carry the hold's id, and the server refuses them once that hold is
gone, so a driver that lost its run writes nothing after the next one took it.

Every call is idempotent (an append skips the keys already journaled), so one that loses its
answer to a broken connection is sent once more on a new one: its events are written once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import errors
from ..checkpointer import RunState
from ..codec import Record, check_run_id, decode_final, encode_events, encode_header
from ..errors import ConfigurationError, StoreForbidden, StoreUnavailable, StoreUnreachable
from ..events import Step
from .alike import holding

try:
    import httpx
except ImportError:  # pragma: no cover - exercised by the install message only
    httpx = None  # type: ignore[assignment]

#: What every answer of a store server says it is (`http_server.py` sends it).
PROTOCOL = "synaptum_lite.store/1"
#: The default time one read may wait for the server, in seconds.
TIMEOUT = 60.0
#: The most of a wrong answer an error quotes.
EXCERPT = 80


class StoreProtocolError(StoreUnavailable):
    """A store server answered what no synaptum_lite store server answers (another program
    listens at the URL, or a proxy in between answered for it)."""

    condition = "answered what no synaptum_lite store server answers"
    remedy = (
        "check that the URL names a server started with "
        "`python -m synaptum_lite.stores.http_server`, then run the agent again with the same "
        "run_id"
    )


@dataclass(eq=False)
class _Hold:
    """A run this checkpointer holds: the server's id for the hold, and the answer kept open."""

    hold_id: str
    response: Any  # httpx.Response, streaming
    chunks: Any  # the answer's bytes, read up to the first line
    loop: asyncio.AbstractEventLoop  # where it was taken, and must be let go
    client: Any  # the hold's own httpx.AsyncClient: `close` of the others leaves it open

    async def close(self) -> None:
        try:
            await self.chunks.aclose()
        finally:
            try:
                await self.response.aclose()
            finally:
                await self.client.aclose()

    def abandon(self) -> None:
        """End the connection without its event loop (closed): shut its socket down."""
        stream = self.response.extensions.get("network_stream")
        raw = stream.get_extra_info("socket") if stream is not None else None
        with contextlib.suppress(OSError):
            if raw is not None:
                raw.shutdown(socket.SHUT_RDWR)


class HttpCheckpointer:
    """A journal kept by a store server at `url` (`http://127.0.0.1:8750`), reached with
    `token`, the bearer token the server was started with.

    Raises `StoreUnreachable` when nothing answers at the URL, `StoreForbidden` when the server
    refuses the token (nothing was read or written), `StoreProtocolError` when what answers is
    not a store server, and `StoreUnavailable` when the connection breaks twice in one call or
    a held run's hold is gone. The store's own errors (`JournalError` "never started",
    `CorruptJournal`, `RunBusy`…) arrive as they were raised in the server.
    """

    def __init__(self, url: str, *, token: str, timeout: float = TIMEOUT) -> None:
        if httpx is None:
            raise ConfigurationError(
                "HttpCheckpointer needs httpx, which is not installed; install the extra: "
                "pip install 'synaptum-lite[http-store]' (or uv sync --extra http-store)"
            )
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            shown = _without_userinfo(url) if isinstance(url, str) else url
            raise ConfigurationError(
                f"HttpCheckpointer needs the store server's URL, like http://127.0.0.1:8750, "
                f"got {shown!r}"
            )
        if parts.username is not None or parts.password is not None:
            raise ConfigurationError(
                f"the store server's URL {_without_userinfo(url)!r} carries credentials; "
                "pass the token as token=... and leave it out of the URL"
            )
        if not isinstance(token, str) or not token or not token.isprintable():
            raise ConfigurationError(
                "token must be the non-empty bearer token the store server was started with "
                "(its SYNAPTUM_STORE_TOKEN); it was missing, empty or not printable"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigurationError(f"timeout must be seconds above 0, got {timeout!r}")
        self.url = url.rstrip("/")
        self.location = self.url
        self._headers = {"Authorization": f"Bearer {token}"}
        self._timeout = httpx.Timeout(timeout)
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}  # one per event loop
        self._held: dict[str, _Hold] = {}

    def __repr__(self) -> str:
        return f"HttpCheckpointer({self.location!r})"

    # ── the protocol ──────────────────────────────────────────────────────────────────────

    async def load(self, run_id: str) -> RunState:
        answer = await self._call("load", run_id=check_run_id(run_id))
        header, next_seq, final = answer["header"], answer["next_seq"], answer["final"]
        # the server's store already decoded the final event: its position names no record
        record = None if final is None else Record(next_seq - 1, *final)
        ending = None if record is None else decode_final(run_id, record)
        return RunState(run_id=run_id, next_seq=next_seq, header=header, final=ending)

    async def start(self, run_id: str, header: dict[str, Any]) -> None:
        text = encode_header(check_run_id(run_id), header)
        await self._call("start", run_id=run_id, header=text, **self._hold_of(run_id))

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        rows = encode_events(run_id, events)
        answer = await self._call("append", run_id=run_id, events=rows, **self._hold_of(run_id))
        return int(answer["next_seq"])

    async def start_with(self, run_id: str, header: dict[str, Any], events: Sequence[Step]) -> int:
        """`start`, then `append`, as one call: the server's store does both in one
        transaction where it can (SQLite, PostgreSQL). Returns the run's `next_seq`."""
        text = encode_header(check_run_id(run_id), header)
        rows = encode_events(run_id, events)
        answer = await self._call(
            "start_with", run_id=run_id, header=text, events=rows, **self._hold_of(run_id)
        )
        return int(answer["next_seq"])

    async def records(self, run_id: str) -> list[Record]:
        answer = await self._call("records", run_id=check_run_id(run_id))
        return [Record(*row) for row in answer["records"]]

    def hold(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        check_run_id(run_id)
        return holding(f"http:{self.url}", self.location, run_id, lambda: self._try_hold(run_id))

    async def confirm_hold(self, run_id: str) -> None:
        """Raise `StoreUnavailable` unless the server still holds `run_id` for this
        checkpointer (it lets go when the hold's connection ends: a restart, a cut)."""
        check_run_id(run_id)
        if self._holding(run_id) is not None:
            await self._call("confirm_hold", run_id=run_id, **self._hold_of(run_id))

    async def run_ids(self, *, open_only: bool = False) -> list[str] | None:
        answer = await self._call("run_ids", open_only=bool(open_only))
        found = answer["run_ids"]
        return None if found is None else [str(r) for r in found]

    async def is_held(self, run_id: str) -> bool:
        """Asked of the server, which asks its store without taking the run."""
        if self._holding(check_run_id(run_id)) is not None:
            return True
        return bool((await self._call("is_held", run_id=run_id))["held"])

    async def close(self) -> None:
        """Close this event loop's connections that hold no run (a later call reopens them)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    # ── the hold ──────────────────────────────────────────────────────────────────────────

    async def _try_hold(self, run_id: str) -> Callable[[], Any] | None:
        """Open the hold's request; the function that releases it, or None when busy."""
        self._holding(run_id)  # a hold left in a closed event loop ends here
        body = {"run_id": run_id}
        own = self._new_client()  # a connection of its own, which only letting go ends
        try:
            response = await self._send("hold", body, stream=True, client=own)
        except BaseException as exc:
            await own.aclose()
            if isinstance(exc, errors.RunBusy):
                return None
            raise
        hold = _Hold("", response, response.aiter_raw(), asyncio.get_running_loop(), own)
        try:
            first = b""
            async for chunk in hold.chunks:
                first += chunk
                if b"\n" in first:
                    break
            text = first.partition(b"\n")[0].decode(errors="replace")
            hold_id = _answer(self.location, 200, None, text).get("hold")
            if not isinstance(hold_id, str):
                raise StoreProtocolError(self.location, f"a hold without its id: {text!r:.80}")
            hold.hold_id = hold_id
        except BaseException:
            await hold.close()
            raise
        self._held[run_id] = hold

        async def release() -> None:
            try:
                with contextlib.suppress(StoreUnavailable):  # gone with its connection anyway
                    await self._call("release", hold=hold.hold_id)
            finally:
                await hold.close()
                if self._held.get(run_id) is hold:
                    del self._held[run_id]

        return release

    def _hold_of(self, run_id: str) -> dict[str, str]:
        held = self._holding(run_id)
        return {} if held is None else {"hold": held.hold_id}

    def _holding(self, run_id: str) -> _Hold | None:
        """This checkpointer's hold on `run_id`, unless it was taken in an event loop that
        closed without letting go: then its connection is ended here, and the server, seeing
        it end, lets go of the run."""
        held = self._held.get(run_id)
        if held is not None and held.loop.is_closed():
            del self._held[run_id]
            held.abandon()
            return None
        return held

    # ── the wire ──────────────────────────────────────────────────────────────────────────

    async def _call(self, name: str, **body: Any) -> dict[str, Any]:
        response = await self._send(name, body)
        return _answer(self.location, response.status_code, response.headers, response.text)

    async def _send(
        self, name: str, body: dict[str, Any], *, stream: bool = False, client: Any = None
    ) -> Any:
        """POST `body` to the call `name`; the answer when it is a success (read, or open when
        `stream`). A connection that breaks once is tried again on a new one (every call is
        idempotent); an error answer raises what it says."""
        content = json.dumps(body, ensure_ascii=False).encode()
        for attempt in (1, 2):
            through = client or self._client()
            request = through.build_request("POST", f"{self.url}/v1/{name}", content=content)
            try:
                response = await through.send(request, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                raise StoreUnreachable(
                    self.location,
                    f"nothing answers there: {_first_line(exc)}; start its server with "
                    "`python -m synaptum_lite.stores.http_server --db runs.db --port PORT`",
                ) from None
            except httpx.TransportError as exc:
                if attempt == 2:
                    raise StoreUnavailable(
                        self.location, f"the connection broke twice: {_first_line(exc)}"
                    ) from None
                continue
            except httpx.HTTPError as exc:  # an answer httpx cannot read (its encoding)
                raise StoreProtocolError(self.location, _first_line(exc)) from None
            if response.status_code == 200:
                return response
            text = (await response.aread()).decode(errors="replace")
            await response.aclose()
            _answer(self.location, response.status_code, response.headers, text)
        raise AssertionError("unreachable")  # pragma: no cover

    def _client(self) -> Any:
        """This event loop's client: its connections belong to the loop that opened them."""
        loop = asyncio.get_running_loop()
        for other in [o for o in self._clients if o.is_closed()]:
            del self._clients[other]  # its sockets close when collected
        if loop not in self._clients:
            self._clients[loop] = self._new_client()
        return self._clients[loop]

    def _new_client(self) -> Any:
        return httpx.AsyncClient(
            headers=self._headers, timeout=self._timeout, follow_redirects=False
        )


def _answer(location: str, status: int, headers: Any, text: str) -> dict[str, Any]:
    """The answer's JSON when it is a store server's success; else raise what it means."""
    if status == 401:
        raise StoreForbidden(
            location,
            "HTTP 401: the bearer token is missing or not the server's",
            "pass the token the server was started with (its SYNAPTUM_STORE_TOKEN) as "
            "HttpCheckpointer(url, token=...)",
        )
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or answer.get("protocol") != PROTOCOL:
        kind = headers.get("content-type", "no content type") if headers else "JSON lines"
        raise StoreProtocolError(location, f"HTTP {status}, {kind}: {text[:EXCERPT]!r}")
    if status == 200:
        return answer
    raise _error(location, status, answer)


def _error(location: str, status: int, answer: dict[str, Any]) -> Exception:
    """The exception a store server's error answer carries: the store's own, rebuilt with its
    message and fields, or `StoreUnavailable` when the run's hold is gone."""
    name, message = str(answer.get("error")), str(answer.get("message"))
    found = getattr(errors, name, None)
    if name == "HoldLost":
        return StoreUnavailable(location, message)
    if name == "ServerError":
        return StoreUnavailable(location, f"the server failed: {message}; its log says why")
    if not (isinstance(found, type) and issubclass(found, errors.SynaptumError)):
        return StoreProtocolError(location, f"HTTP {status}, error {name!r}: {message}")
    error: Exception = found.__new__(found)
    Exception.__init__(error, message)
    attributes = answer.get("attributes")
    error.__dict__.update(attributes if isinstance(attributes, dict) else {})
    return error


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _without_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
