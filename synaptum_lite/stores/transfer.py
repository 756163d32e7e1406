"""Moving a run between checkpointers: its journal exported as JSON lines, imported elsewhere.

An export is text, one JSON object per line. The first line describes the run, the others are
its events in position order, each with its stored data exactly as the store kept it:

    {"synaptum_lite": "run", "format": 1, "run_id": "r", "header": {...},
     "head": "…", "chain": ["…", …]}
    {"seq": 0, "step_id": "000000-model", "phase": "attempted", "attempt": 1, "data": "…"}

The sub-run of each delegation (`RUN/STEP`, as `DelegationStep.sub_run_id` names it) follows
its run, described and listed the same way. Imported into another checkpointer, the run
resumes there as if it had never moved: every completed step is replayed, nothing is called
again.

**What an import refuses, before it writes anything.** A section that is neither the run the
export names (its first line) nor one of that run's own sub-runs: an export cannot plant a
step in another run. An event that cannot be decoded, is not at its position, or holds a
field this version would drop. An event whose key the store already holds with another
payload. And an export whose digest chain does not match:

**The digest chain.** Each run's description, then each of its events, run after run in the
order of the export, is one link: its digest is SHA-256 of the previous link's digest (32
bytes; nothing for the first) followed by the link's canonical bytes (`run_id`, `format` and
`header` of a description; `run_id`, `seq`, `step_id`, `phase`, `attempt` and `data` of an
event; as JSON with sorted keys, no spaces, ASCII only). A description's `chain` lists, in hex,
the digests of its own links (itself, then its events); the first line's `head` is the last
digest of the whole export. An event changed, removed, moved or added is named on import by the
first link that does not match (run and seq), and an export cut short or extended at its end
by its `head`.

Without a key, the chain detects damage, and edits by someone who did not recompute it: anyone
can recompute a SHA-256 chain (`seal` does), so it proves nothing about who wrote the export.
With a key (`key=`, the CLI's `--key-file`), `signature` is HMAC-SHA256 of the `head` under
that key, and an import given the key refuses an export unsigned, signed with another key, or
edited after it was signed; an import without a key checks no signature. Exports from before
the chain carry none and are refused, saying to export the run again with this version.

An export of a damaged journal still works (the data travels undecoded), so a damaged record
can be read and repaired by hand (then `seal` it); it is the import that refuses it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..checkpointer import FORMAT_VERSION, Checkpointer, RunState
from ..codec import Record, decode_all, encode
from ..errors import CorruptJournal, JournalError, NotAJournal, UnsupportedFormat
from ..events import Step

MARK = "synaptum_lite"
_EVENT_FIELDS = ("seq", "step_id", "phase", "attempt", "data")
_DESCRIPTION_FIELDS = {MARK, "format", "run_id", "header", "head", "signature", "chain"}
_AGAIN = "export the run again from its store (synaptum-lite export STORE RUN) and import that"


class RefusedExport(JournalError):
    """An export the import will not write (nothing was written): a run that is not its own, a
    digest chain or a signature that does not match. `run_id` and `seq` name where (`seq` None:
    a run's description, or the export as a whole)."""

    def __init__(self, run_id: str, seq: int | None, detail: str) -> None:
        self.run_id, self.seq, self.detail = run_id, seq, detail
        super().__init__(f"{detail}; nothing was imported")


class Imported(NamedTuple):
    """What an import wrote of one run: the events the store now holds of it, how many new."""

    run_id: str
    events: int
    new: int


class _Section(NamedTuple):  # one run of an export
    run_id: str
    format: int
    header: dict[str, Any]
    records: list[Record]
    description: dict[str, Any]


async def export_run(
    checkpointer: Checkpointer, run_id: str, *, key: bytes | None = None
) -> list[str]:
    """The run's journal as JSON lines (without line ends): its description, then its events;
    then, the same way, the sub-run of each of its delegations, so the export is whole. The
    description carries the digest chain; with `key`, its head is signed (HMAC-SHA256).

    Raises `JournalError` when the run does not exist. A run being driven meanwhile is read as
    it stands (a prefix of what it will be); stop its workers first to move it for good.
    """
    state = await checkpointer.load(run_id)
    if state.header is None:
        raise JournalError(f"run {run_id!r} does not exist in {checkpointer!r}; nothing to export")
    return _written(await _sections_of(checkpointer, run_id, state.header), key)


def seal(lines: Iterable[str], *, key: bytes | None = None) -> list[str]:
    """An export's lines with its digest chain computed again (and signed with `key`): for an
    export edited on purpose, which the import would otherwise refuse. The lines are read as
    they are (a stranger run, a damaged event are still refused by the import); only the
    chain is new. It is what anyone who edits an export can do, which is why a chain without a
    key proves nothing about who wrote it."""
    return _written([_read_section(rows) for rows in _sections(_rows(lines))], key)


async def import_runs(
    checkpointer: Checkpointer, lines: Iterable[str], *, key: bytes | None = None
) -> list[Imported]:
    """Write an exported run and its sub-runs into `checkpointer`; returns what it wrote of
    each, the run first. With `key`, the export must be signed with it.

    Everything is checked before anything is written, and importing is idempotent: the same
    export again changes nothing, and an export that extends what the checkpointer already
    holds of a run adds the rest. Raises `NotAJournal` (not an export), `UnsupportedFormat`
    (a newer format), `CorruptJournal` (an event that cannot be decoded, is not at its
    position, or holds a field this version would drop), `RefusedExport` (a run that is not the
    named one nor its sub-run; a digest chain or signature that does not match; an export
    with no chain), `JournalError` (the checkpointer holds another journal under that run id,
    or the same step with another payload), and `RunBusy` when a worker drives a run.
    """
    sections = [_read_section(rows) for rows in _sections(_rows(lines))]
    _check_belonging(sections)
    _verify(sections, key)
    runs = [(s, _decoded(s)) for s in sections]
    for section, _ in runs:  # a conflict with the store is found before any write
        await _differences(checkpointer, section, await checkpointer.load(section.run_id))
    written = []
    for section, events in reversed(runs):  # sub-runs first, the run last
        written.append(await _write_run(checkpointer, section, events))
    return written[::-1]


async def import_run(
    checkpointer: Checkpointer, lines: Iterable[str], *, key: bytes | None = None
) -> str:
    """Write an exported run (and its sub-runs) into `checkpointer`; returns its `run_id`.
    `import_runs`, which says what it wrote of each run, tells what is checked and refused."""
    return (await import_runs(checkpointer, lines, key=key))[0].run_id


async def copy_run(source: Checkpointer, destination: Checkpointer, run_id: str) -> int:
    """Export `run_id` from `source` and import it into `destination`; returns how many
    events were exported (of the run and its sub-runs)."""
    lines = await export_run(source, run_id)
    await import_runs(destination, lines)
    return sum(1 for line in lines if not _describes_a_run(line))


# ── exporting ───────────────────────────────────────────────────────────────────────────────


async def _sections_of(
    checkpointer: Checkpointer, run_id: str, header: dict[str, Any]
) -> list[_Section]:
    records = await checkpointer.records(run_id)
    sections = [_Section(run_id, FORMAT_VERSION, header, records, {})]
    for step_id in dict.fromkeys(r.step_id for r in records if r.step_id.endswith("-delegate")):
        sub_run_id = f"{run_id}/{step_id}"  # as `DelegationStep.sub_run_id` names it
        sub_header = (await checkpointer.load(sub_run_id)).header
        if sub_header is not None:
            sections.extend(await _sections_of(checkpointer, sub_run_id, sub_header))
    return sections


def _written(sections: list[_Section], key: bytes | None) -> list[str]:
    chains, head = _chains(sections)
    lines = []
    signed = {"head": head} | ({} if key is None else {"signature": _signature(key, head)})
    for s, chain in zip(sections, chains, strict=True):
        described = {MARK: "run", "format": s.format, "run_id": s.run_id, "header": s.header}
        lines.append(_line({**described, **(signed if s is sections[0] else {}), "chain": chain}))
        lines.extend(_line(dict(zip(_EVENT_FIELDS, r, strict=True))) for r in s.records)
    return lines


def _chains(sections: list[_Section]) -> tuple[list[list[str]], str]:
    """Each section's digests (its description, then its events), and the last of all."""
    previous, chains = b"", []
    for section in sections:
        chain = []
        for link in _links(section):
            previous = hashlib.sha256(previous + link).digest()
            chain.append(previous.hex())
        chains.append(chain)
    return chains, previous.hex()


def _links(section: _Section) -> list[bytes]:
    described = {"run_id": section.run_id, "format": section.format, "header": section.header}
    events = [
        {"run_id": section.run_id, **dict(zip(_EVENT_FIELDS, r, strict=True))}
        for r in section.records
    ]
    return [_canonical(value) for value in (described, *events)]


def _canonical(value: dict[str, Any]) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _signature(key: bytes, head: str) -> str:
    return hmac.new(key, head.encode(), hashlib.sha256).hexdigest()


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ── reading an export ───────────────────────────────────────────────────────────────────────


def _rows(lines: Iterable[str]) -> list[str]:
    text = [lines] if isinstance(lines, str) else lines
    rows = [row for chunk in text for row in chunk.splitlines() if row.strip()]
    if not rows:
        raise NotAJournal("the export", "it is empty")
    return rows


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


def _read_section(rows: list[str]) -> _Section:
    description = _read_description(rows[0])
    run_id = description["run_id"]
    records = [_read_record(run_id, position, row) for position, row in enumerate(rows[1:])]
    return _Section(run_id, description["format"], description["header"], records, description)


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
    unknown = sorted(set(description) - _DESCRIPTION_FIELDS)
    if unknown:
        detail = f"its description holds fields this version does not know: {unknown}"
        raise CorruptJournal(run_id, None, detail)
    return description


def _read_record(run_id: str, position: int, row: str) -> Record:
    try:
        fields = json.loads(row)
        if not isinstance(fields, dict):
            raise TypeError("an event is a JSON object")
        record = Record(*(fields[name] for name in _EVENT_FIELDS))
        if not all(isinstance(v, t) for v, t in zip(_key(record), (str, str, int), strict=True)):
            raise TypeError("step_id and phase must be text, attempt a number")
        if not isinstance(record.data, str):
            raise TypeError("data must be the event's JSON as text")
        unknown = sorted(set(fields) - set(_EVENT_FIELDS))
        if unknown:
            raise TypeError(f"it holds fields this version does not know: {unknown}")
    except (ValueError, KeyError, TypeError) as exc:
        detail = f"line {position + 2} of the export: {exc}"
        raise CorruptJournal(run_id, position, detail) from None
    return record


def _check_belonging(sections: list[_Section]) -> None:
    """Every section is the named run (the first) or a sub-run of a section before it, named
    after one of that section's delegations; and none comes twice."""
    named = sections[0].run_id
    allowed, seen = set[str](), set[str]()
    for number, section in enumerate(sections):
        run_id = section.run_id
        if number and (run_id not in allowed or run_id in seen):
            what = "again" if run_id in seen else "which is neither that run nor its sub-run"
            raise RefusedExport(
                run_id,
                None,
                f"the export names run {named!r} but also carries run {run_id!r}, {what} (a "
                f"sub-run is RUN/STEP of one of its run's delegations); an import writes only "
                f"the run it names: {_AGAIN}",
            )
        seen.add(run_id)
        delegations = (r.step_id for r in section.records if r.step_id.endswith("-delegate"))
        allowed |= {f"{run_id}/{step_id}" for step_id in delegations}


def _verify(sections: list[_Section], key: bytes | None) -> None:
    """The digest chain, link by link (the first that does not match is named), then the
    head, then (with `key`) the signature."""
    first = sections[0].description
    if "chain" not in first and "head" not in first:
        raise RefusedExport(
            sections[0].run_id,
            None,
            "the export carries no digest chain: it was written by an earlier synaptum-lite, "
            "before exports were chained, and nothing says it is whole: export the run again "
            "with this version (synaptum-lite export STORE RUN) and import that",
        )
    previous = b""
    for section in sections:
        stated = chain if isinstance(chain := section.description.get("chain"), list) else []
        for position, link in enumerate(_links(section)):
            previous = hashlib.sha256(previous + link).digest()
            if position >= len(stated) or stated[position] != previous.hex():
                _mismatch(section, position - 1, len(stated))
        if len(stated) > 1 + len(section.records):
            _mismatch(section, len(section.records), len(stated))
    if first.get("head") != previous.hex():
        raise RefusedExport(
            sections[0].run_id,
            None,
            "the export does not match its digest chain at its end (its head): runs or events "
            f"were removed from its end or added to it, or the head edited: {_AGAIN}",
        )
    signature = first.get("signature")
    if key is None:
        return
    if not isinstance(signature, str):
        raise RefusedExport(
            sections[0].run_id,
            None,
            "the export is not signed, and a key was given: export the run again with the key "
            "(synaptum-lite export STORE RUN --key-file KEY) and import that",
        )
    expected = _signature(key, previous.hex()).encode()
    if not hmac.compare_digest(signature.encode(errors="replace"), expected):  # ASCII or not
        raise RefusedExport(
            sections[0].run_id,
            None,
            "the export's signature does not match the key given: it was signed with another "
            f"key, or changed after it was signed: {_AGAIN} and the right key",
        )


def _mismatch(section: _Section, seq: int, stated: int) -> None:
    """Raise for the link at `seq` (-1: the run's description) that does not match."""
    run_id, records = section.run_id, section.records
    if seq < 0:
        what = f"run {run_id!r}: its description (its run_id or header)"
    elif seq >= len(records):
        what = (
            f"run {run_id!r}: the chain lists {stated - 1} events and the export holds "
            f"{len(records)}: event {seq} is missing"
        )
    else:
        record = records[seq]
        what = f"run {run_id!r}: event {seq} ({record.step_id} {record.phase})"
    raise RefusedExport(
        run_id,
        None if seq < 0 else seq,
        f"the export does not match its digest chain at {what}: changed, removed, moved or "
        f"added since it was exported: {_AGAIN}",
    )


def _decoded(section: _Section) -> list[Step]:
    run_id, records = section.run_id, section.records
    seen: set[tuple[str, str, int]] = set()
    for position, record in enumerate(records):
        if record.seq != position:
            raise CorruptJournal(run_id, position, f"the export holds position {record.seq} there")
        if _key(record) in seen:  # the store would keep one of the two
            raise CorruptJournal(run_id, position, f"it repeats {record.step_id} {record.phase}")
        seen.add(_key(record))
    events = decode_all(run_id, records)
    for record, event in zip(records, events, strict=True):
        if json.loads(encode(event)[3]) != json.loads(record.data):  # what decoding would drop
            raise CorruptJournal(run_id, record.seq, "it holds fields this version does not know")
    return events


# ── writing ─────────────────────────────────────────────────────────────────────────────────


async def _write_run(checkpointer: Checkpointer, section: _Section, events: list[Step]) -> Imported:
    run_id, header, records = section.run_id, section.header, section.records
    async with checkpointer.hold(run_id):
        state = await checkpointer.load(run_id)
        held = await _differences(checkpointer, section, state)
        start_with = getattr(checkpointer, "start_with", None)
        if state.header is None and callable(start_with):
            # the header and the events in one transaction: a process killed here leaves no
            # header without its events, which a worker would take for a new run and pay again
            next_seq = await start_with(run_id, header, events)
        else:
            if state.header is None:
                await checkpointer.start(run_id, header)
            next_seq = await checkpointer.append(run_id, events[held:])
    if next_seq != len(records):
        raise JournalError(f"run {run_id!r}: {len(records)} events imported, {next_seq} stored")
    return Imported(run_id, next_seq, next_seq - held)


async def _differences(checkpointer: Checkpointer, section: _Section, state: RunState) -> int:
    """Refuse an export that is not the store's journal of the run or an extension of it;
    returns how many of its events the store already holds."""
    run_id, records = section.run_id, section.records
    if state.header is None:
        return 0
    if state.header != section.header:
        raise JournalError(
            f"run {run_id!r} already exists in {checkpointer!r} and was started by another "
            "agent or task; nothing was imported. Import into another store, or delete it there"
        )
    held = await checkpointer.records(run_id)
    for mine, theirs in zip(held, records, strict=False):
        same = _key(mine) == _key(theirs)
        if not same or json.loads(mine.data) != json.loads(theirs.data):
            what = "another payload" if same else f"{theirs.step_id} {theirs.phase}"
            raise JournalError(
                f"run {run_id!r} already exists in {checkpointer!r} and its journal differs "
                f"from the export at position {mine.seq}: the store holds step {mine.step_id} "
                f"{mine.phase} there, the export {what}; nothing was imported"
            )
    if len(held) > len(records):
        raise JournalError(
            f"run {run_id!r} in {checkpointer!r} is ahead of the export ({len(held)} events, "
            f"the export has {len(records)}); nothing was imported"
        )
    return len(held)


def _key(record: Record) -> tuple[str, str, int]:
    return record.step_id, record.phase, record.attempt
