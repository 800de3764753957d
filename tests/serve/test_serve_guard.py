"""Only the page's own requests reach the web page's routes (gamegym.serve.guard): a page of
another site (its Origin), a domain name pointed at 127.0.0.1 (its Host: DNS rebinding), a
body that is not application/json, a body over the size limit (refused while it streams).
Each is asked over HTTP of a server running on a free loopback port, and each refusal is a
4xx with a JSON message naming the rule, with nothing changed behind it."""

from __future__ import annotations

import http.client
import json
import socket

import pytest
from serving import running

from gamegym.serve.guard import MAX_BODY, allowed_hosts


@pytest.fixture
def client(new_session):
    with running(new_session()) as client:
        yield client


def a_game(client) -> dict:
    response = client.post("/api/games", json={"iteration": 0})
    assert response.status_code == 200, response.text
    return response.json()


def refused(response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert all(word in message for word in words), message


@pytest.mark.parametrize(
    "kind",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
def test_a_body_that_is_not_sent_as_json_is_refused(client, kind):
    """What another site's form or `fetch` may send without a CORS preflight."""
    game = a_game(client)
    headers = {} if kind is None else {"Content-Type": kind}
    body = json.dumps({"action": 4}).encode()
    refused(
        client.post(f"/api/games/{game['id']}/move", content=body, headers=headers),
        415,
        "application/json",
    )
    new = json.dumps({"iteration": 0, "searchcount": 5000}).encode()
    refused(client.post("/api/games", content=new, headers=headers), 415, "application/json")
    assert client.get(f"/api/games/{game['id']}").json() == game
    sent = client.post(
        f"/api/games/{game['id']}/move",
        content=body,
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert sent.status_code == 200 and sent.json()["history"][0]["action"] == 4


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1", "https://127.0.0.1:{port}"]
)
def test_another_sites_page_is_refused(client, origin):
    origin = origin.format(port=client.port)
    game = a_game(client)
    headers = {"Origin": origin}
    refused(
        client.post(f"/api/games/{game['id']}/move", json={"action": 4}, headers=headers),
        403,
        origin,
        "another site",
    )
    refused(client.post("/api/games", json={"iteration": 0}, headers=headers), 403, origin)
    refused(client.get("/api/session", headers=headers), 403, origin)
    assert client.get(f"/api/games/{game['id']}").json() == game
    own = {"Origin": f"http://127.0.0.1:{client.port}"}  # the page's own fetch
    moved = client.post(f"/api/games/{game['id']}/move", json={"action": 4}, headers=own)
    assert moved.status_code == 200 and moved.json()["history"][0]["action"] == 4


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "evil.example", "127.0.0.1:{other}", "localhost", "", "x:y"]
)
def test_a_host_that_is_not_this_server_is_refused(client, host):
    """DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 is, for the
    browser, of the same origin as the server; its requests carry Host: evil.example:PORT."""
    host = host.format(port=client.port, other=client.port + 1)
    game = a_game(client)
    headers = {"Host": host}
    refused(client.get("/api/session", headers=headers), 403, "Host", repr(host))
    refused(client.get("/", headers=headers), 403, "Host")
    refused(
        client.post(f"/api/games/{game['id']}/move", json={"action": 4}, headers=headers),
        403,
        "Host",
    )
    assert client.get(f"/api/games/{game['id']}").json() == game
    for own in (f"localhost:{client.port}", f"127.0.0.1:{client.port}", f"LOCALHOST:{client.port}"):
        assert client.get("/api/session", headers={"Host": own}).status_code == 200


def test_the_hosts_a_server_answers_to():
    assert allowed_hosts("127.0.0.1", 8000) == (frozenset({"127.0.0.1", "localhost"}), False)
    assert allowed_hosts("::1", 8000) == (frozenset({"[::1]", "localhost"}), False)
    assert allowed_hosts("localhost", 8000)[0] == {"localhost", "127.0.0.1", "[::1]"}
    names, any_address = allowed_hosts("0.0.0.0", 8000)
    assert any_address and socket.gethostname().lower() in names


def raw_request(port: int, head: str, parts: list[bytes]) -> tuple[int, dict]:
    """Send a request's head and then `parts` of its body, one at a time, without ending it;
    the server's answer (status, JSON), which it must give before the body ends."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head.encode())
        for part in parts:
            try:
                connection.sendall(part)
            except (BrokenPipeError, ConnectionResetError):  # refused and closed meanwhile
                break
        reply = http.client.HTTPResponse(connection)
        reply.begin()
        return reply.status, json.loads(reply.read())


def test_a_body_over_the_limit_is_refused_before_it_is_read(client):
    """A declared Content-Length beyond the limit: refused at once, not a byte read."""
    game = a_game(client)
    head = (
        f"POST /api/games/{game['id']}/move HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {10**9}\r\n\r\n"
    )
    status, body = raw_request(client.port, head, [b'{"action": 4'])
    assert status == 413 and f"over {MAX_BODY} bytes" in body["error"]
    assert client.get(f"/api/games/{game['id']}").json() == game


def test_a_streamed_body_is_refused_as_it_passes_the_limit(client):
    """A chunked body without a declared length: refused once MAX_BODY is passed, without
    waiting for the end the client never sends."""
    game = a_game(client)
    head = (
        f"POST /api/games/{game['id']}/move HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"400\r\n" + b" " * 1024 + b"\r\n"  # 1 KiB of JSON white space a chunk
    status, body = raw_request(client.port, head, [chunk] * (MAX_BODY // 1024 + 1))
    assert status == 413 and f"over {MAX_BODY} bytes" in body["error"]
    assert client.get(f"/api/games/{game['id']}").json() == game
    # a chunked body within the limit is read whole
    ended = b"b\r\n" + b'{"action": ' + b"\r\n" + b"2\r\n4}\r\n" + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", client.port), timeout=30) as connection:
        connection.sendall(head.encode() + ended)
        reply = http.client.HTTPResponse(connection)
        reply.begin()
        assert reply.status == 200 and json.loads(reply.read())["history"][0]["action"] == 4


def test_a_server_on_another_address_answers_to_its_own_name(new_session):
    """Listening on ::1, a request names [::1]:PORT or localhost:PORT, not 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this computer")
    with running(new_session(), host="::1") as client:
        assert client.get("/api/session").status_code == 200  # Host: [::1]:PORT
        assert (
            client.get("/api/session", headers={"Host": f"localhost:{client.port}"}).status_code
            == 200
        )
        refused(
            client.get("/api/session", headers={"Host": f"127.0.0.1:{client.port}"}), 403, "Host"
        )
