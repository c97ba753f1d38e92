"""Abuse limits of the release daemon (issue 19, item 2), measured from outside the process: one
address's idle connections cannot starve another's, a request trickled past its deadline is cut,
and every route that answers without a login (tokenization, hosted checkout pages, the ACS page,
failed token requests) answers 429 with Retry-After and its dialect's error body once an address
has had its burst, while another address is still served.

Loopback has the whole 127.0.0.0/8, so "another address" is a client socket bound to 127.0.0.2.
The IPv6 /64 grouping is covered by the Swift unit tests (AddressRateLimiterTests): a loopback
daemon has only ::1, no /64 to rotate through.
"""
import base64
import json
import resource
import socket
import time

import pytest

from conftest import Daemon

IDLE_CONNECTIONS = 1100
PER_ADDRESS = 64


def raise_open_file_limit(wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def raw_request(port, request, source="127.0.0.1", timeout=5.0):
    """Sends `request` (bytes) from `source`; returns (status, headers dict, body bytes, seconds)."""
    started = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(request)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            if _ and b"content-length:" in head.lower():
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                if len(rest) >= length:
                    break
    elapsed = time.monotonic() - started
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body, elapsed


def get(port, path, source="127.0.0.1", headers=""):
    return raw_request(port, ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n" % (path, headers))
                       .encode(), source)


def post(port, path, body, source="127.0.0.1", headers=""):
    return raw_request(port, ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                              "Content-Length: %d\r\n%s\r\n" % (path, len(body), headers)).encode() + body, source)


# ------------------------------------------------------------------------------------- connections per address

