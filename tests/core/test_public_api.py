"""The public surface is declared once, in `__all__`, and kept honest."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

import synaptum_lite


def test_every_exported_name_exists_and_states_its_contract():
    for name in synaptum_lite.__all__:
        member = getattr(synaptum_lite, name)
        assert inspect.getdoc(member), f"{name} has no docstring"


def test_everything_public_in_the_package_is_exported():
    public = {
        name for name in vars(synaptum_lite) if not name.startswith("_") and name[0].isupper()
    }
    assert public <= set(synaptum_lite.__all__)


def loaded_by(statement: str) -> set[str]:
    """The top-level modules a fresh interpreter (without site) holds after `statement`."""
    code = f"import sys; {statement}; print(' '.join({{m.split('.')[0] for m in sys.modules}}))"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_the_core_imports_with_the_standard_library_alone():
    loaded = loaded_by("import synaptum_lite, synaptum_lite.testing")
    assert sorted(loaded - set(sys.stdlib_module_names) - {"synaptum_lite", "__main__"}) == []


# Standard-library modules only some features use, each imported inside the code that needs it:
# the event loop (the caller's, or a retry's sleep), the retry's jitter, the HTTP model and the
# A2A client (sockets, TLS, logging, e-mail dates, base64, URLs), MCP servers (subprocess), the
# CLI and the run views (pathlib).
ONLY_SOME_FEATURES = {
    "argparse",
    "asyncio",
    "base64",
    "email",
    "fnmatch",
    "http",
    "ipaddress",
    "logging",
    "pathlib",
    "random",
    "shutil",
    "socket",
    "ssl",
    "subprocess",
    "tempfile",
    "urllib",
}


def test_importing_the_package_and_its_sqlite_store_loads_no_module_only_some_features_use():
    # what a basic run needs, not what only some features use: the time itself is measured by
    # benchmarks/imports.py, never asserted here; this keeps those modules from creeping back
    loaded = loaded_by(
        "from synaptum_lite import Agent, Session, SqliteCheckpointer;"
        "from synaptum_lite.testing import ScriptedGateway"
    )
    assert "synaptum_lite" in loaded and "sqlite3" in loaded  # the statement did import them
    assert sorted(loaded & ONLY_SOME_FEATURES) == []


def test_the_exception_tree_its_module_draws_holds_every_exception_it_defines():
    """`errors.py` draws the tree in its docstring; a class added without its line is caught."""
    import synaptum_lite.errors as errors

    drawn = inspect.getdoc(errors) or ""
    defined = [
        name
        for name, member in vars(errors).items()
        if inspect.isclass(member)
        and issubclass(member, errors.SynaptumError)
        and member.__module__ == errors.__name__
    ]
    assert len(defined) > 20
    missing = [n for n in defined if not re.search(rf"(── |^    |`){n}\b", drawn, re.M)]
    assert missing == [], missing


def test_every_module_fits_the_budget_a_reader_can_hold():
    """Issue 14's budget: every module of the package at most 400 lines (`wc -l`), but the
    exception tree, kept whole in one module as its docstring draws it."""
    from pathlib import Path

    package = Path(synaptum_lite.__file__).parent
    lines = {p.name: len(p.read_bytes().splitlines()) for p in package.glob("*.py")}
    over = {name: n for name, n in lines.items() if n > 400 and name != "errors.py"}
    assert over == {}, over
    assert lines["errors.py"] <= 480, lines["errors.py"]
