"""A local HTTP server that speaks just enough OpenAI chat-completions to fail on purpose.

It listens on 127.0.0.1 only, in a thread with its own event loop, and answers each request
from a named scenario: the first path segment (`http://127.0.0.1:PORT/<scenario>/v1`). A
scenario is an async function `(exchange) -> None` that writes the whole response itself, so
it can misbehave at the byte level: drop the connection mid-stream, send an event that is not
JSON, stall. Every request is recorded (headers and JSON body) for the tests to inspect.
"""

from __future__ import annotations

import asyncio
import json
import select
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tests.bounds import HANG

REASONS = {200: "OK", 401: "Unauthorized", 429: "Too Many Requests", 500: "Internal Server Error"}


@dataclass
class Exchange:
    """One request, and the means to answer it."""

    scenario: str
    number: int  # 1 for the first request this scenario received
    path: str
    headers: dict[str, str]
    body: Any
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    events_sent: int = 0

    async def send_json(
        self, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        head = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        self._head(status, {**head, **(headers or {})})
        self.writer.write(data)
        await self.writer.drain()

    async def send_text(
        self, status: int, text: str, headers: dict[str, str] | None = None
    ) -> None:
        """A body written exactly as given (escapes and all), as a careless server writes it."""
        data = text.encode()
        head = {"Content-Type": "text/plain; charset=utf-8", "Content-Length": str(len(data))}
        self._head(status, {**head, **(headers or {})})
        self.writer.write(data)
        await self.writer.drain()

    async def start_sse(self) -> None:
        self._head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        await self.writer.drain()

    async def send_event(self, data: Any) -> None:
        """One SSE event, in its own HTTP chunk; `data` is JSON-encoded unless it is a str."""
        text = data if isinstance(data, str) else json.dumps(data)
        payload = f"data: {text}\n\n".encode()
        self.writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        await self.writer.drain()
        self.events_sent += 1

    async def end_sse(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    def drop(self) -> None:
        """Cut the connection at once, mid-whatever (a TCP reset)."""
        self.writer.transport.abort()

    def _head(self, status: int, headers: dict[str, str]) -> None:
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
        lines += [f"{name}: {value}" for name, value in {**headers, "Connection": "close"}.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())


Scenario = Callable[[Exchange], Awaitable[None]]


class FaultServer:
    """Start with `start()`, stop with `stop()`; `url(scenario)` is a base URL for a gateway."""

    def __init__(self, scenarios: dict[str, Scenario]) -> None:
        self.scenarios = dict(scenarios)
        self._requests: list[Exchange] = []
        self._reading = 0  # connections whose request is being read
        self._counts: dict[str, int] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    def start(self) -> FaultServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        )
        self._server = future.result(timeout=HANG)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            # Handlers still running (a stalled scenario) end here, not with the loop.
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=HANG)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=HANG)

    @property
    def requests(self) -> list[Exchange]:
        """Every request received, in order, once the server has caught up with its clients.

        A client that gives up (an attempt past its timeout) has sent its request when it
        returns, but on a busy machine the server's thread may not have read it yet: counted
        at once, it would be missing (one run under eight CPU hogs counted 2 of 3 attempts).
        So the server first reads every connection that reached it: none waiting to be
        accepted, none whose request is half read, for several turns of its loop in a row."""
        if self._loop.is_running() and threading.current_thread() is not self._thread:
            asyncio.run_coroutine_threadsafe(self._caught_up(), self._loop).result(timeout=HANG)
        return self._requests

    async def _caught_up(self) -> None:
        assert self._server is not None
        listening = [s.fileno() for s in self._server.sockets]
        quiet = 0
        # turns of the loop, not seconds: an accepted connection reaches `_handle` within two
        while quiet < 5:
            waiting = select.select(listening, [], [], 0)[0] if listening else []
            quiet = 0 if waiting or self._reading else quiet + 1
            await asyncio.sleep(0.001)

    def url(self, scenario: str) -> str:
        return f"http://127.0.0.1:{self.port}/{scenario}/v1"

    def last(self, scenario: str) -> Exchange:
        return [r for r in self.requests if r.scenario == scenario][-1]

    def wait_disconnected(self, exchange: Exchange, timeout: float) -> bool:
        """Whether the client closed the connection of `exchange` within `timeout` seconds."""

        async def wait() -> bool:
            try:
                await asyncio.wait_for(exchange.disconnected.wait(), timeout)
            except TimeoutError:
                return False
            return True

        return asyncio.run_coroutine_threadsafe(wait(), self._loop).result(timeout + 5)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reading += 1
        try:
            exchange = await self._read(reader, writer)
        finally:
            self._reading -= 1
        if exchange is None:
            writer.close()
            return
        watcher = asyncio.create_task(self._watch(exchange))
        try:
            await self.scenarios[exchange.scenario](exchange)
        except ConnectionError:
            pass  # the client went away: that is what some tests are about
        finally:
            watcher.cancel()
            writer.close()

    async def _read(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Exchange | None:
        """The request on a new connection, recorded; None if the client sent none."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        path = request_line.split(" ")[1]
        scenario = path.strip("/").split("/")[0]
        self._counts[scenario] = self._counts.get(scenario, 0) + 1
        try:
            body: Any = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("latin-1")  # a form, say
        exchange = Exchange(scenario, self._counts[scenario], path, headers, body, reader, writer)
        self._requests.append(exchange)
        return exchange

    @staticmethod
    async def _watch(exchange: Exchange) -> None:
        try:
            while await exchange.reader.read(1024):
                pass
        except ConnectionError:
            pass
        exchange.disconnected.set()
