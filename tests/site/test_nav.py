"""The navigation as a reader sees it: short labels, one line each, and the whole title on the
page.

The property pages' nav labels are their file names spelled for a reader (`06 · kill -9`;
mkdocs.yml, held there by tests/docs/test_pages.py). With the notebooks' titles as labels, the
sidebar took 2-4 lines per property page at 1280 px and 3-4 on a phone. Chromium opens one
property page at a desktop and a phone size and measures every page entry of the sidebar (on a
phone it sits in the closed drawer, laid out all the same); the page keeps its title whole, in
its first heading and in the browser's title bar.
"""

from __future__ import annotations

import json
import time

import pytest

from scripts.pages import NOTEBOOKS, page_url, read_notebook, title_of
from tests.site.chromium import READ_SIZES, Browser

NOTEBOOK = NOTEBOOKS / "propiedades" / "06_kill_9.ipynb"

#: For each entry of the sidebar that opens a page (not the active page's own contents):
#: its text and how many lines it takes; then the page's first heading and its title.
MEASURE = r"""
(() => {
  const entries = [];
  for (const link of document.querySelectorAll('.md-nav--primary .md-nav__link')) {
    if (link.closest('.md-nav--secondary') || link.getAttribute('href')?.startsWith('#')) continue;
    const text = (link.querySelector('.md-ellipsis') || link);
    const range = document.createRange();
    range.selectNodeContents(text);
    const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
    if (lines) entries.push([text.textContent.trim(), lines]);
  }
  const h1 = document.querySelector('.md-content h1');
  const heading = h1 ? h1.innerText.replace('¶', '').trim() : null;
  return JSON.stringify({entries, heading, title: document.title});
})()
"""


@pytest.mark.parametrize("size", READ_SIZES)
def test_every_nav_entry_takes_one_line_and_the_page_keeps_its_whole_title(
    size: str, base_url: str, browser: Browser
) -> None:
    width, height, mobile = READ_SIZES[size]
    with browser.tab() as tab:
        tab.send("Page.enable")
        tab.load(
            base_url + page_url(NOTEBOOK),
            width,
            height,
            mobile=mobile,
            deadline=time.monotonic() + browser.timeout,
        )
        tab.send("Runtime.evaluate", expression="document.fonts.ready", awaitPromise=True)
        time.sleep(0.3)
        result = tab.send("Runtime.evaluate", expression=MEASURE, returnByValue=True)
    seen = json.loads(result["result"]["value"])
    pages = [text for text, _ in seen["entries"] if text[:2].isdigit()]
    assert len(pages) >= 16, f"the sidebar shows {len(pages)} property pages: {seen['entries']}"
    long = [f"{text!r}: {lines} lines" for text, lines in seen["entries"] if lines > 1]
    assert long == [], f"nav entries over one line at {width} px: {long}"
    title = title_of(read_notebook(NOTEBOOK)).replace("`", "")
    assert seen["heading"] == title, f"the page's first heading is {seen['heading']!r}"
    assert seen["title"].startswith(title), f"the browser's title bar says {seen['title']!r}"
