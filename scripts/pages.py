"""A property notebook read as the page it is: title, the *Lo que imprime* block, the names
it mentions, and how it is stored.

Each property page of the site *is* its notebook, rendered by mkdocs-jupyter without
executing it. The notebook's first Markdown cells hold the page: the title, what the notebook
is, how to run it, and *Lo que imprime*, a ```` ```text ```` block that is the single home of
the notebook's expected output. The code shown on the page is the code that runs.
"""

from __future__ import annotations

import builtins
import difflib
import enum
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.kernel import NotebookRun
from scripts.normalization import normalize

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
PROPERTY_NOTEBOOKS = NOTEBOOKS / "propiedades"
DOCS = REPO / "docs"

#: The heading of the section that holds the expected output.
EXPECTED_HEADING = "Lo que imprime"

UPDATE_COMMAND = "uv run python -m scripts.update_pages"

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*text\s*$")


class PageFormatError(Exception):
    """A notebook does not have the shape of a page (no title, no *Lo que imprime* block)."""


def property_notebooks() -> list[Path]:
    """Every property notebook, in order (`01_…`, `02_…`)."""
    return sorted(PROPERTY_NOTEBOOKS.glob("*.ipynb"))


def relative(path: Path) -> str:
    """`path` as the repository names it (`notebooks/propiedades/02_durabilidad.ipynb`)."""
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def page_url(notebook: Path) -> str:
    """The site address of a notebook's page, relative to the site root.

    Mirrors `docs/_hooks/notebooks.py`: `notebooks/propiedades/02_x.ipynb` becomes the
    page `propiedades/02_x/`.
    """
    return f"{notebook.parent.name}/{notebook.stem}/"


