"""What the test MCP servers wrote to their effects file: one JSON object per line, with
`que` naming what happened (`tests/mcp/hostil.py`, `tests/mcp/ataque_servidor.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def records(effects: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in effects.read_text("utf-8").splitlines()]


def count(effects: Path, what: str) -> int:
    return sum(entry["que"] == what for entry in records(effects))
