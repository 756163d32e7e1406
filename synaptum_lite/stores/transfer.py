"""Moving a run between checkpointers: its journal exported as JSON lines, imported elsewhere.

An export is text, one JSON object per line. The first line describes the run, the others are
its events in position order, each with its stored data exactly as the store kept it:

    {"synaptum_lite": "run", "format": 1, "run_id": "r", "header": {...}}
    {"seq": 0, "step_id": "000000-model", "phase": "attempted", "attempt": 1, "data": "…"}

The sub-run of each delegation follows its run, described and listed the same way. Imported
into another checkpointer, the run resumes there as if it had never moved: every completed
step is replayed, nothing is called again. An export of a damaged journal still
works (the data travels undecoded), so a damaged record can be read and repaired by hand; it
is the import that refuses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..checkpointer import FORMAT_VERSION, Checkpointer, RunState
from ..codec import Record, decode_all, encode
from ..errors import CorruptJournal, JournalError, NotAJournal, UnsupportedFormat
from ..events import Step

MARK = "synaptum_lite"


async def export_run(checkpointer: Checkpointer, run_id: str) -> list[str]:
    """The run's journal as JSON lines (without line ends): its description, then its events;
    then, the same way, the sub-run of each of its delegations, so the export is whole.

    Raises `JournalError` when the run does not exist. A run being driven meanwhile is read as
    it stands (a prefix of what it will be); stop its workers first to move it for good.
    """
    state = await checkpointer.load(run_id)
    if state.header is None:
        raise JournalError(f"run {run_id!r} does not exist in {checkpointer!r}; nothing to export")
    description = {MARK: "run", "format": FORMAT_VERSION, "run_id": run_id, "header": state.header}
    lines = [_line(description)]
    records = await checkpointer.records(run_id)
    for record in records:
        lines.append(
            _line(
                {
                    "seq": record.seq,
                    "step_id": record.step_id,
                    "phase": record.phase,
                    "attempt": record.attempt,
                    "data": record.data,
                }
            )
        )
    delegations = dict.fromkeys(r.step_id for r in records if r.step_id.endswith("-delegate"))
    for step_id in delegations:
        sub_run_id = f"{run_id}/{step_id}"  # as `DelegationStep.sub_run_id` names it
        if (await checkpointer.load(sub_run_id)).header is not None:
            lines.extend(await export_run(checkpointer, sub_run_id))
    return lines


async def import_run(checkpointer: Checkpointer, lines: Iterable[str]) -> str:
    """Write an exported run (and its sub-runs) into `checkpointer`; returns its `run_id`.

    Every event is checked before anything is written, and importing is idempotent: the same
    export again changes nothing, and an export that extends what the checkpointer already
    holds of the run adds the rest. Raises `NotAJournal` (not an export), `UnsupportedFormat`
    (a newer format), `CorruptJournal` (an event that cannot be decoded, or is not at its
    position), `JournalError` (the checkpointer holds another journal under that run id), and
    `RunBusy` when a worker drives the run.
    """
    text = [lines] if isinstance(lines, str) else lines
    rows = [row for chunk in text for row in chunk.splitlines() if row.strip()]
    if not rows:
        raise NotAJournal("the export", "it is empty")
    runs = [_read_run(section) for section in _sections(rows)]
    for run_id, header, records, events in reversed(runs):  # sub-runs first, the run last
        await _write_run(checkpointer, run_id, header, records, events)
    return runs[0][0]


async def copy_run(source: Checkpointer, destination: Checkpointer, run_id: str) -> int:
    """Export `run_id` from `source` and import it into `destination`; returns how many
    events were exported (of the run and its sub-runs)."""
    lines = await export_run(source, run_id)
    await import_run(destination, lines)
    return sum(1 for line in lines if not _describes_a_run(line))


def _sections(rows: list[str]) -> list[list[str]]:
    """The rows of each run of an export: a description, then its events."""
    sections: list[list[str]] = []
    for row in rows:
        if _describes_a_run(row) or not sections:
            sections.append([])
        sections[-1].append(row)
    return sections


def _describes_a_run(row: str) -> bool:
    try:
        value = json.loads(row)
    except ValueError:
        return False
    return isinstance(value, dict) and MARK in value


def _read_run(rows: list[str]) -> tuple[str, dict[str, Any], list[Record], list[Step]]:
    description = _read_description(rows[0])
    run_id, header = description["run_id"], description["header"]
    records = [_read_record(run_id, position, row) for position, row in enumerate(rows[1:])]
    events = decode_all(run_id, records)
    for record, event in zip(records, events, strict=True):
        if json.loads(encode(event)[3]) != json.loads(record.data):  # what decoding would drop
            raise CorruptJournal(run_id, record.seq, "it holds fields this version does not know")
    return run_id, header, records, events


async def _write_run(
    checkpointer: Checkpointer,
    run_id: str,
    header: dict[str, Any],
    records: list[Record],
    events: list[Step],
) -> None:
    async with checkpointer.hold(run_id):
        state = await checkpointer.load(run_id)
        start_with = getattr(checkpointer, "start_with", None)
        if state.header is None and callable(start_with):
            # the header and the events in one transaction: a process killed here leaves no
            # header without its events, which a worker would take for a new run and pay again
            next_seq = await start_with(run_id, header, events)
        else:
            next_seq = await _write_rest(checkpointer, run_id, header, state, records, events)
    if next_seq != len(records):
        raise JournalError(f"run {run_id!r}: {len(records)} events imported, {next_seq} stored")


async def _write_rest(
    checkpointer: Checkpointer,
    run_id: str,
    header: dict[str, Any],
    state: RunState,
    records: list[Record],
    events: list[Step],
) -> int:
    """Start the run if it is new, and append what the checkpointer lacks of the export."""
    if state.header is None:
        await checkpointer.start(run_id, header)
    elif state.header != header:
        raise JournalError(
            f"run {run_id!r} already exists in {checkpointer!r} and was started by another "
            "agent or task; nothing was imported. Import into another store, or delete it there"
        )
    held = await checkpointer.records(run_id)
    for mine, theirs in zip(held, records, strict=False):
        if _key(mine) != _key(theirs) or json.loads(mine.data) != json.loads(theirs.data):
            raise JournalError(
                f"run {run_id!r} already exists in {checkpointer!r} and its journal differs "
                f"from the export at position {mine.seq}; nothing was imported"
            )
    if len(held) > len(records):
        raise JournalError(
            f"run {run_id!r} in {checkpointer!r} is ahead of the export ({len(held)} events, "
            f"the export has {len(records)}); nothing was imported"
        )
    return await checkpointer.append(run_id, events[len(held) :])


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _read_description(row: str) -> dict[str, Any]:
    try:
        description = json.loads(row)
    except ValueError:
        description = None
    if not isinstance(description, dict) or description.get(MARK) != "run":
        raise NotAJournal("the export", "its first line does not describe a synaptum_lite run")
    version = description.get("format")
    if not isinstance(version, int):
        raise NotAJournal("the export", f"its format is {version!r}, not a version number")
    if version > FORMAT_VERSION:
        raise UnsupportedFormat("the export", version, FORMAT_VERSION)
    run_id, header = description.get("run_id"), description.get("header")
    if not isinstance(run_id, str) or not isinstance(header, dict):
        raise NotAJournal("the export", "its first line lacks the run_id or the header")
    return description


def _read_record(run_id: str, position: int, row: str) -> Record:
    try:
        fields = json.loads(row)
        record = Record(
            fields["seq"], fields["step_id"], fields["phase"], fields["attempt"], fields["data"]
        )
        if not all(isinstance(v, t) for v, t in zip(_key(record), (str, str, int), strict=True)):
            raise TypeError("step_id and phase must be text, attempt a number")
        if not isinstance(record.data, str):
            raise TypeError("data must be the event's JSON as text")
    except (ValueError, KeyError, TypeError) as exc:
        detail = f"line {position + 2} of the export: {exc}"
        raise CorruptJournal(run_id, position, detail) from None
    if record.seq != position:
        raise CorruptJournal(run_id, position, f"the export holds position {record.seq} there")
    return record


def _key(record: Record) -> tuple[str, str, int]:
    return record.step_id, record.phase, record.attempt
