"""La primera vuelta del cuaderno `00_primer_run`, en un proceso que muere de verdad.

El cuaderno llama a `muere_tras_la_herramienta(almacen, run_id, tarea, apuntar, modelo)`:
arranca este fichero como otro proceso (`sys.executable`, el mismo Python) y le pasa, por su
entrada, el texto de las celdas que escribiste —la de la herramienta y la del agente—, tal
como el kernel las ejecutó. El hijo las ejecuta, conduce el run `run_id` de `agente` sobre el
journal `almacen` (un fichero SQLite) y, en cuanto recibe el paso de herramienta completado,
escribe en su salida una línea JSON con lo que contó y se mata sin avisar (`comun.mata`:
SIGKILL; en Windows, TerminateProcess): no corre ningún `finally`. Lo que el journal tenga
entonces es lo que queda.

Son tus celdas, no una copia: si cambias la herramienta o el agente, el hijo corre lo que
cambiaste, y la reanudación, en el cuaderno, también.
"""

from __future__ import annotations

import asyncio
import json
import linecache
import os
import sys
from pathlib import Path
from typing import Any

from synaptum_lite import Session, SqliteCheckpointer
from synaptum_lite.testing import ScriptedGateway

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # notebooks/, donde vive comun.py
from comun import mata

#: Lo que las celdas del cuaderno usan sin importarlo (lo importa su primera celda de código).
PRELUDIO = """\
from typing import Annotated
from synaptum_lite import Agent, FinalStep, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import calls, says
from comun import MODELO_GUIONIZADO
"""


def celda_de(objeto: Any) -> str:
    """El texto de la celda donde se definió `objeto` (una función, o una herramienta)."""
    funcion = getattr(objeto, "function", objeto)
    return "".join(linecache.getlines(funcion.__code__.co_filename))


async def muere_tras_la_herramienta(
    almacen: Path, run_id: str, tarea: str, *objetos: Any
) -> tuple[int, dict[str, Any]]:
    """Corre el run en otro proceso con las celdas de `objetos`; devuelve su código de salida
    y lo que contó antes de morir: `{"modelo": llamadas, "notas": las notas apuntadas}`."""
    entrada = {
        "celdas": [celda_de(o) for o in objetos],
        "almacen": str(almacen),
        "run_id": run_id,
        "tarea": tarea,
    }
    proceso = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).resolve()),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    salida, errores = await proceso.communicate(json.dumps(entrada).encode())
    if not salida.strip():
        raise RuntimeError(f"el hijo acabó con {proceso.returncode} sin contar nada: {errores}")
    return proceso.returncode, json.loads(salida)


async def _primera_vuelta(entrada: dict[str, Any]) -> None:
    celdas: dict[str, Any] = {}
    exec(PRELUDIO, celdas)
    for texto in entrada["celdas"]:
        exec(texto, celdas)
    agente = celdas["agente"]
    puerta = ScriptedGateway([celdas["modelo"]] * 4, tools=list(agente.tools.values()))
    sesion = Session(entrada["run_id"], puerta, SqliteCheckpointer(Path(entrada["almacen"])))
    async for paso in agente.run(entrada["tarea"], session=sesion):
        if paso.kind == "tool" and paso.phase.value == "completed":
            print(json.dumps({"modelo": puerta.model_calls, "notas": celdas["NOTAS"]}), flush=True)
            mata(os.getpid())  # el paso ya está en el journal


if __name__ == "__main__":
    asyncio.run(_primera_vuelta(json.load(sys.stdin)))
