"""Las ramas del cuaderno 27 en otro proceso, que muere a mitad.

    python _hijo_27.py ALMACEN RUN_ID EFECTOS MUERE_EN

Corre `en_paralelo` con el prefijo `RUN_ID` sobre el journal `ALMACEN` (un fichero SQLite): tres
analistas a la vez (`mercado`, `costes`, `riesgos`, cada uno su run `RUN_ID/rama`) y, cuando
acaban los tres, `sintesis`, que junta sus respuestas y publica un informe. Se para donde dice
`MUERE_EN`, escribe en su salida una línea JSON que lo dice y se queda esperando a leer su
entrada; el cuaderno lee esa línea y lo mata con SIGKILL:

- `ramas`: `mercado` y `costes` cerradas, y `riesgos` a medias, con su consulta ya hecha y
  apuntada en el journal, antes de su última llamada al modelo;
- `sintesis`: las tres ramas cerradas, y `sintesis` con el informe ya publicado y apuntado en el
  journal, antes de su última llamada al modelo.

En este proceso, la herramienta de las ramas, `consultar`, espera a que las tres estén dentro a
la vez antes de contestar: si las ramas corrieran una detrás de otra, la primera esperaría para
siempre (y el cuaderno acabaría por su cota, diciéndolo). Cada llamada al modelo (de qué run,
cuántos mensajes y cuántos bytes lleva su petición) y cada herramienta se apuntan en `EFECTOS`,
una línea JSON por vez, antes de seguir: el apunte sobrevive al kill. El cuaderno importa este
módulo para reanudar con los mismos agentes, la misma función `en_paralelo` y el mismo doble.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

from synaptum_lite import Agent, FinalStep, Phase, Risk, Role, Session, SqliteCheckpointer, tool
from synaptum_lite.testing import ScriptedGateway, calls, says

TAREA = "¿Abrimos una tienda en Lugo este año? Dame una recomendación con sus razones."
MUERTES = ("ramas", "sintesis")

#: Dónde se apunta cada llamada al modelo y cada herramienta (None: en ningún sitio).
EFECTOS: Path | None = None

#: Cada petición que recibió el doble en este proceso, con su run, en orden.
PETICIONES: list[tuple[str, Any]] = []

#: Cuántas ramas tienen que estar dentro de `consultar` a la vez para que conteste
#: (None: no espera; así es al reanudar, en el cuaderno, donde no se consulta nada).
A_LA_VEZ: int | None = None
_dentro: list[str] = []
_todas_dentro = asyncio.Event()

DATOS = {
    "censo": "Lugo: 98.000 habitantes; el barrio de la Milagrosa crece un 3 % al año.",
    "alquileres": "Local de 120 m² en la Milagrosa: 1.400 € al mes; obra de 18.000 €.",
    "competencia": "Dos tiendas parecidas en el centro; ninguna en la Milagrosa.",
}
CONCLUSIONES = {
    "mercado": "Hay mercado: la Milagrosa crece un 3 % al año y no tiene tienda.",
    "costes": "Asumible: 1.400 € de alquiler y 18.000 € de obra; se paga en unos 20 meses.",
    "riesgos": "Riesgo bajo: la competencia está en el centro, lejos de la Milagrosa.",
}
INFORME = "Abrir en la Milagrosa: hay mercado, coste asumible y competencia lejos."


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
async def consultar(fuente: Annotated[str, "censo, alquileres o competencia"]) -> str:
    """Consulta una fuente de datos sobre la ciudad."""
    _dentro.append(fuente)
    apuntar(que="consultar", fuente=fuente, a_la_vez=len(_dentro))
    if A_LA_VEZ is not None:
        if len(_dentro) >= A_LA_VEZ:
            _todas_dentro.set()
        await _todas_dentro.wait()  # la cota de un cuelgue la pone el cuaderno
    _dentro.remove(fuente)
    return DATOS[fuente]


@tool(risk=Risk.SOFT_WRITE)
def publicar_informe(informe: Annotated[str, "la recomendación, en una frase"]) -> str:
    """Publica el informe para la dirección."""
    apuntar(que="publicar_informe")
    return "informe publicado"


def analista(nombre: str, fuente: str, pregunta: str) -> Agent:
    return Agent(
        f"analista de {nombre}",
        model="guionizado",
        instructions=f"Eres analista de {nombre}. Consulta «{fuente}» y contesta: {pregunta}",
        tools=[consultar],
    )


#: Las ramas, cada una con la fuente que consulta; el nombre da su run (`RUN_ID/mercado`).
RAMAS = (
    ("mercado", "censo", analista("mercado", "censo", "¿hay clientes?")),
    ("costes", "alquileres", analista("costes", "alquileres", "¿cuánto cuesta abrir?")),
    ("riesgos", "competencia", analista("riesgos", "competencia", "¿qué puede salir mal?")),
)
sintetizador = Agent(
    "sintetizador",
    model="guionizado",
    instructions="Juntas lo que dicen los analistas en una recomendación, y la publicas.",
    tools=[publicar_informe],
)
DE_QUIEN = {agente.instructions: nombre for nombre, _fuente, agente in RAMAS}
DE_QUIEN[sintetizador.instructions] = "sintesis"
FUENTE = {nombre: fuente for nombre, fuente, _agente in RAMAS}


def tamano(peticion: Any) -> int:
    """Los bytes de los mensajes que ve el modelo, en JSON (UTF-8)."""
    return sum(len(json.dumps(m.to_json(), ensure_ascii=False).encode()) for m in peticion.messages)


def responder(peticion: Any) -> Any:
    """El doble contesta a los cuatro runs según la petición: sabe a quién por las
    instrucciones del sistema, y qué toca por lo que ya hay en el contexto."""
    sistema, *resto = peticion.messages
    run = DE_QUIEN[sistema.content]
    PETICIONES.append((run, peticion))
    apuntar(que="modelo", run=run, mensajes=len(peticion.messages), bytes=tamano(peticion))
    resultado = next((m.content for m in resto if m.role is Role.TOOL), None)
    if run == "sintesis":
        if resultado is None:
            return calls("publicar_informe", informe=INFORME)
        return says(f"Publicado: {INFORME}")
    if resultado is None:
        return calls("consultar", fuente=FUENTE[run])
    return says(CONCLUSIONES[run])


def puerta() -> ScriptedGateway:
    """El doble, siempre: aquí se mide el reparto y la muerte, no lo que dice un modelo."""
    return ScriptedGateway([responder] * 8, tools=[consultar, publicar_informe])


#: Lo que se llama tras cada paso de cada run, con el nombre del run (lo usa el hijo).
AlPaso = Callable[[str, Any], Awaitable[None]]


async def correr(
    nombre: str, agente: Agent, tarea: str, run_id: str, checkpointer: Any, al_paso: AlPaso | None
) -> str:
    """Un run de `agente` hasta su paso final, en su propia sesión; su respuesta."""
    final = None
    async for paso in agente.run(tarea, session=Session(run_id, puerta(), checkpointer)):
        if isinstance(paso, FinalStep):
            final = paso
        if al_paso is not None:
            await al_paso(nombre, paso)
    assert final is not None and final.output is not None, f"{run_id} no acabó"
    return final.output


def tarea_de_sintesis(tarea: str, respuestas: dict[str, str]) -> str:
    """Lo que recibe `sintesis`: la pregunta y la respuesta de cada rama, nada más."""
    return "\n".join([tarea, *(f"{nombre}: {texto}" for nombre, texto in respuestas.items())])


async def en_paralelo(
    tarea: str, run_id: str, checkpointer: Any, *, al_paso: AlPaso | None = None
) -> str:
    """Las tres ramas a la vez, cada una su run (`run_id/rama`); después, `sintesis`
    (`run_id/sintesis`) con sus tres respuestas. Cada run es durable por su cuenta."""
    respuestas = await asyncio.gather(
        *(
            correr(nombre, agente, tarea, f"{run_id}/{nombre}", checkpointer, al_paso)
            for nombre, _fuente, agente in RAMAS
        )
    )
    juntas = tarea_de_sintesis(tarea, dict(zip([r[0] for r in RAMAS], respuestas, strict=True)))
    return await correr(
        "sintesis", sintetizador, juntas, f"{run_id}/sintesis", checkpointer, al_paso
    )


async def primera_vuelta(almacen: Path, run_id: str, muere_en: str) -> None:
    cerradas: set[str] = set()
    otras_cerradas = asyncio.Event()

    async def muere_aqui() -> None:
        print(json.dumps({"muere_en": muere_en}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # aquí lo mata el cuaderno

    async def al_paso(nombre: str, paso: Any) -> None:
        if isinstance(paso, FinalStep):
            cerradas.add(nombre)
            if {"mercado", "costes"} <= cerradas:
                otras_cerradas.set()
        publicado = getattr(paso, "phase", None) is Phase.COMPLETED and paso.kind == "tool"
        if publicado and muere_en == "ramas" and nombre == "riesgos":
            await otras_cerradas.wait()  # la cota de un cuelgue la pone el cuaderno
            await muere_aqui()
        if publicado and muere_en == "sintesis" and nombre == "sintesis":
            await muere_aqui()

    await en_paralelo(TAREA, run_id, SqliteCheckpointer(almacen), al_paso=al_paso)
    raise SystemExit(f"en_paralelo {run_id} acabó sin que nadie matara el proceso")


if __name__ == "__main__":
    ALMACEN, RUN_ID, EFECTOS_, MUERE_EN = sys.argv[1:]
    EFECTOS = Path(EFECTOS_)
    A_LA_VEZ = len(RAMAS)
    asyncio.run(primera_vuelta(Path(ALMACEN), RUN_ID, MUERE_EN))
