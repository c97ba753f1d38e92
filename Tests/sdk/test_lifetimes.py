"""Record lifetimes against the release daemon (issue #19): unauthenticated checkout page views do not grow the
store (counted from the store itself after a restart), the sweeper ends an abandoned registration's card number
at its access key's expiry, and /metrics counts every kind of record."""
import base64
import os
import re
import subprocess
import time
import urllib.parse

import pytest
import requests

from conftest import ROOT, Daemon

CHECKOUT_ID = "1ifet1mes0f7he5tore1ifet1mes0f7h"
ABANDONED = "4970101122334455"   # tokenized, never completed


def binary():
    return os.environ.get("CARDVAULT_BIN", str(ROOT / ".build" / "release" / "cardvault"))


def bearer(daemon):
    basic = base64.b64encode(("%s:%s" % (daemon.client_id, daemon.api_key)).encode()).decode()
    response = requests.post(daemon.base_url + "/v2.01/oauth/token", data={"grant_type": "client_credentials"},
                             headers={"Authorization": "Basic " + basic}, timeout=10)
    assert response.status_code == 200, response.text
    session = requests.Session()
    session.headers["Authorization"] = "Bearer " + response.json()["access_token"]
    return session


def restart(daemon, extra_env=None):
    """Stops `daemon` and serves the same data and keys directories again; returns the new process's base URL."""
    daemon.stop()
    env = dict(os.environ)
    env.update({
        "CARDVAULT_LISTEN": "127.0.0.1:%d" % daemon.port, "CARDVAULT_PUBLIC_URL": daemon.base_url,
        "CARDVAULT_DATA_DIR": str(daemon.data_dir), "CARDVAULT_KEYS_DIR": str(daemon.workdir / "keys"),
    })
    env.update(extra_env or {})
    out = daemon.workdir / "restart.out"
    daemon.process = subprocess.Popen([binary(), "serve"], cwd=str(ROOT), env=env, stdout=open(out, "wb"),
                                      stderr=open(daemon.log_path, "ab"))
    deadline = time.time() + 30
    while "serving on" not in out.read_text(errors="replace"):
        assert daemon.process.poll() is None, daemon.log_path.read_text(errors="replace")[-2000:]
        assert time.time() < deadline, "the daemon did not come back"
        time.sleep(0.1)


