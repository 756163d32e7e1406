"""Issue 29 on the home page, *Escalar*, *Modelos*, *Probar* and the README: the facts about the
kit are derived (`scripts/hechos.py`), every block says what backs it, and a command written in a
sentence runs.

- Every generated section is what the generator writes now (`hechos.stale`).
- Every block of these pages (paragraph, list item, table body row, HTML block) carries
  `<!-- afirmacion: id -->` or `<!-- no-afirma: <clave> -->`, with a clave from the fixed list
  (`NO_CLAIM_REASONS`), optionally followed by « — » and free words.
- Every id on them is checked by an assertion that runs: a registered check
  (`tests/docs/afirmaciones_paginas.py`, or `afirmaciones_md.py`), run here, or an `afirma` in a
  notebook's code (the docs check, `tests/docs/test_afirmaciones.py`, runs those).

Regression cases apply one drift each to a temporary copy of a page, as `test_mentiras.py` does.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from pathlib import Path

import pytest

import tests.docs.afirmaciones_paginas  # noqa: F401  (registers the checks of these pages)
from scripts import hechos
from scripts.claims import (
    _NOT_A_CLAIM,
    asserted_ids,
    notebook_code,
    page_claim_blocks,
    unmarked,
)
from scripts.pages import DOCS, REPO, property_notebooks, read_notebook
from tests.docs.afirmaciones_md import AFIRMACIONES
from tests.docs.test_commands import prose_commands, unrun

try:  # H1 adds the fixed list to scripts/claims.py; until then, the same list here
    from scripts.claims import NO_CLAIM_REASONS  # type: ignore[attr-defined]
except ImportError:
    NO_CLAIM_REASONS = (
        "instrucciones",
        "enlace",
        "narra el código",
        "sobre esta página",
        "definición",
        "sobre la plataforma",
    )

#: The pages this file holds to every block marked (the lead adds them to CLAIM_PAGES).
PAGES = (
    DOCS / "index.md",
    DOCS / "escalar.md",
    DOCS / "modelos.md",
    DOCS / "probar.md",
    REPO / "README.md",
)
by_page = pytest.mark.parametrize("path", PAGES, ids=lambda path: path.name)


def fail(problems: list[str]) -> None:
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def bad_reasons(path: Path, text: str | None = None) -> list[str]:
    """One line per `no-afirma` whose reason is not a clave of the fixed list."""
    problems = []
    for block in page_claim_blocks(path, text):
        for reason in _NOT_A_CLAIM.findall(block.text):
            clave = reason.split(" — ")[0].strip()
            if clave not in NO_CLAIM_REASONS:
                problems.append(
                    f"{block.page}, {block.where}: «no-afirma: {reason}» gives no reason of the "
                    f"fixed list; begin it with one of {', '.join(NO_CLAIM_REASONS)} (then « — » "
                    "and your words)"
                )
    return problems


def notebook_asserted() -> set[str]:
    return {i for p in property_notebooks() for i in asserted_ids(notebook_code(read_notebook(p)))}


def unbacked(path: Path) -> list[str]:
    """One line per id on the page that neither a registered check nor a notebook's literal
    `afirma` checks."""
    backed = set(AFIRMACIONES) | notebook_asserted()
    return [
        f"{block.page}, {block.where}: claim {claim} has no assertion: register a check with "
        f'@afirmacion("{claim}") in tests/docs/afirmaciones_paginas.py, or use the id of the '
        f"notebook that measures it («{block.quote(60)}»)"
        for block in page_claim_blocks(path)
        for claim in block.ids
        if claim not in backed
    ]


# ── The pages as they are ────────────────────────────────────────────────────


def test_every_generated_section_is_what_the_generator_writes_now() -> None:
    fail(hechos.stale())


@by_page
def test_every_block_is_a_claim_or_says_why_not(path: Path) -> None:
    fail(unmarked(page_claim_blocks(path), excuses_allowed=True) + bad_reasons(path))


@by_page
def test_every_claim_has_an_assertion(path: Path) -> None:
    fail(unbacked(path))


MINE = sorted(
    claim
    for claim, check in AFIRMACIONES.items()
    if check.__module__ == "tests.docs.afirmaciones_paginas"
)


@pytest.mark.parametrize("claim", MINE)
def test_the_claim_holds(claim: str) -> None:
    result = AFIRMACIONES[claim]()
    if inspect.iscoroutine(result):
        asyncio.run(result)


def _values_of_mine() -> dict[str, list[dict]]:
    """id → the values each registered check of these pages returned (run once)."""
    if not _VALUES:
        for claim in MINE:
            result = AFIRMACIONES[claim]()
            if inspect.iscoroutine(result):
                result = asyncio.run(result)
            _VALUES[claim] = [result] if isinstance(result, dict) else []
    return _VALUES


_VALUES: dict[str, list[dict]] = {}


@by_page
def test_no_block_excused_with_no_afirma_states_what_the_runtime_does(path: Path) -> None:
    runtime_excuses = pytest.importorskip("scripts.claims").__dict__.get("runtime_excuses")
    if runtime_excuses is None:
        pytest.skip("scripts.claims has no runtime_excuses yet (H1 adds it)")
    fail(runtime_excuses(page_claim_blocks(path)))


@by_page
def test_every_number_of_a_claim_is_among_what_its_check_computed(path: Path) -> None:
    """A number in a sentence bound to an id is among the values its registered check
    returned, or printed by a notebook that asserts one of its ids (values a notebook's
    `afirma` records are read by the docs check, not here)."""
    claims = pytest.importorskip("scripts.claims")
    if not hasattr(claims, "unsupported_numbers"):
        pytest.skip("scripts.claims has no unsupported_numbers yet (H1 adds it)")
    values = _values_of_mine()
    problems = []
    for block in page_claim_blocks(path):
        if block.ids:
            problems += claims.unsupported_numbers(block, claims.evidence_for(block, values))
    fail(problems)


def test_every_check_of_these_pages_backs_a_claim_they_make() -> None:
    on_pages = {claim for path in PAGES for b in page_claim_blocks(path) for claim in b.ids}
    assert set(MINE) <= on_pages, sorted(set(MINE) - on_pages)


# ── Drifts, each on a temporary copy ─────────────────────────────────────────


def test_a_kit_fact_typed_by_hand_that_disagrees_with_the_generator_fails() -> None:
    index = DOCS / "index.md"
    text = index.read_text(encoding="utf-8")
    held = hechos.current(text, "cuadernos")
    said = re.search(r"corren en\s+el\s+navegador (\d+) de los", held)
    assert said is not None
    typed = held.replace(said.group(0), said.group(0).replace(said.group(1), "14"))
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
    [problem] = bad_reasons(index, text)
    assert "«no-afirma: lo sabe todo el mundo» gives no reason of the fixed list" in problem


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
