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


#: How a notebook kills a real process: `comun.mata`, `os.kill`, or a child's `.kill()`.
_KILLS = re.compile(r"\bmata\(|\bos\.kill\(|\.send_signal\(|\.kill\(\)")


def notebooks_that_kill() -> list[str]:
    """The numbers of the property notebooks that kill a real process: in their code, or in
    a helper process of theirs (`_hijo_NN.py`, `_servidor_NN.py`, `_trabajador_NN.py`)."""
    found = []
    for path in property_notebooks():
        number = path.name[:2]
        cells = read_notebook(path)["cells"]
        texts = [source_of(cell) for cell in cells if cell["cell_type"] == "code"]
        texts += [h.read_text(encoding="utf-8") for h in PROPERTY_NOTEBOOKS.glob(f"_*_{number}.py")]
        if any(_KILLS.search(text) for text in texts):
            found.append(number)
    return found


def notebooks_named(pattern: str, text: str) -> list[str] | None:
    """The notebook numbers (`02`) that the words `pattern`'s first group matches in `text`
    name, in order; None when nothing matches (the sentence was reworded). Line breaks in
    `text` count as spaces."""
    said = re.search(pattern, " ".join(text.split()))
    return None if said is None else re.findall(r"\b(\d\d)\b", said.group(1))


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
#: `jupyter` folds the verification cells in JupyterLab; `synaptum` holds a Markdown cell's map
#: from its blocks to their claim ids (scripts/claims.py).
KEPT_CELL_METADATA = ("jupyter", "synaptum", "tags")
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
    """The notebook's text on disk, as JupyterLab writes it: nbformat's JSON and a newline."""
    import nbformat

    return nbformat.v4.writes(nbformat.from_dict(notebook)) + "\n"


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
    """The attribute names a class of the package assigns on `self` in its source:
    `self.<name> = …`, and each name of `self.<a>, self.<b> = …`."""
    import ast
    import inspect
    import textwrap

    if not klass.__module__.startswith("synaptum_lite"):
        return set()
    try:
        source = inspect.getsource(klass)
    except (OSError, TypeError):
        return set()
    names = set(_SELF_ASSIGNMENT.findall(source))
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for item in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(item, ast.Attribute) and getattr(item.value, "id", "") == "self":
                        names.add(item.attr)
    return names


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


# ── Exactly one block: nothing else on a page looks like output ──────────────
#
# A property page shows output in one place only: the ```text block of its *Lo que imprime*
# cell, which holds nothing else (the heading and the block). Anything else that could pass
# for output is refused: a second block or section, a raw cell (its HTML is rendered as is),
# an attachment (a picture can show any text), raw HTML in Markdown (`<div hidden>` around a
# block, a `<pre>` imitating an output area), and cell tags other than `parameters` and
# `verificacion` (a tag can make the renderer hide a cell).
#
# `verificacion` does hide a cell: mkdocs-jupyter leaves it off the page (mkdocs.yml,
# remove_cell_tags), and JupyterLab folds it (`metadata.jupyter.source_hidden`). It marks the
# cells that check claims, and only them (`verification_problems`): a code cell that calls
# `afirma` and prints nothing, or the Markdown note *Lo que se afirma, comprobado*; no code
# cell without the tag comes after the first code cell with it, so what the page leaves out
# cannot change what the page shows.

#: The cell tags a property notebook uses.
ALLOWED_TAGS = ("parameters", "verificacion")

#: The tag of the cells that check claims (scripts/claims.py), hidden from the page.
VERIFICATION_TAG = "verificacion"

#: The heading of the Markdown note above the verification cells.
VERIFICATION_HEADING = "Lo que se afirma, comprobado"