def stored_records(daemon):
    """The number of live records, from the store's own files (the daemon must be stopped)."""
    result = subprocess.run(
        [binary(), "verify", "--data-dir", str(daemon.data_dir), "--keys-dir", str(daemon.workdir / "keys")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return int(re.search(r"verified (\d+) records", result.stdout).group(1))


def metric(daemon, kind):
    text = requests.get(daemon.base_url + "/metrics", timeout=10).text
    found = re.search(r'^cardvault_records\{kind="%s"\} (\d+)$' % re.escape(kind), text, re.M)
    assert found, "no cardvault_records for %s" % kind
    return int(found.group(1))


@pytest.fixture
def views_daemon():
    instance = Daemon(extra_env={"CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": "100000"})
    yield instance
    instance.stop()


def test_500_unauthenticated_page_views_add_at_most_50_records(views_daemon):
    daemon = views_daemon
    backend = bearer(daemon)
    registered = backend.post(daemon.base_url + "/masterpass/checkouts", json={
        "checkoutId": CHECKOUT_ID, "callbackUrlPrefixes": ["https://shop.example/back"],
        "allowedCardTypes": ["master", "visa"]}, timeout=10)
    assert registered.status_code == 201, registered.text
    started = backend.post(daemon.base_url + "/masterpass/checkouts/%s/sessions" % CHECKOUT_ID, json={
        "cartId": "cart-1", "amount": 1999, "currency": "EUR"}, timeout=10)
    assert started.status_code == 201, started.text
    url = started.json()["url"]
    daemon.stop()
    before = stored_records(daemon)
    restart(daemon, {"CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": "100000"})

    anonymous = requests.Session()
    page = None
    statuses = set()
    for index in range(500):
        kind = index % 5
        if kind == 0:  # the merchant's URL, as the shopper opens it
            response = anonymous.get(url, allow_redirects=False, timeout=10)
            page = response.headers.get("Location", page)
        elif kind == 1 and page:  # the page itself
            response = anonymous.get(daemon.base_url + page, timeout=10)
        elif kind == 2:  # a Masterpass-style URL with everything in its query, as before issue #19
            response = anonymous.get(daemon.base_url + "/srci/?" + urllib.parse.urlencode({
                "checkoutId": CHECKOUT_ID, "cartId": "cart-%d" % index, "amount": "19.99", "currency": "EUR",
                "allowedCardTypes": "master", "callbackUrl": "https://shop.example/back"}), timeout=10)
        elif kind == 3:  # a made-up session
            response = anonymous.get(daemon.base_url + "/srci/?checkoutSessionId=%032d" % index, timeout=10)
        else:  # the merchant's URL rewritten
            response = anonymous.get(url + "&amount=0.01&userId=u%d" % index, allow_redirects=False, timeout=10)
        statuses.add(response.status_code)
    assert statuses <= {200, 303, 400, 404}, statuses
    assert 200 in statuses and 303 in statuses
    assert metric(daemon, "checkout-sessions") == 1
    daemon.stop()
    after = stored_records(daemon)
    assert after - before <= 50, (before, after)
    assert after - before == 0, "a page view wrote %d records" % (after - before)
    restart(daemon, {"CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": "100000"})  # for the fixture's stop


@pytest.fixture
def short_lived_daemon():
    env = {"CARDVAULT_LIFETIMES_ACCESS_KEY_SECONDS": "2", "CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS": "1"}
    instance = Daemon(extra_env=env)
    yield instance
    instance.stop()


def test_an_abandoned_registrations_card_number_goes_at_the_access_key_expiry(short_lived_daemon):
    daemon = short_lived_daemon
    api = bearer(daemon)
    prefix = daemon.base_url + "/v2.01/" + daemon.client_id
    user = api.post(prefix + "/users/natural", json={
        "FirstName": "Ada", "LastName": "Lovelace", "Email": "ada@example.com", "Birthday": 188352000,
        "Nationality": "FR", "CountryOfResidence": "FR", "TermsAndConditionsAccepted": True,
        "UserCategory": "PAYER"}, timeout=10)
    assert user.status_code == 200, user.text
    registration = api.post(prefix + "/cardregistrations", json={
        "UserId": user.json()["Id"], "Currency": "EUR"}, timeout=10).json()
    tokenized = requests.post(registration["CardRegistrationURL"], data={
        "data": registration["PreregistrationData"], "accessKeyRef": registration["AccessKey"],
        "cardNumber": ABANDONED, "cardExpirationDate": "1229", "cardCvx": "123"}, timeout=10)
    assert tokenized.text.startswith("data="), tokenized.text
    deadline = time.time() + 15
    while True:
        numbers = metric(daemon, "card-numbers")
        expired = requests.get(daemon.base_url + "/metrics", timeout=10).text
        if numbers == 0 and re.search(r'cardvault_records_expired_total\{kind="card-registrations"\} [1-9]', expired):
            break
        assert time.time() < deadline, "the abandoned card number was not swept (%d left)" % numbers
        time.sleep(0.25)
    # Completing now fails: the number is gone.
    late = api.put(prefix + "/cardregistrations/" + registration["Id"],
                   json={"RegistrationData": tokenized.text}, timeout=10)
    assert late.status_code == 200, late.text
    assert late.json()["Status"] == "ERROR" and late.json()["ResultCode"] == "105299"
    assert late.json()["CardId"] is None
    daemon.stop()
    files = [path for path in daemon.data_dir.rglob("*") if path.is_file()]
    digits = ABANDONED.encode()
    bcd = bytes(int(ABANDONED[i]) << 4 | int(ABANDONED[i + 1]) for i in range(0, len(ABANDONED), 2))
    for path in files:
        content = path.read_bytes()
        assert digits not in content and bcd not in content, path.name
    restart(daemon, {"CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS": "1"})


def test_metrics_count_every_kind(daemon):
    text = requests.get(daemon.base_url + "/metrics", timeout=10).text
    kinds = set(re.findall(r'^cardvault_records\{kind="([^"]+)"\}', text, re.M))
    for kind in ("bearer-tokens", "idempotent-responses", "card-registrations", "card-numbers", "profiling-attempts",
                 "checkout-sessions", "checkout-transactions", "checkout-pairing-transactions", "checkout-wallets",
                 "checkout-audit", "risk-attempts", "challenges-awaiting", "clients", "users", "cards", "payins"):
        assert kind in kinds, kind
    assert "cardvault_records_expired_total" in text and "cardvault_sweep_rounds_total" in text
