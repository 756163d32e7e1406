"""Issue 29 on the home page, *Escalar*, *Modelos*, *Probar* and the README: the facts about the
kit are derived (`scripts/hechos.py`), every block says what backs it, and a command written in a
sentence runs.

- Every generated section is what the generator writes now (`hechos.stale`).
- They are claim pages (`scripts/claims.py`): tests/docs/test_afirmaciones.py holds every block
  (paragraph, list item, table body row, HTML block) to `<!-- afirmacion: id -->` or
  `<!-- no-afirma: <clave> -->` with a clave of the fixed list (`NO_CLAIM_REASONS`), and every id
  to an assertion that runs in the docs check: a registered check
  (`tests/docs/afirmaciones_paginas.py`, or `afirmaciones_md.py`) or a notebook's `afirma`.

Regression cases apply one drift each to a temporary copy of a page, as `test_mentiras.py` does.
"""

from __future__ import annotations

import re
from pathlib import Path

import tests.docs.afirmaciones_paginas  # noqa: F401  (registers the checks of these pages)
from scripts import hechos
from scripts.claims import claim_pages, page_claim_blocks, reason_problems, unmarked
from scripts.pages import DOCS, REPO, property_notebooks
from tests.docs.afirmaciones_md import AFIRMACIONES
from tests.docs.test_commands import prose_commands, unrun

#: The pages issue 29 added to the claim pages (`scripts/claims.py`, `claim_pages`):
#: tests/docs/test_afirmaciones.py holds every block of them to an id or a reason, runs their
#: registered checks and checks their numbers, as on every claim page.
PAGES = (
    DOCS / "index.md",
    DOCS / "escalar.md",
    DOCS / "modelos.md",
    DOCS / "probar.md",
    REPO / "README.md",
)


# ── The pages as they are ────────────────────────────────────────────────────


def test_every_generated_section_is_what_the_generator_writes_now() -> None:
    problems = hechos.stale()
    assert not problems, "\n".join(problems)


def test_these_pages_are_claim_pages() -> None:
    assert set(PAGES) <= set(claim_pages())


MINE = sorted(
    claim
    for claim, check in AFIRMACIONES.items()
    if check.__module__ == "tests.docs.afirmaciones_paginas"
)


def test_every_check_of_these_pages_backs_a_claim_they_make() -> None:
    on_pages = {claim for path in PAGES for b in page_claim_blocks(path) for claim in b.ids}
    assert set(MINE) <= on_pages, sorted(set(MINE) - on_pages)


# ── Drifts, each on a temporary copy ─────────────────────────────────────────


def test_a_kit_fact_typed_by_hand_that_disagrees_with_the_generator_fails() -> None:
    index = DOCS / "index.md"
    text = index.read_text(encoding="utf-8")
    held = hechos.current(text, "cuadernos")
    said = re.search(r"corren en\s+el\s+navegador\s+(\d+)\s+de\s+los", held)
    assert said is not None
    wrong = str(int(said.group(1)) + 1)  # one more than the notebooks that do
    typed = held.replace(said.group(0), said.group(0).replace(said.group(1), wrong))
    assert hechos.stale({index: text.replace(held, typed)}) == [
        "docs/index.md: its section «cuadernos» (facts about the kit) is not what the notebooks "
        "say now; run `uv run python -m scripts.update_pages` to write it"
    ]


def test_a_section_whose_markers_are_gone_fails_saying_where_it_goes() -> None:
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8").replace(hechos.start_marker("en-local"), "")
    [problem] = hechos.stale({readme: text})
    assert problem.startswith("README.md: the page has no section «en-local» between")


def test_an_unmarked_paragraph_on_the_home_page_fails() -> None:
    index = DOCS / "index.md"
    text = index.read_text(encoding="utf-8") + "\nEl runtime no pierde nunca nada.\n"
    [problem] = unmarked(page_claim_blocks(index, text), excuses_allowed=True)
    assert problem == (
        "docs/index.md, section «Cómo se comprueban estas páginas», paragraph 2 states something "
        "with no claim id: «El runtime no pierde nunca nada.». Add <!-- afirmacion: id --> or "
        "<!-- no-afirma: reason -->, and an assertion that checks it."
    )


def test_a_reason_outside_the_fixed_list_fails() -> None:
    index = DOCS / "index.md"
    text = index.read_text(encoding="utf-8") + (
        "\nEl runtime no pierde nunca nada. <!-- no-afirma: lo sabe todo el mundo -->\n"
    )
    [problem] = reason_problems(page_claim_blocks(index, text))
    assert "lo sabe todo el mundo" in problem


def test_a_misspelt_command_in_backticks_in_a_paragraph_fails() -> None:
    probar = (DOCS / "probar.md").read_text(encoding="utf-8")
    text = probar + "\nPara reescribir los bloques, `uv run python -m scripts.update_page`.\n"
    assert unrun({"docs/probar.md": prose_commands(text)}) == [
        "docs/probar.md shows `uv run python -m scripts.update_page`, which no test runs: add "
        "it to COMMANDS in tests/docs/test_commands.py with how the tests run it"
    ]


def test_a_run_time_is_recorded_as_its_class_and_the_record_changes_only_with_a_class(
    tmp_path: Path,
) -> None:
    record = tmp_path / "tiempos.json"
    bounds = [bound for bound, _ in hechos.TIME_CLASSES if bound is not None]
    assert hechos.record_times({"00_a": bounds[0] - 0.5, "01_b": bounds[-1] + 1}, record)
    assert hechos.recorded_times(record) == {
        "00_a": hechos.TIME_CLASSES[0][1],
        "01_b": hechos.TIME_CLASSES[-1][1],
    }
    # the same classes measured again: the file, and so the pages, stay as they are
    assert not hechos.record_times({"00_a": bounds[0] - 0.1, "01_b": bounds[-1] + 9}, record)
    assert hechos.record_times({"00_a": bounds[0], "01_b": bounds[-1] + 9}, record)


def test_a_notebook_that_kills_only_in_its_pruebalo_runs_in_the_browser() -> None:
    from scripts.navegador import browser_notebooks
    from scripts.pages import notebooks_that_kill

    only_there = [
        p
        for p in property_notebooks()
        if p.name[:2] in notebooks_that_kill() and not hechos.kills_in_teaching(p)
    ]
    assert set(only_there) <= set(browser_notebooks())


def test_a_wrapped_fact_never_starts_a_line_that_markdown_reads_as_a_list_item() -> None:
    # "corren en el navegador 15 de los 25." broken before "25." made that line an ordered
    # list item, and the paragraph's claim marker fell into it.
    text = "x" * 89 + " de los 25. " + "y" * 94 + " - un guion " + "z" * 94 + " # y nada más."
    lines = hechos._wrap(text, width=96).split("\n")
    assert lines[0].endswith(" de los 25.") and len(lines[0]) > 96, lines
    for line in lines:
        assert not re.match(r"\d+[.)]\s|[-*+#>]\s", line), lines
