"""El proceso hijo del cuaderno 23: un run con presupuesto que se mata sin avisar a mitad.

    python _hijo_23.py ALMACEN RUN_ID APUNTES LIMITE MUERE_TRAS

Conduce el run `RUN_ID` del `lector` sobre el journal `ALMACEN` (un fichero SQLite), con un
presupuesto de `LIMITE` tokens (entrada + salida). En cuanto recibe su paso de modelo
completado número `MUERE_TRAS`, escribe en su salida una línea JSON con lo que contó en
memoria (llamadas al modelo y tokens de este proceso) y se mata sin avisar (`comun.mata`:
SIGKILL; en Windows, TerminateProcess). Ese contador muere con él; el journal, no.

Cada llamada al modelo se apunta en `APUNTES` antes de contestarse, una línea por llamada:
el apunte sobrevive al kill, y el cuaderno cuenta así lo que pagó un proceso que ya no existe.
El cuaderno importa este módulo para reanudar el run con el mismo agente y el mismo doble.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, Budget, ModelStep, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

TAREA = "Lee el informe anual, capítulo a capítulo, y resúmelo en una frase."
CAPITULOS = 5
#: Dónde se apunta cada llamada al modelo (None: en ningún sitio).
APUNTES: Path | None = None
#: Cuántas veces corrió la herramienta en este proceso.
LLAMADAS = {"leer_capitulo": 0}


@tool(idempotent=True)
def leer_capitulo(numero: Annotated[int, "el capítulo, de 1 a 5"]) -> str:
    """Lee un capítulo del informe anual."""
    LLAMADAS["leer_capitulo"] += 1
    return (
        f"Capítulo {numero}: las ventas de la región {numero} crecieron un {numero + 2} %, "
        "los costes de transporte bajaron y el equipo abrió dos oficinas nuevas. "
        "Quedan pendientes la auditoría externa y la renovación del almacén central."
    )


def responder(peticion):
    """El doble: pide el siguiente capítulo que aún no está en el contexto; con los cinco,
    resume. Apunta la llamada antes de contestar, para que sobreviva a un SIGKILL."""
    if APUNTES is not None:
        with APUNTES.open("a", encoding="utf-8") as fichero:
            fichero.write("modelo\n")  # al cerrarse, llega al sistema operativo
    leidos = sum(1 for m in peticion.messages if m.role is Role.TOOL)
    if leidos < CAPITULOS:
        return calls("leer_capitulo", numero=leidos + 1)
    return says("Las cinco regiones crecieron; quedan la auditoría y el almacén central.")


def lector() -> Agent:
    return Agent(
        "lector",
        model="guionizado",
        instructions=(
            "Lees informes largos con la herramienta, un capítulo cada vez, y al final "
            "los resumes en español, en una sola frase."
        ),
        tools=[leer_capitulo],
    )


def puerta() -> ScriptedGateway:
    """El doble, siempre: este cuaderno mide lo que cuenta un presupuesto, no un modelo."""
    return ScriptedGateway([responder] * 12, tools=[leer_capitulo])


def leer_apuntes(apuntes: Path) -> int:
    """Cuántas llamadas al modelo hay apuntadas en `apuntes`."""
    return len(apuntes.read_text(encoding="utf-8").splitlines()) if apuntes.exists() else 0


async def recorrer(almacen: Path, run_id: str, limite: int, muere_tras: int) -> None:
    doble = puerta()
    presupuesto = Budget(total_tokens=limite)
    sesion = Session(run_id, doble, SqliteCheckpointer(almacen), budget=presupuesto)
    contador = 0  # lo que un proceso sabe de lo que ha pagado: muere con él
    async for paso in lector().run(TAREA, session=sesion):
        if isinstance(paso, ModelStep) and paso.response is not None:
            uso = paso.response.usage
            contador += uso.input_tokens + uso.output_tokens
            if doble.model_calls == muere_tras:
                print(json.dumps({"modelo": doble.model_calls, "tokens": contador}), flush=True)
                mata(os.getpid())  # el paso ya está en el journal


def main(argv: list[str]) -> None:
    global APUNTES
    almacen, run_id, apuntes, limite, muere_tras = argv
    APUNTES = Path(apuntes)
    asyncio.run(recorrer(Path(almacen), run_id, int(limite), int(muere_tras)))


if __name__ == "__main__":
    main(sys.argv[1:])
