"""Claims: the sentences of a page that say what the runtime does, each tied to an assertion.

A claim has an id, and an assertion that runs in the docs check carries the same id:

- in a notebook, `comun.afirma("02.cerrado", condition, "mensaje")`, which raises
  `AssertionError` naming the id when the condition is false, and otherwise records the id in
  a file of the folder named by `AFIRMACIONES_COMPROBADAS` (one file per process). The check
  sets that variable for the kernels it starts (`recording`) and reads the folder after the
  run: an id counts as checked only if the assertion *ran and held* during this check, not
  because it is written somewhere;
- in `tests/docs/test_afirmaciones.py`, a function registered with `@afirmacion("id")`, which
  the check runs as a test, for what no notebook shows.

Where a block's id is written:

- in a property notebook, in the metadata of its Markdown cell, never in the Markdown (a
  learner who opens a cell to edit it sees its words, not the machinery). Each Markdown cell
  but *Lo que imprime* carries `metadata.synaptum.afirmaciones`, a list aligned to the cell's
  blocks (its title first, when the cell holds the `# NN · …` heading), one entry per block:

      {"texto": "Un run cerrado devuelve su…", "ids": ["02.cerrado"]}
      {"texto": "En JupyterLab, desde la raíz…", "no-afirma": "instrucciones — cómo correrlo"}

  `texto` is the block's first words (`opening`), so a reader of the map sees which block an
  entry is for and the check sees the map out of step with the cell (a block added, removed,
  or rewritten at its start), naming the notebook, the cell and the block. An id belongs to
  the blocks whose entries name it, and to no other: the map is the one place that binds
  them (`id_bindings` lists them). In JupyterLab the map is in the cell's metadata (*Property
  Inspector*); the failure message gives the entry to write;
- in the claim pages (`CLAIM_PAGES` of `docs/`, and the README: `claim_pages`; not opened in
  JupyterLab): an HTML comment at the end of
  the block, `<!-- afirmacion: id … -->`, or `<!-- no-afirma: reason -->` when it states
  nothing about the runtime (a definition, a link, a fact about the platform: the reasons
  are a fixed list, `NO_CLAIM_REASONS`, below).

What must carry an id, mechanically:

- in a property notebook: every list item of the *Lo que esto enseña* cell, and its id must be
  checked by that notebook (the id starts with the notebook's number and its `afirma` call is
  in the notebook's code); its title, with one of its own ids; every other block of every
  Markdown cell (prose between code cells, *Cómo correrlo*, the paragraph under the bullets)
  except the *Lo que imprime* cell: an id, or a `no-afirma` reason (`NO_CLAIM_REASONS`: narration
  of the code, instructions, a link…);
- in the claim pages: every block outside code fences and headings, that is every list item,
  every paragraph, every table body row and every HTML block. Its ids may be checked by any
  notebook or by a registered test.

An id written anywhere else in a page is checked the same way. An assertion whose id no page
carries is stale and fails too.

Outside the claim pages (the other pages of `docs/`, the reference and the benchmarks, whose
words come from the code's docstrings and the measured figures: `other_pages`), a block
that ends with `<!-- afirmacion: id … -->` is a claim like any other: its ids must be checked,
and its words are recorded in the lock. Their other blocks are not read, and a marker quoted in
inline code is a quotation, not a claim (`other_page_claim_blocks`).

The cells that check (`afirma` calls, and the *Lo que se afirma, comprobado* note above them)
carry the tag `verificacion` (`VERIFICATION_TAG`): mkdocs-jupyter leaves them off the page, and
`metadata.jupyter.source_hidden` folds them in JupyterLab. The docs check, nbmake and papermill
run them like any cell. They assert on what the notebook's own cells already ran and print
nothing (`scripts/pages.py`, `verification_problems`).

Words bound to their assertion: every marked block (a claim or a `no-afirma`) has a
fingerprint, a short hash of its normalised words, recorded in `LOCK` beside the ids it
carries. A block whose words are not the words recorded fails the check, naming the page, the
claim and what to do: re-read the assertion of that id, make it check what the words now say,
then record the new words with `uv run python -m scripts.claims --actualiza`. Recording is a
conscious review step, not a proof: it catches words changed without revisiting their
assertion; it cannot catch words that were false from the start under a weak assertion.

An id belongs to its sentences: the lock lists, under each id, the blocks bound to it. A block
placed under an id the lock binds to other blocks (a new paragraph mapped to `02.cerrado`)
fails as a new binding, naming the blocks the id already had (`unreviewed`), until it is
bound on purpose: its assertion re-read to check this sentence too, then `--actualiza`.
`--actualiza` prints each block whose words or binding changed beside the assertions of its
ids (the `afirma(...)` call, or the registered test's name and docstring), to read together.

No-afirma reasons come from a fixed list (`NO_CLAIM_REASONS`): the key, optionally followed by
" — " and free words (`<!-- no-afirma: instrucciones — cómo correrlo -->`, or the same string
as a map entry's "no-afirma"); `reason_problem` checks one, for every page. A block excused
with a reason that states what the runtime does — a subject of `RUNTIME_SUBJECTS` (the agent,
the journal, a run, a tool, the store…) followed, within three words (not a `que` or `cuando`
clause), by a present-tense verb of `RUNTIME_VERBS` (escribe, guarda, llama, repite…) — fails
(`runtime_excuses`): such a sentence needs an id. A block that names another system
(`OTHER_SYSTEMS`, on *Otros sistemas*) speaks of that system and is not read this way.

Numbers come from the run. `afirma(id, condition, mensaje, **valores)` records, with the id,
the values it compared (`valores`, as JSON; `CheckedClaim.values`); a registered test
returns a dict of its values. Every number and every quoted output fragment of a block bound
to ids must be among those values (recorded in this check run for any of the block's ids), or
in the printed output (*Lo que imprime*) of its notebook or of a notebook whose code asserts
one of its ids; otherwise the check fails naming the page, the block and the number
(`unsupported_numbers`). What is read (`checked_numbers`, `checked_fragments`):

- a number is a run of digits, with `.` or `,` between groups (`4`, `1379`, `4.200,00`,
  `0,5`), optionally with an ordinal mark (`1ª`, `2º`) or after `×`; it matches a value or
  printed number of the same amount (`4.200,00` matches 4200.0), or the same text;
- a quoted output fragment is a «…» quotation that holds a digit or `×`, or an inline code
  span that holds `×` (`modelo ×0`): it must be printed (or be a recorded text value) as
  written, whitespace aside; its numbers are not read again one by one.

Exempt, and so not read: words spelt out (`cuatro`, `dos veces`); text in inline code spans
other than the `×` fragments above (names, commands, step ids like `000001-tool`); link
targets and URLs; HTML tags and their attributes, and inline SVG figures (drawn by
scripts/diagramas.py, checked by its own tests); snippet lines (`--8<--`); digits inside a
name (`A2A`, `SHA-256`, `UTF-8`, `win32`, `5xx`, `_hijo_06.py`, `02_durabilidad`); a
notebook's number (a title's leading `NN ·`, a link text `[09](…)`, and a two-digit number
of an existing property notebook after `cuaderno`, `cuadernos`, `el`, `del` or `al`, in
parentheses alone, continuing such a list with `,` or `y`, or in a list of two or more such
numbers, `(00, 02 y 06)`); «…» quotations with no digit and no `×` (a term, a phrase); the
blocks of a notebook's *Pruébalo* cell, whose numbers describe a run with a change:
tests/docs/test_pruebalo.py runs it and finds each promised fragment in that run's output;
and the blocks whose ids are all facts about the kit (`hechos.*`), which scripts/hechos.py
writes from the notebooks and checks in check mode (derived, never typed).

An assertion that checks nothing is refused (`vacuous_assertions`): an `afirma` call whose
condition is a literal (`afirma("x", True, …)`), or an expression that reads no variable of the
run (only literals and builtins); and a registered test with an `assert` of that kind, or with
no `assert` at all (nor a `raise`, nor a call to a helper of its module that asserts).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from scripts.pages import (
    DOCS,
    REPO,
    property_notebooks,
    read_notebook,
    relative,
    source_of,
    title_of,
)

#: The variable `comun.afirma` reads: the folder where it records the ids it checked.
RECORD_FOLDER_VARIABLE = "AFIRMACIONES_COMPROBADAS"

#: The pages of `docs/` whose every block is a claim or says why it is not.
CLAIM_PAGES = (
    "index.md",
    "conceptos.md",
    "limites.md",
    "glosario.md",
    "figuras.md",
    "otros-sistemas.md",
    "escalar.md",
    "modelos.md",
    "probar.md",
)

#: Pages besides `docs/` read the same way: every block a claim or a reason why not.
CLAIM_PAGES_ELSEWHERE = (REPO / "README.md",)

#: The heading of a notebook's claims.
CLAIMS_HEADING = "Lo que esto enseña"

#: The heading of the cell that holds the output block: not prose, checked by scripts/pages.py.
BLOCK_HEADING = "Lo que imprime"

#: Where the fingerprint of every marked block's words is recorded, beside its ids.
LOCK = REPO / "tests" / "docs" / "afirmaciones.lock"

#: How an author records words after reviewing their assertion.
UPDATE_COMMAND = "uv run python -m scripts.claims --actualiza"

_ID = r"[a-z0-9]+(?:\.[a-z0-9-]+)+"
_CLAIM = re.compile(r"<!--\s*afirmacion:\s*((?:" + _ID + r"\s*)+)-->")
_NOT_A_CLAIM = re.compile(r"<!--\s*no-afirma:\s*(\S[^>]*?)\s*-->")
_AFIRMA_CALL = re.compile(r"""afirma\(\s*["'](""" + _ID + r""")["']""")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`[^`]*`")
#: Where a notebook cell keeps the map from its blocks to their ids: `metadata[key][name]`.
MAP_KEY, MAP_NAME = "synaptum", "afirmaciones"

#: The tag of the cells that check claims: off the page, folded in JupyterLab.
VERIFICATION_TAG = "verificacion"

#: How many of a block's first words its entry of the map quotes (`texto`).
OPENING_WORDS = 8


@dataclass(frozen=True)
class Block:
    """A piece of a page that may state something: a list item, a paragraph, a table row.

    On a claim page its ids and its reason are HTML comments in `text`. In a notebook they
    come from its entry of the cell's map (`given_ids`, `given_reason`), and `mapped_in`
    names that cell; `text` holds words only."""

    page: str  # how failures name the page
    where: str  # e.g. "*Lo que esto enseña*, bullet 3"
    text: str
    mapped_in: str | None = None  # a notebook block: the cell whose metadata maps it
    given_ids: tuple[str, ...] = ()
    given_reason: str | None = None
    position: int = 0  # a notebook block: its entry's number in the cell's map, from 1

    @property
    def ids(self) -> list[str]:
        if self.mapped_in is not None:
            return list(self.given_ids)
        return [i for match in _CLAIM.finditer(self.text) for i in match.group(1).split()]

    @property
    def excused(self) -> bool:
        if self.mapped_in is not None:
            return self.given_reason is not None
        return bool(_NOT_A_CLAIM.search(self.text))

    def quote(self, width: int = 90) -> str:
        """The block's words, without markers, on one line, shortened to `width`."""
        words = " ".join(_NOT_A_CLAIM.sub("", _CLAIM.sub("", self.text)).split())
        words = _LIST_ITEM.sub("", words)
        return words if len(words) <= width else words[: width - 1] + "…"

    @property
    def marker(self) -> str:
        """What the block is recorded under: its ids joined by "+", or "no-afirma"."""
        return "+".join(sorted(set(self.ids))) if self.ids else "no-afirma"

    @property
    def words(self) -> str:
        """The block's words, normalised: markers out, whitespace and list marks collapsed."""
        words = " ".join(_NOT_A_CLAIM.sub("", _CLAIM.sub("", self.text)).split())
        return unicodedata.normalize("NFC", _LIST_ITEM.sub("", words))

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.words.encode("utf-8")).hexdigest()[:12]

    @property
    def file(self) -> str:
        """The file the block is in, as the repository names it (for the lock)."""
        return self.page.split(" (page «")[0]

    @property
    def opening(self) -> str:
        """Its first words, as its entry of a notebook cell's map quotes them (`texto`)."""
        return opening(self.words)


def opening(words: str) -> str:
    """The first `OPENING_WORDS` words of normalised `words`, with "…" when there are more."""
    split = words.split()
    return " ".join(split[:OPENING_WORDS]) + ("…" if len(split) > OPENING_WORDS else "")


def entry_for(block: Block, *, ids: list[str] | None = None, reason: str | None = None) -> str:
    """The entry of a cell's map for `block`, as JSON, to paste into the cell's metadata."""
    import json

    entry: dict[str, Any] = {"texto": block.opening}
    if reason is not None:
        entry["no-afirma"] = reason
    else:
        entry["ids"] = ids or [f"{block.file.split('/')[-1][:2]}.id"]
    return json.dumps(entry, ensure_ascii=False)


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


_H1 = re.compile(r"^#\s+(.*?)\s*$")


def cell_map(cell: dict[str, Any]) -> list[Any]:
    """A cell's map from its blocks to their ids (`metadata.synaptum.afirmaciones`), or []."""
    found = cell.get("metadata", {}).get(MAP_KEY, {}).get(MAP_NAME, [])
    return found if isinstance(found, list) else []


def mapped_cells(notebook: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The Markdown cells whose blocks are mapped: every one but *Lo que imprime*."""
    return [
        (index, cell)
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "markdown"
        and not re.search(rf"^##\s+{BLOCK_HEADING}\s*$", source_of(cell), re.M)
    ]


def cell_blocks(cell: dict[str, Any]) -> list[tuple[str, str]]:
    """The blocks a Markdown cell's map is aligned to, as (kind, text): its title first
    ("title", the heading's words) when it holds the `# NN · …` heading, then `blocks`."""
    text = source_of(cell)
    found: list[tuple[str, str]] = []
    fence = None
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is None and (opening_fence := _FENCE.match(line)):
            fence = opening_fence.group(1)
        elif fence is not None and stripped.startswith(fence) and set(stripped) == {fence[0]}:
            fence = None
        elif fence is None and (heading := _H1.match(line)):
            found.append(("title", heading.group(1)))
            break
    return found + blocks(text)


