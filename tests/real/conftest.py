"""pytest's summary says whether the real model ran, and on which build, or why it did not."""

from __future__ import annotations

import os

from tests.real import NO_SERVER


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    url = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL")
    if url:
        terminalreporter.write_line(f"real model: llama-server at {url}")
    else:
        terminalreporter.write_line(NO_SERVER, yellow=True, bold=True)
