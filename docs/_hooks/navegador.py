"""MkDocs hook: each property page can run its own cells in the reader's browser.

- `on_page_content` puts, right under a property page's *Lo que imprime* block, the run
  panel: Pyodide starts in a Web Worker when the page opens and stays loaded, and a button
  runs the page's code cells (which the reader can edit), each run from a fresh state, and
  shows under each cell what it printed (`_hooks/navegador/pagina.js`, `trabajador.js`,
  `runtime.py`). A
  notebook that needs a real process (`scripts.navegador.NEEDS_A_PROCESS`) gets, in the same
  place, what it needs and the commands that run it locally.
- `on_post_build` writes `navegador/` into the site: Pyodide's files from `node_modules/pyodide`
  (the npm package pinned in `package.json`), `repo.zip` (this checkout's `synaptum_lite` and
  `notebooks/comun.py`), the worker and its Python (`runtime.py`), the page's script and its
  style. The site serves everything the run needs: nothing comes from another origin.

When `node_modules/pyodide` is missing, the build runs `npm ci` itself (it needs npm, and the
npm registry once, as `uv` needs PyPI); without npm it fails saying how to get it.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.navegador import (  # noqa: E402  (the repository root is importable only now)
    MISSING,
    NEEDS_A_PROCESS,
    PyodideMissing,
    package_archive,
    pyodide_files,
)
from scripts.pages import EXPECTED_HEADING, how_to_run  # noqa: E402

OWN_FILES = Path(__file__).with_name("navegador")  # pagina.js, trabajador.js, runtime.py, css

_BLOCK = re.compile(
    r"<h([1-6])[^>]*>\s*" + re.escape(EXPECTED_HEADING) + r".*?</h\1>.*?</pre>", re.S
)


def on_pre_build(config: MkDocsConfig) -> None:
    try:
        pyodide_files()
    except PyodideMissing:
        npm = shutil.which("npm")
        if npm is None:
            raise PluginError(MISSING) from None
        print("INFO    -  node_modules/pyodide is missing: running npm ci", file=sys.stderr)
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=REPO, check=False)
        if done.returncode != 0:
            raise PluginError(f"npm ci failed (exit {done.returncode}). {MISSING}") from None
        pyodide_files()


@event_priority(-50)  # after docs/_hooks/notebooks.py has written the block verbatim
def on_page_content(content: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if not page.file.src_uri.startswith("propiedades/") or not page.file.src_uri.endswith(".ipynb"):
        return content
    stem = Path(page.file.src_uri).stem
    style = get_relative_url("navegador/navegador.css", page.url)
    if stem in NEEDS_A_PROCESS:
        notebook = REPO / "notebooks" / "propiedades" / f"{stem}.ipynb"
        commands = "".join(html.escape(command) for command in how_to_run(notebook))
        panel = (
            f'<link rel="stylesheet" href="{style}">'
            '<div class="navegador-ejecutar navegador-no">'
            "<p><strong>Esta página no se ejecuta en el navegador:</strong> el cuaderno "
            f"{html.escape(NEEDS_A_PROCESS[stem])}, y en el navegador Python es un solo "
            "proceso (Pyodide). Córrelo en local, desde la raíz del repositorio:</p>"
            f'<pre><code class="language-bash">{commands}</code></pre></div>'
        )
    else:
        worker = get_relative_url("navegador/trabajador.js", page.url)
        script = get_relative_url("navegador/pagina.js", page.url)
        panel = (
            f'<link rel="stylesheet" href="{style}">'
            f'<div class="navegador-ejecutar" data-trabajador="{worker}">'
            '<p><button type="button">Ejecutar en el navegador</button> '
            '<span class="navegador-estado"></span></p>'
            "<p>Python (Pyodide) se carga en tu navegador al abrir la página, sin instalar "
            "nada, y se queda cargado: el botón corre las celdas de esta página aquí mismo y "
            "enseña debajo de cada celda lo que imprime. Puedes cambiar el código de cualquier "
            "celda y volver a ejecutar: cada ejecución empieza de cero, como un kernel "
            "nuevo.</p></div>"
            f'<script src="{script}" defer></script>'
        )
    content, found = _BLOCK.subn(lambda match: match.group(0) + panel, content, count=1)
    if not found:
        raise PluginError(f"{page.file.src_uri}: no '{EXPECTED_HEADING}' block for the run panel")
    return content


def on_post_build(config: MkDocsConfig) -> None:
    target = Path(config.site_dir) / "navegador"
    (target / "pyodide").mkdir(parents=True, exist_ok=True)
    for path in pyodide_files():
        shutil.copyfile(path, target / "pyodide" / path.name)
    (target / "repo.zip").write_bytes(package_archive())
    for path in sorted(OWN_FILES.iterdir()):
        if path.is_file():
            shutil.copyfile(path, target / path.name)
