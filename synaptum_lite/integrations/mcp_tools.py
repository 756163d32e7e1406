"""What a tool an MCP server lists becomes in an agent, and what a call to it does: the
`McpTool`s that `synaptum_lite.integrations.mcp.connect` hands out are built here, from what
the server listed. The MCP SDK is imported inside the functions that use it, as in
`synaptum_lite.integrations.mcp`.

Each listed tool becomes a `Tool` (an `McpTool`):

- its name gets the prefix, `incidencias__consultar`, so two servers cannot collide; the
  name must be one a model API accepts (letters, digits, `_`, `-`, at most 64 characters:
  OpenAI's rule, the strictest), or `connect` refuses it, naming it: rename it with `rename=`.
  A server that lists a name twice is refused too (which one would a call reach?);
- its JSON schema and description are the server's, and part of the agent's configuration:
  a server whose schema changed between two passes of a run makes the second pass raise
  `ConfigurationChanged` naming the tool, before anything is called. An argument the schema
  does not name is refused before the call, unless the schema lets it in (it names no
  property, or says `additionalProperties` or `patternProperties`): then the server checks it;
- its `risk` and `idempotent` come from the server's annotations, read with the MCP defaults
  (a tool that says nothing may destroy and is not idempotent): `readOnlyHint` is a read,
  and safe to repeat; otherwise `destructiveHint: false` is a hard write (the annotations cannot
  tell a soft write from a hard one, so the harder is assumed) and anything else is destructive;
  `idempotentHint: true` is idempotent. Annotations are the server author's word, not ours:
  nothing is deduced from a name or a description.

A call, what can go wrong in it, and what the run does:

- each call carries its step's `ToolContext.idempotency_key` in the request's `_meta`, under
  `IDEMPOTENCY_KEY`: a server that deduplicates on it makes a call that runs again (an
  idempotent tool after a lost answer) effectively-once;
- content that is not text (an image, audio, a resource link) is not dropped in silence: the
  result says what was left out; an embedded resource's text is part of the text;
- the server answers with an error result (`isError`) or a JSON-RPC error: the model reads it
  as the tool's result (`McpToolError: ...`), and the step is completed, so nothing repeats
  (also under -32000 and -32001, the codes the SDK uses for a closed connection and a
  timeout: only the SDK's own words are a lost answer);
- it answers something that is not MCP: at start-up a `ConfigurationError` says where; in a
  call, that is the tool's result, read by the model (it answered: nothing repeats);
- it answers, and the answer cannot be read: longer than `connect`'s `max_answer_bytes` (4 MiB
  unless told), or not JSON-RPC (JSON nested deeper than the parser goes, a lone surrogate):
  the server answered, so the tool ran, and its effect, if it has one, happened. That is not a
  lost answer (which a person would be asked about, as if it might not have happened): the
  call ends at once (past the bound, before the rest arrives) and the step is completed with
  an error result, `McpToolError: the MCP server answered, so the tool ran (...), and its
  answer was not read: ...`, saying why (the size it had reached and the bound, and how to
  raise it). The model reads that, the run goes on, and nothing repeats. The line is known to
  be the answer by the id of the call, at its start or its end;
- a byte on its stdout that is not UTF-8 is read as U+FFFD; a line that is not JSON-RPC and
  names no call in flight (not JSON, or a message to no one) is dropped, as the SDK does: were
  it the answer, the call is lost, and `McpServerLost` says how many such lines came and what
  was wrong with the last;
- it answers structured content (and no text) that a journal cannot keep as strict JSON
  (NaN or an infinite number, which JSON has no form for, and Python's JSON reads): the
  result is the text of that JSON as the server wrote it, `{"importe":NaN}`, a string the
  journal keeps. The server answered, so the step is completed, not stopped as a result that
  cannot be journaled;
- the server goes away (or does not answer within `call_timeout`, 600 s unless told) while a
  call is in flight: nobody knows whether the call had its effect, so `McpServerLost` stops
  the run with the step attempted and never completed. Run the same `run_id` again with the
  server back: an idempotent tool runs again, a non-idempotent one raises `UncertainEffect`
  for a person.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigurationError, InvalidToolCall, McpServerLost
from ..tools import Risk, Tool, ToolContext

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import Tool as ListedTool
    from mcp_types import RequestParamsMeta

#: Between the prefix and the server's own tool name. A prefix has no underscore, so the
#: first `__` of a name always ends its prefix.
SEPARATOR = "__"
#: What a model API accepts as a tool's name (OpenAI's rule; Anthropic's is the same).
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: The key of the step's idempotency key in each call's `_meta`.
IDEMPOTENCY_KEY = "synaptum-lite/idempotency-key"


class McpToolError(Exception):
    """An MCP server answered a call with an error, or with an answer that could not be read
    (the tool ran). Not a misuse of the library: the agent's loop turns it into the tool's
    result, which the model reads in its next turn."""


@dataclass(frozen=True, slots=True, eq=False)
class McpTool(Tool):
    """A tool served by an MCP server. `remote_name` is its name on the server; `annotations`
    the hints the server sent (`readOnlyHint`, ...), from which `risk` and `idempotent` come."""

    server: str
    remote_name: str
    annotations: dict[str, bool]

    def bind(self, arguments: Any) -> dict[str, Any]:
        """Check the model's arguments as `Tool.bind` does, except that an argument the schema
        does not name is passed on to the server when the schema lets it (it names no
        property, or says `additionalProperties` or `patternProperties`): the server checks
        it. A schema that names its properties and says nothing more keeps the others out."""
        schema = self.parameters
        extra = schema.get("additionalProperties")
        named = bool(schema["properties"])
        opened = extra is True or isinstance(extra, dict) or "patternProperties" in schema
        if not isinstance(arguments, dict) or extra is False or (named and not opened):
            return Tool.bind(self, arguments)
        properties = schema["properties"]
        missing = [name for name in schema.get("required", ()) if name not in arguments]
        if missing:
            raise InvalidToolCall(self.name, f"missing required argument(s) {', '.join(missing)}")
        return {
            key: self._converters[key](value)
            if key in properties
            else _checker(self.name, key, extra)(value)
            for key, value in arguments.items()
        }

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Call the tool on its server; returns the text (or structured content) it answered."""
        return await self.function(arguments, context)


