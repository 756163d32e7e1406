"""One language per page: a notebook prints the glossary's Spanish word for each phase, through
one helper (`comun.fase_de`), and the words the glossary replaced do not come back.

The journal keeps a phase's value in English (`Phase`), and so does an export, which is data:
a phase in quotes (`"phase":"completed"`) is the file's content, not a printed label.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from scripts.pages import (
    DOCS,
    NOTEBOOKS,
    REPO,
    expected_block,
    property_notebooks,
    read_notebook,
    source_of,
)
from synaptum_lite import Phase

GLOSSARY = DOCS / "glosario.md"

#: A phase's English value as a word of its own, not inside quotes.
ENGLISH_PHASE = re.compile(r'(?<!")\b(?:attempted|completed|resolved)\b(?!")')

#: Words the glossary replaced, and the word it fixed instead.
REPLACED = {
    r"journaliz\w*": "escrito en el journal",
    r"archivos?": "fichero",
    r"workers?": "trabajador",
    r"bloqueos?": "candado (bloquear es impedir)",
}


@pytest.fixture
def comun(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    sys.modules.pop("comun", None)
    return importlib.import_module("comun")


def test_every_phase_has_the_spanish_word_the_glossary_gives_it(comun) -> None:
    assert set(comun.FASES) == {phase.value for phase in Phase}
    glossary = GLOSSARY.read_text(encoding="utf-8")
    (row,) = (line for line in glossary.splitlines() if line.startswith("| fase |"))
    for english, spanish in comun.FASES.items():
        assert f"*{spanish}*" in row, f"the glossary's fase row does not give *{spanish}*"
        assert f"`{english}`" in row, f"the glossary's fase row does not name `{english}`"


@pytest.mark.parametrize("path", property_notebooks(), ids=lambda p: p.stem)
def test_a_page_prints_every_phase_in_spanish(path: Path) -> None:
    block = expected_block(read_notebook(path)).text
    english = [line for line in block.splitlines() if ENGLISH_PHASE.search(line)]
    assert not english, f"{path.name} prints a phase in English:\n" + "\n".join(english)


@pytest.mark.parametrize("path", property_notebooks(), ids=lambda p: p.stem)
def test_a_notebook_translates_phases_only_through_comun(path: Path) -> None:
    code = "\n".join(
        source_of(cell) for cell in read_notebook(path)["cells"] if cell["cell_type"] == "code"
    )
    own_table = re.search(r"""\{\s*["']attempted["']\s*:""", code)
    assert not own_table, f"{path.name} keeps its own table of phases: use comun.fase_de"


def texts_in_spanish() -> list[Path]:
    """Everything a learner reads in Spanish: pages, notebooks, their helpers, the README."""
    paths = [REPO / "README.md", *sorted(DOCS.glob("*.md")), *property_notebooks()]
    paths += sorted(NOTEBOOKS.glob("*.py")) + sorted((NOTEBOOKS / "propiedades").glob("*.py"))
    return [path for path in paths if path != GLOSSARY]


@pytest.mark.parametrize("word", REPLACED, ids=lambda w: w.split("\\")[0])
def test_a_word_the_glossary_replaced_does_not_come_back(word: str) -> None:
    pattern = re.compile(rf"\b{word}\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(REPO)}: {match.group(0)!r}"
        for path in texts_in_spanish()
        for match in pattern.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"the glossary says {REPLACED[word]!r} instead:\n" + "\n".join(found)
