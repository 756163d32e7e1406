"""The request fingerprint is a stored format: journals written before keep resuming.

A model step's attempted event stores the fingerprint of the request it was made on, and a
resume recomputes it over the re-derived context. So the bytes it hashes are fixed: each
message as canonical JSON (sorted keys, no spaces, non-ASCII kept), hashed; the hashes chained
in a SHA-256 that starts from a label; then the model and the tool specs. The reference below
computes that from the definition with `json.dumps`, independently of the fast path the core
takes, and both must agree on every kind of message.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from synaptum_lite import Message, ModelRequest, Role, ToolCall, ToolSpec


def reference_fingerprint(request: ModelRequest) -> str:
    def canonical(value: Any) -> bytes:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()

    chain = hashlib.sha256(b"synaptum-context-1")
    for message in request.messages:
        data: dict[str, Any] = {"role": message.role.value, "content": message.content}
        if message.tool_calls:
            data["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
            ]
        if message.tool_call_id is not None:
            data["tool_call_id"] = message.tool_call_id
        if message.is_error:
            data["is_error"] = True
        chain.update(hashlib.sha256(canonical(data)).digest())
    tools = canonical(
        {
            "model": request.model,
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in request.tools
            ],
        }
    )
    chain.update(request.model.encode() + b"\0" + tools)
    return chain.hexdigest()[:24]


_ODD_TEXT = [
    "",
    "saldo: 1.000,00 €",
    'comillas " y barra \\ y barra / ',
    "control \x00\x01\x1f y \t\n\r\b\f",
    "\u2028\u2029 separadores de línea de JavaScript",
    "emoji 🦀 fuera del plano básico",
    "\x7f borrar y \u0085 NEL",
]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_ODD_TEXT) for _ in range(rng.randint(1, 3)))


def _arguments(rng: random.Random) -> dict[str, Any] | str:
    if rng.random() < 0.2:
        return '{"roto": '  # a model's undecodable arguments are kept as its raw text
    return {
        "z": rng.randint(-5, 5),
        "a": [_text(rng), 1.5, None, True, {"y": _text(rng), "b": []}],
        _text(rng): _text(rng),
    }


def _message(rng: random.Random) -> Message:
    role = rng.choice(list(Role))
    if role is Role.ASSISTANT:
        calls = tuple(
            ToolCall(_text(rng), rng.choice(["leer", "transferir", "ñ"]), _arguments(rng))
            for _ in range(rng.randint(0, 3))
        )
        return Message(role, rng.choice([None, _text(rng)]), tool_calls=calls)
    if role is Role.TOOL:
        return Message(role, _text(rng), tool_call_id=_text(rng), is_error=rng.random() < 0.3)
    return Message(role, _text(rng))


def test_the_fingerprint_is_the_definitions_for_every_kind_of_message():
    rng = random.Random(19)
    tools = (ToolSpec("leer", "Lee 1 KB «ñ».", {"type": "object", "properties": {}}),)
    checked = 0
    for size in range(1, 60):
        messages = tuple(_message(rng) for _ in range(size))
        request = ModelRequest("modelo-ñ", messages, tools)
        assert request.fingerprint() == reference_fingerprint(request), messages
        checked += size
    assert checked > 1700


def test_a_one_character_change_anywhere_changes_the_fingerprint():
    request = ModelRequest(
        "m",
        (
            Message(Role.SYSTEM, "instrucciones"),
            Message(Role.USER, "tarea"),
            Message(Role.ASSISTANT, None, tool_calls=(ToolCall("c1", "leer", {"n": 1}),)),
            Message(Role.TOOL, "resultado", tool_call_id="c1"),
        ),
    )
    changed = [
        request.messages[:3] + (Message(Role.TOOL, "resultadO", tool_call_id="c1"),),
        request.messages[:3] + (Message(Role.TOOL, "resultado", tool_call_id="c2"),),
        request.messages[:3] + (Message(Role.TOOL, "resultado", tool_call_id="c1", is_error=True),),
        request.messages[:2]
        + (Message(Role.ASSISTANT, None, tool_calls=(ToolCall("c1", "leer", {"n": 2}),)),)
        + request.messages[3:],
        request.messages[:2]
        + (Message(Role.ASSISTANT, "", tool_calls=(ToolCall("c1", "leer", {"n": 1}),)),)
        + request.messages[3:],
    ]
    fingerprints = {ModelRequest("m", messages).fingerprint() for messages in changed}
    assert request.fingerprint() not in fingerprints
    assert len(fingerprints) == len(changed)
