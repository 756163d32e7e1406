"""The *Lo que imprime* block as a reader sees it: Chromium opens every property page of the
built site, lets the theme's CSS and JavaScript run, and reads the block's visible text
(`innerText`). It must be fully visible (not hidden, clipped, covered, or changed by CSS) and
equal, character for character, to what the notebook printed in the docs check's kernel (after
the normalisation rules, the same text tests/docs compares with the block). It is read at
1280 px and at 390 px (a phone), and at both every line is seen whole: the block neither scrolls
sideways nor runs beyond the viewport (on a phone it wraps: docs/_theme/assets/stylesheets/
sitio.css), and no copy button lies over its text. A screenshot of each block at each size is
saved in build/screenshots/lo-que-imprime/.

On top of the static check of tests/docs, which reads the block in the HTML file and names
cells; this one sees what scripts and styles do to it.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from scripts.pages import REPO, expected_output_of, page_url, property_notebooks, relative
from tests.site.chromium import Browser, SeenBlock, read_block

NOTEBOOKS = property_notebooks()
#: A screenshot of each page's block at each size: `<notebook>-<size>.png` (gitignored).
SCREENSHOTS = REPO / "build" / "screenshots" / "lo-que-imprime"


def seen_problems(notebook: Path, seen: SeenBlock, printed: str) -> list[str]:
    """Why what a reader sees of the block is not what the notebook printed; [] when it is."""
    where = f"the page {page_url(notebook)} in Chromium"
    problems = [f"{where}: the block is not fully visible: {p}" for p in seen.problems]
    if seen.text is None:
        return problems or [f"{where} has no block under 'Lo que imprime'"]
    if seen.text != printed:
        diff = "".join(
            difflib.unified_diff(
                printed.splitlines(keepends=True),
                seen.text.splitlines(keepends=True),
                fromfile=f"{relative(notebook)} · printed when run",
                tofile=f"{page_url(notebook)} · seen in Chromium",
            )
        )
        problems.append(
            f"{where} shows a block that is not what {relative(notebook)} prints "
            f"(the theme's CSS or JavaScript changed it?):\n{diff}"
        )
    return problems


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_reader_sees_exactly_what_the_notebook_prints(
    notebook: Path, docs_check, base_url: str, browser: Browser
) -> None:
    run = docs_check.runs[notebook]
    if run.problems():
        first = run.problems()[0].splitlines()[0]
        pytest.skip(f"{notebook.name} did not run cleanly (tests/docs reports it): {first}")
    seen = read_block(browser, base_url + page_url(notebook), SCREENSHOTS / notebook.stem)
    problems = seen_problems(notebook, seen, expected_output_of(run))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