def risk_of(annotations: Mapping[str, bool | None]) -> tuple[Risk, bool]:
    """The `risk` and `idempotent` a tool's MCP annotations declare, read with the MCP
    defaults: an absent hint says the worst (not read-only, destructive, not idempotent)."""
    if annotations.get("readOnlyHint") is True:
        return Risk.READ, True
    risk = Risk.HARD_WRITE if annotations.get("destructiveHint") is False else Risk.DESTRUCTIVE
    return risk, annotations.get("idempotentHint") is True


def tool_names(server: str, prefix: str, listed: list[str], rename: Mapping[str, str]) -> list[str]:
    """The prefixed name of each listed tool; refuses a name listed twice or unusable."""
    unknown = sorted(set(rename) - set(listed))
    twice = sorted({name for name in listed if listed.count(name) > 1})
    if unknown or twice:
        raise ConfigurationError(
            f"MCP server {server!r} lists the tool(s) {twice} more than once: a call could "
            "reach either, so none is used; fix the server"
            if twice
            else f"rename names tools MCP server {server!r} does not list: {unknown}; it lists "
            f"{listed}"
        )
    names = [f"{prefix}{SEPARATOR}{rename.get(name, name)}" for name in listed]
    for remote, name in zip(listed, names, strict=True):
        if not _NAME.fullmatch(name):
            raise ConfigurationError(
                f"MCP server {server!r}: its tool {remote!r} would be named {name!r} "
                f"({len(name)} characters), which a model API refuses: a tool's name is 1 to 64 "
                "letters, digits, '_' or '-'. Pass connect(..., rename={"
                f"{remote!r}: 'a_name'}}) or a shorter prefix"
            )
    return names


def adapt(
    session: ClientSession,
    server: str,
    name: str,
    listed: ListedTool,
    call_timeout: float | None,
    unreadable: Unreadable,
) -> McpTool:
    """The `Tool` an agent sees for one tool the server listed, named `name`."""
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    hints = listed.annotations
    annotations = {
        key: value
        for key, value in (
            ("readOnlyHint", hints.read_only_hint if hints else None),
            ("destructiveHint", hints.destructive_hint if hints else None),
            ("idempotentHint", hints.idempotent_hint if hints else None),
        )
        if value is not None
    }
    risk, idempotent = risk_of(annotations)
    schema = dict(listed.input_schema)
    schema.setdefault("properties", {})
    required = schema.get("required", [])
    if not isinstance(schema["properties"], dict) or not (
        isinstance(required, list) and all(isinstance(name, str) for name in required)
    ):
        what, value, should = (
            ("properties", schema["properties"], "an object of argument schemas")
            if not isinstance(schema["properties"], dict)
            else ("required", required, "a list of argument names")
        )
        raise ConfigurationError(
            f"MCP server {server!r}: the input schema of its tool {listed.name!r} has "
            f"{what} {bounded(value)}, not {should}; no tool was called: fix the server"
        )

    async def call(arguments: dict[str, Any], context: ToolContext) -> Any:
        heard = unreadable.count
        unreadable.answers.pop(context.idempotency_key, None)  # from a call that timed out
        try:
            result = await session.call_tool(
                listed.name,
                arguments,
                read_timeout_seconds=call_timeout,
                meta=cast("RequestParamsMeta", {IDEMPOTENCY_KEY: context.idempotency_key}),
            )
        except MCPError as exc:
            unread = unreadable.answers.pop(context.idempotency_key, None)
            if unread is not None:  # it answered: the step is done, and the model reads why
                raise McpToolError(
                    "the MCP server answered, so the tool ran (its effect, if it has one, "
                    f"happened), and its answer was not read: {unread}"
                ) from None
            if lost_answer(exc):
                raise McpServerLost(
                    server,
                    describe(exc) + unreadable.since(heard),
                    tool=name,
                    arguments=arguments,
                    run_id=context.run_id,
                    step_id=context.step_id,
                ) from None
            raise McpToolError(
                f"the MCP server answered with JSON-RPC error {exc.code}: {exc.message}"
            ) from None
        except ValidationError as exc:  # it answered, so the step is done: the model reads why
            raise McpToolError(f"the MCP server's answer is not MCP: {first_error(exc)}") from None
        text, left_out = _text_of(result.content)
        if result.is_error:
            raise McpToolError(
                "the MCP server reports the tool failed: "
                + "\n".join(filter(None, [text or "(it gave no text)", left_out]))
            )
        if not text and result.structured_content is not None and not left_out:
            return _keepable(result.structured_content)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)
        return "\n".join(filter(None, [text, left_out]))

    return McpTool(
        name=name,
        description=listed.description or "",
        parameters=schema,
        function=call,
        risk=risk,
        idempotent=idempotent,
        context_parameter=None,
        _converters={
            key: _checker(name, key, value) for key, value in schema["properties"].items()
        },
        server=server,
        remote_name=listed.name,
        annotations=annotations,
    )


