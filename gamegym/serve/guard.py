"""Which requests reach the page's routes: only those of its own page, or of a program on
this computer that names the server by its address.

Every request is checked before a route sees it (an ASGI middleware around the application):

  Host          the server's own name with its port: the address it listens on, or `localhost`
                (listening on every interface, 0.0.0.0 or ::, any IP address or this computer's
                name).  A web page whose domain name was pointed at 127.0.0.1 after it loaded
                (DNS rebinding) sends its own name here, and gets 403.
  Origin        when a browser sends one, the page's own (http:// and the Host): a page of
                another site gets 403.  A program that sends none (curl, Python) passes.
  Content-Type  a request with a body (POST) says application/json, or gets 415.  A browser
                lets another site send a form or text/plain without asking the server first;
                application/json it only sends after a CORS preflight, which this server never
                grants.
  body size     at most MAX_BODY bytes, counted while it arrives: a declared Content-Length
                beyond it is refused before a byte is read, and a body streamed in chunks is
                refused as soon as it passes the limit (413); the route gets the body whole.

A refused request gets {"error": message} naming the rule, and nothing behind it runs.
"""

from __future__ import annotations

import ipaddress
import socket

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["RequestGuard", "MAX_BODY", "allowed_hosts"]

MAX_BODY = 4096  # bytes of a request body
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")
BODILESS = ("GET", "HEAD", "OPTIONS")
Refusal = tuple[int, str]  # HTTP status, message


def allowed_hosts(host: str, port: int) -> tuple[frozenset[str], bool]:
    """The host names a request may carry in its Host header (lower case, IPv6 in brackets)
    for a server listening on `host`, and whether any IP address is one (listening on every
    interface).  A name with a port only matches that port."""
    names = {_bracketed(host.lower()), "localhost"}
    if host == "localhost":  # either loopback address, as the name resolves
        names |= {"127.0.0.1", "[::1]"}
    any_address = host in WILDCARD
    if any_address:
        names.discard("")
        names.add(socket.gethostname().lower())
    return frozenset(names), any_address


class RequestGuard:
    """ASGI middleware: the Host, Origin, Content-Type and body-size rules above, for an
    application served at `host`:`port`."""

    def __init__(self, app: ASGIApp, host: str, port: int):
        self.app, self.port = app, port
        self.names, self.any_address = allowed_hosts(host, port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope["method"], headers)
        if refusal is None and scope["method"] not in BODILESS:
            body, refusal = await _read_body(receive, headers)
            if refusal is None:
                receive = _replay(body, receive)
        if refusal is not None:
            status, message = refusal
            await JSONResponse({"error": message}, status_code=status)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, method: str, headers: dict[str, str]) -> Refusal | None:
        host = headers.get("host", "")
        if not self._host_allowed(host):
            return 403, (
                f"the Host header {host!r} does not name this server (it answers to "
                f"{self._example()}): a page of another site may not use it"
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host.lower()}":
            return 403, (
                f"a request from {origin!r} (another site's page) may not use this server; "
                f"only its own page, http://{host}, may"
            )
        if method not in BODILESS:
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                return 415, (
                    f"the request body must be JSON sent as Content-Type: application/json, "
                    f"not {kind or 'no Content-Type'!r}"
                )
        return None

    def _host_allowed(self, host: str) -> bool:
        name, port = _split_host(host.lower())
        if port != self.port:
            return False
        if name in self.names:
            return True
        return self.any_address and _is_ip(name)

    def _example(self) -> str:
        name = "localhost" if "localhost" in self.names else sorted(self.names)[0]
        return f"{name}:{self.port}"


def _split_host(host: str) -> tuple[str, int | None]:
    """'name:port' -> (name, port); no port -> 80 (what a browser leaves out); a bad port -> None."""
    name, colon, port = host.rpartition(":")
    if not colon or "]" in port:
        return host, 80  # no port (an IPv6 address in brackets has colons inside)
    if not port.isascii() or not port.isdigit():
        return name, None
    return name, int(port)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    except ValueError:
        return False
    return True


async def _read_body(receive: Receive, headers: dict[str, str]) -> tuple[bytes, Refusal | None]:
    """The request body, read up to MAX_BODY bytes and no further: (body, None), or
    (b"", (413, message)) as soon as it is known to be longer."""
    too_long = (413, f"the request body is over {MAX_BODY} bytes")
    declared = headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        return b"", too_long if declared.isdigit() else (400, "a bad Content-Length header")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return b"", (400, "the client closed the connection before its body ended")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return b"", too_long
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the route the body already read, then waits on the client."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