def notebook_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """Every block of a property notebook's mapped cells, each with its entry of the cell's map
    (by position; `map_problems` says when the map is out of step). Named as failures name
    them: "its title", "*Lo que esto enseña*, bullet 3", "cell 12 (id "x"), block 2"."""
    notebook = notebook or read_notebook(path)
    page = f"{relative(path)} (page «{title_of(notebook)}»)"
    found = []
    for index, cell in mapped_cells(notebook):
        cell_name = f'cell {index} (id "{cell.get("id", "")}")'
        is_claims = bool(re.search(rf"^##\s+{CLAIMS_HEADING}\s*$", source_of(cell), re.M))
        entries = cell_map(cell)
        bullets = prose = 0
        for position, (kind, body) in enumerate(cell_blocks(cell), start=1):
            if kind == "title":
                where = "its title"
            elif is_claims and kind == "item":
                bullets += 1
                where = f"*{CLAIMS_HEADING}*, bullet {bullets}"
            else:
                prose += 1
                where = f"{cell_name}, block {prose}"
            entry = entries[position - 1] if position <= len(entries) else {}
            entry = entry if isinstance(entry, dict) else {}
            ids = entry.get("ids")
            reason = entry.get("no-afirma")
            found.append(
                Block(
                    page,
                    where,
                    body,
                    mapped_in=cell_name,
                    given_ids=tuple(i for i in ids if isinstance(i, str))
                    if isinstance(ids, list)
                    else (),
                    given_reason=reason if isinstance(reason, str) and reason.strip() else None,
                    position=position,
                )
            )
    return found


