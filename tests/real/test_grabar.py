"""Recording afresh from the real model server, and replaying what was just recorded.

Runs only with `SYNAPTUM_LOCAL_MODEL_URL` (as the rest of `tests/real`). It runs the command
that records `tests/http/grabaciones/` (`python -m scripts.grabaciones`), into a temporary
folder: eight small calls, three of them errors the server answers at once. What the model
says is not asserted; that the replay gives what the adapter gave live is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from scripts import grabaciones  # noqa: E402
from tests.real import NO_SERVER  # noqa: E402

BASE_URL = os.environ.get("SYNAPTUM_LOCAL_MODEL_URL")
pytestmark = pytest.mark.skipif(not BASE_URL, reason=NO_SERVER)


def test_a_fresh_recording_of_the_real_server_replays_to_what_it_gave_live(
    tmp_path: Path,
) -> None:
    assert BASE_URL is not None
    assert grabaciones.main(["--url", BASE_URL, "--into", str(tmp_path)]) == 0
    live = json.loads((tmp_path / grabaciones.RESULTS).read_text(encoding="utf-8"))
    assert sorted(live) == sorted(grabaciones.ESCENAS)
    for scene in grabaciones.ESCENAS:
        assert grabaciones.replay(scene, tmp_path) == live[scene], scene
    assert live["error_400"]["error"]["status"] == 400
    assert live["error_404"]["error"]["status"] == 404
    assert "response" in live["texto"] and "fragments" in live["stream"]
