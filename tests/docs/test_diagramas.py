"""The site's diagrams are generated, not drawn: `scripts/diagramas.py` writes them, and what is
committed is exactly what it writes now (the seams are read from the notebooks, the journal
row from a real SQLite file)."""

from __future__ import annotations

import re

import pytest

from scripts import diagramas
from scripts.pages import DOCS, REPO


@pytest.mark.parametrize("name", sorted(diagramas.FIGURES))
def test_a_committed_diagram_is_what_the_script_draws_now(name: str) -> None:
    committed = (diagramas.FOLDER / name).read_text(encoding="utf-8")
    assert committed == diagramas.FIGURES[name](), (
        f"docs/diagramas/{name} is not what scripts/diagramas.py draws: "
        "run `uv run python -m scripts.diagramas`"
    )


@pytest.mark.parametrize("name", sorted(diagramas.FIGURES))
def test_a_diagram_takes_its_colours_from_the_theme_or_has_one_for_each_scheme(name: str) -> None:
    svg = (diagramas.FOLDER / name).read_text(encoding="utf-8")
    style = re.search(r"<style>(.*)</style>", svg, re.S).group(1)
    outside_style = svg.replace(style, "")
    assert not re.search(r"\b(?:fill|stroke)=", outside_style), "a colour outside the CSS"
    for rule in re.findall(r"[^{}]*\{[^}]*\}", style):
        colours = re.findall(r"#[0-9a-fA-F]{3,6}\b", re.sub(r"var\([^)]*\)", "", rule))
        if colours:  # a colour of its own must be redefined for the dark scheme
            selector = rule.split("{")[0].strip()
            dark = f'[data-md-color-scheme="slate"] {selector}'
            assert selector.startswith("[data-md-color-scheme") or dark in style, rule


def test_every_diagram_is_on_a_page() -> None:
    pages = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md"))
    for name in diagramas.FIGURES:
        assert f'--8<-- "docs/diagramas/{name}"' in pages, f"no page includes {name}"


def test_the_seams_name_the_notebooks_whose_code_does_it() -> None:
    found = dict(diagramas.touches(diagramas.CHECKPOINTER_TOUCHES))
    assert found["un solo conductor (RunBusy)"] == ["08"]
    assert "16" in found["exportar e importar un run"]


def test_the_command_writes_the_committed_files_and_its_check_mode_finds_a_stale_one(
    tmp_path, monkeypatch
) -> None:
    # `uv run python -m scripts.diagramas`, as the README shows it, on a copy of the folder
    monkeypatch.setattr(diagramas, "FOLDER", tmp_path / "docs" / "diagramas")
    monkeypatch.setattr(diagramas, "COPIES", tmp_path / "propiedades" / "figuras")
    assert diagramas.main([]) == 0
    for name in diagramas.FIGURES:
        committed = (REPO / "docs" / "diagramas" / name).read_bytes()
        assert (diagramas.FOLDER / name).read_bytes() == committed, name
        assert (diagramas.COPIES / name).read_bytes() == committed, name
        beside = REPO / "notebooks" / "propiedades" / "figuras" / name
        assert beside.read_bytes() == committed, f"{beside} is not the copy of docs/diagramas"
    assert diagramas.main(["--check"]) == 0
    (diagramas.COPIES / "fila.svg").write_text("<svg/>\n", encoding="utf-8")
    assert diagramas.main(["--check"]) == 1