def read_notebook(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def source_of(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def cell_name(notebook: dict[str, Any], index: int) -> str:
    cell_id = notebook["cells"][index].get("id")
    return f'cell {index} (id "{cell_id}")' if cell_id else f"cell {index}"


def title_of(notebook: dict[str, Any]) -> str | None:
    """The first level-1 heading of the notebook's Markdown: the page title."""
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in _outside_fences(source_of(cell)):
            match = _HEADING.match(line)
            if match and len(match.group(1)) == 1:
                return match.group(2)
    return None


@dataclass
class ExpectedBlock:
    """Where the expected output lives: a Markdown cell, and the lines of its block."""

    cell_index: int
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence line
    text: str


def expected_block(notebook: dict[str, Any]) -> ExpectedBlock:
    """The ```` ```text ```` block under the *Lo que imprime* heading.

    The block's text is its lines, each ended by a newline; an empty block is "".
    Raises `PageFormatError` when the heading or its block is missing.
    """
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        lines = source_of(cell).split("\n")
        under_heading = False
        for number, line in enumerate(lines):
            heading = _HEADING.match(line)
            if heading:
                under_heading = heading.group(2) == EXPECTED_HEADING
                continue
            opening = _FENCE_OPEN.match(line)
            if under_heading and opening:
                fence = opening.group("fence")
                for end in range(number + 1, len(lines)):
                    closing = lines[end].strip()
                    if closing.startswith(fence[0] * len(fence)) and set(closing) == {fence[0]}:
                        body = lines[number + 1 : end]
                        text = "".join(f"{line}\n" for line in body)
                        return ExpectedBlock(index, number + 1, end, text)
                raise PageFormatError(
                    f"the ```text block of {cell_name(notebook, index)} never closes"
                )
    raise PageFormatError(
        f"no Markdown cell has a '## {EXPECTED_HEADING}' heading followed by a ```text block"
    )


def with_expected(notebook: dict[str, Any], printed: str) -> dict[str, Any]:
    """A copy of `notebook` whose *Lo que imprime* block holds `printed`.

    The fence grows when the output itself contains a fence, so any output fits.
    """
    if printed and not printed.endswith("\n"):
        raise PageFormatError("the output does not end with a newline; a text block cannot hold it")
    block = expected_block(notebook)
    cell = notebook["cells"][block.cell_index]
    lines = source_of(cell).split("\n")
    longest = max((len(m.group()) for m in re.finditer(r"^`{3,}", printed, re.M)), default=0)
    fence = "`" * max(3, longest + 1)
    body = printed[:-1].split("\n") if printed else []
    new_lines = (
        lines[: block.start - 1] + [f"{fence}text"] + body + [fence] + lines[block.end + 1 :]
    )
    copy = json.loads(json.dumps(notebook))
    copy["cells"][block.cell_index]["source"] = "\n".join(new_lines)
    return copy


# ── Comparing a run with its page ────────────────────────────────────────────


def expected_output_of(run: NotebookRun) -> str:
    """What the page must show for this run: what it printed, after the normalisation rules."""
    return normalize(run.printed)


def mismatch(path: Path, notebook: dict[str, Any], run: NotebookRun) -> str | None:
    """`None` when the page's block is exactly what the notebook printed; else the report.

    The report names the page, the notebook and the cells, and carries a unified diff.
    """
    if run.problems():
        return (
            f"{relative(path)} (page {page_url(path)}) cannot be checked: its run failed.\n\n"
            + "\n\n".join(run.problems())
        )
    try:
        block = expected_block(notebook)
    except PageFormatError as error:
        return f"{relative(path)} (page {page_url(path)}): {error}"
    printed = expected_output_of(run)
    if printed == block.text:
        return None
    block_cell = cell_name(notebook, block.cell_index)
    expected_lines = block.text.splitlines(keepends=True)
    printed_lines = printed.splitlines(keepends=True)
    diff = list(
        difflib.unified_diff(
            expected_lines,
            printed_lines,
            fromfile=f"page {page_url(path)} · {EXPECTED_HEADING}, {block_cell}",
            tofile=f"{relative(path)} · printed when run",
        )
    )
    diff = _name_hunks(diff, run)
    first = _first_difference(expected_lines, printed_lines)
    culprit = run.cell_of_line(first) if first is not None else None
    where = f", printed by {culprit.describe()}" if culprit else ""
    return (
        f"Page «{title_of(notebook)}» ({page_url(path)}) does not show what its notebook "
        f"{relative(path)} prints.\n"
        f"First difference at output line {first + 1 if first is not None else '?'}{where}.\n\n"
        + "".join(line if line.endswith("\n") else line + "\n" for line in diff)
        + f"\nIf the new output is intended, rewrite the page block with: {UPDATE_COMMAND}"
    )


def _first_difference(expected: list[str], printed: list[str]) -> int | None:
    for number, (a, b) in enumerate(zip(expected, printed, strict=False)):
        if a != b:
            return number
    if len(expected) != len(printed):
        return min(len(expected), len(printed))
    return None


def _name_hunks(diff: list[str], run: NotebookRun) -> list[str]:
    """Append to each hunk header the cell that printed the hunk's first changed line."""
    named = list(diff)
    header, printed_line = None, 0
    for position, line in enumerate(diff):
        match = re.match(r"^@@ -\S+ \+(\d+)(?:,\d+)? @@", line)
        if match:
            header, printed_line = position, max(int(match.group(1)) - 1, 0)
        elif header is not None and line.startswith(("+", "-")) and not line.startswith("+++"):
            cell = run.cell_of_line(printed_line)
            if cell:
                named[header] = f"{diff[header].rstrip()} {cell.describe()}\n"
            header = None
        elif header is not None and line.startswith(" "):
            printed_line += 1
    return named


# ── Storage: notebooks are kept without outputs or volatile metadata ─────────

#: Cell metadata kept on disk; everything else (execution timing, collapsed…) is dropped.
KEPT_CELL_METADATA = ("tags",)
#: Notebook metadata kept on disk; `language_info` changes with the Python that last ran it.
KEPT_NOTEBOOK_METADATA = ("kernelspec",)


def stored_form(notebook: dict[str, Any]) -> dict[str, Any]:
    """The notebook as it is committed: no outputs, no execution counts, no volatile metadata."""
    copy = json.loads(json.dumps(notebook))
    copy["metadata"] = {k: v for k, v in copy["metadata"].items() if k in KEPT_NOTEBOOK_METADATA}
    for cell in copy["cells"]:
        cell["metadata"] = {k: v for k, v in cell["metadata"].items() if k in KEPT_CELL_METADATA}
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return copy


def dumps(notebook: dict[str, Any]) -> str:
    """The notebook's text on disk, byte for byte as JupyterLab (nbformat) writes it.

    Written here rather than with nbformat because importing nbformat costs a tenth of a
    second on every check; tests/docs keeps the two identical.
    """
    copy = json.loads(json.dumps(notebook))
    for cell in copy["cells"]:
        if isinstance(cell["source"], str):
            cell["source"] = cell["source"].splitlines(keepends=True)
    text = json.dumps(copy, indent=1, sort_keys=True, ensure_ascii=False, separators=(",", ": "))
    return text + "\n"


# ── Backticked names ─────────────────────────────────────────────────────────
#
# Which `code spans` on a page are checked against the package, and how:
#
#   A span counts when, after dropping a trailing call "(...)", it is a dotted name whose
#   first part is `synaptum_lite`, or is CamelCase: an uppercase letter followed by a
#   lowercase one (`Session`, `FinalStep.output`, `Role.TOOL`, `SqliteCheckpointer(almacen)`).
#   Not counted: ALL_CAPS names (environment variables such as `SYNAPTUM_BASE_URL`), names
#   starting with `_` or a lowercase letter (the examples' own Spanish names, `paso.kind`,
#   `runs.db`), Python builtins (`Exception`), classes the page's own code defines, and any
#   span with spaces or other symbols. A lowercase function of the package is checked when
#   written qualified: `synaptum_lite.testing.says`.
#
#   A counted name must resolve: its first part is in `synaptum_lite.__all__` or
#   `synaptum_lite.testing.__all__` (or is the module path itself), and each further part is
#   an attribute, an enum member, or a dataclass field or annotation of the part before, or an
#   attribute its class assigns as `self.<name> = …` in its source (`ProviderError.retryable`,
#   set in `__init__`).

_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_CAMEL = re.compile(r"^[A-Z][a-z]")
_CLASS_DEF = re.compile(r"^class\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def code_spans(markdown: str) -> list[str]:
    """The inline code spans of a Markdown text, fenced blocks left out."""
    text = "\n".join(_outside_fences(markdown))
    return [match.group(2).strip() for match in _CODE_SPAN.finditer(text)]


def checked_name(span: str, own_classes: set[str]) -> str | None:
    """The dotted name a span stands for, if the rule above counts it; else `None`."""
    name = re.sub(r"\(.*\)$", "", span)
    if not _DOTTED.match(name):
        return None
    first = name.split(".")[0]
    if first == "synaptum_lite":
        return name
    if not _CAMEL.match(first) or first in own_classes or hasattr(builtins, first):
        return None
    return name


def unknown_names(markdown: str, own_code: str = "") -> list[str]:
    """The names a page mentions in backticks that the package does not have."""
    own_classes = set(_CLASS_DEF.findall(own_code))
    missing = []
    for span in code_spans(markdown):
        name = checked_name(span, own_classes)
        if name and not _resolves(name) and name not in missing:
            missing.append(name)
    return missing


def _resolves(name: str) -> bool:
    import importlib

    parts = name.split(".")
    if parts[0] == "synaptum_lite":
        module, rest = "synaptum_lite", parts[1:]
        while rest:  # the longest importable module prefix
            try:
                importlib.import_module(f"{module}.{rest[0]}")
            except ImportError:
                break
            module, rest = f"{module}.{rest[0]}", rest[1:]
        obj: Any = importlib.import_module(module)
        if rest and module == "synaptum_lite":
            public = _public_names()
            if rest[0] not in public:
                return False
            obj, rest = public[rest[0]], rest[1:]
    else:
        public = _public_names()
        if parts[0] not in public:
            return False
        obj, rest = public[parts[0]], parts[1:]
    for part in rest:
        found = _member(obj, part)
        if found is _MISSING:
            return False
        obj = found
    return True


_MISSING = object()


def _member(obj: Any, name: str) -> Any:
    if isinstance(obj, type) and issubclass(obj, enum.Enum) and name in obj.__members__:
        return obj.__members__[name]
    if hasattr(obj, name):
        return getattr(obj, name)
    if isinstance(obj, type):
        fields = getattr(obj, "__dataclass_fields__", {})
        if name in fields:
            return fields[name].type
        for klass in obj.__mro__:
            if name in getattr(klass, "__annotations__", {}):
                return klass.__annotations__[name]
        if any(name in _assigned_on_self(klass) for klass in obj.__mro__):
            return _INSTANCE_ATTRIBUTE
    return _MISSING


_INSTANCE_ATTRIBUTE = object()  # resolves itself; nothing resolves after it
_SELF_ASSIGNMENT = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=\n]+)?=(?!=)")


def _assigned_on_self(klass: type) -> set[str]:
    """The attribute names a class of the package assigns as `self.<name> = …` in its source."""
    import inspect

    if not klass.__module__.startswith("synaptum_lite"):
        return set()
    try:
        source = inspect.getsource(klass)
    except (OSError, TypeError):
        return set()
    return set(_SELF_ASSIGNMENT.findall(source))


def _public_names() -> dict[str, Any]:
    import synaptum_lite
    import synaptum_lite.testing as testing

    names = {name: getattr(synaptum_lite, name) for name in synaptum_lite.__all__}
    for name in getattr(testing, "__all__", ()):
        names.setdefault(name, getattr(testing, name))
    return names


def _outside_fences(markdown: str) -> list[str]:
    """The lines of a Markdown text that are not inside a fenced code block."""
    kept, fence = [], None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence is None:
            opening = re.match(r"^(`{3,}|~{3,})", stripped)
            if opening:
                fence = opening.group(1)
                continue
            kept.append(line)
        elif stripped.startswith(fence) and set(stripped) == {fence[0]}:
            fence = None
    return kept
