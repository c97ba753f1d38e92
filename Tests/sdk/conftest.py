"""Starts a live CardVault daemon for the SDK tests and points the official Mangopay SDK at it.

The daemon runs from the built binary (CARDVAULT_BIN, default .build/release/cardvault: the one users run) on a free
loopback port with a temporary data directory; its stdout gives the development client's
credentials, its stderr (JSON log lines) goes to a file that the PAN/CVX scan reads afterwards.
"""
import os
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Daemon:
    def __init__(self, extra_env=None, wrapper=None, wait_for_credentials=True):
        """`wrapper`: argv put before the binary (e.g. a shell that sets limits, then `exec "$@"`)."""
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="cardvault-sdk-"))
        self.data_dir = self.workdir / "data"
        self.data_dir.mkdir(mode=0o700)
        self.log_path = self.workdir / "daemon.log"
        self.port = _free_port()
        self.base_url = "http://127.0.0.1:%d" % self.port
        binary = os.environ.get("CARDVAULT_BIN", str(ROOT / ".build" / "release" / "cardvault"))
        env = dict(os.environ)
        env.update({
            "CARDVAULT_LISTEN": "127.0.0.1:%d" % self.port,
            "CARDVAULT_PUBLIC_URL": self.base_url,
            "CARDVAULT_DATA_DIR": str(self.data_dir),
            "CARDVAULT_KEYS_DIR": str(self.workdir / "keys"),
            "CARDVAULT_CHECKOUT_ORIGINS": "https://shop.example",
        })
        env.update(extra_env or {})
        self.stdout_path = self.workdir / "daemon.out"
        self.process = subprocess.Popen(
            list(wrapper or []) + [binary, "serve"], cwd=str(ROOT), env=env,
            stdout=open(self.stdout_path, "wb"), stderr=open(self.log_path, "wb"))
        self.client_id, self.api_key = self._wait_for_credentials(wait_for_credentials)

    def _wait_for_credentials(self, credentials=True):
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("cardvault exited early: " + self.log_path.read_text(errors="replace")[-2000:])
            text = self.stdout_path.read_text(errors="replace")
            if "serving on" in text and not credentials:
                return None, None
            if "serving on" in text and "ClientId=" in text:
                fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
                return fields["ClientId"], fields["ApiKey"]
            time.sleep(0.1)
        raise RuntimeError("cardvault did not start within 30 s")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def daemon():
    # CARDVAULT_TEST_BACKEND=postgres-pair: two daemons on one throw-away PostgreSQL database, each request sent
    # to the next one in turn (Tests/sdk/postgres_support.py).
    # The session's clients (the SDK's pooled connection among them) can sit idle between two modules for about
    # as long as the daemon's 30 s idle timeout: a request sent as the daemon closes that connection meets a reset
    # (seen once: the SDK's next request 29.9-30.3 s after its last). Keep-alive connections of this daemon stay
    # open for the session; the idle timeout itself is tested on daemons of its own (test_abuse_limits.py).
    idle = {"CARDVAULT_HTTP_CONNECTION_TIMEOUT_SECONDS": "3600"}
    if os.environ.get("CARDVAULT_TEST_BACKEND") == "postgres-pair":
        from postgres_support import DaemonPair
        instance = DaemonPair(extra_env={"CARDVAULT_CHECKOUT_ORIGINS": "https://shop.example", **idle})
        yield instance
        instance.stop()
        return
    instance = Daemon(extra_env=idle)
    scraper = _MetricsScraper(instance, os.environ.get("CARDVAULT_SCRAPE_DIR"))
    yield instance
    scraper.stop()
    instance.stop()


class _MetricsScraper:
    """With CARDVAULT_SCRAPE_DIR set: the session daemon's /metrics every half second, one file each (numbered, the
    scrape's Unix time on the first line), for scripts/render-dashboard (docs/operations.md, "Metrics")."""

    def __init__(self, daemon, directory):
        import threading
        self.directory = pathlib.Path(directory) if directory else None
        self.done = threading.Event()
        if self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.thread = threading.Thread(target=self._run, args=(daemon,), daemon=True)
            self.thread.start()

    def _run(self, daemon):
        number = 0
        while not self.done.wait(0.5):
            try:
                text = requests.get(daemon.base_url + "/metrics", timeout=5).text
            except requests.RequestException:
                continue
            (self.directory / ("%06d.prom" % number)).write_text("# time %f\n" % time.time() + text)
            number += 1

    def stop(self):
        self.done.set()
        if self.directory:
            self.thread.join()


@pytest.fixture(scope="session")
def mangopay_api(daemon):
    """The mangopay module, configured once for the whole session (the SDK memoizes its handler)."""
    import mangopay
    mangopay.client_id = daemon.client_id
    mangopay.apikey = daemon.api_key
    mangopay.api_sandbox_url = daemon.base_url + "/v2.01/"
    mangopay.api_url = daemon.base_url + "/v2.01/"
    mangopay.sandbox = True
    return mangopay


@pytest.fixture(scope="session")
def session():
    return requests.Session()
