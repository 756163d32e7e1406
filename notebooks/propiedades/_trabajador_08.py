"""El trabajador A del cuaderno `08_concurrencia`: conduce un run y no lo suelta.

    python _trabajador_08.py ALMACEN RUN_ID EFECTOS

Conduce el run `RUN_ID` del `cajero` sobre el journal `ALMACEN` (un fichero SQLite). En
cuanto un paso de herramienta queda completado (o el final, si el modelo contesta sin
herramientas), escribe `sostengo el run` y se queda quieto dentro del run, sin soltarlo,
hasta que alguien lo mate. Es un trabajador colgado: el caso que el candado tiene que
aguantar.

Cada transferencia se apunta en `EFECTOS`, una línea por ejecución, escrita y sincronizada
antes de volver: sobrevive a un SIGKILL y la puede contar otro proceso.

El cuaderno importa de aquí el agente, su herramienta y el guion: los dos trabajadores
conducen el mismo run con la misma configuración, como dos réplicas de un mismo servicio.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, Phase, Risk, Role, Session, SqliteCheckpointer, ToolContext, tool
from synaptum_lite.testing import calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import gateway, nombre_del_modelo

#: Dónde se apunta cada transferencia. Quien importa el módulo lo fija antes de correr nada.
EFECTOS = Path("efectos.txt")

TAREA = "Transfiere 100 € de ES91 a ES12."


@tool(risk=Risk.HARD_WRITE)
def transferir(
    origen: Annotated[str, "IBAN de origen"],
    destino: Annotated[str, "IBAN de destino"],
    importe: Annotated[float, "euros"],
    contexto: ToolContext,
) -> str:
    """Transfiere un importe entre dos cuentas."""
    with EFECTOS.open("a", encoding="utf-8") as fichero:
        fichero.write(f"transferir {origen}->{destino} {importe} pid={os.getpid()}\n")
        fichero.flush()
        os.fsync(fichero.fileno())
    return f"transferencia de {importe:.2f} € hecha (clave {contexto.idempotency_key})"


def cajero() -> Agent:
    return Agent(
        "cajero",
        model=nombre_del_modelo(),
        instructions="Haces transferencias con la herramienta. Responde en español, en una frase.",
        tools=[transferir],
    )


def responder(peticion):
    """El doble contesta según el contexto: transfiere si no hay resultado, si no, lo cuenta."""
    if any(m.role is Role.TOOL for m in peticion.messages):
        return says("Transferidos 100,00 € de ES91 a ES12.")
    return calls("transferir", origen="ES91", destino="ES12", importe=100.0)


def puerta():
    return gateway([responder] * 6, tools=[transferir])


async def conducir_y_colgarse(almacen: Path, run_id: str) -> None:
    session = Session(run_id, puerta(), SqliteCheckpointer(almacen))
    async for paso in cajero().run(TAREA, session=session):
        if paso.phase is Phase.COMPLETED and paso.kind in ("tool", "final"):
            print("sostengo el run", flush=True)
            colgarse()
    print("terminé sin colgarme", flush=True)


def colgarse() -> None:
    """Quieto dentro del run, con el candado, hasta que lo maten.

    Si el cuaderno que lo lanzó desaparece antes (o pasan diez minutos, mucho más de lo que
    el cuaderno tarda aun con la máquina muy cargada), se va: un trabajador colgado de verdad
    no lo haría, pero este no debe quedar huérfano en la máquina de nadie.
    """
    padre = os.getppid()
    for _ in range(12000):
        if os.getppid() != padre:
            break
        time.sleep(0.05)
    os._exit(1)


if __name__ == "__main__":
    almacen, run_id, efectos = sys.argv[1:]
    EFECTOS = Path(efectos)
    asyncio.run(conducir_y_colgarse(Path(almacen), run_id))
