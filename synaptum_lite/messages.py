"""The model vocabulary: roles, messages, tool calls, requests, responses and usage.

Everything here is an immutable value with a stable JSON form (`to_json` / `from_json`),
because the journal stores what each step adds and re-derives the rest.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError
from .prompt import Sampling


class Role(enum.Enum):
    """Who wrote a message in the context window."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run one tool with JSON arguments.

    `id` is the provider's identifier for the call; it is recorded with the response, so a
    replay re-derives the same id. `arguments` is the decoded JSON object, or the model's raw
    text when it could not be decoded: the loop then answers the model with the error instead
    of running the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any] | str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        return cls(id=data["id"], name=data["name"], arguments=data["arguments"])


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool step returned to the model: text, and whether it is an error report."""

    content: str
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"content": self.content}
        if self.is_error:
            data["is_error"] = True
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolResult:
        return cls(content=data["content"], is_error=data.get("is_error", False))


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the context window.

    Invariants: only `Role.ASSISTANT` messages carry `tool_calls`; only `Role.TOOL` messages
    carry `tool_call_id` (the id of the call they answer).
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role.value, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_json() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.is_error:
            data["is_error"] = True
        return data


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call. `None` means *not measured*, which is not zero.

    Adding usages keeps that distinction: a sum with an unmeasured counter is unmeasured.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=_add(self.input_tokens, other.input_tokens),
            output_tokens=_add(self.output_tokens, other.output_tokens),
            cached_tokens=_add(self.cached_tokens, other.cached_tokens),
        )

    @property
    def measured(self) -> bool:
        """Whether at least one counter was reported."""
        return any(
            v is not None for v in (self.input_tokens, self.output_tokens, self.cached_tokens)
        )

    def to_json(self) -> dict[str, int]:
        return {
            key: value
            for key, value in (
                ("in", self.input_tokens),
                ("out", self.output_tokens),
                ("cached", self.cached_tokens),
            )
            if value is not None
        }

    @classmethod
    def from_json(cls, data: dict[str, int]) -> Usage:
        return cls(data.get("in"), data.get("out"), data.get("cached"))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How a tool is described to the model: name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call sees. Never stored: re-derived from the journal on resume."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    sampling: Sampling | None = None  # in the configuration a resume checks, not in the hash

    def fingerprint(self) -> str:
        """A short stable hash of the request, journaled to verify re-derivation.

        Equal to what a `ContextDigest` fed the same messages computes incrementally.
        """
        digest = ContextDigest()
        for message in self.messages:
            digest.add(message)
        return digest.fingerprint(self.model, self.tools)


# one encoder for every canonical form: `json.dumps` with options builds a new one per call
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _canonical(value: Any) -> bytes:
    return _CANONICAL.encode(value).encode()


class ContextDigest:
    """A running hash of a context's messages: each message is hashed once, when added.

    A request's fingerprint chains the messages' hashes and then the model and the tools, so
    fingerprinting turn n costs O(what turn n added), not O(the whole context).
    """

    def __init__(self) -> None:
        self._chain = hashlib.sha256(b"synaptum-context-1")
        self._tools: tuple[tuple[ToolSpec, ...], bytes] | None = None

    def add(self, message: Message) -> None:
        self._chain.update(hashlib.sha256(_canonical(message.to_json())).digest())

    def fingerprint(self, model: str, tools: tuple[ToolSpec, ...]) -> str:
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (
                tools,
                _canonical({"model": model, "tools": [t.to_json() for t in tools]}),
            )
        chain = self._chain.copy()
        chain.update(model.encode() + b"\0" + self._tools[1])
        return chain.hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What one model call returned: text, tool calls, or both; and its usage."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.text is not None:
            data["text"] = self.text
        if self.tool_calls:
            data["calls"] = [call.to_json() for call in self.tool_calls]
        usage = self.usage.to_json()
        if usage:
            data["usage"] = usage
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelResponse:
        return cls(
            text=data.get("text"),
            tool_calls=tuple([ToolCall.from_json(c) for c in data.get("calls", ())]),
            usage=Usage.from_json(data.get("usage", {})),
        )


# ── what a journal can keep ─────────────────────────────────────────────────────────────────
#
# A journal stores JSON as UTF-8. Two things a Python value can hold have no form there: a
# surrogate code point (U+D800-U+DFFF, half of a UTF-16 pair, which a JSON decoder returns for
# an escaped `"\ud83d"` standing alone) and a float that is NaN or infinite (which Python's
# `json.loads` accepts as `NaN`/`Infinity`). Model answers arrive with them from servers; the
# loop makes every answer journalable before it records it, so a paid answer is never lost.
# Text from the library's caller is refused instead, by `check_text`, before anything is run.

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_OR_NUL = re.compile("[\0\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def lone_surrogate(text: str) -> int | None:
    """The index of the first surrogate code point in `text`, or None when it holds none.

    A `str` holding one cannot be encoded as UTF-8, so no store can keep it.
    """
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def text_problem(text: str, *, nul: bool = False) -> str | None:
    """Why a journal cannot keep `text`, or None: its first surrogate code point, or with `nul`
    its first NUL (PostgreSQL's text has none), named with its index. Every refusal of text
    (`check_text`, an event's stored form, a tool's result) says it in these words."""
    found = (_SURROGATE_OR_NUL if nul else _SURROGATE).search(text)
    if found is None:
        return None
    why = (
        "a NUL character, which PostgreSQL's text cannot hold"
        if found.group() == "\0"
        else "half of a surrogate pair and not a character, which UTF-8 has no form for"
    )
    return f"it holds {found.group()!r} at index {found.start()}, {why}"


def check_text(what: str, value: str, *, nul: bool = False) -> str:
    """`value`, when a journal can keep it (see `text_problem`); else `ConfigurationError`
    naming `what`, the character and its index, and what to pass instead."""
    problem = text_problem(value, nul=nul)
    if problem is not None:
        remedy = (
            "leave NUL characters out"
            if "NUL" in problem
            else "join a split surrogate pair, or put U+FFFD in its place"
        )
        raise ConfigurationError(
            f"{what} cannot be journaled: {problem}; nothing was run or written: {remedy}"
        )
    return value


def without_surrogates(text: str) -> str:
    """`text` with each surrogate code point replaced by U+FFFD, as a UTF-8 decoder does."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def joined_surrogate_pairs(text: str) -> str:
    """`text` with each high+low surrogate pair joined into the character it encodes.

    Lone surrogates stay as they are. A pair arrives split when a server escapes a character
    outside the BMP as two `\\u` escapes and sends them in two pieces.
    """
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def journalable(response: ModelResponse) -> ModelResponse:
    """The response as a journal can keep it; the same object when it already can.

    Text (and a call's name or id) holding a surrogate code point gets U+FFFD in its place.
    Arguments that are not strict JSON (NaN, Infinity, a surrogate, a value JSON has no form
    for) become the raw JSON text of what the model sent, surrogates escaped: the loop then
    answers the model with an error it can act on instead of running the tool.
    """
    text = without_surrogates(response.text) if response.text is not None else None
    calls = tuple(_journalable_call(call) for call in response.tool_calls)
    same_calls = all(a is b for a, b in zip(calls, response.tool_calls, strict=True))
    if text == response.text and same_calls:
        return response
    return dataclasses.replace(response, text=text, tool_calls=calls)


def _journalable_call(call: ToolCall) -> ToolCall:
    arguments = call.arguments
    if not isinstance(arguments, str):
        try:
            strict = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            strict = None
        if strict is None or _SURROGATE.search(strict):
            arguments = json.dumps(arguments, ensure_ascii=False, default=repr)
    if isinstance(arguments, str):
        arguments = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", arguments)
    name, identifier = without_surrogates(call.name), without_surrogates(call.id)
    if (identifier, name, arguments) == (call.id, call.name, call.arguments):
        return call
    return ToolCall(identifier, name, arguments)
