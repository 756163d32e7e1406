"""What importing the package loads: what a basic run needs, not what only some features use.

The time itself is measured by `benchmarks/imports.py`, never asserted here; this test keeps
the modules that make it from creeping back in with a top-level import.
"""

from __future__ import annotations

import subprocess
import sys

# Standard-library modules only some features use, each imported inside the code that needs it:
# the event loop (the caller's, or a retry's sleep), the retry's jitter, the HTTP model and the
# A2A client (sockets, TLS, logging, e-mail dates, base64, URLs), MCP servers (subprocess), the
# CLI and the run views (pathlib).
ONLY_SOME_FEATURES = {
    "fnmatch",
    "ipaddress",
    "pathlib",
    "urllib",
    "argparse",
    "asyncio",
    "base64",
    "email",
    "http",
    "logging",
    "random",
    "shutil",
    "socket",
    "ssl",
    "subprocess",
    "tempfile",
}


def test_importing_the_package_and_its_sqlite_store_loads_no_module_only_some_features_use():
    code = (
        "import sys;"
        "from synaptum_lite import Agent, Session, SqliteCheckpointer;"
        "from synaptum_lite.testing import ScriptedGateway;"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.split())
    assert "synaptum_lite" in loaded and "sqlite3" in loaded  # the statement did import them
    assert sorted(loaded & ONLY_SOME_FEATURES) == []
