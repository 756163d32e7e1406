"""The gateway seam: where model calls and tool calls leave the loop.

A gateway answers model requests and runs tools. `LocalGateway` runs tools in this process
and counts what passes through it; a model-backed gateway (the test double, the HTTP model)
subclasses it and implements `_complete` (and `_stream`, when it can stream).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Iterable
from typing import Any, Protocol, runtime_checkable

from .errors import ConfigurationError
from .messages import ModelRequest, ModelResponse
from .policy import Policy, Proposal, Verdict, allow_everything
from .tools import Tool, ToolContext


@runtime_checkable
class Gateway(Protocol):
    """Where model and tool calls exit. `model_calls` counts the calls that reached a model."""

    model_calls: int

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one model request. Raises `ProviderError` when the provider fails.

        The loop retries a failed call with the same `request` object, so a gateway can tell
        the attempts of one call apart from a new call (the HTTP gateway's `deadline` does).
        """
        ...

    def stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        """Answer one model request as text fragments, then exactly one `ModelResponse`.

        Closing the iterator (`aclose()`) stops the generation upstream.
        """
        ...

    async def call_tool(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
        """Run `tool` with validated arguments; whatever it raises propagates."""
        ...

    def review(self, proposal: Proposal) -> Verdict:
        """Decide whether a call may leave (see `synaptum_lite.policy`)."""
        ...


class LocalGateway:
    """Runs tools in this process. Subclasses bring the model (`_complete`, `_stream`).

    `tools`, when given, is the set this gateway lets run: a call to any other tool raises
    `ConfigurationError` (the agent declares a tool this gateway was not given). `policy`
    reviews every call before it leaves; by default everything is allowed.
    """

    def __init__(
        self, *, tools: Iterable[Tool] | None = None, policy: Policy = allow_everything
    ) -> None:
        self.tools = None if tools is None else {t.name: t for t in tools}
        self.policy = policy
        self.model_calls = 0
        self.tool_calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.model_calls += 1
        return await self._complete(request)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        self.model_calls += 1
        # closing this stream closes the provider's at once, not when it is garbage collected
        async with contextlib.aclosing(self._stream(request)) as upstream:
            async for item in upstream:
                yield item

    async def call_tool(self, tool: Tool, arguments: dict[str, Any], context: ToolContext) -> Any:
        if self.tools is not None and self.tools.get(tool.name) is not tool:
            raise ConfigurationError(
                f"tool {tool.name!r} is not registered on this gateway "
                f"(it has: {', '.join(sorted(self.tools)) or 'none'}); pass it in tools=[...]"
            )
        self.tool_calls += 1
        return await tool.invoke(arguments, context)

    def review(self, proposal: Proposal) -> Verdict:
        verdict = self.policy(proposal)
        if not isinstance(verdict, Verdict):
            raise ConfigurationError(
                f"a policy must return a Verdict, {self.policy!r} returned {verdict!r}"
            )
        return verdict

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError(f"{type(self).__name__} has no model; use a model-backed gateway")

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[str | ModelResponse, None]:
        """Default streaming: the whole text as one fragment, then the response."""
        response = await self._complete(request)
        if response.text:
            yield response.text
        yield response
