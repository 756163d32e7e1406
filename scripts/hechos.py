"""Facts about the kit itself, written where people read them, never typed.

Which notebooks there are, how long each takes to read and to run, which ones kill a real
process, which ones run in the reader's browser: a page that types these goes stale as the kit
grows (issue 29). `python -m scripts.update_pages` writes them from the notebooks themselves,
each between two markers,

    <!-- hechos: cuadernos (uv run python -m scripts.update_pages lo escribe) --> …
    …
    <!-- hechos: cuadernos, fin --> …

and its `--check` (and `tests/docs/test_hechos.py`) fails when a page's section is not what
`sections()` writes now, naming the page and the command to run. Where each fact comes from:

- the notebooks, their titles and their words: `scripts.pages.property_notebooks`, read here;
  the reading time is their words at `WORDS_A_MINUTE`;
- which kill a real process: `scripts.pages.notebooks_that_kill` (their code, and their helper
  processes `_hijo_NN.py`, `_servidor_NN.py`, `_trabajador_NN.py`), and whether they do it in
  the page's own cells or only in its *Pruébalo* (`kills_in_teaching`);
- which run in the browser: the site's own list, `scripts.navegador.browser_notebooks` (the
  others are `NEEDS_A_PROCESS`, with the reason their page gives);
- how long each took to run: measured by the update command, run on every notebook, and kept
  in `TIMES` as a class (`TIME_CLASSES`), not in seconds, so that a page does not change on
  every run; the check reads the recorded classes and never a clock.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.pages import (
    _KILLS,
    DOCS,
    PROPERTY_NOTEBOOKS,
    REPO,
    UPDATE_COMMAND,
    notebooks_that_kill,
    property_notebooks,
    read_notebook,
    relative,
    source_of,
    title_of,
)

#: The reading rate the index states and uses.
WORDS_A_MINUTE = 200

#: What each notebook took to run, as a class, recorded by the update command.
TIMES = REPO / "scripts" / "hechos_tiempos.json"

#: The classes of a run time: (upper bound in seconds, or None, and how the page says it).
TIME_CLASSES: tuple[tuple[float | None, str], ...] = (
    (3.0, "menos de 3 s"),
    (8.0, "de 3 a 8 s"),
    (None, "8 s o más"),
)

#: The id every generated block carries; `tests/docs/afirmaciones_paginas.py` checks it.
CLAIM_ID = "hechos.{name}"


def time_class(seconds: float) -> str:
    """The class `seconds` falls in (`TIME_CLASSES`)."""
    for bound, said in TIME_CLASSES:
        if bound is None or seconds < bound:
            return said
    raise AssertionError("the last class has no bound")


def reading_minutes(notebook: dict[str, Any]) -> int:
    """The minutes its words take at `WORDS_A_MINUTE` (prose, code and printed output)."""
    words = sum(len(re.findall(r"\w+", source_of(cell))) for cell in notebook["cells"])
    return math.ceil(words / WORDS_A_MINUTE)


def recorded_times(path: Path = TIMES) -> dict[str, str]:
    """Notebook stem → the class of its run time, as the update command last recorded it."""
    if not path.exists():
        return {}
    found = json.loads(path.read_text(encoding="utf-8"))
    return {stem: said for stem, said in found.items() if not stem.startswith("_")}


def record_times(seconds: dict[str, float], path: Path = TIMES) -> bool:
    """Record the class of each run time (every notebook's); True when a class changed."""
    classes = {stem: time_class(s) for stem, s in sorted(seconds.items())}
    text = json.dumps(
        {
            "_": f"what each notebook took to run, as a class; written by `{UPDATE_COMMAND}` "
            "run on every notebook (scripts/hechos.py), never by hand",
            **classes,
        },
        ensure_ascii=False,
        indent=1,
    )
    if path.exists() and path.read_text(encoding="utf-8") == text + "\n":
        return False
    path.write_text(text + "\n", encoding="utf-8")
    return True


def _helpers(number: str) -> dict[str, str]:
    """A notebook's helper processes: module name (`_hijo_06`) → its code."""
    return {
        h.stem: h.read_text(encoding="utf-8") for h in PROPERTY_NOTEBOOKS.glob(f"_*_{number}.py")
    }


def kills_in_teaching(path: Path) -> bool:
    """Whether the page's own cells kill a real process: a code cell before its *Pruébalo*
    kills, or starts a helper process of its own that does. A notebook that kills only in
    its *Pruébalo* (with a parameter the reader sets) runs in the browser all the same."""
    helpers = _helpers(path.name[:2])
    for cell in read_notebook(path)["cells"]:
        if cell.get("id") == "pruebalo":
            return False
        if cell["cell_type"] != "code":
            continue
        text = source_of(cell)
        if _KILLS.search(text):
            return True
        if any(name in text and _KILLS.search(code) for name, code in helpers.items()):
            return True
    return False


def _numbers(numbers: list[str]) -> str:
    """«el 00, el 02 y el 06»."""
    said = [f"el {n}" for n in numbers]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " y " + said[-1]


def _bare(numbers: list[str]) -> str:
    """«00, 02 y 06»."""
    return numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " y " + numbers[-1]


def _claim(name: str) -> str:
    return f"<!-- afirmacion: {CLAIM_ID.format(name=name)} -->"


# ── What the sections say ────────────────────────────────────────────────────


def _browser() -> tuple[list[str], dict[str, str]]:
    """The notebooks that run in the browser (numbers), and those that do not, with why."""
    from scripts.navegador import NEEDS_A_PROCESS, browser_notebooks

    return [p.name[:2] for p in browser_notebooks()], {
        stem[:2]: why for stem, why in sorted(NEEDS_A_PROCESS.items())
    }


def _killers() -> tuple[list[str], list[str]]:
    """The notebooks that kill a real process: all of them, and those that do it only in
    their *Pruébalo*."""
    kill = notebooks_that_kill()
    by_number = {p.name[:2]: p for p in property_notebooks()}
    return kill, [n for n in kill if not kills_in_teaching(by_number[n])]


def cuadernos() -> str:
    """Index: the table of the property notebooks, and what its columns mean."""
    times = recorded_times()
    in_browser, _ = _browser()
    notebooks = property_notebooks()
    rows = [
        "| # | la idea | leerlo | correrlo | en el navegador |",
        "|---|---|--:|--:|:-:|",
    ]
    for path in notebooks:
        notebook = read_notebook(path)
        number = path.name[:2]
        title = (title_of(notebook) or "").split(" · ", 1)[-1]
        rows.append(
            f"| {number} | [{title}](propiedades/{path.name}) | {reading_minutes(notebook)} min "
            f"| {times.get(path.stem, 'sin medir')} | {'sí' if number in in_browser else 'no'} "
            f"{_claim('cuadernos')} |"
        )
    kill, only_pruebalo = _killers()
    slow = [p.name[:2] for p in notebooks if times.get(p.stem) not in (None, TIME_CLASSES[0][1])]
    unmeasured = [p.name[:2] for p in notebooks if p.stem not in times]
    said = (
        f"Son {len(notebooks)} cuadernos. *Leerlo* son los minutos de leer la página entera "
        f"(prosa, código y salida) a {WORDS_A_MINUTE} palabras por minuto, contadas en el "
        "cuaderno; *correrlo*, lo que tardó el cuaderno entero en un kernel nuevo, con todos "
        "los cuadernos a la vez, la última vez que `uv run python -m scripts.update_pages` los "
        "corrió todos, en la máquina donde se corrió. Va en tres clases ("
        + ", ".join(said for _, said in TIME_CLASSES)
        + ") y no en segundos, para que la tabla no cambie en cada ejecución."
    )
    if unmeasured:
        said += f" Sin medir aún: {_bare(unmeasured)}."
    if slow:
        slow_kill = [n for n in slow if n in kill]
        one = len(slow) == 1
        said += f" {'Tarda' if one else 'Tardan'} {TIME_CLASSES[0][0]:g} s o más {_numbers(slow)}"
        said += (
            f"; {'mata' if one else 'todos matan'} un proceso de verdad y "
            f"{'espera' if one else 'esperan'} a que otro proceso siga."
            if slow_kill == slow
            else "."
        )
    said += (
        f" Matan un proceso de verdad {_numbers(kill)}"
        + (f" ({_numbers(only_pruebalo)}, solo en su *Pruébalo*)" if only_pruebalo else "")
        + f"; corren en el navegador {len(in_browser)} de los {len(notebooks)}."
    )
    return "\n".join(rows) + "\n\n" + _wrap(said) + " " + _claim("cuadernos")


def navegador() -> str:
    """Probar: which pages do not run in the browser, and why (their pages say the same)."""
    in_browser, needs = _browser()
    items = [f"- el {number}: {why}. {_claim('navegador')}" for number, why in needs.items()]
    total = len(in_browser) + len(needs)
    said = _wrap(
        f"Las páginas {_bare(list(needs))} no se ejecutan en el navegador: Pyodide es un solo "
        "proceso, y cada uno de esos cuadernos necesita otro o mata uno de verdad. Donde estaría "
        "el botón, su página dice por qué y con qué órdenes correrlo en local. Corren en el "
        f"navegador las otras {len(in_browser)} de las {total} ({_bare(in_browser)}). Por qué no "
        "corre cada una:"
    )
    return said + " " + _claim("navegador") + "\n\n" + "\n".join(items)


def procesos() -> str:
    """Probar: the notebooks that kill a real process."""
    kill, only_pruebalo = _killers()
    said = (
        f"Una página que dice que un proceso muere mata un proceso de verdad, con `SIGKILL`: "
        f"lo hacen {_numbers(kill)}, en su código o en el de un proceso suyo (`_hijo_NN.py`, "
        "`_servidor_NN.py`, `_trabajador_NN.py`)"
        + (f"; {_numbers(only_pruebalo)}, solo en su *Pruébalo*" if only_pruebalo else "")
        + "."
    )
    return _wrap(said) + " " + _claim("procesos")


def en_local() -> str:
    """README: which pages need a real process, so run only locally."""
    in_browser, needs = _browser()
    said = (
        f"De los {len(in_browser) + len(needs)} cuadernos, {len(in_browser)} corren en el "
        f"navegador; las páginas {_bare(list(needs))} necesitan procesos de verdad, y dicen cómo "
        "correrlas en local."
    )
    return _wrap(said) + " " + _claim("en-local")


def always_the_double() -> list[str]:
    """The notebooks that run on the double whatever the environment says: their header is
    `encabezado(…, siempre_el_doble=True)` (notebooks/comun.py)."""
    return [
        path.name[:2]
        for path in property_notebooks()
        if any(
            re.search(r"\bencabezado\([^)]*siempre_el_doble=True", source_of(cell))
            for cell in read_notebook(path)["cells"]
            if cell["cell_type"] == "code"
        )
    ]


def siempre_el_doble() -> str:
    """Modelos: the notebooks that always run on the double, and what their header says."""
    import sys

    sys.path.insert(0, str(PROPERTY_NOTEBOOKS.parent))
    try:
        from comun import MODO_SIEMPRE_EL_DOBLE  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(PROPERTY_NOTEBOOKS.parent))
    found = always_the_double()
    said = (
        f"{len(found)} cuadernos usan siempre el doble, también con un modelo configurado: "
        f"{_numbers(found)}, y su cabecera lo dice: «{MODO_SIEMPRE_EL_DOBLE}»."
    )
    return _wrap(said) + " " + _claim("siempre-el-doble")


