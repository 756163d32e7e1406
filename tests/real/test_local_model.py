"""The runtime's promises on a real model: llama-server with Qwen2.5-Coder-0.5B, on this machine.

Runs only when `SYNAPTUM_LOCAL_MODEL_URL` names a running server (`.ci/run` starts one with
`scripts/modelo_local.py start`); a separate variable from `SYNAPTUM_BASE_URL`, so the rest of
the suite, the notebooks' check included, keeps running on the scripted double.

What depends on the model (its wording, whether it cooperates) is printed, never asserted;
what the runtime promises (no effect twice, no turn paid twice, a closed run answers from the
journal) is asserted whatever the model says.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from synaptum_lite import (  # noqa: E402
    Agent,
    FinalStep,
    Message,
    ModelRequest,
    Role,
    Session,
    SqliteCheckpointer,
    ToolStep,
    tool,
)
from synaptum_lite.gateways.http import OpenAICompatibleGateway  # noqa: E402
from tests.real import NO_SERVER  # noqa: E402

BASE_URL = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL")
pytestmark = pytest.mark.skipif(not BASE_URL, reason=NO_SERVER)

RUNS = {"consultar_saldo": 0}
INSTRUCTIONS = "Consultas saldos con la herramienta. Responde en español, en una frase."


def show(line: str) -> None:
    """What the model did, for the log (`pytest -s`, or on failure): shown, not asserted."""
    sys.stdout.write(line + "\n")


@tool
async def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    RUNS["consultar_saldo"] += 1
    return f"{cuenta}: 4.200,00 €"


#: Seconds a read may wait for the server: a bound on a hang only. The server has one slot,
#: the notebooks on the real model ask it at the same time, and on a busy machine a request
#: waited in its queue past the gateway's default (120 s) and failed with ReadTimeout.
HANG = 600.0


def model() -> OpenAICompatibleGateway:
    assert BASE_URL is not None
    return OpenAICompatibleGateway(BASE_URL, tools=[consultar_saldo], timeout=HANG)


def test_the_seed_run_resumes_on_the_real_model_without_paying_twice(tmp_path: Path) -> None:
    """The seed (notebook 02) on the real model: cut at the tool, resume, then ask a closed run."""
    RUNS["consultar_saldo"] = 0
    agent = Agent(
        "cajero",
        model="qwen2.5-coder-0.5b-instruct",
        instructions=INSTRUCTIONS,
        tools=[consultar_saldo],
    )
    task = "¿Cuánto hay en ES91 2100 0418 45?"
    store = tmp_path / "runs.db"

    async def round_(cut_at_tool: bool) -> tuple[OpenAICompatibleGateway, list[Any]]:
        gateway = model()
        steps = []
        session = Session("seed", gateway, SqliteCheckpointer(store))
        async for step in agent.run(task, session=session):
            steps.append(step)
            if cut_at_tool and isinstance(step, ToolStep) and step.phase.value == "completed":
                break  # the process dies here
        return gateway, steps

    first, steps = asyncio.run(round_(cut_at_tool=True))
    cooperated = any(isinstance(s, ToolStep) for s in steps)
    show(f"round 1: model ×{first.model_calls} · tool ×{RUNS['consultar_saldo']}")
    second, steps = asyncio.run(round_(cut_at_tool=False))
    final = steps[-1]
    show(f"round 2: model ×{second.model_calls} · tool ×{RUNS['consultar_saldo']}")
    show(f"the model said: {final.text!r}")
    third, steps = asyncio.run(round_(cut_at_tool=False))

    assert isinstance(final, FinalStep)
    assert RUNS["consultar_saldo"] == (1 if cooperated else 0)  # never twice
    if cooperated:  # the turn that asked for the tool was paid in round 1, once
        assert first.model_calls == 1 and second.model_calls >= 1
    assert third.model_calls == 0 and len(steps) == 1 and steps[0].text == final.text


def test_the_template_makes_the_server_return_tool_calls() -> None:
    """With the stock template this server returns no tool calls at all (0/12 measured)."""
    tasks = [
        "¿Cuánto hay en ES91 2100 0418 45?",
        "Dime el saldo de la cuenta ES12 0049 1500 0512 3456 7892.",
        "¿Qué saldo tiene ES76 2077 0024 0031 0257 5766?",
    ]

    async def ask(task: str) -> Any:
        request = ModelRequest(
            "qwen2.5-coder-0.5b-instruct",
            (
                Message(Role.SYSTEM, INSTRUCTIONS),
                Message(Role.USER, task),
            ),
            (consultar_saldo.spec,),
        )
        return await model().complete(request)

    responses = [asyncio.run(ask(task)) for task in tasks]
    for task, response in zip(tasks, responses, strict=True):
        show(f"{task!r} -> {response.tool_calls or response.text!r}")
    called = [r for r in responses if r.tool_calls]
    assert len(called) >= 2, "the server parsed almost no tool calls: is the template in use?"
    assert all(r.usage.input_tokens and r.usage.output_tokens for r in responses)


def test_closing_a_real_stream_stops_generation() -> None:
    request = ModelRequest(
        "qwen2.5-coder-0.5b-instruct",
        (Message(Role.USER, "Write a long story, two hundred lines, about a lighthouse."),),
    )
    log = Path(os.environ.get("SYNAPTUM_LOCAL_MODEL_LOG", "/nonexistent"))
    before = log.read_text(errors="replace").count("cancel task") if log.exists() else None

    async def three_fragments_then_close() -> list[Any]:
        upstream = model().stream(request)
        received = [await anext(upstream) for _ in range(3)]
        await upstream.aclose()
        return received

    received = asyncio.run(three_fragments_then_close())

    assert len(received) == 3 and all(isinstance(r, str) for r in received)
    if before is not None:  # the server says so in its log, when it notices: waited for
        assert _cancels_logged(log, more_than=before), (
            f"llama-server never logged «cancel task» in {log} after the stream was closed"
        )


def _cancels_logged(log: Path, *, more_than: int) -> bool:
    """Whether the server's log comes to hold more «cancel task» lines than `more_than`: read
    again until it does, for at most HANG seconds. On a busy machine the server notices a
    closed connection only at its next token, which can be seconds away (under eight CPU
    hogs, half a second was not enough)."""
    until = time.monotonic() + HANG
    while log.read_text(errors="replace").count("cancel task") <= more_than:
        if time.monotonic() > until:
            return False
        time.sleep(0.1)
    return True
