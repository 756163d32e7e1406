"""The index's way in: the reading time it gives each notebook is what the notebook's words
take at the rate it says (200 words a minute), give or take two minutes, so a notebook that
grows a section makes the index say so."""

from __future__ import annotations

import math
import re

from scripts.pages import DOCS, property_notebooks, read_notebook, source_of

WORDS_A_MINUTE = 200
INDEX = (DOCS / "index.md").read_text(encoding="utf-8")


def reading_minutes(notebook: dict) -> int:
    words = sum(len(re.findall(r"\w+", source_of(cell))) for cell in notebook["cells"])
    return math.ceil(words / WORDS_A_MINUTE)


def test_the_index_says_the_rate_its_reading_times_use() -> None:
    assert f"a {WORDS_A_MINUTE} palabras por\nminuto" in INDEX


def test_the_index_gives_each_notebook_about_the_minutes_its_words_take() -> None:
    stated = {
        number: int(minutes)
        for number, minutes in re.findall(
            r"^\| (\d\d) \| .* \| (\d+) min \| \d+ s \|$", INDEX, re.M
        )
    }
    wrong = []
    for path in property_notebooks():
        counted = reading_minutes(read_notebook(path))
        says = stated.get(path.stem[:2])
        if says is None or abs(says - counted) > 2:
            wrong.append(f"{path.stem}: the index says {says} min, its words take {counted}")
    assert not wrong, "docs/index.md, table of the properties:\n" + "\n".join(wrong)


def test_the_notebooks_the_index_says_take_longest_do_and_start_processes() -> None:
    """The sentence under the table names the notebooks that take longest to run; they are
    the three slowest of its own *correrlo* column, and each kills a process of its own
    (`scripts.pages.notebooks_that_kill`, read from the notebooks)."""
    from scripts.pages import notebooks_named, notebooks_that_kill

    seconds = {
        number: int(s)
        for number, s in re.findall(r"^\| (\d\d) \| .* \| \d+ min \| (\d+) s \|$", INDEX, re.M)
    }
    slowest = sorted(seconds, key=lambda n: (-seconds[n], n))[:3]
    named = notebooks_named(r"los que más tardan, ([^,]*(?:, [^,]*)*?), arrancan", INDEX)
    assert named is not None, "the index no longer says which notebooks take longest"
    assert sorted(named) == sorted(slowest), (named, slowest)
    assert set(named) <= set(notebooks_that_kill()), (named, notebooks_that_kill())
