"""The Python side of the in-browser run (`trabajador.js` loads it once into Pyodide).

A run of a page's cells starts from what a fresh kernel would find, without loading Python
again: `limpia` forgets what the last run left (the modules imported from /repo, and /repo
itself with the files the cells wrote, such as runs.db; the worker then unpacks repo.zip
anew), `prepara` puts back the environment, the path and the working folder, imports
`synaptum_lite` and what the cells import ahead of the click, and makes the cells' globals;
`corre` runs one cell there and, when it raises, returns the exception's own sentence and the
whole traceback, apart.
"""

from __future__ import annotations

import ast
import builtins
import gc
import importlib
import linecache
import os
import shutil
import sys
import traceback
from typing import Any

REPO = "/repo"
#: Where a notebook runs, as in JupyterLab: beside it.
CARPETA = REPO + "/notebooks/propiedades"
#: Imported before the click: the package and the notebooks' shared module.
SIEMPRE = ("synaptum_lite", "synaptum_lite.testing", "comun")

_ENTORNO = dict(os.environ)
_RUTA = list(sys.path)
_globales: dict[str, Any] = {}


def limpia() -> None:
    """Forget the previous run: the modules loaded from /repo, and /repo's files."""
    os.chdir("/")
    for nombre, modulo in list(sys.modules.items()):
        if (getattr(modulo, "__file__", None) or "").startswith(REPO + "/"):
            del sys.modules[nombre]
    _globales.clear()
    gc.collect()
    shutil.rmtree(REPO, ignore_errors=True)


def _importaciones(fuentes: Any) -> list[str]:
    """The modules the cells import that are safe to import ahead: the package and the
    standard library (a helper of the notebook's own could print, and must print in the run)."""
    nombres = list(SIEMPRE)
    for fuente in fuentes or ():
        try:
            arbol = ast.parse(str(fuente))
        except SyntaxError:
            continue
        for nodo in ast.walk(arbol):
            if isinstance(nodo, ast.Import):
                nombres += [alias.name for alias in nodo.names]
            elif isinstance(nodo, ast.ImportFrom) and nodo.module and not nodo.level:
                nombres.append(nodo.module)
    return [
        nombre
        for nombre in dict.fromkeys(nombres)
        if nombre.split(".")[0] in {"synaptum_lite", "comun"}
        or nombre.split(".")[0] in sys.stdlib_module_names
    ]


async def prepara(fuentes: Any) -> None:
    """A fresh state for the next run (after `limpia` and a new /repo)."""
    os.environ.clear()
    os.environ.update(_ENTORNO)
    # comun.py is found as a notebook finds it (its first cell puts notebooks/ on the path)
    sys.path[:] = [REPO + "/notebooks", REPO, *_RUTA]
    os.chdir(CARPETA)
    importlib.invalidate_caches()
    for nombre in _importaciones(fuentes):
        try:
            importlib.import_module(nombre)
        except Exception:  # noqa: BLE001 (the cell that imports it will say why)
            pass
    sys.path[:] = [REPO, *_RUTA]
    _globales.clear()
    _globales.update(__name__="__main__", __builtins__=builtins)


async def corre(fuente: str, numero: int) -> list[str] | None:
    """Run one cell; None, or [the exception's sentence, the whole traceback]."""
    from pyodide.code import eval_code_async

    nombre = f"<celda {numero}>"
    linecache.cache[nombre] = (len(fuente), None, fuente.splitlines(True), nombre)
    try:
        await eval_code_async(fuente, _globales, filename=nombre)
    except BaseException as error:  # noqa: BLE001 (the reader's code: shown, never hidden)
        sys.stdout.flush()
        resumen = "".join(traceback.format_exception_only(error)).rstrip("\n")
        detalle = "".join(traceback.format_exception(error)).rstrip("\n")
        return [resumen, detalle]
    sys.stdout.flush()
    sys.stderr.flush()
    return None
