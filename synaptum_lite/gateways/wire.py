"""The OpenAI chat-completions message format, read and written for both model gateways.

Pure functions of the wire format: no network. `http` sends it over httpx; `axonium` passes it
to the Axonium SDK, which speaks the same format. Server-sent events are read by `sse`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    Usage,
    joined_surrogate_pairs,
)
from .sse import SseLines as SseLines
from .sse import looks_like_sse as looks_like_sse
from .sse import sse_data as sse_data


def request_body(request: ModelRequest, model: str | None) -> dict[str, Any]:
    """The body of a chat-completions request (`model` when the request names none)."""
    body: dict[str, Any] = {
        "model": request.model or model or "",
        "messages": [message_to_wire(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [{"type": "function", "function": t.to_json()} for t in request.tools]
    if request.sampling is not None:
        body.update(request.sampling.to_json())
    return body


def message_to_wire(message: Message) -> dict[str, Any]:
    """A context message in the OpenAI chat format."""
    wire: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.role is Role.ASSISTANT and message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_to_wire(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.role is Role.TOOL:
        wire["tool_call_id"] = message.tool_call_id
    return wire


def _arguments_to_wire(arguments: Any) -> str:
    # Unreadable arguments were kept as the model's raw text: send back exactly what it wrote.
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


class MalformedAnswer(ValueError):
    """A model server's answer that is not the chat-completions format, at `where`.

    Raised by this module's readers and turned into a `ProviderError` by the gateway that
    called them (which knows the server and how to word it); it never escapes a gateway.
    """

    def __init__(self, where: str, value: Any) -> None:
        self.where = where
        self.value = value
        super().__init__(f"{where}: {value!r}")


#: How deep a tool call's arguments may nest. Real arguments nest a few levels; a journal,
#: a context hash and a replay walk the value recursively, so a deeper one (a hostile server's
#: `[[[[...`) would fail after it was paid for, on every resume.
MAX_ARGUMENT_DEPTH = 100

#: The largest token count read as a measurement (2**53 - 1, the largest integer every JSON
#: reader keeps exact). A count that is negative, fractional, not a number or larger than
#: this is not a measurement: it is kept as not measured (`None`), never summed.
MAX_TOKEN_COUNT = 2**53 - 1


def completion_from_wire(body: Any) -> ModelResponse:
    """A chat-completions body as a `ModelResponse`.

    Raises `MalformedAnswer` naming the first part that is not the format: no choices, a
    message that is not an object, content that is not text, tool calls that are not objects.
    What the model got wrong inside a well-formed call (an unknown or missing tool name,
    arguments that are not a JSON object) is not raised: the loop tells the model.
    """
    if not isinstance(body, dict):
        raise MalformedAnswer("a body that is not a JSON object", body)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedAnswer("no choices (choices missing, empty or not a list)", choices)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedAnswer("choices[0].message that is not an object", message)
    text = _text(message.get("content"), "choices[0].message.content")
    raw_calls = message.get("tool_calls")
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, list):
        raise MalformedAnswer("choices[0].message.tool_calls that is not a list", raw_calls)
    calls = []
    for index, raw in enumerate(raw_calls):
        where = f"choices[0].message.tool_calls[{index}]"
        if not isinstance(raw, dict):
            raise MalformedAnswer(f"{where} that is not an object", raw)
        function = raw.get("function")
        if not isinstance(function, dict):
            raise MalformedAnswer(f"{where}.function that is not an object", function)
        calls.append(tool_call_from_wire(index, raw.get("id"), function))
    return ModelResponse(
        text=text, tool_calls=with_unique_ids(calls), usage=usage_from_wire(body.get("usage"))
    )


def _text(content: Any, where: str) -> str | None:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None or isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        raise MalformedAnswer(f"{where} that is neither text nor a list of parts", content)
    pieces = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            raise MalformedAnswer(f"{where}[{index}] that is not a content part", part)
        if kind == "text":  # other parts (a model's reasoning, say) are not its answer
            if not isinstance(part.get("text"), str):
                raise MalformedAnswer(f"{where}[{index}].text that is not text", part.get("text"))
            pieces.append(part["text"])
    return "".join(pieces) or None


def tool_call_from_wire(index: int, call_id: Any, function: Mapping[str, Any]) -> ToolCall:
    """A wire tool call as a `ToolCall`; arguments that are not JSON stay the raw text.

    Arguments that are JSON but a string (`"ES91"`) also stay the raw text, quotes and all,
    so the model is told what it sent. Raises `MalformedAnswer` for a name that is not text
    and for arguments nested deeper than `MAX_ARGUMENT_DEPTH`.
    """
    name = function.get("name")
    if name is not None and not isinstance(name, str):
        raise MalformedAnswer(f"tool call {index}'s function name that is not text", name)
    raw = function.get("arguments")
    arguments: Any
    if isinstance(raw, dict):
        arguments = raw  # some servers send the object itself
    elif raw is None or (isinstance(raw, str) and not raw.strip()):
        arguments = {}
    else:
        try:  # strict JSON: NaN and Infinity are not, and a journal could not keep them
            arguments = json.loads(raw, parse_constant=_not_json)
        except RecursionError:
            raise MalformedAnswer(
                f"tool call {index}'s arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels",
                raw,
            ) from None
        except (TypeError, ValueError):
            arguments = raw if isinstance(raw, str) else repr(raw)
        if isinstance(arguments, str) and isinstance(raw, str):
            arguments = raw  # a JSON string is not an object: keep what the model wrote
    if _depth(arguments) > MAX_ARGUMENT_DEPTH:
        raise MalformedAnswer(
            f"tool call {index}'s arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels", raw
        )
    # A server that omits the id gets a positional one, so a replay derives the same.
    identifier = call_id if isinstance(call_id, str) and call_id else f"call_{index}"
    return ToolCall(id=identifier, name=name or "", arguments=arguments)


def with_unique_ids(calls: list[ToolCall]) -> tuple[ToolCall, ...]:
    """`calls`, a repeated id made unique (`call_a`, `call_a_1`): each result must answer one call.

    A server that gives two calls one id would otherwise get two results it cannot tell apart.
    The ids are journaled with the response, so a replay sends the same ones.
    """
    seen: set[str] = set()
    unique = []
    for index, call in enumerate(calls):
        identifier = call.id
        while identifier in seen:
            identifier = f"{call.id}_{index}" if identifier == call.id else identifier + "_"
        seen.add(identifier)
        unique.append(
            call if identifier == call.id else ToolCall(identifier, call.name, call.arguments)
        )
    return tuple(unique)


def _depth(value: Any) -> int:
    """How deep `value` nests lists and objects (0 for a scalar), counted without recursion."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict | list):
            level += 1
            deepest = max(deepest, level)
            if level > MAX_ARGUMENT_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, level) for child in children)
    return deepest


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def usage_from_wire(raw: Any) -> Usage:
    """OpenAI usage as `Usage`; a counter the server does not report stays `None`.

    So does a counter that is not a count (see `MAX_TOKEN_COUNT`): a negative, fractional,
    textual or absurd number would make every sum it enters wrong.
    """
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("prompt_tokens_details")
    input_tokens = token_count(raw.get("prompt_tokens"))
    cached = token_count(details.get("cached_tokens") if isinstance(details, dict) else None)
    if cached is not None and input_tokens is not None and cached > input_tokens:
        cached = None  # the cached tokens are part of the input: more is not a measurement
    return Usage(
        input_tokens=input_tokens,
        output_tokens=token_count(raw.get("completion_tokens")),
        cached_tokens=cached,
    )


