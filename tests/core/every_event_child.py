"""A child process for `test_every_event_is_on_disk`: it drives a run and, right after it
receives its N-th event, says which event that was and SIGKILLs itself.

    python -m tests.core.every_event_child STORE RUN_ID SCENARIO KILL_AT

Each event it receives is printed as one JSON line (`number`, `kind`, `step_id`, `phase`,
`attempt`, `tool`, `replayed`) before anything else happens, so the parent knows exactly what
the consumer had been handed when the process died. `KILL_AT` 0 runs to the end.

Scenarios, between them every kind of event the loop yields:
- `stream`: `Agent.stream` with model steps whose text arrives in fragments, an idempotent
  tool, a non-idempotent tool, a delegation to a sub-agent, and the final step;
- `approval`: a call that needs a person's approval (the run suspends; a person grants it in
  the same process; the run resumes), a call the policy denies, and the final step.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import UTC, datetime
from typing import Any

from synaptum_lite import (
    Agent,
    ApprovalStep,
    FinalStep,
    Role,
    Session,
    TextFragment,
    Verdict,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

from .agents import consultar_saldo, notificar, open_store, transferir

AUDITOR = "Revisa transferencias."
TASK = "Consulta ES91, transfiere 100 € a ES12 y pide al auditor que lo revise."


def _tool_results(request: Any) -> int:
    return sum(1 for message in request.messages if message.role is Role.TOOL)


def _stream_responder(request: Any) -> Any:
    if request.messages[0].content == AUDITOR:
        return says("Revisada: correcta.")
    plan = [
        calls("consultar_saldo", text="Primero miro el saldo.", cuenta="ES91"),
        calls(
            "transferir",
            text="Hay saldo: transfiero.",
            origen="ES91",
            destino="ES12",
            importe=100.0,
        ),
        calls("auditor", text="Lo reviso con el auditor.", task="Revisa la transferencia."),
    ]
    done = _tool_results(request)
    return plan[done] if done < len(plan) else says("Hecho: transferidos 100,00 € y revisado.")


def _approval_responder(request: Any) -> Any:
    plan = [
        calls("transferir", origen="ES91", destino="ES12", importe=100.0),
        calls("notificar", mensaje="hecho"),
    ]
    done = _tool_results(request)
    return plan[done] if done < len(plan) else says("Transferido; el aviso no se pudo enviar.")


def _policy(proposal: Any) -> Verdict:
    if proposal.tool == "transferir":
        return Verdict.require_approval("una transferencia necesita a una persona")
    if proposal.tool == "notificar":
        return Verdict.deny("hoy no se avisa a nadie")
    return Verdict.allow()


def _describe(number: int, event: Any) -> dict[str, Any]:
    if isinstance(event, TextFragment):
        return {"number": number, "kind": "text", "step_id": event.step_id}
    call = getattr(event, "call", None)
    return {
        "number": number,
        "kind": event.kind,
        "step_id": event.step_id,
        "phase": event.phase.value,
        "attempt": event.attempt,
        "tool": call.name if call is not None else None,
        "replayed": event.replayed,
    }


async def main(store: str, run_id: str, scenario: str, kill_at: int) -> None:
    checkpointer = open_store(store)
    received = 0

    async def consume(events: Any) -> ApprovalStep | None:
        nonlocal received
        pending = None
        async for event in events:
            received += 1
            print(json.dumps(_describe(received, event)), flush=True)
            if received == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if isinstance(event, ApprovalStep) and event.pending:
                pending = event
            if isinstance(event, FinalStep):
                print(json.dumps({"final": event.text}), flush=True)
        return pending

    if scenario == "stream":
        auditor = Agent("auditor", model="guionizado", instructions=AUDITOR)
        agent = Agent(
            "cajero",
            model="guionizado",
            instructions="Opera con cuidado.",
            tools=[consultar_saldo, transferir],
            delegates=[auditor],
        )
        gateway = ScriptedGateway(
            [_stream_responder] * 5,
            tools=[consultar_saldo, transferir],
            chunk_size=6,
        )
        await consume(agent.stream(TASK, session=Session(run_id, gateway, checkpointer)))
    elif scenario == "approval":
        agent = Agent(
            "cajero",
            model="guionizado",
            instructions="Opera con cuidado.",
            tools=[transferir, notificar],
        )
        gateway = ScriptedGateway(
            [_approval_responder] * 4, tools=[transferir, notificar], policy=_policy
        )
        session = Session(
            run_id, gateway, checkpointer, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC)
        )
        pending = await consume(agent.run(TASK, session=session))
        assert pending is not None, "the transfer should have waited for a person"
        await session.decide(pending.step_id, granted=True, by="operadora")
        await consume(agent.run(TASK, session=session))
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    store, run_id, scenario, kill_at = sys.argv[1:5]
    asyncio.run(main(store, run_id, scenario, int(kill_at)))