def notebook_claim_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """The list items of a property notebook's *Lo que esto enseña* cell."""
    return [b for b in notebook_blocks(path, notebook) if b.where.startswith(f"*{CLAIMS_HEADING}*")]


def notebook_title_block(path: Path, notebook: dict[str, Any] | None = None) -> Block | None:
    """The notebook's title, with the ids its entry of the map gives it; None if it has none."""
    return next((b for b in notebook_blocks(path, notebook) if b.where == "its title"), None)


def notebook_prose_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """Every block of a notebook's Markdown cells but the title, the *Lo que esto enseña*
    bullets (`notebook_claim_blocks`) and the *Lo que imprime* cell, named by cell id."""
    return [
        b
        for b in notebook_blocks(path, notebook)
        if b.where != "its title" and not b.where.startswith(f"*{CLAIMS_HEADING}*")
    ]


def notebook_marked_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """A notebook's title, bullets and prose blocks that carry an id or a `no-afirma`."""
    return [block for block in notebook_blocks(path, notebook) if block.ids or block.excused]


def notebook_ids(notebook: dict[str, Any]) -> list[str]:
    """Every claim id a notebook's maps give its blocks."""
    return [
        claim
        for _, cell in mapped_cells(notebook)
        for entry in cell_map(cell)
        if isinstance(entry, dict) and isinstance(entry.get("ids"), list)
        for claim in entry["ids"]
    ]


def id_bindings(paths: list[Path] | None = None) -> dict[str, list[Block]]:
    """id → the notebook blocks its map binds to it: the sentences that id belongs to."""
    bound: dict[str, list[Block]] = {}
    for path in property_notebooks() if paths is None else paths:
        for block in notebook_blocks(path):
            for claim in block.ids:
                bound.setdefault(claim, []).append(block)
    return bound


