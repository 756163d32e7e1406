"""The context window, derived: the same recorded results in the same order give the same bytes.

The context is never stored. The loop rebuilds it from the task and each step's recorded
result, on the first pass and on every resume alike, so a resumed model call sees exactly
what the first pass would have sent (the journal's fingerprints verify it).
"""

from __future__ import annotations

from .messages import ContextDigest, Message, ModelResponse, Role, ToolCall, ToolResult, ToolSpec

TRUNCATION_NOTE = "\n[… {omitted} characters omitted]"


class Context:
    """The messages of one run, appended to in step order.

    `max_tool_output` caps each tool result where it enters the context (the journal keeps
    the whole result); the cap is part of the agent's configuration, so a resume caps alike.
    """

    def __init__(self, instructions: str, task: str, *, max_tool_output: int | None = None) -> None:
        self.max_tool_output = max_tool_output
        self.messages: list[Message] = []
        self._digest = ContextDigest()
        self._add(Message(Role.SYSTEM, instructions))
        self._add(Message(Role.USER, task))

    def add_response(self, response: ModelResponse) -> None:
        self._add(Message(Role.ASSISTANT, response.text, tool_calls=response.tool_calls))

    def add_result(self, call: ToolCall, result: ToolResult) -> None:
        self._add(
            Message(
                Role.TOOL, self.cap(result.content), tool_call_id=call.id, is_error=result.is_error
            )
        )

    def add_feedback(self, text: str) -> None:
        """Tell the model something about its last answer (an invalid typed output, say)."""
        self._add(Message(Role.USER, text))

    def fingerprint(self, model: str, tools: tuple[ToolSpec, ...]) -> str:
        """The fingerprint of a request made of this context (`ModelRequest.fingerprint`)."""
        return self._digest.fingerprint(model, tools)

    def _add(self, message: Message) -> None:
        self.messages.append(message)
        self._digest.add(message)

    def cap(self, content: str) -> str:
        limit = self.max_tool_output
        if limit is None or len(content) <= limit:
            return content
        return content[:limit] + TRUNCATION_NOTE.format(omitted=len(content) - limit)
