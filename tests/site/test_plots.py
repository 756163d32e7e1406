"""The plots of *Rendimiento* read in both of the site's colour schemes.

They were PNG-like white boxes with black text in dark mode: matplotlib's SVG in an `<img>`,
which cannot see the page's colours. Now benchmarks/page.py writes SVG whose colours are the
site's CSS variables and the page includes it inline. Chromium opens the page with the
reader's system set to light and to dark (Material follows it, as a first-time reader sees
it) and measures, against the page's background: every text of each plot (contrast 4.5:1 or
more), every contender's line (3:1, WCAG's figure for graphics), and every filled shape larger
than a twentieth of the plot (none may stand out: that was the white box).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.site.chromium import Browser

#: bg, over() and contrast(), shared with the other colour check.
CONTRASTE = (Path(__file__).parent / "contraste.js").read_text(encoding="utf-8")

#: Runs in the page: the plots' colours, each composited over the page's background, and the
#: contrast ratio of each against it (WCAG 2's relative luminance).
MEASURE = (
    "(() => {\n"
    + CONTRASTE
    + r"""  const plots = [];
  for (const svg of document.querySelectorAll('figure.rendimiento > svg')) {
    const box = svg.getBoundingClientRect();
    const found = {name: svg.getAttribute('class'), texts: [], lines: [], shapes: []};
    for (const el of svg.querySelectorAll('text')) {
      const style = getComputedStyle(el), fill = parse(style.fill);
      const opacity = +style.opacity * +style.fillOpacity;
      if (fill) found.texts.push([el.textContent, contrast(over(fill, opacity))]);
    }
    for (const el of svg.querySelectorAll('path, use, rect')) {
      const style = getComputedStyle(el), stroke = parse(style.stroke), fill = parse(style.fill);
      const own = (el.getAttribute('style') || '').includes('--' + found.name + '-');
      const name = el.id || el.tagName;
      if (own && stroke) found.lines.push([name, contrast(over(stroke, +style.strokeOpacity))]);
      const r = el.getBoundingClientRect();
      if (fill && fill[3] > 0 && r.width * r.height > box.width * box.height / 20)
        found.shapes.push([name, contrast(over(fill, +style.fillOpacity))]);
    }
    plots.push(found);
  }
  return JSON.stringify({background: bg, plots});
})()
"""
)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_plot_of_rendimiento_reads_on_the_page_background(
    scheme: str, base_url: str, browser: Browser
) -> None:
    with browser.tab() as tab:
        tab.send("Page.enable")
        tab.send(
            "Emulation.setEmulatedMedia",
            features=[{"name": "prefers-color-scheme", "value": scheme}],
        )
        tab.load(
            base_url + "rendimiento/",
            1280,
            800,
            mobile=False,
            deadline=time.monotonic() + browser.timeout,
        )
        time.sleep(0.3)
        result = tab.send("Runtime.evaluate", expression=MEASURE, returnByValue=True)
    seen = json.loads(result["result"]["value"])
    plots = seen["plots"]
    assert [plot["name"] for plot in plots] == ["rendimiento-almacen", "rendimiento-cpu"], (
        'rendimiento/ must show its two plots inline, in <figure class="rendimiento"> (an '
        "<img> cannot take the page's colours)"
    )
    problems = []
    for plot in plots:
        assert plot["texts"] and plot["lines"], f"{plot['name']}: no text or no line measured"
        problems += [
            f"{plot['name']}: text {text!r} at {ratio:.1f}:1"
            for text, ratio in plot["texts"]
            if ratio < 4.5
        ]
        problems += [
            f"{plot['name']}: line {name} at {ratio:.1f}:1"
            for name, ratio in plot["lines"]
            if ratio < 3
        ]
        problems += [
            f"{plot['name']}: a filled shape ({name}) stands out from the page at {ratio:.1f}:1"
            for name, ratio in plot["shapes"]
            if ratio > 1.2
        ]
    assert problems == [], (
        f"on the {scheme} scheme (page background rgb{tuple(seen['background'][:3])}): "
        + "; ".join(problems)
    )