def map_problems(path: Path, notebook: dict[str, Any] | None = None) -> list[str]:
    """Where a notebook's maps and its Markdown disagree: a block with no entry, an entry for
    another block (out of step), an entry for no block, an entry that is not an entry, and a
    claim marker written in the Markdown, where a learner sees it. One line per problem, the
    first in each cell (after it, every entry is out of step as well)."""
    notebook = notebook or read_notebook(path)
    where = relative(path)
    problems = []
    for index, cell in enumerate(notebook["cells"]):
        text = source_of(cell)
        marker = _CLAIM.search(text) or _NOT_A_CLAIM.search(text)
        if cell["cell_type"] == "markdown" and marker:
            problems.append(
                f'{where}: cell {index} (id "{cell.get("id", "")}") writes the claim marker '
                f"«{marker.group(0)}» in its Markdown, where a learner sees it; in a notebook "
                f"a block's ids live in its cell's metadata ({MAP_KEY}.{MAP_NAME})"
            )
    found = notebook_blocks(path, notebook)
    for index, cell in mapped_cells(notebook):
        cell_name = f'cell {index} (id "{cell.get("id", "")}")'
        entries = cell_map(cell)
        mine = [b for b in found if b.mapped_in == cell_name]
        problem = next((p for b in mine if (p := _entry_problem(b, entries, _its_map(b)))), None)
        there = f"the map of {cell_name} (metadata {MAP_KEY}.{MAP_NAME})"
        if problem:
            problems.append(problem)
        elif len(entries) > len(mine):
            extra = entries[len(mine)]
            texto = extra.get("texto") if isinstance(extra, dict) else extra
            problems.append(
                f"{where}: {there} has {len(entries)} entries for {len(mine)} blocks: entry "
                f"{len(mine) + 1} («{texto}») maps a block the cell does not have; drop it"
            )
    return problems


def _its_map(block: Block) -> str:
    """How a failure names the map of `block`'s cell: its cell, unless `where` names it."""
    if block.where.startswith(f"{block.mapped_in},"):
        return f"its cell's map (metadata {MAP_KEY}.{MAP_NAME})"
    return f"the map of {block.mapped_in} (metadata {MAP_KEY}.{MAP_NAME})"


def _entry_problem(block: Block, entries: list[Any], there: str) -> str | None:
    """What is wrong with `block`'s entry of its cell's map, or None."""
    k = block.position
    name = f"{block.page}, {block.where}"
    bullet_or_title = not block.where.startswith("cell")
    if k > len(entries):
        other = "" if bullet_or_title else f" (or {entry_for(block, reason='la razón')})"
        return (
            f"{name} («{block.quote(60)}») has no entry in {there}: add entry {k}, "
            f"{entry_for(block)}{other}"
        )
    entry = entries[k - 1]
    if not isinstance(entry, dict) or set(entry) - {"texto", "ids", "no-afirma"}:
        return f"{name}: entry {k} of {there} is not texto with ids or no-afirma: {entry!r}"
    ids, reason = entry.get("ids"), entry.get("no-afirma")
    has_ids = isinstance(ids, list) and bool(ids)
    has_reason = isinstance(reason, str) and bool(reason.strip())
    if has_ids == has_reason:
        gives = "both ids and a no-afirma reason" if has_ids else "neither ids nor a reason"
        return f"{name}: entry {k} of {there} gives {gives}: {entry!r}; an entry gives one"
    bad = [i for i in ids or [] if not isinstance(i, str) or not re.fullmatch(_ID, i)]
    if bad:
        return f"{name}: entry {k} of {there} has ids that are not ids: {bad} (like 02.cerrado)"
    if entry.get("texto") != block.opening:
        own = entry_for(block, ids=ids if has_ids else None, reason=reason if has_reason else None)
        return (
            f"{name}: entry {k} of {there} is for a block that begins «{entry.get('texto')}», "
            f"and this block begins «{block.opening}»: the map is out of step with the cell (a "
            "block added, removed or rewritten at its start). If this is the block that entry "
            f"was for, make it {own}; if not, give this block an entry of its own"
        )
    return None


def marked_blocks() -> list[Block]:
    """Every block the lock records: each notebook's title, bullets and prose, every block
    of the claim pages, and the claims of the other pages; only those that carry an id or a
    `no-afirma`."""
    found: list[Block] = []
    for path in property_notebooks():
        found += notebook_marked_blocks(path)
    for path in claim_pages():
        found += page_claim_blocks(path)
    for path in other_pages():
        found += other_page_claim_blocks(path)
    return [block for block in found if block.ids or block.excused]


def lock_lines(found: list[Block]) -> list[str]:
    """The lock's lines: fingerprint, file, ids, and the words in full (for a reviewer)."""
    return sorted(f"{b.fingerprint} {b.file} {b.marker} | {b.words}" for b in found)


