"""Hooks and events against the release daemon with the official SDK's Notification (hooks) and Event classes.

A loopback receiver (private destinations allowed for the test daemon, so plain http to 127.0.0.1) records every
GET; it checks the CardVault-Signature header as a merchant would. The retry interval is 1 s, so the retries of a
receiver that answers 500 happen within the test.
"""
import hashlib
import hmac
import http.server
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import pytest
import requests

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from conftest import ROOT, _free_port  # noqa: E402

BINARY = os.environ.get("CARDVAULT_BIN", str(ROOT / ".build" / "release" / "cardvault"))
FRICTIONLESS = "4970107111111119"


class Receiver:
    """A merchant's hook endpoint: answers the queued statuses first (then 200) and records each request."""

    def __init__(self):
        self.requests = []
        self.statuses = {}  # path -> statuses to answer before 200
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with receiver.lock:
                    parsed = urllib.parse.urlsplit(self.path)
                    queued = receiver.statuses.get(parsed.path, [])
                    status = queued.pop(0) if queued else 200
                    receiver.requests.append({
                        "path": parsed.path, "query": parsed.query,
                        "params": dict(urllib.parse.parse_qsl(parsed.query)),
                        "signature": self.headers.get("CardVault-Signature"), "status": status, "at": time.time()})
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def for_resource(self, resource_id):
        with self.lock:
            return [r for r in self.requests if r["params"].get("RessourceId") == resource_id]

    def wait_for(self, resource_id, count=1, timeout=10.0, status=200, path="/hooks/cardvault"):
        deadline = time.time() + timeout
        while time.time() < deadline:
            hits = [r for r in self.for_resource(resource_id)
                    if (status is None or r["status"] == status) and r["path"] == path]
            if len(hits) >= count:
                return hits
            time.sleep(0.05)
        raise AssertionError("no delivery for %s: %r" % (resource_id, self.for_resource(resource_id)))

    def stop(self):
        self.server.shutdown()


def verify(signature, query, secret, now=None, tolerance=300):
    """What a receiver does with CardVault-Signature (docs/hooks.md has the same 10 lines)."""
    parts = dict(item.split("=", 1) for item in signature.split(","))
    timestamp = int(parts["t"])
    if abs((now or time.time()) - timestamp) > tolerance:
        return False
    expected = hmac.new(secret.encode(), ("%d.%s" % (timestamp, query)).encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


class Vault:
    """The release daemon on one data directory that survives restarts (and SIGKILL)."""

    def __init__(self, extra_env):
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="cardvault-hooks-"))
        (self.workdir / "data").mkdir(mode=0o700)
        self.port = _free_port()
        self.base_url = "http://127.0.0.1:%d" % self.port
        self.extra_env = extra_env
        self.process = None
        self.client_id = self.api_key = None
        self.start()

    def start(self, **overrides):
        env = dict(os.environ)
        env.update({
            "CARDVAULT_LISTEN": "127.0.0.1:%d" % self.port, "CARDVAULT_PUBLIC_URL": self.base_url,
            "CARDVAULT_DATA_DIR": str(self.workdir / "data"), "CARDVAULT_KEYS_DIR": str(self.workdir / "keys"),
        })
        env.update(self.extra_env)
        env.update(overrides)
        out = self.workdir / ("daemon-%d.out" % time.time_ns())
        self.process = subprocess.Popen([BINARY, "serve"], cwd=str(ROOT), env=env, stdout=open(out, "wb"),
                                        stderr=open(self.workdir / "daemon.log", "ab"))
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("cardvault exited: " + (self.workdir / "daemon.log").read_text()[-2000:])
            text = out.read_text(errors="replace")
            if "serving on" in text:
                if "ClientId=" in text:
                    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
                    self.client_id, self.api_key = fields["ClientId"], fields["ApiKey"]
                return
            time.sleep(0.05)
        raise RuntimeError("cardvault did not start")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Merchant:
    """The SDK with its own handler pointed at one vault."""

    def __init__(self, vault):
        from mangopay import resources
        from mangopay.api import APIRequest
        self.vault = vault
        self.sdk = resources
        self.handler = APIRequest(client_id=vault.client_id, apikey=vault.api_key,
                                  api_sandbox_url=vault.base_url + "/v2.01/", sandbox=True)

    @property
    def auth(self):
        return {"Authorization": self.handler.auth_manager.get_token()}

    def url(self, path):
        return "%s/v2.01/%s%s" % (self.vault.base_url, self.vault.client_id, path)

    def hook(self, url, event_type):
        notification = self.sdk.Notification(url=url, event_type=event_type, handler=self.handler)
        notification.save()
        return notification

    def payin(self):
        """A frictionless direct pay-in of 10.00 EUR on a new user, wallet and card; returns its id."""
        user, wallet, card_id = self.shopper(FRICTIONLESS)
        payin = self.direct_payin(user, wallet, card_id, 1000, "10.%d.%d.%d" % (
            random.randrange(256), random.randrange(256), random.randrange(1, 255)))
        assert payin.status == "SUCCEEDED", payin.result_message
        return payin.id

    def shopper(self, number):
        """A new user, their EUR wallet and the id of `number` registered as their card."""
        sdk, handler = self.sdk, self.handler
        user = sdk.NaturalUser(
            first_name="Pay", last_name="Er", email="payer@example.com", birthday=188352000, nationality="FR",
            country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER", handler=handler)
        user.save()
        wallet = sdk.Wallet(owners=[user], description="Shop", currency="EUR", handler=handler)
        wallet.save()
        registration = sdk.CardRegistration(user=user, currency="EUR", handler=handler)
        registration.save()
        response = requests.post(
            registration.card_registration_url,
            data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
                  "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": "123"})
        registration.registration_data = response.text
        registration.save()
        return user, wallet, registration.card_id

    def direct_payin(self, user, wallet, card_id, amount, ip_address):
        """A direct pay-in of `amount` EUR cents from `card_id` into `wallet`, from `ip_address` (saved, answered)."""
        from mangopay.utils import Address, Billing, BrowserInfo, Money
        sdk = self.sdk
        payin = sdk.DirectPayIn(
            author=user, credited_wallet=wallet, card=sdk.Card(id=card_id),
            debited_funds=Money(amount=amount, currency="EUR"), fees=Money(amount=0, currency="EUR"),
            secure_mode="DEFAULT", secure_mode_return_url="https://shop.example/return", ip_address=ip_address,
            browser_info=BrowserInfo(
                accept_header="text/html", java_enabled=False, javascript_enabled=True, language="fr-FR",
                color_depth=24, screen_height=900, screen_width=1440, timezone_offset="+60",
                user_agent="Mozilla/5.0 (test)"),
            billing=Billing(first_name="Pay", last_name="Er", address=Address(
                address_line_1="1 rue de la Paix", city="Paris", postal_code="75002", country="FR")),
            handler=self.handler)
        payin.save()
        return payin


