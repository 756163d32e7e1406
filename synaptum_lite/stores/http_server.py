"""A store server: any store (SQLite, memory, PostgreSQL) behind HTTP, for `HttpCheckpointer`.

A Starlette app under uvicorn (the `http-store` extra). Every call is a JSON `POST /v1/<call>`
answered from the store with that store's guarantees: an answer is sent only once the store
has returned, so an append that was answered is committed (a SQLite store syncs it to disk
first). A request without the server's bearer token is refused with 401 before anything else
reads it: nothing is read or written.

`POST /v1/hold` holds a run for as long as its request lasts: the answer starts with one line,
the hold's id, and stays open. The run is let go when the client asks (`/v1/release`, answered
once it is let go) or when the connection ends (the client died, the network broke), which
uvicorn tells the app as `http.disconnect`. A write that names a hold the server no longer
has is refused (`HoldLost`): its driver lost the run.

Run it as a command; the token comes from the environment, never from the command line:

    SYNAPTUM_STORE_TOKEN=... python -m synaptum_lite.stores.http_server --db runs.db --port 8750

It prints one line when it listens (`listening on http://127.0.0.1:8750 ...`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import hmac
import json
import logging
import os
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .. import errors
from ..checkpointer import Checkpointer
from ..codec import check_run_id, encode
from ..events import Phase, Step, parse_step_id
from .http_client import PROTOCOL

ENV_TOKEN = "SYNAPTUM_STORE_TOKEN"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BadRequest(ValueError):
    """A request no `HttpCheckpointer` sends (a field missing or of the wrong type)."""


@dataclass(frozen=True, slots=True)
class _Stored:
    """An event as the client encoded it, handed to the store as a step: the stores only read
    its key and `payload()`, and encode it again to the very same text."""

    step_id: str
    phase: Phase
    attempt: int
    data: str

    def payload(self) -> Any:
        return json.loads(self.data)


@dataclass(eq=False)
class _Held:
    run_id: str
    release: asyncio.Event = field(default_factory=asyncio.Event)  # asked to let go
    done: asyncio.Event = field(default_factory=asyncio.Event)  # let go


class StoreServer:
    """The ASGI app over `store`; `token` is the bearer token every request must carry."""

    def __init__(self, store: Checkpointer, *, token: str) -> None:
        try:
            from starlette.applications import Starlette
            from starlette.routing import Route
        except ImportError:
            raise errors.ConfigurationError(
                "the store server needs Starlette and uvicorn, which are not installed; install "
                "the extra: pip install 'synaptum-lite[http-store]' (or uv sync --extra http-store)"
            ) from None
        if not isinstance(token, str) or not token or not token.isprintable():
            raise errors.ConfigurationError(
                f"the store server needs a token: set {ENV_TOKEN} to a non-empty printable secret"
            )
        self.store = store
        self._expected = f"Bearer {token}".encode()
        self._holds: dict[str, _Held] = {}
        self._app = Starlette(
            routes=[
                Route("/v1/hold", _Raw(self._hold), methods=["POST"]),
                Route("/v1/{call}", self._call, methods=["POST"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                refused = {"error": "Unauthorized", "message": "missing or wrong bearer token"}
                await _respond(send, 401, refused)
                return
        await self._app(scope, receive, send)

    # ── the calls ─────────────────────────────────────────────────────────────────────────

    async def _call(self, request: Any) -> Any:
        from starlette.responses import Response

        status, answer = 200, {}
        try:
            body = _object(await request.body())
            answer = await self._answer(request.path_params["call"], body)
        except Exception as exc:
            status, answer = _failure(exc)
        return Response(_json({"protocol": PROTOCOL, **answer}), status, media_type=_JSON)

    async def _answer(self, call: str, body: dict[str, Any]) -> dict[str, Any]:
        store = self.store
        if call == "load":
            state = await store.load(_run_id(body))
            final = None if state.final is None else list(encode(state.final))
            return {"header": state.header, "next_seq": state.next_seq, "final": final}
        if call == "records":
            return {"records": [list(r) for r in await store.records(_run_id(body))]}
        if call == "run_ids":
            return {"run_ids": await store.run_ids(open_only=body.get("open_only") is True)}
        if call == "is_held":
            run_id = _run_id(body)
            mine = any(h.run_id == run_id for h in self._holds.values())
            return {"held": mine or await store.is_held(run_id)}
        if call == "release":
            held = self._holds.get(_field(body, "hold", str))
            if held is not None:
                held.release.set()
                await held.done.wait()
            return {"released": held is not None}
        run_id = _run_id(body)
        self._check_hold(run_id, body)
        if call == "confirm_hold":
            await store.confirm_hold(run_id)
            return {}
        if call == "start":
            await store.start(run_id, _header(body))
            return {}
        if call == "append":
            return {"next_seq": await store.append(run_id, _events(body))}
        if call == "start_with":
            header, events = _header(body), _events(body)
            start_with = getattr(store, "start_with", None)
            if callable(start_with):
                return {"next_seq": await start_with(run_id, header, events)}
            await store.start(run_id, header)
            return {"next_seq": await store.append(run_id, events)}
        raise BadRequest(f"no call named {call!r}")

    def _check_hold(self, run_id: str, body: dict[str, Any]) -> None:
        if "hold" not in body:
            return
        held = self._holds.get(_field(body, "hold", str))
        if held is None or held.run_id != run_id:
            raise _HoldLost(
                f"run {run_id!r} is no longer held by this driver (its hold's connection ended, "
                "or the server restarted); another driver may hold it now: nothing was written"
            )

    # ── the hold ──────────────────────────────────────────────────────────────────────────

    async def _hold(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hold the run while this request lasts (a raw ASGI endpoint: it must see the
        connection end, which a response object would not tell it while it sends nothing)."""
        held: _Held | None = None
        try:
            run_id = _run_id(_object(await _read_body(receive)))
            async with self.store.hold(run_id):
                hold_id = secrets.token_hex(16)
                held = self._holds[hold_id] = _Held(run_id)
                try:
                    await _keep(hold_id, held, receive, send)
                finally:
                    del self._holds[hold_id]
        except Exception as exc:
            if held is not None:
                raise  # the answer has begun
            await _respond(send, *_failure(exc))
        finally:
            if held is not None:
                held.done.set()  # the store let go: `release` may answer