def read_lock(lock: Path = LOCK) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(file, ids) → the (fingerprint, words) recorded for it, one per block."""
    recorded: dict[tuple[str, str], list[tuple[str, str]]] = {}
    if not lock.exists():
        return recorded
    for line in lock.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        head, _, words = line.partition(" | ")
        fingerprint, file, marker = head.split()
        recorded.setdefault((file, marker), []).append((fingerprint, words))
    return recorded


def _what_changed(now: str, recorded: list[tuple[str, str]]) -> str:
    """Where the words differ from the closest words recorded under the same ids."""
    if not recorded:
        return f"«{_shorten(now)}», new: no words are recorded for it"

    def common(before: str) -> int:
        pairs = enumerate(zip(now, before, strict=False))
        return next((i for i, (x, y) in pairs if x != y), min(len(now), len(before)))

    before = max((words for _, words in recorded), key=common)
    start = max(0, common(before) - 30)
    end = 0
    while end < min(len(now), len(before)) - start and now[-1 - end] == before[-1 - end]:
        end += 1

    def show(text: str) -> str:
        core = text[start : len(text) - end]
        if len(core) > 80:
            return ("…" if start else "") + core[:79] + "…"
        return ("…" if start else "") + core + ("…" if end else "")

    return f"now «{show(now)}», reviewed «{show(before)}»"


def _shorten(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def unreviewed(found: list[Block], lock: Path = LOCK) -> list[str]:
    """One line per marked block whose words are not the words recorded for its ids, and per
    recorded words that no block of the same files says any more."""
    files = {block.file for block in found}
    recorded = {key: list(r) for key, r in read_lock(lock).items() if key[0] in files}
    left = {key: list(r) for key, r in recorded.items()}
    changed: list[tuple[Block, tuple[str, str]]] = []
    for block in found:
        key = (block.file, block.marker)
        match = next((r for r in left.get(key, []) if r[0] == block.fingerprint), None)
        if match:
            left[key].remove(match)
        else:
            changed.append((block, key))
    problems = _new_bindings(found, recorded, changed)
    rebound = {id(block) for block in found if problems and _is_rebound(block, problems)}
    for block, key in changed:
        if id(block) in rebound:
            continue
        what = f"claim {block.marker}" if block.ids else "a block marked no-afirma"
        review = (
            f"re-read the assertion of {block.marker} and make it check what the words now say"
            if block.ids
            else "check that it still states nothing about the runtime"
        )
        problems.append(
            f"{block.page}, {block.where}: the words of {what} are not the words last "
            f"reviewed ({_what_changed(block.words, left.get(key, []))}). Review: {review}; "
            f"then record the words with `{UPDATE_COMMAND}`."
        )
    done = {key for _, key in changed}
    for (file, marker), rest in sorted(left.items()):
        if rest and (file, marker) not in done:
            problems.append(
                f"{relative(lock)} records words of {marker} in {file} that no block says any "
                f"more («{_shorten(rest[0][1])}»); record the page as it is with "
                f"`{UPDATE_COMMAND}`."
            )
    return problems


def _bound_in_lock(recorded: dict[tuple[str, str], list[tuple[str, str]]]) -> dict[str, int]:
    """id → how many blocks the lock binds to it."""
    count: dict[str, int] = {}
    for (_, marker), lines in recorded.items():
        if marker != "no-afirma":
            for claim in marker.split("+"):
                count[claim] = count.get(claim, 0) + len(lines)
    return count


def _new_bindings(
    found: list[Block],
    recorded: dict[tuple[str, str], list[tuple[str, str]]],
    changed: list[tuple[Block, tuple[str, str]]],
) -> list[str]:
    """One line per block not in the lock placed under an id that the lock binds to other
    blocks, when that id now has more blocks than the lock binds to it: an id belongs to its
    sentences, and a new one is bound on purpose."""
    in_lock = _bound_in_lock(recorded)
    now: dict[str, list[Block]] = {}
    for block in found:
        for claim in block.ids:
            now.setdefault(claim, []).append(block)
    new = [block for block, _ in changed]
    problems = []
    for block in new:
        for claim in block.ids:
            had = in_lock.get(claim, 0)
            if not had or len(now[claim]) <= had:
                continue
            others = [b for b in now[claim] if b not in new]
            named = "; ".join(f"{b.where} («{b.quote(40)}»)" for b in others) or "other blocks"
            problems.append(
                f"{block.page}, {block.where}: a new block («{block.quote(60)}») is placed under "
                f"claim {claim}, which the lock binds to {had} other block(s): {named}. An id "
                "belongs to its sentences: give this block its own id and assertion, or bind it "
                f"on purpose — re-read the assertion of {claim}, make it check this sentence "
                f"too, then record the binding with `{UPDATE_COMMAND}`."
            )
            break
    return problems


def _is_rebound(block: Block, problems: list[str]) -> bool:
    return any(p.startswith(f"{block.page}, {block.where}: a new block") for p in problems)


def write_lock(lock: Path = LOCK) -> int:
    """Record the words of every marked block as reviewed; returns how many lines."""
    lines = lock_lines(marked_blocks())
    header = (
        "# The words of every claim, as last reviewed beside its assertion (scripts/claims.py).\n"
        f"# Rewritten only by `{UPDATE_COMMAND}`, after re-reading the assertions of the\n"
        "# claims whose words changed. A review step, not a proof. Do not edit by hand.\n"
    )
    lock.write_text(header + "".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def page_claim_blocks(path: Path, text: str | None = None) -> list[Block]:
    """Every block of a claim page (or of `text`, read as that page), named by its section."""
    found, counts = [], {}
    page = relative(path)
    text = path.read_text(encoding="utf-8") if text is None else text
    for section, part in _sections(text):
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
    return [DOCS / name for name in CLAIM_PAGES] + list(CLAIM_PAGES_ELSEWHERE)


def other_pages() -> list[Path]:
    """The pages of `docs/` that are not claim pages (the reference, the benchmarks)."""
    return [p for p in sorted(DOCS.glob("*.md")) if p.name not in CLAIM_PAGES]


def other_page_claim_blocks(path: Path, text: str | None = None) -> list[Block]:
    """The blocks of a page outside the claim pages that carry a claim id: a marker
    `<!-- afirmacion: id -->` outside inline code (a marker in backticks is quoted)."""
    return [
        block
        for block in page_claim_blocks(path, text)
        if _CLAIM.search(_INLINE_CODE.sub("", block.text))
    ]


# ── What the check reports ───────────────────────────────────────────────────


def unmarked(found: list[Block], *, excuses_allowed: bool) -> list[str]:
    """One line per block that carries no id (and, where allowed, no excuse)."""
    problems = []
    for block in found:
        if block.ids or (excuses_allowed and block.excused):
            continue
        if block.mapped_in is not None:
            marker = f"{entry_for(block)} as entry {block.position} of {_its_map(block)}"
            if excuses_allowed:
                marker += f", or {entry_for(block, reason='la razón')}"
        else:
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


class CheckedClaim(str):
    """A claim id that an assertion checked, and held, in this run; `values` are the values
    each of its `afirma` calls recorded (one dict per call). It is the id as a string, so
    sets of them compare, join and subtract with sets of ids."""

    values: tuple[dict[str, Any], ...]

    def __new__(cls, claim: str, values: tuple[dict[str, Any], ...] = ()) -> CheckedClaim:
        made = super().__new__(cls, claim)
        made.values = tuple(values)
        return made

    def __reduce__(self) -> tuple[Any, ...]:  # pickled across xdist workers with its values
        return (CheckedClaim, (str(self), self.values))


def read_recorded(folder: Path) -> set[str]:
    """The ids recorded in `folder`, as `CheckedClaim`s carrying their recorded values. A line
    is JSON, {"id": …, "valores": {…}}, or (older) the bare id."""
    import json

    values: dict[str, list[dict[str, Any]]] = {}
    for file in sorted(folder.glob("*.txt")):
        for line in file.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            if line.startswith("{"):
                record = json.loads(line)
                given = record.get("valores")
                values.setdefault(record["id"], []).append(given if isinstance(given, dict) else {})
            else:
                values.setdefault(line.strip(), [])
    return {CheckedClaim(claim, tuple(given)) for claim, given in values.items()}


def values_of(checked: set[str]) -> dict[str, list[dict[str, Any]]]:
    """id → the values its assertions recorded, from a set of checked ids (`CheckedClaim`s;
    a bare id has none)."""
    return {
        str(claim): list(claim.values) if isinstance(claim, CheckedClaim) else []
        for claim in checked
    }


# ── No-afirma reasons ────────────────────────────────────────────────────────

#: Why a block states nothing about the runtime: a marker or entry gives one of these keys,
#: optionally followed by " — " and free words. Other pages (H2's) are checked by the same code.
NO_CLAIM_REASONS = (
    "instrucciones",
    "enlace",
    "narra el código",
    "sobre esta página",
    "definición",
    "sobre la plataforma",
)

#: What may follow a reason's key: this, then free words.
REASON_SEPARATOR = " — "


def reason_problem(reason: str) -> str | None:
    """What is wrong with a no-afirma reason, or None when it is a key of `NO_CLAIM_REASONS`,
    alone or followed by " — " and words."""
    key, separator, words = reason.strip().partition(REASON_SEPARATOR)
    if key in NO_CLAIM_REASONS and (not separator or words.strip()):
        return None
    keys = ", ".join(f"«{k}»" for k in NO_CLAIM_REASONS)
    return (
        f"the no-afirma reason «{reason}» is not in the list: give one of {keys}, optionally "
        f"followed by «{REASON_SEPARATOR.strip()}» and your own words"
    )


def reason_of(block: Block) -> str | None:
    """The no-afirma reason a block gives, as written, or None."""
    if block.mapped_in is not None:
        return block.given_reason
    found = _NOT_A_CLAIM.search(block.text)
    return found.group(1) if found else None


def reason_problems(found: list[Block]) -> list[str]:
    """One line per excused block whose reason is not from `NO_CLAIM_REASONS`."""
    problems = []
    for block in found:
        reason = reason_of(block)
        if reason is not None and block.excused and (problem := reason_problem(reason)):
            problems.append(f"{block.page}, {block.where} («{block.quote(60)}»): {problem}")
    return problems


#: Who does things in the runtime, as the pages name them (`runtime_excuses`).
RUNTIME_SUBJECTS = (
    "Agent",
    "Agent.run",
    "agent.run",
    "el agente",
    "un agente",
    "el journal",
    "un journal",
    "el run",
    "un run",
    "los runs",
    "el subrun",
    "la herramienta",
    "una herramienta",
    "las herramientas",
    "el almacén",
    "el checkpointer",
    "el bucle",
    "el runtime",
    "la sesión",
    "Session",
    "el gateway",
)

#: What the runtime does, in the present tense (`runtime_excuses`).
RUNTIME_VERBS = (
    "escribe",
    "se escribe",
    "guarda",
    "se guarda",
    "llama",
    "ejecuta",
    "se ejecuta",
    "se ejecutan",
    "repite",
    "se repite",
    "reanuda",
    "se reanuda",
    "devuelve",
    "registra",
    "paga",
    "cobra",
    "borra",
    "recorre",
    "reintenta",
    "rechaza",
    "deriva",
    "entrega",
    "termina",
    "muere",
    "corre",
    "pide",
    "para",
    "se para",
    "falla",
    "bloquea",
    "cierra",
)


def _public_classes() -> tuple[str, ...]:
    """The classes a page may name as the subject of what the runtime does: every class the
    package exports, and the gateways' and stores' (a page says «`LocalGateway` ejecuta…»)."""
    import synaptum_lite
    from synaptum_lite.gateways import axonium, http
    from synaptum_lite.stores import postgres

    names = {n for n in synaptum_lite.__all__ if n[:1].isupper()}
    for module in (http, axonium, postgres):
        names |= {n for n, v in vars(module).items() if isinstance(v, type) and n[:1].isupper()}
    return tuple(sorted(names))


@cache
def _runtime() -> re.Pattern[str]:
    """A subject, up to three words, a runtime verb. Built on first use: the subjects include
    the package's classes, and importing the package is not needed to import this module."""
    subjects = sorted(RUNTIME_SUBJECTS + _public_classes(), key=len, reverse=True)
    return re.compile(
        r"(?<![\w.])(?P<subject>"
        + "|".join(re.escape(s) for s in subjects)
        + r")`?(?:\s+(?!(?:que|cuando|si|donde|como)\b)[\wáéíóúñü`]+){0,3}?\s+(?P<verb>"
        + "|".join(re.escape(v) for v in sorted(RUNTIME_VERBS, key=len, reverse=True))
        + r")\b",
        re.I,
    )


