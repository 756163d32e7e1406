"""The pages that say which property pages do not run in the browser name exactly those the
site serves without the button (`scripts.navegador.NEEDS_A_PROCESS`)."""

from __future__ import annotations

import pytest

from scripts.navegador import NEEDS_A_PROCESS
from scripts.pages import DOCS, REPO, notebooks_named

SAYING = {
    REPO / "README.md": r"las páginas ([\d, y]+) necesitan procesos de verdad",
    DOCS / "probar.md": r"Las páginas ([\d, y]+) no se ejecutan en el navegador",
}


@pytest.mark.parametrize("page", sorted(SAYING), ids=lambda path: path.name)
def test_the_pages_named_as_needing_a_process_are_the_ones_without_the_button(page) -> None:
    named = notebooks_named(SAYING[page], page.read_text(encoding="utf-8"))
    assert named is not None, f"{page.name} no longer says which pages need real processes"
    assert named == sorted(name[:2] for name in NEEDS_A_PROCESS), (named, sorted(NEEDS_A_PROCESS))
