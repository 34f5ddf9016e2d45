"""The proxy on odd requests: headers forwarded exactly as the client sent them, and paths that
cannot be forwarded answered with one clear line, never a 500 or a traceback."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from tests.proxy_fixtures import fake, proxy, server_log, start_proxy, tracebacks, upstream  # noqa: F401 - fixtures


def raw_request(url: str, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send `head` (request line and headers, CRLF-separated, no final blank line) as typed, and
    return the status and body of the answer (read until the proxy closes)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as s:
        s.sendall(head.encode("latin-1") + b"\r\nconnection: close\r\n\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def test_pass_through_routes_add_no_header_of_their_own(fake, proxy):
    status, _ = raw_request(proxy.url, "GET /v1/models HTTP/1.1\r\nhost: example\r\nx-api-key: k\r\nx-mine: 1")
    assert status == 200
    got = fake.received[-1].headers
    assert got["x-api-key"] == "k" and got["x-mine"] == "1"
    for added in ("user-agent", "accept-encoding", "accept"):
        assert added not in got, added


def test_a_client_s_own_user_agent_and_encoding_pass_as_sent(fake, proxy):
    head = "GET /v1/models HTTP/1.1\r\nhost: example\r\nuser-agent: my-agent/1.0\r\naccept-encoding: br"
    assert raw_request(proxy.url, head)[0] == 200
    assert fake.received[-1].headers["user-agent"] == "my-agent/1.0"
    assert fake.received[-1].headers["accept-encoding"] == "br"


def test_a_nul_in_the_path_is_answered_400_in_one_line(fake, proxy, server_log):
    before = len(fake.received)
    for method, path in (("GET", "/v1/models%00"), ("POST", "/v1/files/%00x"), ("GET", "/%0a")):
        status, body = raw_request(proxy.url, f"{method} {path} HTTP/1.1\r\nhost: example\r\ncontent-length: 0")
        assert status == 400, (path, status, body)
        assert b"ctxmill proxy: the request path cannot be forwarded" in body and b"\n" not in body
    assert len(fake.received) == before  # nothing reached the upstream
    assert not tracebacks(server_log)
