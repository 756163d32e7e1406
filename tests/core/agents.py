"""The agents the core's tests drive: a cashier with three tools, idempotent and not.

Also run as a child process by the kill tests:
`python -m tests.core.agents STORE RUN_ID EFFECTS [--die-at N] [--stop-at N] [--die-in TOOL]
[--operator] [--pinned]`.
STORE is a SQLite file, or a PostgreSQL URL with the schema after `#`
(`postgresql://user@host:port/db#schema`).
`--die-at N` SIGKILLs the process right after it receives the N-th step; `--stop-at N` stops
iterating there instead, closes the run and exits normally; `--stall-in TOOL`
hangs inside TOOL after its effect, holding the run; `--die-in TOOL`
SIGKILLs it inside TOOL, after its effect and before the step completes; `--operator` resolves
an uncertain effect the way a person would: by looking whether the effect happened;
`--pinned` drives the run on the version it runs on, of the two this worker holds
(`cajero()` and `cajero_v2()`, found with `agent_for`).
Effects are counted in a file of their own (one line per execution), so they survive a
SIGKILL and can be counted by another process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

from synaptum_lite import (
    Agent,
    Checkpointer,
    FinalStep,
    Risk,
    Role,
    RunBusy,
    Session,
    SqliteCheckpointer,
    ToolContext,
    UncertainEffect,
    agent_for,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

EFFECTS: Path | None = None
DIE_IN: str | None = None
STALL_IN: str | None = None


def _effect(line: str) -> None:
    if EFFECTS is not None:
        with EFFECTS.open("a") as file:
            file.write(line + "\n")
            file.flush()
            os.fsync(file.fileno())
    if DIE_IN is not None and line.startswith(DIE_IN + " "):
        os.kill(os.getpid(), signal.SIGKILL)
    if STALL_IN is not None and line.startswith(STALL_IN + " "):
        print("stalled", flush=True)
        time.sleep(3600)  # a worker stuck mid-run, holding it, until someone kills it


@tool(risk=Risk.READ, idempotent=True)
def consultar_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    _effect(f"consultar_saldo {cuenta}")
    return f"{cuenta}: 4.200,00 €"


@tool(risk=Risk.HARD_WRITE)
def transferir(origen: str, destino: str, importe: float, contexto: ToolContext) -> str:
    """Transfiere un importe entre dos cuentas."""
    _effect(f"transferir {origen}->{destino} {importe} key={contexto.idempotency_key}")
    return f"transferencia de {importe:.2f} € hecha"


@tool(risk=Risk.SOFT_WRITE)
def notificar(mensaje: str) -> str:
    """Envía una notificación al cliente."""
    _effect(f"notificar {mensaje}")
    return "notificado"


HERRAMIENTAS = [consultar_saldo, transferir, notificar]
PLAN = [
    ("consultar_saldo", {"cuenta": "ES91"}),
    ("transferir", {"origen": "ES91", "destino": "ES12", "importe": 100.0}),
    ("notificar", {"mensaje": "hecho"}),
]
ANSWER = "Transferidos 100,00 € y avisado el cliente."


def responder(request):
    """Answer from the context: call the next tool of the plan that has no result yet."""
    done = sum(1 for m in request.messages if m.role is Role.TOOL)
    if done < len(PLAN):
        name, arguments = PLAN[done]
        return calls(name, **arguments)
    return says(ANSWER)


def cajero() -> Agent:
    return Agent(
        "cajero", model="guionizado", instructions="Opera con cuidado.", tools=HERRAMIENTAS
    )


def cajero_v2() -> Agent:
    """The cashier after a deploy: other instructions, the same tools, a version label."""
    return Agent(
        "cajero",
        model="guionizado",
        instructions="Opera con cuidado y confirma cada paso.",
        tools=HERRAMIENTAS,
        version="v2",
    )


def double() -> ScriptedGateway:
    return ScriptedGateway([responder] * 20, tools=HERRAMIENTAS)


TASK = "Transfiere 100 € de ES91 a ES12 y avisa."


def open_store(location: str) -> Checkpointer:
    """The checkpointer a location names: a PostgreSQL URL (`URL#schema`), a store server's URL
    (`http://…`, its token in SYNAPTUM_STORE_TOKEN or the tests' own), else a SQLite file."""
    if location.startswith("http://"):
        from synaptum_lite.stores.http_client import HttpCheckpointer
        from synaptum_lite.stores.http_server import ENV_TOKEN

        from .http_store import TOKEN

        return HttpCheckpointer(location, token=os.environ.get(ENV_TOKEN, TOKEN))
    if location.startswith("postgresql://"):
        from synaptum_lite.stores.postgres import PostgresCheckpointer

        url, _, schema = location.partition("#")
        return PostgresCheckpointer(url, schema=schema or "synaptum_lite")
    return SqliteCheckpointer(location)


async def drive(
    store: str,
    run_id: str,
    die_at: int | None,
    operator: bool,
    stop_at: int | None = None,
    pinned: bool = False,
) -> None:
    gateway = double()
    session = Session(run_id, gateway, open_store(store))
    agent = cajero()
    if pinned:
        agent = await agent_for(session.checkpointer, run_id, [cajero(), cajero_v2()])
        print(f"agent {agent.version}")
    seen = 0
    while True:
        try:
            steps = agent.run(TASK, session=session)
            async with contextlib.aclosing(steps):
                async for step in steps:
                    seen += 1
                    if die_at is not None and seen == die_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    if stop_at is not None and seen == stop_at:
                        print(f"stopped {step.step_id} {step.phase.value}")
                        break
                    if isinstance(step, FinalStep):
                        print(f"final {step.output}")
            break
        except RunBusy as busy:
            print(f"busy {busy.run_id}")
            raise SystemExit(4) from None
        except UncertainEffect as uncertain:
            print(f"uncertain {uncertain.step_id} {uncertain.tool}")
            if not operator:
                raise SystemExit(3) from None
            happened = (
                EFFECTS is not None
                and EFFECTS.exists()
                and any(
                    line.startswith(uncertain.tool + " ")
                    for line in EFFECTS.read_text().splitlines()
                )
            )
            if happened:
                # what the bank's or the mail server's own records say the tool returned
                known = {"transferir": "transferencia de 100.00 € hecha", "notificar": "notificado"}
                await session.record_result(
                    uncertain.step_id, known[uncertain.tool], by="operadora"
                )
            else:
                await session.allow_retry(uncertain.step_id, by="operadora")
    print(f"model_calls {gateway.model_calls}")


def main(argv: list[str]) -> None:
    global EFFECTS, DIE_IN, STALL_IN
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("run_id")
    parser.add_argument("effects", type=Path)
    parser.add_argument("--die-at", type=int)
    parser.add_argument("--stop-at", type=int)
    parser.add_argument("--die-in")
    parser.add_argument("--stall-in")
    parser.add_argument("--operator", action="store_true")
    parser.add_argument("--pinned", action="store_true")
    args = parser.parse_args(argv)
    EFFECTS, DIE_IN, STALL_IN = args.effects, args.die_in, args.stall_in
    asyncio.run(
        drive(args.store, args.run_id, args.die_at, args.operator, args.stop_at, args.pinned)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
