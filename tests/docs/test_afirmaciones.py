"""Words are claims: every sentence a page says about the runtime is checked by an assertion
that runs in this check (the mechanism: `scripts/claims.py`; for authors: docs/probar.md).

A notebook's claims are checked by its own `comun.afirma` calls, while it runs in the docs
check. The claims of *Conceptos*, *Límites* and the glossary are checked by a notebook (the
same id) or by one of the functions below, registered with `@afirmacion("id")` and run here as
tests (`tests/docs/afirmaciones_md.py`): what they show, no notebook prints.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from scripts.claims import (
    LOCK,
    UPDATE_COMMAND,
    asserted_ids,
    blocks,
    claim_pages,
    evidence_for,
    map_problems,
    marked_blocks,
    marked_ids,
    notebook_blocks,
    notebook_claim_blocks,
    notebook_code,
    notebook_ids,
    notebook_marked_blocks,
    notebook_prose_blocks,
    notebook_title_block,
    notebook_vacuous_assertions,
    other_page_claim_blocks,
    other_pages,
    page_claim_blocks,
    reason_problems,
    runtime_excuses,
    unchecked,
    unmarked,
    unreviewed,
    unsupported_numbers,
    vacuous_registered,
    values_of,
)
from scripts.pages import DOCS, property_notebooks, read_notebook, relative

with contextlib.suppress(ImportError):  # registers the checks of the other pages
    import tests.docs.afirmaciones_paginas  # noqa: F401
from tests.docs.afirmaciones_md import (
    AFIRMACIONES,
    run_registered,
    windows_blocks,
    windows_problems,
)

# ── The check ────────────────────────────────────────────────────────────────

NOTEBOOKS = property_notebooks()
PAGES = claim_pages()
by_notebook = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
by_page = pytest.mark.parametrize("path", PAGES, ids=lambda path: path.name)


def fail(problems: list[str]) -> None:
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@by_notebook
def test_every_bullet_of_lo_que_esto_ensena_carries_a_claim_id(path: Path) -> None:
    found = notebook_claim_blocks(path)
    assert found, f"{relative(path)}: its *Lo que esto enseña* cell has no bullets"
    fail(unmarked(found, excuses_allowed=False))


@by_notebook
def test_every_title_carries_an_id_of_its_own_notebook_in_its_cells_map(path: Path) -> None:
    title = notebook_title_block(path)
    assert title is not None and title.ids, (
        f"{relative(path)}: its title (# NN · …) carries no claim id: give it one in the first "
        "entry of its cell's map (metadata synaptum.afirmaciones), an id this notebook checks"
    )
    foreign = [claim for claim in title.ids if not claim.startswith(path.stem[:2] + ".")]
    assert not foreign, f"{relative(path)}: its title's ids {foreign} are not its own"


@by_notebook
def test_every_block_of_a_notebook_is_in_its_cells_map_and_no_marker_is_in_its_markdown(
    path: Path,
) -> None:
    fail(map_problems(path))


@by_notebook
def test_every_prose_block_of_a_notebook_is_a_claim_or_says_why_not(path: Path) -> None:
    fail(unmarked(notebook_prose_blocks(path), excuses_allowed=True))


def test_the_words_of_every_claim_are_the_words_last_reviewed_beside_its_assertion() -> None:
    fail(unreviewed(marked_blocks()))


@by_notebook
def test_every_claim_of_a_notebook_is_checked_by_its_own_run(path: Path, docs_check) -> None:
    notebook = read_notebook(path)
    own = set(asserted_ids(notebook_code(notebook)))
    how = f'Check it in {path.name} with afirma("<id>", …), in a cell that runs.'
    bullets = notebook_claim_blocks(path, notebook)
    problems = unchecked(bullets, docs_check.claims_checked, how)
    # an id anywhere else in the page (its title, a prose cell) is a claim too
    in_bullets = {claim for block in bullets for claim in block.ids}
    problems += [
        f"{relative(path)}: claim {claim}, outside *Lo que esto enseña*, was not checked "
        "during the docs check"
        for claim in notebook_ids(notebook)
        if claim not in in_bullets and claim not in docs_check.claims_checked | set(AFIRMACIONES)
    ]
    problems += [
        f'{relative(path)}: claim {claim} is on its page but no afirma("{claim}", …) is in its '
        "code: a notebook's bullets are checked by the notebook itself"
        for claim in notebook_ids(notebook)
        if claim.startswith(path.stem[:2] + ".") and claim not in own
    ]
    fail(problems)


@by_page
def test_every_block_of_a_claim_page_is_a_claim_or_says_why_not(path: Path) -> None:
    fail(unmarked(page_claim_blocks(path), excuses_allowed=True))


@by_page
def test_every_claim_of_a_claim_page_was_checked(path: Path, docs_check) -> None:
    checked = docs_check.claims_checked | set(AFIRMACIONES)
    how = (
        'Check it in a notebook with afirma("<id>", …), or register a function with '
        '@afirmacion("<id>") in tests/docs/afirmaciones_md.py.'
    )
    problems = unchecked(page_claim_blocks(path), checked, how)
    problems += [  # an id in a heading is not in any block; it is a claim all the same
        f"{relative(path)}: claim {claim} was not checked during the docs check"
        for claim in marked_ids(path.read_text(encoding="utf-8"))
        if claim not in checked
    ]
    fail(sorted(set(problems), key=problems.index))


@pytest.mark.parametrize("path", other_pages(), ids=lambda path: path.name)
def test_every_claim_marked_on_another_page_was_checked(path: Path, docs_check) -> None:
    checked = docs_check.claims_checked | set(AFIRMACIONES)
    how = (
        'Check it in a notebook with afirma("<id>", …), or register a function with '
        '@afirmacion("<id>") in tests/docs/afirmaciones_md.py.'
    )
    fail(unchecked(other_page_claim_blocks(path), checked, how))


@pytest.mark.parametrize("claim", sorted(AFIRMACIONES))
def test_page_claim_holds(claim: str) -> None:
    run_registered(claim)


@by_notebook
def test_every_no_afirma_of_a_notebook_gives_a_reason_from_the_list(path: Path) -> None:
    fail(reason_problems(notebook_blocks(path)))


@by_page
def test_every_no_afirma_of_a_claim_page_gives_a_reason_from_the_list(path: Path) -> None:
    fail(reason_problems(page_claim_blocks(path)))


def test_no_block_that_states_what_the_runtime_does_is_excused() -> None:
    found = [b for path in NOTEBOOKS for b in notebook_blocks(path)]
    found += [b for path in PAGES for b in page_claim_blocks(path)]
    fail(runtime_excuses(found))


@by_notebook
def test_no_afirma_of_a_notebook_checks_nothing(path: Path) -> None:
    fail(notebook_vacuous_assertions(path))


def test_no_registered_test_checks_nothing() -> None:
    fail(vacuous_registered(AFIRMACIONES))


@by_notebook
def test_every_number_of_a_notebook_claim_comes_from_its_run(path: Path, docs_check) -> None:
    values = values_of(docs_check.claims_checked)
    values |= {
        claim: [run_registered(claim)]
        for claim in notebook_ids(read_notebook(path))
        if claim in AFIRMACIONES
    }
    fail(
        [
            problem
            for block in notebook_blocks(path)
            for problem in unsupported_numbers(block, evidence_for(block, values, own=path))
        ]
    )


@pytest.mark.parametrize("path", PAGES + other_pages(), ids=lambda path: path.name)
def test_every_number_of_a_page_claim_comes_from_the_run(path: Path, docs_check) -> None:
    found = page_claim_blocks(path) if path in PAGES else other_page_claim_blocks(path)
    values = values_of(docs_check.claims_checked)
    values |= {
        claim: [run_registered(claim)]
        for block in found
        for claim in block.ids
        if claim in AFIRMACIONES
    }
    fail(
        [
            problem
            for block in found
            for problem in unsupported_numbers(block, evidence_for(block, values))
        ]
    )


def test_every_assertion_backs_a_claim_that_a_page_makes(docs_check) -> None:
    on_pages = (
        {claim for path in NOTEBOOKS for claim in notebook_ids(read_notebook(path))}
        | {claim for path in PAGES for claim in marked_ids(path.read_text(encoding="utf-8"))}
        | {
            claim
            for path in other_pages()
            for block in other_page_claim_blocks(path)
            for claim in block.ids
        }
    )
    in_code = {
        claim: relative(path)
        for path in NOTEBOOKS
        for claim in asserted_ids(notebook_code(read_notebook(path)))
    }
    stale = [
        f"{where} checks claim {claim}, which no page makes: remove the check or write the claim"
        for claim, where in sorted(in_code.items())
        if claim not in on_pages
    ] + [
        f"tests/docs/afirmaciones_md.py checks claim {claim}, which no page makes"
        for claim in sorted(AFIRMACIONES)
        if claim not in on_pages
    ]
    unwritten = sorted(docs_check.claims_checked - set(in_code))
    stale += [
        f"a notebook checked claim {claim}, whose afirma call is not literal" for claim in unwritten
    ]
    fail(stale)


# ── The mechanism itself ─────────────────────────────────────────────────────


def test_a_marked_block_on_another_page_is_a_claim_and_the_rest_of_that_page_is_not_read(
    tmp_path: Path,
) -> None:
    page = tmp_path / "otra.md"
    text = (
        "Un párrafo sin id.\n\n"
        "Un run cerrado no llama a nadie. <!-- afirmacion: 02.cerrado -->\n\n"
        "Se escribe así: `<!-- afirmacion: 02.citado -->`, entre comillas invertidas.\n"
    )
    [claim] = other_page_claim_blocks(page, text)
    assert claim.ids == ["02.cerrado"] and claim.words == "Un run cerrado no llama a nadie."
    [problem] = unchecked([claim], set(), "Check it.")
    assert "claim 02.cerrado was not checked during the docs check" in problem
    assert set(other_pages()) == {DOCS / "referencia.md", DOCS / "rendimiento.md"}
    assert DOCS.parent / "README.md" in PAGES and not set(other_pages()) & set(PAGES)
    # and its words are in the lock, as every claim's
    assert any(b.file == "README.md" for b in marked_blocks())


WORKFLOW = (DOCS.parent / ".github" / "workflows" / "tests.yml").read_text(encoding="utf-8")


def test_the_windows_check_fails_on_the_sentence_that_said_ci_runs_it() -> None:
    said = (
        "Solo Linux está probado aquí: macOS se prueba quitando `F_OFD_SETLK` en un test, y el "
        "camino de Windows, que no puede correr aquí, lo revisa mypy (`--platform win32`) y lo "
        "corre CI en Windows."
    )
    pages = windows_blocks()
    assert all(pages.values()) and windows_problems(WORKFLOW, pages) == []
    not_said, runs = windows_problems(WORKFLOW, pages | {"docs/limites.md": [said]})
    assert not_said.startswith("docs/limites.md does not say «revisado por tipos, no ejecutado»")
    assert runs.startswith("docs/limites.md says Windows runs («macOS se prueba quitando")
    assert "lo corre CI en Windows.»)" in runs
    lied = pages["README.md"][0] + " En Windows lo corre CI en cada cambio."
    assert windows_problems(WORKFLOW, pages | {"README.md": [lied]}) == [
        "README.md says Windows runs («En Windows lo corre CI en cada cambio.»), and the "
        "Windows CI job may fail without failing the workflow"
    ]
    # once the Windows job counts, the pages must stop saying it is not run
    gated = WORKFLOW.replace("continue-on-error: ${{ matrix.os == 'windows-latest' }}", "")
    assert gated != WORKFLOW
    assert len(windows_problems(gated, pages)) == 2


NOTEBOOK_02 = next(path for path in NOTEBOOKS if path.stem == "02_durabilidad")


def with_a_new_bullet(bullet: str, ids: list[str] | None = None) -> dict:
    """Notebook 02 with one more bullet in its *Lo que esto enseña* cell, and with `ids` an
    entry for it in the cell's map (nothing is written)."""
    notebook = read_notebook(NOTEBOOK_02)
    cell = next(c for c in notebook["cells"] if c.get("id") == "lo-que-esto-ensena")
    text = "".join(cell["source"])
    last = text.index("\n\nEl cuaderno entero")
    cell["source"] = text[:last] + "\n" + bullet + text[last:]
    if ids is not None:
        entries = cell["metadata"]["synaptum"]["afirmaciones"]
        entries.insert(4, {"ids": ids, "texto": bullet.removeprefix("- ")})
    return notebook


