"""synaptum_lite on SQLite: the workload as our agent, our test double and our checkpointer."""

from __future__ import annotations

from pathlib import Path

from benchmarks.workload import Workload
from synaptum_lite import Agent, Risk, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says


def build(work: Workload) -> tuple[Agent, ScriptedGateway]:
    """Our agent for the workload: a read-only idempotent tool and a responder that answers
    from the context (system, task, then an answer and a result per turn)."""

    @tool(risk=Risk.READ, idempotent=True)
    def leer(n: int) -> str:
        """Devuelve 1 KB."""
        return work.result(n)

    def responder(request):
        text, argument = work.answer((len(request.messages) - 2) // 2)
        return says(text) if argument is None else calls("leer", text=text, n=argument)

    agent = Agent("bench", model="stub", instructions="bench", tools=[leer], max_steps=work.n + 1)
    return agent, ScriptedGateway([responder] * (work.n + 1))


async def open(store: str) -> SqliteCheckpointer:
    checkpointer = SqliteCheckpointer(store)
    await checkpointer.load("warm-up")  # the file opened and its schema read
    return checkpointer


async def drive(checkpointer: SqliteCheckpointer, work: Workload) -> int:
    agent, gateway = build(work)
    steps = 0
    async for _ in agent.run("go", session=Session("r", gateway, checkpointer)):
        steps += 1
    return steps


async def close(checkpointer: SqliteCheckpointer) -> None:
    await checkpointer.close()


def stored_bytes(store: str) -> int:
    """The journal file and its write-ahead log, if one is left (the lock file holds nothing)."""
    return sum(p.stat().st_size for p in (Path(store), Path(store + "-wal")) if p.exists())
