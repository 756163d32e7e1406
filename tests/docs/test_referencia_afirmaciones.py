"""The reference's docstrings join the claims (issue 29): each paragraph `docs/referencia.md`
renders is bound to the tests that prove it, or excused with a reason of the fixed list, in
tests/docs/referencia_afirmaciones.json; a bound test must pass in the same session (the hooks
of tests/conftest.py). The logic is in tests/docs/referencia_afirmaciones.py."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bounds import HANG
from tests.docs import referencia_afirmaciones as ra


@pytest.fixture(scope="module")
def paragraphs() -> dict[str, list[ra.Paragraph]]:
    return ra.rendered_paragraphs()


@pytest.fixture
def bindings() -> dict[str, list[dict]]:
    return ra.load_map()


def test_every_paragraph_the_reference_renders_is_bound_or_excused(paragraphs, bindings):
    problems = ra.problems(paragraphs, bindings)
    assert problems == [], "\n".join(problems)


def test_the_paragraphs_read_are_those_the_reference_renders(paragraphs):
    """The walk finds what it is about: every `::: name` entry, the members mkdocstrings shows
    (a method's docstring), and not what it hides (`members: false`, private names)."""
    entries = {name for name, _ in ra.reference_entries()}
    assert {p.entry for found in paragraphs.values() for p in found} == entries
    assert "synaptum_lite.Agent.run" in paragraphs  # a member rendered under its class
    assert "synaptum_lite.Checkpointer.hold" in paragraphs
    assert not any(".errors." in owner for owner in paragraphs)  # members: false
    assert not any("._" in owner for owner in paragraphs)  # filters: ["!^_"]
    assert sum(len(found) for found in paragraphs.values()) >= 150


# ── Regression cases: each kind of drift, on copies of the inputs ─────────────


def test_a_paragraph_added_to_a_docstring_without_an_entry_fails_naming_it(paragraphs, bindings):
    changed = copy.deepcopy(paragraphs)
    added = ra.Paragraph("synaptum_lite.Agent", "synaptum_lite.Agent.run", "Never pays twice.")
    changed["synaptum_lite.Agent.run"].append(added)
    problems = ra.problems(changed, bindings)
    assert len(problems) == 1
    assert "synaptum_lite.Agent.run (reference entry `::: synaptum_lite.Agent`)" in problems[0]
    assert "«Never pays twice.» has no entry" in problems[0]
    assert '{"texto": "Never pays twice.", "huella": "' in problems[0]


def test_a_paragraph_rewritten_at_its_start_fails_with_the_entry_to_write(paragraphs, bindings):
    changed = copy.deepcopy(paragraphs)
    old = changed["synaptum_lite.Checkpointer.hold"][0]
    changed["synaptum_lite.Checkpointer.hold"][0] = ra.Paragraph(
        old.entry, old.owner, "Take the run; " + old.text
    )
    problems = ra.problems(changed, bindings)
    assert len(problems) == 1 and "does not match its entry «Hold the right" in problems[0]


def test_words_changed_after_their_start_fail_until_recorded(paragraphs, bindings):
    changed = copy.deepcopy(paragraphs)
    old = changed["synaptum_lite.Checkpointer.hold"][0]
    changed["synaptum_lite.Checkpointer.hold"][0] = ra.Paragraph(
        old.entry, old.owner, old.text.replace("at once", "after a minute")
    )
    problems = ra.problems(changed, bindings)
    assert len(problems) == 1
    assert "the words of «Hold the right" in problems[0]
    assert "test_one_driver_at_a_time_and_the_lock_is_released" in problems[0]
    assert ra.UPDATE in problems[0]


def test_a_runtime_sentence_excused_with_no_afirma_fails(paragraphs, bindings):
    changed = copy.deepcopy(bindings)
    entry = changed["synaptum_lite.Checkpointer.hold"][0]
    del entry["pruebas"]
    entry["no-afirma"] = "definición — what holding is"
    problems = ra.problems(paragraphs, changed)
    assert len(problems) == 1
    assert "excused with no-afirma «definición — what holding is»" in problems[0]
    assert "(raises, once)" in problems[0] or "(raises)" in problems[0]


def test_a_reason_outside_the_list_fails(paragraphs, bindings):
    changed = copy.deepcopy(bindings)
    changed["synaptum_lite.Phase"][0]["no-afirma"] = "obvio"
    problems = ra.problems(paragraphs, changed)
    assert len(problems) == 1 and "the no-afirma reason «obvio» is not in the list" in problems[0]


@pytest.mark.parametrize(
    "test, said",
    [
        ("tests/core/test_resume.py::test_that_was_never_written", "defines no test_that_was"),
        ("tests/core/test_gone.py::test_x", "no file tests/core/test_gone.py"),
        ("tests/core/test_resume.py::test_resume_skips_tool_calls_already_journaled[x]", "not"),
    ],
)
def test_a_bound_test_that_does_not_exist_fails(paragraphs, bindings, test, said):
    changed = copy.deepcopy(bindings)
    changed["synaptum_lite.Checkpointer.hold"][0]["pruebas"] = [test]
    problems = ra.problems(paragraphs, changed)
    assert len(problems) == 1 and test in problems[0] and said in problems[0]


def test_an_entry_with_neither_tests_nor_reason_fails(paragraphs, bindings):
    changed = copy.deepcopy(bindings)
    changed["synaptum_lite.Checkpointer.hold"][0]["pruebas"] = []
    problems = ra.problems(paragraphs, changed)
    assert len(problems) == 1 and 'either "pruebas"' in problems[0]


def test_the_update_command_records_changed_words_beside_their_tests(tmp_path, monkeypatch):
    path = tmp_path / "map.json"
    bindings = ra.load_map()
    bindings["synaptum_lite.Checkpointer.hold"][0]["huella"] = "000000000000"
    ra.write_map(bindings, path)
    lines = ra.update(path)
    assert ra.load_map(path) == ra.load_map()  # recorded again as the docstring says
    shown = "\n".join(lines)
    assert "«Hold the right to drive the run; raises `RunBusy` at once" in shown
    assert "bound to tests/core/test_conformance.py::test_one_driver_at_a_time" in shown


# ── Ran and held: the session's verdict ───────────────────────────────────────

CHECK = ra.CHECK_FILE + "::test_every_paragraph_the_reference_renders_is_bound_or_excused"
BOUND = {"tests/core/test_x.py::test_a": ["A.b: «A says»"], "tests/core/test_y.py::test_p": ["C"]}


def _session(outcomes: dict[str, str], selected: list[str] | None = None) -> ra.SessionBindings:
    state = ra.SessionBindings()
    state.collected(selected if selected is not None else [CHECK, *outcomes])
    for nodeid, outcome in outcomes.items():
        state.report(nodeid, "setup", "passed")
        state.report(nodeid, "call", outcome)
        state.report(nodeid, "teardown", "passed")
    return state


def test_a_session_where_every_bound_test_passed_holds():
    failed, lines = _session(
        {
            "tests/core/test_x.py::test_a": "passed",
            "tests/core/test_y.py::test_p[1]": "passed",
            "tests/core/test_y.py::test_p[2]": "passed",
        }
    ).verdict(BOUND)
    assert not failed and lines == ["the reference's docstrings: all 2 bound tests passed"]


@pytest.mark.parametrize("outcome", ["failed", "skipped"])
def test_a_bound_test_that_did_not_pass_fails_the_session_naming_its_paragraph(outcome):
    failed, lines = _session(
        {
            "tests/core/test_x.py::test_a": outcome,
            "tests/core/test_y.py::test_p[1]": "passed",
        }
    ).verdict(BOUND)
    assert failed
    assert lines == [
        f"reference claim not held: tests/core/test_x.py::test_a {outcome}, and it backs "
        "A.b: «A says»"
    ]


def test_a_failure_in_teardown_is_not_a_pass():
    state = _session(
        {"tests/core/test_x.py::test_a": "passed", "tests/core/test_y.py::test_p": "passed"}
    )
    state.report("tests/core/test_x.py::test_a", "teardown", "failed")
    assert state.verdict(BOUND)[0]


def test_a_session_that_selected_some_bound_tests_says_they_were_not_checked():
    state = _session({"tests/core/test_x.py::test_a": "failed"})
    failed, lines = state.verdict(BOUND)
    assert not failed
    assert lines[0].startswith("the reference's bindings were not checked: 1 of the 2 tests")


def test_a_session_without_the_check_says_nothing():
    state = _session(
        {"tests/core/test_x.py::test_a": "failed"}, selected=["tests/core/test_x.py::test_a"]
    )
    assert state.verdict(BOUND) == (False, [])


PROJECT_CONFTEST = """
from tests.docs import referencia_afirmaciones as ra

def pytest_configure(config):
    config.pluginmanager.register(ra.Plugin(config), "referencia")
"""


def _project(tmp_path: Path, bound: str) -> Path:
    """A temporary project with the hooks of tests/conftest.py, a check test, and a bound test
    whose body is `bound`."""
    project = tmp_path / "proyecto"
    (project / "tests" / "docs").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / "conftest.py").write_text(PROJECT_CONFTEST, encoding="utf-8")
    (project / ra.CHECK_FILE).write_text("def test_check():\n    pass\n", encoding="utf-8")
    (project / "tests" / "test_b.py").write_text(
        f"import pytest\n\ndef test_bound():\n    {bound}\n\ndef test_other():\n    pass\n",
        encoding="utf-8",
    )
    entry = {"texto": "X…", "huella": "0", "pruebas": ["tests/test_b.py::test_bound"]}
    (project / "map.json").write_text(json.dumps({"synaptum_lite.X": [entry]}), encoding="utf-8")
    return project


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {
        **os.environ,
        "PYTHONPATH": str(ra.ROOT),
        ra.MAP_FOR_SESSION: str(project / "map.json"),
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_real_session_fails_when_a_bound_test_did_not_pass_with_or_without_xdist(
    tmp_path, workers
):
    """A bound test that is skipped (no server, another platform) leaves pytest's exit status
    0: the hooks make it 1, naming the test and the paragraph it backs."""
    skipped = _project(tmp_path / "skipped", 'pytest.skip("no server here")')
    whole = _pytest(skipped, "-n", workers)
    assert whole.returncode == 1, whole.stdout
    assert (
        "reference claim not held: tests/test_b.py::test_bound skipped, and it backs "
        "synaptum_lite.X: «X…»" in whole.stdout
    )
    # the bound test deselected: the bindings are not checked, and that is no failure
    partial = _pytest(skipped, "-n", workers, "-k", "not test_bound")
    assert partial.returncode == 0, partial.stdout
    assert "the reference's bindings were not checked" in partial.stdout
    # a bound test that fails fails the session, and the line names it too
    failing = _pytest(_project(tmp_path / "failing", "assert False"), "-n", workers)
    assert failing.returncode == 1, failing.stdout
    assert "reference claim not held: tests/test_b.py::test_bound failed" in failing.stdout
    # held: the session passes and says so
    held = _pytest(_project(tmp_path / "held", "assert True"), "-n", workers)
    assert held.returncode == 0, held.stdout
    assert "the reference's docstrings: all 1 bound tests passed" in held.stdout


def test_the_suite_registers_the_same_plugin(tmp_path):
    """tests/conftest.py registers the very plugin the temporary project above registers, so
    the sessions those tests run are the suite's own hooks, not a copy of them."""
    conftest = (ra.ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    registration = "config.pluginmanager.register(referencia_afirmaciones.Plugin(config)"
    assert registration in conftest
    assert registration.replace("referencia_afirmaciones.", "ra.") in PROJECT_CONFTEST
