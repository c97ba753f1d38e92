"""Pay-ins end to end with the official Mangopay SDK against a live daemon: frictionless, 3-D Secure challenges
completed by a real headless Chromium (Selenium) on the sandbox ACS page, wrong codes, abandoned challenges,
a velocity attack from one browser, refunds, and money conservation over a randomised run."""
import http.server
import json
import pathlib
import random
import shutil
import threading
import time
import uuid

import pytest
import requests

from conftest import Daemon

FRICTIONLESS = "4970107111111119"
CHALLENGED = "4970105181818183"
DECLINED = "4970100000080016"  # config/sandbox.json: 497010XXXXXX0016 declines with 101101
# Luhn-valid numbers of known brands that the sandbox table does not list (so: frictionless up to 50.00).
ATTACK_CARDS = ["4111111111111111", "5555555555554444", "4012888888881881", "5105105105105100",
                "4000056655665556", "4242424242424242", "5200828282828210"]
NUMBERS = [FRICTIONLESS, CHALLENGED, DECLINED] + ATTACK_CARDS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


# ---------------------------------------------------------------------------------------------- helpers

@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


def new_ip():
    """A fresh address outside the country table, so that the tests do not feed each other's IP velocity."""
    return "10.%d.%d.%d" % (random.randrange(256), random.randrange(256), random.randrange(1, 255))


def payer(sdk, handler=None):
    """A natural user with a EUR wallet."""
    extra = {"handler": handler} if handler else {}
    user = sdk.NaturalUser(
        first_name="Pay", last_name="Er", email="payer@example.com", birthday=188352000, nationality="FR",
        country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER", **extra)
    user.save()
    wallet = sdk.Wallet(owners=[user], description="Shop", currency="EUR", **extra)
    wallet.save()
    return user, wallet


def register_card(sdk, user, number, user_agent, handler=None):
    """Tokenizes `number` from a browser with `user_agent` and completes the registration.

    Returns (card id, profiling attempt reference)."""
    extra = {"handler": handler} if handler else {}
    registration = sdk.CardRegistration(user=user, currency="EUR", **extra)
    registration.save()
    response = requests.post(
        registration.card_registration_url,
        data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
              "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": "123"},
        headers={"User-Agent": user_agent, "Accept-Language": "fr-FR"})
    assert response.text.startswith("data="), response.text
    registration.registration_data = response.text
    registration.save()
    assert registration.status == "VALIDATED"
    return registration.card_id, response.headers["Profiling-Attempt-Reference"]


def pay(sdk, user, wallet, card_id, amount, fees=0, secure_mode="DEFAULT", reference=None, ip=None,
        return_url="https://shop.example/return", handler=None, idempotency_key=None):
    """Creates a direct card pay-in with everything a 3-D Secure 2 merchant sends."""
    from mangopay.utils import Address, Billing, BrowserInfo, Money
    extra = {"handler": handler} if handler else {}
    payin = sdk.DirectPayIn(
        author=user, credited_wallet=wallet, card=sdk.Card(id=card_id),
        debited_funds=Money(amount=amount, currency="EUR"), fees=Money(amount=fees, currency="EUR"),
        secure_mode=secure_mode, secure_mode_return_url=return_url, ip_address=ip or new_ip(),
        browser_info=BrowserInfo(
            accept_header="text/html", java_enabled=False, javascript_enabled=True, language="fr-FR", color_depth=24,
            screen_height=900, screen_width=1440, timezone_offset="+60", user_agent="Mozilla/5.0 (test)"),
        billing=Billing(first_name="Pay", last_name="Er", address=Address(
            address_line_1="1 rue de la Paix", city="Paris", postal_code="75002", country="FR")),
        statement_descriptor="SHOP", tag="order", **extra)
    if reference:
        payin.profiling_attempt_reference = reference
    payin.save(idempotency_key=idempotency_key)
    return payin


