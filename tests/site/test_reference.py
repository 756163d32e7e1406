"""Every public name appears in the reference, as the built page shows it.

Public: `synaptum_lite.__all__`, and `synaptum_lite.testing.__all__`, and the functions of
`synaptum_lite.stores.transfer`. Each must have its own entry on `referencia/` (an anchor that
mkdocstrings gives every documented object), so a name added to the package and forgotten in
`docs/referencia.md` fails here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import synaptum_lite
import synaptum_lite.stores.transfer
import synaptum_lite.testing


def public_names() -> dict[str, set[str]]:
    """Each public name, as a reader imports it, and the anchors that may document it: the
    name itself, or the object's home module
    (`synaptum_lite.stores.postgres.PostgresCheckpointer`)."""
    names: dict[str, set[str]] = {}
    modules = [synaptum_lite, synaptum_lite.testing]
    for module in modules:
        for name in module.__all__:
            member = getattr(module, name)
            home = getattr(member, "__module__", module.__name__)
            names[f"{module.__name__}.{name}"] = {f"{module.__name__}.{name}", f"{home}.{name}"}
    transfer = synaptum_lite.stores.transfer
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


#: mkdocstrings' `line_length` for signatures (its default): a formatter wraps at it.
SIGNATURE_WIDTH = 60


def test_the_reference_shows_signatures_formatted_to_its_width(built_site: Path) -> None:
    """mkdocstrings formats a signature only when Black or Ruff is installed (ruff is in the
    docs group); without one it writes each signature on one line: 47 lines longer than 60
    characters, the longest 242."""
    import html

    page = (built_site / "referencia" / "index.html").read_text(encoding="utf-8")
    signatures = [
        html.unescape(re.sub(r"<[^>]+>", "", block))
        for block in re.findall(r'<div class="doc-signature highlight">(.*?)</div>', page, re.S)
    ]
    assert len(signatures) >= 60, "the reference shows fewer signatures than public names"
    lines = [line for text in signatures for line in text.splitlines()]
    long = [line for line in lines if len(line) > SIGNATURE_WIDTH]
    assert long == [], (
        f"signature lines on referencia/ longer than {SIGNATURE_WIDTH} characters (is ruff "
        f"installed? it is in the docs group of pyproject.toml): {long[:3]}"
    )
