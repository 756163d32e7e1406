"""MkDocs hook: the property notebooks are the property pages.

Learners find the notebooks in `notebooks/propiedades/`; the site shows each one as a page at
`propiedades/<name>/`. Nothing is copied into `docs/`. Two steps:

- `on_files` adds every `notebooks/propiedades/*.ipynb` to the site's files as
  `propiedades/<name>.ipynb`, before mkdocs-jupyter turns notebooks into pages, so the nav
  names them like any page.
- `on_files` also publishes each notebook's helper module, `_nombre_NN.py` (the child process
  of notebook NN), beside that notebook's page, so the notebook's link `_nombre_NN.py` works
  on the site as it does in JupyterLab.
- `on_page_content` writes the *Lo que imprime* block of a notebook page verbatim. The
  notebook renderer highlights fenced code with Pygments, which strips leading and trailing
  blank lines, and an expected output can start with one (every header does). The block's
  text, not a highlighter's idea of it, is what the page must show; tests/docs checks the
  built HTML against it.
- `on_page_content` gives the page its title: the notebook's first heading, code spans kept as
  text, as `page.meta["title"]`, which the theme puts in the browser's title bar and on the
  page's first search result. The nav keeps its short label (`mkdocs.yml`: mkdocs-jupyter's
  `ignore_h1_titles`, and the label set `page.title`); an entry without one shows this title.
- `on_page_content` also keeps code out of the search index: Material's search skips an
  element marked `data-search-exclude`, and the hook marks what a code cell shows (its
  source, the copy button's hidden "Copied!", the hidden copy of the source the button
  copies, the badge of a cell's tag) and each heading's "¶" link. The page's prose and its
  *Lo que imprime* block stay searchable.
- `on_page_content` also mends the notebook page's table of contents: mkdocs-jupyter builds it
  from the Markdown with code spans left out, so a heading with one (`mismo run_id`) got an
  entry whose anchor the page does not have; each entry takes the id of its heading.
- `on_page_content` also puts a figure of `docs/diagramas/` in the page itself: a notebook
  shows one as a Markdown image of the copy beside it, `![…](figuras/fases.svg)`, the path
  that works in JupyterLab opened on the notebooks' folder (`scripts/diagramas.py` writes
  both, the same bytes); on the site the `<img>` becomes the SVG's own text, as *Figuras* includes
  it, so its colours follow the theme's (an SVG in an `<img>` cannot read the page's CSS
  variables, and its dark text would sit on the dark background).
- `on_page_content` also moves the large stylesheet the notebook renderer inlines in every
  notebook page (about 570 KB, the same on each) into one file, `assets/jupyter-<hash>.css`,
  linked where it stood; `on_post_build` writes that file once.
"""

from __future__ import annotations

import hashlib
import html
import re
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.pages import (  # noqa: E402  (the repository root is importable only now)
    EXPECTED_HEADING,
    VERIFICATION_HEADING,
    PageFormatError,
    expected_block,
    read_notebook,
    title_of,
)

_BLOCK_AFTER_HEADING = re.compile(
    r"(<h([1-6])[^>]*>\s*" + re.escape(EXPECTED_HEADING) + r"\s*(?:<a[^>]*>[^<]*</a>)?\s*</h\2>"
    r".*?)<pre\b[^>]*>.*?</pre>",
    re.S,
)


_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.S)
_SHARED_FROM = 50_000  # characters: only the renderer's big stylesheet, not a page's own rules
_SHARED_STYLES: dict[str, str] = {}  # site path → CSS, written once after the build


def _share_large_styles(content: str, page: Page) -> str:
    def link(match: re.Match[str]) -> str:
        css = match.group(1)
        if len(css) < _SHARED_FROM:
            return match.group(0)
        digest = hashlib.sha256(css.encode()).hexdigest()[:12]
        path = f"assets/jupyter-{digest}.css"
        _SHARED_STYLES[path] = css
        return f'<link rel="stylesheet" href="{get_relative_url(path, page.url)}">'

    return _STYLE.sub(link, content)


def on_post_build(config: MkDocsConfig) -> None:
    for path, css in _SHARED_STYLES.items():
        target = Path(config.site_dir) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(css, encoding="utf-8")


@event_priority(100)  # before mkdocs-jupyter (priority 0) wraps .ipynb files as pages
def on_files(files: Files, config: MkDocsConfig) -> Files:
    notebooks = REPO / "notebooks"
    for path in sorted((notebooks / "propiedades").glob("*.ipynb")):
        files.append(
            File(
                path.relative_to(notebooks).as_posix(),
                src_dir=str(notebooks),
                dest_dir=config.site_dir,
                use_directory_urls=config.use_directory_urls,
            )
        )
    for helper in sorted((notebooks / "propiedades").glob("_*.py")):
        number = re.search(r"_(\d\d)$", helper.stem)
        owners = sorted(helper.parent.glob(f"{number.group(1)}_*.ipynb")) if number else []
        for owner in owners:
            uri = f"propiedades/{owner.stem}/{helper.name}"
            files.append(File.generated(config, uri, abs_src_path=str(helper)))
    return files


