"""Page claims backed by tests the same session runs: held by the session's verdict, not run a
second time.

Some claims of *Escalar* and *Modelos* («the HTTP store passes the conformance suite», «a 429
is retried») are checked by tests of tests/core, tests/http and tests/postgres
(`afirmaciones_paginas.bound_cases`). Run alone, a claim's check runs those tests in a pytest
process of its own (`afirmaciones_paginas._run_once`) and asserts that each passed. In a session
that selected every one of them, as the whole suite does, that ran them twice (about 190 s of a
worker's time at rest). There the check counts the cases the session selected instead, and the
verdict waits for the session's end: `Plugin` (registered by tests/conftest.py) fails the
session when one of them failed, was skipped or did not run, naming it and the claims it backs.

The choice depends only on what the session selected, so the xdist workers (each collects the
whole selection) and the controller (which sees every worker's reports) make the same one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from tests.docs import referencia_afirmaciones
from tests.docs.referencia_afirmaciones import _matches

#: The test whose cases are the page claims: a session that runs one defers to its own tests.
CLAIM_TEST = "tests/docs/test_afirmaciones.py::test_page_claim_holds"

#: The node ids this process's session selected (set when collection ends; empty outside a
#: pytest session, e.g. under `scripts.claims`).
_selected: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Cases:
    """The cases of one test: `test` is `file::function` (every case) or `file::function[case]`
    (that one); with `store`, only the cases whose parameters name that store (as `-k http`
    selects the HTTP store's cases of a file parametrized by store)."""

    test: str
    store: str | None = None

    def of(self, nodeids: Iterable[str]) -> list[str]:
        if "::" not in self.test:  # a whole file
            found = [n for n in nodeids if n.startswith(self.test + "::")]
        else:
            found = [n for n in nodeids if _matches(n, self.test)]
        if self.store is not None:
            found = [n for n in found if self.store in _parameters(n)]
        return sorted(found)


def _parameters(nodeid: str) -> list[str]:
    """The ids of a case's parameters (`test_x[http-3-f]` → http, 3, f)."""
    _, bracket, rest = nodeid.partition("[")
    return rest.removesuffix("]").split("-") if bracket else []


@cache
def _bound() -> dict[Cases, list[str]]:
    from tests.docs.afirmaciones_paginas import bound_cases

    return bound_cases()


def deferring(selected: Iterable[str] | None = None) -> bool:
    """Whether claims leave their tests to the session: it selected every case of every test a
    claim is bound to."""
    return _deferring(_selected if selected is None else frozenset(selected))


@cache
def _deferring(nodeids: frozenset[str]) -> bool:  # asked by every claim: decided once
    return bool(nodeids) and all(cases.of(nodeids) for cases in _bound())


def selected_cases(cases: Cases) -> list[str] | None:
    """The session's cases of `cases` when the session holds them to account (`deferring`);
    None when the claim must run them itself."""
    return cases.of(_selected) if deferring() else None


def verdict(selected: Iterable[str], outcomes: dict[str, str]) -> tuple[bool, list[str]]:
    """(failed, lines): a bound case that did not pass fails the session, when the session ran a
    page claim and selected every bound test."""
    nodeids = frozenset(selected)
    if not any(n.startswith(CLAIM_TEST + "[") for n in nodeids) or not deferring(nodeids):
        return False, []
    lines, held = [], 0
    for cases, claims in _bound().items():
        for nodeid in cases.of(nodeids):
            outcome = outcomes.get(nodeid)
            if outcome == "passed":
                held += 1
                continue
            lines.append(
                f"page claim not held: {nodeid} {outcome or 'did not run'}, and it backs "
                + ", ".join(sorted(set(claims)))
            )
    if lines:
        return True, sorted(set(lines))
    return False, [f"the pages' claims on tests: all {held} bound cases passed in this session"]


class Plugin(referencia_afirmaciones.Plugin):
    """The reference's session hooks (what was selected, what each case gave, the verdict on
    the controller or without xdist), with this verdict; and, in every process, what the
    session selected, for the claims' checks."""

    def pytest_collection_finish(self, session: Any) -> None:
        global _selected
        _selected = frozenset(item.nodeid for item in session.items)
        super().pytest_collection_finish(session)

    def decide(self, session: Any) -> tuple[bool, list[str]]:
        if session.shouldstop or session.shouldfail:  # interrupted: what did not run says nothing
            return False, []
        return verdict(self.state.selected, self.state.outcomes)
