"""La cadena del cuaderno 24 en otro proceso, que muere entre dos eslabones.

    python _hijo_24.py ALMACEN RUN_ID EFECTOS

Recorre la cadena `extraer` → `resumir` con el prefijo `RUN_ID` sobre el journal `ALMACEN` (un
fichero SQLite). En cuanto el run del primer eslabón se cierra (su paso final ya está en el
journal), escribe en su salida una línea JSON con el run cerrado y se queda esperando a leer su
entrada, antes de que el segundo eslabón llame al modelo. El cuaderno lee esa línea y lo mata
con SIGKILL: no corre ningún `finally` ni se cierra ninguna conexión.

Cada llamada al modelo (de qué eslabón, cuántos mensajes y cuántos bytes lleva su petición) y
cada ejecución de una herramienta se apuntan en `EFECTOS`, una línea JSON por vez, antes de
seguir: el apunte sobrevive al kill. El cuaderno importa este módulo para reanudar la cadena con
los mismos agentes, la misma función `encadenar` y el mismo doble.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from synaptum_lite import Agent, FinalStep, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

TAREA = "Saca los acuerdos del acta de la reunión de marzo y avisa al equipo."

#: Dónde se apunta cada llamada al modelo y cada herramienta (None: en ningún sitio).
EFECTOS: Path | None = None

#: Cada petición que recibió el doble en este proceso, con su eslabón, en orden.
PETICIONES: list[tuple[str, Any]] = []

ACTA = (
    "Acta de la reunión de marzo. Asisten Ana, Luis, Marta y Pedro. Se repasa el trimestre: "
    "las ventas suben un 4 %, el almacén de Vigo sigue sin climatizar y el proveedor de cajas "
    "avisa de retrasos hasta abril. Luis propone cambiar de proveedor; se discute y se descarta "
    "por ahora. Marta presenta el plan de formación y se aprueba con un cambio de fechas. "
    "Acuerdos: 1) climatizar el almacén de Vigo antes de junio; 2) la formación empieza el 14 "
    "de abril; 3) revisar el proveedor de cajas en la reunión de mayo. Se levanta la sesión."
)
ACUERDOS = (
    "1) Climatizar el almacén de Vigo antes de junio. 2) La formación empieza el 14 de abril. "
    "3) Revisar el proveedor de cajas en mayo."
)
AVISO = "Acuerdos de marzo: Vigo climatizado antes de junio, formación el 14 de abril."


def apuntar(**apunte: Any) -> None:
    """Apunta una llamada o una ejecución, de forma que sobreviva a un SIGKILL."""
    if EFECTOS is not None:
        with EFECTOS.open("a", encoding="utf-8") as fichero:
            fichero.write(json.dumps(apunte, ensure_ascii=False) + "\n")  # al cerrarse, llega


def leer_apuntes(efectos: Path) -> list[dict[str, Any]]:
    """Lo apuntado en `efectos`, en orden."""
    if not efectos.exists():
        return []
    return [json.loads(linea) for linea in efectos.read_text(encoding="utf-8").splitlines()]


@tool(risk=Risk.READ, idempotent=True)
def leer_acta(reunion: Annotated[str, "mes de la reunión"]) -> str:
    """Lee el acta entera de una reunión."""
    apuntar(que="leer_acta")
    return ACTA


@tool(risk=Risk.SOFT_WRITE)
def publicar(aviso: Annotated[str, "el aviso para el equipo"]) -> str:
    """Publica un aviso en el tablón del equipo."""
    apuntar(que="publicar")
    return "publicado en el tablón"


extractor = Agent(
    "extractor",
    model="guionizado",
    instructions="Lees el acta con la herramienta y devuelves solo sus acuerdos, numerados.",
    tools=[leer_acta],
)
redactor = Agent(
    "redactor",
    model="guionizado",
    instructions="Con los acuerdos que te dan, escribes un aviso de una frase y lo publicas.",
    tools=[publicar],
)

#: Los eslabones, en orden: el nombre da el run de cada uno (`RUN_ID/extraer`).
ESLABONES = (("extraer", extractor), ("resumir", redactor))
DE_QUIEN = {extractor.instructions: "extraer", redactor.instructions: "resumir"}


def tamano(peticion: Any) -> int:
    """Los bytes de los mensajes que ve el modelo, en JSON (UTF-8)."""
    return sum(len(json.dumps(m.to_json(), ensure_ascii=False).encode()) for m in peticion.messages)


def responder(peticion: Any) -> Any:
    """El doble contesta a los dos eslabones según la petición: sabe a quién por las
    instrucciones del sistema, y qué toca por lo que ya hay en el contexto."""
    sistema, *resto = peticion.messages
    eslabon = DE_QUIEN[sistema.content]
    PETICIONES.append((eslabon, peticion))
    apuntar(que="modelo", eslabon=eslabon, mensajes=len(peticion.messages), bytes=tamano(peticion))
    resultado = next((m.content for m in resto if m.role is Role.TOOL), None)
    if eslabon == "extraer":
        return calls("leer_acta", reunion="marzo") if resultado is None else says(ACUERDOS)
    return calls("publicar", aviso=AVISO) if resultado is None else says(f"Avisado: {AVISO}")


def puerta() -> ScriptedGateway:
    """El doble, siempre: aquí se mide la cadena y su muerte, no lo que dice un modelo."""
    return ScriptedGateway([responder] * 8, tools=[leer_acta, publicar])


async def encadenar(
    tarea: str,
    run_id: str,
    checkpointer: Any,
    *,
    eslabones: Sequence[tuple[str, Agent]] = ESLABONES,
    al_cerrar: Callable[[str, FinalStep], Awaitable[None]] | None = None,
) -> str:
    """La cadena, a mano: cada eslabón es un run propio (`run_id/nombre`), y la respuesta
    final de uno es la tarea del siguiente. Ni su historial ni su contexto pasan."""
    for nombre, agente in eslabones:
        final = None
        sesion = Session(f"{run_id}/{nombre}", puerta(), checkpointer)
        async for paso in agente.run(tarea, session=sesion):
            if isinstance(paso, FinalStep):
                final = paso
        assert final is not None and final.output is not None, f"{nombre} no acabó"
        if al_cerrar is not None:
            await al_cerrar(nombre, final)
        tarea = final.output  # solo el resultado viaja al siguiente eslabón
    return tarea


async def primera_vuelta(almacen: Path, run_id: str) -> None:
    async def espera_tras_el_primero(nombre: str, final: FinalStep) -> None:
        if nombre == "extraer":
            print(json.dumps({"cerrado": f"{run_id}/{nombre}"}), flush=True)
            await asyncio.to_thread(sys.stdin.readline)  # aquí lo mata el cuaderno

    await encadenar(TAREA, run_id, SqliteCheckpointer(almacen), al_cerrar=espera_tras_el_primero)
    raise SystemExit(f"la cadena {run_id} acabó sin que nadie matara el proceso")


if __name__ == "__main__":
    ALMACEN, RUN_ID, EFECTOS_ = sys.argv[1:]
    EFECTOS = Path(EFECTOS_)
    asyncio.run(primera_vuelta(Path(ALMACEN), RUN_ID))