_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_ANY_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^\s`]*)")


def page_problems(path: Path, notebook: dict[str, Any]) -> list[str]:
    """What, besides its one block, shows output on a property page, or breaks its form.

    Each problem is one message whose first line says what and where.
    """
    where = relative(path)
    found = []
    sections, blocks = [], []
    for index, cell in enumerate(notebook["cells"]):
        name = cell_name(notebook, index)
        if cell["cell_type"] == "raw":
            found.append(
                f"{where}: {name} is a raw cell; property notebooks have none (the site renders "
                "its HTML as is, so it can show output the notebook never printed)"
            )
        if cell.get("attachments"):
            files = ", ".join(sorted(cell["attachments"]))
            found.append(
                f"{where}: {name} has attachments ({files}); property notebooks have none "
                "(a picture can show any output)"
            )
        tags = [t for t in cell.get("metadata", {}).get("tags", []) if t not in ALLOWED_TAGS]
        if tags:
            found.append(
                f"{where}: {name} has the tag(s) {tags}; the only tags a property notebook uses "
                f"are {ALLOWED_TAGS[0]!r} and {ALLOWED_TAGS[1]!r} (a tag can make the renderer "
                "hide a cell)"
            )
        if cell["cell_type"] != "markdown":
            continue
        source = source_of(cell)
        for line in _outside_fences(source):
            heading = _HEADING.match(line)
            if heading and heading.group(2) == EXPECTED_HEADING:
                sections.append(index)
            for tag in _HTML_TAG.findall(_without_code_spans(line)):
                found.append(
                    f"{where}: {name} has raw HTML {tag}; property notebooks write Markdown only "
                    "(HTML can hide the block or imitate an output area)"
                )
        for number, line in enumerate(source.split("\n")):
            fence = _FENCE_OPEN.match(line)
            if fence:
                blocks.append((index, number + 1))
    if len(sections) != 1:
        cells = ", ".join(cell_name(notebook, i) for i in sections) or "none"
        found.append(
            f"{where}: {len(sections)} '## {EXPECTED_HEADING}' sections ({cells}); a page has "
            "exactly one"
        )
    if len(blocks) != 1:
        places = ", ".join(f"{cell_name(notebook, i)} line {n}" for i, n in blocks) or "none"
        found.append(
            f"{where}: {len(blocks)} ```text blocks ({places}); a page has exactly one, under "
            f"'## {EXPECTED_HEADING}'"
        )
    if len(sections) == 1 and len(blocks) == 1:
        found.extend(_block_cell_problems(path, notebook))
    found.extend(verification_problems(path, notebook))
    found.extend(command_problems(path, notebook))
    return found


_PRINTS = re.compile(r"\b(?:print|display|clear_output)\(|\bsys\.std(?:out|err)\b")


def verification_problems(path: Path, notebook: dict[str, Any]) -> list[str]:
    """The `verificacion` tag on exactly the cells that check claims, each folded; nothing
    hidden prints or runs before a cell the page shows (see above)."""
    where = relative(path)
    found = []
    first_hidden = None
    for index, cell in enumerate(notebook["cells"]):
        name = cell_name(notebook, index)
        source = source_of(cell)
        tagged = VERIFICATION_TAG in cell.get("metadata", {}).get("tags", [])
        folded = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is True
        if cell["cell_type"] == "code":
            checks = "afirma(" in source
            if checks and not tagged:
                found.append(
                    f"{where}: {name} calls afirma but has no tag {VERIFICATION_TAG!r}; the cells "
                    "that check claims are off the page and folded in JupyterLab"
                )
            if tagged and not checks:
                found.append(
                    f"{where}: {name} has the tag {VERIFICATION_TAG!r} and checks no claim (no "
                    "afirma call); the tag hides a cell from the page, and only for that"
                )
            if tagged and _PRINTS.search(source):
                found.append(
                    f"{where}: {name} has the tag {VERIFICATION_TAG!r} and prints; what a page "
                    "prints comes from cells the page shows"
                )
            if tagged and first_hidden is None:
                first_hidden = index
            if not tagged and first_hidden is not None:
                found.append(
                    f"{where}: {name} comes after {cell_name(notebook, first_hidden)}, which has "
                    f"the tag {VERIFICATION_TAG!r}; a cell the page leaves out runs after every "
                    "cell it shows, so it cannot change what they print"
                )
        elif tagged and not re.match(rf"^#+\s+{re.escape(VERIFICATION_HEADING)}\s*$", source, re.M):
            found.append(
                f"{where}: {name} has the tag {VERIFICATION_TAG!r} and is not the note "
                f"'{VERIFICATION_HEADING}'; the tag hides only the cells that check claims"
            )
        if (
            cell["cell_type"] == "markdown"
            and not tagged
            and re.search(rf"^#+\s+{re.escape(VERIFICATION_HEADING)}\s*$", source, re.M)
        ):
            found.append(
                f"{where}: {name}, the note '{VERIFICATION_HEADING}', has no tag "
                f"{VERIFICATION_TAG!r}"
            )
        if tagged and not folded:
            found.append(
                f"{where}: {name} has the tag {VERIFICATION_TAG!r} but is not folded in "
                "JupyterLab: give it metadata jupyter.source_hidden = true"
            )
    return found


