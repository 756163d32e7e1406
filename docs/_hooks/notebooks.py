"""MkDocs hook: the property notebooks are the property pages.

Learners find the notebooks in `notebooks/propiedades/`; the site shows each one as a page at
`propiedades/<name>/`. Nothing is copied into `docs/`. Two steps:

- `on_files` adds every `notebooks/propiedades/*.ipynb` to the site's files as
  `propiedades/<name>.ipynb`, before mkdocs-jupyter turns notebooks into pages, so the nav
  names them like any page.
- `on_files` also publishes each notebook's helper module, `_nombre_NN.py` (the child process
  of notebook NN), beside that notebook's page, so the notebook's link `_nombre_NN.py` works
  on the site as it does in JupyterLab.
- `on_page_content` writes the *Lo que imprime* block of a notebook page verbatim, and titles
  the page with its notebook's first heading, code spans kept as text. The
  notebook renderer highlights fenced code with Pygments, which strips leading and trailing
  blank lines, and an expected output can start with one (every header does). The block's
  text, not a highlighter's idea of it, is what the page must show; tests/docs checks the
  built HTML against it.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.pages import (  # noqa: E402  (the repository root is importable only now)
    EXPECTED_HEADING,
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
        page.title = title.replace("`", "")
    verbatim = f'<pre><code class="language-text">{html.escape(text, quote=False)}</code></pre>'
    content, found = _BLOCK_AFTER_HEADING.subn(
        lambda match: match.group(1) + verbatim, content, count=1
    )
    if not found:
        raise PluginError(f"{source}: the rendered page has no block under '{EXPECTED_HEADING}'")
    return content
