"""The site's diagrams are generated, not drawn: `scripts/diagramas.py` writes them, and what is
committed is exactly what it writes now (the phases and the rules of a resume are what the
runtime does when it is run through each case, the seams are read from the notebooks, the
journal row from a real SQLite file)."""

from __future__ import annotations

import re

import pytest

from scripts import diagramas
from scripts.pages import DOCS, REPO
from synaptum_lite import Phase


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


def test_the_phases_figure_says_what_the_runtime_does_now() -> None:
    svg = (diagramas.FOLDER / "fases.svg").read_text(encoding="utf-8")
    assert diagramas.phase_problems(svg) == []
    # every box that states a rule says so in data-* (what the check reads), and the cycle
    # of a step is all three phases of the core's enum, drawn or decided
    facts = diagramas.drawn_facts(svg)
    assert [b["fase"] for b in facts if "ciclo" in b] == ["attempted", "completed"]
    assert {b["fase"] for b in facts if "fase" in b} == {p.value for p in Phase}


def test_the_rules_are_observed_from_the_runtime() -> None:
    rules = diagramas.observe()
    assert rules.after_crash == {
        "model": ("repeats", 2),
        "idempotent": ("repeats", 2),
        "not_idempotent": ("uncertain", None),
    }
    assert rules.uncertain_error == "UncertainEffect"
    assert (rules.not_started.phase, rules.not_started.by) == (Phase.RESOLVED, "runtime")
    assert (rules.record.phase, rules.after_record) == (Phase.COMPLETED, "replays")
    assert (rules.retry.phase, rules.after_retry) == (Phase.RESOLVED, "repeats")
    assert (rules.approval, rules.after_approval) == (Phase.ATTEMPTED, "suspends")
    assert rules.not_now.phase is Phase.RESOLVED


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