def _block_cell_problems(path: Path, notebook: dict[str, Any]) -> list[str]:
    """The *Lo que imprime* cell holds its heading and its block, and nothing else."""
    try:
        block = expected_block(notebook)
    except PageFormatError as error:
        return [f"{relative(path)}: {error}"]
    lines = source_of(notebook["cells"][block.cell_index]).split("\n")
    rest = lines[: block.start - 1] + lines[block.end + 1 :]
    extra = [line for line in rest if line.strip() and not _HEADING.match(line)]
    if not extra:
        return []
    return [
        f"{relative(path)}: {cell_name(notebook, block.cell_index)} holds more than its heading "
        f"and its ```text block: {extra[0].strip()!r}; the block stands alone in its cell"
    ]


def _without_code_spans(line: str) -> str:
    return _CODE_SPAN.sub("", line)


# ── Every command a page shows runs ──────────────────────────────────────────
#
# *Cómo correrlo* shows two commands, both generated here, one source for every page and for
# the tests that run them: JupyterLab opening the notebook (the check parses it and finds the
# file; opening a browser is not something a test does), and papermill running the notebook
# (tests/docs/test_parametros.py runs every notebook through papermill with that `--cwd`, and
# the line itself, in a shell, with a parameter added).

HOW_TO_RUN_HEADING = "Cómo correrlo"


def how_to_run(path: Path) -> list[str]:
    """The commands of a notebook's *Cómo correrlo*, as its ```bash blocks show them."""
    notebook = relative(path)
    return [
        f"uv run --group lab jupyter lab {notebook}\n",
        "uv run --group lab papermill --cwd notebooks/propiedades --log-output \\\n"
        f"    {notebook} salida.ipynb\n",
    ]


def shown_commands(notebook: dict[str, Any], heading: str = HOW_TO_RUN_HEADING) -> list[str]:
    """The bodies of the fenced blocks of the section `heading` (any language)."""
    commands = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines, under, body, fence = source_of(cell).split("\n"), False, None, ""
        for line in lines:
            if body is not None:
                if (
                    line.strip()
                    and set(line.strip()) == {fence[0]}
                    and len(line.strip()) >= len(fence)
                ):
                    commands.append("".join(body))
                    body = None
                else:
                    body.append(line + "\n")
                continue
            heading_match = _HEADING.match(line)
            if heading_match:
                under = heading_match.group(2) == heading
                continue
            opening = _ANY_FENCE.match(line)
            if under and opening:
                fence, body = opening.group(1), []
    return commands


def command_problems(path: Path, notebook: dict[str, Any]) -> list[str]:
    """The *Cómo correrlo* commands are the generated ones, parse, and name existing files."""
    import shlex

    shown, wanted = shown_commands(notebook), how_to_run(path)
    where = relative(path)
    if shown != wanted:
        first = next(
            (s for s, w in zip(shown, wanted, strict=False) if s != w),
            (shown or wanted)[min(len(shown), len(wanted)) - 1] if shown or wanted else "",
        )
        return [
            f"{where}: '## {HOW_TO_RUN_HEADING}' shows commands that nothing runs: "
            f"{' '.join(first.replace(chr(92) + chr(10), ' ').split())!r}; it shows exactly "
            f"{len(wanted)}, generated by "
            "scripts.pages.how_to_run (tests/docs/test_parametros.py runs the papermill one)"
        ]
    problems = []
    for command in shown:
        try:
            words = shlex.split(command.replace("\\\n", " "))
        except ValueError as error:
            problems.append(f"{where}: the command {command.strip()!r} does not parse: {error}")
            continue
        for word in words:
            if word.endswith(".ipynb") and word != "salida.ipynb" and not (REPO / word).exists():
                problems.append(f"{where}: the command {command.strip()!r} names {word}: missing")
    return problems