def balance(sdk, wallet, handler=None):
    return int(sdk.Wallet.get(wallet.id, handler=handler).balance.amount) if handler else \
        int(sdk.Wallet.get(wallet.id).balance.amount)


def api_get(daemon, path):
    """A raw authorized GET, for what the SDK has no model of (profiling attempts)."""
    token = requests.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key)).json()
    return requests.get(daemon.base_url + "/v2.01/" + daemon.client_id + path,
                        headers={"Authorization": "Bearer " + token["access_token"]})


def answer_challenge(redirect_url, code, action="submit"):
    """Posts the ACS form as a browser without JavaScript would; returns the 303 response."""
    path, _, query = redirect_url.partition("?")
    secret = query.split("s=", 1)[1]
    return requests.post(path, data={"s": secret, "code": code, "action": action}, allow_redirects=False)


# ---------------------------------------------------------------------------------------------- merchant site

class _ReturnHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.seen.append(self.path)
        body = b"<!DOCTYPE html><title>Back at the shop</title><p id='back'>Back at the shop</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def shop():
    """A tiny merchant site on loopback that the ACS sends the browser back to."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ReturnHandler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.base_url = "http://127.0.0.1:%d" % server.server_address[1]
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for every browser test of this module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1024,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def complete_in_browser(browser, redirect_url, code, shop, button="submit"):
    """Opens the ACS link, checks what it shows, types `code` and presses `button`; waits for the shop."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    browser.get(redirect_url)
    assert "3-D Secure" in browser.title
    page = browser.find_element(By.TAG_NAME, "main").text
    field = browser.find_element(By.ID, "code")
    field.clear()
    field.send_keys(code)
    browser.find_element(By.CSS_SELECTOR, "button[value='%s']" % button).click()
    WebDriverWait(browser, 20).until(lambda driver: driver.current_url.startswith(shop.base_url))
    WebDriverWait(browser, 10).until(lambda driver: driver.find_elements(By.ID, "back"))
    return page


# ---------------------------------------------------------------------------------------------- tests

def test_frictionless_payin_succeeds_and_credits_the_wallet(sdk):
    user, wallet = payer(sdk)
    card_id, reference = register_card(sdk, user, FRICTIONLESS, "frictionless-browser/1")
    payin = pay(sdk, user, wallet, card_id, 4200, fees=200, reference=reference)
    assert payin.status == "SUCCEEDED" and payin.result_code == "000000"
    assert payin.secure_mode_needed is False and payin.secure_mode_redirect_url is None
    assert payin.execution_date is not None

    fetched = sdk.PayIn.get(payin.id)
    assert isinstance(fetched, sdk.DirectPayIn)  # the SDK cast on PaymentType CARD / ExecutionType DIRECT
    assert (fetched.payment_type, fetched.execution_type, fetched.type, fetched.nature) == \
        ("CARD", "DIRECT", "PAYIN", "REGULAR")
    assert int(fetched.credited_funds.amount) == 4000 and int(fetched.fees.amount) == 200
    assert fetched.credited_wallet_id == wallet.id and fetched.author_id == user.id
    assert fetched.card_info.bin == "497010" and fetched.card_info.brand == "VISA"
    assert fetched.security_info.avs_result == "NO_CHECK"
    assert fetched.browser_info.timezone_offset == "+60"
    assert fetched.billing.address["City"] == "Paris"  # the SDK keeps the nested address as a dict
    assert fetched.profiling_attempt_reference == reference
    assert balance(sdk, wallet) == 4000
    card = sdk.Card.get(card_id)
    assert card.validity == "VALID"
    assert [t.id for t in card.get_transactions()] == [payin.id]


def test_sandbox_decline_card_fails_with_its_result_code(sdk):
    user, wallet = payer(sdk)
    card_id, _ = register_card(sdk, user, DECLINED, "declined-browser/1")
    payin = pay(sdk, user, wallet, card_id, 1000)
    assert (payin.status, payin.result_code, payin.secure_mode_needed) == ("FAILED", "101101", False)
    assert payin.execution_date is None
    assert balance(sdk, wallet) == 0
    assert sdk.Card.get(card_id).validity == "INVALID"