def _nav_labels() -> dict[str, str]:
    """Page file name → its label in the site's nav (`mkdocs.yml`)."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    return {file: label for label, file in re.findall(r"^\s*- ([^:\n]+): (\S+\.md)\s*$", nav, re.M)}


def _named_pages(paths: list[Path]) -> str:
    labels = _nav_labels()
    names = [f"*{labels[p.name]}*" if p.name in labels else f"el {p.stem}" for p in paths]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " y " + names[-1]


def paginas_de_afirmaciones() -> str:
    """Probar: which pages are claim pages, and which are not (`scripts/claims.py`)."""
    from scripts.claims import claim_pages, other_pages

    said = (
        f"Son páginas de afirmaciones (`CLAIM_PAGES`, en `scripts/claims.py`) "
        f"{_named_pages(claim_pages())}. En las demás ({_named_pages(other_pages())}) no se "
        "lee cada bloque: solo es una afirmación el que acaba con `<!-- afirmacion: id -->`, y "
        "entonces se comprueba como cualquier otra (su id tiene que comprobarse en esta "
        "ejecución y sus palabras tienen su huella)."
    )
    return _wrap(said) + " " + _claim("paginas-de-afirmaciones")


#: A word that, at the start of a line, Markdown reads as a list item or a heading ("25." of
#: "de los 25."): it stays at the end of the line before, a little over the width.
_MARKER_AT_LINE_START = re.compile(r"\d+[.)]|[-*+#>]")


def _wrap(text: str, width: int = 96) -> str:
    """`text` in lines of at most `width` characters, broken at spaces outside inline code (a
    command in backticks stays on one line, as a reader copies it), and never before a word
    Markdown would read as a list item or a heading."""
    words = re.findall(r"(?:`[^`]*`|[^\s`])+", text)
    lines: list[str] = []
    for word in words:
        fits = lines and len(lines[-1]) + 1 + len(word) <= width
        if fits or (lines and _MARKER_AT_LINE_START.fullmatch(word)):
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


#: Each generated section: (page, name) → what writes it.
SECTIONS: dict[tuple[Path, str], Callable[[], str]] = {
    (DOCS / "index.md", "cuadernos"): cuadernos,
    (DOCS / "probar.md", "navegador"): navegador,
    (DOCS / "probar.md", "procesos"): procesos,
    (DOCS / "probar.md", "paginas-de-afirmaciones"): paginas_de_afirmaciones,
    (REPO / "README.md", "en-local"): en_local,
    (DOCS / "modelos.md", "siempre-el-doble"): siempre_el_doble,
}


# ── Writing them into the pages ──────────────────────────────────────────────


def start_marker(name: str) -> str:
    return (
        f"<!-- hechos: {name} ({UPDATE_COMMAND} lo escribe) --> "
        "<!-- no-afirma: sobre esta página — empieza una sección generada -->"
    )


def end_marker(name: str) -> str:
    return (
        f"<!-- hechos: {name}, fin --> "
        "<!-- no-afirma: sobre esta página — acaba una sección generada -->"
    )


class MissingSection(ValueError):
    """A page lacks the markers of a section it must hold."""


def section_text(name: str, body: str) -> str:
    return f"{start_marker(name)}\n\n{body}\n\n{end_marker(name)}"


def current(page: str, name: str) -> str:
    """The section `name` as `page`'s text holds it, markers included."""
    start, end = page.find(start_marker(name)), page.find(end_marker(name))
    if start < 0 or end < start:
        raise MissingSection(
            f"the page has no section «{name}» between «{start_marker(name)}» and "
            f"«{end_marker(name)}»: put the two markers where it goes and run `{UPDATE_COMMAND}`"
        )
    return page[start : end + len(end_marker(name))]


