"""Upstream Synaptum (PyPI `synaptum`, the framework of the seed page) on its SQLite
checkpointer: the same workload through its own `Agent`, `Session`, `SqliteCheckpointer`,
`FakeGateway` and `@tool`. Runs in a Python 3.13 environment of its own (`benchmarks.anchors`).
"""

from __future__ import annotations

from synaptum import (
    Agent,
    Limits,
    Message,
    Response,
    Role,
    Session,
    SqliteCheckpointer,
    Text,
    ToolCall,
    tool,
)
from synaptum.core.types import FinishReason
from synaptum.testing import DEFAULT_USAGE, FakeGateway, says

from benchmarks.workload import Workload, sqlite_bytes


def build(work: Workload) -> tuple[Agent, FakeGateway]:
    """The same agent as ours: one read-only idempotent tool, a responder answering from the
    context (it counts the tool results it was shown)."""

    @tool(idempotent=True)
    def leer(n: int) -> str:
        """Devuelve 1 KB."""
        return work.result(n)

    def responder(request):
        text, argument = work.answer(sum(m.role is Role.TOOL for m in request.messages))
        if argument is None:
            return says(text)
        # upstream's `calls` carries no text: the same answer, written out
        call = ToolCall(id=f"call-{argument}", name="leer", arguments={"n": argument})
        return Response(
            message=Message(Role.ASSISTANT, (Text(text), call)),
            finish_reason=FinishReason.TOOL_CALLS,
            usage=DEFAULT_USAGE,
            model="fake",
        )

    agent = Agent(
        "bench",
        model="stub",
        instructions="bench",
        tools=[leer],
        limits=Limits(max_steps=work.n + 1),
    )
    return agent, FakeGateway(*[responder] * (work.n + 1), tools=[leer])


async def open(store: str) -> SqliteCheckpointer:
    checkpointer = SqliteCheckpointer(store)  # connects and creates its table here
    await checkpointer.load("warm-up")
    return checkpointer


async def drive(checkpointer: SqliteCheckpointer, work: Workload) -> int:
    agent, gateway = build(work)
    steps = 0
    async for _ in agent.run("go", session=Session("r", gateway, checkpointer)):
        steps += 1
    return steps


async def close(checkpointer: SqliteCheckpointer) -> None:
    checkpointer.close()


stored_bytes = sqlite_bytes
