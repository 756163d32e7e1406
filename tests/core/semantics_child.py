"""A child process for the kill tests of approvals, delegation and streaming.

    python -m tests.core.semantics_child SCENARIO DB EFFECTS ACTION

SCENARIO is `approval`, `delegation` or `stream`; ACTION says what this process does:
`run` drives the run to its end (or suspension), `grant` records a person's approval, and
`die-after-tool`, `die-after-delegation`, `die-mid-stream` SIGKILL the process at that point.
The process prints what it counted; effects go to EFFECTS, one line each, fsynced.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from synaptum_lite import (
    Agent,
    ApprovalStep,
    DelegationStep,
    FinalStep,
    Risk,
    Role,
    Session,
    SqliteCheckpointer,
    TextFragment,
    ToolStep,
    Verdict,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

EFFECTS = Path(sys.argv[3])


def effect(line: str) -> None:
    with EFFECTS.open("a") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


@tool(risk=Risk.DESTRUCTIVE)
def transferir(destino: str) -> str:
    """Transfiere 100 €."""
    effect(f"transferir {destino}")
    return f"transferido a {destino}"


@tool(risk=Risk.READ, idempotent=True)
def consultar(cuenta: str) -> str:
    """Consulta un saldo."""
    effect(f"consultar {cuenta}")
    return f"{cuenta}: 4.200,00 €"


def answer(request):
    system = request.messages[0].content
    results = [m for m in request.messages if m.role is Role.TOOL]
    if system.startswith("Investiga"):
        return (
            calls("consultar", cuenta="ES91")
            if not results
            else says("Saldo: " + results[0].content)
        )
    if system.startswith("Delega"):
        return (
            calls("investigador", task="saldo de ES91") if not results else says(results[0].content)
        )
    if system.startswith("Opera"):
        return (
            calls("transferir", destino="ES12")
            if not results
            else says("Hecho: " + results[0].content)
        )
    return says("El saldo de la cuenta ES91 es de 4.200,00 euros a día de hoy, sin movimientos.")


AGENTS = {
    "approval": Agent("cajero", model="m", instructions="Opera.", tools=[transferir]),
    "delegation": Agent(
        "jefe",
        model="m",
        instructions="Delega.",
        delegates=[Agent("investigador", model="m", instructions="Investiga.", tools=[consultar])],
    ),
    "stream": Agent("narrador", model="m", instructions="Narra."),
}


def policy(proposal):
    return (
        Verdict.require_approval("mueve dinero")
        if proposal.risk is Risk.DESTRUCTIVE
        else Verdict.allow()
    )


async def main(scenario: str, db: Path, action: str) -> None:
    gateway = ScriptedGateway([answer] * 6, policy=policy, chunk_size=8)
    session = Session("r", gateway, SqliteCheckpointer(db))
    agent = AGENTS[scenario]
    if action == "grant":
        await session.decide("000001-approval", granted=True, by="ana")
        print("granted")
        return
    steps = (
        agent.stream("tarea", session=session)
        if scenario == "stream"
        else agent.run("tarea", session=session)
    )
    fragments = 0
    async for step in steps:
        if isinstance(step, TextFragment):
            fragments += 1
        done = (
            getattr(step, "phase", None) is not None
            and step.phase.value == "completed"
            and not step.replayed
        )
        if action == "die-after-tool" and isinstance(step, ToolStep) and done:
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "die-after-delegation" and isinstance(step, DelegationStep) and done:
            os.kill(os.getpid(), signal.SIGKILL)
        if action == "die-mid-stream" and fragments == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        if isinstance(step, ApprovalStep) and step.pending:
            print(f"waiting {step.step_id}")
        if isinstance(step, FinalStep):
            print(f"final {step.output}")
    print(f"model_calls {gateway.model_calls}")
    print(f"fragments {fragments}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[4]))
