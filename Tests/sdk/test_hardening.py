"""Hardening of the release daemon (issue 19, items 4 and 6), measured from outside the process:
core dumps off even when started with `ulimit -c unlimited`, secret memory excluded from dumps, the
crash backtracer without registers, request ids that cannot carry a card number, pages that cannot
be framed, HSTS and a TLS 1.2+/AEAD-only handshake, a token on /metrics, private directory modes,
and a retry after a crash mid-request.
"""
import json
import os
import pathlib
import shutil
import socket
import ssl
import stat
import subprocess
import time
import uuid

import pytest
import requests

from conftest import Daemon, _free_port

BINARY = os.environ.get("CARDVAULT_BIN", str(pathlib.Path(__file__).resolve().parents[2] / ".build/debug/cardvault"))
DOTTED_PAN = "4970.1073.6205.4174"
OPENSSL = shutil.which("openssl")


def log_lines(daemon):
    lines = []
    for line in daemon.log_path.read_text(errors="replace").splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            lines.append({"raw": line})
    return lines


def wait_for_log(daemon, predicate, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for line in log_lines(daemon):
            if predicate(line):
                return line
        time.sleep(0.1)
    return None


@pytest.fixture(scope="module")
def unlimited_daemon():
    """A daemon started from a shell that raised the core limit to unlimited first."""
    instance = Daemon(wrapper=["bash", "-c", 'ulimit -c unlimited && ulimit -c > "$0.ulimit" && exec "$@"',
                               str(pathlib.Path("/tmp") / ("cv-hardening-" + uuid.uuid4().hex))])
    yield instance
    instance.stop()


# ------------------------------------------------------------------------------------------- item 4: dumps

def test_a_daemon_started_with_unlimited_cores_runs_with_a_core_limit_of_zero(unlimited_daemon):
    limits = pathlib.Path("/proc/%d/limits" % unlimited_daemon.process.pid).read_text()
    core = next(line for line in limits.splitlines() if line.startswith("Max core file size"))
    assert core.split()[4:6] == ["0", "0"], core  # soft and hard
    # The shell really had raised it (the wrapper wrote what `ulimit -c` said before exec).
    marker = pathlib.Path(unlimited_daemon.process.args[3] + ".ulimit")
    assert marker.read_text().strip() == "unlimited"
    marker.unlink()
    hardened = wait_for_log(unlimited_daemon, lambda line: line.get("msg") == "process hardened")
    assert hardened is not None
    assert hardened["dumpable"] == 0  # prctl(PR_GET_DUMPABLE) inside the daemon
    assert hardened["coreLimit"] == 0


def test_the_crash_backtracer_runs_without_registers_or_images(unlimited_daemon):
    # Same PID: the daemon re-executed itself with SWIFT_BACKTRACE set (Swift reads it at start).
    environ = pathlib.Path("/proc/%d/environ" % unlimited_daemon.process.pid).read_bytes().split(b"\0")
    setting = next(item for item in environ if item.startswith(b"SWIFT_BACKTRACE="))
    options = dict(part.split("=", 1) for part in setting.decode().split("=", 1)[1].split(","))
    assert options["registers"] == "none"
    assert options["images"] == "none"
    assert options["sanitize"] == "yes"
    assert options["interactive"] == "no"
    # The runtime accepted every key (an unknown one prints "swift runtime: unknown ... setting").
    assert "swift runtime" not in unlimited_daemon.log_path.read_text(errors="replace")


def test_backtracer_can_be_turned_off():
    instance = Daemon(extra_env={"CARDVAULT_CRASH_BACKTRACE": "off"})
    try:
        environ = pathlib.Path("/proc/%d/environ" % instance.process.pid).read_bytes().split(b"\0")
        assert b"SWIFT_BACKTRACE=enable=no" in environ
    finally:
        instance.stop()


def test_key_memory_is_excluded_from_dumps(unlimited_daemon):
    """The secure arena's 64 KiB chunks are mapped MADV_DONTDUMP (smaps VmFlags `dd`) and, as root or
    within RLIMIT_MEMLOCK, locked (`lo`)."""
    smaps = pathlib.Path("/proc/%d/smaps" % unlimited_daemon.process.pid).read_text()
    mappings = []
    current = {}
    for line in smaps.splitlines():
        if "-" in line.split(" ")[0] and not line.endswith(":") and line[0] in "0123456789abcdef" \
                and not line.startswith("VmFlags"):
            current = {"head": line}
            mappings.append(current)
        elif line.startswith("Size:"):
            current["size"] = int(line.split()[1])
        elif line.startswith("VmFlags:"):
            current["flags"] = line.split()[1:]
    dont_dump = [m for m in mappings if "dd" in m.get("flags", [])]
    assert any(m["size"] >= 64 for m in dont_dump), "no MADV_DONTDUMP mapping of the secure arena"
    if os.geteuid() == 0:
        assert any("lo" in m["flags"] for m in dont_dump), "the secure arena is not mlock-ed"


# ------------------------------------------------------------------------------------------- request ids

@pytest.mark.parametrize("incoming", [DOTTED_PAN, "4970-1073-6205-4174", "4970_1073_6205_4174", "req.4970.1073"])
def test_a_card_number_in_x_request_id_is_neither_echoed_nor_logged(daemon, incoming):
    response = requests.get(daemon.base_url + "/health", headers={"X-Request-Id": incoming})
    assert response.status_code == 200
    echoed = response.headers["X-Request-Id"]
    assert echoed != incoming
    assert not any(ch.isdigit() for ch in echoed)  # the server's own ids are letters only
    line = wait_for_log(daemon, lambda line: line.get("requestId") == echoed)
    assert line is not None, "the request line with the server's id is missing"
    text = daemon.log_path.read_text(errors="replace")
    assert incoming not in text
    assert "".join(ch for ch in incoming if ch.isdigit()) not in text.replace(".", "").replace("-", "").replace("_", "")


def test_a_safe_request_id_is_echoed_and_logged(daemon):
    incoming = "order-abc-123-xyz"
    response = requests.get(daemon.base_url + "/health", headers={"X-Request-Id": incoming})
    assert response.headers["X-Request-Id"] == incoming
    assert wait_for_log(daemon, lambda line: line.get("requestId") == incoming) is not None


# ------------------------------------------------------------------------------------------- item 6: pages

@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


def test_the_acs_page_cannot_be_framed(sdk):
    from test_payins_e2e import CHALLENGED, pay, payer, register_card
    user, wallet = payer(sdk)
    card_id, reference = register_card(sdk, user, CHALLENGED, "Mozilla/5.0 (hardening)")
    payin = pay(sdk, user, wallet, card_id, 1500, reference=reference)
    assert payin.status == "CREATED"
    redirect = payin.secure_mode_redirect_url
    page = requests.get(redirect)
    assert page.status_code == 200 and "One-time code" in page.text
    policy = page.headers["Content-Security-Policy"]
    directives = {part.strip().split(" ", 1)[0]: part.strip() for part in policy.split(";")}
    assert directives["frame-ancestors"] == "frame-ancestors 'none'"
    assert page.headers["X-Frame-Options"] == "DENY"
    # An invalid link's page too.
    missing = requests.get(redirect.split("?")[0] + "?s=wrong")
    assert missing.status_code == 404
    assert "frame-ancestors 'none'" in missing.headers["Content-Security-Policy"]


def test_hosted_checkout_pages_cannot_be_framed(daemon):
    response = requests.get(daemon.base_url + "/srci/no-such-session")
    assert "text/html" in response.headers["Content-Type"]
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"


def test_no_hsts_over_plain_http(daemon):
    assert "Strict-Transport-Security" not in requests.get(daemon.base_url + "/health").headers


# ------------------------------------------------------------------------------------------- TLS

@pytest.fixture(scope="module")
def tls_daemon(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    key, certificate = directory / "key.pem", directory / "cert.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(certificate), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    instance = Daemon(extra_env={"CARDVAULT_TLS_CERTIFICATE_FILE": str(certificate),
                                 "CARDVAULT_TLS_KEY_FILE": str(key)})
    instance.certificate = certificate
    instance.key = key
    yield instance
    instance.stop()


