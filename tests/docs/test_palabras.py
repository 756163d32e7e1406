"""Words that drift (issue 29): each kind of honest edit that used to pass the claims check,
applied to a temporary copy — of notebook 02 (in memory) or of a claim page's text — never to
the real tree, and the first line of the failure the check now gives.

Before scripts/claims.py read numbers, bindings, reasons and conditions, each of these passed:
the lock asked only that changed words be recorded, and `--actualiza` records anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.claims import (
    NO_CLAIM_REASONS,
    evidence_for,
    notebook_claim_blocks,
    notebook_marked_blocks,
    notebook_vacuous_assertions,
    page_claim_blocks,
    reason_problem,
    reason_problems,
    runtime_excuses,
    runtime_statement,
    unreviewed,
    unsupported_numbers,
)
from scripts.pages import DOCS, NOTEBOOKS, read_notebook

NOTEBOOK_02 = NOTEBOOKS / "propiedades" / "02_durabilidad.ipynb"
N02 = (
    "notebooks/propiedades/02_durabilidad.ipynb (page «02 · Matar el proceso a mitad y reanudar "
    "sin volver a pagar la inferencia»)"
)
CONCEPTOS = DOCS / "conceptos.md"


def copy_of_02() -> dict[str, Any]:
    return json.loads(json.dumps(read_notebook(NOTEBOOK_02)))


def cell(notebook: dict[str, Any], cell_id: str) -> dict[str, Any]:
    return next(c for c in notebook["cells"] if c.get("id") == cell_id)


def first_line(problems: list[str]) -> str:
    assert problems, "the check found nothing: the drift got through"
    line = problems[0].splitlines()[0]
    print(f"first line: {line}")  # `pytest -s` lists each drift with its failure
    return line


def a_page_with(paragraph: str) -> tuple[Path, str]:
    """Conceptos with one more paragraph at its end (nothing is written)."""
    return CONCEPTOS, CONCEPTOS.read_text(encoding="utf-8") + "\n" + paragraph + "\n"


def test_a_bullets_number_that_the_notebook_does_not_print_or_assert() -> None:
    notebook = copy_of_02()
    bullets = cell(notebook, "lo-que-esto-ensena")
    text = "".join(bullets["source"])
    assert "encuentra 4 eventos en\n  disco" in text
    bullets["source"] = text.replace("encuentra 4 eventos", "encuentra 6 eventos")
    [bullet, *_] = notebook_claim_blocks(NOTEBOOK_02, notebook)
    problems = unsupported_numbers(bullet, evidence_for(bullet, {}, own=NOTEBOOK_02))
    assert first_line(problems) == (
        f"{N02}, *Lo que esto enseña*, bullet 1: the number 6 is not printed by the notebook nor "
        "among the values recorded for 02.escrito-antes-de-entregar in this run («Cada evento "
        "llega al journal **antes** de que el bucle lo entregue. L…»). Record the value "
        "it states (afirma(…, nombre=valor), or return {nombre: valor} from its registered test), "
        "print it, or fix the words"
    )
    # the true bullet passes: its 4 is what the notebook prints (journal: 4 eventos)
    [true, *_] = notebook_claim_blocks(NOTEBOOK_02)
    assert unsupported_numbers(true, evidence_for(true, {}, own=NOTEBOOK_02)) == []


def test_a_new_paragraph_placed_under_an_id_already_bound_elsewhere() -> None:
    notebook = copy_of_02()
    prose = cell(notebook, "sobre-la-segunda-vuelta")
    prose["source"] = "".join(prose["source"]) + "\n\nReanudar un run cerrado no cuesta nada."
    prose["metadata"]["synaptum"]["afirmaciones"].append(
        {"texto": "Reanudar un run cerrado no cuesta nada.", "ids": ["02.cerrado"]}
    )
    assert first_line(unreviewed(notebook_marked_blocks(NOTEBOOK_02, notebook))).startswith(
        f'{N02}, cell 12 (id "sobre-la-segunda-vuelta"), block 2: a new block («Reanudar un run '
        "cerrado no cuesta nada.») is placed under claim 02.cerrado, which the lock binds to "
    )


def test_an_afirma_whose_condition_is_a_literal_checks_nothing() -> None:
    notebook = copy_of_02()
    checks = cell(notebook, "afirmaciones")
    checks["source"] = "".join(checks["source"]) + '\nafirma("02.cerrado", True, "siempre")\n'
    index = notebook["cells"].index(checks)
    assert first_line(notebook_vacuous_assertions(NOTEBOOK_02, notebook)) == (
        f'notebooks/propiedades/02_durabilidad.ipynb, cell {index} (id "afirmaciones"): '
        '«afirma("02.cerrado", True, "siempre")» checks nothing: its condition reads no '
        "variable of the run. Make it compare what the notebook measured"
    )
    # nor one that reads only literals and builtins
    checks["source"] = "".join(checks["source"]).replace("True,", "len([1, 2]) == 2,")
    assert notebook_vacuous_assertions(NOTEBOOK_02, notebook)
    assert notebook_vacuous_assertions(NOTEBOOK_02) == []


def test_a_runtime_sentence_excused_with_no_afirma() -> None:
    path, text = a_page_with(
        "El journal guarda cada paso antes de entregarlo. "
        "<!-- no-afirma: sobre esta página — una frase -->"
    )
    found = page_claim_blocks(path, text)
    assert first_line(runtime_excuses(found)) == (
        f"docs/conceptos.md, section «{found[-1].where.split('«')[1].split('»')[0]}», "
        f"{found[-1].where.split('», ')[1]} is excused with no-afirma («sobre esta página — una "
        "frase») but states what the runtime does («El journal guarda»: «El journal guarda cada "
        "paso antes de entregarlo.»). Give it a claim id and an assertion that checks it, or "
        "say it without the runtime"
    )
    assert runtime_excuses(page_claim_blocks(CONCEPTOS)) == []


@pytest.mark.parametrize(
    "row",
    [
        "| `LocalGateway` | ejecuta las herramientas en este proceso",
        "`SqliteCheckpointer` guarda cada evento en su fichero.",
    ],
)
def test_a_class_of_the_package_doing_something_is_a_runtime_sentence(row: str) -> None:
    # the subject is a class the package exports, in a table's first cell or in the sentence
    said = runtime_statement(row)
    assert said is not None and said.split()[0] in ("LocalGateway", "SqliteCheckpointer")


def test_a_no_afirma_reason_not_in_the_list() -> None:
    path, text = a_page_with("Una frase cualquiera. <!-- no-afirma: porque sí -->")
    found = page_claim_blocks(path, text)
    assert first_line(reason_problems(found)) == (
        f"docs/conceptos.md, {found[-1].where} («Una frase cualquiera.»): the no-afirma reason "
        "«porque sí» is not in the list: give one of «instrucciones», «enlace», «narra el "
        "código», «sobre esta página», «definición», «sobre la plataforma», optionally followed "
        "by «—» and your own words"
    )
    assert reason_problems(page_claim_blocks(CONCEPTOS)) == []


def test_the_reasons_are_the_fixed_keys_alone_or_with_words() -> None:
    assert all(reason_problem(key) is None for key in NO_CLAIM_REASONS)
    assert reason_problem("instrucciones") is None
    assert reason_problem("instrucciones — cómo correrlo") is None
    assert reason_problem("instrucciones —") is not None
    assert reason_problem("instrucciones para correrlo") is not None


def _checks_nothing() -> None:
    assert True


def _checks_the_run() -> dict[str, int]:
    eventos = len(["intentado", "completado"])
    assert eventos == 2
    return {"eventos": eventos}


def test_a_registered_test_that_asserts_a_literal_checks_nothing() -> None:
    from scripts.claims import vacuous_registered

    assert vacuous_registered({"99.nada": _checks_nothing}) == [
        "the registered test of 99.nada (_checks_nothing): «assert True» checks nothing"
    ]
    assert vacuous_registered({"99.algo": _checks_the_run}) == []


def test_what_counts_as_a_number_and_what_is_exempt() -> None:
    from scripts.claims import checked_fragments, checked_numbers

    said = (
        "El 02 y el cuaderno 14 (y el 06, el 08 y el 19) guardan 4 eventos, 4.200,00 € y "
        "0,5 s en la 1ª vuelta; A2A, SHA-256, UTF-8, win32, 5xx, `000001-tool`, "
        "`-p tope 16`, [09](propiedades/09_contexto.ipynb), https://x.org/2024/1 y "
        "«herramienta ×1» no; los cuadernos (00, 02 y 17) tampoco; «sin medir» es una palabra."
    )
    assert checked_numbers(said) == ["4", "4.200,00", "0,5", "1"]
    assert checked_fragments(said) == ["herramienta ×1"]
    assert checked_fragments("la celda imprime `modelo ×0` y «1 evento»") == [
        "1 evento",
        "modelo ×0",
    ]


def test_the_update_shows_each_claim_beside_its_assertions() -> None:
    from scripts.claims import assertion_sources

    [in_02] = assertion_sources("02.cerrado")
    assert in_02.startswith(
        'notebooks/propiedades/02_durabilidad.ipynb, cell 18:\nafirma(\n    "02.cerrado",\n'
    )
    assert assertion_sources("limites.solo-stdlib") == [
        "tests/docs/afirmaciones_md.py: _el_nucleo_solo_usa_la_biblioteca_estandar"
    ]
