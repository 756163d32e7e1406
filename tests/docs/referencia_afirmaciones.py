"""The reference's docstrings as claims: each paragraph the reference renders is bound, beside
the code, to the tests that prove it, or excused with a `no-afirma` reason.

`docs/referencia.md` renders, for each `::: name` entry, the docstring of the object and of the
members mkdocstrings shows (read statically with griffe, as the site does: the options of
mkdocs.yml, `members_order: source`, `filters: ["!^_"]`, `show_if_no_docstring: false`,
`merge_init_into_class`, and an entry's own `members: false`). The docstrings stay clean (the
learner's reading path); the binding lives in `MAP`, `tests/docs/referencia_afirmaciones.json`:

    {"synaptum_lite.Agent.run": [
        {"texto": "Drive the run `session.run_id` on `task`, yielding…",
         "huella": "3f2a…", "pruebas": ["tests/core/test_resume.py::test_…"]},
        {"texto": "Hold the right…", "huella": "…", "no-afirma": "definición — …"}]}

one key per rendered object (in the page's order), one entry per paragraph (a blank-line
block of a text section; each item of an Args/Returns/Raises/… section), aligned. `texto` is
the paragraph's first words (`scripts.claims.opening`), `huella` a short hash of its
normalised words. What is checked (`problems`, run by tests/docs/test_referencia_afirmaciones.py):

- the map is aligned with the docstrings: a paragraph added, removed or rewritten at its start
  fails, naming the object and the paragraph, with the entry to write;
- a paragraph whose words changed (same start, another `huella`) fails until its words are
  re-recorded with `uv run python -m tests.docs.referencia_afirmaciones --actualiza`, which
  prints each changed paragraph beside the tests bound to it, to read together;
- every bound test exists (its file, and the function found by parsing the file);
- a `no-afirma` reason is a key of `scripts.claims.NO_CLAIM_REASONS`, and the paragraph it
  excuses states nothing the runtime does (`RUNTIME_WORDS`: "returns", "raises", "never"…).

Ran and held (`SessionBindings`, driven by `Plugin`, which tests/conftest.py registers): a
bound test must have passed in the same session. When the check test is part of a session that
selected every bound test, a bound test that failed, was skipped or did not run fails the
session, naming it and the paragraph it backs; when the session selected only some of them,
the summary says the bindings were not checked.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "referencia.md"
MAP = ROOT / "tests" / "docs" / "referencia_afirmaciones.json"
#: The test file whose tests make a session check the bindings.
CHECK_FILE = "tests/docs/test_referencia_afirmaciones.py"
UPDATE = "uv run python -m tests.docs.referencia_afirmaciones --actualiza"

#: Words of a paragraph that say what the runtime does: such a paragraph cannot be excused with
#: a `no-afirma` (the docstrings are English; a few Spanish forms for a translated one).
RUNTIME_WORDS = (
    "returns",
    "returned",
    "raises",
    "raised",
    "raise",
    "writes",
    "written",
    "resumes",
    "refuses",
    "refused",
    "never",
    "retries",
    "retried",
    "yields",
    "yielded",
    "replays",
    "replayed",
    "journals",
    "journaled",
    "records",
    "stops",
    "skips",
    "skipping",
    "propagates",
    "reconnects",
    "repeats",
    "devuelve",
    "escribe",
    "reanuda",
    "rechaza",
    "nunca",
)
_RUNTIME = re.compile(r"\b(" + "|".join(map(re.escape, RUNTIME_WORDS)) + r")\b", re.I)


# ── What the reference renders ───────────────────────────────────────────────


@dataclass(frozen=True)
class Paragraph:
    """One paragraph the reference renders: the `::: name` entry it is under, the object whose
    docstring holds it, and its words."""

    entry: str
    owner: str
    text: str

    @property
    def words(self) -> str:
        return unicodedata.normalize("NFC", " ".join(self.text.split()))

    @property
    def huella(self) -> str:
        return hashlib.sha256(self.words.encode("utf-8")).hexdigest()[:12]

    @property
    def texto(self) -> str:
        from scripts.claims import opening

        return opening(self.words)

    def quote(self, width: int = 100) -> str:
        words = self.words
        return words if len(words) <= width else words[: width - 1] + "…"


def reference_entries(markdown: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Each `::: name` of the reference, with the options written under it."""
    import yaml

    text = REFERENCE.read_text(encoding="utf-8") if markdown is None else markdown
    found: list[tuple[str, dict[str, Any]]] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^::: (\S+)\s*$", line)
        if not match:
            continue
        block = []
        for following in lines[index + 1 :]:
            if not following.startswith("    "):
                break
            block.append(following)
        options = (yaml.safe_load("\n".join(block)) or {}) if block else {}
        found.append((match.group(1), dict(options.get("options") or {})))
    return found