def test_idempotent_payin_is_created_once(sdk):
    user, wallet = payer(sdk)
    card_id, _ = register_card(sdk, user, FRICTIONLESS, "idempotent-browser/1")
    key = str(uuid.uuid4())
    first = pay(sdk, user, wallet, card_id, 1500, idempotency_key=key, ip="10.9.9.9")
    again = pay(sdk, user, wallet, card_id, 1500, idempotency_key=key, ip="10.9.9.9")
    assert again.id == first.id
    assert balance(sdk, wallet) == 1500
    assert sdk.IdempotencyResponse.get(key).resource["Id"] == first.id


def test_challenge_completed_in_a_real_browser(sdk, browser, shop):
    user, wallet = payer(sdk)
    card_id, _ = register_card(sdk, user, CHALLENGED, "challenge-browser/1")
    payin = pay(sdk, user, wallet, card_id, 2500, fees=100, return_url=shop.base_url + "/return?order=42#/thanks")
    assert payin.status == "CREATED" and payin.secure_mode_needed is True
    assert payin.result_code is None
    assert balance(sdk, wallet) == 0

    shown = complete_in_browser(browser, payin.secure_mode_redirect_url, "123456", shop)
    assert "25.00 EUR" in shown and "497010XXXXXX8183" in shown and CHALLENGED not in shown
    assert browser.current_url == "%s/return?order=42&transactionId=%s#/thanks" % (shop.base_url, payin.id)
    assert "/return?order=42&transactionId=%s" % payin.id in shop.seen

    final = sdk.PayIn.get(payin.id)
    assert final.status == "SUCCEEDED" and final.result_code == "000000"
    assert balance(sdk, wallet) == 2400
    assert sdk.Card.get(card_id).validity == "VALID"

    # Going back and submitting again changes nothing: the page says it is done and returns to the shop.
    from selenium.webdriver.common.by import By
    browser.get(payin.secure_mode_redirect_url)
    assert "Authentication complete" in browser.find_element(By.TAG_NAME, "h1").text
    assert not browser.find_elements(By.ID, "code")
    assert answer_challenge(payin.secure_mode_redirect_url, "000000").status_code == 303
    assert sdk.PayIn.get(payin.id).status == "SUCCEEDED" and balance(sdk, wallet) == 2400


@pytest.mark.parametrize("code,button", [("654321", "submit"), ("123456", "cancel")])
def test_wrong_code_or_cancel_in_a_real_browser_fails_with_101301(sdk, browser, shop, code, button):
    user, wallet = payer(sdk)
    card_id, _ = register_card(sdk, user, FRICTIONLESS, "wrong-code-browser/1")
    payin = pay(sdk, user, wallet, card_id, 1000, secure_mode="FORCE", return_url=shop.base_url + "/back")
    assert payin.status == "CREATED" and payin.secure_mode_needed is True
    complete_in_browser(browser, payin.secure_mode_redirect_url, code, shop, button=button)
    assert browser.current_url == "%s/back?transactionId=%s" % (shop.base_url, payin.id)
    final = sdk.PayIn.get(payin.id)
    assert final.status == "FAILED" and final.result_code == "101301"
    assert final.execution_date is None
    assert balance(sdk, wallet) == 0
    assert sdk.Card.get(card_id).validity == "INVALID"


@pytest.fixture(scope="module")
def short_window_daemon(tmp_path_factory):
    """A second daemon whose challenges expire after 2 seconds (its sweeper runs every 5 s)."""
    sandbox = json.loads((pathlib.Path(__file__).resolve().parents[2] / "config" / "sandbox.json").read_text())
    sandbox["challengeWindowSeconds"] = 2
    path = tmp_path_factory.mktemp("sandbox") / "sandbox.json"
    path.write_text(json.dumps(sandbox))
    instance = Daemon(extra_env={"CARDVAULT_SANDBOX_FILE": str(path)})
    yield instance
    instance.stop()


