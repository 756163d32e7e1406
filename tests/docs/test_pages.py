"""The executable-docs contract, on the real pages.

Every property notebook runs in a fresh kernel with no model variables in its environment;
what it prints must be, character for character, its page's *Lo que imprime* block, and the
built site must show that same text. What is compared is the notebook's stdout after the rules
of `scripts/normalization.py` (none today). The machinery lives in `scripts/` and is shared
with the update command, `uv run python -m scripts.update_pages`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.pages import (
    DOCS,
    NOTEBOOKS,
    REPO,
    UPDATE_COMMAND,
    dumps,
    expected_block,
    mismatch,
    page_problems,
    page_url,
    property_notebooks,
    read_notebook,
    relative,
    source_of,
    stored_form,
    text_problems,
    title_of,
)
from scripts.site import broken_links, nav_pages, nav_titles, page_html, rendered_block

NOTEBOOKS_UNDER_TEST = property_notebooks()
by_name = pytest.mark.parametrize("path", NOTEBOOKS_UNDER_TEST, ids=lambda path: path.stem)

MARKDOWN_PAGES = sorted(
    path for path in DOCS.rglob("*.md") if not path.relative_to(DOCS).parts[0].startswith("_")
)


def test_there_are_property_notebooks() -> None:
    assert NOTEBOOKS_UNDER_TEST, f"no notebooks in {relative(NOTEBOOKS / 'propiedades')}"


@by_name
def test_notebook_prints_exactly_its_page_block(path: Path, docs_check) -> None:
    report = mismatch(path, read_notebook(path), docs_check.runs[path])
    if report:
        pytest.fail(report, pytrace=False)


def test_site_builds_in_strict_mode(docs_check) -> None:
    if docs_check.build_returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{docs_check.build_log}", pytrace=False)


@by_name
def test_rendered_page_shows_the_same_block(path: Path, docs_check) -> None:
    if docs_check.build_returncode != 0:
        pytest.skip("the site did not build (see test_site_builds_in_strict_mode)")
    html_file = page_html(docs_check.site_dir, page_url(path))
    assert html_file.exists(), f"the site has no page {page_url(path)} for {relative(path)}"
    shown = rendered_block(html_file.read_text(encoding="utf-8"))
    expected = expected_block(read_notebook(path)).text
    if shown != expected:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                (shown or "").splitlines(keepends=True),
                fromfile=f"{relative(path)} · Lo que imprime",
                tofile=f"built page {page_url(path)} · as shown",
            )
        )
        pytest.fail(
            f"The built page {page_url(path)} does not show the block of {relative(path)}"
            + (":\n" + diff if shown is not None else ": no block under 'Lo que imprime'"),
            pytrace=False,
        )


@by_name
def test_rendered_page_offers_the_notebook_for_download(path: Path, docs_check) -> None:
    if docs_check.build_returncode != 0:
        pytest.skip("the site did not build")
    page = page_html(docs_check.site_dir, page_url(path)).read_text(encoding="utf-8")
    assert f'href="{path.name}" download' in page
    copy = docs_check.site_dir / page_url(path) / path.name
    assert copy.read_bytes() == path.read_bytes()


@by_name
def test_notebook_is_stored_without_outputs_or_volatile_metadata(path: Path) -> None:
    stored = path.read_text(encoding="utf-8")
    if stored != dumps(stored_form(read_notebook(path))):
        pytest.fail(
            f"{relative(path)} is stored with outputs, execution counts or volatile metadata; "
            f"`{UPDATE_COMMAND}` stores it clean",
            pytrace=False,
        )


@by_name
def test_notebook_has_the_shape_of_a_page(path: Path) -> None:
    notebook = read_notebook(path)
    title = title_of(notebook)
    assert title and title.startswith(path.stem[:2] + " · "), f"{relative(path)}: title {title!r}"
    intro = source_of(notebook["cells"][0])
    assert "Si dejan de coincidir, falla un test." in intro
    headings = [
        line
        for cell in notebook["cells"]
        if cell["cell_type"] == "markdown"
        for line in source_of(cell).splitlines()
        if line.startswith("## ")
    ]
    assert headings[:2] == ["## Cómo correrlo", "## Lo que imprime"], headings
    # the page ends with what it teaches, then (issue 18) the experiments a learner can do
    ending = headings[-2:] if headings[-1] == "## Pruébalo" else headings[-1:]
    assert ending[0] == "## Lo que esto enseña", headings
    tagged = [
        cell
        for cell in notebook["cells"]
        if "parameters" in cell.get("metadata", {}).get("tags", [])
    ]
    assert len(tagged) == 1, f"{relative(path)} needs one cell tagged 'parameters'"
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"


def test_every_notebook_has_a_nav_entry_and_every_nav_entry_exists() -> None:
    nav = nav_pages()
    notebooks_in_nav = {entry for entry in nav if entry.endswith(".ipynb")}
    on_disk = {f"propiedades/{path.name}" for path in NOTEBOOKS_UNDER_TEST}
    assert on_disk - notebooks_in_nav == set(), "notebooks without a nav entry in mkdocs.yml"
    assert notebooks_in_nav - on_disk == set(), "nav entries whose notebook does not exist"
    missing_md = [entry for entry in nav if entry.endswith(".md") and not (DOCS / entry).exists()]
    assert missing_md == [], "nav entries whose page does not exist"


def test_property_pages_are_notebooks_not_markdown_copies() -> None:
    # A docs/propiedades/NN.md beside the notebook would be a second home for its output.
    copies = sorted((DOCS / "propiedades").glob("*.md")) if (DOCS / "propiedades").exists() else []
    assert copies == [], "property pages live in notebooks/propiedades/*.ipynb only"


PAGES_WITH_TEXT = NOTEBOOKS_UNDER_TEST + MARKDOWN_PAGES + [REPO / "README.md"]


@pytest.mark.parametrize("path", PAGES_WITH_TEXT, ids=lambda path: relative(path))
def test_the_words_of_a_page_name_what_exists_and_show_what_runs(path: Path) -> None:
    """Backticked and fenced names of the package exist, environment variables are read by
    something, and a Markdown page's Python and quoted output come from what runs (the rules
    are in scripts/pages.py, `text_problems`)."""
    if path.suffix == ".ipynb":
        cells = read_notebook(path)["cells"]
        markdown = "\n\n".join(source_of(c) for c in cells if c["cell_type"] == "markdown")
        code = "\n\n".join(source_of(c) for c in cells if c["cell_type"] == "code")
    else:
        markdown, code = path.read_text(encoding="utf-8"), ""
    problems = text_problems(relative(path), markdown, code, markdown_page=path.parent == DOCS)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@by_name
def test_the_page_shows_output_in_its_block_only(path: Path) -> None:
    problems = page_problems(path, read_notebook(path))
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_every_internal_link_of_the_built_site_resolves(docs_check) -> None:
    if docs_check.build_returncode != 0:
        pytest.skip("the site did not build (see test_site_builds_in_strict_mode)")
    broken = broken_links(docs_check.site_dir)
    if broken:
        pytest.fail(f"{len(broken)} broken link(s):\n" + "\n".join(broken), pytrace=False)


def test_a_nav_label_names_its_page_a_notebook_by_its_file_a_page_by_its_title() -> None:
    wrong = nav_titles()
    assert wrong == [], "\n".join(wrong)
