"""Every public name appears in the reference, as the built page shows it.

Public: `synaptum_lite.__all__`, and `synaptum_lite.testing.__all__`, and the functions of
`synaptum_lite.transfer`. Each must have its own entry on `referencia/` (an anchor that
mkdocstrings gives every documented object), so a name added to the package and forgotten in
`docs/referencia.md` fails here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import synaptum_lite
import synaptum_lite.testing
import synaptum_lite.transfer


def public_names() -> dict[str, set[str]]:
    """Each public name, as a reader imports it, and the anchors that may document it: the
    name itself, or the object's home module (`synaptum_lite.postgres.PostgresCheckpointer`)."""
    names: dict[str, set[str]] = {}
    modules = [synaptum_lite, synaptum_lite.testing]
    for module in modules:
        for name in module.__all__:
            member = getattr(module, name)
            home = getattr(member, "__module__", module.__name__)
            names[f"{module.__name__}.{name}"] = {f"{module.__name__}.{name}", f"{home}.{name}"}
    transfer = synaptum_lite.transfer
    for name, member in vars(transfer).items():
        if not name.startswith("_") and inspect.isfunction(member):
            if member.__module__ == transfer.__name__:
                names[f"{transfer.__name__}.{name}"] = {f"{transfer.__name__}.{name}"}
    return names


def test_every_public_name_has_an_entry_in_the_reference(built_site: Path) -> None:
    page = (built_site / "referencia" / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'\bid="(synaptum_lite(?:\.\w+)+)"', page))
    missing = [name for name, documented in public_names().items() if not documented & anchors]
    assert missing == [], f"public names with no entry on referencia/: {missing}"
    assert len(public_names()) >= 60  # the rule above found the names it is about
