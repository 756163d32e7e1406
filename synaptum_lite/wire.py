"""The OpenAI chat-completions message format, read and written for both model gateways.

Pure functions of the wire format: no network. `http` sends it over httpx; `axonium` passes it
to the Axonium SDK, which speaks the same format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    Usage,
    joined_surrogate_pairs,
)


def request_body(request: ModelRequest, model: str | None) -> dict[str, Any]:
    """The body of a chat-completions request (`model` when the request names none)."""
    body: dict[str, Any] = {
        "model": request.model or model or "",
        "messages": [message_to_wire(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [{"type": "function", "function": t.to_json()} for t in request.tools]
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


def tool_call_from_wire(index: int, call_id: Any, function: Mapping[str, Any]) -> ToolCall:
    """A wire tool call as a `ToolCall`; arguments that are not JSON stay the raw text."""
    raw = function.get("arguments")
    arguments: Any
    if isinstance(raw, dict):
        arguments = raw  # some servers send the object itself
    elif raw is None or (isinstance(raw, str) and not raw.strip()):
        arguments = {}
    else:
        try:  # strict JSON: NaN and Infinity are not, and a journal could not keep them
            arguments = json.loads(raw, parse_constant=_not_json)
        except (TypeError, ValueError):
            arguments = raw if isinstance(raw, str) else repr(raw)
    # A server that omits the id gets a positional one, so a replay derives the same.
    identifier = call_id if isinstance(call_id, str) and call_id else f"call_{index}"
    return ToolCall(id=identifier, name=str(function.get("name") or ""), arguments=arguments)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def usage_from_wire(raw: Any) -> Usage:
    """OpenAI usage as `Usage`; a counter the server does not report stays `None`."""
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens")),
        output_tokens=_count(raw.get("completion_tokens")),
        cached_tokens=_count(cached),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
        """Absorb one chunk; return its text fragment, if it carries one."""
        if isinstance(event.get("usage"), dict):
            self.usage = usage_from_wire(event["usage"])
        fragment = None
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finished = True
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                # a character outside the BMP may arrive as two \\u escapes in two events
                content = joined_surrogate_pairs(self.held + content)
                self.held = content[-1] if "\ud800" <= content[-1] <= "\udbff" else ""
                content = content[: len(content) - len(self.held)]
                if content:
                    self.text.append(content)
                    fragment = content
            for piece in delta.get("tool_calls") or ():
                self._absorb(piece)
        return fragment

    def _absorb(self, piece: dict[str, Any]) -> None:
        index = piece.get("index")
        call = self.calls.setdefault(
            index if isinstance(index, int) else 0, {"id": None, "name": "", "arguments": ""}
        )
        if piece.get("id") and not call["id"]:
            call["id"] = piece["id"]
        function = piece.get("function") or {}
        if function.get("name"):
            call["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            call["arguments"] += function["arguments"]

    def response(self) -> ModelResponse:
        calls = tuple(
            tool_call_from_wire(
                position,
                call["id"],
                {**call, "arguments": joined_surrogate_pairs(call["arguments"])},
            )
            for position, (_, call) in enumerate(sorted(self.calls.items()))
        )
        text = "".join(self.text) + self.held
        return ModelResponse(text=text or None, tool_calls=calls, usage=self.usage)
