"""Every request gets an HTTP answer from the release daemon, within a second: long queries, heads
just under and over http.maxHeaderBytes, many cookies, and odd Transfer-Encoding or Content-Length
values. Raw sockets, since no ordinary client sends these. The daemon must stay up throughout.
"""
import socket
import time

import pytest

# The daemon of conftest.py runs with the default limits (README: http.maxHeaderBytes 8192,
# http.maxBodyBytes 1048576).
MAX_HEADER_BYTES = 8192
MAX_BODY_BYTES = 1 << 20


def exchange(daemon, raw, timeout=1.0):
    """Sends raw bytes on a new connection; returns (status, headers, body, seconds) of the first response."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=timeout) as sock:
        try:
            sock.sendall(raw)
        except OSError:
            pass  # the server may answer and close before taking every byte; read what it said
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "connection closed without a status line after %r" % raw[:80]
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.setdefault(name.strip().lower(), value.strip())
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return status, headers, body[:length], time.monotonic() - start


def request(method, target, fields="", body=b"", version="HTTP/1.1"):
    return ("%s %s %s\r\nHost: 127.0.0.1\r\n%s\r\n" % (method, target, version, fields)).encode() + body


def head_of(size, fields=""):
    """A GET /health head of exactly `size` bytes (padded in its last field)."""
    start = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields
    pad = size - len(start) - len("X-Pad: \r\n\r\n")
    assert pad >= 0
    return (start + "X-Pad: " + "p" * pad + "\r\n\r\n").encode()


def assert_up(daemon):
    assert daemon.process.poll() is None, "the daemon exited"
    status, _, body, _ = exchange(daemon, request("GET", "/health"))
    assert status == 200 and b"ok" in body


def test_two_hundred_query_parameters_are_answered(daemon):
    query = "&".join("p%d=%d" % (i, i) for i in range(200))
    status, _, _, seconds = exchange(daemon, request("GET", "/health?" + query))
    assert status == 200
    assert seconds < 1
    # Empty parameters cost libmicrohttpd a 64-byte record each; they must not exhaust anything.
    status, _, _, _ = exchange(daemon, request("GET", "/health?" + "&" * 4000))
    assert status == 200
    assert_up(daemon)


def test_a_head_just_under_the_limit_is_served_and_one_over_is_431(daemon):
    status, _, _, seconds = exchange(daemon, head_of(MAX_HEADER_BYTES))
    assert status == 200
    assert seconds < 1
    status, headers, body, seconds = exchange(daemon, head_of(MAX_HEADER_BYTES + 1))
    assert status == 431
    assert b"headers_too_large" in body
    assert headers.get("connection", "").lower() == "close"
    assert seconds < 1
    for size in (12000, 50000):
        status, _, _, seconds = exchange(daemon, request("GET", "/health", "X-Filler: %s\r\n" % ("f" * size)))
        assert status == 431
        assert seconds < 1
    status, _, body, _ = exchange(daemon, request("GET", "/health?" + "q" * (MAX_HEADER_BYTES + 100)))
    assert status == 414
    assert_up(daemon)


def test_cookies(daemon):
    cookie = "; ".join("c%d=v%d" % (i, i) for i in range(100))
    status, _, _, seconds = exchange(daemon, request("GET", "/health", "Cookie: %s\r\n" % cookie))
    assert status == 200
    assert seconds < 1
    # More header fields and cookie pairs than the limit allows (maxHeaderBytes / 64).
    cookie = "; ".join("c%d=v" % i for i in range(MAX_HEADER_BYTES // 64 + 10))
    status, _, _, seconds = exchange(daemon, request("GET", "/health", "Cookie: %s\r\n" % cookie))
    assert status == 431
    assert seconds < 1
    # Thousands of empty pairs: libmicrohttpd's own 431.
    status, _, _, seconds = exchange(daemon, request("GET", "/health", "Cookie: %s\r\n" % (";" * 8000)))
    assert status == 431
    assert seconds < 1
    assert_up(daemon)


# (fields, status); the values libmicrohttpd refuses itself (it reads only the first Content-Length
# and knows only decimal digits that fit 64 bits) get its answer, without X-Request-Id.
ODD_FRAMING = [
    ("Transfer-Encoding: identity\r\n", 501),
    ("Transfer-Encoding: gzip, chunked\r\n", 501),
    ("Transfer-Encoding: deflate\r\n", 501),
    ("Transfer-Encoding: chunked, chunked\r\n", 400),
    ("Transfer-Encoding: \r\n", 400),
    ("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", 400),
    ("Content-Length: %d\r\n" % (1 << 63), 413),
    ("Content-Length: %d\r\n" % ((1 << 63) - 1), 413),
    ("Content-Length: %d\r\n" % (1 << 64), 413),
    ("Content-Length: %d\r\n" % (MAX_BODY_BYTES + 1), 413),
    ("Content-Length: -1\r\n", 400),
    ("Content-Length: 12abc\r\n", 400),
    ("Content-Length: 4\r\nContent-Length: 5\r\n", 400),
]


@pytest.mark.parametrize("fields,expected", ODD_FRAMING)
def test_odd_framing_gets_its_status_within_a_second(daemon, fields, expected):
    # No body follows: the answer must not wait for one.
    status, headers, _, seconds = exchange(daemon, request("POST", "/v2.01/%s/users/natural" % daemon.client_id, fields))
    assert status == expected
    assert seconds < 1
    assert headers.get("connection", "").lower() == "close"
    assert_up(daemon)


def test_transfer_encoding_on_http10_is_411(daemon):
    raw = b"POST /health HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    status, _, _, seconds = exchange(daemon, raw)
    assert status == 411
    assert seconds < 1
    assert_up(daemon)
