"""Tools served by an MCP server: each enters an agent like any other tool.

Needs the `mcp` extra (`pip install 'synaptum-lite[mcp]'`): the official MCP SDK, imported
only when a server is connected, so the core stays standard library only.

    async with connect(sys.executable, "servidor.py", prefix="incidencias") as servidor:
        agente = Agent("soporte", model=..., instructions=..., tools=servidor.tools)

`connect` starts the server as a child process speaking MCP over stdio, lists its tools and
stops it when the block ends: this module is that connection. Its pipes are
`synaptum_lite.integrations.mcp_stdio`'s, whose reader takes a line in linear time (the
SDK's took 502 s for 100 MB) and bounds it by `max_answer_bytes` (4 MiB unless told). An
answer to a call in flight that cannot be read (past the bound, or not JSON-RPC, such as JSON
nested deeper than the SDK's parser goes) is not dropped to wait for a timeout: the call ends
at once, and `synaptum_lite.integrations.mcp_tools` says what the run records (the tool ran).

At start-up, a server that cannot be started, that does not introduce itself within
`start_timeout`, or that answers something that is not MCP raises `McpServerLost` or a
`ConfigurationError` saying where, before any tool is called. Each tool becomes a `Tool` (an
`McpTool`): how it is named, how its arguments are checked, its `risk`, and what a call does
and what can go wrong in it moved, with the code that does it, to
`synaptum_lite.integrations.mcp_tools`, whose docstring says.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ConfigurationError, McpServerLost
from .mcp_stdio import MAX_ANSWER_BYTES, stdio
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
    from mcp import ClientSession
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
                        stdio(
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
