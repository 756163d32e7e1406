"""What the site's search finds: the words of a page, not the machinery around them.

Material's search reads `search/search_index.json`, written by the build: one entry per section
of each page, a title and a text. A notebook page used to put there every code cell twice (the
highlighted source and the hidden copy its copy button copies), the button's hidden "Copied!",
and each heading's "¶" link: a search for `max_steps` showed a screen of source code under the
page's title. The docs hook marks those elements `data-search-exclude`
(docs/_hooks/notebooks.py); these tests read the index the build wrote.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from scripts.pages import NOTEBOOKS, expected_block, read_notebook, source_of

PROPERTY_NOTEBOOKS = sorted((NOTEBOOKS / "propiedades").glob("[0-9][0-9]_*.ipynb"))

#: A line of a code cell this long is the code's, not a name the prose also uses.
CODE_LINE = 20


@pytest.fixture(scope="module")
def entries(built_site: Path) -> list[dict[str, Any]]:
    index = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))
    return index["docs"]


def plain(text: str) -> str:
    """An entry's text as the result shows it: tags out, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def test_no_search_entry_holds_a_copy_button_notice_or_a_pilcrow(
    entries: list[dict[str, Any]],
) -> None:
    noisy = [
        f"{entry['location']}: {word!r} in its {field}"
        for entry in entries
        for field in ("title", "text")
        for word in ("Copied!", "¶")
        if word in entry[field]
    ]
    assert noisy == [], f"{len(noisy)} search entries show noise:\n" + "\n".join(noisy[:10])


def test_a_search_title_holds_no_markup_but_code(entries: list[dict[str, Any]]) -> None:
    """Material shows a title as HTML; `<code>` is a heading's code span and reads as code."""
    tagged = [
        f"{entry['location']}: {entry['title']!r}"
        for entry in entries
        if re.search(r"<(?!/?code>)|&lt;/?code&gt;", entry["title"])
    ]
    assert tagged == [], "search titles with markup:\n" + "\n".join(tagged)


@pytest.mark.parametrize("notebook", PROPERTY_NOTEBOOKS, ids=lambda path: path.stem)
def test_a_notebook_page_is_found_by_its_words_not_by_its_code(
    notebook: Path, entries: list[dict[str, Any]]
) -> None:
    page = f"propiedades/{notebook.stem}/"
    texts = [plain(entry["text"]) for entry in entries if entry["location"].startswith(page)]
    assert texts, f"the search index has no entry for {page}"
    cells = read_notebook(notebook)["cells"]
    prose = "\n".join(source_of(cell) for cell in cells if cell["cell_type"] == "markdown")
    code_lines = {  # a line the prose quotes (`assert VACIADOS == []`) is the prose's too
        line.strip()
        for cell in cells
        if cell["cell_type"] == "code"
        for line in source_of(cell).splitlines()
        if len(line.strip()) >= CODE_LINE and line.strip() not in prose
    }
    found = sorted(line for line in code_lines if any(line in text for text in texts))
    assert found == [], (
        f"{page}: the search index holds {len(found)} of the {len(code_lines)} long lines of "
        f"{notebook.name}'s code cells, e.g. {found[:3]} (a code cell's elements not marked "
        "data-search-exclude? see docs/_hooks/notebooks.py)"
    )
    # what is kept: the page's prose and what the notebook prints
    first_printed = next(
        line for line in expected_block(read_notebook(notebook)).text.splitlines() if line
    )
    assert any(first_printed in text for text in texts), (
        f"{page}: the search index lost its *Lo que imprime* block (no {first_printed!r})"
    )
