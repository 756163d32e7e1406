"""*Rendimiento* is what `benchmarks.page` writes from the results it was generated from:
nobody edits its figures, and a change to the generator is seen at once."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import page

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "latest.json"


def test_the_page_is_the_generators_rendering_of_the_saved_results():
    rendered = page.render(json.loads(RESULTS.read_text(encoding="utf-8")))
    assert page.PAGE.read_text(encoding="utf-8") == rendered, (
        "docs/rendimiento.md is not what benchmarks/page.py makes of "
        "benchmarks/results/latest.json: regenerate it with "
        "`uv run --group bench python -m benchmarks.run --page-only`"
    )
