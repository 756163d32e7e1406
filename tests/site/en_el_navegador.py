"""Run a property page in Chromium, as a reader does: open it, wait for the page to say
Python is ready (it loads when the page opens, before any click), press *Ejecutar en el
navegador*, wait for the last cell, and read back what each cell printed
(`window.synaptumEjecucion`, kept by `docs/_hooks/navegador/pagina.js`).

Every wait is on a state of the page (a flag, an element); the bounds only end a hang."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.kernel import CellRun, NotebookRun, code_cells
from scripts.navegador import as_printed_locally
from scripts.pages import VERIFICATION_TAG, read_notebook
from tests.site.chromium import Browser, Tab, unseen_text
from tests.site.chromium import screenshot as save_screenshot

#: Seconds a page may take to load Python, or to run all its cells: they only end a hang.
RUN_TIMEOUT = 180.0

READY = (
    "window.synaptumNavegador?.preparado === true"
    " && !document.querySelector('.navegador-ejecutar button').disabled"
)
_PRESS = "document.querySelector('.navegador-ejecutar button').click(); performance.now()"
_RECORD = "JSON.stringify(window.synaptumEjecucion ?? null)"
#: The text the page puts under its cells, in order (the DOM's text of each cell's output).
_SHOWN = "[...document.querySelectorAll('pre.navegador-salida')].map((e) => e.textContent).join('')"
_SENTENCES = (
    "[...document.querySelectorAll('.navegador-excepcion')].map((e) => e.textContent).join('')"
)


@dataclass
class BrowserRun:
    run: NotebookRun
    first_output_ms: float | None  # from the press of the button
    total_ms: float
    problems: list[str]
    record: dict[str, Any]


class OpenPage:
    """A property page open in a tab, its Python loaded or loading."""

    def __init__(self, tab: Tab, url: str) -> None:
        self.tab = tab
        self.url = url

    def value(self, expression: str) -> Any:
        answer = self.tab.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def wait_until(self, expression: str, what: str, timeout: float = RUN_TIMEOUT) -> Any:
        """Wait until `expression` is true in the page (a state, never a time)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.value(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"{self.url}: {what}: not within {timeout:.0f} s")

    def wait_ready(self) -> None:
        self.wait_until(READY, "the page did not say Python is ready")

    def press(self) -> dict[str, Any] | None:
        """Press the button once the page is ready; the run's record when it has finished
        (None if it did not finish within the bound)."""
        self.wait_ready()
        before = self.value("window.synaptumEjecucion?.inicio ?? null")
        self.value(_PRESS)
        finished = (
            "(() => { const r = window.synaptumEjecucion;"
            f" return r && r.inicio !== {json.dumps(before)} && r.fin !== null; }})()"
        )
        try:
            self.wait_until(finished, "the run did not finish")
        except AssertionError:
            return None
        record = json.loads(self.value(_RECORD))
        return dict(record)

    def edit(self, cell: int, source: str) -> None:
        """Type `source` over the code of the page's `cell`-th code cell (from 0), as a reader
        does: select its text, and insert the new one."""
        self.value(
            "(() => { const code = document.querySelectorAll("
            f"'.jp-CodeCell .highlight-ipynb pre')[{cell}]; code.focus();"
            " const range = document.createRange(); range.selectNodeContents(code);"
            " const selection = getSelection(); selection.removeAllRanges();"
            " selection.addRange(range); return true; })()"
        )
        self.tab.send("Input.insertText", text=source)

    def printed(self) -> str:
        """What the page shows under its cells."""
        return str(self.value(_SHOWN))


@contextmanager
def open_page(
    browser: Browser, url: str, *, width: int = 1280, height: int = 800, mobile: bool = False
) -> Iterator[OpenPage]:
    with browser.tab() as tab:
        tab.send("Page.enable")
        tab.send("Runtime.enable")
        tab.send("Network.enable")  # the page's requests (the worker reports its own)
        tab.load(url, width, height, mobile=mobile, deadline=time.monotonic() + browser.timeout)
        yield OpenPage(tab, url)


def run_page(
    browser: Browser,
    url: str,
    notebook: Path,
    *,
    width: int = 1280,
    height: int = 800,
    mobile: bool = False,
    screenshot: Path | None = None,
    seen_whole: bool = False,
) -> BrowserRun:
    """Open `url`, wait for Python, run its cells in the page, and return what they printed
    as a `NotebookRun` of `notebook` (cells named by their index and id in the notebook; the
    header's mode line as a local run prints it: `scripts.navegador.as_printed_locally`). With
    `seen_whole`, the outputs written under the cells must be seen whole at that size (no
    sideways scroll, no text beyond the viewport: `unseen_text`)."""
    with open_page(browser, url, width=width, height=height, mobile=mobile) as page:
        return read_run(page, notebook, page.press(), seen_whole=seen_whole, screenshot=screenshot)


