"""The public surface is declared once, in `__all__`, and kept honest."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

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


# Standard-library modules only the folders around the core use: the HTTP model and the A2A
# client (sockets, TLS, logging, e-mail dates, base64, URLs), MCP servers (subprocess), the
# command line (argparse). The core imports what it needs at the top of each module.
ONLY_SOME_FEATURES = {
    "argparse",
    "base64",
    "email",
    "fnmatch",
    "http",
    "ipaddress",
    "logging",
    "shutil",
    "socket",
    "ssl",
    "subprocess",
    "tempfile",
    "urllib",
}


def test_importing_the_package_and_its_sqlite_store_loads_no_module_only_some_features_use():
    # what a basic run needs, not what only the folders use. A run needs an event loop, so the
    # core imports asyncio at the top of its modules, and the SQLite store pathlib (its `path`
    # is a Path): what those two load is theirs (the time of the import is measured by
    # benchmarks/imports.py, never asserted here)
    loaded = loaded_by(
        "from synaptum_lite import Agent, Session, SqliteCheckpointer;"
        "from synaptum_lite.testing import ScriptedGateway"
    )
    assert "synaptum_lite" in loaded and "sqlite3" in loaded  # the statement did import them
    assert sorted((loaded - loaded_by("import asyncio, pathlib")) & ONLY_SOME_FEATURES) == []


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


PACKAGE = Path(synaptum_lite.__file__).parent


def test_no_module_passes_450_lines_and_no_core_function_passes_60():
    """Issue 26's budget (it replaces issue 14's 400 lines a module): split a file only at a
    seam a reader can name; a function of the core a reader follows on one screen."""
    from scripts.layout import lines_of

    sizes = {str(p.relative_to(PACKAGE)): lines_of(p) for p in PACKAGE.rglob("*.py")}
    over = {name: n for name, n in sizes.items() if n > 450}
    assert over == {}, over
    long = {}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long[f"{path.name}:{node.name}"] = length
    assert long == {}, long


def test_each_folder_states_its_size_in_its_docstring():
    """`stores/`, `gateways/`, `integrations/` and `cli/` say in their `__init__` docstring how
    many lines they hold (`python -m scripts.update_pages` writes it; this checks it)."""
    from scripts.layout import FOLDERS, folder_lines, stated_size

    for folder in FOLDERS:
        assert stated_size(folder) == folder_lines(folder), (
            f"synaptum_lite/{folder}/__init__.py states {stated_size(folder)} lines, the folder "
            f"holds {folder_lines(folder)}: run python -m scripts.update_pages"
        )


def test_the_tree_and_the_line_counts_on_conceptos_are_what_the_package_holds_now():
    """*Conceptos* shows the package's tree and its line counts (the core's among them), written
    by `python -m scripts.update_pages` run on every notebook. A change to the package that
    was not followed by that run left the page stating yesterday's count: this names it."""
    from scripts import layout

    stale = layout.write(check=True)
    assert stale == [], f"{stale} differ from the package: run python -m scripts.update_pages"
