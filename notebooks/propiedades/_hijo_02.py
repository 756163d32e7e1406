"""La primera vuelta del cuaderno `02_durabilidad`, en un proceso que muere de verdad.

    python _hijo_02.py ALMACEN RUN_ID

Conduce el run `RUN_ID` del `cajero` sobre el journal `ALMACEN` (un fichero SQLite). En cuanto
recibe el paso de herramienta completado, escribe en su salida una línea JSON con lo que contó
(llamadas al modelo, ejecuciones de la herramienta) y se mata sin avisar (`comun.mata`:
SIGKILL; en Windows, TerminateProcess): no corre ningún `finally`, no se cierra ninguna
conexión. Lo que el journal tenga entonces es lo que queda.

El cuaderno importa de aquí el agente, su herramienta y el doble: la vuelta que reanuda tiene
que ser el mismo agente, o el journal se negaría (`ConfigurationChanged`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import gateway, mata, nombre_del_modelo

TAREA = "¿Cuánto hay en ES91 2100 0418 45?"

#: Cuántas veces corrió la herramienta en este proceso.
LLAMADAS = {"herramienta": 0}


@tool
async def consultar_saldo(
    cuenta: Annotated[str, "IBAN de la cuenta"],
) -> str:
    """Consulta el saldo de una cuenta."""
    LLAMADAS["herramienta"] += 1
    return f"{cuenta}: 4.200,00 €"


def responder(peticion):
    """El doble contesta **según el contexto**, como haría un modelo.

    Importa para este ejemplo: al reanudar, el gateway es nuevo y no recuerda nada, pero el
    contexto sí trae el resultado de la herramienta —se vuelve a derivar del journal—. Un guion
    posicional respondería lo mismo que la primera vez y volvería a pedir la herramienta, que es
    justo lo que la reanudación evita.
    """
    ya_consultado = any(m.role is Role.TOOL for m in peticion.messages)
    if ya_consultado:
        return says("El saldo es de 4.200,00 €.")
    return calls("consultar_saldo", cuenta="ES91 2100 0418 45")


def guion():
    return [responder] * 6


def cajero() -> Agent:
    return Agent(
        "cajero",
        model=nombre_del_modelo(),
        instructions="Consultas saldos con la herramienta. Responde en español, en una frase.",
        tools=[consultar_saldo],
    )


async def primera_vuelta(almacen: Path, run_id: str) -> None:
    puerta = gateway(guion(), tools=[consultar_saldo])
    sesion = Session(run_id, puerta, SqliteCheckpointer(almacen))
    async for paso in cajero().run(TAREA, session=sesion):
        if paso.kind == "tool" and paso.phase.value == "completed":
            cuenta = {"modelo": puerta.model_calls, "herramienta": LLAMADAS["herramienta"]}
            print(json.dumps(cuenta), flush=True)
            mata(os.getpid())  # el paso ya está en el journal


if __name__ == "__main__":
    asyncio.run(primera_vuelta(Path(sys.argv[1]), sys.argv[2]))