def test_abandoned_challenge_expires_with_101304_by_the_sweeper(sdk, short_window_daemon):
    from mangopay.api import APIRequest
    daemon = short_window_daemon
    handler = APIRequest(client_id=daemon.client_id, apikey=daemon.api_key, sandbox=True,
                         api_sandbox_url=daemon.base_url + "/v2.01/")
    user, wallet = payer(sdk, handler=handler)
    card_id, _ = register_card(sdk, user, CHALLENGED, "abandoning-browser/1", handler=handler)
    abandoned = pay(sdk, user, wallet, card_id, 1000, handler=handler)
    late = pay(sdk, user, wallet, card_id, 1000, handler=handler)
    assert abandoned.status == "CREATED" and abandoned.secure_mode_needed is True

    # Nobody reads the pay-ins: only the background sweeper can expire them. Its log line tells when it has.
    def swept():
        lines = daemon.log_path.read_text(errors="replace").splitlines()
        return sum(json.loads(text)["count"] for text in lines if '"msg":"expired 3-D Secure challenges"' in text)

    deadline = time.time() + 20
    while swept() < 2:
        assert time.time() < deadline, "the sweeper did not expire the challenges"
        time.sleep(0.25)
    assert swept() == 2

    final = sdk.PayIn.get(abandoned.id, handler=handler)
    assert final.status == "FAILED" and final.result_code == "101304"
    # The right code after the window is too late.
    assert answer_challenge(late.secure_mode_redirect_url, "123456").status_code == 303
    assert sdk.PayIn.get(late.id, handler=handler).result_code == "101304"
    assert balance(sdk, wallet, handler=handler) == 0


def test_velocity_attack_from_one_browser_is_challenged_then_blocked(sdk, daemon):
    user, wallet = payer(sdk)
    attacker = "velocity-attacker/%s" % uuid.uuid4()
    results = []
    for number in ATTACK_CARDS:
        card_id, reference = register_card(sdk, user, number, attacker)
        payin = pay(sdk, user, wallet, card_id, 900, reference=reference, ip=new_ip())
        results.append((payin, reference))
    outcomes = [(p.status, p.result_code) for p, _ in results]
    assert outcomes[0] == ("SUCCEEDED", "000000")
    challenged = [i for i, o in enumerate(outcomes) if o == ("CREATED", None)]
    blocked = [i for i, o in enumerate(outcomes) if o == ("FAILED", "008500")]
    assert challenged and blocked, outcomes
    assert max(challenged) < min(blocked), outcomes
    assert outcomes[-1] == ("FAILED", "008500")
    assert all(results[i][0].secure_mode_needed for i in challenged)

    def verdict(index):
        payin, reference = results[index]
        attempt = api_get(daemon, "/profiling/attempts/" + reference)
        assert attempt.status_code == 200
        body = attempt.json()
        assert body["UserAgent"] == attacker
        (only,) = body["PayIns"]
        assert only["TransactionId"] == payin.id
        return only

    first = verdict(0)
    assert first["Decision"] == "ALLOW" and first["Reasons"] == []
    challenge = verdict(challenged[0])
    assert challenge["Decision"] == "CHALLENGE"
    assert "device.cards" in [reason["Rule"] for reason in challenge["Reasons"]]
    block = verdict(blocked[-1])
    assert block["Decision"] == "BLOCK" and block["Score"] >= 100
    reasons = {reason["Rule"]: reason for reason in block["Reasons"]}
    assert "device.cards" in reasons and "different cards" in reasons["device.cards"]["Detail"]
    # Only the allowed pay-ins moved money.
    succeeded = sum(900 for status, _ in outcomes if status == "SUCCEEDED")
    assert balance(sdk, wallet) == succeeded


