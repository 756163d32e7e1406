"""The normalisation rules are accountable: each says why it exists and changes its own
example, and the README and *Probar* describe the list as it is (today: empty)."""

from __future__ import annotations

import re

import pytest

from scripts.normalization import NORMALIZATION_RULES, Rule, description, normalize
from scripts.pages import DOCS, REPO, relative

DESCRIBED_ON = [REPO / "README.md", DOCS / "probar.md"]


def rule_problems(rules: tuple[Rule, ...]) -> list[str]:
    """What makes a rule unaccountable: no reason, or an example it leaves unchanged."""
    problems = []
    for rule in rules:
        if not rule.why.strip():
            problems.append(f"normalisation rule {rule.name!r} does not say why it exists")
        if normalize(rule.example, (rule,)) == rule.example:
            problems.append(
                f"normalisation rule {rule.name!r} does not change its example {rule.example!r}"
            )
    return problems


def description_problems(rules: tuple[Rule, ...], page_text: str, page_name: str) -> list[str]:
    """The page must describe the list as `description(rules)` words it."""
    flat = " ".join(page_text.split())
    wanted = description(rules)
    if wanted in flat:
        return []
    return [
        f"{page_name} does not describe the normalisation list as it is: it must say "
        f"«{wanted}» (scripts/normalization.py has {len(rules)} rule(s))"
    ]


def test_every_rule_says_why_and_changes_its_example() -> None:
    assert rule_problems(NORMALIZATION_RULES) == []


@pytest.mark.parametrize("page", DESCRIBED_ON, ids=relative)
def test_the_page_describes_the_list_as_it_is(page) -> None:
    problems = description_problems(
        NORMALIZATION_RULES, page.read_text(encoding="utf-8"), relative(page)
    )
    assert problems == [], problems[0] if problems else ""


def test_a_rule_that_changes_nothing_or_an_undescribed_rule_is_caught() -> None:
    idle = Rule("nada", r"xyz", "abc", "", example="sin coincidencias")
    assert rule_problems((idle,)) == [
        "normalisation rule 'nada' does not say why it exists",
        "normalisation rule 'nada' does not change its example 'sin coincidencias'",
    ]
    temporal = Rule("ruta", r"/tmp/\w+", "/tmp/…", "la carpeta temporal cambia", example="/tmp/ab")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [problem] = description_problems((temporal,), readme, "README.md")
    assert re.search(r"«Tiene 1 regla: `ruta`, la carpeta temporal cambia»", problem)
