"""The public surface is declared once, in `__all__`, and kept honest."""

from __future__ import annotations

import inspect
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


def test_the_core_imports_with_the_standard_library_alone():
    code = (
        "import sys, synaptum_lite, synaptum_lite.testing;"
        "stdlib = set(sys.stdlib_module_names);"
        "ours = {'synaptum_lite', '__main__'};"
        "print(sorted({m.split('.')[0] for m in sys.modules} - stdlib - ours))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
