"""Lo que comparten los cuadernos: la cabecera que imprimen, el modelo con el que hablan,
las afirmaciones que comprueban, los parámetros que aceptan, cómo se mata un proceso y cómo se
imprime una fase.

Sin nada en el entorno, cada cuaderno corre sobre el doble de pruebas de
`synaptum_lite.testing`: respuestas guionizadas, sin red y sin clave; todo lo demás es real.
Con `SYNAPTUM_BASE_URL` (un servidor compatible con OpenAI) o `AXONIUM_CLIENT_ID` en el
entorno, el mismo cuaderno habla con un modelo de verdad; lo que cambia es lo que dice el
modelo, no el código.

Cada viñeta de *Lo que esto enseña* lleva un id (`02.no-repaga`, en los metadatos de su celda:
`synaptum.afirmaciones`), y una celda del cuaderno, plegada y fuera de la página (etiqueta
`verificacion`), la comprueba con `afirma("02.no-repaga", condición, "mensaje", **valores)`.
La comprobación de las páginas exige que cada id de una página se haya comprobado al
ejecutarla, y que cada número de su frase esté entre los `valores` que apuntó o en lo que
imprime el cuaderno (ver *Probar* y `scripts/claims.py`).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Variables de entorno que eligen un modelo real. Si no hay ninguna, se usa el doble.
VARIABLES_DEL_MODELO = ("SYNAPTUM_BASE_URL", "AXONIUM_CLIENT_ID")

MODELO_GUIONIZADO = "guionizado"

#: Variable de entorno con la carpeta donde `afirma` apunta los ids que comprobó. La pone la
#: comprobación de las páginas (`scripts/claims.py`); en JupyterLab no está, y no se apunta nada.
CARPETA_DE_AFIRMACIONES = "AFIRMACIONES_COMPROBADAS"

#: Los ids que este proceso ya comprobó, en orden.
COMPROBADAS: list[str] = []


def modelo_real() -> str | None:
    """La variable que pide un modelo real (Axonium manda), o `None` si no hay ninguna."""
    if os.environ.get("AXONIUM_CLIENT_ID"):
        return "AXONIUM_CLIENT_ID"
    if os.environ.get("SYNAPTUM_BASE_URL"):
        return "SYNAPTUM_BASE_URL"
    return None


def nombre_del_modelo() -> str:
    """El nombre que el agente declara como su modelo.

    `"guionizado"` sobre el doble; con un modelo real, `SYNAPTUM_MODEL` (o `"desconocido"`
    si no está puesto, para que el error lo dé el proveedor y no este módulo).
    """
    if modelo_real() is None:
        return MODELO_GUIONIZADO
    return os.environ.get("SYNAPTUM_MODEL", "desconocido")


#: Lo que dice la cabecera de un cuaderno que corre siempre sobre el doble, haya lo que haya en
#: el entorno: exportar `SYNAPTUM_BASE_URL` no cambiaría nada.
MODO_SIEMPRE_EL_DOBLE = (
    "sin inferencia · respuestas guionizadas (este cuaderno usa siempre el doble)"
)

#: Lo que dice la cabecera en el navegador (Pyodide), donde no hay entorno que exportar: para
#: hablar con un modelo real, el cuaderno se corre en local.
MODO_EN_EL_NAVEGADOR = (
    "sin inferencia · respuestas guionizadas (en el navegador no hay modelo real; en local, sí)"
)


def linea_de_modo(*, siempre_el_doble: bool = False) -> str:
    """Con qué se está hablando, para que nadie confunda un guion con un modelo.

    Con `siempre_el_doble`, la de un cuaderno que no usa `gateway` sino el doble directamente:
    dice que el doble contesta siempre, no que exportar una variable lo cambie.
    """
    if siempre_el_doble:
        return MODO_SIEMPRE_EL_DOBLE
    variable = modelo_real()
    if variable is None:
        if sys.platform == "emscripten":  # Pyodide, en el navegador: no hay nada que exportar
            return MODO_EN_EL_NAVEGADOR
        return (
            "sin inferencia · respuestas guionizadas "
            "(exporta SYNAPTUM_BASE_URL para usar un modelo real)"
        )
    if variable == "AXONIUM_CLIENT_ID":
        return f"vía SDK de plataforma · {nombre_del_modelo()}"
    return f"HTTP directo · {os.environ['SYNAPTUM_BASE_URL']}"


def encabezado(titulo: str, *, siempre_el_doble: bool = False) -> None:
    """Imprime la cabecera de un cuaderno: título, una raya del mismo largo y el modo.

    `siempre_el_doble=True` en los cuadernos que corren sobre el doble por diseño (su página
    dice por qué): su modo lo dice, con o sin modelo en el entorno.
    """
    print()
    print(titulo)
    print("─" * len(titulo))
    print(linea_de_modo(siempre_el_doble=siempre_el_doble))
    print()


def gateway(
    guion: Sequence[Any | Callable[..., Any]], *, tools: Sequence[Any] = (), **opciones: Any
) -> Any:
    """La puerta por la que salen las llamadas al modelo y a las herramientas.

    Sin modelo configurado devuelve el doble, `ScriptedGateway(guion, tools=tools)`, que
    contesta con el guion (respuestas o funciones que responden según la petición) y ejecuta
    las herramientas de verdad. Cualquier gateway que devuelve cuenta `model_calls`.
    `opciones` pasa al gateway: `policy=` (la política, en cualquier gateway) y
    `chunk_size=` (el tamaño de los fragmentos que emite el doble; un modelo real manda los
    suyos, así que ahí se ignora).

    Con `AXONIUM_CLIENT_ID` en el entorno contesta un modelo de la plataforma, por su SDK
    (`synaptum_lite.gateways.axonium`); si no, con `SYNAPTUM_BASE_URL`, un servidor compatible con
    OpenAI por HTTP (`synaptum_lite.gateways.http`). El guion se ignora: contesta el modelo.
    """
    variable = modelo_real()
    if variable is None:
        from synaptum_lite.testing import ScriptedGateway

        return ScriptedGateway(list(guion), tools=tools, **opciones)
    opciones.pop("chunk_size", None)
    if variable == "AXONIUM_CLIENT_ID":
        from synaptum_lite.gateways.axonium import AxoniumGateway

        return AxoniumGateway.from_env(tools=tools, **opciones)
    from synaptum_lite.gateways.http import OpenAICompatibleGateway

    return OpenAICompatibleGateway.from_env(tools=tools, **opciones)


def afirma(id_: str, cierto: bool, mensaje: str, **valores: Any) -> None:
    """Comprueba la afirmación `id_` de una página: si `cierto` es falso, lanza
    `AssertionError` con el id, el mensaje y los valores; si es verdadero, la apunta como
    comprobada, con sus valores.

    `valores` son los números (o textos) que la comprobación comparó, con nombre:
    `afirma("02.escrito-antes-de-entregar", len(en_disco) == 4, "…", eventos=len(en_disco))`.
    Cada número que dice la frase de ese id tiene que estar entre ellos o en lo que imprime el
    cuaderno (`scripts/claims.py`).

    Apuntarla es añadir el id a `COMPROBADAS` y, si la comprobación de las páginas puso
    `AFIRMACIONES_COMPROBADAS`, escribir una línea JSON, `{"id": …, "valores": {…}}`, en un
    fichero de esa carpeta (uno por proceso, así que varios kernels a la vez no se pisan). No
    imprime nada: la salida del cuaderno no cambia.
    """
    if not cierto:
        vistos = ", ".join(f"{nombre}={valor!r}" for nombre, valor in valores.items())
        raise AssertionError(f"{id_}: {mensaje}" + (f" ({vistos})" if vistos else ""))
    COMPROBADAS.append(id_)
    carpeta = os.environ.get(CARPETA_DE_AFIRMACIONES)
    if carpeta:
        linea = json.dumps({"id": id_, "valores": valores}, ensure_ascii=False, default=str)
        with open(os.path.join(carpeta, f"{os.getpid()}.txt"), "a", encoding="utf-8") as f:
            f.write(linea + "\n")


# ── Matar un proceso sin avisarle ──────────────────────────────────────────────────────────

#: Cómo matan los cuadernos un proceso: con `SIGKILL` en Linux y macOS, que no le deja correr
#: ni un `finally`. Windows no tiene esa señal: allí `os.kill` con cualquier otro número llama a
#: `TerminateProcess`, que tampoco deja correr nada, y ese número queda como código de salida.
MUERTE = "SIGKILL" if hasattr(signal, "SIGKILL") else "TerminateProcess"
_SENAL = getattr(signal, "SIGKILL", 9)

#: El código de salida (`returncode`) de un proceso muerto con `mata`: la señal en negativo en
#: Linux y macOS (-9), el número que le dio `TerminateProcess` en Windows (9).
CODIGO_DE_MUERTE = -_SENAL if hasattr(signal, "SIGKILL") else _SENAL


def mata(pid: int) -> None:
    """Mata el proceso `pid` sin avisarle (`MUERTE`); `mata(os.getpid())`, a sí mismo."""
    os.kill(pid, _SENAL)


def vivo(pid: int) -> bool:
    """Si el proceso `pid` existe. En Linux y macOS, la señal 0 solo pregunta; en Windows
    `os.kill(pid, 0)` lo mataría, así que se le pregunta a Windows si el proceso ha acabado."""
    if os.name == "nt":
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        proceso = kernel32.OpenProcess(0x00100000, False, pid)  # SYNCHRONIZE
        if not proceso:
            return False
        try:
            return bool(kernel32.WaitForSingleObject(proceso, 0) == 0x102)  # WAIT_TIMEOUT
        finally:
            kernel32.CloseHandle(proceso)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ── Cómo se imprime una fase ──────────────────────────────────────────────────────────────

#: La fase de un evento (`Phase`) como la dice el glosario. El journal guarda el valor en
#: inglés; lo que imprime un cuaderno, este.
FASES = {"attempted": "intentado", "completed": "completado", "resolved": "resuelto"}


def fase_de(evento: Any) -> str:
    """La fase de un evento en español: «intentado», «completado» o «resuelto»."""
    return FASES[evento.phase.value]


# ── Los parámetros ────────────────────────────────────────────────────────────────────────
#
# Cada cuaderno tiene una celda `parameters` (papermill la cambia con `-p nombre valor`) y, justo
# después, una celda que comprueba esos valores con las funciones de aquí. Un valor que el
# cuaderno no sabe enseñar para en esa celda con `ParametroInvalido`, antes de imprimir nada.


class ParametroInvalido(ValueError):
    """Un valor de la celda `parameters` que el cuaderno no sabe enseñar.

    El mensaje dice el parámetro, su valor y lo que el cuaderno admite. Jupyter y papermill lo
    enseñan en una línea, sin traceback (`_render_traceback_` es el protocolo de IPython para
    eso): el fallo está en el valor, no en el código que lo rechaza.
    """

    def __init__(self, nombre: str, valor: object, admite: str) -> None:
        self.nombre = nombre
        self.valor = valor
        self.admite = admite
        super().__init__(
            f"{nombre} = {valor!r} no vale en este cuaderno: admite {admite}. "
            f"Cámbialo en la celda parameters (con papermill: -p {nombre} VALOR)."
        )

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def valida_carpeta(carpeta: object, *, crea: Sequence[str]) -> None:
    """`carpeta` vale `None` (una carpeta temporal nueva) o es una carpeta, exista o no, sin
    nada de lo que el cuaderno crea en ella.

    `crea` son nombres o patrones (`muerte-*`). Si ya están, son de otra ejecución, y el
    cuaderno los mezclaría con lo suyo: reanudaría sus runs en vez de empezar, o contaría
    sus efectos como propios.
    """
    if carpeta is None:
        return
    if not isinstance(carpeta, str | os.PathLike) or not os.fspath(carpeta):
        raise ParametroInvalido("carpeta", carpeta, "None o la ruta de una carpeta")
    ruta = Path(carpeta)
    if ruta.exists() and not ruta.is_dir():
        raise ParametroInvalido("carpeta", carpeta, "None o una carpeta, y esa ruta es un fichero")
    ya = sorted({p.name for patron in crea for p in ruta.glob(patron)}) if ruta.is_dir() else []
    if ya:
        raise ParametroInvalido(
            "carpeta",
            carpeta,
            f"None o una carpeta sin {', '.join(crea)}; esta ya tiene {', '.join(ya)}, de otra "
            "ejecución, y el cuaderno lo mezclaría con lo suyo: bórralo o usa otra carpeta",
        )


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def valida_run_ids(**run_ids: object) -> None:
    """Cada run_id es un texto de letras sin tilde, cifras, `-`, `_` o `.` (se imprime y da
    nombre a ficheros; `/` separa el de un subrun), y dos parámetros no nombran el mismo run."""
    for nombre, valor in run_ids.items():
        if not isinstance(valor, str) or not _RUN_ID.fullmatch(valor):
            raise ParametroInvalido(
                nombre,
                valor,
                "un texto de letras sin tilde, cifras, «-», «_» o «.», que empiece por letra o "
                "cifra (por ejemplo 'run-2')",
            )
    primero: dict[object, str] = {}
    for nombre, valor in run_ids.items():
        if valor in primero:
            otro = primero[valor]
            raise ParametroInvalido(nombre, valor, f"un run_id distinto de {otro}: son dos runs")
        primero[valor] = nombre


def valida_numero(
    nombre: str,
    valor: object,
    *,
    minimo: float,
    maximo: float,
    entero: bool = False,
    decimales: int | None = None,
    porque: str = "",
) -> None:
    """`valor` es un número (un `int` si `entero`) entre `minimo` y `maximo`, ambos incluidos,
    con `decimales` cifras decimales como mucho. `porque` dice de dónde sale el intervalo."""
    tipos = int if entero else int | float
    valido = (
        isinstance(valor, tipos)
        and not isinstance(valor, bool)
        and (isinstance(valor, int) or math.isfinite(valor))
        and minimo <= valor <= maximo
        and (decimales is None or round(valor, decimales) == valor)
    )
    if not valido:
        admite = f"{'un entero' if entero else 'un número'} entre {minimo:g} y {maximo:g}"
        if decimales is not None:
            cifras = "una cifra decimal" if decimales == 1 else f"{decimales} cifras decimales"
            admite += f", con {cifras} como mucho"
        if porque:
            admite += f" ({porque})"
        raise ParametroInvalido(nombre, valor, admite)


def valida_si_o_no(nombre: str, valor: object) -> None:
    """`valor` es `True` o `False` (con papermill, `-p nombre False`); ni 0, ni 1, ni "no"."""
    if not isinstance(valor, bool):
        raise ParametroInvalido(nombre, valor, "True o False")


def valida_opcion(nombre: str, valor: object, opciones: Sequence[object]) -> None:
    """`valor` es uno de `opciones` (`None` incluido, si está)."""
    if not any(valor is o or (type(valor) is type(o) and valor == o) for o in opciones):
        nombres = [repr(o) for o in opciones]
        admite = f"{', '.join(nombres[:-1])} o {nombres[-1]}" if len(nombres) > 1 else nombres[0]
        raise ParametroInvalido(nombre, valor, admite)
