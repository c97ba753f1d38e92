"""Browser tokenization and CORS: an origin that may not read the answer is refused before the card is read, so the
registration stays usable; the daemon's own origin and server-side posts (no Origin) are allowed; an empty
checkoutOrigins is told at start-up (a warning unless the public URL is loopback)."""
import json
import time

import pytest
import requests

from conftest import Daemon

VISA = "4970107111111119"


@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


def new_registration(sdk):
    user = sdk.NaturalUser(
        first_name="Cors", last_name="Test", email="cors@example.com", birthday=188352000, nationality="FR",
        country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER")
    user.save()
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    return registration


def post_card(registration, origin=None):
    headers = {"content-type": "application/x-www-form-urlencoded"}
    if origin is not None:
        headers["Origin"] = origin
    return requests.post(
        registration.card_registration_url,
        data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
              "cardNumber": VISA, "cardExpirationDate": "1229", "cardCvx": "123"}, headers=headers)


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "https://shop.example:444", "http://shop.example"])
def test_a_refused_origin_leaves_the_registration_usable(sdk, origin):
    registration = new_registration(sdk)
    refused = post_card(registration, origin=origin)
    assert refused.status_code == 403
    assert refused.text == "errorCode=09201"
    assert "Access-Control-Allow-Origin" not in refused.headers
    assert VISA not in refused.text
    # Nothing was read or used: the registration is still CREATED, then tokenizes from an allowed origin.
    assert sdk.CardRegistration.get(registration.id).status == "CREATED"
    allowed = post_card(registration, origin="https://shop.example")
    assert allowed.status_code == 200 and allowed.text.startswith("data="), allowed.text
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://shop.example"
    registration.registration_data = allowed.text
    registration.save()
    assert registration.status == "VALIDATED" and registration.card_id


def test_the_daemons_own_origin_and_server_side_posts_are_allowed(sdk, daemon):
    own = post_card(new_registration(sdk), origin=daemon.base_url)
    assert own.status_code == 200 and own.text.startswith("data=")
    server_side = post_card(new_registration(sdk))
    assert server_side.status_code == 200 and server_side.text.startswith("data=")


def test_a_refused_preflight_gets_no_cors_headers(sdk, daemon):
    registration = new_registration(sdk)
    preflight = requests.options(registration.card_registration_url, headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in preflight.headers
    allowed = requests.options(registration.card_registration_url, headers={
        "Origin": "https://shop.example", "Access-Control-Request-Method": "POST"})
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://shop.example"


def test_the_refusal_is_logged_with_its_origin_and_request_id(sdk, daemon):
    registration = new_registration(sdk)
    refused = post_card(registration, origin="https://refused-for-the-log.example")
    request_id = refused.headers["X-Request-Id"]
    lines = log_lines(daemon, lambda line: line.get("msg") == "request" and line.get("requestId") == request_id)
    warning = [line for line in lines if line.get("msg", "").startswith("tokenization refused: browser origin")]
    assert any(line["origin"] == "https://refused-for-the-log.example" and line["requestId"] == request_id
               for line in warning)
    request = [line for line in lines if line.get("msg") == "request" and line.get("requestId") == request_id]
    assert request and request[0]["status"] == 403 and request[0]["error"] == "origin_refused"


def log_lines(daemon, wanted):
    """The daemon's JSON log lines once one satisfies `wanted` (lines below warning are written in 200 ms batches)."""
    deadline = time.time() + 5
    while True:
        lines = [json.loads(line) for line in daemon.log_path.read_text(errors="replace").splitlines()
                 if line.startswith("{")]
        if any(wanted(line) for line in lines) or time.time() > deadline:
            return lines
        time.sleep(0.05)


def start_up_lines(extra_env):
    instance = Daemon(extra_env=extra_env, wait_for_credentials=False)
    instance.stop()  # the log is written in batches: whole once the daemon has stopped
    return [json.loads(line) for line in instance.log_path.read_text(errors="replace").splitlines()
            if line.startswith("{") and "checkoutOrigins is empty" in line]


def test_empty_checkout_origins_warn_at_start_up_unless_the_public_url_is_loopback():
    public = start_up_lines({"CARDVAULT_CHECKOUT_ORIGINS": "", "CARDVAULT_PUBLIC_URL": "https://vault.example.com"})
    assert len(public) == 1 and public[0]["level"] == "warning"
    assert public[0]["allowedOrigin"] == "https://vault.example.com"
    local = start_up_lines({"CARDVAULT_CHECKOUT_ORIGINS": ""})
    assert len(local) == 1 and local[0]["level"] == "notice"
    assert start_up_lines({"CARDVAULT_CHECKOUT_ORIGINS": "https://shop.example"}) == []