# ── Names in fenced code and environment variables ───────────────────────────
#
# Besides backticked names: in a page's fenced ```python blocks, a CamelCase name and a dotted
# name that starts with one of the examples' own names for the package's objects (`agente`,
# an `Agent`; `sesion`, a `Session`) must resolve as above. In any text of a page (prose,
# backticks, fences), a `SYNAPTUM_…` or `AXONIUM_…` variable must be one the repository's code
# reads (a string literal in synaptum_lite/, notebooks/, scripts/, benchmarks/ or tests/) or
# one of `READ_BY_OTHERS`.

#: The examples' names for the package's objects, checked as the class they stand for.
EXAMPLE_NAMES = {"agente": "Agent", "sesion": "Session"}

#: Variables a page may name that another program reads, not this repository's code.
READ_BY_OTHERS = {"AXONIUM_GATEWAY_BASE_URL": "read by the Axonium SDK itself (see Modelos)"}

_VARIABLE = re.compile(r"\b(?:SYNAPTUM|AXONIUM)_[A-Z0-9_]*[A-Z0-9]\b")
_FENCED = re.compile(r"^(`{3,}|~{3,})\s*([A-Za-z]*)[^\n]*\n(.*?)^\1\s*$", re.S | re.M)
_CODE_NAME = re.compile(
    r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\b[A-Z][a-z]\w*"
)
_IMPORTED = re.compile(r"^\s*(?:from\s+\S+\s+)?import\s+(.+)$", re.M)


def fenced_blocks(markdown: str) -> list[tuple[str, str, int]]:
    """Each fenced block of a Markdown text: (language, body, line number of the fence)."""
    return [
        (m.group(2).lower(), m.group(3), markdown.count("\n", 0, m.start()) + 1)
        for m in _FENCED.finditer(markdown)
    ]


def unknown_names_in_fences(markdown: str, own_code: str = "") -> list[str]:
    """Names of the package in fenced ```python blocks that the package does not have."""
    own_classes = set(_CLASS_DEF.findall(own_code))
    missing = []
    for language, body, _ in fenced_blocks(markdown):
        if language not in ("python", "py", "pycon") or "--8<--" in body:
            continue
        imported = {
            word.split(" as ")[-1].strip(" ()")
            for names in _IMPORTED.findall(body)
            for word in names.split(",")
        }
        local = own_classes | set(_CLASS_DEF.findall(body))
        for match in _CODE_NAME.finditer(_strings_dropped(body)):
            name = match.group()
            first, _, rest = name.partition(".")
            if first in EXAMPLE_NAMES and rest:
                name = f"{EXAMPLE_NAMES[first]}.{rest.split('.')[0]}"
                label = f"{match.group()} ({name})"
            elif first in imported and not first[0].isupper():
                continue
            else:
                label = name
                name = checked_name(name, local | (imported - set(_public_names())))
                if name is None:
                    continue
            if not _resolves(name) and label not in missing:
                missing.append(label)
    return missing


def _strings_dropped(code: str) -> str:
    code = re.sub(r"#.*", "", code)
    return re.sub(r"(\"\"\"|''')(.*?)\1|\"[^\"\n]*\"|'[^'\n]*'", '""', code, flags=re.S)


def example_names_in_spans(markdown: str) -> list[str]:
    """Backticked `agente.x` / `sesion.x` names whose class lacks `x`."""
    missing = []
    for span in code_spans(markdown):
        name = re.sub(r"\(.*\)$", "", span)
        first, _, rest = name.partition(".")
        if first in EXAMPLE_NAMES and rest and _DOTTED.match(name):
            resolved = f"{EXAMPLE_NAMES[first]}.{rest.split('.')[0]}"
            if not _resolves(resolved) and span not in missing:
                missing.append(f"{name} ({resolved})")
    return missing


