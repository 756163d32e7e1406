"""Each property page that can run in a browser runs there, and prints its page's block.

Headless Chromium opens the built site's page; Python (Pyodide) loads in a Web Worker as the
page opens, and the page says when it is ready, before any click. *Ejecutar en el navegador*
then runs the page's own code cells, as shown (a reader may edit them), on the Pyodide the
site serves itself. What each cell printed is compared with the page's *Lo que imprime* block
by the same comparison as the kernel check (one line apart: the header's mode line, which in a
browser says there is no model to export; `scripts.navegador.as_printed_locally`): a failure
names the page, the notebook and the cell. A page that needs a real process says so where the
button would be.

Python stays loaded between runs, and each run starts as a fresh kernel would (the files an
earlier run wrote are gone, the modules are imported anew, the globals are new): a second run
prints the block again, an edited cell prints its new output, and neither loads Python again.
An exception shows as its own sentence, wrapped, with the frames folded behind *Ver el
detalle*. Every wait is on a state of the page; no test measures a time
(`benchmarks/navegador.py` does, for *Rendimiento*).

The runs take a few minutes for the pages and the edited copy, builds included, on two cores,
so `uv run pytest` runs them only in CI (`CI=true`, as `.ci/run` sets) or when asked:
`SYNAPTUM_NAVEGADOR=1 uv run pytest tests/site/test_en_el_navegador.py`.
The static checks of the panels below always run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scripts.navegador import NEEDS_A_PROCESS, browser_notebooks, mode_lines
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
from tests.bounds import HANG
from tests.site.chromium import Browser, screenshot, unseen_text
from tests.site.conftest import serve
from tests.site.en_el_navegador import (
    FIRST_OUTPUT_IN_VIEW,
    copy_of_the_site_sources,
    open_page,
    read_run,
    run_page,
)

ASKED = os.environ.get("CI") == "true" or os.environ.get("SYNAPTUM_NAVEGADOR") == "1"
OPT_IN = "the in-browser runs take minutes: set SYNAPTUM_NAVEGADOR=1 (CI=true runs them)"


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


N01 = PROPERTY_NOTEBOOKS / "01_bucle.ipynb"
#: 01's second code cell, its parameters: `carpeta` is where runs.db is made.
PARAMETERS = 1
BESIDE_THE_NOTEBOOK = 'carpeta = "junto-al-cuaderno"\nrun_id = "bucle-1"\n'
EDITED_LINE = "esta línea la imprime una celda editada en el navegador"
_EDITED = "document.querySelectorAll('.jp-CodeCell.navegador-editada').length"
_MARK_SEEN = (
    "[...document.querySelectorAll('.navegador-marca')].filter((m) => m.checkVisibility())"
    ".map((m) => m.textContent)"
)
_WASM_FETCHES = (
    "window.synaptumEjecucion.pedidos.filter((u) => u.endsWith('/pyodide.asm.wasm')).length"
)


def _checked(run, what: str) -> None:
    """`run` (a BrowserRun of 01) printed 01's block, or the test fails saying `what`."""
    problem = "; ".join(run.problems) or mismatch(N01, read_notebook(N01), run.run)
    if problem:
        pytest.fail(f"{what}: {problem}", pytrace=False)


@pytest.mark.skipif(not ASKED, reason=OPT_IN)
def test_python_loads_once_and_every_run_starts_as_a_fresh_kernel(base_url, browser) -> None:
    """01 at 1280 px: the page says Python is ready before any click; a click prints the block
    and takes the view to the first output; a second run prints the block again, though the
    first left runs.db beside the notebook (01's `carpeta` set to a folder there: a run that
    found it would refuse it); an edited cell is marked and prints its new output; and Python
    was loaded once for the three runs."""
    with open_page(browser, base_url + page_url(N01)) as page:
        page.wait_ready()
        assert page.value("window.synaptumEjecucion === undefined"), "a run started unasked"
        status = page.value("document.querySelector('.navegador-estado').textContent")
        assert status.startswith("Python está listo"), status
        assert page.value("scrollY") == 0

        page.edit(PARAMETERS, BESIDE_THE_NOTEBOOK)
        assert page.value(_EDITED) == 1, "the edited cell is not marked"
        assert page.value(_MARK_SEEN) == [
            "Celda editada: se ejecuta tal como la ves. Volver al código de la página"
        ]
        first = read_run(page, N01, page.press())
        _checked(first, "the first run")
        assert page.value(FIRST_OUTPUT_IN_VIEW), "the view did not go to the first output"
        assert page.value("scrollY") > 0
        assert mode_lines()[0] in page.printed(), "the browser's header is not the browser's"

        second = read_run(page, N01, page.press())
        _checked(second, "the second run, with runs.db left beside the notebook by the first")
        assert second.run.printed == first.run.printed

        page.edit(PARAMETERS, BESIDE_THE_NOTEBOOK + f"print({EDITED_LINE!r})\n")
        third = read_run(page, N01, page.press())
        assert not third.problems, third.problems
        assert third.run.cells[PARAMETERS].stdout == EDITED_LINE + "\n"
        assert third.record["cargas"] == 1, "Python was loaded again for a run"
        assert page.value(_WASM_FETCHES) == 1, "pyodide.asm.wasm was fetched again"