PROBAR = (DOCS / "probar.md").read_text(encoding="utf-8")


def test_a_new_bullet_without_an_id_fails_naming_the_page_and_the_bullet() -> None:
    notebook = with_a_new_bullet("- Una frase nueva sobre el runtime.")
    [problem] = unmarked(notebook_claim_blocks(NOTEBOOK_02, notebook), excuses_allowed=False)
    assert problem + "\n" in PROBAR, "docs/probar.md quotes another failure text"
    assert problem == (
        "notebooks/propiedades/02_durabilidad.ipynb (page «02 · Matar el proceso a mitad y "
        "reanudar sin volver a pagar la inferencia»), *Lo que esto enseña*, bullet 5 states "
        "something with no claim id: «Una frase nueva sobre el runtime.». Add "
        '{"texto": "Una frase nueva sobre el runtime.", "ids": ["02.id"]} as entry 5 of the map '
        'of cell 19 (id "lo-que-esto-ensena") (metadata synaptum.afirmaciones), and an assertion '
        "that checks it."
    )
    # and the map, one entry short, names the block it is out of step at
    assert first(map_problems(NOTEBOOK_02, notebook)).startswith(
        f"{N02_PAGE}, *Lo que esto enseña*, bullet 5: entry 5 of the map of cell 19 (id "
        '"lo-que-esto-ensena") (metadata synaptum.afirmaciones) is for a block that begins «El '
        "cuaderno entero, para descargarlo y tocarlo: "
        "[`02_durabilidad.ipynb`](02_durabilidad.ipynb).…», and this block begins «Una frase "
        "nueva sobre el runtime.»: the map is out of step"
    )


