"""The lies of issue 12 that only a browser or a built site shows, kept as regression cases.

One temporary copy of the site's sources (`mkdocs.yml`, `docs/`, `notebooks/`, `scripts/`,
`synaptum_lite/`) gets four lies, each on its own page, and is built with `mkdocs build
--strict` as the real site is; the real tree is never touched:

1. the theme's JavaScript rewrites the block of 02 after load (`×1` → `×0`);
2. the theme's CSS cuts the last lines of 03's block (`max-height: 14lh; overflow: hidden`);
3. 04's *Lo que imprime* cell keeps the true block inside `<div hidden>` and shows a false one;
4. a link in 05's prose points at a page the site does not have;

and two more, beyond the issue's list: a style for phones only hides 06's block, and a layer
that ignores the mouse (`pointer-events: none`) covers 07's.

Chromium reads each block as a reader sees it (`read_block`) and compares it with what the
real notebook printed in the docs check; `broken_links` reads the built copy. Each case
asserts the first line of its failure.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.pages import NOTEBOOKS, REPO, expected_block, expected_output_of, page_url
from scripts.site import broken_links, start_build
from tests.bounds import HANG
from tests.site.chromium import Browser, read_block
from tests.site.conftest import serve
from tests.site.en_el_navegador import copy_of_the_site_sources
from tests.site.test_lo_que_imprime import seen_problems

PROPIEDADES = NOTEBOOKS / "propiedades"
N02, N03, N04, N05, N06, N07 = (
    next(PROPIEDADES.glob(f"{number}_*.ipynb")) for number in ("02", "03", "04", "05", "06", "07")
)

THEME_LIES = """
{% block scripts %}
  {{ super() }}
  {% if page and page.file and page.file.src_uri.startswith("propiedades/02_") %}
  <script>
    for (const code of document.querySelectorAll("pre > code.language-text"))
      code.textContent = code.textContent.replaceAll("×1", "×0");
  </script>
  {% endif %}
{% endblock scripts %}
{% block extrahead %}
  {{ super() }}
  {% if page and page.file and page.file.src_uri.startswith("propiedades/03_") %}
  <style>pre:has(> code.language-text) { max-height: 14lh; overflow: hidden; }</style>
  {% endif %}
  {% if page and page.file and page.file.src_uri.startswith("propiedades/07_") %}
  <style>
    pre:has(> code.language-text) { position: relative; }
    pre:has(> code.language-text)::after {
      content: ""; position: absolute; inset: 0; pointer-events: none;
      background: var(--md-code-bg-color);
    }
  </style>
  {% endif %}
  {% if page and page.file and page.file.src_uri.startswith("propiedades/06_") %}
  <style>@media (max-width: 600px) { code.language-text { visibility: hidden; } }</style>
  {% endif %}
{% endblock extrahead %}
"""


def _edit_notebook(path: Path, change) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    change(notebook)
    path.write_text(json.dumps(notebook, ensure_ascii=False, indent=1), encoding="utf-8")


def _hide_the_true_block(notebook: dict) -> None:
    block = expected_block(notebook)
    false = block.text.replace("1", "0")
    notebook["cells"][block.cell_index]["source"] = (
        f"## Lo que imprime\n\n<div hidden>\n\n```text\n{block.text}```\n\n</div>\n\n"
        f"```text\n{false}```"
    )


def _link_nowhere(notebook: dict) -> None:
    cell = next(c for c in notebook["cells"] if c.get("id") == "titulo")
    cell["source"] = "".join(cell["source"]) + (
        "\n\nLo que no garantiza está en [Límites](../../limites-del-kit/)."
    )


@pytest.fixture(scope="module")
def lied_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("mentiras-sitio")
    copy_of_the_site_sources(root)
    (root / "node_modules").symlink_to(REPO / "node_modules")  # Pyodide, for the run panel
    theme = root / "docs" / "_theme" / "main.html"
    theme.write_text(theme.read_text(encoding="utf-8") + THEME_LIES, encoding="utf-8")
    copies = root / "notebooks" / "propiedades"
    _edit_notebook(copies / N04.name, _hide_the_true_block)
    _edit_notebook(copies / N05.name, _link_nowhere)
    site = root / "site"
    build = start_build(site, root / "mkdocs.yml")
    try:
        log, _ = build.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        build.kill()
        raise
    assert build.returncode == 0, f"the lied copy did not build:\n{log}"
    yield from ((site, url) for url in serve(site))


def first_line(problems: list[str]) -> str:
    assert problems, "the check found nothing: the lie got through"
    line = problems[0].splitlines()[0]
    print(f"first line: {line}")  # `pytest -s` lists each lie with its failure
    return line


def seen(notebook: Path, lied_site, browser: Browser, docs_check) -> list[str]:
    run = docs_check.runs[notebook]
    if run.problems():
        first = run.problems()[0].splitlines()[0]
        pytest.skip(f"{notebook.name} did not run cleanly (tests/docs reports it): {first}")
    _, url = lied_site
    return seen_problems(
        notebook, read_block(browser, url + page_url(notebook)), expected_output_of(run)
    )


def test_mentira_01_the_theme_script_rewrites_the_block_after_load(
    lied_site, browser: Browser, docs_check
) -> None:
    assert first_line(seen(N02, lied_site, browser, docs_check)) == (
        f"the page {page_url(N02)} in Chromium shows a block that is not what "
        f"notebooks/propiedades/{N02.name} prints (the theme's CSS or JavaScript changed it?):"
    )


def test_mentira_02_the_theme_stylesheet_cuts_the_last_lines(
    lied_site, browser: Browser, docs_check
) -> None:
    assert re.fullmatch(
        rf"the page {page_url(N03)} in Chromium: the block is not fully visible: clipped: "
        r"pre\S* shows \d+ px of its \d+ px \(overflow-y: \w+, max-height: [\d.]+px\)",
        first_line(seen(N03, lied_site, browser, docs_check)),
    )


def test_mentira_03_the_true_block_hidden_a_false_one_shown(
    lied_site, browser: Browser, docs_check
) -> None:
    assert first_line(seen(N04, lied_site, browser, docs_check)) == (
        f"the page {page_url(N04)} in Chromium: the block is not fully visible: hidden: div "
        "has the hidden attribute"
    )


def test_mentira_21_a_broken_link_in_a_notebook(lied_site) -> None:
    site, _ = lied_site
    assert first_line(broken_links(site)) == (
        f"{page_url(N05)}index.html links to ../../limites-del-kit/, which the site does not have"
    )


def test_a_style_for_phones_only_hides_the_block(lied_site, browser: Browser, docs_check) -> None:
    assert first_line(seen(N06, lied_site, browser, docs_check)) == (
        f"the page {page_url(N06)} in Chromium: the block is not fully visible: hidden: "
        "code.language-text has visibility: hidden (at 390×844, telefono)"
    )


def test_a_layer_that_ignores_the_mouse_covers_the_block(
    lied_site, browser: Browser, docs_check
) -> None:
    assert first_line(seen(N07, lied_site, browser, docs_check)).startswith(
        f"the page {page_url(N07)} in Chromium: the block is not fully visible: covered: pre"
    )
