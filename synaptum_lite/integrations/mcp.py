"""Tools served by an MCP server: each enters an agent like any other tool.

Needs the `mcp` extra (`pip install 'synaptum-lite[mcp]'`): the official MCP SDK, imported
only when a server is connected, so the core stays standard library only.

    async with connect(sys.executable, "servidor.py", prefix="incidencias") as servidor:
        agente = Agent("soporte", model=..., instructions=..., tools=servidor.tools)

`connect` starts the server as a child process speaking MCP over stdio, lists its tools and
stops it when the block ends: this module is that connection, down to the pipes. The server's
stdout is read here, not by the SDK's reader, whose cost grows with the square of a line's
length (40 MB took 21 s there, 100 MB 502 s; here 1.3 s and a few: `benchmarks/
mcp_answer_size.py`): line by line, in linear time, and each line bounded by
`max_answer_bytes` (4 MiB unless told), past which it is not kept. An answer to a call in
flight that cannot be read (past the bound, or not JSON-RPC, such as JSON nested deeper than
the SDK's parser goes) is not dropped to wait for a timeout: the call ends at once, and
`synaptum_lite.integrations.mcp_tools` says what the run records (the tool ran).

At start-up, a server that cannot be started, that does not introduce itself within
`start_timeout`, or that answers something that is not MCP raises `McpServerLost` or a
`ConfigurationError` saying where, before any tool is called. Each tool becomes a `Tool` (an
`McpTool`): how it is named, how its arguments are checked, its `risk`, and what a call does
and what can go wrong in it moved, with the code that does it, to
`synaptum_lite.integrations.mcp_tools`, whose docstring says.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO, cast

from ..errors import ConfigurationError, McpServerLost
from .mcp_tools import (
    IDEMPOTENCY_KEY,
    McpTool,
    McpToolError,
    Unreadable,
    adapt,
    bounded,
    describe,
    first_error,
    lost_answer,
    risk_of,
    tool_names,
)
from .mcp_tools import SEPARATOR as SEPARATOR  # public here before mcp_tools held it

if TYPE_CHECKING:
    from anyio.abc import ObjectReceiveStream, ObjectSendStream
    from mcp import ClientSession
    from mcp.os.win32.utilities import ServerProcess
    from mcp.shared.message import SessionMessage
    from mcp.types import Tool as ListedTool


__all__ = [
    "IDEMPOTENCY_KEY",
    "MAX_ANSWER_BYTES",
    "McpServer",
    "McpServerLost",
    "McpTool",
    "McpToolError",
    "connect",
    "risk_of",
]

INSTALL = "pip install 'synaptum-lite[mcp]' (or: uv sync --extra mcp)"

_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
#: The longest line read from a server's stdout (bytes): one JSON-RPC message, an answer
#: whole. A longer one is refused unread, not cut (A2A's bound on an answer is the same).
MAX_ANSWER_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class McpServer:
    """A connected MCP server: its name (as it introduces itself) and its tools, prefixed."""

    name: str
    prefix: str
    tools: list[McpTool]


@contextlib.asynccontextmanager
async def connect(
    command: str,
    *args: str,
    prefix: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    errlog: TextIO | None = None,
    call_timeout: float | None = 600.0,
    start_timeout: float = 30.0,
    rename: Mapping[str, str] | None = None,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
) -> AsyncIterator[McpServer]:
    """Start `command args...` as an MCP server over stdio, list its tools, and stop it when
    the block ends.

    `prefix` (a letter, then letters, digits or `-`) goes before each tool's name. `env` adds
    variables to the few the SDK passes on (`PATH`, `HOME`...). `errlog` receives the
    server's stderr (by default this process's). `call_timeout`, in seconds, bounds the wait
    for each call's answer: past it the call counts as lost (`McpServerLost`; None waits for
    ever, for a server that may hang the run); `start_timeout` the wait for the server to
    introduce itself and list its tools. `rename` maps a server's tool name to the one used
    after the prefix (for a name a model API would refuse). `max_answer_bytes` bounds each
    line the server writes (an answer is one line): a call whose answer is longer ends at
    once, its step completed with an error result that says the tool ran and how long the
    answer was when it was refused; raise the bound for a server whose answers are larger.

    Raises `ConfigurationError` when the SDK is missing, the prefix is not one or a tool's
    name cannot be used, and `McpServerLost` when the server cannot be started, goes away or
    does not answer.
    """
    _require_sdk()
    import anyio
    from mcp import ClientSession
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise ConfigurationError(
            f"MCP prefix {prefix!r} is not one: a letter, then letters, digits or '-' (no "
            "underscore, so that the first '__' of a tool's name always ends its prefix)"
        )
    if (
        isinstance(max_answer_bytes, bool)
        or not isinstance(max_answer_bytes, int)
        or (max_answer_bytes < 1)
    ):
        raise ConfigurationError(
            f"MCP server {prefix!r}: max_answer_bytes={max_answer_bytes!r} is not a bound; "
            f"nothing was started: pass a whole number of bytes, at least 1 (the default is "
            f"{MAX_ANSWER_BYTES})"
        )
    server_name = prefix
    _check_errlog(prefix, errlog or sys.stderr)
    unreadable = Unreadable()
    try:
        async with contextlib.AsyncExitStack() as stack:
            try:
                try:
                    streams = await stack.enter_async_context(
                        _stdio(
                            command,
                            list(args),
                            env=dict(env) if env is not None else None,
                            cwd=os.fspath(cwd) if cwd is not None else None,
                            errlog=errlog or sys.stderr,
                            bound=max_answer_bytes,
                            unreadable=unreadable,
                        )
                    )
                except ValueError as exc:  # the SDK's word for a spawn it refuses
                    raise ConfigurationError(
                        f"MCP server {prefix!r} cannot be started ({describe(exc)}): its "
                        f"command {bounded(command)}, arguments {bounded(list(args))}, env or "
                        "cwd hold what no process can be given; nothing was started: fix them"
                    ) from None
                session = await stack.enter_async_context(
                    ClientSession(*streams, message_handler=unreadable.hear)
                )
                with anyio.fail_after(start_timeout):
                    try:
                        introduced = await session.initialize()
                    except RuntimeError as exc:  # the SDK's word for a version it lacks
                        raise ConfigurationError(
                            f"MCP server {prefix!r} cannot be used ({describe(exc)}); no tool "
                            "was called: update the server or the MCP SDK so that they share a "
                            "protocol version"
                        ) from None
                    server_name = introduced.server_info.name or prefix
                    listed = await _list_tools(session, server_name)
            except TimeoutError:  # an OSError too: first
                raise McpServerLost(
                    server_name,
                    f"it did not introduce itself and list its tools within "
                    f"start_timeout={start_timeout} s; it may be hung" + unreadable.since(0),
                ) from None
            except MCPError as exc:
                unread = unreadable.answers.pop(None, None)
                if unread is not None:
                    raise ConfigurationError(
                        f"MCP server {server_name!r} answered its start-up, and the answer was "
                        f"not read: {unread}; no tool was called"
                    ) from None
                if lost_answer(exc):
                    raise McpServerLost(server_name, describe(exc)) from None
                raise ConfigurationError(  # it is there, and it said no
                    f"MCP server {server_name!r} refused its start-up with JSON-RPC error "
                    f"{exc.code}: {bounded(exc.message)}; no tool was called: check its "
                    "command, arguments and version, and what it wrote to stderr"
                ) from None
            except OSError as exc:
                raise McpServerLost(server_name, describe(exc)) from None
            except ValidationError as exc:  # it answered, and what it said is not MCP
                raise ConfigurationError(
                    f"MCP server {server_name!r} answered its start-up with something that is "
                    f"not MCP ({first_error(exc)}); no tool was called: fix the server"
                ) from None
            names = tool_names(server_name, prefix, [item.name for item in listed], rename or {})
            yield McpServer(
                server_name,
                prefix,
                [
                    adapt(session, server_name, name, item, call_timeout, unreadable)
                    for name, item in zip(names, listed, strict=True)
                ],
            )
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap whatever leaves the block; the caller sees what was raised.
        raise _alone(group) from None


@contextlib.asynccontextmanager
async def _stdio(
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
    `_Pipes`), and stop it as the SDK does: stdin closed, then after 2 s its whole tree
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
    pipes = _Pipes(process, bound, unreadable)
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


class _Line:
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


class _Pipes:
    """The streams a `ClientSession` talks through, over the server's stdin and stdout.

    The reader keeps a line as a list of chunks and joins it once, at its end: linear in its
    length (the SDK's reader joins each chunk to the line so far). A line longer than the
    bound is let go as it arrives; a line that cannot be read (too long, or not JSON-RPC) and
    names, at its start or end, a request in flight is that request's answer: the request is
    answered at once with an error, and `Unreadable.answers` keeps why, under the call's
    idempotency key (None for a request without one), for the call to say. Any other such
    line goes to the session's message handler, as the SDK does (`Unreadable` counts it)."""

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
        line = _Line(self.bound)
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
                        line, start = _Line(self.bound), end + 1
                    await self._take(line, chunk[start:])  # once the session is gone, the
                    # lines are still read (and dropped), so a server writing can exit

    async def _take(self, line: _Line, piece: bytes) -> None:
        if line.add(piece):  # past the bound now: the call need not wait for the rest
            line.answered = await self._refuse(line.ident(), self._too_long(line))

    async def _ended(self, line: _Line) -> None:
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

    def _too_long(self, line: _Line) -> str:
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
        await _stop(self.process)
        for stream in (self.read_stream, self.write_stream, self.to_session, self.from_session):
            await stream.aclose()


async def _stop(process: ServerProcess) -> None:
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


def _require_sdk() -> None:
    """Raise a `ConfigurationError` saying how to install the MCP SDK, when it is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ConfigurationError(
            "synaptum_lite.integrations.mcp needs the MCP SDK, and the `mcp` package is not "
            f"installed; install the extra: {INSTALL}"
        ) from None


def _check_errlog(prefix: str, errlog: Any) -> None:
    """Refuse, before starting anything, an `errlog` the server's stderr cannot be given to:
    the child writes to it directly, so it must be a file with a descriptor."""
    try:
        errlog.fileno()
    except (AttributeError, OSError, ValueError) as exc:
        raise ConfigurationError(
            f"MCP server {prefix!r}: errlog={type(errlog).__name__} has no file descriptor "
            f"({type(exc).__name__}: {exc}), and the server writes its stderr to one directly; "
            "nothing was started. Pass an open file, e.g. errlog=open('server.log', 'w')"
        ) from None


async def _list_tools(session: ClientSession, server: str) -> list[ListedTool]:
    """Every tool the server lists, following its pages."""
    from mcp.types import PaginatedRequestParams

    listed: list[ListedTool] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        page = await session.list_tools(
            params=PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        listed.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return listed
        if cursor in seen:  # pages that lead back to a page already read never end
            raise ConfigurationError(
                f"MCP server {server!r} lists its tools in pages that loop: the cursor "
                f"{bounded(cursor)} came back after {len(seen) + 1} pages "
                f"({len(listed)} tools so far); no tool was called: fix the server"
            )
        seen.add(cursor)


def _alone(group: BaseExceptionGroup[Any]) -> BaseException:
    """The one exception inside nested groups of one, or the group itself."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner
