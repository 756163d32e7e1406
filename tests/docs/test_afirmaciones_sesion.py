"""Page claims on tests the session runs: not run twice, and held by the session's verdict."""

from __future__ import annotations

from tests.docs import afirmaciones_sesion as sesion
from tests.docs.afirmaciones_paginas import bound_cases

CLAIM = f"{sesion.CLAIM_TEST}[escalar.candado]"


def _selection() -> list[str]:
    """A session's node ids holding one case of every bound test, and a claim's test."""
    ids = [CLAIM]
    for cases in bound_cases():
        if cases.store is not None:  # a whole file's cases on a store
            ids += [f"{cases.test}::test_a[{cases.store}]", f"{cases.test}::test_a[sqlite]"]
        else:
            ids.append(cases.test)
    return ids


def _all_passed(ids: list[str]) -> dict[str, str]:
    return {nodeid: "passed" for nodeid in ids}


def test_a_session_that_selected_every_bound_test_defers_and_holds_when_each_passed():
    ids = _selection()
    assert sesion.deferring(ids)
    failed, lines = sesion.verdict(ids, _all_passed(ids))
    bound = sum(len(cases.of(ids)) for cases in bound_cases())
    assert not failed and lines == [
        f"the pages' claims on tests: all {bound} bound cases passed in this session"
    ]


def test_a_bound_case_that_failed_was_skipped_or_did_not_run_fails_the_session_naming_it():
    ids = _selection()
    pg = next(c.test for c in bound_cases() if "test_a_second_process_is_told_busy" in c.test)
    http = next(c.test for c in bound_cases() if c.store) + "::test_a[http]"
    outcomes = _all_passed(ids) | {pg: "skipped", http: "failed"}
    del outcomes[next(c.test for c in bound_cases() if "test_faults" in c.test)]
    failed, lines = sesion.verdict(ids, outcomes)
    assert failed
    assert any(line.startswith(f"page claim not held: {pg} skipped") for line in lines), lines
    assert any(line.startswith(f"page claim not held: {http} failed") for line in lines), lines
    assert any("did not run" in line and "escalar.fallos" in line for line in lines), lines
    assert len(lines) == 3
    # the sqlite case of a file bound by its HTTP store's cases is not the claims' business
    other = next(c.test for c in bound_cases() if c.store) + "::test_a[sqlite]"
    assert not sesion.verdict(ids, _all_passed(ids) | {other: "failed"})[0]


def test_a_session_without_every_bound_test_or_without_a_claim_leaves_claims_their_own_run():
    ids = _selection()
    assert sesion.verdict([i for i in ids if i != CLAIM], {})[1] == []
    partial = [i for i in ids if "tests/postgres/" not in i]
    assert not sesion.deferring(partial)
    assert sesion.verdict(partial, _all_passed(partial)) == (False, [])
    assert not sesion.deferring([])


def test_cases_select_as_their_name_says():
    ids = [
        "f.py::t[http-1]",
        "f.py::t[sqlite-1]",
        "f.py::t_more[http]",
        "f.py::u",
        "g.py::t[http]",
    ]
    assert sesion.Cases("f.py::t").of(ids) == ["f.py::t[http-1]", "f.py::t[sqlite-1]"]
    assert sesion.Cases("f.py::t[sqlite-1]").of(ids) == ["f.py::t[sqlite-1]"]
    assert sesion.Cases("f.py", store="http").of(ids) == ["f.py::t[http-1]", "f.py::t_more[http]"]
