"""MkDocs hook: from the site to the code. The site serves the kit as a download, and names
its repository when whoever publishes it knows it.

- `on_files` adds `synaptum-lite.zip` at the site's root: every file git tracks
  (`git ls-files`), as it is in this checkout, under one folder, `synaptum-lite/`, which is
  the repository's root once unpacked. Nothing untracked goes in (no `.venv`, no `site/`, no
  `node_modules`). The archive also holds `.kit-files`, that list (a mode and a path a line),
  so the kit unpacked from it builds its site, and the same archive, without git; with
  neither git nor that list, the build fails saying so rather than guess. The archive is
  deterministic: members in path order, one fixed timestamp, the file mode git records (644
  or 755), so two builds of one checkout give the same bytes. As a
  file of the site, a page's link to it (`[…](synaptum-lite.zip)`) is checked like any other.
- `on_config` reads the repository's address from `SYNAPTUM_REPO_URL` (the publishing
  workflow sets it from `github.server_url` and `github.repository`) into
  `config.extra["repositorio"]`; unset, the site names no repository and invents none. Not
  mkdocs' `repo_url`: with it, the theme's header asks GitHub's API for the repository's
  stars and forks from the reader's browser, and the site fetches nothing from another host.
- `on_page_markdown` writes, in a page's `<!-- clonar -->` comment, how to clone the
  repository (`; o clona el repositorio: git clone URL`) when its address is known, and
  nothing when not (docs/index.md has one).
- `on_page_content` adds to the panel of a property page that needs real processes (the one
  that says «Córrelo en local, desde la raíz del repositorio», `docs/_hooks/navegador.py`)
  how to get that root: download the kit, or clone the repository when its address is known.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scripts.navegador import NEEDS_A_PROCESS  # noqa: E402  (the repository root is importable only now)

#: The download's name, at the site's root, and the folder it unpacks into.
ARCHIVE = "synaptum-lite.zip"
FOLDER = "synaptum-lite"
#: Where the publishing workflow puts the repository's address (.github/workflows/tests.yml).
REPO_URL_VARIABLE = "SYNAPTUM_REPO_URL"
#: Every member's timestamp (the earliest a zip can store): the bytes do not depend on when.
TIMESTAMP = (1980, 1, 1, 0, 0, 0)
#: Where a page asks for the clone command.
CLONE_MARK = "<!-- clonar -->"

_MODES = {"100644": 0o100644, "100755": 0o100755}
_PANEL = re.compile(r'(<div class="navegador-ejecutar navegador-no">.*?)(</div>)', re.S)


class NotAGitCheckout(RuntimeError):
    """The kit's files cannot be listed: no git checkout here, and no `.kit-files` list."""


#: The list of the kit's files that the archive carries (it is not a tracked file itself).
MANIFEST = ".kit-files"


def kit_files(repo: Path = REPO) -> list[tuple[str, int]]:
    """The kit's files and their modes: git's tracked files in a checkout, else the list an
    unpacked download carries (`.kit-files`). Raises `NotAGitCheckout` with neither."""
    try:
        return tracked_files(repo)
    except NotAGitCheckout as error:
        listed = repo / MANIFEST
        if not listed.is_file():
            raise NotAGitCheckout(f"{error}, and it holds no {MANIFEST} list") from None
        files = []
        for line in listed.read_text(encoding="utf-8").splitlines():
            mode, path = line.split(" ", 1)
            if (repo / path).is_file():
                files.append((path, int(mode, 8)))
        return sorted(files)


