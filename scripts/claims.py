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

- in a property notebook, its title: the id goes on the line right after the `# NN · …`
  heading (inside the heading it would leak into the page title and the search results; the
  nav label is the short one `mkdocs.yml` gives), and it is one of the notebook's own ids;
- in a property notebook, every other block of every Markdown cell (prose between code cells,
  *Cómo correrlo*, the paragraph under the bullets) except the *Lo que imprime* cell: an id, or
  `<!-- no-afirma: the reason -->` (narration, instructions, how to run), like a claim page.

An id written anywhere else in a page's Markdown is checked the same way. An assertion whose
id no page carries is stale and fails too.

Words bound to their assertion: every marked block (a claim or a `no-afirma`) has a
fingerprint, a short hash of its normalised words, recorded in `LOCK` beside the ids it
carries. A block whose words are not the words recorded fails the check, naming the page, the
claim and what to do: re-read the assertion of that id, make it check what the words now say,
then record the new words with `uv run python -m scripts.claims --actualiza`. Recording is a
conscious review step, not a proof: it catches words changed without revisiting their
assertion; it cannot catch words that were false from the start under a weak assertion.
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

#: The pages whose every block is a claim or says why it is not.
CLAIM_PAGES = ("conceptos.md", "limites.md", "glosario.md", "figuras.md", "otros-sistemas.md")

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
_TITLE = re.compile(
    r"^#\s+(?P<title>[^\n]*?)\s*\n(?P<mark><!--\s*afirmacion:[^\n]*-->)[ \t]*$", re.M
)


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


def notebook_title_block(path: Path, notebook: dict[str, Any] | None = None) -> Block | None:
    """The notebook's title with the id on the line after it, or None when it has none."""
    notebook = notebook or read_notebook(path)
    page = f"{relative(path)} (page «{title_of(notebook)}»)"
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown" and (match := _TITLE.search(source_of(cell))):
            return Block(page, "its title", f"{match.group('title')} {match.group('mark')}")
    return None


def notebook_prose_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """Every block of a notebook's Markdown cells but the title, the *Lo que esto enseña*
    bullets (`notebook_claim_blocks`) and the *Lo que imprime* cell, named by cell id."""
    notebook = notebook or read_notebook(path)
    page = f"{relative(path)} (page «{title_of(notebook)}»)"
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        text = source_of(cell)
        if re.search(rf"^##\s+{BLOCK_HEADING}\s*$", text, re.M):
            continue
        text = _TITLE.sub("", text)  # the title and its id: `notebook_title_block`
        is_claims = bool(re.search(rf"^##\s+{CLAIMS_HEADING}\s*$", text, re.M))
        n = 0
        for kind, body in blocks(text):
            if is_claims and kind == "item":
                continue
            n += 1
            name = f'cell {index} (id "{cell.get("id", "")}"), block {n}'
            found.append(Block(page, name, body))
    return found


def notebook_marked_blocks(path: Path, notebook: dict[str, Any] | None = None) -> list[Block]:
    """A notebook's title, bullets and prose blocks that carry an id or a `no-afirma`."""
    notebook = notebook or read_notebook(path)
    title = notebook_title_block(path, notebook)
    found = ([title] if title else []) + notebook_claim_blocks(path, notebook)
    found += notebook_prose_blocks(path, notebook)
    return [block for block in found if block.ids or block.excused]


def marked_blocks() -> list[Block]:
    """Every block the lock records: each notebook's title, bullets and prose, and every
    block of the claim pages; only those that carry an id or a `no-afirma`."""
    found: list[Block] = []
    for path in property_notebooks():
        found += notebook_marked_blocks(path)
    for path in claim_pages():
        found += page_claim_blocks(path)
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
    problems = []
    for block, key in changed:
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
        print(f"{relative(LOCK)}: {count} blocks, {len(after - before)} newly recorded")
        return 0
    problems = unreviewed(marked_blocks())
    print("\n".join(problems) or "every claim's words are the words last reviewed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
