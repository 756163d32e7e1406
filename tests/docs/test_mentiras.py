"""The 24 ways a page lied past the check (issue 12), kept as regression cases.

Each case applies one lie to a temporary copy — of notebook 02 (in memory, or written into a
copy of `notebooks/` when it has to run), of a Markdown page's text, of the README, of
`mkdocs.yml` — never to the real tree, runs the check that must catch it, and asserts the
first line of the failure. The lies that need the browser or a built site (the theme's
JavaScript and CSS, the block inside `<div hidden>` as rendered, a broken link inside a
notebook) are in tests/site/test_mentiras_en_el_navegador.py. Four lies are about words that
are not output (a false *Lo que esto enseña* bullet, a prose cell, a title, an inverted
glossary entry): each keeps its claim id, and the claims check catches it because the words
are no longer the words recorded beside their assertion (scripts/claims.py, `unreviewed`).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from scripts.claims import notebook_marked_blocks, page_claim_blocks, unreviewed
from scripts.kernel import run_notebooks_sync
from scripts.normalization import Rule, normalize
from scripts.pages import (
    DOCS,
    NOTEBOOKS,
    REPO,
    expected_block,
    mismatch,
    page_problems,
    read_notebook,
    source_of,
    text_problems,
)
from scripts.site import nav_titles
from tests.docs.test_normalization import description_problems, rule_problems

NOTEBOOK_02 = NOTEBOOKS / "propiedades" / "02_durabilidad.ipynb"
N02 = "notebooks/propiedades/02_durabilidad.ipynb"


def copy_of_02() -> dict[str, Any]:
    return json.loads(json.dumps(read_notebook(NOTEBOOK_02)))


def cell_index(notebook: dict[str, Any], cell_id: str) -> int:
    return next(i for i, c in enumerate(notebook["cells"]) if c.get("id") == cell_id)


def block_cell(notebook: dict[str, Any]) -> dict[str, Any]:
    return notebook["cells"][expected_block(notebook).cell_index]


def lied_block(notebook: dict[str, Any]) -> str:
    """The block's text with the lie every case tells: a tool that ran once ran zero times."""
    return expected_block(notebook).text.replace("herramienta ×1", "herramienta ×0")


def first_line(problems: list[str]) -> str:
    assert problems, "the check found nothing: the lie got through"
    line = problems[0].splitlines()[0]
    print(f"first line: {line}")  # `pytest -s` lists each lie with its failure
    return line


def markdown_cell(source: str, cell_id: str, **extra: Any) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source, **extra}


# ── The page itself: one block, nothing else that looks like output ─────────


def test_mentira_03_the_true_block_inside_a_hidden_div_and_a_false_one_visible() -> None:
    notebook = copy_of_02()
    cell = block_cell(notebook)
    true = expected_block(notebook).text
    cell["source"] = (
        f"## Lo que imprime\n\n<div hidden>\n\n```text\n{true}```\n\n</div>\n\n"
        f"```text\n{lied_block(notebook)}```"
    )
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f'{N02}: cell 2 (id "lo-que-imprime") has raw HTML <div hidden>; property notebooks '
        "write Markdown only (HTML can hide the block or imitate an output area)"
    )


def test_mentira_05_a_raw_cell_that_imitates_an_output_area() -> None:
    notebook = copy_of_02()
    at = cell_index(notebook, "primera-vuelta") + 1
    notebook["cells"].insert(
        at,
        {
            "cell_type": "raw",
            "id": "salida-falsa",
            "metadata": {},
            "source": (
                '<div class="jp-OutputArea-output"><pre>modelo ×1 · herramienta ×0</pre></div>'
            ),
        },
    )
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f'{N02}: cell {at} (id "salida-falsa") is a raw cell; property notebooks have none '
        "(the site renders its HTML as is, so it can show output the notebook never printed)"
    )


def test_mentira_06_an_attachment_that_pictures_a_false_output() -> None:
    notebook = copy_of_02()
    at = cell_index(notebook, "primera-vuelta") + 1
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>herramienta ×0</text></svg>'
    notebook["cells"].insert(
        at,
        markdown_cell(
            "![](attachment:salida.svg)",
            "salida-dibujada",
            attachments={"salida.svg": {"image/svg+xml": svg}},
        ),
    )
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f'{N02}: cell {at} (id "salida-dibujada") has attachments (salida.svg); property '
        "notebooks have none (a picture can show any output)"
    )


