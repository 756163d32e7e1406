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


def test_notebook_pages_share_one_stylesheet_instead_of_inlining_it(built_site: Path) -> None:
    import re

    from scripts.pages import property_notebooks

    linked = set()
    for notebook in property_notebooks():
        page = (built_site / page_url(notebook) / "index.html").read_text(encoding="utf-8")
        styles = re.findall(r"<style[^>]*>(.*?)</style>", page, re.S)
        assert max(map(len, styles), default=0) < 50_000, f"{notebook.name} inlines a stylesheet"
        shared = r'<link rel="stylesheet" href="([^"]*assets/jupyter-[0-9a-f]+\.css)">'
        hrefs = re.findall(shared, page)
        assert len(hrefs) == 1, notebook.name
        stylesheet = (built_site / page_url(notebook) / hrefs[0]).resolve()
        assert stylesheet.stat().st_size > 50_000, f"{hrefs[0]} is not on the site"
        linked.add(stylesheet)
    assert len(linked) == 1  # one file, the same for every notebook page