@pytest.fixture(scope="module")
def connection_daemon():
    # The test process holds 1,100 sockets, the daemon (its child) inherits the raised limit.
    if raise_open_file_limit(IDLE_CONNECTIONS + 256) < IDLE_CONNECTIONS + 64:
        pytest.skip("the open file limit cannot be raised to hold %d sockets" % IDLE_CONNECTIONS)
    instance = Daemon(extra_env={"CARDVAULT_HTTP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS)})
    yield instance
    instance.stop()


def test_idle_connections_from_one_address_do_not_starve_another(connection_daemon):
    port = connection_daemon.port
    idle = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sock.settimeout(5)
            sock.connect(("127.0.0.1", port))
            idle.append(sock)
        time.sleep(0.5)  # let the daemon accept (and refuse) them all

        status, _, body, elapsed = get(port, "/health", source="127.0.0.2")
        assert status == 200 and json.loads(body)["status"] == "ok"
        assert elapsed < 1.0, "GET /health from 127.0.0.2 took %.3f s" % elapsed
        print("GET /health from 127.0.0.2 with %d idle connections from 127.0.0.1: %.1f ms"
              % (IDLE_CONNECTIONS, elapsed * 1000))

        # The daemon kept at most the per-address limit of them and closed the rest at once.
        still_open = 0
        for sock in idle:
            sock.setblocking(False)
            try:
                still_open += 1 if sock.recv(1) else 0
            except BlockingIOError:
                still_open += 1
            except ConnectionResetError:
                pass
        assert 0 < still_open <= PER_ADDRESS, still_open
    finally:
        for sock in idle:
            sock.close()


def test_a_per_address_limit_above_half_the_total_is_refused_at_start():
    with pytest.raises(RuntimeError, match="maxConnectionsPerAddress"):
        Daemon(extra_env={"CARDVAULT_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "600"})


# ---------------------------------------------------------------------------------------- request deadline

@pytest.fixture(scope="module")
def deadline_daemon():
    instance = Daemon(extra_env={"CARDVAULT_HTTP_REQUEST_DEADLINE_SECONDS": "2"})
    yield instance
    instance.stop()


def test_a_header_trickled_past_the_deadline_gets_408(deadline_daemon):
    with socket.create_connection(("127.0.0.1", deadline_daemon.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for index in range(6):  # one header line every 0.5 s: never idle long, 3 s in all
            time.sleep(0.5)
            sock.sendall(b"X-Slow-%d: 1\r\n" % index)
        sock.sendall(b"\r\n")
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
    # A header sent in time is served.
    status, _, _, _ = get(deadline_daemon.port, "/health")
    assert status == 200


def test_a_stalled_body_is_cut_at_the_deadline_not_the_idle_timeout(deadline_daemon):
    with socket.create_connection(("127.0.0.1", deadline_daemon.port), timeout=15) as sock:
        started = time.monotonic()
        sock.sendall(b"POST /v2.01/oauth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n0123456789")
        data = sock.recv(4096)  # blocks until the daemon closes (the idle timeout is 30 s)
        elapsed = time.monotonic() - started
    assert data == b""
    assert elapsed < 5, "closed after %.1f s" % elapsed


# ------------------------------------------------------------------------------------ unauthenticated routes

BURST = 5


@pytest.fixture(scope="module")
def limited_daemon():
    instance = Daemon(extra_env={
        "CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS": str(BURST),
        "CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": str(BURST),
        "CARDVAULT_ACS_REQUESTS_PER_MINUTE_PER_ADDRESS": str(BURST),
        "CARDVAULT_TOKEN_FAILURES_PER_MINUTE_PER_ADDRESS": str(BURST),
    })
    yield instance
    instance.stop()


def burst(send, source):
    """Sends BURST requests (none limited), then one more; returns the last answer."""
    for index in range(BURST):
        status, _, _, _ = send(source)
        assert status != 429, "request %d of the burst was limited" % (index + 1)
    return send(source)


def assert_retry_after(headers):
    assert 1 <= int(headers["retry-after"]) <= 60
    assert headers["cache-control"] == "no-store"


def test_tokenization_bursts_get_429(limited_daemon):
    form = b"data=x&accessKeyRef=y&cardNumber=4970101122334455&cardExpirationDate=1230&cardCvx=123"

    def send(source):
        return post(limited_daemon.port, "/tokenize/%s/123456" % limited_daemon.client_id, form, source,
                    "Content-Type: application/x-www-form-urlencoded\r\n")
    status, headers, body, _ = burst(send, "127.0.0.3")
    assert status == 429 and body == b"errorCode=09102"
    assert_retry_after(headers)
    assert send("127.0.0.4")[0] != 429


@pytest.mark.parametrize("accept, kind", [("text/html", "html"), ("application/json", "json")])
def test_hosted_checkout_page_bursts_get_429(limited_daemon, accept, kind):
    source = "127.0.0.5" if kind == "html" else "127.0.0.6"

    def send(address):
        return get(limited_daemon.port, "/srci/?checkoutId=abc&locale=en_US", address, "Accept: %s\r\n" % accept)
    status, headers, body, _ = burst(send, source)
    assert status == 429
    assert_retry_after(headers)
    if kind == "json":
        error = json.loads(body)["Errors"]["Error"][0]
        assert error["ReasonCode"] == "TOO_MANY_REQUESTS"
    else:
        assert headers["content-type"].startswith("text/html") and b"Too many requests" in body
    # Session pages count in the same class.
    assert get(limited_daemon.port, "/srci/some-session", source)[0] == 429
    assert send("127.0.0.7")[0] != 429


def test_acs_page_bursts_get_429(limited_daemon):
    def send(source):
        return get(limited_daemon.port, "/acs/payin/%s/123?s=nothing" % limited_daemon.client_id, source)
    status, headers, body, _ = burst(send, "127.0.0.8")
    assert status == 429
    assert_retry_after(headers)
    assert headers["content-type"].startswith("text/html") and b"Too many attempts" in body
    assert send("127.0.0.9")[0] == 404


def token_request(daemon, api_key, source):
    credentials = base64.b64encode(("%s:%s" % (daemon.client_id, api_key)).encode()).decode()
    return post(daemon.port, "/v2.01/oauth/token", b"grant_type=client_credentials", source,
                "Authorization: Basic %s\r\nContent-Type: application/x-www-form-urlencoded\r\n" % credentials)


def test_failed_token_requests_get_429_and_good_ones_do_not_count(limited_daemon):
    # Successful token requests never count.
    for _ in range(BURST * 2):
        assert token_request(limited_daemon, limited_daemon.api_key, "127.0.0.10")[0] == 200
    status, headers, body, _ = burst(lambda source: token_request(limited_daemon, "wrong-key", source), "127.0.0.11")
    assert status == 429
    assert_retry_after(headers)
    assert json.loads(body)["Type"] == "too_many_requests"
    # Once limited, the address is refused before its credentials are checked, even good ones.
    assert token_request(limited_daemon, limited_daemon.api_key, "127.0.0.11")[0] == 429
    assert token_request(limited_daemon, limited_daemon.api_key, "127.0.0.12")[0] == 200


def test_an_ipv6_client_is_limited_too():
    """The daemon on [::1]: the limit applies to IPv6 clients (keyed on their /64; loopback has only
    ::1, so the rotation through a /64 is the unit tests' AddressRateLimiterTests and RateLimitRoutesTests)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
            port = probe.getsockname()[1]
    except OSError:
        pytest.skip("no IPv6 loopback")
    instance = Daemon(extra_env={"CARDVAULT_LISTEN": "[::1]:%d" % port,
                                 "CARDVAULT_PUBLIC_URL": "http://[::1]:%d" % port,
                                 "CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": str(BURST)})
    try:
        statuses = []
        for _ in range(BURST + 1):
            with socket.create_connection(("::1", port), timeout=5) as sock:
                sock.sendall(b"GET /srci/?checkoutId=abc HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n")
                statuses.append(int(sock.recv(4096).split()[1]))
        assert 429 not in statuses[:BURST] and statuses[BURST] == 429, statuses
    finally:
        instance.stop()
