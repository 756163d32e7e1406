"""Files the pages link to are on the site: each notebook's helper module (`_nombre_NN.py`, the
child process of notebook NN) is published beside that notebook's page, byte for byte."""

from __future__ import annotations

from pathlib import Path

from scripts.pages import PROPERTY_NOTEBOOKS, page_url


def test_each_notebook_helper_is_published_beside_its_notebook(built_site: Path) -> None:
    helpers = sorted(PROPERTY_NOTEBOOKS.glob("_*_[0-9][0-9].py"))
    assert helpers, "no helper modules in notebooks/propiedades/"
    for helper in helpers:
        owners = sorted(PROPERTY_NOTEBOOKS.glob(f"{helper.stem[-2:]}_*.ipynb"))
        assert owners, f"{helper.name} belongs to no notebook"
        for owner in owners:
            published = built_site / page_url(owner) / helper.name
            assert published.read_bytes() == helper.read_bytes(), f"{published} is missing"
