"""The real model's excerpt on Modelos: written by its command, shaped as the notebooks print.

Runs without a model: it reads the committed page. What the model said is not compared with
anything (another run may say something else); what is checked is that the excerpt is the
command's (`scripts.captura_modelo.excerpt` writes it again, the same), that it holds the two
notebooks with the titles they print, that their header names a server, not the double, and
that the answers it shows are Spanish, as the page says.
"""

from __future__ import annotations

from scripts.captura_modelo import (
    FIN,
    INICIO,
    NOTEBOOKS,
    PAGE,
    answer_of,
    blocks_of,
    excerpt,
    language_of,
    model_of,
)
from scripts.pages import expected_block, property_notebooks, read_notebook

PAGE_TEXT = PAGE.read_text(encoding="utf-8")


def test_modelos_has_one_captured_excerpt_and_it_is_what_the_command_writes() -> None:
    assert PAGE_TEXT.count(INICIO) == 1 and PAGE_TEXT.count(FIN) == 1
    blocks = blocks_of(PAGE_TEXT)
    start, end = PAGE_TEXT.index(INICIO), PAGE_TEXT.index(FIN) + len(FIN)
    assert list(blocks) == list(NOTEBOOKS)
    assert PAGE_TEXT[start:end] == excerpt(blocks, model_of(PAGE_TEXT)), (
        "the excerpt on Modelos was edited by hand: rewrite it with "
        "`uv run --extra http python -m scripts.captura_modelo`"
    )


def test_each_captured_block_is_its_notebook_run_on_a_server_not_on_the_double() -> None:
    paths = {path.stem: path for path in property_notebooks()}
    for stem, text in blocks_of(PAGE_TEXT).items():
        page_lines = expected_block(read_notebook(paths[stem])).text.splitlines()
        title = next(line for line in page_lines if line)
        lines = text.splitlines()
        assert lines[0] == title, (stem, lines[0])
        assert lines[1] == "─" * len(title), stem
        assert lines[2].startswith("HTTP directo · http://"), (stem, lines[2])
        assert text != "\n".join(page_lines).strip("\n"), f"{stem}: that is the double's output"


def test_the_captured_answers_are_in_spanish_as_the_page_says() -> None:
    answers = {stem: answer_of(stem, text) for stem, text in blocks_of(PAGE_TEXT).items()}
    assert all(answers.values()), answers
    assert {stem: language_of(answer or "") for stem, answer in answers.items()} == dict.fromkeys(
        NOTEBOOKS, "es"
    ), answers


def test_the_language_of_an_answer_is_read_from_its_common_words() -> None:
    assert language_of("El saldo de ES91 2100 0418 45 es de 4.200,00 €.") == "es"
    assert language_of("The balance of ES91 2100 0418 45 is 4.200,00 €.") == "en"
    assert language_of("Valencia está a 18°C, despejado.") == "es"
    assert language_of("¡Perfecto! ¿Cómo puedo ayudarte hoy?") == "es"
    assert language_of("Valencia is at 18°C, clear.") == "en"
    assert language_of("4.200,00 €") == "?"