@cache
def _package() -> Any:
    import griffe

    loader = griffe.GriffeLoader(search_paths=[str(ROOT)], docstring_parser=griffe.Parser.google)
    package = loader.load("synaptum_lite")
    loader.resolve_aliases(implicit=False, external=None)
    return package


def _shown_members(obj: Any) -> list[Any]:
    """The members mkdocstrings renders under `obj` with the site's options (children.html)."""
    shown = []
    for member in obj.members.values():
        if member.inherited or member.name.startswith("_") or member.is_module:
            continue
        if not member.has_docstrings or (member.is_imported and not member.is_public):
            continue
        shown.append(member)
    return shown


def _paragraphs_of(docstring: Any) -> Iterator[str]:
    for section in docstring.parsed:
        kind = section.kind.value
        if kind == "text":
            yield from _blocks(section.value)
        elif kind == "admonition":
            yield from _blocks(section.value.description)
        elif isinstance(section.value, list):  # Args, Raises, Attributes…: one per item
            for item in section.value:
                name = getattr(item, "name", None) or str(getattr(item, "annotation", "") or "")
                yield f"{kind}: {name}: {item.description}".strip()
        elif section.value is not None:
            yield f"{kind}: {section.value}"


def _blocks(text: str) -> Iterator[str]:
    """Blank-line blocks of a text section; a fenced code block stays whole."""
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                yield "\n".join(current)
            current = []
        else:
            current.append(line)
    if current:
        yield "\n".join(current)


def _walk(entry: str, obj: Any, path: str, render_members: bool) -> Iterator[Paragraph]:
    docstrings = [obj.docstring] if obj.docstring else []
    if obj.is_class and "__init__" in obj.members and obj.members["__init__"].docstring:
        docstrings.append(obj.members["__init__"].docstring)  # merge_init_into_class
    for docstring in docstrings:
        for text in _paragraphs_of(docstring):
            yield Paragraph(entry, path, text)
    if render_members and (obj.is_class or obj.is_module):
        for member in _shown_members(obj):
            yield from _walk(entry, member, f"{path}.{member.name}", render_members)


def rendered_paragraphs(markdown: str | None = None) -> dict[str, list[Paragraph]]:
    """The paragraphs the reference renders, by the object whose docstring holds them, in the
    page's order."""
    package = _package()
    found: dict[str, list[Paragraph]] = {}
    for name, options in reference_entries(markdown):
        obj = package[name.split(".", 1)[1]] if "." in name else package
        for paragraph in _walk(name, obj, name, options.get("members", True) is not False):
            found.setdefault(paragraph.owner, []).append(paragraph)
    return found


# ── The map ──────────────────────────────────────────────────────────────────


def load_map(path: Path = MAP) -> dict[str, list[dict[str, Any]]]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def write_map(bindings: dict[str, list[dict[str, Any]]], path: Path = MAP) -> None:
    text = json.dumps(bindings, ensure_ascii=False, indent=1)
    path.write_text(text + "\n", encoding="utf-8")


def entry_to_write(paragraph: Paragraph) -> str:
    entry = {"texto": paragraph.texto, "huella": paragraph.huella, "pruebas": ["tests/…::test_…"]}
    return json.dumps(entry, ensure_ascii=False)


