"""The built site: build it once, and read back what a rendered page shows.

The last link of the contract. A notebook can print exactly what its block says and the
published page can still show something else (a renderer that eats a leading blank line,
a fence that swallows the next paragraph, a stale build). So the check builds the site the way
it is published (`mkdocs build --strict`) and reads the text of each page's *Lo que imprime*
block from the HTML, as a browser would show it.
"""

from __future__ import annotations

import os
import re
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


def nav_entries(config_path: Path = MKDOCS_CONFIG) -> list[tuple[str | None, str]]:
    """Every page of the nav of `mkdocs.yml`, in its order, with its label (None: none)."""
    import yaml

    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    found: list[tuple[str | None, str]] = []

    def walk(entry: Any, label: str | None = None) -> None:
        if isinstance(entry, str):
            found.append((label, entry))
        elif isinstance(entry, list):
            for item in entry:
                walk(item)
        elif isinstance(entry, dict):
            for key, value in entry.items():
                walk(value, key)

    walk(config.get("nav", []))
    return found


def nav_pages(config_path: Path = MKDOCS_CONFIG) -> list[str]:
    """Every page file the nav of `mkdocs.yml` names (`propiedades/02_durabilidad.ipynb`)."""
    return [page for _, page in nav_entries(config_path)]


# ── Every internal link resolves ─────────────────────────────────────────────


class _Links(HTMLParser):
    """The `href`/`src` of a page, and its element ids."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Any]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            elif name in ("href", "src") and value:
                self.links.append(value)


def broken_links(site_dir: Path) -> list[str]:
    """Every link of the built site to a file or anchor of the site that does not exist.

    Checked: `href` and `src` of every HTML page, relative or site-absolute, with or without
    a `#fragment` (which must be an `id` of the target page). Left out: other hosts
    (`http://…`, `mailto:`), which the site test forbids fetching anyway.
    """
    from urllib.parse import unquote, urldefrag, urlsplit

    pages: dict[Path, _Links] = {}

    def parsed(path: Path) -> _Links:
        if path not in pages:
            reader = _Links()
            reader.feed(path.read_text(encoding="utf-8", errors="replace"))
            pages[path] = reader
        return pages[path]

    broken = []
    root = site_dir.resolve()
    for page in sorted(root.rglob("*.html")):
        for link in parsed(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("data:", "javascript:")):
                continue
            target_part, fragment = urldefrag(link)
            path_part = unquote(urlsplit(target_part).path)
            if not path_part:
                target = page
            elif path_part.startswith("/"):
                target = root / path_part.lstrip("/")
            else:
                target = (page.parent / path_part).resolve()
            if target.is_dir():
                target = target / "index.html"
            where = page.relative_to(root).as_posix()
            if not target.exists() or root not in (target, *target.parents):
                broken.append(f"{where} links to {link}, which the site does not have")
            elif (
                fragment
                and target.suffix == ".html"
                and unquote(fragment) not in parsed(target).ids
            ):
                broken.append(
                    f"{where} links to {link}: {target.relative_to(root)} has no #{fragment}"
                )
    return broken


#: The nav label of the home page (`index.md`), whose title is the site's name.
HOME_LABEL = "Inicio"


def spelled(label: str) -> str:
    """A label as a file name: accents dropped, lower case, every run of other characters one
    underscore (`06 · kill -9` → `06_kill_9`, `11 · Límites` → `11_limites`)."""
    import unicodedata

    bare = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "_", bare.lower()).strip("_")


def label_for(notebook: str) -> str:
    """The label a notebook's entry may carry, without its accents (`03 · Aprobacion`)."""
    stem = Path(notebook).stem
    return f"{stem[:2]} · {stem[3:].replace('_', ' ').capitalize()}"


def nav_titles(config_path: Path = MKDOCS_CONFIG, docs: Path | None = None) -> list[str]:
    """Nav entries whose label does not name their page.

    A Markdown page's label is its first `# ` heading (the home page's is `HOME_LABEL`). A
    notebook's label is short, and it is its file name spelled for a reader: `02 · Durabilidad`
    for `02_durabilidad.ipynb`, accents and capitals free (`spelled`). So it names the page it
    points at and claims nothing; the claim is the notebook's title, its first heading, which
    the page shows whole (the docs hook hands it to the theme as the page's `meta.title`).
    """
    import yaml

    docs = docs or config_path.parent / "docs"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    wrong: list[str] = []

    def walk(entry: Any) -> None:
        if isinstance(entry, list):
            for item in entry:
                if isinstance(item, str) and item.endswith(".ipynb"):
                    wrong.append(
                        f"the nav gives {item} no label, so it shows the notebook's whole title "
                        f'(2-4 lines); write `- "{label_for(item)}": {item}` (its file name '
                        "spelled for a reader; accents welcome)"
                    )
                else:
                    walk(item)
        elif isinstance(entry, dict):
            for label, value in entry.items():
                if isinstance(value, str):
                    check(label, value)
                else:
                    walk(value)

    def check(label: str, target: str) -> None:
        if target.endswith(".ipynb"):
            if spelled(label) != Path(target).stem:
                wrong.append(
                    f"the nav labels {target} {label!r}; a notebook's label is its file name "
                    f"spelled for a reader, {label_for(target)!r} (accents welcome), so it "
                    "names the page and claims nothing"
                )
            return
        page = docs / target
        if not page.exists():
            return  # reported by the nav test
        title = next(
            (
                line[2:].strip()
                for line in page.read_text(encoding="utf-8").splitlines()
                if line.startswith("# ")
            ),
            None,
        )
        if title != label and not (target == "index.md" and label == HOME_LABEL):
            wrong.append(f"the nav labels {target} {label!r}, but its title is {title!r}")

    walk(config.get("nav", []))
    return wrong
