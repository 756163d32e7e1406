"""The agent the trace tests drive, and the child process the kill test SIGKILLs.

    python -m tests.otel.agents STORE RUN_ID OTLP_URL [--die-in TOOL]

drives the run `RUN_ID` in the SQLite file STORE with a live exporter to the OTLP/HTTP
receiver at OTLP_URL (each span sent as its step ends), and with `--die-in TOOL` SIGKILLs
itself inside that tool, after its effect, before the step completes: a pass that never
ends, so it never sends its root span.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Annotated

from synaptum_lite import Agent, FinalStep, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

DIE_IN: str | None = None


def _maybe_die(name: str) -> None:
    if name == DIE_IN:
        print("dying", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


@tool(risk=Risk.READ, idempotent=True)
def ver_saldo(cuenta: Annotated[str, "IBAN"]) -> str:
    """Consulta el saldo."""
    _maybe_die("ver_saldo")
    return "4.200,00 €"


@tool(risk=Risk.READ, idempotent=True)
def ver_movimientos(cuenta: Annotated[str, "IBAN"]) -> str:
    """Consulta los movimientos."""
    _maybe_die("ver_movimientos")
    return "3 movimientos"


@tool(risk=Risk.READ, idempotent=True)
def ver_tarjetas(cuenta: Annotated[str, "IBAN"]) -> str:
    """Consulta las tarjetas."""
    _maybe_die("ver_tarjetas")
    return "2 tarjetas"


TOOLS = [ver_saldo, ver_movimientos, ver_tarjetas]
PLAN = ["ver_saldo", "ver_movimientos", "ver_tarjetas"]
TASK = "Resume la cuenta ES91."
ANSWER = "Saldo 4.200,00 €; 3 movimientos; 2 tarjetas."


def responder(request):
    """Asks for the next tool of the plan without a result in the request, then answers."""
    done = [m.content for m in request.messages if m.role is Role.TOOL]
    if len(done) < len(PLAN):
        return calls(PLAN[len(done)], cuenta="ES91")
    return says(f"Saldo {done[0]}; {done[1]}; {done[2]}.")


def agent() -> Agent:
    return Agent("cajero", model="guionizado", instructions="Resume cuentas.", tools=TOOLS)


def gateway() -> ScriptedGateway:
    return ScriptedGateway([responder] * 10, tools=TOOLS)


async def drive(store: str, run_id: str, url: str) -> None:
    from synaptum_lite.integrations.otel import otlp_exporter, traced

    session = Session(run_id, gateway(), SqliteCheckpointer(store))
    steps = agent().run(TASK, session=session)
    async for step in traced(steps, session=session, exporter=otlp_exporter(url)):
        if isinstance(step, FinalStep):
            print(step.output, flush=True)


def main(argv: list[str]) -> None:
    global DIE_IN
    parser = argparse.ArgumentParser(prog="tests.otel.agents")
    parser.add_argument("store")
    parser.add_argument("run_id")
    parser.add_argument("url")
    parser.add_argument("--die-in")
    options = parser.parse_args(argv)
    DIE_IN = options.die_in
    asyncio.run(drive(options.store, options.run_id, options.url))


if __name__ == "__main__":
    main(sys.argv[1:])
