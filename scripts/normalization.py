"""The normalisation rules: what is rewritten in a notebook's printed output before it is
compared with, or written into, its page. Used by both the check and the update command.

The list is empty, and should stay short. Output is made deterministic at the source: the
notebooks print `runs.db`, never the temporary folder it lives in; the core derives step ids
from positions and takes its clock as a parameter; nothing prints a line count of a file of
this repository. A rule belongs here only for what cannot be fixed at the source, and then
it says which notebook needs it and why, so that a reader can judge whether it still does.

To add one, append a `Rule`: a regular expression, its replacement, the reason, and an
example of printed text that the rule must change. tests/docs/test_normalization.py applies
each rule to its example, and checks that the README and the *Probar* page describe the list
as `description()` does (today: empty).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """Replace every match of `pattern` with `replacement` (see `re.sub`)."""

    name: str
    pattern: str
    replacement: str
    why: str
    example: str  # printed text this rule must change


NORMALIZATION_RULES: tuple[Rule, ...] = ()


def normalize(printed: str, rules: tuple[Rule, ...] = NORMALIZATION_RULES) -> str:
    """`printed` with every rule applied, in order."""
    for rule in rules:
        printed = re.sub(rule.pattern, rule.replacement, printed)
    return printed


def description(rules: tuple[Rule, ...] = NORMALIZATION_RULES) -> str:
    """How the README and the *Probar* page describe the list, in their words (Spanish)."""
    if not rules:
        return "Está vacía: la salida es determinista en su origen"
    names = "; ".join(f"`{rule.name}`, {rule.why}" for rule in rules)
    return f"Tiene {len(rules)} regla{'s' if len(rules) != 1 else ''}: {names}"