class _Raw:
    """An ASGI endpoint Starlette routes to as it is (a method would become a request handler)."""

    def __init__(self, endpoint: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.endpoint(scope, receive, send)


async def _keep(hold_id: str, held: _Held, receive: Receive, send: Send) -> None:
    """Answer the hold's first line, then keep the answer open until it ends."""
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    line = _json({"protocol": PROTOCOL, "hold": hold_id}) + b"\n"
    await send({"type": "http.response.body", "body": line, "more_body": True})
    if not await _until_ended(receive, held.release):
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_ended(receive: Receive, release: asyncio.Event) -> bool:
    """Wait until the client disconnects (True) or asks to release (False)."""
    asked = asyncio.ensure_future(release.wait())
    try:
        while True:
            message = asyncio.ensure_future(receive())
            await asyncio.wait({asked, message}, return_when=asyncio.FIRST_COMPLETED)
            if message.done() and message.result()["type"] == "http.disconnect":
                return True
            if asked.done():
                message.cancel()
                return False
    finally:
        asked.cancel()


async def _read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest("the client left before its request ended")
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


# ── requests and answers ────────────────────────────────────────────────────────────────────

_JSON = "application/json"
_HEADERS = [(b"content-type", b"application/x-ndjson"), (b"cache-control", b"no-store")]


class _HoldLost(Exception):
    pass


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def _object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"the request is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("the request is not a JSON object")
    return body


def _field(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise BadRequest(f"{name!r} must be a {kind.__name__}, got {value!r:.80}")
    return value


def _run_id(body: dict[str, Any]) -> str:
    return check_run_id(_field(body, "run_id", str))


def _header(body: dict[str, Any]) -> dict[str, Any]:
    header = json.loads(_field(body, "header", str))
    if not isinstance(header, dict):
        raise BadRequest("'header' must be a JSON object's text")
    return header


def _events(body: dict[str, Any]) -> list[Step]:
    events = []
    for row in _field(body, "events", list):
        if not (isinstance(row, list) and len(row) == 4):
            raise BadRequest(f"an event must be [step_id, phase, attempt, data], got {row!r:.80}")
        step_id, phase, attempt, data = row
        if not (isinstance(step_id, str) and isinstance(attempt, int) and isinstance(data, str)):
            raise BadRequest(f"an event must be [str, str, int, str], got {row!r:.80}")
        parse_step_id(step_id)
        json.loads(data)
        events.append(cast(Step, _Stored(step_id, Phase(phase), attempt, data)))
    return events


def _failure(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """The status and the answer that tell the client what `exc` was."""
    if isinstance(exc, _HoldLost):
        return 409, {"error": "HoldLost", "message": str(exc)}
    if isinstance(exc, errors.SynaptumError):
        fields = {k: v for k, v in vars(exc).items() if isinstance(v, str | int | None)}
        status = 409 if isinstance(exc, errors.RunBusy) else 422
        return status, {"error": type(exc).__name__, "message": str(exc), "attributes": fields}
    if isinstance(exc, ValueError | TypeError):  # BadRequest, or an event no store can keep
        return 400, {"error": "BadRequest", "message": str(exc)}
    if not isinstance(exc, Exception):
        raise exc
    logging.getLogger(__name__).error("a call failed", exc_info=exc)
    return 500, {"error": "ServerError", "message": f"{type(exc).__name__} in the server"}


async def _respond(send: Send, status: int, answer: dict[str, Any]) -> None:
    body = _json({"protocol": PROTOCOL, **answer})
    headers = [(b"content-type", _JSON.encode()), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# ── the command ─────────────────────────────────────────────────────────────────────────────


def _store(options: argparse.Namespace) -> Checkpointer:
    if options.memory:
        from .memory import MemoryCheckpointer

        return MemoryCheckpointer()
    if options.postgres:
        from .postgres import PostgresCheckpointer

        return PostgresCheckpointer(options.postgres, schema=options.schema)
    from .sqlite import SqliteCheckpointer

    return SqliteCheckpointer(options.db)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a store until stopped; exit 2 on bad arguments, without a token or a port."""
    parser = argparse.ArgumentParser(
        prog="python -m synaptum_lite.stores.http_server",
        description=f"Serve a journal store over HTTP to HttpCheckpointer. The bearer token "
        f"every request must carry is read from {ENV_TOKEN}.",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--db", help="a SQLite journal file (created on first use)")
    which.add_argument("--memory", action="store_true", help="a journal in memory")
    which.add_argument("--postgres", metavar="URL", help="a PostgreSQL URL")
    parser.add_argument("--schema", default="synaptum_lite", help="with --postgres")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8750, help="0: any free port")
    options = parser.parse_args(argv)
    token = os.environ.get(ENV_TOKEN, "")
    try:
        if not token:  # before the store is opened: a refused start creates nothing
            raise errors.ConfigurationError(
                f"the store server needs a token: set {ENV_TOKEN} to a non-empty printable secret"
            )
        server = StoreServer(_store(options), token=token)
        listening = socket.create_server((options.host, options.port))
    except (errors.SynaptumError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    host, port = listening.getsockname()[:2]
    # the socket listens already: a client that connects now is answered once uvicorn runs
    print(f"listening on http://{host}:{port} ({server.store!r})", flush=True)  # noqa: T201
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(server, listening))
    return 0


async def _serve(app: StoreServer, listening: socket.socket) -> None:
    import uvicorn

    # every log line to stderr: stdout says one thing, that the server listens
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    # a hold's request never ends by itself: on SIGTERM, wait for them a little, then cut
    config = uvicorn.Config(app, lifespan="off", log_config=log_config, timeout_graceful_shutdown=5)
    await uvicorn.Server(config).serve(sockets=[listening])


if __name__ == "__main__":
    sys.exit(main())