def with_section(page: str, name: str, body: str) -> str:
    """`page` with its section `name` holding `body`."""
    old = current(page, name)
    return page.replace(old, section_text(name, body), 1)


def stale(pages: dict[Path, str] | None = None) -> list[str]:
    """One line per section of a page that is not what the generator writes now, naming the
    page, the section and the command that writes it. `pages` stands in for the files."""
    problems = []
    for (path, name), write in SECTIONS.items():
        text = (pages or {}).get(path) or path.read_text(encoding="utf-8")
        try:
            held = current(text, name)
        except MissingSection as error:
            problems.append(f"{relative(path)}: {error}")
            continue
        if held != section_text(name, write()):
            problems.append(
                f"{relative(path)}: its section «{name}» (facts about the kit) is not what "
                f"the notebooks say now; run `{UPDATE_COMMAND}` to write it"
            )
    return problems


def write(check: bool) -> list[str]:
    """Write every section; with `check`, write nothing. Returns the pages that differed."""
    wanted: dict[Path, str] = {}
    for (path, name), make in SECTIONS.items():
        text = wanted.get(path) or path.read_text(encoding="utf-8")
        wanted[path] = with_section(text, name, make())
    changed = []
    for path, text in wanted.items():
        if path.read_text(encoding="utf-8") != text:
            changed.append(relative(path))
            if not check:
                path.write_text(text, encoding="utf-8")
    return changed
