"""Detokenize-and-forward (POST /v2.01/{ClientId}/forward) against the release daemon and a local TLS receiver.

The merchant side is the official Mangopay SDK (its OAuth token manager, users and card registrations); the forward
route is a CardVault extension, so it is called with `requests` carrying the SDK's bearer token. The receiver
(forward_receiver.py) plays the PSP with a throwaway CA that the daemon trusts through CARDVAULT_FORWARD_CA_FILE.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pytest
import requests

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from conftest import Daemon, ROOT  # noqa: E402
from forward_receiver import Receiver, ThrowawayCA  # noqa: E402

VISA = "4970107111111119"
VISA_ALIAS = "497010XXXXXX1119"
MASTERCARD = "5555555555554444"
MASTERCARD_ALIAS = "555555XXXXXX4444"
BINARY = os.environ.get("CARDVAULT_BIN", str(ROOT / ".build" / "release" / "cardvault"))


@pytest.fixture(scope="module")
def pki():
    directory = pathlib.Path(tempfile.mkdtemp(prefix="cardvault-forward-ca-"))
    return ThrowawayCA(directory / "trusted"), ThrowawayCA(directory / "untrusted", name="Untrusted CA")


@pytest.fixture(scope="module")
def receiver(pki):
    instance = Receiver(pki[0])
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def untrusted_receiver(pki):
    instance = Receiver(pki[1])
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def vault(pki, receiver, untrusted_receiver):
    instance = Daemon(extra_env={
        "CARDVAULT_FORWARD_DESTINATIONS": "%s/psp/,%s/psp/" % (receiver.base, untrusted_receiver.base),
        "CARDVAULT_FORWARD_CA_FILE": str(pki[0].ca_cert),
        "CARDVAULT_FORWARD_PRIVATE_NETWORKS": "127.0.0.1/32,::1/128",
        "CARDVAULT_FORWARD_TIMEOUT_SECONDS": "2",
        "CARDVAULT_FORWARD_MAX_RESPONSE_BODY_BYTES": "65536",
    })
    yield instance
    instance.stop()


def cli(vault, *args):
    return subprocess.run([BINARY, *args, "--data-dir", str(vault.data_dir), "--keys-dir", str(vault.workdir / "keys")],
                          capture_output=True, text=True, timeout=30)


class Merchant:
    """One client of the vault as its backend sees it: the SDK with its own handler, plus the forward calls."""

    def __init__(self, vault, client_id, api_key):
        from mangopay import resources
        from mangopay.api import APIRequest
        self.vault = vault
        self.client_id = client_id
        self.sdk = resources
        self.handler = APIRequest(client_id=client_id, apikey=api_key, api_sandbox_url=vault.base_url + "/v2.01/",
                                  sandbox=True)
        self.user = resources.NaturalUser(
            first_name="John", last_name="Doe", email="john@example.com", birthday=188352000, nationality="FR",
            country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER", handler=self.handler)
        self.user.save()

    @property
    def auth(self):
        return {"Authorization": self.handler.auth_manager.get_token()}

    def card(self, number=VISA, expiry="1229", cvx="123", holder="Jane Q. Shopper"):
        registration = self.sdk.CardRegistration(user=self.user, currency="EUR", handler=self.handler)
        registration.save()
        response = requests.post(
            registration.card_registration_url,
            data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
                  "cardNumber": number, "cardExpirationDate": expiry, "cardCvx": cvx})
        registration.registration_data = response.text
        registration.card_holder_name = holder
        registration.save()
        assert registration.card_id, response.text
        return registration.card_id

    def forward(self, url, body=None, headers=None, method="POST"):
        payload = {"Url": url, "Method": method, "Headers": dict({"Content-Type": "application/json"}, **(headers or {}))}
        if body is not None:
            payload["Body"] = body
        return requests.post("%s/v2.01/%s/forward" % (self.vault.base_url, self.client_id), json=payload,
                             headers=self.auth, timeout=30)

    def accesses(self, card_id):
        response = requests.get("%s/v2.01/%s/cards/%s/accesses" % (self.vault.base_url, self.client_id, card_id),
                                headers=self.auth, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(scope="module")
def merchant(vault):
    enabled = cli(vault, "clients", "forward", vault.client_id, "--on")
    assert enabled.returncode == 0, enabled.stderr
    assert json.loads(enabled.stdout) == {"ClientId": vault.client_id, "Forward": True}
    return Merchant(vault, vault.client_id, vault.api_key)


def charge_body(card):
    return json.dumps({
        "number": "{{card.%s.number}}" % card, "expiry": "{{card.%s.expiry}}" % card,
        "cvc": "{{card.%s.cvc}}" % card, "holder": "{{card.%s.holder}}" % card, "amount": 1000,
    })


def test_the_psp_gets_the_real_number_and_the_merchant_only_the_alias(merchant, receiver):
    card = merchant.card()
    before = len(receiver.requests)
    response = merchant.forward(receiver.base + "/psp/echo?ref=1", charge_body(card), {
        "X-Card": "{{card.%s.expiry_month}}/{{card.%s.expiry_year}} {{card.%s.number}}" % (card, card, card)})
    assert response.status_code == 200, response.text
    # The PSP received the substituted request.
    assert len(receiver.requests) == before + 1
    sent = receiver.requests[-1]
    assert json.loads(sent["body"]) == {"number": VISA, "expiry": "1229", "cvc": "123", "holder": "Jane Q. Shopper",
                                        "amount": 1000}
    assert sent["headers"]["X-Card"] == "12/2029 " + VISA
    assert sent["path"] == "/psp/echo?ref=1"
    # The PSP echoed the number (plain, spaced, in a header): the merchant sees the alias only.
    answer = response.json()
    assert answer["Status"] == 200
    assert VISA not in response.text and "4970 1071 1111 1119" not in response.text
    echoed = json.loads(answer["Body"])
    assert json.loads(echoed["received"])["number"] == VISA_ALIAS
    assert echoed["spaced"] == VISA_ALIAS
    assert echoed["header"] == "12/2029 " + VISA_ALIAS
    assert answer["Headers"]["X-Echo"] == VISA_ALIAS
    assert answer["Headers"]["Content-Type"] == "application/json"
    # The access is audited on the card.
    accesses = merchant.accesses(card)
    assert len(accesses) == 1
    access = accesses[0]
    assert access["CardId"] == card and access["ClientId"] == merchant.client_id
    assert access["DestinationHost"] == "localhost" and access["Status"] == 200 and access["Outcome"] == "SENT"
    assert access["RequestId"] == response.headers["X-Request-Id"]
    assert sorted(access["Fields"]) == ["cvc", "expiry", "expiry_month", "expiry_year", "holder", "number"]
    assert abs(access["CreationDate"] - time.time()) < 120


def test_the_security_code_is_sent_once(merchant, receiver):
    card = merchant.card()
    assert merchant.forward(receiver.base + "/psp/echo", charge_body(card)).status_code == 200
    hits = len(receiver.requests)
    again = merchant.forward(receiver.base + "/psp/echo", charge_body(card))
    assert again.status_code == 400, again.text
    assert "no longer held" in again.json()["errors"]["Body"]
    assert len(receiver.requests) == hits
    # Without the code the card still forwards.
    without = merchant.forward(receiver.base + "/psp/echo", json.dumps({"n": "{{card.%s.number}}" % card}))
    assert without.status_code == 200 and len(receiver.requests) == hits + 1


def test_an_answer_without_card_numbers_is_passed_on_unchanged(merchant, receiver):
    card = merchant.card()
    response = merchant.forward(receiver.base + "/psp/echo", json.dumps({"e": "{{card.%s.expiry}}" % card}),
                                {"X-Card": "plain"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert json.loads(answer["Body"]) == {"received": '{"e": "1229"}', "header": "plain", "spaced": ""}
    assert answer["Headers"]["Content-Type"] == "application/json" and "Date" in answer["Headers"]


def test_a_json_body_without_headers_is_sent_as_json(merchant, receiver):
    card = merchant.card()
    response = requests.post(
        "%s/v2.01/%s/forward" % (merchant.vault.base_url, merchant.client_id), headers=merchant.auth, timeout=30,
        json={"Url": receiver.base + "/psp/echo", "Body": {"card": {"number": "{{card.%s.number}}" % card}}})
    assert response.status_code == 200, response.text
    sent = receiver.requests[-1]
    assert sent["headers"]["Content-Type"] == "application/json"
    assert json.loads(sent["body"]) == {"card": {"number": VISA}}
    assert VISA not in response.text


def test_other_vaulted_numbers_of_the_client_are_masked_too(merchant, receiver):
    card = merchant.card()
    merchant.card(number=MASTERCARD)
    response = merchant.forward(receiver.base + "/psp/other",
                                json.dumps({"n": "{{card.%s.number}}" % card, "Other": "5555-5555-5555-4444"}))
    assert response.status_code == 200, response.text
    assert json.loads(response.json()["Body"]) == {"other": MASTERCARD_ALIAS}


@pytest.mark.parametrize("url,status", [
    ("{base}/elsewhere/charge", 403),          # outside the allow-listed prefix
    ("{base}/pspx/charge", 403),               # prefix on a segment boundary only
    ("https://localhost:1/psp/charge", 403),   # another port
    ("https://example.com/psp/charge", 403),   # another host
    ("http://localhost:{port}/psp/echo", 400),  # not https
    ("https://user@localhost:{port}/psp/echo", 400),
    ("{base}/psp/../admin", 400),
    ("https://127.0.0.1:{port}/psp/echo", 403),  # same receiver, but not the listed host name
])
def test_a_disallowed_url_is_refused_naming_url_before_any_card_is_read(merchant, receiver, url, status):
    card = merchant.card()
    before = len(receiver.requests)
    response = merchant.forward(url.format(base=receiver.base, port=receiver.port), charge_body(card))
    assert response.status_code == status, response.text
    assert "Url" in response.json()["errors"], response.text
    assert len(receiver.requests) == before
    assert merchant.accesses(card) == []
    # The security code was not touched: the card's first use still has it.
    assert merchant.forward(receiver.base + "/psp/echo", charge_body(card)).status_code == 200
    assert json.loads(receiver.requests[-1]["body"])["cvc"] == "123"


def test_unknown_and_foreign_cards_are_refused_and_nothing_is_sent(vault, merchant, receiver):
    mine = merchant.card()
    added = cli(vault, "clients", "add", "other-shop", "--json")
    assert added.returncode == 0, added.stderr
    other = json.loads(added.stdout)
    assert cli(vault, "clients", "forward", other["ClientId"], "--on").returncode == 0
    theirs = Merchant(vault, other["ClientId"], other["ApiKey"]).card(number=MASTERCARD)
    before = len(receiver.requests)
    for card_id in [theirs, "card_unknownzzzz"]:
        body = json.dumps({"a": "{{card.%s.number}}" % mine, "b": "{{card.%s.number}}" % card_id})
        response = merchant.forward(receiver.base + "/psp/echo", body)
        assert response.status_code == 404, response.text
        assert card_id in response.json()["errors"]["Body"]
    assert len(receiver.requests) == before
    assert merchant.accesses(mine) == []


def test_a_client_without_permission_gets_403(vault, receiver):
    added = cli(vault, "clients", "add", "no-forward-shop", "--json")
    assert added.returncode == 0, added.stderr
    other = json.loads(added.stdout)
    shop = Merchant(vault, other["ClientId"], other["ApiKey"])
    card = shop.card()
    before = len(receiver.requests)
    response = shop.forward(receiver.base + "/psp/echo", charge_body(card))
    assert response.status_code == 403, response.text
    assert response.json()["Type"] == "forbidden_ressource"
    assert "not enabled" in response.json()["Message"]
    assert len(receiver.requests) == before
    assert shop.accesses(card) == []
    shown = cli(vault, "clients", "forward", other["ClientId"])
    assert json.loads(shown.stdout) == {"ClientId": other["ClientId"], "Forward": False}
    # Turned on by the operator, then off again.
    assert cli(vault, "clients", "forward", other["ClientId"], "--on").returncode == 0
    assert shop.forward(receiver.base + "/psp/echo", charge_body(card)).status_code == 200
    assert cli(vault, "clients", "forward", other["ClientId"], "--off").returncode == 0
    assert shop.forward(receiver.base + "/psp/echo", charge_body(card)).status_code == 403


def test_redirects_are_not_followed(merchant, receiver):
    card = merchant.card()
    response = merchant.forward(receiver.base + "/psp/redirect", charge_body(card))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["Status"] == 302
    assert answer["Headers"].get("Location", "").endswith("/psp/landing"), answer
    assert answer["Headers"]["Location"].endswith("/psp/landing")
    time.sleep(0.3)
    assert receiver.hits("/psp/landing") == []
    assert merchant.accesses(card)[0]["Status"] == 302


def test_a_slow_destination_times_out_with_a_clear_error(merchant, receiver):
    card = merchant.card()
    started = time.monotonic()
    response = merchant.forward(receiver.base + "/psp/slow", charge_body(card))
    elapsed = time.monotonic() - started
    assert response.status_code == 504, response.text
    assert response.json()["Type"] == "forward_timeout"
    assert "did not answer" in response.json()["Message"]
    assert 1.5 < elapsed < 4.5
    access = merchant.accesses(card)[0]
    assert access["Outcome"] == "TIMEOUT" and access["Status"] is None


def test_an_untrusted_certificate_and_an_oversized_answer_fail(merchant, receiver, untrusted_receiver):
    card = merchant.card()
    response = merchant.forward(untrusted_receiver.base + "/psp/echo", charge_body(card))
    assert response.status_code == 502, response.text
    assert response.json()["Type"] == "forward_failed" and "certificate" in response.json()["Message"]
    assert untrusted_receiver.hits("/psp/echo") == []
    big = merchant.forward(receiver.base + "/psp/big", json.dumps({"n": "{{card.%s.number}}" % card}))
    assert big.status_code == 502 and "larger than 65536" in big.json()["Message"], big.text


def test_request_checks_name_the_field(merchant, receiver):
    card = merchant.card()
    cases = [
        ({"Url": receiver.base + "/psp/echo", "Method": "TRACE"}, "Method"),
        ({"Url": receiver.base + "/psp/echo", "Headers": {"Host": "evil"}}, "Headers.Host"),
        ({"Url": receiver.base + "/psp/echo", "Headers": {"Content-Type": "text/plain"},
          "Body": "{{card.%s.pan}}" % card}, "Body"),
        ({"Url": 5}, "Url"),
        ({}, "Url"),
    ]
    before = len(receiver.requests)
    for payload, field in cases:
        response = requests.post("%s/v2.01/%s/forward" % (merchant.vault.base_url, merchant.client_id), json=payload,
                                 headers=merchant.auth, timeout=10)
        assert response.status_code == 400, (payload, response.text)
        assert field in response.json()["errors"], (payload, response.text)
    assert len(receiver.requests) == before


def test_metrics_count_forwards(vault, merchant):
    text = requests.get(vault.base_url + "/metrics", timeout=10).text
    assert 'cardvault_forward_requests_total{outcome="sent"}' in text
    sent = [line for line in text.splitlines() if line.startswith('cardvault_forward_requests_total{outcome="sent"}')]
    assert int(sent[0].split()[-1]) >= 1
    assert VISA not in text


def test_zz_no_card_number_in_logs_or_data_files(vault, merchant):
    """Runs last in this module: the daemon's log and every file it wrote hold no card number."""
    vault.stop()
    forms = [VISA, "4970 1071 1111 1119", MASTERCARD, "5555-5555-5555-4444"]
    log = vault.log_path.read_bytes() + vault.stdout_path.read_bytes()
    assert log, "the daemon logged nothing"
    assert b"card data forwarded" in log
    for form in forms:
        assert form.encode() not in log
    for path in vault.data_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for form in forms:
                assert form.encode() not in data, path