def test_mentira_07_a_second_lo_que_imprime_section() -> None:
    notebook = copy_of_02()
    at = cell_index(notebook, "cierre") + 1
    notebook["cells"].insert(
        at, markdown_cell(f"## Lo que imprime\n\n```text\n{lied_block(notebook)}```", "otra")
    )
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f"{N02}: 2 '## Lo que imprime' sections (cell 2 (id \"lo-que-imprime\"), cell {at} "
        '(id "otra")); a page has exactly one'
    )


def test_mentira_08_a_second_text_block_right_under_the_real_one() -> None:
    notebook = copy_of_02()
    cell = block_cell(notebook)
    cell["source"] = source_of(cell) + f"\n\n```text\n{lied_block(notebook)}```"
    assert re.fullmatch(
        rf"{N02}: 2 ```text blocks \(cell 2 \(id \"lo-que-imprime\"\) line 3, cell 2 \(id "
        r"\"lo-que-imprime\"\) line \d+\); a page has exactly one, under '## Lo que imprime'",
        first_line(page_problems(NOTEBOOK_02, notebook)),
    )


def test_mentira_17_a_cell_tag_that_hides_a_cell() -> None:
    notebook = copy_of_02()
    at = cell_index(notebook, "segunda-vuelta")
    notebook["cells"][at]["metadata"]["tags"] = ["remove_cell"]
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f"{N02}: cell {at} (id \"segunda-vuelta\") has the tag(s) ['remove_cell']; the only "
        "tags a property notebook uses are 'parameters' and 'verificacion' (a tag can make the "
        "renderer hide a cell)"
    )


def test_mentira_17b_the_verification_tag_on_a_cell_that_prints() -> None:
    # `verificacion` takes a cell off the page: on a cell that prints, the page would show
    # output whose code it hides (and here, a teaching cell the later cells depend on)
    notebook = copy_of_02()
    at = cell_index(notebook, "segunda-vuelta")
    notebook["cells"][at]["metadata"]["tags"] = ["verificacion"]
    notebook["cells"][at]["metadata"]["jupyter"] = {"source_hidden": True}
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f"{N02}: cell {at} (id \"segunda-vuelta\") has the tag 'verificacion' and checks no "
        "claim (no afirma call); the tag hides a cell from the page, and only for that"
    )
    notebook["cells"][at]["source"] = (
        source_of(notebook["cells"][at]) + "\nafirma('02.x', True, '')"
    )
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f"{N02}: cell {at} (id \"segunda-vuelta\") has the tag 'verificacion' and prints; what "
        "a page prints comes from cells the page shows"
    )


def test_mentira_17c_a_hidden_check_that_runs_before_a_cell_the_page_shows() -> None:
    # moved up, the verification cell could set what a shown cell then prints
    notebook = copy_of_02()
    check = notebook["cells"].pop(cell_index(notebook, "afirmaciones"))
    at = cell_index(notebook, "tercera-vuelta")
    notebook["cells"].insert(at, check)
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f'{N02}: cell {at + 1} (id "tercera-vuelta") comes after cell {at} (id "afirmaciones"), '
        "which has the tag 'verificacion'; a cell the page leaves out runs after every cell it "
        "shows, so it cannot change what they print"
    )


def test_mentira_17d_a_check_left_on_the_page_or_unfolded() -> None:
    notebook = copy_of_02()
    at = cell_index(notebook, "afirmaciones")
    del notebook["cells"][at]["metadata"]["jupyter"]
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f"{N02}: cell {at} (id \"afirmaciones\") has the tag 'verificacion' but is not folded in "
        "JupyterLab: give it metadata jupyter.source_hidden = true"
    )
    notebook["cells"][at]["metadata"] = {}
    assert first_line(page_problems(NOTEBOOK_02, notebook)) == (
        f"{N02}: cell {at} (id \"afirmaciones\") calls afirma but has no tag 'verificacion'; the "
        "cells that check claims are off the page and folded in JupyterLab"
    )


# ── Cómo correrlo: the commands are the ones the tests run ──────────────────


