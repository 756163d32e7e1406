"""The test double: a gateway that answers from a script and runs tools for real.

The same double serves tests, notebooks and docs. A script is a list of items, used in
order, one per model call: a `ModelResponse` (`says`, `calls`), a *responder* (a callable that
receives the `ModelRequest` and returns a response, so it can answer from the context as a
model would), or an exception instance to raise (a `ProviderError`, say).

Usage is measured deterministically: about one token per four characters of what was sent
and what was answered; cached tokens are not measured.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any

from .errors import ConfigurationError
from .gateway import LocalGateway
from .messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from .policy import Policy, allow_everything
from .tools import Tool

ScriptItem = ModelResponse | Callable[[ModelRequest], ModelResponse] | BaseException

__all__ = ["ScriptedGateway", "says", "calls"]


def says(text: str) -> ModelResponse:
    """A model answer made of text only (a final answer)."""
    return ModelResponse(text=text)


def calls(tool: str, /, text: str | None = None, **arguments: Any) -> ModelResponse:
    """A model answer that calls `tool` with `arguments` (and optionally says `text` too)."""
    return ModelResponse(text=text, tool_calls=(ToolCall(id="", name=tool, arguments=arguments),))


class ScriptedGateway(LocalGateway):
    """The double. Counts `model_calls`, `tool_calls`, streamed `chunks_emitted`, and whether
    a consumer closed a stream before its end (`stream_closed`).
    """

    def __init__(
        self,
        script: Sequence[ScriptItem],
        *,
        tools: Iterable[Tool] | None = None,
        policy: Policy = allow_everything,
        chunk_size: int = 8,
    ) -> None:
        super().__init__(tools=tools, policy=policy)
        if chunk_size < 1:
            raise ConfigurationError(f"chunk_size must be at least 1, got {chunk_size}")
        self.script = list(script)
        self.chunk_size = chunk_size
        self.chunks_emitted = 0
        self.stream_closed = False
        self.requests: list[ModelRequest] = []
        self._measured: tuple[Message | None, int, int] = (
            None,
            0,
            0,
        )  # last message, count, characters

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        position = self.model_calls - 1
        if position >= len(self.script):
            raise ConfigurationError(
                f"the script has {len(self.script)} answer(s) and the model was called "
                f"{self.model_calls} times; add answers (or a responder) to the script"
            )
        item = self.script[position]
        if isinstance(item, BaseException):
            raise item
        response = item(request) if callable(item) else item
        if not isinstance(response, ModelResponse):
            raise ConfigurationError(
                f"script item {position} returned {response!r}; "
                "a responder returns says(...) or calls(...)"
            )
        return self._complete_response(response, request)

    def _complete_response(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        """Give scripted tool calls deterministic ids and the answer a measured usage."""
        position = len(request.messages)
        tool_calls = tuple(
            call if call.id else ToolCall(f"call_{position}_{index}", call.name, call.arguments)
            for index, call in enumerate(response.tool_calls)
        )
        answered = len(response.text or "") + sum(len(str(c.arguments)) for c in tool_calls)
        usage = (
            response.usage
            if response.usage.measured
            else Usage(_tokens(self._sent(request)), _tokens(answered))
        )
        return ModelResponse(text=response.text, tool_calls=tool_calls, usage=usage)

    def _sent(self, request: ModelRequest) -> int:
        """Characters sent, counting only the messages added since the previous request."""
        last, count, characters = self._measured
        messages = request.messages
        if not (0 < count <= len(messages) and messages[count - 1] is last):
            count, characters = 0, 0
        characters += sum(_characters(m) for m in messages[count:])
        self._measured = (messages[-1] if messages else None, len(messages), characters)
        return characters

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        response = await self._complete(request)
        text = response.text or ""
        finished = False
        try:
            for start in range(0, len(text), self.chunk_size):
                self.chunks_emitted += 1
                yield text[start : start + self.chunk_size]
            finished = True
            yield response
        finally:
            if not finished:
                self.stream_closed = True


def _characters(message: Message) -> int:
    return len(message.content or "") + sum(len(str(c.arguments)) for c in message.tool_calls)


def _tokens(characters: int) -> int:
    return max(1, math.ceil(characters / 4))
