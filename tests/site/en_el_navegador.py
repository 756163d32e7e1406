"""Run a property page in Chromium, as a reader does: open it, press *Ejecutar en el
navegador*, wait for the last cell, and read back what each cell printed
(`window.synaptumEjecucion`, kept by `docs/_hooks/navegador/pagina.js`)."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.kernel import NotebookRun, code_cells
from scripts.pages import read_notebook
from tests.site.chromium import Browser, unseen_text

#: Seconds a page may take to run all its cells in the browser (Pyodide's first load included).
RUN_TIMEOUT = 120.0

_PRESS = "document.querySelector('.navegador-ejecutar button').click(); performance.now()"
_RECORD = "JSON.stringify(window.synaptumEjecucion ?? null)"
#: The text the page puts under its cells, in order (the DOM's text of each cell's output).
_SHOWN = "[...document.querySelectorAll('pre.navegador-salida')].map((e) => e.textContent).join('')"


@dataclass
class BrowserRun:
    run: NotebookRun
    first_output_ms: float | None  # from the press of the button
    total_ms: float
    problems: list[str]


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
    """Open `url`, run its cells in the page, and return what they printed as a `NotebookRun`
    of `notebook` (cells named by their index and id in the notebook). With `seen_whole`, the
    outputs written under the cells must be seen whole at that size (no sideways scroll, no
    text beyond the viewport: `unseen_text`)."""
    problems: list[str] = []
    with browser.tab() as tab:
        tab.send("Page.enable")
        tab.send("Runtime.enable")
        tab.send("Network.enable")  # the page's requests (the worker reports its own)
        tab.load(url, width, height, mobile=mobile, deadline=time.monotonic() + browser.timeout)
        tab.send("Runtime.evaluate", expression=_PRESS, returnByValue=True)
        deadline = time.monotonic() + RUN_TIMEOUT
        record = None
        while time.monotonic() < deadline:
            value = tab.send("Runtime.evaluate", expression=_RECORD, returnByValue=True)
            record = json.loads(value["result"]["value"])
            if record and record["fin"] is not None:
                break
            time.sleep(0.05)
        else:
            problems.append(f"the page did not finish running within {RUN_TIMEOUT:.0f} s")
        shown = tab.send("Runtime.evaluate", expression=_SHOWN, returnByValue=True)
        shown_text = shown["result"]["value"]
        if seen_whole:
            problems.extend(
                f"an output under a cell is not seen whole at {width} px: {problem}"
                for problem in unseen_text(tab, "pre.navegador-salida:not([hidden])")
            )
        if screenshot is not None:
            tab.send("Runtime.evaluate", expression=_SCROLL_TO_FIRST_OUTPUT)
            time.sleep(0.2)
            shot = tab.send("Page.captureScreenshot", format="png")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
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
    cells = code_cells(read_notebook(notebook))
    seen = (record or {}).get("celdas", [])
    if len(seen) != len(cells):
        problems.append(
            f"the page shows {len(seen)} code cells and {notebook.name} has {len(cells)}"
        )
    for cell, shown in zip(cells, seen, strict=False):
        cell.stdout, cell.stderr, cell.error = shown["stdout"], shown["stderr"], shown["error"]
        if shown["id"] != cell.cell_id:
            problems.append(f"the page's cell {shown['id']!r} is {cell.describe()} of the notebook")
    written = "".join(c["stdout"] + c["stderr"] + (c["error"] or "") for c in seen)
    if shown_text != written:
        problems.append(
            "what the page shows under its cells is not what they printed: "
            f"{shown_text[:200]!r}… against {written[:200]!r}…"
        )
    first = None
    if record and record["primeraSalida"] is not None:
        first = record["primeraSalida"] - record["inicio"]
    total = (record["fin"] - record["inicio"]) if record and record["fin"] else float("nan")
    return BrowserRun(NotebookRun(notebook, cells, total / 1000), first, total, problems)


_SCROLL_TO_FIRST_OUTPUT = (
    "document.querySelector('.navegador-salida:not([hidden])')?.scrollIntoView({block: 'start'})"
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
