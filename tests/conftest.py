"""The whole suite: the PostgreSQL server the tests started, if any, stops when the session
ends, and the summary says which PostgreSQL the tests ran on."""

from __future__ import annotations

from tests.postgres import store

_stopped_in: list[float] = []


def pytest_sessionfinish(session, exitstatus):
    took = store.stop_embedded()
    if took is not None:
        _stopped_in.append(took)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    line = store.which_server()
    if _stopped_in:
        line += f", stopped and deleted in {_stopped_in[0]:.1f} s"
    terminalreporter.write_line(line)
