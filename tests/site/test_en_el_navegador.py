"""Each property page that can run in a browser runs there, and prints its page's block.

Headless Chromium opens the built site's page, presses *Ejecutar en el navegador*, and the
page runs its own code cells, as shown (a reader may edit them), in a Web Worker on the
Pyodide the site serves itself. What each cell printed is compared with the page's *Lo que
imprime* block by the same comparison as the kernel check: a failure names the page, the
notebook and the cell. A page that needs a real process says so where the button would be.

The runs take about 3 s a page here (Pyodide loads in each), a minute for the thirteen pages
and the edited copy, builds included, on two cores, so `uv run pytest` runs them only in CI
(`CI=true`, as `.ci/run` sets) or when asked:
`SYNAPTUM_NAVEGADOR=1 uv run pytest tests/site/test_en_el_navegador.py`.
The static checks of the panels below always run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scripts.navegador import NEEDS_A_PROCESS, browser_notebooks
from scripts.pages import (
    PROPERTY_NOTEBOOKS,
    REPO,
    expected_block,
    how_to_run,
    mismatch,
    page_url,
    read_notebook,
)
from scripts.site import start_build
from tests.site.chromium import Browser
from tests.site.conftest import serve
from tests.site.en_el_navegador import copy_of_the_site_sources, run_page

ASKED = os.environ.get("CI") == "true" or os.environ.get("SYNAPTUM_NAVEGADOR") == "1"
OPT_IN = "the in-browser runs take ~1 min: set SYNAPTUM_NAVEGADOR=1 (CI=true runs them)"


def browser_problem(notebook: Path, base_url: str, browser: Browser) -> str | None:
    """Why the page of `notebook`, run in Chromium, does not print its block; None if it does."""
    result = run_page(browser, base_url + page_url(notebook), notebook)
    if result.problems:
        return f"In Chromium, the page {page_url(notebook)}: " + "; ".join(result.problems)
    problem = mismatch(notebook, read_notebook(notebook), result.run)
    return f"In Chromium (its run button): {problem}" if problem else None


@pytest.mark.skipif(not ASKED, reason=OPT_IN)
@pytest.mark.parametrize("notebook", browser_notebooks(), ids=lambda path: path.stem)
def test_run_in_the_browser_the_page_prints_its_block(notebook, base_url, browser) -> None:
    problem = browser_problem(notebook, base_url, browser)
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.mark.skipif(not ASKED, reason=OPT_IN)
def test_on_a_phone_the_run_shows_every_output_whole(base_url, browser) -> None:
    """01 run on a 390 px phone: what each cell printed, written under it, wraps to the screen
    (docs/_theme/assets/stylesheets/sitio.css) instead of hiding most of each line sideways. A
    screenshot of the first output is saved in build/screenshots/."""
    notebook = PROPERTY_NOTEBOOKS / "01_bucle.ipynb"
    result = run_page(
        browser,
        base_url + page_url(notebook),
        notebook,
        width=390,
        height=844,
        mobile=True,
        screenshot=REPO / "build" / "screenshots" / "navegador-01-telefono.png",
        seen_whole=True,
    )
    if result.problems:
        pytest.fail(f"{page_url(notebook)} at 390 px: " + "; ".join(result.problems), pytrace=False)


@pytest.mark.parametrize("notebook", browser_notebooks(), ids=lambda path: path.stem)
def test_a_page_that_runs_in_the_browser_has_the_button(notebook, built_site) -> None:
    page = (built_site / page_url(notebook) / "index.html").read_text(encoding="utf-8")
    assert "Ejecutar en el navegador</button>" in page
    assert 'data-trabajador="../../navegador/trabajador.js"' in page


@pytest.mark.parametrize("stem", sorted(NEEDS_A_PROCESS))
def test_a_page_that_needs_a_process_says_so_and_how_to_run_it(stem, built_site) -> None:
    notebook = PROPERTY_NOTEBOOKS / f"{stem}.ipynb"
    page = (built_site / page_url(notebook) / "index.html").read_text(encoding="utf-8")
    assert "Esta página no se ejecuta en el navegador" in page
    assert NEEDS_A_PROCESS[stem] in page
    assert "Ejecutar en el navegador</button>" not in page
    for command in how_to_run(notebook):
        assert command.splitlines()[0] in page


def test_the_site_serves_everything_the_run_needs(built_site) -> None:
    served = built_site / "navegador"
    for name in ("trabajador.js", "pagina.js", "navegador.css", "repo.zip"):
        assert (served / name).is_file(), name
    for name in ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip"):
        assert (served / "pyodide" / name).is_file(), name


@pytest.mark.skipif(not ASKED, reason=OPT_IN)
def test_a_block_edited_on_the_page_fails_the_browser_run_naming_page_and_cell(
    tmp_path, browser
) -> None:
    """A copy of the site whose page 03 has one changed line in its block: its in-browser run
    prints the true line, and the check fails naming the page, the notebook and the cell."""
    root = tmp_path / "copia"
    copy_of_the_site_sources(root)
    (root / "node_modules").symlink_to(REPO / "node_modules")
    copy = root / "notebooks" / "propiedades" / "03_aprobacion.ipynb"
    notebook = read_notebook(copy)
    block = expected_block(notebook)
    assert "transferencias ×1 en total" in block.text
    notebook["cells"][block.cell_index]["source"] = "".join(
        notebook["cells"][block.cell_index]["source"]
    ).replace("transferencias ×1 en total", "transferencias ×2 en total")
    copy.write_text(json.dumps(notebook, ensure_ascii=False, indent=1), encoding="utf-8")
    build = start_build(root / "site", root / "mkdocs.yml")
    log, _ = build.communicate(timeout=300)
    assert build.returncode == 0, log
    for url in serve(root / "site"):
        problem = browser_problem(copy, url, browser)
    assert problem is not None, "the edited block got through the in-browser check"
    print(problem)  # `pytest -s` shows the failure as a maintainer would read it
    assert problem.startswith("In Chromium (its run button): Page «03 · ")
    assert "(propiedades/03_aprobacion/)" in problem
    assert "-               transferencias ×2 en total" in problem
    assert "+               transferencias ×1 en total" in problem
    assert 'printed by cell 21 (id "tercera-vuelta")' in problem