def alignment_problems(
    paragraphs: dict[str, list[Paragraph]], bindings: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """The map out of step with the docstrings: an object or a paragraph with no entry, an
    entry with no paragraph, an entry whose `texto` is not its paragraph's start."""
    problems = []
    for owner, found in paragraphs.items():
        entries = bindings.get(owner, [])
        where = f"{owner} (reference entry `::: {found[0].entry}`)"
        for index, paragraph in enumerate(found):
            if index >= len(entries):
                problems.append(
                    f"{where}, paragraph {index + 1} «{paragraph.quote()}» has no entry in "
                    f"{MAP.relative_to(ROOT)}: bind it to the tests that prove it, or excuse "
                    f"it (a definition, a link…); write {entry_to_write(paragraph)}"
                )
            elif entries[index].get("texto") != paragraph.texto:
                problems.append(
                    f"{where}, paragraph {index + 1} «{paragraph.quote()}» does not match its "
                    f"entry «{entries[index].get('texto')}» (a paragraph added, removed or "
                    f"rewritten at its start): its entry is {entry_to_write(paragraph)}"
                )
        for index in range(len(found), len(entries)):
            problems.append(
                f"{where}: entry {index + 1} «{entries[index].get('texto')}» has no paragraph "
                f"(removed from the docstring?): remove the entry"
            )
    for owner in bindings:
        if owner not in paragraphs:
            problems.append(
                f"{owner}: the map has entries for an object the reference does not render: "
                f"remove them"
            )
    return problems


def aligned(
    paragraphs: dict[str, list[Paragraph]], bindings: dict[str, list[dict[str, Any]]]
) -> Iterator[tuple[Paragraph, dict[str, Any]]]:
    """Each paragraph with its entry, where the entry's `texto` is the paragraph's start."""
    for owner, found in paragraphs.items():
        for paragraph, entry in zip(found, bindings.get(owner, []), strict=False):
            if entry.get("texto") == paragraph.texto:
                yield paragraph, entry


def fingerprint_problems(
    paragraphs: dict[str, list[Paragraph]], bindings: dict[str, list[dict[str, Any]]]
) -> list[str]:
    return [
        f"{paragraph.owner}: the words of «{paragraph.quote()}» changed (huella "
        f"{entry.get('huella')} recorded, {paragraph.huella} now): re-read the tests bound to "
        f"it ({', '.join(entry.get('pruebas', [])) or entry.get('no-afirma')}), make them prove "
        f"what the words now say, then record the words with `{UPDATE}`"
        for paragraph, entry in aligned(paragraphs, bindings)
        if entry.get("huella") != paragraph.huella
    ]


def runtime_words(text: str) -> list[str]:
    """The words of `text` that say what the runtime does (`RUNTIME_WORDS`)."""
    return [m.group(1) for m in _RUNTIME.finditer(text)]


def binding_problems(
    paragraphs: dict[str, list[Paragraph]], bindings: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """Each entry binds tests that exist, or gives a valid reason for a paragraph that states
    nothing the runtime does."""
    from scripts.claims import reason_problem

    problems = []
    for paragraph, entry in aligned(paragraphs, bindings):
        where = f"{paragraph.owner}, «{paragraph.quote(70)}»"
        tests, reason = entry.get("pruebas"), entry.get("no-afirma")
        if (tests is None) == (reason is None) or tests == []:
            problems.append(
                f'{where}: an entry has either "pruebas" (a non-empty list of test ids) or '
                f'"no-afirma" (a reason), not both, not neither'
            )
            continue
        if reason is not None:
            if problem := reason_problem(reason):
                problems.append(f"{where}: {problem}")
            if said := runtime_words(paragraph.words):
                problems.append(
                    f"{where}: excused with no-afirma «{reason}», but it says what the runtime "
                    f"does ({', '.join(dict.fromkeys(said))}): bind it to the tests that prove it"
                )
        for test in tests or []:
            if problem := bound_test_problem(test):
                problems.append(f"{where}: {problem}")
    return problems


@cache
def _parsed(file: Path) -> ast.Module:
    return ast.parse(file.read_text(encoding="utf-8"))


def bound_test_problem(test: str, root: Path = ROOT) -> str | None:
    """What is wrong with a bound test id (`path::name`, `path::Class::name`, optionally
    `[param]`), or None when the file defines that test."""
    path, _, rest = test.partition("::")
    names = rest.split("[", 1)[0].split("::")
    parametrized = "[" in rest
    file = root / path
    if not rest or not path.endswith(".py") or not file.is_file():
        return f"the bound test {test} does not exist (no file {path}, or no ::test name)"
    scope: list[ast.stmt] = _parsed(file).body
    for index, name in enumerate(names):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and n.name == name
            ),
            None,
        )
        if node is None:
            return f"the bound test {test} does not exist: {path} defines no {name}"
        if index < len(names) - 1:
            if not isinstance(node, ast.ClassDef):
                return f"the bound test {test} does not exist: {name} is not a class"
            scope = node.body
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not (
            name.startswith("test")
        ):
            return f"the bound test {test} is not a test function"
        elif parametrized and not (
            any("parametrize" in ast.unparse(d) for d in node.decorator_list) or node.args.args
        ):  # parametrized by a decorator, or by a fixture among its arguments
            return f"the bound test {test} names a parameter, but {name} is not parametrized"
    return None


