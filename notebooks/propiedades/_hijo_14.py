"""El padre del cuaderno 14 en otro proceso, que muere sin avisar durante su delegación.

    python _hijo_14.py ALMACEN RUN_ID EFECTOS {antes,dentro,despues}

Recorre el run `RUN_ID` de la `agencia` sobre el journal `ALMACEN` (un fichero SQLite), que
delega la búsqueda en el `investigador`, y se mata sin avisar (`comun.mata`: SIGKILL; en
Windows, TerminateProcess) en cuanto el journal guarda:

- `antes`: el paso de delegación *intentado* del padre, antes de que el subrun empiece;
- `dentro`: la búsqueda *completada* del subrun, con el hijo a medias (le falta su 2º turno);
- `despues`: el paso de delegación *completado* del padre, con el subrun terminado.

No corre ningún `finally` ni se cierra ninguna conexión: lo que el journal tenga entonces es
lo que queda. Cada llamada al modelo (de quién es) y cada búsqueda se apuntan en `EFECTOS`,
una línea JSON por vez, antes de seguir: el apunte sobrevive al kill y lo lee el cuaderno, que
importa este módulo para reanudar el run con los mismos agentes y el mismo doble.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from synaptum_lite import Agent, Risk, Role, Session, SqliteCheckpointer, Step, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

TAREA = "Organízame un viaje a Oporto el viernes; prefiero salir por la mañana."

#: Dónde se apunta cada llamada al modelo y cada búsqueda (None: en ningún sitio).
EFECTOS: Path | None = None

#: Cuándo muere el proceso: (de qué run, qué paso, qué fase) guardó el journal. El run `None`
#: es el del padre; `"subrun"`, el de la delegación.
MUERTES = {
    "antes": (None, "delegate", "attempted"),
    "dentro": ("subrun", "tool", "completed"),
    "despues": (None, "delegate", "completed"),
}


def apuntar(que: str) -> None:
    """Apunta una llamada al modelo o una búsqueda, de forma que sobreviva a un SIGKILL."""
    if EFECTOS is not None:
        with EFECTOS.open("a", encoding="utf-8") as fichero:
            fichero.write(json.dumps({"que": que}) + "\n")  # al cerrarse, llega al sistema


def leer_apuntes(efectos: Path) -> list[str]:
    """Lo apuntado en `efectos`, en orden: "modelo del padre", "buscar_vuelos"…"""
    if not efectos.exists():
        return []
    lineas = efectos.read_text(encoding="utf-8").splitlines()
    return [json.loads(linea)["que"] for linea in lineas]


@tool(risk=Risk.READ, idempotent=True)
def buscar_vuelos(destino: Annotated[str, "ciudad de destino"]) -> str:
    """Busca los vuelos del viernes a una ciudad."""
    apuntar("buscar_vuelos")
    return f"{destino}: TP1947 a las 9:05 por 89 €; FR8346 a las 18:40 por 64 €"


investigador = Agent(
    "investigador",
    model="guionizado",
    instructions="Buscas vuelos con la herramienta y recomiendas uno en una frase.",
    tools=[buscar_vuelos],
    description="Busca vuelos y recomienda uno.",
)
agencia = Agent(
    "agencia",
    model="guionizado",
    instructions="Organizas viajes. Para buscar vuelos, delegas en el investigador.",
    delegates=[investigador],
)


def responder(peticion):
    """El doble atiende a los dos agentes, como en el cuaderno: sabe a quién contesta por las
    instrucciones del sistema, y qué le toca por lo que trae la petición."""
    sistema, *resto = peticion.messages
    del_hijo = sistema.content == investigador.instructions
    apuntar("modelo del hijo" if del_hijo else "modelo del padre")
    resultado = next((m.content for m in resto if m.role is Role.TOOL), None)
    if del_hijo:
        if resultado is None:
            return calls("buscar_vuelos", destino="Oporto")
        return says("Recomiendo el TP1947: sale a las 9:05 y cuesta 89 €.")
    if resultado is None:
        return calls("investigador", task="Busca vuelos a Oporto el viernes por la mañana.")
    return says(f"Viaje listo. {resultado}")


def puerta() -> ScriptedGateway:
    """El doble, siempre: aquí se mide una muerte, no lo que dice un modelo."""
    return ScriptedGateway([responder] * 8, tools=[buscar_vuelos])


class MuereAlGuardar(SqliteCheckpointer):
    """El almacén SQLite de siempre, cuyo proceso muere en cuanto el evento elegido está
    escrito: después del `append`, antes de que nadie lo lea."""

    def __init__(self, almacen: Path, run_id: str, muere_en: str) -> None:
        super().__init__(almacen)
        run, self.kind, self.phase = MUERTES[muere_en]
        self.run = f"{run_id}/000001-delegate" if run == "subrun" else run_id

    async def append(self, run_id: str, events: Sequence[Step]) -> int:
        next_seq = await super().append(run_id, events)
        if run_id == self.run and any(
            (e.kind, e.phase.value) == (self.kind, self.phase) for e in events
        ):
            mata(os.getpid())  # el evento ya está en el journal
        return next_seq


async def primera_vuelta(almacen: Path, run_id: str, muere_en: str) -> None:
    sesion = Session(run_id, puerta(), MuereAlGuardar(almacen, run_id, muere_en))
    async for _paso in agencia.run(TAREA, session=sesion):
        pass
    raise SystemExit(f"el run {run_id} acabó sin que el proceso muriera en {muere_en!r}")


if __name__ == "__main__":
    ALMACEN, RUN_ID, EFECTOS_, MUERE_EN = sys.argv[1:]
    EFECTOS = Path(EFECTOS_)
    asyncio.run(primera_vuelta(Path(ALMACEN), RUN_ID, MUERE_EN))