def test_a_new_bullet_whose_assertion_never_ran_fails_naming_the_page_and_the_bullet() -> None:
    notebook = with_a_new_bullet("- Una frase nueva sobre el runtime.", ids=["02.nueva"])
    assert map_problems(NOTEBOOK_02, notebook) == []
    found = notebook_claim_blocks(NOTEBOOK_02, notebook)
    checked = {claim for block in found[:-1] for claim in block.ids}  # all but the new one ran
    how = f'Check it in {NOTEBOOK_02.name} with afirma("<id>", …), in a cell that runs.'
    [problem] = unchecked(found, checked, how)
    assert problem + "\n" in PROBAR, "docs/probar.md quotes another failure text"
    assert problem == (
        "notebooks/propiedades/02_durabilidad.ipynb (page «02 · Matar el proceso a mitad y "
        "reanudar sin volver a pagar la inferencia»), *Lo que esto enseña*, bullet 5: claim "
        "02.nueva was not checked during the docs check («Una frase nueva sobre el runtime.»). "
        'Check it in 02_durabilidad.ipynb with afirma("<id>", …), in a cell that runs.'
    )


def test_a_claim_page_block_may_say_why_it_claims_nothing_but_a_notebook_bullet_may_not() -> None:
    page = "- Una definición. <!-- no-afirma: define una palabra -->\n"
    assert [kind for kind, _ in blocks(page)] == ["item"]
    from scripts.claims import Block

    excused = Block("p", "bullet 1", page)
    assert unmarked([excused], excuses_allowed=True) == []
    assert len(unmarked([excused], excuses_allowed=False)) == 1