@pytest.mark.skipif(not ASKED, reason=OPT_IN)
def test_a_cell_that_never_ends_is_stopped_and_python_starts_again(base_url, browser) -> None:
    """An edited cell of 01 that loops for ever: while it runs the button says *Detener*;
    pressing it ends the run and loads a fresh Python, and once the page says it is ready
    again, the page's own code (put back with the mark's button) prints the block."""
    button = "document.querySelector('.navegador-ejecutar button')"
    with open_page(browser, base_url + page_url(N01)) as page:
        page.wait_ready()
        page.edit(PARAMETERS, "while True:\n    pass\n")
        page.value(f"{button}.click(); true")
        page.wait_until(f"{button}.textContent === 'Detener'", "the button did not offer to stop")
        page.value(f"{button}.click(); true")
        assert page.value("window.synaptumEjecucion.error") == "detenida"
        page.value(
            f"document.querySelectorAll('.navegador-marca')[{PARAMETERS}]"
            ".querySelector('button').click(); true"
        )
        assert page.value(_EDITED) == 0, "the cell put back is still marked as edited"
        assert page.value(
            f"document.querySelectorAll('.jp-CodeCell .highlight-ipynb pre')[{PARAMETERS}]"
            ".querySelector('span.n') !== null"
        ), "the cell put back lost its colours"
        run = read_run(page, N01, page.press())
        _checked(run, "the run after stopping a cell that never ended")
        assert run.record["cargas"] == 1, "the fresh worker loaded Python more than once"


LONG_SENTENCE = (
    "la cuenta ES91210004184502000513ES91210004184502000513ES91210004184502000513 no existe, "
    "y esta frase es larga a propósito: se lee entera, partida en líneas, sin desplazar nada"
)


@pytest.mark.skipif(not ASKED, reason=OPT_IN)
@pytest.mark.parametrize(("width", "height", "mobile"), [(390, 844, True), (1280, 800, False)])
def test_an_exception_shows_its_sentence_whole_and_its_frames_folded(
    width, height, mobile, base_url, browser
) -> None:
    """An edited cell of 01 that raises: under it, the exception's own sentence, wrapped and
    seen whole in the viewport (no sideways scroll); Pyodide's frames are not shown until
    *Ver el detalle* is pressed, and then the whole traceback is. Screenshots of both in
    build/screenshots/."""
    shots = REPO / "build" / "screenshots"
    with open_page(
        browser, base_url + page_url(N01), width=width, height=height, mobile=mobile
    ) as page:
        page.edit(PARAMETERS, f"raise ValueError({LONG_SENTENCE!r})\n")
        record = page.press()
        assert record is not None, "the run did not finish"
        cell = record["celdas"][PARAMETERS]
        assert cell["resumen"] == f"ValueError: {LONG_SENTENCE}"
        assert page.value(FIRST_OUTPUT_IN_VIEW), "the view did not go to the exception"
        assert (
            page.value("document.querySelector('.navegador-excepcion').textContent")
            == (cell["resumen"])
        )
        problems = unseen_text(page.tab, ".navegador-excepcion")
        assert not problems, f"the exception's sentence at {width} px: {problems}"
        lines = page.value(
            "document.querySelector('.navegador-excepcion').getClientRects().length && "
            "Math.round(document.querySelector('.navegador-excepcion').getBoundingClientRect()"
            ".height / parseFloat(getComputedStyle(document.querySelector('.navegador-excepcion'))"
            ".lineHeight))"
        )
        assert lines >= 2, "the long sentence was not wrapped"
        shown = page.value("document.body.innerText")
        assert "_pyodide" not in shown and "Traceback" not in shown, "the frames are shown"
        trace = "document.querySelector('.navegador-detalle pre')"
        assert page.value(f"{trace}.checkVisibility()") is False
        screenshot(page.tab, shots / f"navegador-excepcion-{width}.png")

        page.value("document.querySelector('.navegador-detalle summary').click(); true")
        page.wait_until(f"{trace}.checkVisibility()", "Ver el detalle did not unfold the frames")
        detail = page.value(f"{trace}.textContent")
        assert detail.startswith("Traceback (most recent call last):"), detail
        assert "/_pyodide/" in detail and "<celda 2>" in detail
        assert detail.endswith(cell["resumen"])
        assert not unseen_text(page.tab, ".navegador-detalle pre")
        screenshot(page.tab, shots / f"navegador-excepcion-detalle-{width}.png")


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
    for name in ("trabajador.js", "runtime.py", "pagina.js", "navegador.css", "repo.zip"):
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
    log, _ = build.communicate(timeout=HANG)
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
