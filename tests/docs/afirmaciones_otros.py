"""The checks of the claims of *Otros sistemas*' section «Los ejemplos de Synaptum, uno a uno»:
upstream's sixteen examples, and four pieces, each beside the page or test of this kit that
shows the same. Imported by `afirmaciones_paginas`, which registers them.
"""

from __future__ import annotations

import importlib
import re

import synaptum_lite
from scripts import site
from scripts.pages import DOCS, PROPERTY_NOTEBOOKS, REPO, expected_block, read_notebook
from tests.docs.afirmaciones_md import afirmacion

PAGE = DOCS / "otros-sistemas.md"
SECTION = "## Los ejemplos de Synaptum, uno a uno"
SEED = REPO / "tests" / "core" / "seed_02_durabilidad.salida.txt"


def _rows(table: int) -> list[list[str]]:
    """The cells of each body row of the section's `table`-th table (0 or 1)."""
    text = PAGE.read_text(encoding="utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    tables: list[list[list[str]]] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.startswith("|")]
        if lines:
            tables.append([[cell.strip() for cell in line.strip("|").split("|")] for line in lines])
    rows = tables[table][2:]  # past the header and its rule
    return [[re.sub(r"\s*<!--.*?-->\s*", "", cell) for cell in row] for row in rows]


@afirmacion("otros.ejemplos")
def _los_dieciseis_ejemplos_con_su_pagina_aqui() -> dict:
    rows = _rows(0)
    files = [row[0].strip("`") for row in rows]
    agentes = [f for f in files if f.startswith("agentes/")]
    propiedades = [f for f in files if f.startswith("propiedades/")]
    # numbered in order, 01-12 and 01-04, and nothing else
    assert [f[len("agentes/") :][:2] for f in agentes] == [f"{n:02}" for n in range(1, 13)], files
    assert [f[len("propiedades/") :][:2] for f in propiedades] == ["01", "02", "03", "04"], files
    assert len(files) == len(agentes) + len(propiedades)
    labels = {page: label for label, page in site.nav_entries() if label}
    checked = []
    for row in rows:
        links = re.findall(r"\[([^\]]+)\]\((propiedades/[^)]+\.ipynb)\)", row[2])
        assert links, f"{row[0]}: no page of this kit beside it"
        for label, target in links:
            assert (PROPERTY_NOTEBOOKS / target.split("/", 1)[1]).exists(), target
            assert labels.get(target) == label, f"{target}: the nav says {labels.get(target)!r}"
            checked.append(label)
        assert row[3].startswith(("entero", "en parte: ")), row
    # the seed's own example: notebook 02 promises its block byte for byte
    seed = next(row for row in rows if row[0] == "`propiedades/02_durabilidad.py`")
    assert "02_durabilidad.ipynb" in seed[2] and "byte a byte" in seed[3]
    promised = expected_block(read_notebook(PROPERTY_NOTEBOOKS / "02_durabilidad.ipynb")).text
    assert promised == SEED.read_text(encoding="utf-8")
    partly = [row[0] for row in rows if row[3].startswith("en parte")]
    return {
        "ejemplos": len(files),
        "otros": len(files) - 1,
        "agentes": len(agentes),
        "propiedades": len(propiedades),
        "en_parte": len(partly),
        "ficheros": files,  # numbered as asserted above
        "paginas": checked,  # each its nav label, of a notebook that exists
    }


#: Each piece's row: the names it shows, and the tests that use them.
_PIECES = {
    "synaptum_lite.gateways.replay.ReplayGateway": ("tests/http/test_grabaciones.py",),
    "synaptum_lite.gateways.recording.RecordingGateway": ("tests/http/test_grabaciones.py",),
    "synaptum_lite.stores.http_client.HttpCheckpointer": ("tests/core/test_http_store.py",),
    "Template": ("tests/core/test_prompt.py",),
    "Sampling": ("tests/core/test_prompt.py", "tests/http/test_sampling.py"),
}


@afirmacion("otros.piezas")
def _cuatro_piezas_con_su_nombre_y_sus_tests() -> dict:
    rows = _rows(1)
    shown = " ".join(row[1] + " " + row[2] for row in rows)
    for name, tests in _PIECES.items():
        assert f"`{name}`" in shown, f"the table no longer shows {name}"
        module, _, attribute = name.rpartition(".")
        found = getattr(importlib.import_module(module) if module else synaptum_lite, attribute)
        assert isinstance(found, type), name
        for test in tests:
            assert f"`{test}`" in shown, f"{name}: the table no longer names {test}"
            source = (REPO / test).read_text(encoding="utf-8")
            assert attribute in source, f"{test} does not use {attribute}"
    # the recordings are replayed with no server: their tests never ask for one
    recorded = (REPO / "tests/http/test_grabaciones.py").read_text(encoding="utf-8")
    assert "SYNAPTUM_LOCAL_MODEL" not in recorded and "mark.skip" not in recorded
    # the conformance suite through the server is *Escalar*'s claim, checked there
    from tests.docs.afirmaciones_md import run_registered

    assert run_registered("escalar.http-conformidad")["casos"] > 0
    return {"piezas": len(rows)}