def token_count(value: Any) -> int | None:
    """`value` as a token count, or `None` when it is not one (see `MAX_TOKEN_COUNT`)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one kind of number: 31.0 is 31
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKEN_COUNT else None


@dataclass
class StreamAssembly:
    """What the chunks of one streamed completion add up to."""

    text: list[str] = field(default_factory=list)
    held: str = ""  # a high surrogate whose low half may come in the next event
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finished: bool = False
    done: bool = False

    @property
    def complete(self) -> bool:
        return self.finished or self.done

    def feed(self, event: dict[str, Any]) -> str | None:
        """Absorb one chunk; return its text fragment, if it carries one.

        Raises `MalformedAnswer` for a chunk that is not the format (choices that are not a
        list of objects, a delta that is not an object, a tool-call piece that is not one).
        """
        if isinstance(event.get("usage"), dict):
            self.usage = usage_from_wire(event["usage"])
        choices = event.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise MalformedAnswer("an SSE event whose choices is not a list", choices)
        fragment = None
        for choice in choices:
            if not isinstance(choice, dict):
                raise MalformedAnswer("an SSE event with a choice that is not an object", choice)
            if choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finished = True
            delta = choice.get("delta")
            if delta is None:
                delta = {}
            if not isinstance(delta, dict):
                raise MalformedAnswer("an SSE event whose delta is not an object", delta)
            content = _text(delta.get("content"), "an SSE event's delta.content")
            if content:
                # a character outside the BMP may arrive as two \\u escapes in two events
                content = joined_surrogate_pairs(self.held + content)
                self.held = content[-1] if "\ud800" <= content[-1] <= "\udbff" else ""
                content = content[: len(content) - len(self.held)]
                if content:
                    self.text.append(content)
                    fragment = content
            pieces = delta.get("tool_calls")
            if pieces is None:
                pieces = []
            if not isinstance(pieces, list):
                raise MalformedAnswer("an SSE event whose delta.tool_calls is not a list", pieces)
            for piece in pieces:
                self._absorb(piece)
        return fragment

    def _absorb(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            raise MalformedAnswer(
                "an SSE event with a tool-call piece that is not an object", piece
            )
        function = piece.get("function")
        if function is None:
            function = {}
        if not isinstance(function, dict):
            raise MalformedAnswer(
                "an SSE event with a tool call whose function is not an object", function
            )
        name, arguments = function.get("name"), function.get("arguments")
        if name is not None and not isinstance(name, str):
            raise MalformedAnswer("an SSE event with a tool-call name that is not text", name)
        if isinstance(arguments, dict):  # some servers send the object itself, whole
            arguments = json.dumps(arguments, ensure_ascii=False)
        if arguments is not None and not isinstance(arguments, str):
            raise MalformedAnswer(
                "an SSE event with tool-call arguments that are not text", arguments
            )
        index = piece.get("index")
        call = self.calls.setdefault(
            index if isinstance(index, int) else 0, {"id": None, "name": "", "arguments": ""}
        )
        if piece.get("id") and not call["id"]:
            call["id"] = piece["id"]
        if name:
            call["name"] += name
        if arguments:
            call["arguments"] += arguments

    def response(self) -> ModelResponse:
        """The whole answer. Raises `MalformedAnswer` as `tool_call_from_wire` does."""
        calls = [
            tool_call_from_wire(
                position,
                call["id"],
                {**call, "arguments": joined_surrogate_pairs(call["arguments"])},
            )
            for position, (_, call) in enumerate(sorted(self.calls.items()))
        ]
        text = "".join(self.text) + self.held
        return ModelResponse(text=text or None, tool_calls=with_unique_ids(calls), usage=self.usage)
