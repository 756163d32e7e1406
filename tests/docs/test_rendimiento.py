"""*Rendimiento* is what `benchmarks.page` writes from the results it was generated from, and
every table of those results is what their raw timings make (`benchmarks.provenance`):
nobody edits its figures, a raw timing changed after the measurement no longer matches its
digest, and a change to the generator is seen at once. The page says where the figures come
from: the commit, the machine and the digest of the raw timings."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from benchmarks import page

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "latest.json"


def results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_page_is_the_rendering_of_results_made_from_their_raw_timings() -> None:
    problems = page.problems(results())
    assert not problems, "\n".join(problems)


def test_the_results_were_measured_on_a_commit_of_this_repository() -> None:
    recorded = results()["provenance"]
    assert re.fullmatch(r"[0-9a-f]{40}", recorded["commit"]), recorded["commit"]
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{recorded['commit']}^{{commit}}"], cwd=REPO, check=False
    )
    assert known.returncode == 0, f"{recorded['commit']} is not a commit of this repository"
    machine = recorded["machine"]
    for field in ("cpu", "cores", "system", "python", "load_at_start", "load_at_end"):
        assert machine.get(field), f"the provenance does not record the machine's {field}"


def test_the_page_shows_the_provenance() -> None:
    recorded = results()["provenance"]
    text = page.PAGE.read_text(encoding="utf-8")
    assert f"`{recorded['commit']}`" in text
    assert f"`{recorded['raw_sha256']}`" in text
    assert recorded["machine"]["cpu"] in text and recorded["machine"]["python"] in text
