"""The pipes to an MCP server's process: what `synaptum_lite.integrations.mcp.connect` hands
its `ClientSession` instead of the SDK's `stdio_client`, over the same real subprocess.

The process is started and stopped as the SDK does it (its default environment, a process
group or job of its own; at the end stdin closed, 2 s, then its whole tree terminated). What
differs is the reader of its stdout:

- linear: a line is kept as the chunks that came and joined once, at its end. The SDK's reader
  joins each chunk to the line so far, so a line of n bytes costs about n²/64 KB: 40 MB took
  21 s, 100 MB 502 s (`benchmarks/mcp_answer_size.py` measures both readers);
- bounded: a line longer than `max_answer_bytes` (`MAX_ANSWER_BYTES`, 4 MiB, unless `connect`
  is told) is not kept; it is let go as it passes the bound, its size counted to its end;
- an answer that cannot be read is still an answer: a line too long, or not JSON-RPC (JSON
  nested deeper than the SDK's parser goes, a lone surrogate), whose start or end names the id
  of a request in flight, answers that request at once with an error, and
  `Unreadable.answers` keeps why, under the call's idempotency key (None for a start-up
  request): the call says it (`synaptum_lite.integrations.mcp_tools`), instead of waiting for
  a timeout and calling an answered call lost. Any other such line goes to the session's
  message handler, as the SDK does, and `Unreadable` counts it.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TextIO, cast

from .mcp_tools import IDEMPOTENCY_KEY, Unreadable, first_error

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream
    from mcp.os.win32.utilities import ServerProcess
    from mcp.shared.message import SessionMessage

#: The longest line read from a server's stdout (bytes): one JSON-RPC message, an answer
#: whole. A longer one is refused unread, not cut (A2A's bound on an answer is the same).
MAX_ANSWER_BYTES = 4 * 1024 * 1024


@contextlib.asynccontextmanager
async def stdio(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    errlog: TextIO,
    bound: int,
    unreadable: Unreadable,
) -> AsyncIterator[tuple[ObjectReceiveStream[Any], ObjectSendStream[Any]]]:
    """Start the server as the SDK's `stdio_client` does (its default environment, a process
    group or job of its own), hand a `ClientSession` the two streams over its pipes (read by
    `Pipes`), and stop it as the SDK does: stdin closed, then after 2 s its whole tree
    terminated, then killed. Raises ValueError for what no process can be given."""
    import anyio
    from mcp.client.stdio import get_default_environment

    environment = get_default_environment() | (env or {})
    if sys.platform == "win32":
        from mcp.os.win32.utilities import create_windows_process, get_windows_executable_command

        process: ServerProcess = await create_windows_process(
            get_windows_executable_command(command), args, environment, errlog, cwd
        )
    else:
        process = await anyio.open_process(
            [command, *args], env=environment, stderr=errlog, cwd=cwd, start_new_session=True
        )
    pipes = Pipes(process, bound, unreadable)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pipes.read)
        tasks.start_soon(pipes.write)
        try:
            yield pipes.read_stream, pipes.write_stream
        finally:
            with anyio.CancelScope(shield=True):  # even when cancelled: never leave it alive
                await pipes.close()
            tasks.cancel_scope.cancel()


#: The most read from the server's stdout at once (bytes).
_CHUNK = 1024 * 1024
#: How much of a refused line's start and end is kept: where a JSON-RPC answer's id is.
_EDGE = 256
_ID = rb'"id"\s*:\s*(-?\d+(?![\d.eE])|"(?:[^"\\]|\\.)*")'
_ID_FIRST = re.compile(  # and no "method" after it: a request of the server's answers no call
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID + rb'(?!\s*,\s*"method")'
)
_ID_LAST = re.compile(rb",\s*" + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


class Line:
    """One line of the server's stdout as it arrives: whole up to the bound; past it, only its
    size, its first and its last `_EDGE` bytes (the id of an answer is at one end)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.parts: list[bytes] | None = []
        self.size = 0
        self.head = self.tail = b""
        self.answered = False  # refused, and the call it answers told so

    def add(self, piece: bytes) -> bool:
        """Keep `piece`; True when it takes the line past the bound (the line is let go)."""
        self.size += len(piece)
        if self.parts is None:
            self.tail = (self.tail + piece)[-_EDGE:]
            return False
        self.parts.append(piece)
        if self.size <= self.bound:
            return False
        whole = b"".join(self.parts)  # once per line, at most the bound and a chunk
        self.head, self.tail, self.parts = whole[:_EDGE], whole[-_EDGE:], None
        return True

    def ident(self, edges: tuple[bytes, bytes] | None = None) -> int | str | None:
        """The id the line begins or ends with, if it looks like a JSON-RPC message's."""
        head, tail = edges or (self.head, self.tail)
        found = _ID_FIRST.match(head) or _ID_LAST.search(tail)
        if found is None:
            return None
        try:
            value = json.loads(found.group(1))
        except ValueError:
            return None
        return value if isinstance(value, int | str) else None


