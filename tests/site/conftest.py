"""The built site, as the other checks of tests/site read it: the same build as tests/docs
(one `mkdocs build --strict` per session), and Chromium when it is installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs.conftest import finished_build
from tests.site.chromium import find_chromium

INSTALL = "install it with: apt-get install -y chromium (.ci/run does it in CI)"


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir, returncode, log = finished_build(tmp_path_factory)
    if returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{log}", pytrace=False)
    return site_dir


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium; skips without it (fails in CI, where .ci/run installs it)."""
    executable = find_chromium()
    if executable is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser check, but Chromium is missing; {INSTALL}")
        pytest.skip(f"the browser check needs Chromium; {INSTALL}")
    return executable