def on_page_content(content: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return content
    source = Path(page.file.abs_src_path)
    notebook = read_notebook(source)
    try:
        text = expected_block(notebook).text
    except PageFormatError as error:
        raise PluginError(f"{source}: {error}") from None
    title = title_of(notebook)
    if title:  # mkdocs-jupyter's title drops code spans ("lo para , y"); keep their text
        page.meta["title"] = title.replace("`", "")
    verbatim = f'<pre><code class="language-text">{html.escape(text, quote=False)}</code></pre>'
    content, found = _BLOCK_AFTER_HEADING.subn(
        lambda match: match.group(1) + verbatim, content, count=1
    )
    if not found:
        raise PluginError(f"{source}: the rendered page has no block under '{EXPECTED_HEADING}'")
    _mend_toc(page, content)
    content = _FIGURE.sub(lambda match: _figure(match, source), content)
    return _share_large_styles(_out_of_search(content), page)


#: A Markdown image of a figure, as the notebook renderer writes it: the copy beside the
#: notebook (figuras/x.svg) or the original (../../docs/diagramas/x.svg).
_FIGURE = re.compile(
    r'<img\b[^>]*\bsrc="((?:\.\./)+docs/diagramas/[\w-]+\.svg|figuras/[\w-]+\.svg)"[^>]*>'
)


def _figure(match: re.Match[str], notebook: Path) -> str:
    """The SVG that `match` points at, from the notebook's folder, as the page's own markup."""
    path = (notebook.parent / match.group(1)).resolve()
    original = REPO / "docs" / "diagramas" / path.name
    if path.parent not in (original.parent, notebook.parent / "figuras") or not path.is_file():
        raise PluginError(f"{notebook}: the figure {match.group(1)} is not in docs/diagramas/")
    svg = path.read_text(encoding="utf-8")
    if not original.is_file() or original.read_text(encoding="utf-8") != svg:
        raise PluginError(
            f"{notebook}: {match.group(1)} is not the copy of docs/diagramas/{path.name}; "
            "run `uv run python -m scripts.diagramas`"
        )
    return svg


#: The opening tags Material's search must skip, in a code cell: the copy button (its hidden
#: "Copied!"), the highlighted source, the hidden copy the button copies, a tag's badge
#: ("parameters"); and a heading's "¶".
#: Each is marked itself, not the cell around them: Material's search parser tells elements
#: apart by tag name only, so an excluded <div> stops being skipped at the first </div> inside it.
_NOT_SEARCHED = re.compile(
    r"<(clipboard-copy\b"
    r'|(?<=<div class="highlight-ipynb hl-python"><)pre\b'
    r'|div class="clipboard-copy-txt"'
    r'|span class="cell-tag"'
    r'|a class="anchor-link")'
)


def _out_of_search(content: str) -> str:
    """Mark code cells' source and heading permalinks `data-search-exclude` (see the module's
    doc)."""
    return _NOT_SEARCHED.sub(r"<\1 data-search-exclude", content)


_HEADING_WITH_ID = re.compile(r'<h[1-6] id="([^"]+)">(.*?)<a class="anchor-link"', re.S)


def _mend_toc(page: Page, content: str) -> None:
    """Point each table-of-contents entry that has no heading at the heading it stands for.

    mkdocs-jupyter slugs the notebook's Markdown headings with their code spans left out
    (`mismo run_id` gives `…-mismo`), while the rendered heading keeps them (`…-mismo-run_id`).
    An entry without a heading is matched to the heading whose text, without its code spans,
    slugs to the entry's id.
    """
    from markdown.extensions.toc import slugify

    headings = _HEADING_WITH_ID.findall(content)
    ids = {heading_id for heading_id, _ in headings}
    without_code = {}
    for heading_id, text in headings:
        plain = re.sub(r"<[^>]+>", "", re.sub(r"<code>.*?</code>", "", text))
        without_code.setdefault(slugify(html.unescape(plain), "-"), []).append((heading_id, text))

    def mend(items: list) -> None:
        # the note above the verification cells is off the page (mkdocs.yml: remove_cell_tags),
        # but mkdocs-jupyter builds the contents from every Markdown cell: its entry goes too
        items[:] = [item for item in items if item.title.strip() != VERIFICATION_HEADING]
        for item in items:
            if item.id not in ids:
                matches = without_code.get(item.id, [])
                if len(matches) != 1:
                    raise PluginError(
                        f"{page.file.src_uri}: the contents entry #{item.id} has no heading"
                    )
                item.id = matches[0][0]
                item.title = html.unescape(re.sub(r"<[^>]+>", "", matches[0][1])).strip()
            mend(item.children)

    mend(page.toc.items if page.toc else [])
