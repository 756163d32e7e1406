"""Node.js and the pinned Pyodide of `package.json`, for the tests that run the notebooks on it.

Without `node` or `node_modules/pyodide` these tests skip, saying how to get them; in CI
(`CI=true`, where `.ci/run` installs both) they fail instead."""

from __future__ import annotations

import os
import shutil

import pytest

from scripts.navegador import PyodideMissing, pyodide_files


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` executable, with Pyodide installed by `npm ci`."""
    executable = shutil.which("node")
    problem = None
    if executable is None:
        problem = "Node.js is missing (apt-get install -y nodejs npm; .ci/run does it in CI)"
    else:
        try:
            pyodide_files()
        except PyodideMissing as missing:
            problem = str(missing)
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the notebooks on Pyodide: {problem}")
        pytest.skip(problem)
    return executable