def problems(
    paragraphs: dict[str, list[Paragraph]] | None = None,
    bindings: dict[str, list[dict[str, Any]]] | None = None,
) -> list[str]:
    paragraphs = rendered_paragraphs() if paragraphs is None else paragraphs
    bindings = load_map() if bindings is None else bindings
    return (
        alignment_problems(paragraphs, bindings)
        + fingerprint_problems(paragraphs, bindings)
        + binding_problems(paragraphs, bindings)
    )


def bound_tests(
    bindings: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, list[str]]:
    """Each bound test id, with the paragraphs it backs (`owner: «texto»`)."""
    bindings = load_map() if bindings is None else bindings
    found: dict[str, list[str]] = {}
    for owner, entries in bindings.items():
        for entry in entries:
            for test in entry.get("pruebas", []):
                found.setdefault(test, []).append(f"{owner}: «{entry.get('texto')}»")
    return found


# ── Ran and held: the session's verdict ──────────────────────────────────────


def _matches(nodeid: str, test: str) -> bool:
    return nodeid == test or ("[" not in test and nodeid.startswith(test + "["))


@dataclass
class SessionBindings:
    """What a pytest session saw of the bound tests (tests/conftest.py feeds it)."""

    selected: set[str] = field(default_factory=set)
    outcomes: dict[str, str] = field(default_factory=dict)  # nodeid -> passed/failed/skipped

    def collected(self, nodeids: Iterable[str]) -> None:
        self.selected.update(nodeids)

    def report(self, nodeid: str, when: str, outcome: str) -> None:
        """One phase's report: a failure in any phase, or a skip, is final; a pass counts from
        the call phase."""
        before = self.outcomes.get(nodeid)
        if outcome == "failed" or before == "failed":
            self.outcomes[nodeid] = "failed"
        elif outcome == "skipped":
            self.outcomes[nodeid] = "skipped"
        elif when == "call" and before is None:
            self.outcomes[nodeid] = "passed"

    def verdict(self, bound: dict[str, list[str]]) -> tuple[bool, list[str]]:
        """(failed, lines): lines for the summary; failed when the check ran in this session,
        every bound test was selected, and one of them did not pass."""
        if not any(nodeid.startswith(CHECK_FILE + "::") for nodeid in self.selected):
            return False, []
        unselected = [t for t in bound if not any(_matches(n, t) for n in self.selected)]
        if unselected:
            return False, [
                f"the reference's bindings were not checked: {len(unselected)} of the "
                f"{len(bound)} tests bound to its docstrings were not selected in this session "
                f"(e.g. {unselected[0]}); the whole suite checks them"
            ]
        lines = []
        for test, backs in bound.items():
            runs = [outcome for nodeid, outcome in self.outcomes.items() if _matches(nodeid, test)]
            if not runs or any(outcome != "passed" for outcome in runs):
                how = "did not run" if not runs else "/".join(sorted(set(runs)))
                lines.append(
                    f"reference claim not held: {test} {how}, and it backs " + "; ".join(backs)
                )
        if lines:
            return True, lines
        return False, [f"the reference's docstrings: all {len(bound)} bound tests passed"]


