"""El proceso hijo del cuaderno 06: un cajero con tres herramientas, que se mata sin avisar.

    python _hijo_06.py ALMACEN RUN_ID EFECTOS [--muere-tras N | --muere-dentro HERRAMIENTA]

Recorre el run `RUN_ID` del journal `ALMACEN` (un fichero SQLite). Con `--muere-tras N` se mata
(`comun.mata`: SIGKILL; en Windows, TerminateProcess) en cuanto recibe el paso N del run; con
`--muere-dentro HERRAMIENTA`, dentro de esa herramienta, después de su efecto y antes de que el
paso se complete. Sin ninguna de las dos, acaba e imprime la respuesta.

Cada llamada al modelo y cada efecto se apuntan en `EFECTOS`, una línea JSON por vez, antes
de seguir: el apunte sobrevive al kill y lo puede leer otro proceso. El cuaderno importa este
módulo para reanudar el run con el mismo agente, las mismas herramientas y el mismo doble.

Un SIGKILL mata el proceso, no el sistema: lo que el proceso ya entregó al sistema operativo
(un `write` hecho, una transacción de SQLite confirmada) sobrevive aunque no haya llegado al
disco. Por eso aquí basta `durability="normal"` y no hace falta `fsync`; contra un apagón, no
bastaría.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, FinalStep, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

#: Dónde se apunta cada llamada al modelo y cada efecto (None: en ningún sitio).
EFECTOS: Path | None = None
#: La herramienta dentro de la cual este proceso se mata, después de su efecto.
MUERE_DENTRO: str | None = None
#: Sobrevive a un SIGKILL, que es lo que se mide aquí (ver arriba).
DURABILIDAD = "normal"


def apuntar(que: str, argumentos: dict | None = None, resultado: str | None = None) -> None:
    """Apunta una llamada al modelo o un efecto, de forma que sobreviva a un SIGKILL."""
    if EFECTOS is not None:
        linea = json.dumps(
            {"que": que, "argumentos": argumentos, "resultado": resultado}, ensure_ascii=False
        )
        with EFECTOS.open("a", encoding="utf-8") as fichero:
            fichero.write(linea + "\n")  # al cerrarse, llega al sistema operativo
    if que == MUERE_DENTRO:
        mata(os.getpid())  # el efecto ya ocurrió; el paso no se completa


def leer_apuntes(efectos: Path) -> list[dict]:
    """Lo apuntado en `efectos`, en orden."""
    if not efectos.exists():
        return []
    return [json.loads(linea) for linea in efectos.read_text(encoding="utf-8").splitlines()]


@tool(risk=Risk.READ, idempotent=True)
def ver_saldo(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    resultado = "4.200,00 €"
    apuntar("ver_saldo", {"cuenta": cuenta}, resultado)
    return resultado


@tool(risk=Risk.HARD_WRITE, idempotent=False)
def transferir(
    origen: Annotated[str, "IBAN de la cuenta de origen"],
    destino: Annotated[str, "IBAN de la cuenta de destino"],
    importe: Annotated[float, "importe en euros"],
) -> str:
    """Transfiere un importe entre dos cuentas."""
    resultado = f"transferidos {importe:.2f} € a {destino}".replace(".", ",")
    apuntar("transferir", {"origen": origen, "destino": destino, "importe": importe}, resultado)
    return resultado


@tool(risk=Risk.SOFT_WRITE, idempotent=False)
def notificar(mensaje: Annotated[str, "lo que se le dice al cliente"]) -> str:
    """Envía una notificación al cliente."""
    resultado = "notificación enviada"
    apuntar("notificar", {"mensaje": mensaje}, resultado)
    return resultado


HERRAMIENTAS = [ver_saldo, transferir, notificar]
PLAN = [
    ("ver_saldo", {"cuenta": "ES91"}),
    ("transferir", {"origen": "ES91", "destino": "ES12", "importe": 100.0}),
    ("notificar", {"mensaje": "Transferencia hecha."}),
]
TAREA = "Mira el saldo de ES91, transfiere 100 € a ES12 y avisa al cliente."


def responder(peticion):
    """El doble: pide la siguiente herramienta del plan que aún no tiene resultado en la
    petición; con los tres resultados, contesta con ellos."""
    apuntar("modelo")
    resultados = [m.content for m in peticion.messages if m.role is Role.TOOL]
    if len(resultados) < len(PLAN):
        nombre, argumentos = PLAN[len(resultados)]
        return calls(nombre, **argumentos)
    saldo, transferencia, aviso = resultados
    return says(f"Saldo {saldo}; {transferencia}; {aviso}.")


def agente() -> Agent:
    return Agent(
        "cajero", model="guionizado", instructions="Opera con cuidado.", tools=HERRAMIENTAS
    )


def puerta() -> ScriptedGateway:
    """El doble, siempre: este cuaderno mide muertes de procesos, no lo que dice un modelo."""
    return ScriptedGateway([responder] * 10, tools=HERRAMIENTAS)


def journal(almacen: Path) -> SqliteCheckpointer:
    return SqliteCheckpointer(almacen, durability=DURABILIDAD)


async def recorrer(almacen: Path, run_id: str, muere_tras: int | None) -> None:
    sesion = Session(run_id, puerta(), journal(almacen))
    recibidos = 0
    async for paso in agente().run(TAREA, session=sesion):
        recibidos += 1
        if recibidos == muere_tras:
            mata(os.getpid())  # el paso ya está en el journal
        if isinstance(paso, FinalStep):
            print(paso.output)


def main(argv: list[str]) -> None:
    global EFECTOS, MUERE_DENTRO
    parser = argparse.ArgumentParser(prog="_hijo_06.py")
    parser.add_argument("almacen", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("efectos", type=Path)
    muerte = parser.add_mutually_exclusive_group()
    muerte.add_argument("--muere-tras", type=int, metavar="N")
    muerte.add_argument("--muere-dentro", metavar="HERRAMIENTA")
    opciones = parser.parse_args(argv)
    EFECTOS, MUERE_DENTRO = opciones.efectos, opciones.muere_dentro
    asyncio.run(recorrer(opciones.almacen, opciones.run_id, opciones.muere_tras))


if __name__ == "__main__":
    main(sys.argv[1:])