#: Other systems a page compares with: a block that names one speaks of that system's run.
OTHER_SYSTEMS = ("LangGraph", "Temporal", "DBOS", "Restate", "OpenAI Agents SDK")


def runtime_statement(words: str) -> str | None:
    """The words of `words` that state what the runtime does (a subject of `RUNTIME_SUBJECTS`
    or a class the package exports and, within three words that are not `que`, `cuando`,
    `si`, `donde` or `como`, a verb of `RUNTIME_VERBS`, in one clause), or None. A block
    that names one of `OTHER_SYSTEMS` speaks of that system, not of this runtime."""
    if any(system in words for system in OTHER_SYSTEMS):
        return None
    # a table row's cells read as one clause: «| `LocalGateway` | ejecuta las herramientas…»
    plain = _INLINE_CODE.sub(lambda m: m.group(0).strip("`"), words).replace("|", " ")
    for clause in re.split(r"[.;:()—]", plain):
        if found := _runtime().search(clause):
            return found.group(0)
    return None


def runtime_excuses(found: list[Block]) -> list[str]:
    """One line per block excused with `no-afirma` whose words state what the runtime does."""
    problems = []
    for block in found:
        if block.excused and not block.ids and (said := runtime_statement(block.words)):
            problems.append(
                f"{block.page}, {block.where} is excused with no-afirma («{reason_of(block)}») "
                f"but states what the runtime does («{said}»: «{block.quote(70)}»). Give it a "
                "claim id and an assertion that checks it, or say it without the runtime"
            )
    return problems


# ── Numbers from the run ─────────────────────────────────────────────────────

_NUMBER = re.compile(r"(?<![\w\-./])(\d+(?:[.,]\d+)*)[ªº]?(?![\w\-/]|[.,]\d)")
_ANY_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_QUOTE = re.compile(r"«([^»]*)»")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_HTML = re.compile(r"<svg\b.*?</svg>|<[^>]+>", re.S)
_SNIPPET = re.compile(r"^.*--8<--.*$", re.M)
_TITLE_NUMBER = re.compile(r"^\d\d\s+·")


