"""The figures of docs/diagramas/ stand where a learner needs them, and read in both schemes.

*Figuras* shows the three; *Conceptos* shows them too (the journal row under the journal's
rules, the phases beside the resume rules, the seams), and notebooks 05 and 16 show the phases
and the row as a Markdown image, which the site's hook turns into the SVG itself
(docs/_hooks/notebooks.py): an SVG in an `<img>` cannot read the page's colours, and its dark
text would sit on the dark background. Chromium opens each page with the reader's system set
to light and to dark, and measures every text of every figure against the page's background
(contrast 4.5:1 or more, WCAG's figure for text).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.site.chromium import Browser

#: bg, over() and contrast(), shared with the other colour check.
CONTRASTE = (Path(__file__).parent / "contraste.js").read_text(encoding="utf-8")

#: Each page, and the figures (their <title>) it shows, in order.
FIGURES = {
    "conceptos/": ["fila", "fases", "costuras"],
    "propiedades/05_efecto_incierto/": ["fases"],
    "propiedades/16_el_journal/": ["fila"],
}
TITLES = {
    "fases": "Las fases de un paso y quién lo mueve de una a otra",
    "costuras": "Las dos costuras: el gateway y el checkpointer, y qué cuaderno toca cada una",
    "fila": "Una fila del journal en SQLite, con lo que guarda cada columna",
}

#: Runs in the page: the scheme, and for each figure its title and the contrast of each of its
#: texts against the page's background (WCAG 2's relative luminance, colours composited over it).
MEASURE = (
    "(() => {\n"
    + CONTRASTE
    + r"""  const figures = [];
  for (const svg of document.querySelectorAll('article svg[role="img"]')) {
    const texts = [];
    for (const el of svg.querySelectorAll('text')) {
      const style = getComputedStyle(el), fill = parse(style.fill);
      const opacity = +style.fillOpacity * +style.opacity;
      if (fill) texts.push([el.textContent, contrast(over(fill, opacity))]);
    }
    figures.push({title: svg.querySelector('title').textContent, texts});
  }
  return JSON.stringify({scheme: document.body.getAttribute('data-md-color-scheme'), figures});
})()
"""
)


@pytest.mark.parametrize("page", list(FIGURES))
def test_a_page_shows_its_figures_inline_not_as_images(page: str, built_site: Path) -> None:
    html = (built_site / page / "index.html").read_text(encoding="utf-8")
    shown = re.findall(r'<svg viewBox="[^"]*" role="img"[^>]*>\s*<title[^>]*>([^<]*)</title>', html)
    assert [t for t in shown if t in TITLES.values()] == [TITLES[f] for f in FIGURES[page]]
    assert "diagramas/" not in "".join(re.findall(r"<img\b[^>]*>", html)), (
        f"{page}: a figure of docs/diagramas/ is an <img>, which cannot take the page's colours"
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_of_every_figure_reads_on_the_page_background(
    scheme: str, base_url: str, browser: Browser
) -> None:
    problems = []
    for page, names in FIGURES.items():
        with browser.tab() as tab:
            tab.send("Page.enable")
            # Material remembers a scheme in localStorage; a first-time reader has none
            tab.send("Storage.clearDataForOrigin", origin=base_url.rstrip("/"), storageTypes="all")
            tab.send(
                "Emulation.setEmulatedMedia",
                features=[{"name": "prefers-color-scheme", "value": scheme}],
            )
            deadline = time.monotonic() + browser.timeout
            tab.load(base_url + page, 1280, 800, mobile=False, deadline=deadline)
            time.sleep(0.3)
            result = tab.send("Runtime.evaluate", expression=MEASURE, returnByValue=True)
        seen = json.loads(result["result"]["value"])
        assert seen["scheme"] == {"light": "default", "dark": "slate"}[scheme], (page, seen)
        figures = [f for f in seen["figures"] if f["title"] in TITLES.values()]
        assert [f["title"] for f in figures] == [TITLES[n] for n in names], page
        for figure in figures:
            assert figure["texts"], f"{page}: no text measured in {figure['title']!r}"
            problems += [
                f"{page} {figure['title']!r}: text {text!r} at {ratio:.1f}:1"
                for text, ratio in figure["texts"]
                if ratio < 4.5
            ]
    assert problems == [], f"on the {scheme} scheme: " + "; ".join(problems)
