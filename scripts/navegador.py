"""The property notebooks in a reader's browser: which ones can run there, and what the run needs.

Pyodide (CPython compiled to WebAssembly) is pinned in `package.json` and installed from the npm
registry with `npm ci` into `node_modules/pyodide/`. The site serves it itself
(`docs/_hooks/navegador.py` copies it into `navegador/pyodide/` of the built site) along with
`navegador/repo.zip`, the files of this checkout a notebook imports (`package_archive`): nothing
comes from another origin. The same archive and the same Pyodide run the notebooks under Node
in `tests/navegador/`, and in Chromium in `tests/site/test_en_el_navegador.py`.

A notebook that needs a real process (`NEEDS_A_PROCESS`: it SIGKILLs a child, or starts a
second worker or a server) cannot run in a browser: Pyodide is one process. Its page says so,
and how to run it locally; scripts/hechos.py checks the list against what the notebooks do.
"""

from __future__ import annotations

import importlib.util
import io
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scripts.pages import NOTEBOOKS, REPO, property_notebooks

if TYPE_CHECKING:
    from scripts.kernel import NotebookRun

PYODIDE = REPO / "node_modules" / "pyodide"

#: The files of the npm package `pyodide` a page needs to run Python (the rest are maps,
#: types and demo consoles).
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)

#: Notebooks that cannot run in a browser, and why (said on their page, where the run would be).
NEEDS_A_PROCESS = {
    "00_primer_run": "mata con SIGKILL un proceso hijo de verdad, el que corre tus celdas",
    "02_durabilidad": "mata con SIGKILL un proceso hijo de verdad",
    "06_kill_9": "mata con SIGKILL un proceso hijo de verdad en cada frontera del run",
    "08_concurrencia": "arranca un segundo trabajador en otro proceso y lo mata con SIGKILL",
    "17_herramientas_mcp": "arranca un servidor MCP en otro proceso, que muere con SIGKILL",
    "18_runs_a_la_vez": "mata con SIGKILL un proceso hijo de verdad con varios runs dentro",
    "19_agente_remoto": "arranca un servidor A2A y mata con SIGKILL un proceso hijo de verdad",
    "22_trazas_que_sobreviven": "mata con SIGKILL un proceso hijo de verdad que envía su traza",
    "23_presupuesto": (
        "mata con SIGKILL un proceso hijo de verdad a mitad de un run con presupuesto"
    ),
    "24_agentes_en_cadena": "mata con SIGKILL un proceso hijo de verdad entre dos eslabones",
    "27_en_paralelo": "mata con SIGKILL un proceso hijo de verdad con tres ramas a la vez",
}

#: Where the repository's files sit in Pyodide's file system; a notebook runs in
#: `<REPO_IN_PYODIDE>/notebooks/propiedades`, as in JupyterLab.
REPO_IN_PYODIDE = "/repo"

MISSING = (
    "Pyodide is not installed in node_modules/ (the in-browser run of the property pages needs "
    "it): run `npm ci` at the repository root (Node.js and npm: apt-get install -y nodejs npm)"
)


class PyodideMissing(RuntimeError):
    """`node_modules/pyodide` is missing or incomplete; the message says how to install it."""


def browser_notebooks() -> list[Path]:
    """The property notebooks that run in a browser, in order."""
    return [path for path in property_notebooks() if path.stem not in NEEDS_A_PROCESS]


def pyodide_files() -> list[Path]:
    """The Pyodide files the site serves; raises `PyodideMissing` saying how to get them."""
    files = [PYODIDE / name for name in PYODIDE_FILES]
    if not all(path.is_file() for path in files):
        raise PyodideMissing(MISSING)
    return files


def package_archive() -> bytes:
    """A zip of what a notebook imports from this checkout, at its repository path:
    `synaptum_lite/` and `notebooks/comun.py` (and the notebooks' own helper modules)."""
    members = sorted((REPO / "synaptum_lite").rglob("*.py"))
    members += [NOTEBOOKS / "comun.py", *sorted((NOTEBOOKS / "propiedades").glob("_*.py"))]
    members.append(REPO / "synaptum_lite" / "py.typed")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in members:
            if path.is_file():
                info = zipfile.ZipInfo(path.relative_to(REPO).as_posix(), (2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def _comun() -> Any:
    """A private copy of notebooks/comun.py, loaded afresh (its constants, its header)."""
    spec = importlib.util.spec_from_file_location("_comun_del_navegador", NOTEBOOKS / "comun.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mode_lines() -> tuple[str, str]:
    """The header's mode line as Pyodide prints it, and as a local run without a model prints
    it (the page's block comes from a local run): `notebooks/comun.py`, `linea_de_modo`."""
    comun = _comun()
    saved = {
        name: os.environ.pop(name) for name in comun.VARIABLES_DEL_MODELO if name in os.environ
    }
    try:
        return comun.MODO_EN_EL_NAVEGADOR, comun.linea_de_modo()
    finally:
        os.environ.update(saved)


def as_printed_locally(run: NotebookRun) -> NotebookRun:
    """`run` (a run on Pyodide) with its header's mode line as a local run prints it.

    In a browser there is no environment to export a model's URL into, so the header says so
    (`MODO_EN_EL_NAVEGADOR`) where a local run says «exporta SYNAPTUM_BASE_URL…». That one
    line, the first printed line equal to the browser's mode line, is the only one the
    comparison with the page's block treats specially; every other line is compared exactly.
    A notebook that always runs on the double prints the same mode line everywhere, and is
    left as it is.
    """
    browser, local = mode_lines()
    for cell in run.cells:
        lines = cell.stdout.splitlines(keepends=True)
        for number, line in enumerate(lines):
            if line.rstrip("\n") == browser:
                lines[number] = local + line[len(browser) :]
                cell.stdout = "".join(lines)
                return run
    return run