def known_variables() -> set[str]:
    """Every SYNAPTUM_/AXONIUM_ variable the repository's code reads, and `READ_BY_OTHERS`."""
    found = set(READ_BY_OTHERS)
    literal = re.compile(r"[\"']((?:SYNAPTUM|AXONIUM)_[A-Z0-9_]*[A-Z0-9])[\"']")
    for folder in ("synaptum_lite", "notebooks", "scripts", "benchmarks", "tests"):
        for source in (REPO / folder).rglob("*.py"):
            if source.name == "test_mentiras.py":  # it spells wrong names on purpose
                continue
            found.update(literal.findall(source.read_text(encoding="utf-8", errors="replace")))
    return found


def unknown_variables(text: str, known: set[str] | None = None) -> list[str]:
    """The SYNAPTUM_/AXONIUM_ variables a text names that nothing reads."""
    known = known_variables() if known is None else known
    missing = []
    for name in _VARIABLE.findall(text):
        if name not in known and name not in missing:
            missing.append(name)
    return missing


# ── Python in Markdown is the code that runs ─────────────────────────────────


def unrun_python_fences(markdown: str) -> list[int]:
    """Line numbers of ```python blocks that are typed in the page rather than included.

    A Markdown page shows Python only by including a file the tests run, with
    pymdownx.snippets (`--8<-- "tests/ejemplos/…py"`, optionally `:section`).
    """
    lines = []
    for language, body, line in fenced_blocks(markdown):
        if language in ("python", "py", "pycon"):
            includes = re.findall(r'^--8<--\s+"([^"]+)"\s*$', body.strip(), re.M)
            if not includes or len(body.strip().splitlines()) != len(includes):
                lines.append(line)
            elif not all(_runs(include.split(":")[0]) for include in includes):
                lines.append(line)
    return lines


def _runs(path: str) -> bool:
    """A file the test suite runs: a test module, or a module of the package."""
    name = Path(path)
    return (REPO / name).exists() and (
        (name.parts[0] == "tests" and name.name.startswith("test_"))
        or name.parts[0] == "synaptum_lite"
    )


# ── Quoted output has one home ───────────────────────────────────────────────
#
# A Markdown page that cites what a notebook prints registers each citation in
# `QUOTED_OUTPUTS`: a pattern on the page whose group is the quoted value, and a pattern on the
# notebook's block whose group is the value it must equal. Any text on a Markdown page that
# looks like notebook output (`modelo ×1`, `herram. ×0`, `4 eventos`) and is neither a
# registered citation nor in `NOT_QUOTES` fails: it was typed by hand.


@dataclass(frozen=True)
class Quote:
    page: str  # docs/…md
    on_page: str  # regex, one group: the value as the page writes it
    notebook: str  # notebooks/propiedades/NN_nombre.ipynb
    in_block: str  # regex, one group: the value in the notebook's *Lo que imprime* block


_N02 = "notebooks/propiedades/02_durabilidad.ipynb"
QUOTED_OUTPUTS: tuple[Quote, ...] = (
    Quote("docs/conceptos.md", r"hay (\d+) eventos en disco", _N02, r"journal: (\d+) eventos"),
    Quote(
        "docs/conceptos.md", r"encuentra (\d+) eventos en disco", _N02, r"journal: (\d+) eventos"
    ),
    Quote(
        "docs/conceptos.md",
        r'x="268" y="296" text-anchor="middle">modelo ×(\d+)<',
        _N02,
        r"^\s+modelo ×(\d+) · herramienta ×\d+$",
    ),
    Quote(
        "docs/conceptos.md",
        r'x="268" y="312" text-anchor="middle">herram\. ×(\d+)<',
        _N02,
        r"^\s+modelo ×\d+ · herramienta ×(\d+)$",
    ),
    Quote(
        "docs/conceptos.md",
        r'x="354" y="296" text-anchor="middle">modelo ×(\d+)<',
        _N02,
        r"2ª vuelta\s+modelo ×(\d+)",
    ),
    Quote(
        "docs/conceptos.md",
        r'x="354" y="312" text-anchor="middle">herram\. ×(\d+)<',
        _N02,
        r"2ª vuelta\s+modelo ×\d+ · herramienta ×(\d+)",
    ),
    Quote(
        "docs/conceptos.md",
        r'x="440" y="296" text-anchor="middle">modelo ×(\d+)<',
        _N02,
        r"3ª vuelta\s+modelo ×(\d+)",
    ),
)