def test_every_list_item_paragraph_table_row_and_html_block_counts_and_nothing_else() -> None:
    page = (
        "# Título\n\nUn párrafo\nen dos líneas.\n\n- una\n- dos\n  sigue\n\n"
        "| a | b |\n|---|---|\n| fila | uno |\n| fila | dos |\n\n"
        "```python\nno = 'cuenta'\n```\n\n<figure>\n<p>x</p>\n\n</figure>\n"
    )
    assert [(kind, text.split()[0]) for kind, text in blocks(page)] == [
        ("paragraph", "Un"),
        ("item", "-"),
        ("item", "-"),
        ("row", "|"),
        ("row", "|"),
        ("html", "<figure>"),
    ]


def test_afirma_records_what_holds_and_raises_with_the_id_on_what_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import sys

    from scripts.claims import RECORD_FOLDER_VARIABLE, read_recorded
    from scripts.pages import NOTEBOOKS as NOTEBOOK_FOLDER

    monkeypatch.setenv(RECORD_FOLDER_VARIABLE, str(tmp_path))
    monkeypatch.syspath_prepend(str(NOTEBOOK_FOLDER))
    sys.modules.pop("comun", None)
    comun = importlib.import_module("comun")
    comun.afirma("99.cierta", True, "no se ve")
    with pytest.raises(AssertionError, match=r"^99\.falsa: el saldo no cuadra$"):
        comun.afirma("99.falsa", False, "el saldo no cuadra")
    assert read_recorded(tmp_path) == {"99.cierta"}