class Pipes:
    """The streams a `ClientSession` talks through, over the server's stdin and stdout: the
    reader and the writer the module docstring describes, and what they know of the requests
    in flight (their ids, and each call's idempotency key)."""

    def __init__(self, process: ServerProcess, bound: int, unreadable: Unreadable) -> None:
        import anyio

        self.process, self.bound, self.unreadable = process, bound, unreadable
        self.in_flight: dict[int | str, str | None] = {}  # request id -> idempotency key
        self.to_session, self.read_stream = anyio.create_memory_object_stream[Any](0)
        self.write_stream, self.from_session = anyio.create_memory_object_stream[Any](0)
        self.written = anyio.Event()
        self.gone = False  # the session no longer reads: what comes is drained

    async def read(self) -> None:
        import anyio

        stdout = self.process.stdout
        assert stdout is not None  # started with pipes
        line = Line(self.bound)
        with contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ):
            async with self.to_session:
                while True:
                    chunk = await stdout.receive(_CHUNK)
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        await self._take(line, chunk[start:end])
                        await self._ended(line)
                        line, start = Line(self.bound), end + 1
                    await self._take(line, chunk[start:])  # once the session is gone, the
                    # lines are still read (and dropped), so a server writing can exit

    async def _take(self, line: Line, piece: bytes) -> None:
        if line.add(piece):  # past the bound now: the call need not wait for the rest
            line.answered = await self._refuse(line.ident(), self._too_long(line))

    async def _ended(self, line: Line) -> None:
        from mcp.shared.message import SessionMessage
        from mcp.types import JSONRPCError, JSONRPCResponse, jsonrpc_message_adapter

        if line.parts is None:
            if not line.answered and not await self._refuse(line.ident(), self._too_long(line)):
                await self._deliver(
                    ValueError(f"a line of {line.size} bytes, {self._over}, dropped")
                )
            return
        raw = b"".join(line.parts)
        try:
            message = jsonrpc_message_adapter.validate_json(
                raw.decode("utf-8", "replace"), by_name=False
            )
        except ValueError as exc:
            why = f"it is not JSON-RPC ({first_error(exc)})" if hasattr(exc, "errors") else str(exc)
            if not await self._refuse(line.ident((raw[:_EDGE], raw[-_EDGE:])), why):
                await self._deliver(exc)
            return
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.in_flight.pop(message.id, None)
        await self._deliver(SessionMessage(message))

    @property
    def _over(self) -> str:
        return f"over max_answer_bytes={self.bound}"

    def _too_long(self, line: Line) -> str:
        return (
            f"it had reached {line.size} bytes when it was refused, {self._over}; to read "
            "answers this long, give connect(..., max_answer_bytes=...) a larger bound"
        )

    async def _refuse(self, ident: int | str | None, why: str) -> bool:
        """Answer the request in flight `ident` with an error, keeping `why` for its call;
        False when no request in flight has that id."""
        from mcp.shared.message import SessionMessage
        from mcp.types import PARSE_ERROR, ErrorData, JSONRPCError

        if ident is None or ident not in self.in_flight:
            return False
        self.unreadable.answers[self.in_flight.pop(ident)] = why
        error = ErrorData(code=PARSE_ERROR, message="the answer was not read: " + why)
        await self._deliver(SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=error)))
        return True

    async def _deliver(self, item: SessionMessage | Exception) -> None:
        import anyio

        if self.gone:
            return
        try:
            await self.to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.gone = True

    async def write(self) -> None:
        import anyio
        from mcp.types import JSONRPCRequest

        stdin = self.process.stdin
        assert stdin is not None  # started with pipes
        try:
            async with self.from_session:
                async for sent in self.from_session:
                    message = sent.message
                    if isinstance(message, JSONRPCRequest):
                        meta = (message.params or {}).get("_meta")
                        key = meta.get(IDEMPOTENCY_KEY) if isinstance(meta, dict) else None
                        self.in_flight[message.id] = key if isinstance(key, str) else None
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send((data + "\n").encode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # the server may be alive and not reading: the session must see the end, not hang
            await self.to_session.aclose()
        finally:
            self.written.set()

    async def close(self) -> None:
        """Stop traffic, let what was sent reach the server, stop it, release the streams."""
        import anyio

        self.read_stream.close()  # the reader drains what still comes, so the server can exit
        self.write_stream.close()
        with anyio.move_on_after(0.5):
            await self.written.wait()
        await stop(self.process)
        for stream in (self.read_stream, self.write_stream, self.to_session, self.from_session):
            await stream.aclose()


async def stop(process: ServerProcess) -> None:
    """Close the server's stdin, give it 2 s to exit, then terminate its whole tree (SIGTERM
    to its group, SIGKILL 2 s later; a Windows job is killed at once)."""
    import anyio

    async def exited(within: float) -> bool:
        with anyio.move_on_after(within):
            while process.returncode is None:  # not wait(): it waits for the pipes too
                await anyio.sleep(0.01)
            return True
        return False

    async def close(stream: Any) -> None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()

    await close(process.stdin)
    if not await exited(2.0):
        if sys.platform == "win32":
            from mcp.os.win32.utilities import terminate_windows_process_tree

            await terminate_windows_process_tree(process)
        else:
            from mcp.os.posix.utilities import terminate_posix_process_tree

            await terminate_posix_process_tree(cast("Any", process), 2.0)
        await exited(2.0)
    if sys.platform == "win32":
        from mcp.os.win32.utilities import close_process_job

        close_process_job(process)
    await close(process.stdout)
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    with contextlib.suppress(PermissionError):  # else it warns when collected
        getattr(transport, "close", lambda: None)()
