"""El proceso hijo del cuaderno 22: un agente que resume una cuenta, con un exportador de
trazas en vivo, que se mata sin avisar dentro de una herramienta.

    python _hijo_22.py ALMACEN RUN_ID TRAZA [--muere-dentro HERRAMIENTA]

Recorre el run `RUN_ID` del journal `ALMACEN` (un fichero SQLite) con `traced`, que envía el
span de cada paso en cuanto el paso acaba, a `TRAZA`, un fichero de OTLP/JSON (una línea por
envío, que llega al sistema operativo antes de seguir: sobrevive al kill). Con
`--muere-dentro HERRAMIENTA` se mata (`comun.mata`: SIGKILL; en Windows, TerminateProcess)
dentro de esa herramienta, antes de que su paso se complete. Sin él, acaba e imprime la
respuesta. El cuaderno importa este módulo para reanudar con el mismo agente y el mismo doble.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, FinalStep, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.integrations.otel import OtlpJsonFile, traced
from synaptum_lite.testing import ScriptedGateway, calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

#: La herramienta dentro de la cual este proceso se mata.
MUERE_DENTRO: str | None = None


def quiza_muere(herramienta: str) -> None:
    if herramienta == MUERE_DENTRO:
        mata(os.getpid())  # el paso queda intentado, sin completar


@tool(risk=Risk.READ, idempotent=True)
def ver_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    quiza_muere("ver_saldo")
    return "4.200,00 €"


@tool(risk=Risk.READ, idempotent=True)
def ver_movimientos(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta los movimientos del mes."""
    quiza_muere("ver_movimientos")
    return "3 movimientos"


@tool(risk=Risk.READ, idempotent=True)
def ver_tarjetas(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta las tarjetas de la cuenta."""
    quiza_muere("ver_tarjetas")
    return "2 tarjetas"


HERRAMIENTAS = [ver_saldo, ver_movimientos, ver_tarjetas]
TAREA = "Resume la cuenta ES91: saldo, movimientos y tarjetas."


def responder(peticion):
    """El doble: pide la siguiente herramienta que aún no tiene resultado en la petición; con
    los tres resultados, contesta con ellos."""
    resultados = [m.content for m in peticion.messages if m.role is Role.TOOL]
    if len(resultados) < len(HERRAMIENTAS):
        return calls(HERRAMIENTAS[len(resultados)].name, cuenta="ES91")
    saldo, movimientos, tarjetas = resultados
    return says(f"Saldo {saldo}; {movimientos}; {tarjetas}.")


def agente() -> Agent:
    return Agent(
        "resumidor", model="guionizado", instructions="Resume cuentas.", tools=HERRAMIENTAS
    )


def puerta() -> ScriptedGateway:
    """El doble, siempre: este cuaderno mide trazas de procesos que mueren, no un modelo."""
    return ScriptedGateway([responder] * 10, tools=HERRAMIENTAS)


async def recorrer(almacen: Path, run_id: str, traza: Path) -> None:
    sesion = Session(run_id, puerta(), SqliteCheckpointer(almacen))
    pasos = agente().run(TAREA, session=sesion)
    async for paso in traced(pasos, session=sesion, exporter=OtlpJsonFile(traza)):
        if isinstance(paso, FinalStep):
            print(paso.output)


def main(argv: list[str]) -> None:
    global MUERE_DENTRO
    parser = argparse.ArgumentParser(prog="_hijo_22.py")
    parser.add_argument("almacen", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("traza", type=Path)
    parser.add_argument("--muere-dentro", metavar="HERRAMIENTA")
    opciones = parser.parse_args(argv)
    MUERE_DENTRO = opciones.muere_dentro
    asyncio.run(recorrer(opciones.almacen, opciones.run_id, opciones.traza))


if __name__ == "__main__":
    main(sys.argv[1:])