#: Text that looks like output but is not a citation of a block, and why.
NOT_QUOTES: tuple[tuple[str, str, str], ...] = (
    (
        "docs/conceptos.md",
        r'x="440" y="312" text-anchor="middle">herram\. ×0<',
        "02 prints no tool count for its third run: a claim of the figure, not a quote",
    ),
    (
        "docs/modelos.md",
        r"<!-- captura-modelo-real: inicio[\s\S]*?<!-- captura-modelo-real: fin -->",
        "what a real model printed, not the double's block: python -m scripts.captura_modelo "
        "writes it from a real run, and tests/real/test_captura.py checks its form",
    ),
)

_LOOKS_LIKE_OUTPUT = re.compile(r"(?:modelo|herramienta|herram\.)\s+×\d+|\b\d+\s+eventos\b")


def quote_problems(name: str, text: str) -> list[str]:
    """Citations of notebook output on the Markdown page `name` (`docs/conceptos.md`) that
    disagree with, or do not come from, the notebook's block."""
    problems, covered = [], []
    for quote in (q for q in QUOTED_OUTPUTS if q.page == name):
        block = expected_block(read_notebook(REPO / quote.notebook)).text
        source = re.search(quote.in_block, block, re.M)
        found = list(re.finditer(quote.on_page.replace(" ", r"\s+"), text))  # across lines
        if source is None:
            problems.append(
                f"{name} cites {quote.notebook} with {quote.in_block!r}, which its block no "
                "longer prints: change the citation in scripts/pages.py QUOTED_OUTPUTS"
            )
            continue
        if not found:
            problems.append(
                f"{name} no longer has the citation {quote.on_page!r} of {quote.notebook}: "
                "remove it from scripts/pages.py QUOTED_OUTPUTS, or restore it"
            )
        for match in found:
            covered.append(match.span())
            if match.group(1) != source.group(1):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(
                    f"{name} line {line} quotes {quote.notebook} as «{match.group(1)}», but its "
                    f"block prints «{source.group(1)}» ({source.group(0).strip()!r})"
                )
    for page_name, pattern, _why in NOT_QUOTES:
        if page_name == name:
            covered.extend(m.span() for m in re.finditer(pattern.replace(" ", r"\s+"), text))
    for match in _LOOKS_LIKE_OUTPUT.finditer(text):
        if not any(start <= match.start() < end for start, end in covered):
            line = text.count("\n", 0, match.start()) + 1
            problems.append(
                f"{name} line {line} shows «{match.group()}», which looks like notebook output "
                "typed by hand: register it in scripts/pages.py QUOTED_OUTPUTS against its block"
            )
    return problems


# ── The text of a page, every check of its words at once ─────────────────────


def text_problems(name: str, markdown: str, code: str = "", *, markdown_page: bool) -> list[str]:
    """What the Markdown of a page (`name`, as the repository names it) gets wrong about the
    package, the environment, and the code and output it shows; one message per problem.

    `code` is the page's own code (a notebook's code cells); `markdown_page` adds the checks of
    `docs/*.md` pages: Python included from files that run, and quoted output.
    """
    problems = []
    missing = unknown_names(markdown, code)
    missing += unknown_names_in_fences(markdown, code) + example_names_in_spans(markdown)
    if missing:
        problems.append(f"{name} names what synaptum_lite does not have: {missing}")
    variables = unknown_variables(markdown + "\n" + code)
    if variables:
        problems.append(
            f"{name} names environment variables that nothing reads: {variables} "
            "(the rule is in scripts/pages.py, known_variables)"
        )
    if markdown_page:
        for line in unrun_python_fences(markdown):
            problems.append(
                f"{name} line {line} shows ```python typed on the page, not code that runs: "
                'include it from a test with --8<-- "tests/…/test_….py:section"'
            )
        problems.extend(quote_problems(name, markdown))
    return problems