def test_a_hash_inside_a_code_fence_is_code_not_a_section(tmp_path: Path) -> None:
    page = tmp_path / "pagina.md"
    page.write_text(
        "## Una sección\n\n```python\n# un comentario\nx = 1\n```\n\nUn párrafo sin id.\n",
        encoding="utf-8",
    )
    [block] = page_claim_blocks(page)
    assert block.where == "section «Una sección», paragraph 1"


def test_a_bullet_whose_words_changed_under_the_same_id_fails_until_it_is_reviewed() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    cell = next(c for c in notebook["cells"] if c.get("id") == "lo-que-esto-ensena")
    true = "- Un run cerrado devuelve su paso final y no llama a nadie."
    assert true in "".join(cell["source"])
    cell["source"] = "".join(cell["source"]).replace(
        true, "- Un run cerrado vuelve a preguntar al modelo."
    )
    [problem] = unreviewed(notebook_marked_blocks(NOTEBOOK_02, notebook))
    assert problem + "\n" in PROBAR, "docs/probar.md quotes another failure text"
    assert problem == (
        "notebooks/propiedades/02_durabilidad.ipynb (page «02 · Matar el proceso a mitad y "
        "reanudar sin volver a pagar la inferencia»), *Lo que esto enseña*, bullet 3: the words "
        "of claim 02.cerrado are not the words last reviewed (now «Un run cerrado vuelve a "
        "preguntar al modelo…», reviewed «Un run cerrado devuelve su paso final y no llama a "
        "nadie…»). Review: re-read the assertion of 02.cerrado and make it check what the words "
        f"now say; then record the words with `{UPDATE_COMMAND}`."
    )


def test_the_lock_records_each_block_once_under_its_ids_and_only_the_update_writes_it(
    tmp_path: Path,
) -> None:
    from scripts.claims import lock_lines, write_lock

    lock = tmp_path / "afirmaciones.lock"
    assert write_lock(lock) == len(marked_blocks())
    assert unreviewed(marked_blocks(), lock) == []
    recorded = [line for line in LOCK.read_text(encoding="utf-8").splitlines() if line[:1] != "#"]
    assert recorded == lock_lines(marked_blocks())


def test_a_new_prose_paragraph_without_an_id_or_a_reason_fails_naming_the_cell() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    cell = next(c for c in notebook["cells"] if c.get("id") == "sobre-la-segunda-vuelta")
    cell["source"] = "".join(cell["source"]) + "\n\nReanudar es gratis."
    [problem] = unmarked(notebook_prose_blocks(NOTEBOOK_02, notebook), excuses_allowed=True)
    assert problem == (
        f'{N02_PAGE}, cell 12 (id "sobre-la-segunda-vuelta"), block 2 states something with no '
        'claim id: «Reanudar es gratis.». Add {"texto": "Reanudar es gratis.", "ids": ["02.id"]} '
        "as entry 2 of its cell's map (metadata synaptum.afirmaciones), or "
        '{"texto": "Reanudar es gratis.", "no-afirma": "la razón"}, and an assertion that '
        "checks it."
    )
    assert map_problems(NOTEBOOK_02, notebook) == [
        f'{N02_PAGE}, cell 12 (id "sobre-la-segunda-vuelta"), block 2 («Reanudar es gratis.») has '
        "no entry in its cell's map (metadata synaptum.afirmaciones): add entry 2, "
        '{"texto": "Reanudar es gratis.", "ids": ["02.id"]} (or {"texto": "Reanudar es gratis.", '
        '"no-afirma": "la razón"})'
    ]


