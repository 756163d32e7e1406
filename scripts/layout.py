"""The package's layout, written where people read it, never typed.

`python -m scripts.update_pages` writes, and its `--check` compares:

- each folder's size (`wc -l` of its modules) in its `__init__` docstring, as its last line:
  "It holds 1,234 lines (`wc -l` of its modules).";
- the tree of `synaptum_lite/` on *Conceptos* (*Cómo está hecho*), between `INICIO` and `FIN`,
  with the learner's reading path in its order.

`tests/core/test_public_api.py` checks the sizes too, so a change that grows a folder without
running the command fails the quick suite.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "synaptum_lite"
CONCEPTOS = REPO / "docs" / "conceptos.md"
INICIO = (
    "<!-- como-esta-hecho: inicio (python -m scripts.update_pages lo escribe) --> "
    "<!-- no-afirma: sobre esta página — empieza el árbol generado -->"
)
FIN = (
    "<!-- como-esta-hecho: fin --> <!-- no-afirma: sobre esta página — acaba el árbol generado -->"
)

#: The folders around the core, in the order the tree shows them.
FOLDERS = ("stores", "gateways", "integrations", "cli")

#: The learner's path through the core, in reading order (issue 26): the loop, `Agent`, the
#: journal, events and their stored form, the checkpointer protocol, context, the SQLite store.
READING_PATH = (
    "loop.py",
    "agent.py",
    "journal.py",
    "events.py",
    "codec.py",
    "checkpointer.py",
    "context.py",
    "stores/sqlite.py",
)

_SIZE = re.compile(r"It holds ([\d,]+) lines \(`wc -l` of its modules\)\.")


def lines_of(path: Path) -> int:
    """`wc -l`: the newlines in the file."""
    return path.read_bytes().count(b"\n")


def folder_lines(folder: str) -> int:
    return sum(lines_of(p) for p in (PACKAGE / folder).glob("*.py"))


def stated_size(folder: str) -> int | None:
    """The size the folder's `__init__` docstring states, or None when it states none."""
    found = _SIZE.search((PACKAGE / folder / "__init__.py").read_text(encoding="utf-8"))
    return int(found.group(1).replace(",", "")) if found else None


def with_size(folder: str) -> str:
    """The folder's `__init__.py` with its size stated as its docstring's last line."""
    text = (PACKAGE / folder / "__init__.py").read_text(encoding="utf-8")
    size = f"It holds {folder_lines(folder):,} lines (`wc -l` of its modules)."
    if _SIZE.search(text):
        return _SIZE.sub(size, text, count=1)
    docstring_end = text.index('"""', 3)
    return text[:docstring_end].rstrip() + "\n\n" + size + "\n" + text[docstring_end:]


def totals() -> str:
    path = sum(lines_of(PACKAGE / name) for name in READING_PATH)
    core = sum(lines_of(p) for p in PACKAGE.glob("*.py"))
    package = sum(lines_of(p) for p in PACKAGE.rglob("*.py"))
    return (
        f"camino de lectura (1 a {len(READING_PATH)}): {path:,} líneas · núcleo: {core:,} · "
        f"paquete entero: {package:,}"
    ).replace(",", ".")


def tree() -> str:
    """The package as a tree: the core's modules (the reading path numbered, in order), then
    each folder with its modules."""
    core = sorted(p.name for p in PACKAGE.glob("*.py"))
    lines = ["synaptum_lite/"]
    for name in core:
        step = READING_PATH.index(name) + 1 if name in READING_PATH else None
        lines.append(f"├── {name:<20}" + (f" {step}" if step else "").rstrip())
    for n, folder in enumerate(FOLDERS):
        last = n == len(FOLDERS) - 1
        size = f"{folder_lines(folder):,} líneas".replace(",", ".")
        lines.append(f"{'└' if last else '├'}── {folder + '/':<20} {size}")
        modules = sorted(p.name for p in (PACKAGE / folder).glob("*.py"))
        for m, name in enumerate(modules):
            branch = "└" if m == len(modules) - 1 else "├"
            path = f"{folder}/{name}"
            step = READING_PATH.index(path) + 1 if path in READING_PATH else None
            lines.append(
                f"{' ' if last else '│'}   {branch}── {name:<16}" + (f" {step}" if step else "")
            )
    lines += ["", totals()]
    return "\n".join(line.rstrip() for line in lines)


def section() -> str:
    return f"{INICIO}\n\n```text\n{tree()}\n```\n\n{FIN}"


def with_section(page: str) -> str:
    start, end = page.index(INICIO), page.index(FIN) + len(FIN)
    return page[:start] + section() + page[end:]


def write(check: bool) -> list[str]:
    """Write the sizes and the tree; with `check`, write nothing and return what differs."""
    wanted = {PACKAGE / folder / "__init__.py": with_size(folder) for folder in FOLDERS}
    wanted[CONCEPTOS] = with_section(CONCEPTOS.read_text(encoding="utf-8"))
    stale = []
    for path, text in wanted.items():
        if path.read_text(encoding="utf-8") != text:
            stale.append(str(path.relative_to(REPO)))
            if not check:
                path.write_text(text, encoding="utf-8")
    return stale