@pytest.mark.parametrize(
    ("number", "wrong", "right"),
    [
        (
            19,
            "jupyter lab notebooks/02_durabilidad.ipynb",
            f"jupyter lab {N02}",
        ),
        (
            20,
            "papermill --log-output \\\n",
            "papermill --cwd notebooks/propiedades --log-output \\\n",
        ),
    ],
    ids=[
        "mentira_19_jupyterlab_opens_a_path_that_does_not_exist",
        "mentira_20_papermill_without_cwd",
    ],
)
def test_mentira_a_wrong_command_in_como_correrlo(number: int, wrong: str, right: str) -> None:
    notebook = copy_of_02()
    cell = notebook["cells"][cell_index(notebook, "como-correrlo")]
    assert right in source_of(cell)
    cell["source"] = source_of(cell).replace(right, wrong)
    shown = wrong.replace(" \\\n", " \\")
    assert first_line(page_problems(NOTEBOOK_02, notebook)).startswith(
        f"{N02}: '## Cómo correrlo' shows commands that nothing runs: 'uv run --group lab "
        + shown.split(" \\")[0]
    )


# ── Output the check never saw: it runs the lied copy in a kernel ───────────


@pytest.fixture(scope="module")
def lied_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two copies of notebook 02 run in kernels, in a copy of `notebooks/`: one leaves a
    `threading.Timer` that prints a false line after the last cell; one prints a line and
    erases it with `clear_output`."""
    folder = tmp_path_factory.mktemp("mentiras") / "notebooks"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    lies = {
        "timer": (
            "import threading\n\n"
            "threading.Timer(5.0, lambda: print('  modelo ×1 · herramienta ×0')).start()"
        ),
        "borrada": (
            "from IPython.display import clear_output\n\n"
            "print('  la herramienta se ejecutó dos veces')\nclear_output()"
        ),
    }
    paths = {}
    for name, code in lies.items():
        notebook = copy_of_02()
        notebook["cells"].append(
            {
                "cell_type": "code",
                "id": f"mentira-{name}",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": code,
            }
        )
        path = folder / "propiedades" / f"02_{name}.ipynb"
        path.write_text(json.dumps(notebook), encoding="utf-8")
        paths[name] = path
    runs = run_notebooks_sync(list(paths.values()))
    return {name: (paths[name], run) for name, run in zip(paths, runs, strict=True)}


def test_mentira_09_a_timer_that_prints_after_the_last_cell_is_idle(lied_runs) -> None:
    path, run = lied_runs["timer"]
    report = mismatch(path, read_notebook(path), run)
    assert report.splitlines()[0].endswith("cannot be checked: its run failed.")
    assert re.fullmatch(
        r"the notebook leaves threads running after its last cell \(after cell \d+ \(id "
        r"\"mentira-timer\"\)\): Thread-\d+; whatever they print later reaches JupyterLab, not "
        r"the page: join them",
        first_line(run.problems()),
    )


def test_mentira_10_a_line_printed_then_erased_with_clear_output(lied_runs) -> None:
    path, run = lied_runs["borrada"]
    assert re.fullmatch(
        r"cell \d+ \(id \"mentira-borrada\"\) calls clear_output: JupyterLab erases what it "
        r"printed and the page cannot; print only what stays",
        first_line(run.problems()),
    )


# ── Normalisation: a rule that lies, the README saying the list is empty ────


def test_mentira_04_a_normalisation_rule_that_turns_x1_into_x0() -> None:
    lie = Rule(
        "herramienta",
        "herramienta ×1",
        "herramienta ×0",
        "la herramienta no cuenta",
        example="herramienta ×1",
    )
    block = expected_block(read_notebook(NOTEBOOK_02)).text
    assert normalize(block, (lie,)) == lied_block(read_notebook(NOTEBOOK_02))  # it would pass
    assert rule_problems((lie,)) == []  # it has a reason and an example: that alone is not enough
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert first_line(description_problems((lie,), readme, "README.md")) == (
        "README.md does not describe the normalisation list as it is: it must say «Tiene 1 "
        "regla: `herramienta`, la herramienta no cuenta» (scripts/normalization.py has 1 rule(s))"
    )


# ── Markdown pages: quoted output, names, variables, Python ─────────────────


def conceptos_with(old: str, new: str) -> str:
    text = (DOCS / "conceptos.md").read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new, 1)


def test_mentira_11_conceptos_quotes_3_events_where_02_prints_4() -> None:
    original = (DOCS / "conceptos.md").read_text(encoding="utf-8")
    text, told = re.subn(r"encuentra 4(\s+)eventos", r"encuentra 3\1eventos", original, count=1)
    assert told == 1
    line = text[: text.index("encuentra 3")].count("\n") + 1
    assert first_line(text_problems("docs/conceptos.md", text, markdown_page=True)) == (
        f"docs/conceptos.md line {line} quotes {N02} as «3», but its block prints «4» "
        "('journal: 4 eventos')"
    )


def test_mentira_12_conceptos_draws_the_second_run_paying_the_tool_again() -> None:
    old = 'x="354" y="312" text-anchor="middle">herram. ×0<'
    text = conceptos_with(old, old.replace("×0", "×1"))
    line = text[: text.index('x="354" y="312"')].count("\n") + 1
    assert re.fullmatch(
        rf"docs/conceptos\.md line {line} quotes {N02} as «1», but its block prints «0» "
        r"\('2ª vuelta\s+modelo ×1 · herramienta ×0'\)",
        first_line(text_problems("docs/conceptos.md", text, markdown_page=True)),
    )


NAV_ENTRY_02 = '      - "02 · Durabilidad": propiedades/02_durabilidad.ipynb\n'


def nav_with(tmp_path: Path, entry: str) -> Path:
    """A copy of mkdocs.yml whose nav entry for 02 is `entry`."""
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert NAV_ENTRY_02 in config
    lied = tmp_path / "mkdocs.yml"
    lied.write_text(config.replace(NAV_ENTRY_02, entry), encoding="utf-8")
    return lied


def test_mentira_16_a_nav_label_that_is_not_the_page_title(tmp_path: Path) -> None:
    lied = nav_with(tmp_path, '      - "02 · Reanudar gratis": propiedades/02_durabilidad.ipynb\n')
    assert first_line(nav_titles(lied, DOCS)) == (
        "the nav labels propiedades/02_durabilidad.ipynb '02 · Reanudar gratis'; a notebook's "
        "label is its file name spelled for a reader, '02 · Durabilidad' (accents welcome), so "
        "it names the page and claims nothing"
    )


def test_mentira_16_a_short_label_that_points_at_another_page(tmp_path: Path) -> None:
    lied = nav_with(tmp_path, '      - "03 · Aprobación": propiedades/02_durabilidad.ipynb\n')
    assert first_line(nav_titles(lied, DOCS)).startswith(
        "the nav labels propiedades/02_durabilidad.ipynb '03 · Aprobación'; a notebook's label "
        "is its file name spelled for a reader, '02 · Durabilidad'"
    )


def test_a_notebook_entry_without_a_label_is_asked_for_one(tmp_path: Path) -> None:
    lied = nav_with(tmp_path, "      - propiedades/02_durabilidad.ipynb\n")
    assert first_line(nav_titles(lied, DOCS)) == (
        "the nav gives propiedades/02_durabilidad.ipynb no label, so it shows the notebook's "
        'whole title (2-4 lines); write `- "02 · Durabilidad": propiedades/02_durabilidad.ipynb` '
        "(its file name spelled for a reader; accents welcome)"
    )


def test_mentira_22_a_misspelt_environment_variable() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lied = readme.replace("`SYNAPTUM_BASE_URL`", "`SYNAPTUM_BASE_URI`", 1)
    assert lied != readme
    assert first_line(text_problems("README.md", lied, markdown_page=False)) == (
        "README.md names environment variables that nothing reads: ['SYNAPTUM_BASE_URI'] "
        "(the rule is in scripts/pages.py, known_variables)"
    )


def test_mentira_23_a_method_the_agent_lacks_in_a_fenced_block() -> None:
    notebook = copy_of_02()
    cell = notebook["cells"][cell_index(notebook, "sobre-la-segunda-vuelta")]
    cell["source"] = source_of(cell) + (
        "\n\n```python\nasync for trozo in agente.stream_text(tarea):\n    print(trozo)\n```"
    )
    markdown = "\n\n".join(source_of(c) for c in notebook["cells"] if c["cell_type"] == "markdown")
    code = "\n\n".join(source_of(c) for c in notebook["cells"] if c["cell_type"] == "code")
    assert first_line(text_problems(N02, markdown, code, markdown_page=False)) == (
        f"{N02} names what synaptum_lite does not have: ['agente.stream_text (Agent.stream_text)']"
    )


def test_mentira_24_python_on_a_page_that_is_not_the_code_that_runs() -> None:
    include = '```python\n--8<-- "tests/ejemplos/test_conceptos.py:bucle"\n```'
    typed = (
        '```python\nagente = Agent("cajero", model="...", tools=[consultar_saldo])\n'
        'sesion = Session("pedido-42", gateway, SqliteCheckpointer("runs.db"))\n'
        'pasos = await agente.run("¿Cuánto hay?", session=sesion)\n```'
    )
    text = conceptos_with(include, typed)
    line = text[: text.index(typed)].count("\n") + 1
    assert first_line(text_problems("docs/conceptos.md", text, markdown_page=True)) == (
        f"docs/conceptos.md line {line} shows ```python typed on the page, not code that runs: "
        'include it from a test with --8<-- "tests/…/test_….py:section"'
    )


# ── Words that are not output: each keeps its id, and its words change ───────

PAGE_02 = (
    f"{N02} (page «02 · Matar el proceso a mitad y reanudar sin volver a pagar la inferencia»)"
)
REVIEW = "then record the words with `uv run python -m scripts.claims --actualiza`."


def with_words_changed(cell_id: str, true: str, false: str) -> dict[str, Any]:
    notebook = copy_of_02()
    cell = notebook["cells"][cell_index(notebook, cell_id)]
    assert source_of(cell).count(true) == 1
    cell["source"] = source_of(cell).replace(true, false)
    return notebook


def test_mentira_13_a_false_bullet_of_lo_que_esto_ensena_under_its_true_id() -> None:
    notebook = with_words_changed(
        "lo-que-esto-ensena",
        "Un run cerrado devuelve su paso final y no llama a nadie.",
        "Un run cerrado vuelve a llamar al modelo para confirmar su paso final.",
    )
    assert first_line(unreviewed(notebook_marked_blocks(NOTEBOOK_02, notebook))) == (
        f"{PAGE_02}, *Lo que esto enseña*, bullet 3: the words of claim 02.cerrado are not the "
        "words last reviewed (now «Un run cerrado vuelve a llamar al modelo para confirmar su "
        "paso final…», reviewed «Un run cerrado devuelve su paso final y no llama a nadie…»). "
        f"Review: re-read the assertion of 02.cerrado and make it check what the words now say; "
        f"{REVIEW}"
    )


def test_mentira_14_a_false_prose_cell_under_its_true_id() -> None:
    notebook = with_words_changed(
        "sobre-la-segunda-vuelta",
        "Lo que no se vuelve a\nhacer es lo que ya está en el journal.",
        "Lo que ya está en el\njournal se vuelve a hacer, por si acaso.",
    )
    assert first_line(unreviewed(notebook_marked_blocks(NOTEBOOK_02, notebook))) == (
        f'{PAGE_02}, cell 12 (id "sobre-la-segunda-vuelta"), block 1: the words of claim '
        "02.no-repaga are not the words last reviewed (now «…con el mismo `run_id`. Lo que ya "
        "está en el journal se vuelve a hacer, por si a…», reviewed «…con el mismo `run_id`. Lo "
        "que no se vuelve a hacer es lo que ya está en el jour…»). Review: re-read the "
        f"assertion of 02.no-repaga and make it check what the words now say; {REVIEW}"
    )


def test_mentira_15_a_false_title_which_is_also_the_nav_label_under_its_true_id() -> None:
    notebook = with_words_changed(
        "titulo", "y reanudar sin volver a pagar", "y reanudar pagando otra vez"
    )
    lied = "02 · Matar el proceso a mitad y reanudar pagando otra vez la inferencia"
    assert first_line(unreviewed(notebook_marked_blocks(NOTEBOOK_02, notebook))) == (
        f"{N02} (page «{lied}»), its title: the words of claim 02.no-repaga are not the words "
        "last reviewed (now «…el proceso a mitad y reanudar pagando otra vez…», reviewed «…el "
        "proceso a mitad y reanudar sin volver a pagar…»). Review: re-read the assertion of "
        f"02.no-repaga and make it check what the words now say; {REVIEW}"
    )


def test_mentira_18_an_inverted_glossary_entry_under_its_true_id() -> None:
    glosario = DOCS / "glosario.md"
    true = "Un run con paso final. Llamarlo otra vez devuelve ese paso y no llama a nadie."
    text = glosario.read_text(encoding="utf-8")
    assert text.count(true) == 1
    lied = text.replace(true, "Un run con paso final. Llamarlo otra vez lo vuelve a recorrer.")
    assert first_line(unreviewed(page_claim_blocks(glosario, lied))) == (
        "docs/glosario.md, section «El run», table row 12: the words of claim 02.cerrado are not "
        "the words last reviewed (now «…paso final. Llamarlo otra vez lo vuelve a recorrer…», "
        "reviewed «…paso final. Llamarlo otra vez devuelve ese paso y no llama a nadie…»). "
        "Review: re-read the assertion of 02.cerrado and make it check what the words now say; "
        f"{REVIEW}"
    )
