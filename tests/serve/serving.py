"""The web page's server running for a test: uvicorn on a free loopback port in a thread of
the test's process (no child process, no TensorFlow import beyond the test's own), asked over
HTTP with http.client as a program on this computer asks it."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from gamegym.game.players import RandomPlayer
from gamegym.serve import create_app
from gamegym.serve.play import ModelPlayers


class RandomModels(ModelPlayers):
    """Every model iteration plays random legal moves (the registry is still the session's)."""

    def player(self, iteration, searchcount, graph):
        self.check(iteration)
        return RandomPlayer()


@dataclass
class Reply:
    status_code: int
    text: str

    def json(self):
        return json.loads(self.text)


def _encoded(value) -> bytes:
    return json.dumps(value).encode()


class Client:
    """Requests to a running server over HTTP, as a program on this computer sends them."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.port, self.host = port, host

    def request(self, method: str, path: str, body: bytes | None = None, headers=None) -> Reply:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return Reply(response.status, response.read().decode())
        finally:
            connection.close()

    def get(self, path: str, params: dict | None = None, headers=None) -> Reply:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return self.request("GET", path + query, headers=headers)

    def post(self, path: str, json=None, content: bytes | None = None, headers=None) -> Reply:
        if content is None:
            content = _encoded(json)
            headers = {"Content-Type": "application/json", **(headers or {})}
        return self.request("POST", path, content, headers)


@contextlib.contextmanager
def running(session: Path, players=RandomModels, host: str = "127.0.0.1"):
    """The session's page served by uvicorn on a free port of `host`, in a thread of this
    process (no TensorFlow import in a child); yields a Client of it."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.bind((host, 0))
    port = listener.getsockname()[1]
    app = create_app(session, players=players, host=host, port=port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        yield Client(port, host)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