@pytest.fixture(scope="module")
def receiver():
    instance = Receiver()
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def vault():
    instance = Vault({"CARDVAULT_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true",
                      "CARDVAULT_HOOKS_RETRY_INTERVAL_SECONDS": "1"})
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def merchant(vault, receiver):
    merchant = Merchant(vault)
    # The client's first hook (raw JSON: the SDK's Notification drops fields it does not know) shows the secret.
    first = requests.post(merchant.url("/hooks"), headers=merchant.auth, timeout=10,
                          json={"Url": receiver.base + "/failed", "EventType": "PAYIN_NORMAL_FAILED"})
    assert first.status_code == 200, first.text
    assert first.json()["Secret"].startswith("whsec_") and first.headers["Cache-Control"] == "no-store"
    merchant.secret = first.json()["Secret"]
    merchant.succeeded = merchant.hook(receiver.base + "/hooks/cardvault?shop=1", "PAYIN_NORMAL_SUCCEEDED")
    return merchant


def test_a_frictionless_payin_is_delivered_signed_within_5_seconds_and_listed(merchant, receiver):
    hook = merchant.succeeded
    assert (hook.status, hook.validity, hook.event_type) == ("ENABLED", "VALID", "PAYIN_NORMAL_SUCCEEDED")
    fetched = merchant.sdk.Notification.get(hook.id, handler=merchant.handler)
    assert fetched.url == receiver.base + "/hooks/cardvault?shop=1"
    # Only the first hook of a client carries the secret.
    second = requests.post(merchant.url("/hooks"), headers=merchant.auth, timeout=10,
                           json={"Url": receiver.base + "/created", "EventType": "PAYIN_NORMAL_CREATED"})
    assert second.status_code == 200 and "Secret" not in second.json()

    started = time.time()
    payin_id = merchant.payin()
    hits = receiver.wait_for(payin_id, timeout=5)
    delivery = hits[0]
    assert delivery["at"] - started < 5
    assert delivery["path"] == "/hooks/cardvault"
    assert delivery["params"]["shop"] == "1"
    assert delivery["params"]["EventType"] == "PAYIN_NORMAL_SUCCEEDED"
    assert delivery["params"]["RessourceId"] == payin_id
    assert abs(int(delivery["params"]["Date"]) - started) < 10
    # The receiver's check: right secret passes; another secret, an altered query or an old timestamp fail.
    assert verify(delivery["signature"], delivery["query"], merchant.secret)
    assert not verify(delivery["signature"], delivery["query"], "whsec_forged")
    assert not verify(delivery["signature"], delivery["query"].replace(payin_id, "payin_other"), merchant.secret)
    assert not verify(delivery["signature"], delivery["query"], merchant.secret, now=time.time() + 3600)
    # The CREATED hook got its own GET for the same pay-in.
    created = receiver.wait_for(payin_id, path="/created", timeout=5)
    assert created[0]["params"]["EventType"] == "PAYIN_NORMAL_CREATED"

    events = merchant.sdk.Event.all(handler=merchant.handler, EventType="PAYIN_NORMAL_SUCCEEDED")
    mine = [event for event in events if event.resource_id == payin_id]
    assert len(mine) == 1 and mine[0].event_type == "PAYIN_NORMAL_SUCCEEDED"
    raw = requests.get(merchant.url("/events"), headers=merchant.auth, timeout=10,
                       params={"EventType": "PAYIN_NORMAL_SUCCEEDED", "Sort": "Date:DESC", "per_page": 100})
    assert raw.status_code == 200 and raw.headers["X-Number-Of-Items"] == str(len(raw.json()))
    assert set(raw.json()[0]) == {"ResourceId", "EventType", "Date"}
    assert any(e["ResourceId"] == payin_id for e in raw.json())
    later = requests.get(merchant.url("/events"), headers=merchant.auth, timeout=10,
                         params={"AfterDate": int(time.time()) + 60})
    assert later.status_code == 200 and later.json() == []