def page_code_cells(notebook: Path) -> list[CellRun]:
    """The code cells of `notebook` its page shows, and so runs in the browser: all but the
    verification cells (tag `verificacion`, which mkdocs-jupyter leaves off the page; they
    print nothing and come after every shown cell: `scripts.pages.verification_problems`)."""
    cells = read_notebook(notebook)["cells"]
    return [
        cell
        for cell in code_cells({"cells": cells})
        if VERIFICATION_TAG not in cells[cell.index].get("metadata", {}).get("tags", [])
    ]


def read_run(
    page: OpenPage,
    notebook: Path,
    record: dict[str, Any] | None,
    *,
    seen_whole: bool = False,
    screenshot: Path | None = None,
) -> BrowserRun:
    """The run just finished in `page` (its `record`), checked and read as a `NotebookRun`."""
    problems: list[str] = []
    tab, url = page.tab, page.url
    if record is None:
        problems.append(f"the page did not finish running within {RUN_TIMEOUT:.0f} s")
    shown_text = page.printed()
    if seen_whole:
        problems.extend(
            f"an output under a cell is not seen whole at {page.value('innerWidth')} px: {problem}"
            for problem in unseen_text(tab, "pre.navegador-salida:not([hidden])")
        )
    if screenshot is not None:
        page.value(_SCROLL_TO_FIRST_OUTPUT)
        save_screenshot(tab, screenshot)
    origin = "/".join(url.split("/", 3)[:3]) + "/"
    requested = [
        event["params"]["request"]["url"]
        for event in tab.events
        if event["method"] == "Network.requestWillBeSent"
    ] + list((record or {}).get("pedidos") or [])
    elsewhere = [u for u in requested if not u.startswith((origin, "data:", "blob:"))]
    if elsewhere:
        problems.append(f"the run fetched from another origin: {elsewhere}")
    if not any(u.endswith("/navegador/pyodide/pyodide.asm.wasm") for u in requested):
        problems.append(f"the run's requests were not seen (no pyodide.asm.wasm): {requested}")
    for event in tab.events:
        if event["method"] == "Runtime.exceptionThrown":
            details = event["params"]["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            problems.append(f"uncaught in the page: {text}")
    cells = page_code_cells(notebook)
    seen = (record or {}).get("celdas", [])
    if len(seen) != len(cells):
        problems.append(
            f"the page shows {len(seen)} code cells and {notebook.name} has {len(cells)} "
            f"without the tag {VERIFICATION_TAG!r}"
        )
    for cell, shown in zip(cells, seen, strict=False):
        cell.stdout, cell.stderr, cell.error = shown["stdout"], shown["stderr"], shown["error"]
        if shown["id"] != cell.cell_id:
            problems.append(f"the page's cell {shown['id']!r} is {cell.describe()} of the notebook")
    written = "".join(c["stdout"] + c["stderr"] for c in seen)
    if shown_text != written:
        problems.append(
            "what the page shows under its cells is not what they printed: "
            f"{shown_text[:200]!r}… against {written[:200]!r}…"
        )
    sentences = "".join(c["resumen"] or "" for c in seen)
    if page.value(_SENTENCES) != sentences:
        problems.append(f"the page does not show the exception's sentence: {sentences!r}")
    first = None
    if record and record["primeraSalida"] is not None:
        first = record["primeraSalida"] - record["inicio"]
    total = (record["fin"] - record["inicio"]) if record and record["fin"] else float("nan")
    run = as_printed_locally(NotebookRun(notebook, cells, total / 1000))
    return BrowserRun(run, first, total, problems, record or {})


_SCROLL_TO_FIRST_OUTPUT = (
    "document.querySelector('.navegador-salida:not([hidden])')?.scrollIntoView({block: 'start'})"
)
#: The first thing the run showed under a cell (an output, or an exception) is in the viewport.
FIRST_OUTPUT_IN_VIEW = (
    "(() => { const first = document.querySelector('.navegador-salida, .navegador-fallo');"
    " if (!first) return false; const box = first.getBoundingClientRect();"
    " return box.top >= 0 && box.top < innerHeight && box.bottom > 0; })()"
)


#: What a copy of the site needs to build it: its sources, the notebooks, and the package.
SITE_SOURCES = ("docs", "notebooks", "scripts", "synaptum_lite")


def copy_of_the_site_sources(root: Path) -> None:
    """Copy what builds the site into `root` (not a git checkout), with the list of the kit's
    files the download hook reads where git cannot say (docs/_hooks/descarga.py, `.kit-files`):
    the copy's own files, so the copy's site offers a download of the copy."""
    import shutil

    from scripts.pages import REPO

    for folder in SITE_SOURCES:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    files = sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())
    (root / ".kit-files").write_text("".join(f"100644 {name}\n" for name in files))