def _notebook_numbers() -> set[str]:
    from scripts.pages import PROPERTY_NOTEBOOKS

    return {path.name[:2] for path in PROPERTY_NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}


def _without_notebook_references(text: str) -> str:
    """`text` with the numbers that name a property notebook taken out (see the docstring)."""
    numbers = "|".join(sorted(_notebook_numbers())) or "(?!)"
    one = rf"(?:{numbers})(?!\d)"
    text = re.sub(rf"\[(?:{one})\]", "[]", text)
    text = re.sub(rf"\(\s*{one}\s*\)", "()", text)
    listed = rf"\b(?:cuadernos?|el|del|al)\s+{one}(?:\s*(?:,|\by\b)\s*(?:el\s+)?{one})*"
    text = re.sub(listed, lambda m: re.sub(r"\d", "", m.group(0)), text, flags=re.I)
    several = rf"(?<![\w.,]){one}(?:\s*(?:,|\by\b)\s*{one})+(?![\w.,]\w)"
    return re.sub(several, lambda m: re.sub(r"\d", "", m.group(0)), text)


def _readable(words: str) -> str:
    """A block's words with what is not read taken out: link targets, URLs, HTML, SVG,
    snippets, code spans (but those with ×), a title's number and notebook references."""
    text = _SNIPPET.sub("", words)
    text = _HTML.sub(" ", text)
    text = _LINK_TARGET.sub("]", text)
    text = _URL.sub(" ", text)
    text = _TITLE_NUMBER.sub("", text)
    text = _INLINE_CODE.sub(lambda m: m.group(0) if "×" in m.group(0) else " ", text)
    return _without_notebook_references(text)


def _is_fragment(quoted: str) -> bool:
    return "×" in quoted or any(c.isdigit() for c in quoted)


def checked_fragments(words: str) -> list[str]:
    """The quoted output fragments of a block's words: «…» with a digit or ×, and code
    spans with ×."""
    text = _readable(words)
    found = [q for q in _QUOTE.findall(text) if _is_fragment(q)]
    found += [m.group(0).strip("`") for m in _INLINE_CODE.finditer(text)]
    return [" ".join(f.split()) for f in found]


def checked_numbers(words: str) -> list[str]:
    """The numbers of a block's words that must come from the run, as written (see the
    docstring for what is a number and what is exempt); those inside a fragment are not."""
    text = _readable(words)
    text = _QUOTE.sub(lambda m: " " if _is_fragment(m.group(1)) else m.group(0), text)
    text = _INLINE_CODE.sub(" ", text)
    return [m.group(1) for m in _NUMBER.finditer(text)]


def _amounts(token: str) -> set[Any]:
    """The amounts a written number may be: Spanish (`4.200,00`) and English (`1080.00`)."""
    from decimal import Decimal, InvalidOperation

    readings = {token, token.replace(".", "").replace(",", "."), token.replace(",", "")}
    found: set[Any] = set()
    for reading in readings:
        with contextlib.suppress(InvalidOperation, ValueError):
            if reading.count(".") <= 1:
                found.add(Decimal(reading).normalize())
    return found or {token}


def _flatten(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(key)
            yield from _flatten(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _flatten(item)
    else:
        yield value


@dataclass
class Evidence:
    """What a block's numbers may come from: recorded values and printed text."""

    amounts: set[Any]
    texts: list[str]

    @classmethod
    def of(cls, values: list[Any], printed: list[str]) -> Evidence:
        from decimal import Decimal

        amounts: set[Any] = set()
        texts = [" ".join(text.split()) for text in printed]
        for value in _flatten(values):
            if isinstance(value, bool) or value is None:
                continue
            if isinstance(value, int | float):
                amounts.add(Decimal(repr(value)).normalize())
                amounts.add(Decimal(f"{value:.2f}").normalize())
            else:
                texts.append(" ".join(str(value).split()))
        for text in texts:
            for token in _ANY_NUMBER.findall(text):
                amounts |= _amounts(token)
        return cls(amounts, texts)

    def covers_number(self, token: str) -> bool:
        return bool(_amounts(token) & self.amounts) or any(token in t for t in self.texts)

    def covers_fragment(self, fragment: str) -> bool:
        return any(fragment in text for text in self.texts)


#: The ids of the facts about the kit that scripts/hechos.py writes into the pages from the
#: notebooks themselves and checks in check mode: their numbers are derived, not typed.
DERIVED_FACTS_PREFIX = "hechos."


def exempt_from_numbers(block: Block) -> bool:
    """A block whose numbers are not read: the cells of a notebook's *Pruébalo*, and the
    facts about the kit (ids `hechos.*`) that scripts/hechos.py derives."""
    if block.ids and all(claim.startswith(DERIVED_FACTS_PREFIX) for claim in block.ids):
        return True
    return block.mapped_in is not None and '(id "pruebalo")' in block.mapped_in


def unsupported_numbers(block: Block, evidence: Evidence) -> list[str]:
    """One line per number or fragment of a block bound to ids that `evidence` lacks."""
    if not block.ids or exempt_from_numbers(block):
        return []
    ids = ", ".join(block.ids)
    missing = [
        f"the fragment «{fragment}»"
        for fragment in checked_fragments(block.words)
        if not evidence.covers_fragment(fragment)
    ] + [
        f"the number {number}"
        for number in checked_numbers(block.words)
        if not evidence.covers_number(number)
    ]
    return [
        f"{block.page}, {block.where}: {what} is not printed by the notebook nor among the "
        f"values recorded for {ids} in this run («{block.quote(70)}»). Record the value it "
        "states (afirma(…, nombre=valor), or return {nombre: valor} from its registered test), "
        "print it, or fix the words"
        for what in missing
    ]


def asserting_notebooks(claim: str) -> list[Path]:
    """The property notebooks whose code has an `afirma` call for `claim`."""
    return [
        p for p in property_notebooks() if claim in asserted_ids(notebook_code(read_notebook(p)))
    ]


def printed_by(path: Path) -> str:
    """What a property notebook prints: its *Lo que imprime* block (the docs check compares
    it with the run)."""
    from scripts.pages import expected_block

    return expected_block(read_notebook(path)).text


def evidence_for(
    block: Block, values: dict[str, list[dict[str, Any]]], own: Path | None = None
) -> Evidence:
    """The values recorded for the block's ids, and the printed output of `own` (its
    notebook) and of every notebook that asserts one of its ids."""
    notebooks = {own} if own is not None else set()
    for claim in block.ids:
        notebooks |= set(asserting_notebooks(claim))
    recorded = [values.get(claim, []) for claim in block.ids]
    return Evidence.of(recorded, [printed_by(p) for p in sorted(notebooks)])


# ── Assertions that check nothing ────────────────────────────────────────────


def _reads_the_run(node: Any) -> bool:
    """Whether an expression reads a variable that is not a builtin and not its own (a
    comprehension's or lambda's)."""
    import ast
    import builtins

    own: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.comprehension):
            own |= {n.id for n in ast.walk(inner.target) if isinstance(n, ast.Name)}
        elif isinstance(inner, ast.Lambda):
            own |= {a.arg for a in inner.args.args}
    return any(
        isinstance(inner, ast.Name) and inner.id not in own and not hasattr(builtins, inner.id)
        for inner in ast.walk(node)
    )


def vacuous_assertions(code: str, where: str) -> list[str]:
    """One line per `afirma(...)` call in `code` whose condition is a literal or reads no
    variable of the run. `where` names the code (a notebook's cell)."""
    import ast

    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, where, "exec", flags=flags)
    problems = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "afirma"):
            continue
        condition = node.args[1] if len(node.args) > 1 else None
        condition = condition or next((k.value for k in node.keywords if k.arg == "cierto"), None)
        if condition is None or _reads_the_run(condition):
            continue
        call = " ".join((ast.get_source_segment(code, node) or "afirma(…)").split())
        problems.append(
            f"{where}: «{_shorten(call, 100)}» checks nothing: its condition reads no variable "
            "of the run. Make it compare what the notebook measured"
        )
    return problems


