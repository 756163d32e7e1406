"""Claims: the sentences of a page that say what the runtime does, each tied to an assertion.

A claim carries an id in an HTML comment, invisible on the site and in JupyterLab:

    - Un run cerrado devuelve su paso final. <!-- afirmacion: 02.run-cerrado -->

and an assertion that runs in the docs check carries the same id:

- in a notebook, `comun.afirma("02.run-cerrado", condition, "mensaje")`, which raises
  `AssertionError` naming the id when the condition is false, and otherwise records the id in
  a file of the folder named by `AFIRMACIONES_COMPROBADAS` (one file per process). The check
  sets that variable for the kernels it starts (`recording`) and reads the folder after the
  run: an id counts as checked only if the assertion *ran and held* during this check, not
  because it is written somewhere;
- in `tests/docs/test_afirmaciones.py`, a function registered with `@afirmacion("id")`, which
  the check runs as a test, for what no notebook shows.

What must carry an id, mechanically:

- in a property notebook: every list item of the *Lo que esto enseña* cell; and its id must be
  checked by that notebook (the id starts with the notebook's number and its `afirma` call is
  in the notebook's code);
- in the claim pages (`CLAIM_PAGES`): every block outside code fences and headings, that is
  every list item, every paragraph, every table body row and every HTML block, carries
  `<!-- afirmacion: id … -->` or, when it states nothing about the runtime (a definition, a
  pointer to another page, a fact about the platform), `<!-- no-afirma: the reason -->`.
  Its ids may be checked by any notebook or by a registered test.

An id written anywhere else in a page's Markdown (a title, a prose cell) is checked the same
way. An assertion whose id no page carries is stale and fails too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.pages import DOCS, read_notebook, relative, source_of, title_of

#: The variable `comun.afirma` reads: the folder where it records the ids it checked.
RECORD_FOLDER_VARIABLE = "AFIRMACIONES_COMPROBADAS"

#: The pages whose every block is a claim or says why it is not.
CLAIM_PAGES = ("conceptos.md", "limites.md", "glosario.md", "figuras.md", "otros-sistemas.md")

#: The heading of a notebook's claims.
CLAIMS_HEADING = "Lo que esto enseña"

_ID = r"[a-z0-9]+(?:\.[a-z0-9-]+)+"
_CLAIM = re.compile(r"<!--\s*afirmacion:\s*((?:" + _ID + r"\s*)+)-->")
_NOT_A_CLAIM = re.compile(r"<!--\s*no-afirma:\s*(\S[^>]*?)\s*-->")
_AFIRMA_CALL = re.compile(r"""afirma\(\s*["'](""" + _ID + r""")["']""")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass(frozen=True)
class Block:
    """A piece of a page that may state something: a list item, a paragraph, a table row."""

    page: str  # how failures name the page
    where: str  # e.g. "*Lo que esto enseña*, bullet 3"
    text: str

    @property
    def ids(self) -> list[str]:
        return [i for match in _CLAIM.finditer(self.text) for i in match.group(1).split()]

    @property
    def excused(self) -> bool:
        return bool(_NOT_A_CLAIM.search(self.text))

    def quote(self, width: int = 90) -> str:
        """The block's words, without markers, on one line, shortened to `width`."""
        words = " ".join(_NOT_A_CLAIM.sub("", _CLAIM.sub("", self.text)).split())
        words = _LIST_ITEM.sub("", words)
        return words if len(words) <= width else words[: width - 1] + "…"


# ── Reading pages ────────────────────────────────────────────────────────────


def blocks(markdown: str) -> list[tuple[str, str]]:
    """The blocks of a Markdown text, as (kind, text): kind is "item", "paragraph", "row"
    or "html". Fenced code, headings, blank lines and table headers are not blocks."""
    found: list[tuple[str, str]] = []
    current: list[str] = []
    kind = ""
    fence: str | None = None
    table_line = 0

    def close() -> None:
        nonlocal current, kind
        if current:
            found.append((kind, "\n".join(current)))
        current, kind = [], ""

    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            close()
            fence = opening.group(1)
            continue
        if not stripped:
            if kind != "html":  # an HTML block ends at its closing tag, not at a blank line
                close()
            table_line = 0
            continue
        if kind == "html":
            current.append(line)
            if re.match(r"^</(figure|div|table|details)>", stripped):
                close()
            continue
        if stripped.startswith("#"):
            close()
            continue
        if stripped.startswith("|"):
            if kind != "row":
                close()
            table_line += 1
            if table_line > 2:  # the header row and the |---| row state nothing
                close()
                kind, current = "row", [line]
            continue
        if stripped.startswith("<") and not current:
            kind, current = "html", [line]
            if re.match(r"^<(?!figure|div|table|details)", stripped) and stripped.endswith(">"):
                close()
            continue
        if _LIST_ITEM.match(line):
            close()
            kind, current = "item", [line]
            continue
        if not current:
            kind = "paragraph"
        current.append(line)
    close()
    return found


def notebook_claim_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """The list items of a property notebook's *Lo que esto enseña* cell."""
    notebook = notebook or read_notebook(path)
    page = f"{relative(path)} (page «{title_of(notebook)}»)"
    found = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = source_of(cell)
        if not re.search(rf"^##\s+{CLAIMS_HEADING}\s*$", text, re.M):
            continue
        items = [body for kind, body in blocks(text) if kind == "item"]
        found += [
            Block(page, f"*{CLAIMS_HEADING}*, bullet {n}", body)
            for n, body in enumerate(items, start=1)
        ]
    return found


def page_claim_blocks(path: Path) -> list[Block]:
    """Every block of a claim page, named by the section it is in."""
    found, counts = [], {}
    page = relative(path)
    for section, part in _sections(path.read_text(encoding="utf-8")):
        for kind, body in blocks(part):
            counts[section, kind] = counts.get((section, kind), 0) + 1
            name = {"item": "bullet", "row": "table row"}.get(kind, kind)
            where = f"section «{section}», {name} {counts[section, kind]}"
            found.append(Block(page, where, body))
    return found


def _sections(markdown: str) -> list[tuple[str, str]]:
    """The text under each heading, as (heading, text); a `#` inside a code fence is code."""
    sections: list[tuple[str, list[str]]] = [("top", [])]
    fence: str | None = None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence is None and (opening := _FENCE.match(line)):
            fence = opening.group(1)
        elif fence is not None and stripped.startswith(fence) and set(stripped) == {fence[0]}:
            fence = None
        elif fence is None and (heading := re.match(r"^#{1,6}\s+(.*)$", line)):
            sections.append((heading.group(1).strip(), []))
            continue
        sections[-1][1].append(line)
    return [(heading, "\n".join(lines)) for heading, lines in sections]


def marked_ids(markdown: str) -> list[str]:
    """Every claim id written anywhere in a Markdown text."""
    return [i for match in _CLAIM.finditer(markdown) for i in match.group(1).split()]


def notebook_markdown(notebook: dict[str, Any]) -> str:
    return "\n\n".join(source_of(c) for c in notebook["cells"] if c["cell_type"] == "markdown")


def notebook_code(notebook: dict[str, Any]) -> str:
    return "\n\n".join(source_of(c) for c in notebook["cells"] if c["cell_type"] == "code")


def asserted_ids(code: str) -> list[str]:
    """The ids that `afirma(...)` calls in this code check (literal ids only)."""
    return _AFIRMA_CALL.findall(code)


def claim_pages() -> list[Path]:
    return [DOCS / name for name in CLAIM_PAGES]


# ── What the check reports ───────────────────────────────────────────────────


def unmarked(found: list[Block], *, excuses_allowed: bool) -> list[str]:
    """One line per block that carries no id (and, where allowed, no excuse)."""
    problems = []
    for block in found:
        if block.ids or (excuses_allowed and block.excused):
            continue
        marker = "<!-- afirmacion: id -->" + (
            " or <!-- no-afirma: reason -->" if excuses_allowed else ""
        )
        problems.append(
            f"{block.page}, {block.where} states something with no claim id: "
            f"«{block.quote()}». Add {marker}, and an assertion that checks it."
        )
    return problems


def unchecked(found: list[Block], checked: set[str], how: str) -> list[str]:
    """One line per id of these blocks that no assertion checked during the run."""
    return [
        f"{block.page}, {block.where}: claim {claim} was not checked during the docs check "
        f"(«{block.quote()}»). {how}"
        for block in found
        for claim in block.ids
        if claim not in checked
    ]


@contextlib.contextmanager
def recording() -> Iterator[set[str]]:
    """Let the kernels started inside record the ids they check; yields the set, filled
    when the block ends.

    Sets `AFIRMACIONES_COMPROBADAS` in this process's environment, which the kernel runner
    copies into every kernel (it only removes the model variables).
    """
    folder = Path(tempfile.mkdtemp(prefix="synaptum-afirmaciones-"))
    before = os.environ.get(RECORD_FOLDER_VARIABLE)
    os.environ[RECORD_FOLDER_VARIABLE] = str(folder)
    checked: set[str] = set()
    try:
        yield checked
    finally:
        if before is None:
            os.environ.pop(RECORD_FOLDER_VARIABLE, None)
        else:
            os.environ[RECORD_FOLDER_VARIABLE] = before
        checked.update(read_recorded(folder))
        shutil.rmtree(folder, ignore_errors=True)


def read_recorded(folder: Path) -> set[str]:
    return {
        line.strip()
        for file in folder.glob("*.txt")
        for line in file.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