def tracked_files(repo: Path = REPO) -> list[tuple[str, int]]:
    """The files git tracks in `repo` that are on disk, with their mode, in path order.

    A tracked file deleted in the working tree (its deletion not yet committed) is left out.
    Raises `NotAGitCheckout` saying why when git cannot list them.
    """
    git = shutil.which("git")
    if git is None:
        raise NotAGitCheckout("git is not installed")
    top = subprocess.run(
        [git, "rev-parse", "--show-toplevel"], cwd=repo, capture_output=True, text=True
    )
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != repo.resolve():
        raise NotAGitCheckout(f"{repo} is not the root of a git checkout")
    listed = subprocess.run(
        [git, "ls-files", "--stage", "-z"], cwd=repo, capture_output=True, check=False
    )
    if listed.returncode != 0:
        raise NotAGitCheckout(f"git ls-files failed: {listed.stderr.decode(errors='replace')}")
    files = []
    for entry in listed.stdout.decode("utf-8").split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode = meta.split(" ")[0]
        if mode not in _MODES:
            raise NotAGitCheckout(f"{path}: git mode {mode} (a symlink or submodule) is not zipped")
        if (repo / path).is_file():
            files.append((path, _MODES[mode]))
    return sorted(set(files))


def kit_archive(repo: Path = REPO) -> bytes:
    """The zip of the kit: every tracked file under `synaptum-lite/`, deterministically."""
    buffer = BytesIO()
    files = kit_files(repo)
    listing = "".join(f"{mode:o} {path}\n" for path, mode in files).encode()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, mode, content in sorted(
            [(p, m, None) for p, m in files] + [(MANIFEST, _MODES["100644"], listing)]
        ):
            info = zipfile.ZipInfo(f"{FOLDER}/{path}", TIMESTAMP)
            info.create_system = 3  # Unix, so the mode below is read on every platform
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            data = content if content is not None else (repo / path).read_bytes()
            archive.writestr(info, data, compresslevel=9)
    return buffer.getvalue()


def repo_url(config: MkDocsConfig) -> str | None:
    return config.extra.get("repositorio") or None


def _failed(error: NotAGitCheckout) -> PluginError:
    return PluginError(
        f"{ARCHIVE} (the kit the site offers for download) is built from the files git tracks, "
        f"and {error}. Build the site from a git clone of the repository (with git installed) "
        f"or from the kit unpacked from {ARCHIVE}."
    )


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    try:  # first of all, before anything slower (navegador.py's npm ci) runs in vain
        kit_files()
    except NotAGitCheckout as error:
        raise _failed(error) from None
    url = os.environ.get(REPO_URL_VARIABLE, "").strip().rstrip("/")
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.netloc or not parts.path.strip("/"):
            raise PluginError(f"{REPO_URL_VARIABLE}={url!r} is not a repository's https address")
        config.extra["repositorio"] = url
    else:
        config.extra.pop("repositorio", None)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    try:
        content = kit_archive()
    except NotAGitCheckout as error:
        raise _failed(error) from None
    files.append(File.generated(config, ARCHIVE, content=content))
    return files


def clone_sentence(config: MkDocsConfig) -> str:
    """`; o clona el repositorio: git clone URL` in Markdown, when the address is known; else
    nothing."""
    url = repo_url(config)
    return f"; o clona el repositorio: `git clone {url}`" if url else ""


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return markdown.replace(CLONE_MARK, clone_sentence(config))


@event_priority(-60)  # after docs/_hooks/navegador.py (-50) has put the panel in place
def on_page_content(content: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    stem = Path(page.file.src_uri).stem
    if not page.file.src_uri.startswith("propiedades/") or stem not in NEEDS_A_PROCESS:
        return content
    href = html.escape(get_relative_url(ARCHIVE, page.url))
    url = repo_url(config)
    clone = f" O clónalo: <code>git clone {html.escape(url)}</code>." if url else ""
    how = (
        f'<p>¿Sin el repositorio? Descarga el kit, <a href="{href}">{ARCHIVE}</a>, y '
        f"descomprímelo: la carpeta {FOLDER} es su raíz.{clone}</p>"
    )
    content, found = _PANEL.subn(lambda match: match.group(1) + how + match.group(2), content, 1)
    if not found:
        raise PluginError(
            f"{page.file.src_uri}: no panel saying how to run it locally "
            "(docs/_hooks/navegador.py) to add how to get the kit to"
        )
    return content
