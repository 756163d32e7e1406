"""The HTTP adapter on real bodies, with no model server: recordings of the local llama-server
(`tests/http/grabaciones/`, written by `python -m scripts.grabaciones`) replayed through it.

Each recording is checked twice: against what the adapter made of it live, when it was
recorded (`resultados.json`), and against a naive reading of its raw bytes written here
(`raw_reading`), so an adapter already wrong when the file was recorded is caught too.
The recorder itself is tested against the fault server (a real loopback HTTP server).
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("httpx", reason="the HTTP gateway needs the `http` extra")

from scripts import grabaciones  # noqa: E402
from synaptum_lite import (  # noqa: E402
    Agent,
    ConfigurationError,
    FinalStep,
    MemoryCheckpointer,
    Message,
    ModelRequest,
    ProviderError,
    Role,
    Session,
    tool,
)
from synaptum_lite.gateways.recording import (  # noqa: E402
    RecordingError,
    RecordingGateway,
    SecretInRecording,
)
from synaptum_lite.gateways.replay import (  # noqa: E402
    RecordingMismatch,
    ReplayGateway,
    ReplayTransport,
    first_difference,
)

from .conftest import KEY, SCENARIOS, completion  # noqa: E402
from .fault_server import Exchange, FaultServer  # noqa: E402

FOLDER = grabaciones.FOLDER
RESULTS = json.loads((FOLDER / grabaciones.RESULTS).read_text(encoding="utf-8"))


def exchanges(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def raw_reading(exchange: dict[str, Any]) -> dict[str, Any]:
    """What a recorded response says, read naively from its bytes: the error's status and
    message, or the text, the tool calls' names and arguments, the usage, and for a stream
    each event's text. Written apart from the adapter, on purpose: it shares none of its code."""
    response = exchange["response"]
    body = "".join(response["chunks"])
    if response["status"] >= 400:
        return {"status": response["status"], "message": json.loads(body)["error"]["message"]}
    if not response["headers"]["content-type"].startswith("text/event-stream"):
        message = json.loads(body)["choices"][0]["message"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        return {"text": message.get("content"), "calls": calls, "usage": json.loads(body)["usage"]}
    events = [
        json.loads(block[len("data: ") :])
        for block in body.split("\n\n")
        if block.startswith("data: ") and block != "data: [DONE]"
    ]
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    pieces = [d["content"] for d in deltas if d.get("content")]
    names = "".join(
        c["function"].get("name") or "" for d in deltas for c in d.get("tool_calls", [])
    )
    arguments = "".join(
        c["function"].get("arguments") or "" for d in deltas for c in d.get("tool_calls", [])
    )
    calls = [(names, json.loads(arguments))] if names else []
    usage = [e["usage"] for e in events if e.get("usage")]
    return {"pieces": pieces, "calls": calls, "usage": usage[-1] if usage else None}


def usage_of(raw: dict[str, Any]) -> dict[str, int]:
    """`Usage.to_json` of a server's usage object, read naively."""
    cached = raw.get("prompt_tokens_details", {}).get("cached_tokens")
    usage = {"in": raw["prompt_tokens"], "out": raw["completion_tokens"], "cached": cached}
    return {k: v for k, v in usage.items() if v is not None}


# ── each recording, replayed through the adapter ──────────────────────────────────────────────


@pytest.mark.parametrize("scene", list(grabaciones.ESCENAS))
def test_each_recording_replays_to_what_the_adapter_made_of_it_live(scene: str) -> None:
    assert grabaciones.replay(scene) == RESULTS[scene]


def test_the_recordings_are_small_and_hold_no_credential() -> None:
    files = sorted(FOLDER.glob("*.jsonl"))
    assert [f.stem for f in files] == sorted(grabaciones.ESCENAS)
    assert sum(f.stat().st_size for f in files) < 64 * 1024
    for file in files:
        text = file.read_text(encoding="utf-8").lower()
        assert "authorization" not in text and "bearer" not in text, file.name


def test_a_plain_answer_is_its_body_text_and_measured_usage() -> None:
    (exchange,) = exchanges(FOLDER / "texto.jsonl")
    raw = raw_reading(exchange)
    response = grabaciones.replay("texto")["response"]
    assert response["text"] == raw["text"] and raw["text"]
    assert response["usage"] == usage_of(raw["usage"]) and response["usage"]["in"] > 0


def test_a_stream_is_its_events_text_fragment_by_fragment_reassembled() -> None:
    (exchange,) = exchanges(FOLDER / "stream.jsonl")
    assert len(exchange["response"]["chunks"]) > 1  # the chunk boundaries, as they came
    raw = raw_reading(exchange)
    replayed = grabaciones.replay("stream")
    assert len(raw["pieces"]) > 1 and replayed["fragments"] == raw["pieces"]
    assert replayed["response"]["text"] == "".join(raw["pieces"])
    assert replayed["response"]["usage"] == usage_of(raw["usage"])


def test_a_streamed_tool_call_is_its_pieces_assembled_with_its_arguments() -> None:
    (exchange,) = exchanges(FOLDER / "stream_herramienta.jsonl")
    raw = raw_reading(exchange)
    (call,) = grabaciones.replay("stream_herramienta")["response"]["calls"]
    assert [(call["name"], call["arguments"])] == raw["calls"]
    assert call["name"] == "consultar_saldo" and "ES91" in call["arguments"]["cuenta"]


def test_a_whole_agent_run_replays_its_tool_call_tool_and_answer() -> None:
    first, second = exchanges(FOLDER / "agente.jsonl")
    asked, answered = raw_reading(first), raw_reading(second)
    replayed = grabaciones.replay("agente")
    assert [(c["name"], c["arguments"]) for c in replayed["responses"][0]["calls"]] == (
        asked["calls"]
    )
    assert replayed["tool_runs"] == [asked["calls"][0][1]]  # the tool ran once, with them
    assert replayed["output"] == answered["text"] and answered["text"]


@pytest.mark.parametrize("scene", ["error_400", "error_400_stream", "error_404"])
def test_an_error_body_is_classified_as_live(scene: str) -> None:
    (exchange,) = exchanges(FOLDER / f"{scene}.jsonl")
    raw = raw_reading(exchange)
    error = grabaciones.replay(scene)["error"]
    assert error == RESULTS[scene]["error"]
    assert (error["status"], error["retryable"]) == (raw["status"], False)
    assert f"answered HTTP {raw['status']}: {raw['message'].split()[0]}" in error["message"]


def test_usage_a_server_does_not_report_replays_as_not_measured(tmp_path: Path) -> None:
    """The same real body without its `usage`: not measured (`None`), not zero."""
    lines = (FOLDER / "texto.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    body = json.loads(record["response"]["chunks"][0])
    del body["usage"]
    record["response"]["chunks"] = [json.dumps(body)]
    (tmp_path / "texto.jsonl").write_text(f"{lines[0]}\n{json.dumps(record)}\n", "utf-8")
    response = grabaciones.replay("texto", tmp_path)["response"]
    assert response["text"] == raw_reading(exchanges(FOLDER / "texto.jsonl")[0])["text"]
    assert "usage" not in response  # Usage() is written as nothing: every counter None


def test_an_sse_event_cut_across_two_chunks_replays_the_same(tmp_path: Path) -> None:
    """Chunk boundaries are replayed as recorded: cut every chunk in two, mid-line."""
    lines = (FOLDER / "stream.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    chunks = record["response"]["chunks"]
    record["response"]["chunks"] = [half for c in chunks for half in (c[:17], c[17:]) if half]
    (tmp_path / "stream.jsonl").write_text(f"{lines[0]}\n{json.dumps(record)}\n", "utf-8")
    assert grabaciones.replay("stream", tmp_path) == RESULTS["stream"]


def test_the_replay_hands_the_adapter_each_recorded_chunk_as_one_read() -> None:
    """What makes the test above mean something: the boundaries reach httpx as recorded."""
    import httpx

    (exchange,) = exchanges(FOLDER / "stream.jsonl")
    request = exchange["request"]

    async def reads() -> list[bytes]:
        transport = ReplayTransport(FOLDER / "stream.jsonl")
        headers = {"Accept": "application/json"}
        async with httpx.AsyncClient(transport=transport, headers=headers) as client:
            sent = client.build_request(
                "POST", "http://replay.invalid" + request["path"], json=request["body"]
            )
            response = await client.send(sent, stream=True)
            return [chunk async for chunk in response.aiter_raw()]

    assert asyncio.run(reads()) == [c.encode() for c in exchange["response"]["chunks"]]


# ── a recording that no longer matches the request ────────────────────────────────────────────


def stale(scene: str, request: ModelRequest) -> RecordingMismatch:
    gateway = ReplayGateway(FOLDER / f"{scene}.jsonl", record_again=grabaciones.RECORD_AGAIN)
    with pytest.raises(RecordingMismatch) as caught:
        asyncio.run(gateway.complete(request))
    return caught.value


def test_a_changed_request_names_its_index_and_first_differing_path() -> None:
    texto = grabaciones.TEXTO
    changed = ModelRequest(texto.model, (texto.messages[0], Message(Role.USER, "Otra cosa.")))
    mismatch = stale("texto", changed)
    assert (mismatch.index, mismatch.where) == (0, "$.messages[1].content")
    assert mismatch.recorded == texto.messages[1].content and mismatch.sent == "Otra cosa."
    message = str(mismatch)
    assert "request 0 differs from exchange 0 of" in message and "texto.jsonl" in message
    assert "at $.messages[1].content" in message
    assert "uv run --extra http python -m scripts.grabaciones" in message


@tool(name="consultar_saldo")
async def saldo_vacio(cuenta: Annotated[str, "IBAN de la cuenta"]) -> str:
    """Consulta el saldo de una cuenta."""
    return f"{cuenta}: 0,00 €"


def test_a_changed_second_request_of_a_run_names_index_1() -> None:
    """The agent's tool answers otherwise now: the first call matches, the second does not."""
    assert saldo_vacio.spec == grabaciones.consultar_saldo.spec  # the same agent to the model

    async def run() -> None:
        agent = Agent(
            "cajero",
            model=grabaciones.MODEL,
            instructions=grabaciones.INSTRUCTIONS,
            tools=[saldo_vacio],
            max_steps=6,
        )
        gateway = ReplayGateway(FOLDER / "agente.jsonl", tools=[saldo_vacio])
        async for _ in agent.run(
            grabaciones.SALDO, session=Session("r", gateway, MemoryCheckpointer())
        ):
            pass

    with pytest.raises(RecordingMismatch) as caught:
        asyncio.run(run())
    assert caught.value.index == 1 and caught.value.where == "$.messages[3].content"
    assert caught.value.sent.endswith("0,00 €")


def test_a_request_past_the_recording_end_is_refused_by_index() -> None:
    gateway = ReplayGateway(FOLDER / "texto.jsonl")
    asyncio.run(gateway.complete(grabaciones.TEXTO))
    assert gateway.replay.unplayed == []
    with pytest.raises(RecordingMismatch, match=r"request 1 .* at its end \(it holds 1 exchanges"):
        asyncio.run(gateway.complete(grabaciones.TEXTO))


def test_a_streamed_request_against_a_plain_recording_names_the_stream_flag() -> None:
    gateway = ReplayGateway(FOLDER / "texto.jsonl")

    async def stream() -> None:
        async for _ in gateway.stream(grabaciones.TEXTO):
            pass

    with pytest.raises(RecordingMismatch) as caught:
        asyncio.run(stream())
    assert caught.value.where == "$.stream" and caught.value.sent is True


def test_first_difference_walks_objects_by_key_and_arrays_by_position() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) is None
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ("$.a[1].b", 2, 3)
    assert first_difference({"a": 1}, {"a": True})[0] == "$.a"  # type: ignore[index]
    where, recorded, sent = first_difference([1], [1, 2])  # type: ignore[misc]
    assert (where, sent) == ("$[1]", 2) and repr(recorded) == "<absent>"
    assert first_difference({"a b": 1}, {"a b": 2}) == ('$["a b"]', 1, 2)


# ── the recorder: what it writes, and what it never writes ───────────────────────────────────


async def echoes_the_key_in_its_body(ex: Exchange) -> None:
    """Answers well, with the credential it received inside the model's text."""
    echoed = ex.headers.get("authorization", "")
    await ex.send_json(200, completion({"role": "assistant", "content": f"Tu clave: {echoed}"}))


@pytest.fixture(scope="module")
def recorded_server() -> Any:
    server = FaultServer({**SCENARIOS, "echoes_the_key_in_its_body": echoes_the_key_in_its_body})
    yield server.start()
    server.stop()


def seed_run(gateway: Any) -> Any:
    async def run() -> Any:
        agent = Agent(
            "cajero",
            model="modelo-x",
            instructions="Eres un cajero.",
            tools=[grabaciones.consultar_saldo],
        )
        session = Session("r", gateway, MemoryCheckpointer())
        return [step async for step in agent.stream("¿Saldo de ES91?", session=session)]

    return asyncio.run(run())


def test_a_run_recorded_with_a_key_replays_the_same_and_the_file_holds_no_key(
    recorded_server: FaultServer, tmp_path: Path
) -> None:
    file = tmp_path / "teller.jsonl"
    tools = [grabaciones.consultar_saldo]
    live = seed_run(RecordingGateway(recorded_server.url("teller"), file, api_key=KEY, tools=tools))
    assert recorded_server.last("teller").headers["authorization"] == f"Bearer {KEY}"
    text = file.read_text(encoding="utf-8")
    assert KEY not in text and "authorization" not in text.lower() and "bearer" not in text.lower()
    assert len(text.splitlines()) == 3  # the header, the tool call, the answer
    replayed = seed_run(ReplayGateway(file, tools=tools))
    assert [repr(s) for s in replayed] == [repr(s) for s in live]
    assert isinstance(live[-1], FinalStep) and live[-1].text == "El saldo es de 4.200,00 €."


def test_a_connection_dropped_mid_stream_replays_as_the_same_failure(
    recorded_server: FaultServer, tmp_path: Path
) -> None:
    file = tmp_path / "corte.jsonl"

    def failure(gateway: Any) -> ProviderError:
        async def stream() -> None:
            async for _ in gateway.stream(grabaciones.TEXTO):
                pass

        with pytest.raises(ProviderError) as caught:
            asyncio.run(stream())
        return caught.value

    live = failure(RecordingGateway(recorded_server.url("stream_drops"), file))
    (exchange,) = exchanges(file)
    assert exchange["response"]["dropped"]["error"] == "RemoteProtocolError"
    replayed = failure(ReplayGateway(file, base_url=recorded_server.url("stream_drops")))
    assert "dropped the connection while streaming" in str(live) and live.retryable
    assert (str(replayed), replayed.retryable) == (str(live), live.retryable)


def test_a_key_the_server_echoes_is_never_written(
    recorded_server: FaultServer, tmp_path: Path
) -> None:
    file = tmp_path / "eco.jsonl"
    gateway = RecordingGateway(recorded_server.url("echoes_the_key_in_its_body"), file, api_key=KEY)
    with pytest.raises(SecretInRecording, match="exchange 0 of .* in its response"):
        asyncio.run(gateway.complete(grabaciones.TEXTO))
    assert file.read_text(encoding="utf-8").splitlines() == [
        '{"format": "synaptum-lite/http-recording", "version": 1}'
    ]


def test_a_request_holding_the_key_is_refused_before_it_is_sent(
    recorded_server: FaultServer, tmp_path: Path
) -> None:
    before = len(recorded_server.requests)
    gateway = RecordingGateway(recorded_server.url("teller"), tmp_path / "r.jsonl", api_key=KEY)
    leaky = ModelRequest("modelo-x", (Message(Role.USER, f"mi clave es {KEY}"),))
    with pytest.raises(SecretInRecording, match="in its request"):
        asyncio.run(gateway.complete(leaky))
    assert len(recorded_server.requests) == before  # nothing sent, nothing paid


def test_a_recording_holding_a_credential_is_refused_when_read(tmp_path: Path) -> None:
    lines = (FOLDER / "texto.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["request"]["headers"]["authorization"] = "Bearer sk-0123456789abcdef"
    (tmp_path / "a.jsonl").write_text(f"{lines[0]}\n{json.dumps(record)}\n", "utf-8")
    with pytest.raises(SecretInRecording, match="the request header authorization"):
        ReplayGateway(tmp_path / "a.jsonl")
    record["request"]["headers"].pop("authorization")
    lines_chunk = record["response"]["chunks"][0]
    record["response"]["chunks"][0] += " Bearer sk-0123456789abcdef"
    (tmp_path / "b.jsonl").write_text(f"{lines[0]}\n{json.dumps(record)}\n", "utf-8")
    with pytest.raises(SecretInRecording, match="its text"):
        ReplayGateway(tmp_path / "b.jsonl")
    basic = base64.b64encode(b"ana:contrasena").decode()
    record["response"]["chunks"][0] = lines_chunk + f" Basic {basic}"
    (tmp_path / "c.jsonl").write_text(f"{lines[0]}\n{json.dumps(record)}\n", "utf-8")
    with pytest.raises(SecretInRecording, match="its text"):
        ReplayGateway(tmp_path / "c.jsonl")
    record["response"]["chunks"][0] = lines_chunk + " Basic information. Bearer authentication."
    (tmp_path / "d.jsonl").write_text(f"{lines[0]}\n{json.dumps(record)}\n", "utf-8")
    assert ReplayGateway(tmp_path / "d.jsonl").replay.exchanges  # prose, not a credential


def test_a_file_that_is_not_a_recording_names_its_line(tmp_path: Path) -> None:
    lines = (FOLDER / "texto.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "x.jsonl").write_text(f'{lines[0]}\n{{"index": 0}}\n', "utf-8")
    with pytest.raises(RecordingError, match=r"line 2 of the recording .*x\.jsonl .*KeyError"):
        ReplayGateway(tmp_path / "x.jsonl")
    (tmp_path / "y.jsonl").write_text("{}\n", "utf-8")
    with pytest.raises(RecordingError, match="line 1 .* its header is not"):
        ReplayGateway(tmp_path / "y.jsonl")


def test_neither_gateway_takes_another_transport(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="pass no transport="):
        ReplayGateway(FOLDER / "texto.jsonl", transport=object())
    with pytest.raises(ConfigurationError, match="pass no transport="):
        RecordingGateway("http://127.0.0.1:1/v1", tmp_path / "r.jsonl", transport=object())
    assert not (tmp_path / "r.jsonl").exists()