N02_PAGE = (
    "notebooks/propiedades/02_durabilidad.ipynb (page «02 · Matar el proceso a mitad y reanudar "
    "sin volver a pagar la inferencia»)"
)


def first(problems: list[str]) -> str:
    assert problems, "the check found nothing"
    return problems[0]


def test_a_paragraph_inserted_in_the_middle_of_a_cell_fails_naming_that_block() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    cell = next(c for c in notebook["cells"] if c.get("id") == "como-correrlo")
    text = "".join(cell["source"])
    at = text.index("En JupyterLab, desde la raíz")
    cell["source"] = text[:at] + "Correrlo no cuesta nada.\n\n" + text[at:]
    assert first(map_problems(NOTEBOOK_02, notebook)).startswith(
        f'{N02_PAGE}, cell 1 (id "como-correrlo"), block 2: entry 2 of its cell\'s map (metadata '
        "synaptum.afirmaciones) is for a block that begins «En JupyterLab, desde la raíz del "
        "repositorio, y…», and this block begins «Correrlo no cuesta nada.»: the map is "
        "out of step with the cell"
    )


def test_an_entry_for_a_block_the_cell_no_longer_has_fails() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    cell = next(c for c in notebook["cells"] if c.get("id") == "sobre-la-segunda-vuelta")
    cell["metadata"]["synaptum"]["afirmaciones"].append({"texto": "Nada.", "no-afirma": "x"})
    assert map_problems(NOTEBOOK_02, notebook) == [
        'notebooks/propiedades/02_durabilidad.ipynb: the map of cell 12 (id "sobre-la-segunda-'
        'vuelta") (metadata synaptum.afirmaciones) has 2 entries for 1 blocks: entry 2 («Nada.») '
        "maps a block the cell does not have; drop it"
    ]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"texto": "x", "ids": ["02.cerrado"], "no-afirma": "y"}, "gives both ids and a no-afirma"),
        ({"texto": "x"}, "gives neither ids nor a reason"),
        ({"texto": "x", "ids": ["cerrado"]}, "has ids that are not ids: ['cerrado']"),
        ("02.cerrado", "is not texto with ids or no-afirma"),
    ],
)
def test_an_entry_that_is_not_an_entry_fails(entry, says: str) -> None:
    notebook = read_notebook(NOTEBOOK_02)
    cell = next(c for c in notebook["cells"] if c.get("id") == "sobre-la-segunda-vuelta")
    cell["metadata"]["synaptum"]["afirmaciones"][0] = entry
    assert says in first(map_problems(NOTEBOOK_02, notebook))


def test_a_claim_marker_written_in_a_notebooks_markdown_fails() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    cell = notebook["cells"][0]
    cell["source"] = "".join(cell["source"]).replace(
        "inferencia\n", "inferencia\n<!-- afirmacion: 02.no-repaga -->\n", 1
    )
    assert first(map_problems(NOTEBOOK_02, notebook)) == (
        'notebooks/propiedades/02_durabilidad.ipynb: cell 0 (id "titulo") writes the claim marker '
        "«<!-- afirmacion: 02.no-repaga -->» in its Markdown, where a learner sees it; in a "
        "notebook a block's ids live in its cell's metadata (synaptum.afirmaciones)"
    )


def test_a_title_whose_entry_gives_no_id_has_none() -> None:
    notebook = read_notebook(NOTEBOOK_02)
    entries = notebook["cells"][0]["metadata"]["synaptum"]["afirmaciones"]
    assert entries[0]["ids"] == ["02.no-repaga"]
    entries[0] = {"texto": entries[0]["texto"], "no-afirma": "un título"}
    title = notebook_title_block(NOTEBOOK_02, notebook)
    assert title is not None and title.ids == [] and title.where == "its title"


def test_an_id_belongs_to_the_blocks_whose_entries_name_it() -> None:
    from scripts.claims import id_bindings

    bound = id_bindings([NOTEBOOK_02])
    assert [b.where for b in bound["02.cerrado"]] == [
        'cell 5 (id "sobre-parametros"), block 1',
        "*Lo que esto enseña*, bullet 3",
    ]
