"""Headless Chromium, driven over the DevTools protocol: open a page at a given size, collect
what went wrong, measure, take a screenshot.

Debian's `chromium`, started with a fresh profile and `--remote-debugging-port=0`; the port it
picked is read from `DevToolsActivePort` in the profile. One websocket per tab
(`websocket-client`), one message at a time: a command is answered by the reply with its id,
and the events that arrive meanwhile are kept for the caller.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

from tests.bounds import HANG

#: Where Debian's package installs it (`apt-get install chromium`).
CHROMIUM = "/usr/bin/chromium"

#: Flags that work in a container as root, and keep Chromium off the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def find_chromium() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium")


@dataclass
class PageReport:
    """What one page showed at one size."""

    url: str
    width: int
    height: int
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    scroll_width: int = 0
    inner_width: int = 0
    client_width: int = 0
    title: str = ""


class Tab:
    """One page of the browser, and its websocket."""

    def __init__(self, ws_url: str, timeout: float) -> None:
        self._ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its result; events that arrive first are kept."""
        self._next_id += 1
        call_id = self._next_id
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str, deadline: float) -> None:
        """Read events until one named `method` arrives (or the deadline passes)."""
        if any(event["method"] == method for event in self.events):
            return
        while time.monotonic() < deadline:
            message = json.loads(self._ws.recv())
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return
        raise TimeoutError(f"no {method} before the deadline")

    def load(self, url: str, width: int, height: int, *, mobile: bool, deadline: float) -> None:
        """Open `url` at that window size and wait for its load event."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )
        self.send("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired", deadline)

    def close(self) -> None:
        self._ws.close()


class Browser:
    """A headless Chromium with a throwaway profile."""

    def __init__(self, executable: str, *, timeout: float = HANG) -> None:
        self.timeout = timeout
        self._profile = Path(tempfile.mkdtemp(prefix="synaptum-chromium-"))
        self._process = subprocess.Popen(
            [
                executable,
                *FLAGS,
                f"--user-data-dir={self._profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.port = self._read_port()

    def _read_port(self) -> int:
        active = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"chromium exited with {self._process.returncode}: "
                    f"{self._process.stderr.read()[-2000:]}"
                )
            if active.exists():
                lines = active.read_text().splitlines()
                if lines and lines[0].isdigit():
                    return int(lines[0])
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def _endpoint(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            body = response.read()
        return json.loads(body) if body.startswith((b"{", b"[")) else body.decode()

    @property
    def version(self) -> str:
        return self._endpoint("/json/version")["Browser"]

    @contextmanager
    def tab(self) -> Iterator[Tab]:
        target = self._endpoint("/json/new?about:blank", method="PUT")
        tab = Tab(target["webSocketDebuggerUrl"], self.timeout)
        try:
            tab.send("Page.bringToFront")
            yield tab
        finally:
            tab.close()
            self._endpoint(f"/json/close/{target['id']}")

    def visit(
        self, url: str, width: int, height: int, *, mobile: bool, screenshot: Path
    ) -> PageReport:
        """Open `url` in a fresh tab sized `width`×`height`, wait for it to load and settle,
        and report its console errors, the requests it made and its widths."""
        report = PageReport(url, width, height)
        with self.tab() as tab:
            tab.send("Runtime.enable")
            tab.send("Log.enable")
            tab.send("Network.enable")
            tab.send("Page.enable")
            tab.load(url, width, height, mobile=mobile, deadline=time.monotonic() + self.timeout)
            # fonts and the theme's scripts settle after the load event
            tab.send("Runtime.evaluate", expression="document.fonts.ready", awaitPromise=True)
            time.sleep(0.3)
            measured = tab.send(
                "Runtime.evaluate",
                expression=(
                    "JSON.stringify({scroll: document.documentElement.scrollWidth,"
                    " inner: window.innerWidth, client: document.documentElement.clientWidth,"
                    " title: document.title})"
                ),
                returnByValue=True,
            )
            values = json.loads(measured["result"]["value"])
            report.scroll_width, report.inner_width = values["scroll"], values["inner"]
            report.client_width = values["client"]
            report.title = values["title"]
            shot = tab.send("Page.captureScreenshot", format="png")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            for event in tab.events:
                report.console_errors.extend(_errors_of(event))
                if event["method"] == "Network.requestWillBeSent":
                    report.requests.append(event["params"]["request"]["url"])
        return report

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process.stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)


def _errors_of(event: dict[str, Any]) -> list[str]:
    """The console errors an event reports: uncaught exceptions, console.error, and errors the
    browser logs itself (a resource that failed to load, a blocked request)."""
    method, params = event["method"], event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        text = details.get("exception", {}).get("description") or details.get("text", "")
        return [f"uncaught: {text}"]
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        values = [arg.get("value", arg.get("description", "")) for arg in params.get("args", [])]
        return ["console.error: " + " ".join(str(v) for v in values)]
    if method == "Log.entryAdded" and params["entry"]["level"] == "error":
        entry = params["entry"]
        return [f"{entry.get('source', 'log')}: {entry['text']} {entry.get('url', '')}".strip()]
    return []


#: What a reader sees of a page's *Lo que imprime* block: run in the page after it settles.
#: Returns {text: the block's innerText, problems: why some of it is not seen, overflow: how
#: the block scrolls sideways (null when every line fits), covered_by_buttons: the copy
#: buttons of the page (on any code block) whose box meets a line of text of their block}.
#: The block is the first <pre> after the heading; it must be fully visible: not hidden
#: (hidden attribute, display, visibility, opacity, colour, font size), not clipped (a box of
#: the block or around it with overflow other than visible that is shorter than its content,
#: clip-path), with no
#: text added or changed by CSS (::before/::after content, text-transform), and not covered
#: (at the start of every line, the topmost element is the block).
READ_BLOCK = (Path(__file__).with_name("lo_que_imprime.js")).read_text(encoding="utf-8")


@dataclass
class SeenBlock:
    text: str | None
    problems: list[str]


#: The sizes a block is read at: name → (width, height, mobile), as tests/site/test_browser.py.
READ_SIZES = {"escritorio": (1280, 800, False), "telefono": (390, 844, True)}


def read_block(browser: Browser, url: str, screenshots: Path | None = None) -> SeenBlock:
    """Open `url` and read its *Lo que imprime* block as a reader sees it, after the theme's
    CSS and JavaScript: after the load event, the fonts, and `SETTLE` seconds more (a bound: a
    script that changes the page later than that is not seen). Read at each of `READ_SIZES`
    (a style for phones can hide what a desktop shows); a problem names the size. At each
    size every line of the block is seen whole: the block does not scroll sideways and no text
    lies beyond the viewport's width. With `screenshots` (a path without its suffix), a
    screenshot of the block at each size is saved beside it, `<name>-<size>.png`."""
    texts, problems = [], []
    with browser.tab() as tab:
        tab.send("Page.enable")
        for number, (size, (width, height, mobile)) in enumerate(READ_SIZES.items()):
            tab.send(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=mobile,
            )
            if number == 0:
                tab.send("Page.navigate", url=url)
                tab.wait_for("Page.loadEventFired", time.monotonic() + browser.timeout)
                tab.send("Runtime.evaluate", expression="document.fonts.ready", awaitPromise=True)
                time.sleep(SETTLE)
            else:
                frames(tab)  # the new size's layout and media queries
            result = tab.send("Runtime.evaluate", expression=READ_BLOCK, returnByValue=True)
            if "exceptionDetails" in result:
                raise RuntimeError(f"reading the block of {url}: {result['exceptionDetails']}")
            value = result["result"]["value"]
            texts.append(value["text"])
            suffix = "" if number == 0 else f" (at {width}×{height}, {size})"
            problems.extend(problem + suffix for problem in value["problems"])
            if value["overflow"]:
                problems.append(
                    f"scrolls sideways at {width}×{height}: {value['overflow']} (every line "
                    "must be seen whole, on a desktop and on a phone: widen the column or wrap "
                    "the block in docs/_theme/assets/stylesheets/sitio.css, or print narrower)"
                )
            problems.extend(problem + suffix for problem in value["covered_by_buttons"])
            problems.extend(
                f"not seen at {width}×{height}: {problem}"
                for problem in unseen_text(tab, BLOCK_SELECTOR)
            )
            if screenshots is not None:
                tab.send("Runtime.evaluate", expression=_BLOCK_INTO_VIEW)
                screenshot(tab, screenshots.with_name(f"{screenshots.name}-{size}.png"))
    if texts[1:] != texts[:-1]:
        problems.append(f"the block's text changes with the size of the screen: {texts!r}")
    return SeenBlock(texts[0], problems)


#: Seconds the page is left to settle after its load event before the block is read.
SETTLE = 0.5


#: The page's *Lo que imprime* block, as CSS finds it (lo_que_imprime.js finds the same `pre`:
#: the first after the heading).
BLOCK_SELECTOR = "#lo-que-imprime + .highlight > pre"
_BLOCK_INTO_VIEW = f"document.querySelector({BLOCK_SELECTOR!r})?.scrollIntoView({{block: 'start'}})"

#: tests/site/a_lo_ancho.js: a function of a CSS selector (what of those elements' text is
#: beyond their box or the viewport's width).
_UNSEEN = (Path(__file__).with_name("a_lo_ancho.js")).read_text(encoding="utf-8")


def unseen_text(tab: Tab, selector: str, *, at_least: int = 1) -> list[str]:
    """Why some text of the elements `selector` finds is not seen at the tab's width (a box
    that scrolls sideways, a line beyond the element's box or the viewport); [] when all is.
    Fewer than `at_least` such elements shown is a problem too (a check that finds nothing
    checks nothing)."""
    result = tab.send(
        "Runtime.evaluate", expression=f"({_UNSEEN})({selector!r})", returnByValue=True
    )
    if "exceptionDetails" in result:
        raise RuntimeError(f"measuring {selector}: {result['exceptionDetails']}")
    value = result["result"]["value"]
    problems = list(value["problems"])
    if value["count"] < at_least:
        problems.append(f"{value['count']} elements {selector!r} shown, expected {at_least}+")
    return problems


def screenshot(tab: Tab, path: Path) -> None:
    """Save what the tab shows now (after two frames: a scroll just asked for is painted)."""
    frames(tab)
    shot = tab.send("Page.captureScreenshot", format="png")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def frames(tab: Tab) -> None:
    """Wait for the page's next two frames: what was just changed (a size, a scroll) is laid
    out and painted. The tab is brought to the front first: a tab behind another is hidden,
    and a hidden page's requestAnimationFrame never fires (seen: another tab opened, or the
    browser's first tab raised when the previous test's tab closed, and this wait hung)."""
    tab.send("Page.bringToFront")
    tab.send(
        "Runtime.evaluate",
        expression="new Promise((go) => requestAnimationFrame(() => requestAnimationFrame(go)))",
        awaitPromise=True,
    )
