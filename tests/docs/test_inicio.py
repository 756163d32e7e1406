"""The index's way in: its table of the property notebooks is written by `scripts/hechos.py` from
the notebooks themselves (issue 29: facts about the kit are derived, never typed), so a notebook
that grows a section, starts killing a process or is added makes the index say so."""

from __future__ import annotations

import re

from scripts import hechos
from scripts.pages import DOCS, property_notebooks, read_notebook, title_of

INDEX = DOCS / "index.md"


def test_the_index_table_is_what_the_notebooks_say_now() -> None:
    problems = [p for p in hechos.stale() if p.startswith("docs/index.md")]
    assert problems == [], "\n".join(problems)


def test_the_table_has_a_row_per_notebook_with_its_title_link_and_reading_minutes() -> None:
    """Read back from the page, not from the generator: every notebook, in order, its title
    and its page, and the minutes its words take at the rate the page states."""
    text = INDEX.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d\d) \| \[(.*)\]\(propiedades/(.*?)\) \| (\d+) min \|", text, re.M)
    assert [(n, f) for n, _, f, _ in rows] == [(p.name[:2], p.name) for p in property_notebooks()]
    for (_, title, _, minutes), path in zip(rows, property_notebooks(), strict=True):
        notebook = read_notebook(path)
        assert f"{path.name[:2]} · {title}" == title_of(notebook)
        assert int(minutes) == hechos.reading_minutes(notebook)
    assert f"a {hechos.WORDS_A_MINUTE} palabras por minuto" in " ".join(text.split())