def s_client(port, *options):
    """Runs `openssl s_client` against 127.0.0.1:port; returns (handshake done, protocol, cipher)."""
    result = subprocess.run([OPENSSL, "s_client", "-connect", "127.0.0.1:%d" % port, "-brief", *options],
                            input=b"", capture_output=True, timeout=20)
    text = (result.stdout + result.stderr).decode(errors="replace")
    protocol = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                     if line.startswith("Protocol version")), None)
    cipher = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                   if line.startswith("Ciphersuite")), None)
    return "CONNECTION ESTABLISHED" in text, protocol, cipher


@pytest.fixture(scope="module")
def permissive_server(tls_daemon):
    """An `openssl s_server` that accepts anything, to show the client really offers what the daemon refuses."""
    port = _free_port()
    server = subprocess.Popen([OPENSSL, "s_server", "-accept", str(port), "-cert", str(tls_daemon.certificate),
                               "-key", str(tls_daemon.key), "-cipher", "ALL:@SECLEVEL=0",
                               "-naccept", "100", "-quiet"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    yield port
    server.terminate()
    server.wait()


OLD_OR_CBC = [
    ("TLS 1.1", ["-tls1_1", "-cipher", "ALL:@SECLEVEL=0"]),
    ("TLS 1.0", ["-tls1", "-cipher", "ALL:@SECLEVEL=0"]),
    ("TLS 1.2 CBC (ECDHE-RSA-AES128-SHA256)", ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA256"]),
    ("TLS 1.2 CBC (ECDHE-RSA-AES256-SHA)", ["-tls1_2", "-cipher", "ECDHE-RSA-AES256-SHA:@SECLEVEL=0"]),
    ("TLS 1.2 static RSA GCM (AES128-GCM-SHA256)", ["-tls1_2", "-cipher", "AES128-GCM-SHA256"]),
]


@pytest.mark.parametrize("label,options", OLD_OR_CBC, ids=[label for label, _ in OLD_OR_CBC])
def test_tls_refuses_old_versions_and_non_aead_suites(tls_daemon, permissive_server, label, options):
    accepted_elsewhere, _, _ = s_client(permissive_server, *options)
    if label.startswith("TLS 1.0") and not accepted_elsewhere:
        pytest.skip("this OpenSSL build cannot speak TLS 1.0 at all")
    assert accepted_elsewhere, "the client could not negotiate %s even with a permissive server" % label
    established, protocol, cipher = s_client(tls_daemon.port, *options)
    assert not established, "the daemon accepted %s (%s, %s)" % (label, protocol, cipher)


@pytest.mark.parametrize("options,protocol,cipher", [
    (["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"], "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256"),
    (["-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384"], "TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384"),
    (["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"], "TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305"),
    (["-tls1_3"], "TLSv1.3", None),
])
def test_tls_accepts_tls12_aead_and_tls13(tls_daemon, options, protocol, cipher):
    established, negotiated, suite = s_client(tls_daemon.port, *options)
    assert established
    assert negotiated == protocol
    if cipher:
        assert suite == cipher


def test_hsts_on_every_response_under_tls(tls_daemon):
    context = ssl.create_default_context(cafile=str(tls_daemon.certificate))
    for path in ["/health", "/no-such-route", "/srci/no-such-session", "/v2.01/nobody/users"]:
        response = requests.get("https://127.0.0.1:%d%s" % (tls_daemon.port, path), verify=str(tls_daemon.certificate))
        assert response.headers["Strict-Transport-Security"] == "max-age=31536000", path
    with socket.create_connection(("127.0.0.1", tls_daemon.port)) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
            assert sock.version() == "TLSv1.3"


# ------------------------------------------------------------------------------------------- /metrics

def test_metrics_needs_the_configured_bearer_token():
    token = "metrics-" + uuid.uuid4().hex
    instance = Daemon(extra_env={"CARDVAULT_METRICS_TOKEN": token})
    try:
        url = instance.base_url + "/metrics"
        assert requests.get(url).status_code == 401
        assert requests.get(url).headers["WWW-Authenticate"].startswith("Bearer")
        assert requests.get(url, headers={"Authorization": "Bearer " + token[:-1] + "x"}).status_code == 401
        assert requests.get(url, headers={"Authorization": token}).status_code == 401
        good = requests.get(url, headers={"Authorization": "Bearer " + token})
        assert good.status_code == 200 and "cardvault_http_requests_total" in good.text
        assert requests.get(instance.base_url + "/health").status_code == 200  # only /metrics is guarded
        assert token not in instance.log_path.read_text(errors="replace")
    finally:
        instance.stop()


def test_metrics_stay_open_without_a_token(daemon):
    assert requests.get(daemon.base_url + "/metrics").status_code == 200


def test_a_short_metrics_token_is_refused_at_start(tmp_path):
    env = dict(os.environ, CARDVAULT_METRICS_TOKEN="short", CARDVAULT_LISTEN="127.0.0.1:0",
               CARDVAULT_DATA_DIR=str(tmp_path / "data"), CARDVAULT_KEYS_DIR=str(tmp_path / "keys"))
    result = subprocess.run([BINARY, "serve"], env=env, capture_output=True, timeout=30)
    assert result.returncode == 78
    assert b"metricsToken" in result.stderr and b"short" not in result.stderr.replace(b"metricsToken", b"")


# ------------------------------------------------------------------------------------------- modes

def serve_once(tmp_path, data, keys):
    env = dict(os.environ, CARDVAULT_LISTEN="127.0.0.1:0", CARDVAULT_DATA_DIR=str(data), CARDVAULT_KEYS_DIR=str(keys))
    return subprocess.run([BINARY, "serve"], env=env, capture_output=True, timeout=30, cwd=str(tmp_path))


@pytest.mark.parametrize("which,mode", [("data", 0o755), ("data", 0o750), ("keys", 0o711), ("keys", 0o770)])
def test_a_directory_open_to_group_or_others_stops_the_start(tmp_path, which, mode):
    data, keys = tmp_path / "data", tmp_path / "keys"
    data.mkdir(mode=0o700)
    keys.mkdir(mode=0o700)
    (tmp_path / which).chmod(mode)
    result = serve_once(tmp_path, data, keys)
    assert result.returncode == 78, result.stderr
    message = result.stderr.decode()
    assert str(tmp_path / which) in message and "chmod 700" in message and oct(mode)[2:] in message
    assert not (keys / "master.key").exists()  # refused before any key was made


def test_a_readable_key_file_stops_the_start(tmp_path):
    data, keys = tmp_path / "data", tmp_path / "keys"
    keys.mkdir(mode=0o700)
    (keys / "master.key").write_bytes(os.urandom(32))
    (keys / "master.key").chmod(0o644)
    result = serve_once(tmp_path, data, keys)
    assert result.returncode == 78
    assert b"chmod 600" in result.stderr


def test_a_fresh_checkouts_keys_directory_serves_after_keys_init(tmp_path):
    """`make run` on a new clone: keys/ comes 0755 with a README and .gitignore (0644). `keys init` makes the
    directory private, the non-key files are not key files, and serve starts."""
    data, keys = tmp_path / "data", tmp_path / "keys"
    keys.mkdir(mode=0o755)
    keys.chmod(0o755)
    for name in ("README.md", ".gitignore"):
        (keys / name).write_text("not a key\n")
        (keys / name).chmod(0o644)
    init = subprocess.run([BINARY, "keys", "init", "--keys-dir", str(keys)], capture_output=True, timeout=30)
    assert init.returncode == 0, init.stderr
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    env = dict(os.environ, CARDVAULT_LISTEN="127.0.0.1:0", CARDVAULT_DATA_DIR=str(data), CARDVAULT_KEYS_DIR=str(keys))
    process = subprocess.Popen([BINARY, "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=str(tmp_path))
    try:
        line = process.stdout.readline()
        while line and b"serving on" not in line:
            line = process.stdout.readline()
        assert b"serving on" in line, process.stderr.read()[-2000:]
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_missing_directories_are_created_private(unlimited_daemon):
    keys = unlimited_daemon.workdir / "keys"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    assert stat.S_IMODE(unlimited_daemon.data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((unlimited_daemon.data_dir / "admin.sock").stat().st_mode) == 0o600


# ------------------------------------------------------------------------------------------- aborted connections

def test_aborted_connections_are_not_warnings(daemon):
    before = len(log_lines(daemon))
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", daemon.port)) as sock:
            sock.sendall(b"POST /v2.01/x/users HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nhalf")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST
    requests.get(daemon.base_url + "/health")
    time.sleep(1.2)  # the log handler writes info lines in batches
    new = log_lines(daemon)[before:]
    assert not [line for line in new if line.get("level") in ("warning", "error")], new


# ------------------------------------------------------------------------------------------- framing in a browser

class _FramingHandler(__import__("http.server").server.BaseHTTPRequestHandler):
    """An attacker's page that puts the URL in `?u=` into an iframe."""
    def do_GET(self):
        from urllib.parse import parse_qs, urlparse
        target = parse_qs(urlparse(self.path).query).get("u", [""])[0]
        body = ("<!DOCTYPE html><title>evil</title><iframe id='victim' width='800' height='600' src='%s'></iframe>"
                % target.replace("'", "%27")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def framed_text(browser, attacker, url):
    """Loads the attacker's page framing `url`; returns the frame's body text as the browser shows it."""
    from urllib.parse import quote
    from selenium.webdriver.common.by import By
    browser.get(attacker + "/?u=" + quote(url, safe=""))
    time.sleep(1.5)
    browser.switch_to.frame(browser.find_element(By.ID, "victim"))
    try:
        return browser.find_element(By.TAG_NAME, "body").text
    finally:
        browser.switch_to.default_content()


def test_a_real_browser_refuses_to_frame_the_acs_page(sdk):
    import http.server
    import threading
    from test_payins_e2e import CHALLENGED, pay, payer, register_card
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from test_payins_e2e import CHROMEDRIVER, CHROMIUM
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FramingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    attacker = "http://127.0.0.1:%d" % server.server_address[1]
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        user, wallet = payer(sdk)
        card_id, reference = register_card(sdk, user, CHALLENGED, "Mozilla/5.0 (framing)")
        payin = pay(sdk, user, wallet, card_id, 1600, reference=reference)
        acs = payin.secure_mode_redirect_url
        # Control: a page of the same daemon without framing headers shows inside the attacker's frame.
        health = acs.split("/acs/")[0] + "/health"
        assert '"status"' in framed_text(browser, attacker, health)
        # The ACS page does not: the frame stays empty (Chrome shows its own blocked-content page).
        shown = framed_text(browser, attacker, acs)
        assert "One-time code" not in shown and "Confirm your payment" not in shown
        # Opened directly, the same link works.
        browser.get(acs)
        assert "One-time code" in browser.page_source
    finally:
        browser.quit()
        server.shutdown()
        server.server_close()
