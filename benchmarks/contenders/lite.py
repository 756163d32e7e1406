"""synaptum_lite on SQLite: the workload as our agent, our test double and our checkpointer."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import zlib

from benchmarks.workload import Workload, sqlite_bytes
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


stored_bytes = sqlite_bytes


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def resume_floor(store: str) -> float:
    """Seconds of the least work our journal's format asks of any resume of run `r` before its
    first new call: read its events from the file, unpack and decode each, and chain the hash
    of each message of the context they make (its canonical JSON), as the journal's
    fingerprints do. No object, no check, no generator: the floor our resume runs above."""
    started = time.perf_counter()
    connection = sqlite3.connect(store)
    try:
        chain = hashlib.sha256(b"synaptum-context-1")
        query = "SELECT step_id, phase, data FROM events WHERE run_id = 'r' ORDER BY seq"
        for step, phase, data in connection.execute(query):
            if phase != "completed":
                continue
            if isinstance(data, bytes):
                data = zlib.decompress(data).decode()
            payload = json.loads(data)
            if step.endswith("-model"):
                message = {"role": "assistant", "content": payload.get("text")}
                if payload.get("calls"):
                    message["tool_calls"] = payload["calls"]
            else:
                message = {"role": "tool", "content": payload["content"], "tool_call_id": step}
            chain.update(hashlib.sha256(_CANONICAL.encode(message).encode()).digest())
        chain.hexdigest()
    finally:
        connection.close()
    return time.perf_counter() - started
