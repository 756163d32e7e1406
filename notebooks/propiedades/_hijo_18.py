"""El proceso hijo del cuaderno 18: cinco runs a la vez en un proceso, sobre un mismo almacén.

    python _hijo_18.py ALMACEN EFECTOS RUN_ID... [--muere-dentro RUN_ID | --muere-tras N]

Conduce los runs `RUN_ID…` a la vez, cada uno en su tarea de `asyncio`, todos sobre el mismo
journal `ALMACEN` (un fichero SQLite). Cada run es un cajero que mira el saldo de un cliente,
le transfiere un importe y contesta. Con `--muere-dentro RUN_ID`, el proceso entero se mata sin
avisar (`comun.mata`: SIGKILL; en Windows, TerminateProcess) dentro de la transferencia de ese
run, con el efecto hecho y el paso sin completar, y con los demás runs a medias. Con
`--muere-tras N`, en cuanto el conjunto de los runs ha recibido N eventos. Sin ninguna de las
dos, acaba e imprime una respuesta por línea.

El modelo (el doble) y las herramientas ceden el bucle de eventos una vez por llamada, como
cedería una llamada de red: así los runs avanzan intercalados, y siempre en el mismo orden,
porque `asyncio` despierta las tareas en el orden en que cedieron.

Cada llamada al modelo y cada efecto se apuntan en `EFECTOS`, una línea JSON por vez, con el
run al que pertenecen, antes de seguir: el apunte sobrevive al kill y lo puede leer otro
proceso. El cuaderno importa este módulo para reanudar los runs con el mismo agente.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

from synaptum_lite import (
    Agent,
    FinalStep,
    Risk,
    Role,
    Session,
    SqliteCheckpointer,
    ToolContext,
    tool,
)
from synaptum_lite.testing import ScriptedGateway, calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

#: Dónde se apunta cada llamada al modelo y cada efecto (None: en ningún sitio).
EFECTOS: Path | None = None
#: El run dentro de cuya transferencia este proceso se mata, después del efecto.
MUERE_DENTRO: str | None = None
#: Sobrevive a un SIGKILL, que es lo que se mide aquí (ver `_hijo_06.py`).
DURABILIDAD = "normal"
TAREA = "Mira el saldo del cliente y transfiérele su importe."


def apuntar(run: str, que: str, argumentos: dict | None = None, resultado: str | None = None):
    """Apunta una llamada al modelo o un efecto del run `run`, de forma que sobreviva a un
    SIGKILL."""
    if EFECTOS is not None:
        linea = json.dumps(
            {"run": run, "que": que, "argumentos": argumentos, "resultado": resultado},
            ensure_ascii=False,
        )
        with EFECTOS.open("a", encoding="utf-8") as fichero:
            fichero.write(linea + "\n")  # al cerrarse, llega al sistema operativo


def leer_apuntes(efectos: Path) -> list[dict]:
    """Lo apuntado en `efectos`, en orden."""
    if not efectos.exists():
        return []
    return [json.loads(linea) for linea in efectos.read_text(encoding="utf-8").splitlines()]


def importe_de(run: str) -> float:
    """Cada cliente recibe un importe distinto: 100 € el primero, 200 € el segundo…"""
    return 100.0 * (int(run.rsplit("-", 1)[-1]) if run[-1].isdigit() else 1)


@tool(risk=Risk.READ, idempotent=True)
async def ver_saldo(cuenta: Annotated[str, "IBAN de la cuenta"], contexto: ToolContext) -> str:
    """Consulta el saldo de una cuenta."""
    await asyncio.sleep(0)  # la consulta viaja por la red: los demás runs avanzan mientras
    resultado = "4.200,00 €"
    apuntar(contexto.run_id, "ver_saldo", {"cuenta": cuenta}, resultado)
    return resultado


@tool(risk=Risk.HARD_WRITE, idempotent=False)
async def transferir(
    destino: Annotated[str, "IBAN de la cuenta de destino"],
    importe: Annotated[float, "importe en euros"],
    contexto: ToolContext,
) -> str:
    """Transfiere un importe desde la cuenta de la tienda."""
    await asyncio.sleep(0)
    resultado = f"transferidos {importe:.2f} € a {destino}".replace(".", ",")
    apuntar(contexto.run_id, "transferir", {"destino": destino, "importe": importe}, resultado)
    if contexto.run_id == MUERE_DENTRO:
        mata(os.getpid())  # el efecto ya ocurrió; el paso no se completa
    return resultado


HERRAMIENTAS = [ver_saldo, transferir]


class Puerta(ScriptedGateway):
    """El doble de un run: cede el bucle una vez por llamada, como una llamada de red."""

    def __init__(self, run: str) -> None:
        self.run = run
        super().__init__([self.responder] * 4, tools=HERRAMIENTAS)

    async def _complete(self, request):
        await asyncio.sleep(0)
        return await super()._complete(request)

    def responder(self, peticion):
        """Pide el saldo, después la transferencia; con los dos resultados, contesta."""
        apuntar(self.run, "modelo")
        resultados = [m.content for m in peticion.messages if m.role is Role.TOOL]
        cuenta = f"ES{10 + int(self.run.rsplit('-', 1)[-1]) if self.run[-1].isdigit() else 10}"
        if not resultados:
            return calls("ver_saldo", cuenta=cuenta)
        if len(resultados) == 1:
            return calls("transferir", destino=cuenta, importe=importe_de(self.run))
        return says(f"{self.run}: saldo {resultados[0]}; {resultados[1]}.")


def agente() -> Agent:
    return Agent(
        "cajero", model="guionizado", instructions="Opera con cuidado.", tools=HERRAMIENTAS
    )


def journal(almacen: Path) -> SqliteCheckpointer:
    return SqliteCheckpointer(almacen, durability=DURABILIDAD)


async def conducir(almacen: Path, runs: list[str], muere_tras: int | None) -> dict[str, str]:
    """Conduce `runs` a la vez sobre un mismo almacén; devuelve la respuesta de cada uno."""
    almacen_compartido = journal(almacen)
    recibidos = 0

    async def uno(run: str) -> str:
        nonlocal recibidos
        sesion = Session(run, Puerta(run), almacen_compartido)
        async for paso in agente().run(TAREA, session=sesion):
            recibidos += 1
            if recibidos == muere_tras:
                mata(os.getpid())  # el evento ya está en el journal
            if isinstance(paso, FinalStep):
                return paso.output
        raise AssertionError(f"el run {run} acabó sin paso final")

    respuestas = await asyncio.gather(*(uno(run) for run in runs))
    return dict(zip(runs, respuestas, strict=True))


def main(argv: list[str]) -> None:
    global EFECTOS, MUERE_DENTRO
    parser = argparse.ArgumentParser(prog="_hijo_18.py")
    parser.add_argument("almacen", type=Path)
    parser.add_argument("efectos", type=Path)
    parser.add_argument("runs", nargs="+", metavar="RUN_ID")
    muerte = parser.add_mutually_exclusive_group()
    muerte.add_argument("--muere-dentro", metavar="RUN_ID")
    muerte.add_argument("--muere-tras", type=int, metavar="N")
    opciones = parser.parse_args(argv)
    EFECTOS, MUERE_DENTRO = opciones.efectos, opciones.muere_dentro
    respuestas = asyncio.run(conducir(opciones.almacen, opciones.runs, opciones.muere_tras))
    for run in opciones.runs:
        print(respuestas[run])


if __name__ == "__main__":
    main(sys.argv[1:])