def notebook_vacuous_assertions(path: Path, notebook: dict[str, Any] | None = None) -> list[str]:
    """`vacuous_assertions` over every code cell of a property notebook."""
    notebook = notebook or read_notebook(path)
    problems = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "code":
            where = f'{relative(path)}, cell {index} (id "{cell.get("id", "")}")'
            problems += vacuous_assertions(source_of(cell), where)
    return problems


def _raises(tree: Any) -> bool:
    import ast

    return any(isinstance(n, ast.Raise) for n in ast.walk(tree))


def _calls_a_check(tree: Any, function: Any) -> bool:
    """Whether `tree` calls, by name, a function of `function`'s module that asserts or raises
    (a helper shared by several registered tests)."""
    import ast
    import inspect
    import textwrap

    module = inspect.getmodule(function)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            helper = getattr(module, node.func.id, None)
            if inspect.isfunction(helper) and helper is not function:
                inner = ast.parse(textwrap.dedent(inspect.getsource(helper)))
                if any(isinstance(n, ast.Assert) for n in ast.walk(inner)) or _raises(inner):
                    return True
    return False


def vacuous_registered(functions: dict[str, Any]) -> list[str]:
    """One line per registered test (id → function) with no `assert` (nor `raise`, nor a call
    to a function of its module that asserts), or with an `assert` whose test reads no
    variable."""
    import ast
    import inspect
    import textwrap

    problems = []
    for claim, function in sorted(functions.items()):
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
        asserts = [n for n in ast.walk(tree) if isinstance(n, ast.Assert)]
        name = f"the registered test of {claim} ({function.__name__})"
        if not asserts and not _raises(tree) and not _calls_a_check(tree, function):
            problems.append(
                f"{name} has no assert (nor raise, nor a call to a function of its module "
                "that asserts): it checks nothing"
            )
        for node in asserts:
            if not _reads_the_run(node.test):
                said = " ".join((ast.get_source_segment(source, node) or "assert …").split())
                problems.append(f"{name}: «{_shorten(said, 100)}» checks nothing")
    return problems


def assertion_sources(claim: str) -> list[str]:
    """Where `claim` is asserted, to read beside its words: each `afirma("claim", …)` call
    as written in a notebook, and the registered test's name and first docstring line."""
    import ast
    import inspect

    found = []
    for path in property_notebooks():
        for index, cell in enumerate(read_notebook(path)["cells"]):
            code = source_of(cell)
            if cell["cell_type"] != "code" or claim not in code:
                continue
            flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            for node in ast.walk(compile(code, str(path), "exec", flags=flags)):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) == "afirma"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value == claim
                ):
                    call = ast.get_source_segment(code, node) or "afirma(…)"
                    found.append(f"{relative(path)}, cell {index}:\n{call}")
    with contextlib.suppress(ImportError):
        from tests.docs.afirmaciones_md import AFIRMACIONES

        with contextlib.suppress(ImportError):  # the checks of the other pages register there
            import tests.docs.afirmaciones_paginas  # noqa: F401

        if claim in AFIRMACIONES:
            function = AFIRMACIONES[claim]
            doc = (inspect.getdoc(function) or "").split("\n")[0]
            module = function.__module__.replace(".", "/") + ".py"
            found.append(f"{module}: {function.__name__}" + (f": {doc}" if doc else ""))
    return found or [f"(no assertion of {claim} found)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.claims", description=__doc__)
    parser.add_argument(
        "--actualiza",
        action="store_true",
        help="record the words of every claim as reviewed (after re-reading their assertions)",
    )
    args = parser.parse_args(argv)
    if args.actualiza:

        def lines() -> set[str]:
            text = LOCK.read_text(encoding="utf-8") if LOCK.exists() else ""
            return {line for line in text.splitlines() if not line.startswith("#")}

        before = lines()
        count = write_lock()
        after = lines()
        for line in sorted(after - before):
            print(f"recorded  {line}")
            head = line.partition(" | ")[0].split()
            for claim in [] if head[2] == "no-afirma" else head[2].split("+"):
                for source in assertion_sources(claim):
                    print("    " + source.replace("\n", "\n    "))
        print(f"{relative(LOCK)}: {count} blocks, {len(after - before)} newly recorded")
        return 0
    problems = unreviewed(marked_blocks())
    print("\n".join(problems) or "every claim's words are the words last reviewed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