# ── The session plugin (registered by tests/conftest.py; the logic here) ──────

#: Where the session hooks read the map from, when set (tests/docs/test_referencia_afirmaciones.py
#: runs a session of a temporary project with its own map); otherwise `MAP`.
MAP_FOR_SESSION = "SYNAPTUM_REFERENCIA_MAPA"


class Plugin:
    """The pytest hooks that make a bound test's result part of the session's verdict.

    tests/conftest.py registers one in `pytest_configure`
    (`config.pluginmanager.register(Plugin(config))`), and so does the temporary project of
    tests/docs/test_referencia_afirmaciones.py: both sessions run these very hooks.
    """

    def __init__(self, config: Any) -> None:
        self.config = config
        self.state = SessionBindings()
        self.lines: tuple[bool, list[str]] = (False, [])

    def pytest_collection_finish(self, session: Any) -> None:
        """Without xdist: the tests this session selected."""
        self.state.collected(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Iterable[str]) -> None:
        """On the xdist controller, once per worker: the tests it selected."""
        self.state.collected(ids)

    def pytest_runtest_logreport(self, report: Any) -> None:
        """On the xdist controller this sees every worker's reports."""
        self.state.report(report.nodeid, report.when, report.outcome)

    def pytest_sessionfinish(self, session: Any) -> None:
        """On the controller (or without xdist), decide; a bound test that did not pass fails
        the session (exit status 1)."""
        if getattr(self.config, "workerinput", None) is not None or self.config.option.collectonly:
            return  # an xdist worker (the controller has every report), or nothing ran
        self.lines = self.decide(session)
        if self.lines[0] and session.exitstatus == 0:
            session.exitstatus = 1

    def decide(self, session: Any) -> tuple[bool, list[str]]:
        """(failed, lines for the summary): the bound tests' verdict."""
        path = Path(os.environ.get(MAP_FOR_SESSION) or MAP)
        try:
            bound = bound_tests(load_map(path))
        except (OSError, ValueError) as error:
            bound = {f"(the map {path} cannot be read: {error})": []}
        return self.state.verdict(bound)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The verdict's lines (red when they fail the session)."""
        failed, lines = self.lines
        for line in lines:
            terminalreporter.write_line(line, red=failed, bold=failed)


# ── Re-recording words ───────────────────────────────────────────────────────


def _test_docstring(test: str) -> str:
    path, _, rest = test.partition("::")
    name = rest.split("[", 1)[0].split("::")[-1]
    try:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    except OSError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return " ".join((ast.get_docstring(node) or "(no docstring)").split())
    return ""


def update(path: Path = MAP) -> list[str]:
    """Record the words (`huella`) of aligned paragraphs whose words changed; the lines to print,
    each changed paragraph beside its tests. Entries out of step are left to be written by hand
    (the check gives each one)."""
    paragraphs, bindings = rendered_paragraphs(), load_map(path)
    lines = []
    for paragraph, entry in aligned(paragraphs, bindings):
        if entry.get("huella") == paragraph.huella:
            continue
        entry["huella"] = paragraph.huella
        lines.append(f"\n{paragraph.owner}:\n  «{paragraph.words}»")
        for test in entry.get("pruebas", []):
            lines.append(f"  bound to {test}: {_test_docstring(test)}")
        if "no-afirma" in entry:
            lines.append(f"  no-afirma: {entry['no-afirma']}")
    write_map(bindings, path)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actualiza", action="store_true", help="record changed words")
    args = parser.parse_args(argv)
    if args.actualiza:
        lines = update()
        print("\n".join(lines) if lines else "no paragraph's words changed")
        print("\nread each paragraph beside its tests before committing the map")
    found = problems()
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
