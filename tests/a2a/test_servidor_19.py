"""Notebook 19's A2A server (`_servidor_19.py`) when a client dies in the middle of a request:
the notebook kills its child while it sends, and under load the kill can land after the
headers and before the body. The server then says nothing (its stderr is the notebook's cell
output) and counts nothing: that message never arrived."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request

from tests.bounds import HANG

from .conftest import PROPIEDADES


def test_a_client_killed_mid_request_leaves_no_trace_and_no_message_counted():
    server = subprocess.Popen(
        [sys.executable, str(PROPIEDADES / "_servidor_19.py"), "--puerto", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().split()[-1]
        port = int(url.rsplit(":", 1)[1])
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": {"messageId": "m-1", "parts": [{"text": "hola"}]}},
            }
        ).encode()
        for sent in (b"", body[: len(body) // 2]):  # the headers only, then half the body
            with socket.create_connection(("127.0.0.1", port)) as client:
                client.sendall(
                    b"POST /a2a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + sent
                )
                client.shutdown(socket.SHUT_WR)  # what the kernel does for a process killed now
                assert client.recv(1024) == b""  # no answer: nobody is there to hear one
        with urllib.request.urlopen(f"{url}/contador", timeout=HANG) as answer:
            counted = json.load(answer)
        assert counted["ids"] == [] and counted["peticiones"] == {}
    finally:
        server.kill()
        _, stderr = server.communicate(timeout=HANG)
    assert stderr == ""
