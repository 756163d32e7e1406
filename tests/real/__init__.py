"""The real-model tests: a real llama-server, started by `scripts/modelo_local.py` (`.ci/run`)."""

from __future__ import annotations

import os

#: Set by `.ci/run` when the real model could not run for a reason of the environment's: the
#: packages could not be fetched, or the server dies of SIGILL on this CPU at every level.
UNAVAILABLE = os.environ.get("SYNAPTUM_LOCAL_MODEL_UNAVAILABLE")

NO_SERVER = (
    f"REAL MODEL DID NOT RUN (environment, not the kit): {UNAVAILABLE}"
    if UNAVAILABLE
    else "no local model server (SYNAPTUM_LOCAL_MODEL_URL is not set)"
)