def test_partial_and_full_refunds(sdk):
    from mangopay.exceptions import APIError
    from mangopay.utils import Money
    user, wallet = payer(sdk)
    card_id, _ = register_card(sdk, user, FRICTIONLESS, "refund-browser/1")
    payin = pay(sdk, user, wallet, card_id, 3000)
    assert payin.status == "SUCCEEDED" and balance(sdk, wallet) == 3000

    partial = sdk.PayInRefund(author=user, payin=payin, debited_funds=Money(amount=1200, currency="EUR"),
                              fees=Money(amount=0, currency="EUR"))
    partial.save()
    assert partial.status == "SUCCEEDED" and partial.result_code == "000000"
    assert (partial.type, partial.nature, partial.initial_transaction_id) == ("PAYOUT", "REFUND", payin.id)
    assert int(partial.debited_funds.amount) == 1200 and int(partial.credited_funds.amount) == 1200
    assert balance(sdk, wallet) == 1800

    with pytest.raises(APIError) as too_much:
        sdk.PayInRefund(author=user, payin=payin, debited_funds=Money(amount=1801, currency="EUR"),
                        fees=Money(amount=0, currency="EUR")).save()
    assert too_much.value.code == 400 and "DebitedFunds.Amount" in too_much.value.content["errors"]

    full = sdk.PayInRefund(author=user, payin=payin)
    full.save()
    assert full.status == "SUCCEEDED" and int(full.debited_funds.amount) == 1800
    assert balance(sdk, wallet) == 0
    assert sdk.Refund.get(partial.id).initial_transaction_id == payin.id
    assert sorted(r.id for r in payin.get_refunds()) == sorted([partial.id, full.id])
    with pytest.raises(APIError) as nothing_left:
        sdk.PayInRefund(author=user, payin=payin).save()
    assert nothing_left.value.code == 400


def test_money_is_conserved_over_a_randomised_run(sdk):
    """Random pay-ins (some challenged, answered right or wrong or left pending) and refunds over HTTP: each
    wallet ends at its succeeded pay-ins' credited funds minus its succeeded refunds."""
    from mangopay.utils import Money
    rng = random.Random(20261130)
    accounts = []
    for index in range(3):
        user, wallet = payer(sdk)
        card_id, _ = register_card(sdk, user, FRICTIONLESS, "conservation-browser/%d" % index)
        accounts.append({"user": user, "wallet": wallet, "card": card_id, "expected": 0, "refundable": {}})
    for _ in range(30):
        account = rng.choice(accounts)
        if account["refundable"] and rng.random() < 0.35:
            payin_id, left = rng.choice(sorted(account["refundable"].items()))
            amount = rng.randint(1, left)
            refund = sdk.PayInRefund(author=account["user"], payin=sdk.PayIn(id=payin_id),
                                     debited_funds=Money(amount=amount, currency="EUR"),
                                     fees=Money(amount=0, currency="EUR"))
            refund.save()
            if refund.status == "SUCCEEDED":
                account["expected"] -= amount
                account["refundable"][payin_id] = left - amount
                if left == amount:
                    del account["refundable"][payin_id]
            continue
        amount = rng.randint(1, 7000)  # above 50.00 is challenged
        fees = rng.randint(0, amount // 10)
        payin = pay(sdk, account["user"], account["wallet"], account["card"], amount, fees=fees)
        if payin.status == "CREATED":
            answer_challenge(payin.secure_mode_redirect_url, rng.choice(["123456", "123456", "000000"]))
            payin = sdk.PayIn.get(payin.id)
        if payin.status == "SUCCEEDED":
            account["expected"] += amount - fees
            account["refundable"][payin.id] = amount - fees
    for account in accounts:
        assert balance(sdk, account["wallet"]) == account["expected"]
        assert account["expected"] >= 0