def _keepable(structured: dict[str, Any]) -> Any:
    """Structured content as the tool's result: itself, or, when it holds what strict JSON
    has no form for (NaN, an infinite number), its JSON text with those as the server wrote
    them (`NaN`, `Infinity`): a string, which the journal keeps."""
    try:
        json.dumps(structured, allow_nan=False)
    except ValueError:
        return json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return structured


class Unreadable:
    """What the server wrote that could not be read as JSON-RPC (a line that is not JSON, not
    JSON the SDK accepts, or longer than the bound). A line that names no call in flight is
    dropped, so an answer written that way never arrives, and a lost call says so: counted,
    and the last one kept. One that answers a call in flight is kept in `answers`, by the
    call's idempotency key (None for a start-up request), with why it was not read."""

    def __init__(self) -> None:
        self.count = 0
        self.last = ""
        self.answers: dict[str | None, str] = {}

    async def hear(self, message: Any) -> None:
        """The session's message handler: keeps the transport's errors, ignores the rest."""
        if isinstance(message, Exception):
            self.count += 1
            readable = hasattr(message, "errors")  # pydantic's, with its first problem
            self.last = first_error(message) if readable else describe(message)

    def since(self, heard: int) -> str:
        """A note on the lines it could not read after the first `heard`; empty if none."""
        if self.count <= heard:
            return ""
        return (
            f"; meanwhile it wrote {self.count - heard} line(s) that are not JSON-RPC, and an "
            f"answer written so is dropped unread (the last: {self.last})"
        )


def _text_of(content: list[Any]) -> tuple[str, str]:
    """A result's text (its text blocks and embedded text resources), and a note naming the
    blocks that are not text and were left out (empty when none were)."""
    texts, others = [], []
    for block in content:
        inner = getattr(block, "resource", None)
        embedded = getattr(inner, "text", None)
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "resource" and isinstance(embedded, str):
            texts.append(embedded)
        else:
            kind = getattr(block, "mime_type", None) or getattr(inner, "mime_type", None)
            others.append(f"{block.type} ({kind})" if kind else block.type)
    return "\n".join(texts), f"[left out, not text: {', '.join(others)}]" if others else ""


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _checker(tool: str, argument: str, schema: Any) -> Callable[[Any], Any]:
    """Check an argument's JSON type where its schema names one; the server checks the rest."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    kinds = [k for k in kinds if isinstance(k, str)]  # a hostile schema may put anything there
    accepted = tuple(t for k in kinds if k in _JSON_TYPES for t in _JSON_TYPES[k])

    def check(value: Any) -> Any:
        wrong_bool = isinstance(value, bool) and "boolean" not in kinds
        if accepted and (wrong_bool or not isinstance(value, accepted)):
            raise InvalidToolCall(tool, f"{argument} must be {' or '.join(kinds)}, got {value!r}")
        return value

    return check


def lost_answer(exc: Any) -> bool:
    """Whether an MCP error means the answer was lost, not that the server answered no.

    The SDK reports a closed connection and a timeout as errors with JSON-RPC codes -32000
    and -32001, which a server may also send as its own answer ("server error" is the range
    -32000 to -32099). Only the SDK's own words, with no data, are a lost answer: a server's
    error is an answer, and the model reads it."""
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    local = {
        CONNECTION_CLOSED: "Connection closed",
        REQUEST_TIMEOUT: "Request 'tools/call' timed out",
    }
    return exc.data is None and local.get(exc.code) == exc.message


def bounded(value: Any, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters: a hostile server's value, in a message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def describe(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {message}"


def first_error(exc: Any) -> str:
    """A pydantic validation error in one line: its first problem, where, and the value."""
    first, loc = exc.errors()[0], exc.errors()[0]["loc"]
    cut = next((i for i, p in enumerate(loc) if str(p)[:1].isupper()), len(loc))  # a union's
    what = first["msg"] if cut == len(loc) else "none of the forms MCP allows there fits"
    where = ".".join(map(str, loc[:cut]))
    return f"{where + ': ' if where else ''}{what}, got {bounded(first.get('input'))}"
