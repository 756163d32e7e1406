"""The site as a person sees it: headless Chromium opens the built pages, served over HTTP from
this machine, at a desktop size and a phone size.

Each page must load with no console errors, fetch nothing from another host (the site works
offline: no web fonts, no CDN), and on the phone not scroll sideways: the document is no wider
than the phone (`document.documentElement.scrollWidth <= 390`). Not `<= innerWidth`: a mobile
browser zooms out to fit a page that is too wide, and `innerWidth` grows with it (a 900 px
element gives scrollWidth 916 and innerWidth 916). A screenshot of each is saved in
`build/screenshots/` (gitignored), with a `report.json` of what was measured.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.pages import REPO
from tests.site.chromium import Browser, PageReport, frames, screenshot, unseen_text

SCREENSHOTS = REPO / "build" / "screenshots"

#: The pages looked at: the index, a property page (a notebook), and the pages whose content
#: is widest (the timeline diagram, the generated diagrams, the comparison with other systems,
#: the API signatures).
PAGES = {
    "inicio": "",
    "propiedad-01": "propiedades/01_bucle/",
    "propiedad-02": "propiedades/02_durabilidad/",
    "propiedad-06": "propiedades/06_kill_9/",
    "conceptos": "conceptos/",
    "figuras": "figuras/",
    "otros-sistemas": "otros-sistemas/",
    "referencia": "referencia/",
}
#: name → (width, height, mobile)
SIZES = {
    "escritorio": (1280, 800, False),
    "telefono": (390, 844, True),
}


@pytest.fixture(scope="module")
def measured() -> Iterator[dict[str, PageReport]]:
    reports: dict[str, PageReport] = {}
    yield reports
    if reports:
        summary = {
            name: {
                "url": r.url.split("/", 3)[-1] or "/",
                "size": f"{r.width}x{r.height}",
                "console_errors": r.console_errors,
                "scroll_width": r.scroll_width,
                "inner_width": r.inner_width,
                "client_width": r.client_width,
            }
            for name, r in sorted(reports.items())
        }
        (SCREENSHOTS / "report.json").write_text(json.dumps(summary, indent=1) + "\n")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_cleanly(
    page: str,
    size: str,
    built_site: Path,
    base_url: str,
    browser: Browser,
    measured: dict[str, PageReport],
) -> None:
    path = PAGES[page]
    assert (built_site / path / "index.html").exists(), f"the site has no page /{path}"
    width, height, mobile = SIZES[size]
    shot = SCREENSHOTS / f"{page}-{size}.png"
    report = browser.visit(base_url + path, width, height, mobile=mobile, screenshot=shot)
    measured[f"{page}-{size}"] = report

    assert report.console_errors == [], f"/{path} at {width}×{height}: console errors"
    elsewhere = [
        u
        for u in report.requests
        if u.startswith(("http:", "https:", "ws:", "wss:")) and not u.startswith(base_url)
    ]
    assert elsewhere == [], f"/{path} fetches from another host (the site must work offline)"
    if mobile:
        assert report.scroll_width <= width and report.inner_width == width, (
            f"/{path} scrolls sideways on a {width} px phone: scrollWidth "
            f"{report.scroll_width}, innerWidth {report.inner_width}"
        )
    assert shot.stat().st_size > 0


@pytest.mark.parametrize("size", SIZES)
def test_the_home_table_is_read_whole(size: str, base_url: str, browser: Browser) -> None:
    """The home page's table of properties: every cell's text within the table's box and the
    viewport, with no sideways scroll; on a phone its rows stack (sitio.css), each a card."""
    width, height, mobile = SIZES[size]
    with browser.tab() as tab:
        tab.send("Page.enable")
        deadline = time.monotonic() + browser.timeout
        tab.load(base_url, width, height, mobile=mobile, deadline=deadline)
        tab.send("Runtime.evaluate", expression="document.fonts.ready", awaitPromise=True)
        frames(tab)
        problems = unseen_text(tab, "article table")
        tab.send(
            "Runtime.evaluate",
            expression="document.querySelector('article table').scrollIntoView({block: 'start'})",
        )
        screenshot(tab, SCREENSHOTS / f"inicio-tabla-{size}.png")
    assert problems == [], f"the home table at {width}×{height}: " + "; ".join(problems)


def test_a_tab_behind_another_still_paints(base_url: str, browser: Browser) -> None:
    """A tab that another tab covers is hidden, and a hidden page never runs its
    requestAnimationFrame: `frames` waited on it until the websocket's hang bound (a CI run
    failed so). `frames` brings its tab to the front, so the wait returns and the page is
    visible again."""
    with browser.tab() as behind:
        behind.send("Page.enable")
        behind.load(base_url, 1280, 800, mobile=False, deadline=time.monotonic() + browser.timeout)
        with browser.tab() as front:
            front.send("Page.navigate", url="about:blank")
            state = behind.send(
                "Runtime.evaluate", expression="document.visibilityState", returnByValue=True
            )
            assert state["result"]["value"] == "hidden", "the covered tab is the case tested"
            frames(behind)
            state = behind.send(
                "Runtime.evaluate", expression="document.visibilityState", returnByValue=True
            )
            assert state["result"]["value"] == "visible"