def test_a_receiver_answering_500_twice_is_retried_then_served(merchant, receiver):
    with receiver.lock:
        receiver.statuses["/hooks/cardvault"] = [500, 500]
    payin_id = merchant.payin()
    hits = receiver.wait_for(payin_id, timeout=15)
    attempts = [r for r in receiver.for_resource(payin_id) if r["path"] == "/hooks/cardvault"]
    assert [r["status"] for r in attempts] == [500, 500, 200]
    # Retried on the 1 s interval (whole seconds), not at once: the third attempt is a second or more after the first.
    assert attempts[2]["at"] - attempts[0]["at"] >= 1.0
    assert len({r["signature"] for r in attempts}) >= 2 and all(verify(r["signature"], r["query"], merchant.secret)
                                                                for r in attempts)
    assert hits[-1]["params"]["EventType"] == "PAYIN_NORMAL_SUCCEEDED"
    metrics = requests.get(merchant.vault.base_url + "/metrics", timeout=10).text
    assert "cardvault_hook_delivery_failures_total" in metrics
    failures = [line for line in metrics.splitlines() if line.startswith("cardvault_hook_delivery_failures_total ")]
    assert int(failures[0].split()[1]) >= 2


def test_an_event_not_yet_delivered_when_the_daemon_is_killed_is_delivered_after_restart(merchant, receiver):
    vault = merchant.vault
    vault.stop()
    # A daemon that would not look at its outbox for a minute: the pay-in's event is committed, not delivered.
    vault.start(CARDVAULT_HOOKS_POLL_INTERVAL_MILLISECONDS="60000")
    merchant.handler = Merchant(vault).handler
    payin_id = merchant.payin()
    time.sleep(0.5)
    assert receiver.for_resource(payin_id) == []
    vault.kill()
    vault.start()
    hits = receiver.wait_for(payin_id, timeout=10)
    assert hits[0]["params"]["RessourceId"] == payin_id
    listed = subprocess.run([BINARY, "hooks", "list", vault.client_id, "--json", "--data-dir",
                             str(vault.workdir / "data"), "--keys-dir", str(vault.workdir / "keys")],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0, listed.stderr
    assert "PAYIN_NORMAL_SUCCEEDED" in listed.stdout and merchant.secret not in listed.stdout


def test_a_private_destination_is_refused_by_default(daemon):
    from mangopay import resources
    from mangopay.api import APIRequest
    from mangopay.exceptions import APIError
    handler = APIRequest(client_id=daemon.client_id, apikey=daemon.api_key,
                         api_sandbox_url=daemon.base_url + "/v2.01/", sandbox=True)
    for url in ["http://127.0.0.1:9/hook", "https://127.0.0.1/hook", "https://10.1.2.3/hook",
                "https://169.254.169.254/latest/meta-data"]:
        with pytest.raises(APIError) as refused:
            resources.Notification(url=url, event_type="PAYIN_NORMAL_SUCCEEDED", handler=handler).save()
        assert refused.value.code == 400
        assert "Url" in refused.value.content["errors"], refused.value.content
