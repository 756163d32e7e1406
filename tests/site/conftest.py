"""The built site, as the other checks of tests/site read it: the same build as tests/docs
(one `mkdocs build --strict` per session), served over HTTP from this machine, and Chromium
when it is installed. `docs_check` (the notebooks' runs) is tests/docs's, shared."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.conftest import DocsCheck, finished_build, run_docs_check
from tests.site.chromium import Browser, find_chromium

INSTALL = "install it with: apt-get install -y chromium (.ci/run does it in CI)"


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir, returncode, log = finished_build(tmp_path_factory)
    if returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{log}", pytrace=False)
    return site_dir


@pytest.fixture(scope="session")
def docs_check(tmp_path_factory: pytest.TempPathFactory) -> DocsCheck:
    """The notebooks' runs of the docs check: the same runs as tests/docs, once per session."""
    return run_docs_check(tmp_path_factory)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium; skips without it (fails in CI, where .ci/run installs it)."""
    executable = find_chromium()
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser check, but Chromium is missing; {INSTALL}")
        pytest.skip(f"the browser check needs Chromium; {INSTALL}")
    return executable


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base's name)
        pass


def serve(folder: Path) -> Iterator[str]:
    """Serve `folder` on 127.0.0.1 (a free port) while the generator is open; yields its URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def base_url(built_site: Path) -> Iterator[str]:
    yield from serve(built_site)


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[Browser]:
    opened = Browser(chromium)
    try:
        yield opened
    finally:
        opened.close()
