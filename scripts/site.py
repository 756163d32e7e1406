"""The built site: build it once, and read back what a rendered page shows.

The last link of the contract. A notebook can print exactly what its block says and the
published page can still show something else (a renderer that eats a leading blank line,
a fence that swallows the next paragraph, a stale build). So the check builds the site the way
it is published (`mkdocs build --strict`) and reads the text of each page's *Lo que imprime*
block from the HTML, as a browser would show it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from scripts.pages import EXPECTED_HEADING, REPO

MKDOCS_CONFIG = REPO / "mkdocs.yml"


def start_build(site_dir: Path, config: Path = MKDOCS_CONFIG) -> subprocess.Popen[str]:
    """Start `mkdocs build --strict` into `site_dir`, in the background.

    The site does not depend on running the notebooks (mkdocs-jupyter renders them without
    executing), so the check builds it while the kernels run. Its output is captured: the
    caller shows it when the build fails.
    """
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", JUPYTER_PLATFORM_DIRS="1")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",  # never with --quiet: it hides the warnings strict mode counts
            "--config-file",
            str(config),
            "--site-dir",
            str(site_dir),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def page_html(site_dir: Path, url: str) -> Path:
    """The HTML file of the page at `url` (`propiedades/02_durabilidad/`)."""
    return site_dir / url / "index.html"


def rendered_block(html: str) -> str | None:
    """The text of the first `<pre>` after the *Lo que imprime* heading, as a browser shows it.

    Entities are decoded; tags inside the block (highlighting spans) contribute their text;
    a newline right after `<pre>` is dropped, as the HTML parser of a browser does.
    Returns `None` when the page has no such heading or no block after it.
    """
    reader = _BlockReader()
    reader.feed(html)
    reader.close()
    return reader.block


class _BlockReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.heading_text: list[str] | None = None
        self.after_heading = False
        self.pre_depth = 0
        self.parts: list[str] = []
        self.just_opened_pre = False
        self.block: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Any]]) -> None:
        if self.block is not None:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.heading_text = []
        elif tag == "pre" and self.after_heading:
            self.pre_depth += 1
            self.just_opened_pre = self.pre_depth == 1
        elif self.pre_depth:
            self.just_opened_pre = False

    def handle_endtag(self, tag: str) -> None:
        if self.block is not None:
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self.heading_text is not None:
            text = "".join(self.heading_text).replace("¶", "").strip()
            self.after_heading = text == EXPECTED_HEADING
            self.heading_text = None
        elif tag == "pre" and self.pre_depth:
            self.pre_depth -= 1
            if not self.pre_depth:
                self.block = "".join(self.parts)

    def handle_data(self, data: str) -> None:
        if self.block is not None:
            return
        if self.heading_text is not None:
            self.heading_text.append(data)
        elif self.pre_depth:
            if self.just_opened_pre and data.startswith("\n"):
                data = data[1:]
            self.just_opened_pre = False
            self.parts.append(data)


def nav_pages(config_path: Path = MKDOCS_CONFIG) -> list[str]:
    """Every page file the nav of `mkdocs.yml` names (`propiedades/02_durabilidad.ipynb`)."""
    import yaml

    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    found: list[str] = []

    def walk(entry: Any) -> None:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, list):
            for item in entry:
                walk(item)
        elif isinstance(entry, dict):
            for value in entry.values():
                walk(value)

    walk(config.get("nav", []))
    return found
