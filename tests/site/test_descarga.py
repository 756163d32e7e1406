"""From the site to the code: the built site serves the kit, `synaptum-lite.zip`, and the kit
works where a learner unpacks it.

The archive is downloaded over HTTP from the built site (served on 127.0.0.1, as the browser
checks read it), must hold exactly the files git tracks (at their mode) under one folder, and,
unpacked in a temporary folder far from this checkout and its `.venv`, runs the README's check
of one notebook against its page: `uv run python -m scripts.update_pages --check` on
`01_bucle.ipynb` (the narrowest command that runs a notebook and compares what it prints with
its page; `uv run pytest tests/docs` runs all of them), after `uv run pytest` collects and runs
that notebook's page-shape tests. uv runs as `.ci/run` runs it: the machine's Python, never a
downloaded one, and the lock as committed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from scripts.pages import REPO

ARCHIVE = "synaptum-lite.zip"
FOLDER = "synaptum-lite"
NOTEBOOK = "notebooks/propiedades/01_bucle.ipynb"
#: Only a hang is bounded: the first `uv run` in a fresh folder builds its environment.
HANG = 1800


def tracked_files() -> dict[str, int]:
    """What git tracks here and is on disk: path → mode (0o100644 or 0o100755)."""
    listed = subprocess.run(
        ["git", "ls-files", "--stage", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode("utf-8")
    files = {}
    for entry in filter(None, listed.split("\0")):
        meta, path = entry.split("\t", 1)
        if (REPO / path).is_file():
            files[path] = int(meta.split(" ")[0], 8)
    return files


@pytest.fixture(scope="module")
def downloaded(base_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        with urllib.request.urlopen(base_url + ARCHIVE, timeout=HANG) as response:
            content = response.read()
    except urllib.error.HTTPError as error:
        pytest.fail(f"the built site does not serve {ARCHIVE}: HTTP {error.code}", pytrace=False)
    path = tmp_path_factory.mktemp("descarga") / ARCHIVE
    path.write_bytes(content)
    return path


def test_the_download_holds_exactly_the_tracked_files(downloaded: Path) -> None:
    with zipfile.ZipFile(downloaded) as archive:
        infos = archive.infolist()
    members = {info.filename: info.external_attr >> 16 for info in infos}
    assert len(members) == len(infos), "a file is in the archive twice"
    expected = {f"{FOLDER}/{path}": mode for path, mode in tracked_files().items()}
    expected[f"{FOLDER}/.kit-files"] = 0o100644  # the list itself, for a build without git
    missing = sorted(set(expected) - set(members))
    extra = sorted(set(members) - set(expected))
    assert not missing and not extra, f"missing: {missing[:20]}\nnot tracked: {extra[:20]}"
    wrong_mode = {name: oct(mode) for name, mode in members.items() if mode != expected[name]}
    assert not wrong_mode, f"modes differ from git's: {wrong_mode}"


def test_the_download_is_the_same_bytes_when_made_again(downloaded: Path) -> None:
    """The build made it in another process, minutes ago; made again now, it is the same."""
    spec = importlib.util.spec_from_file_location(
        "descarga_hook", REPO / "docs" / "_hooks" / "descarga.py"
    )
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    again = hook.kit_archive()
    if again != downloaded.read_bytes():  # a file edited since the build changes the bytes
        with zipfile.ZipFile(downloaded) as before:
            changed = [
                info.filename
                for info in before.infolist()
                if info.filename != f"{FOLDER}/.kit-files"  # the list, made with the archive
                and _now(REPO / info.filename.removeprefix(f"{FOLDER}/")) != before.read(info)
            ]
        assert changed, "same files, same contents, different bytes: the zip is not deterministic"
        pytest.skip(f"files changed since the site was built: {changed[:5]}")


def _now(path: Path) -> bytes | None:
    """The file's bytes now, or None when it was deleted since the build."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    if os.environ.get("CI") == "true":
        pytest.fail("CI must run the unpacked kit, but uv is missing (.ci/run installs it)")
    pytest.skip("running the unpacked kit needs uv (python3 -m pip install uv)")


def _unpack(archive: Path, into: Path) -> Path:
    with zipfile.ZipFile(archive) as opened:
        for info in opened.infolist():
            target = into / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(opened.read(info))
            target.chmod((info.external_attr >> 16) & 0o777)
    return into / FOLDER


def test_the_unpacked_kit_checks_a_notebook_against_its_page(
    downloaded: Path, tmp_path: Path
) -> None:
    uv = _uv()
    root = _unpack(downloaded, tmp_path)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("VIRTUAL_ENV", "UV_", "SYNAPTUM_", "AXONIUM_", "PYTEST_"))
    }
    env.update(
        UV_PYTHON_DOWNLOADS="never",  # as .ci/run: the machine's Python, never a downloaded one
        UV_PYTHON_PREFERENCE="system",
        UV_LOCKED="1",  # the lock as committed; an outdated one fails
        NO_MKDOCS_2_WARNING="1",
    )
    commands = [
        # README's test command, on what of the notebook's check needs no other notebook
        [*uv, "run", "pytest", "-q", "-p", "no:cacheprovider", "tests/docs/test_pages.py",
         "-k", "01_bucle and (shape or stored)"],
        # README's «comprobar sin reescribir nada», on one notebook: it runs, prints its page
        [*uv, "run", "python", "-m", "scripts.update_pages", "--check", NOTEBOOK],
        # no git here: the site's hook builds the archive from the list it carries, the same
        [*uv, "run", "python", "-c",
         "import hashlib, runpy; hook = runpy.run_path('docs/_hooks/descarga.py'); "
         "print(hashlib.sha256(hook['kit_archive']()).hexdigest())"],
    ]  # fmt: skip
    outputs = []
    for command in commands:
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=HANG
        )
        shown = " ".join(command[len(uv) :])
        assert done.returncode == 0, (
            f"`uv {shown}` in the unpacked kit exited {done.returncode}:\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
        outputs.append(done.stdout)
    assert "2 passed" in outputs[0], outputs[0]  # it ran the two tests it selected
    assert f"ok      {NOTEBOOK}" in outputs[1], outputs[1]  # the notebook printed its page
    assert outputs[2].split()[-1] == hashlib.sha256(downloaded.read_bytes()).hexdigest()
