"""The hosted checkout in a real browser (headless Chromium driven by Selenium), against a live daemon.

A tiny merchant site on another loopback port receives the callbacks; its backend half is these tests, calling
/masterpass/... with the bearer token of the daemon's development client. Layout, accessibility, inline checks and
the screenshots are in test_pages_browser.py.
"""
import base64
import http.server
import pathlib
import shutil
import threading
import urllib.parse

import pytest
import requests

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKOUT_ID = "b1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
MASTERCARD = "5555555555554444"          # sandbox: frictionless
MAESTRO_CHALLENGE = "5033950000020004"   # sandbox rule 503395XXXXXX0004: challenge
ATTACKER_VISA = "4970107111111119"       # sandbox: frictionless
CHALLENGE_CODE = "123456"                # config/sandbox.json


def luhn_ok(number):
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


class Merchant(http.server.ThreadingHTTPServer):
    """The merchant's site: records every callback and answers with a small page."""

    def __init__(self):
        self.callbacks = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.callbacks.append(self.path)
                body = b"<!DOCTYPE html><title>Merchant</title><h1>Back at the merchant</h1>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.base = "http://127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def merchant():
    site = Merchant()
    yield site
    site.shutdown()


@pytest.fixture(scope="module")
def token(daemon):
    basic = base64.b64encode(("%s:%s" % (daemon.client_id, daemon.api_key)).encode()).decode()
    response = requests.post(
        daemon.base_url + "/v2.01/oauth/token", data={"grant_type": "client_credentials"},
        headers={"Authorization": "Basic " + basic}, timeout=10)
    assert response.status_code == 200
    return response.json()["access_token"]


@pytest.fixture(scope="module")
def backend(daemon, token, merchant):
    """The merchant backend: a requests session with the bearer token and the checkout id registered."""
    session = requests.Session()
    session.headers["Authorization"] = "Bearer " + token
    # 3-D Secure stays required for every checkout of this id; the security code is the merchant's choice (the
    # default) per session.
    response = session.post(daemon.base_url + "/masterpass/checkouts", json={
        "checkoutId": CHECKOUT_ID, "callbackUrlPrefixes": [merchant.base + "/callback"],
        "allowedCardTypes": ["master", "maestro", "visa", "amex"], "merchantName": "Fancy Shop",
        "threeDSPolicy": "required"}, timeout=10)
    assert response.status_code == 201, response.text
    assert response.json()["threeDSPolicy"] == "required" and response.json()["cvcPolicy"] == "merchantChoice"
    return session


def chrome(width=1280, height=900, javascript=True):
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=%d,%d" % (width, height), "--lang=en-US"):
        options.add_argument(argument)
    if shutil.which("chromium"):
        options.binary_location = shutil.which("chromium")
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


@pytest.fixture
def browser():
    driver = chrome()
    yield driver
    driver.quit()


def session_body(merchant, **overrides):
    """The body of POST /masterpass/checkouts/{id}/sessions: what the merchant's server decides."""
    body = {
        "cartId": "cart-%d" % (len(merchant.callbacks) + 1), "amount": 7490, "currency": "USD",
        "allowedCardTypes": ["master", "maestro", "visa"], "suppressShippingAddress": False, "locale": "en_US",
        "channel": "mobile", "cryptoOptions": [{"cardType": "master", "format": ["UCAF", "ICC"]},
                                               {"cardType": "maestro", "format": ["UCAF", "ICC"]}],
        "callbackUrl": merchant.base + "/callback?order=42",
    }
    body.update({key: value for key, value in overrides.items() if value is not None})
    for key in [key for key, value in overrides.items() if value is None]:
        body.pop(key, None)
    return body


def start_checkout(daemon, backend, merchant, checkout_id=CHECKOUT_ID, **overrides):
    """The merchant's server starts a checkout; returns the JSON answer (url, transactionId, ...)."""
    response = backend.post(daemon.base_url + "/masterpass/checkouts/%s/sessions" % checkout_id,
                            json=session_body(merchant, **overrides), timeout=10)
    assert response.status_code == 201, response.text
    return response.json()


def checkout_url(daemon, backend, merchant, **overrides):
    """The URL the merchant sends the shopper to."""
    return start_checkout(daemon, backend, merchant, **overrides)["url"]


def fill(driver, card=MASTERCARD, expiry="1230", cvc="123", shipping=True, typed=True, street="2 Side Street"):
    def put(name, value):
        field = driver.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)
    put("cardNumber", card)
    put("expiry", expiry)
    if cvc is not None:
        put("securityCode", cvc)
    put("cardHolderName", "Ada Lovelace")
    put("billingLine1", "1 Main Street")
    put("billingCity", "Springfield")
    put("billingPostalCode", "12345")
    Select(driver.find_element(By.ID, "billingCountry")).select_by_value("US")
    if shipping:
        put("shippingLine1", street)
        put("shippingCity", "Shelbyville")
        put("shippingPostalCode", "54321")
        Select(driver.find_element(By.ID, "shippingCountry")).select_by_value("US")
    put("email", "ada@example.com")


def callback_params(url):
    return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))


def wait_for_callback(driver, merchant):
    WebDriverWait(driver, 20).until(lambda d: d.current_url.startswith(merchant.base + "/callback"))
    return callback_params(driver.current_url)


def pass_challenge(driver, daemon):
    """On the sandbox ACS page: type the one-time code into its visible text field and submit."""
    WebDriverWait(driver, 20).until(lambda d: "/acs/" in d.current_url)
    fields = [field for field in driver.find_elements(By.CSS_SELECTOR, "input")
              if field.is_displayed() and field.get_attribute("type") in ("text", "password", "tel", "number")]
    assert fields, "no code field on the challenge page"
    fields[0].send_keys(CHALLENGE_CODE)
    fields[0].submit()


def test_challenge_checkout_lands_on_the_callback_and_backend_reads_payment_data(daemon, merchant, backend, browser):
    browser.get(checkout_url(daemon, backend, merchant, cartId="cart-challenge"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Fancy Shop"
    # Only the allowed brands are shown; the number is formatted and its brand detected while typing.
    brands = [item.get_attribute("data-brand") for item in browser.find_elements(By.CSS_SELECTOR, ".brands li")]
    assert brands == ["mastercard", "visa", "maestro"]
    fill(browser, card=MAESTRO_CHALLENGE)
    assert browser.find_element(By.ID, "cardNumber").get_attribute("value") == "5033 9500 0002 0004"
    assert browser.find_element(By.ID, "expiry").get_attribute("value") == "12/30"
    assert browser.find_element(By.ID, "card-brand").text == "Maestro"
    assert browser.find_element(By.CSS_SELECTOR, 'input[name="javascriptEnabled"]').get_attribute("value") == "true"
    browser.find_element(By.CSS_SELECTOR, "button.pay").click()
    pass_challenge(browser, daemon)
    params = wait_for_callback(browser, merchant)
    assert params["mpstatus"] == "success"
    assert params["order"] == "42"
    transaction_id = params["oauth_token"]

    response = backend.get(daemon.base_url + "/masterpass/paymentdata/" + transaction_id,
                           params={"checkoutId": CHECKOUT_ID, "cartId": "cart-challenge"}, timeout=10)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["card"]["brandId"] == "maestro"
    account = data["card"]["accountNumber"]
    assert account != MAESTRO_CHALLENGE and account.startswith("503395") and luhn_ok(account)
    assert data["tokenization"]["fPanSuffix"] == "0004"
    assert data["tokenization"]["cryptogram"]["cryptoType"] == "ICC"
    assert data["tokenization"]["cryptogram"]["eci"] == "02"
    assert data["authenticationOptions"]["authenticateMethod"] == "3DS"
    assert data["authenticationOptions"]["paResStatus"] == "Y"
    assert data["shippingAddress"]["city"] == "Shelbyville"

    postback = backend.post(daemon.base_url + "/masterpass/postback", json={
        "transactionId": transaction_id, "checkoutId": CHECKOUT_ID, "currency": "USD", "amount": "74.90",
        "paymentSuccessful": True, "paymentCode": "123456", "paymentDate": "2026-01-01T12:00:00Z"}, timeout=10)
    assert postback.status_code == 204, postback.text

    # Without the owner's bearer token there is nothing to read (client isolation: MasterpassRoutesTests).
    other = backend.get(daemon.base_url + "/masterpass/paymentdata/" + transaction_id,
                        params={"checkoutId": CHECKOUT_ID, "cartId": "cart-challenge"},
                        headers={"Authorization": "Bearer not-a-token"}, timeout=10)
    assert other.status_code == 401


def test_cancel_lands_with_mpstatus_cancel(daemon, merchant, backend, browser):
    browser.get(checkout_url(daemon, backend, merchant))
    browser.find_element(By.CSS_SELECTOR, "button.cancel").click()
    params = wait_for_callback(browser, merchant)
    assert params["mpstatus"] == "cancel"
    assert params["oauth_token"]


def test_checkout_works_without_javascript(daemon, merchant, backend):
    driver = chrome(javascript=False)
    try:
        driver.get(checkout_url(daemon, backend, merchant, suppressShippingAddress=True, cvc2Support=False))
        assert not driver.find_elements(By.ID, "securityCode")
        assert not driver.find_elements(By.ID, "shippingLine1")
        fill(driver, expiry="12/30", cvc=None, shipping=False)
        assert driver.find_element(By.CSS_SELECTOR, 'input[name="javascriptEnabled"]').get_attribute("value") == "false"
        driver.find_element(By.CSS_SELECTOR, "button.pay").click()
        params = wait_for_callback(driver, merchant)
        assert params["mpstatus"] == "success"
    finally:
        driver.quit()


def test_bad_form_input_is_shown_next_to_each_field(daemon, merchant, backend):
    """The server's own checks (what a browser without the page's script sends): a sentence next to each field."""
    driver = chrome(javascript=False)
    try:
        driver.get(checkout_url(daemon, backend, merchant, shippingLocationProfile="FR,BE"))
        fill(driver, card="4111111111111112", expiry="13/30", cvc="12", shipping=False)
        for name, value in (("shippingLine1", "2 Side Street"), ("shippingCity", "Brussels"),
                            ("shippingPostalCode", "1000")):
            driver.find_element(By.ID, name).send_keys(value)
        driver.find_element(By.ID, "email").clear()
        driver.find_element(By.ID, "email").send_keys("not-an-email")
        driver.find_element(By.CSS_SELECTOR, "button.pay").click()
        WebDriverWait(driver, 10).until(expected_conditions.presence_of_element_located((By.ID, "error-summary")))
        errors = {element.get_attribute("id"): element.text
                  for element in driver.find_elements(By.CSS_SELECTOR, ".field-error")}
        assert errors["cardNumber-error"] == "The card number is not valid."
        assert "expiry-error" in errors and "securityCode-error" in errors
        assert errors["shippingCountry-error"] == "Choose a country (two-letter ISO code)."
        assert errors["email-error"] == "Enter an e-mail address such as name@example.com."
        # An invalid number is not written back; valid fields are.
        assert driver.find_element(By.ID, "cardNumber").get_attribute("value") == ""
        assert driver.find_element(By.ID, "cardNumber").get_attribute("aria-invalid") == "true"
        assert driver.find_element(By.ID, "shippingCity").get_attribute("value") == "Brussels"
    finally:
        driver.quit()


@pytest.mark.parametrize("field,value,expected", [
    ("cartId", None, "cartId is required"),
    ("amount", None, "amount is required"),
    ("amount", 12.5, "amount must be a whole number of minor units"),
    ("amount", "7490", "amount must be a whole number of minor units"),
    ("amount", -5, "amount must be greater than zero"),
    ("amount", 0, "amount must be greater than zero"),
    ("currency", "DOLLARS", "currency must be an ISO 4217 code"),
    ("allowedCardTypes", ["master", "paypal"], "allowedCardTypes must be a comma-separated list"),
    ("allowedCardTypes", ["jcb"], "allowedCardTypes names types this checkoutId does not accept: jcb"),
    ("suppressShippingAddress", "maybe", "suppressShippingAddress must be true or false"),
    ("locale", "klingon", "locale must look like en_US or fr_FR"),
    ("channel", "fax", "channel must be web or mobile"),
    ("cryptoOptions", [{"cardType": "master", "format": ["TVV"]}], "cryptoOptions must be a JSON array"),
    ("cvc2Support", "nope", "cvc2Support must be true or false"),
    ("suppress3DS", True, "this checkoutId requires 3-D Secure"),
    ("unpredictableNumber", "!!", "unpredictableNumber must be 4 to 44 characters of base64"),
    ("validityPeriodMinutes", 0, "validityPeriodMinutes must be a whole number from 1 to 1440"),
    ("shippingLocationProfile", "USA", "must be a comma-separated list of ISO 3166 country codes"),
    ("userId", "a b", "userId must be 1 to 100 characters"),
    ("callbackUrl", "javascript:alert(1)", "callbackUrl uses a scheme that is not allowed"),
    ("callbackUrl", "https://evil.example/callback", "callbackUrl does not start with a URL registered"),
])
def test_bad_session_fields_get_a_clear_error(daemon, merchant, backend, field, value, expected):
    response = backend.post(daemon.base_url + "/masterpass/checkouts/%s/sessions" % CHECKOUT_ID,
                            json=session_body(merchant, **{field: value}) if value is not None
                            else {k: v for k, v in session_body(merchant).items() if k != field}, timeout=10)
    assert response.status_code == 400, response.text
    errors = response.json()["Errors"]["Error"]
    assert [error["Source"] for error in errors] == [field]
    assert expected in errors[0]["Description"]
    assert "Traceback" not in response.text and ".swift" not in response.text


def test_only_the_owner_with_its_token_starts_a_checkout(daemon, merchant, backend):
    path = daemon.base_url + "/masterpass/checkouts/%s/sessions" % CHECKOUT_ID
    assert requests.post(path, json=session_body(merchant), timeout=10).status_code == 401
    assert requests.post(path, json=session_body(merchant), headers={"Authorization": "Bearer " + "x" * 40},
                         timeout=10).status_code == 401
    unknown = backend.post(daemon.base_url + "/masterpass/checkouts/%s/sessions" % ("0" * 32),
                           json=session_body(merchant), timeout=10)
    assert unknown.status_code == 403


@pytest.mark.parametrize("tampering", [
    {"userId": "victim-1"}, {"amount": "0.01"}, {"suppress3DS": "true"}, {"suppress3Ds": "true"},
    {"cvc2Support": "false"}, {"currency": "JPY"}, {"allowedCardTypes": "amex"}, {"pairingId": "mppair1"},
    {"callbackUrl": "https://evil.example/callback"},
])
def test_a_tampered_checkout_url_gets_a_clear_error_page(daemon, merchant, backend, tampering):
    url = checkout_url(daemon, backend, merchant, userId="shopper-1")
    assert requests.get(url, allow_redirects=False, timeout=10).status_code == 303
    tampered = url + "&" + urllib.parse.urlencode(tampering)
    page = requests.get(tampered, allow_redirects=False, timeout=10)
    assert page.status_code == 400, page.status_code
    assert "Location" not in page.headers
    name = next(iter(tampering))
    # The shopper sees a safe page; the developer detail is in the JSON answer (and the log).
    assert "This checkout cannot be opened" in page.text and "cannot be set in the checkout URL" not in page.text
    assert "Traceback" not in page.text and ".swift" not in page.text
    as_json = requests.get(tampered, headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert as_json.json()["Errors"]["Error"][0]["ReasonCode"] == "INVALID_REQUEST"
    assert "%s cannot be set in the checkout URL" % name in as_json.text


@pytest.mark.parametrize("query,expected", [
    ({}, "checkoutSessionId is required"),
    ({"checkoutId": CHECKOUT_ID}, "checkoutSessionId is required"),
    ({"checkoutId": CHECKOUT_ID, "cartId": "c1", "amount": "74.90", "currency": "USD",
      "allowedCardTypes": "master", "userId": "victim-1"}, "amount cannot be set in the checkout URL"),
    ({"checkoutId": CHECKOUT_ID, "checkoutSessionId": "short"}, "checkoutSessionId is not a valid checkout session"),
])
def test_an_old_style_or_made_up_checkout_url_opens_nothing(daemon, merchant, backend, query, expected):
    page = requests.get(daemon.base_url + "/srci/?" + urllib.parse.urlencode(query), allow_redirects=False, timeout=10)
    assert page.status_code == 400
    assert expected not in page.text and "This checkout cannot be opened" in page.text
    assert "Location" not in page.headers
    as_json = requests.get(daemon.base_url + "/srci/?" + urllib.parse.urlencode(query),
                           headers={"Accept": "application/json"}, allow_redirects=False, timeout=10)
    assert expected in as_json.text


def test_unregistered_callback_is_refused_and_never_redirected_to(daemon, merchant, backend):
    for callback in ("https://evil.example/callback", merchant.base + "/callbackx", merchant.base + "/other",
                     merchant.base.replace("127.0.0.1", "localhost") + "/callback",
                     "http://127.0.0.1:1/callback", merchant.base + "/callback/../admin"):
        response = backend.post(daemon.base_url + "/masterpass/checkouts/%s/sessions" % CHECKOUT_ID,
                                json=session_body(merchant, callbackUrl=callback), timeout=10)
        assert response.status_code == 400, callback
        assert "url" not in response.json()


def test_backend_calls_reject_bad_input(daemon, backend):
    base = daemon.base_url + "/masterpass"
    checks = [
        backend.get(base + "/paymentdata/mptx1", timeout=10),
        backend.get(base + "/paymentdata/mptx1", params={"checkoutId": "0" * 32, "cartId": "c"}, timeout=10),
        backend.post(base + "/postback", json={"transactionId": "mptx1"}, timeout=10),
        backend.post(base + "/postback", data="not json", timeout=10),
        backend.post(base + "/postback", json={"transactionId": "mptx1", "checkoutId": "0" * 32, "currency": "USD",
                                              "amount": "1.00", "paymentSuccessful": True}, timeout=10),
        backend.get(base + "/pairingid", params={"pairingTransactionId": "x/y"}, timeout=10),
        backend.get(base + "/precheckoutdata/unknown", timeout=10),
        backend.post(base + "/expresscheckout", json={"amount": "1.001", "currency": "USD"}, timeout=10),
    ]
    assert [response.status_code for response in checks] == [400, 403, 400, 400, 403, 400, 404, 400]
    for response in checks:
        errors = response.json()["Errors"]["Error"]
        assert errors and all(error["Description"] for error in errors)
    assert checks[1].json()["Errors"]["Error"][0]["ReasonCode"] == "AUTHORIZATION_FAILED"
    assert requests.get(base + "/paymentdata/mptx1", timeout=10).status_code == 401


def test_express_checkout_pairs_once_then_rotates_pairing_ids(daemon, merchant, backend, browser):
    browser.get(checkout_url(daemon, backend, merchant, userId="shopper-7"))
    fill(browser)
    browser.find_element(By.ID, "pairingConsent").click()
    browser.find_element(By.CSS_SELECTOR, "button.pay").click()
    params = wait_for_callback(browser, merchant)
    assert params["mpstatus"] == "success"
    base = daemon.base_url + "/masterpass"
    pairing = backend.get(base + "/pairingid", params={
        "pairingTransactionId": params["pairing_verifier"], "userId": "shopper-7"}, timeout=10)
    assert pairing.status_code == 200, pairing.text
    pairing_id = pairing.json()["pairingId"]
    pre = backend.get(base + "/precheckoutdata/" + pairing_id, timeout=10).json()
    assert pre["cards"][0]["lastFour"] == "4444" and "accountNumber" not in pre["cards"][0]
    seen = {pairing_id, pre["pairingId"]}
    current = pre["pairingId"]
    for _ in range(2):
        response = backend.post(base + "/expresscheckout", json={
            "checkoutId": CHECKOUT_ID, "pairingId": current, "amount": "19.99", "currency": "USD",
            "cardId": pre["cards"][0]["cardId"], "shippingAddressId": pre["shippingAddresses"][0]["addressId"],
            "digitalGoods": False}, timeout=10)
        assert response.status_code == 200, response.text
        data = response.json()
        assert data["card"]["brandId"] == "master" and data["card"]["accountNumber"] != MASTERCARD
        assert data["pairingId"] not in seen
        seen.add(data["pairingId"])
        stale = backend.post(base + "/expresscheckout", json={
            "checkoutId": CHECKOUT_ID, "pairingId": current, "amount": "19.99", "currency": "USD",
            "cardId": pre["cards"][0]["cardId"], "digitalGoods": True}, timeout=10)
        assert stale.status_code == 404
        current = data["pairingId"]


def pay_and_return(driver, daemon, merchant):
    """Pays, passes a challenge if the issuer (or the risk rules, after many cards from one browser) asks for one,
    and returns the callback's parameters."""
    driver.find_element(By.CSS_SELECTOR, "button.pay").click()
    WebDriverWait(driver, 20).until(
        lambda d: d.current_url.startswith(merchant.base + "/callback") or "/acs/" in d.current_url)
    if "/acs/" in driver.current_url:
        pass_challenge(driver, daemon)
    return wait_for_callback(driver, merchant)


def test_an_attackers_card_never_reaches_another_users_wallet(daemon, merchant, backend, browser):
    """The probe of issue #19, in a real browser: an attacker rewrites the checkout URL to name another user
    (and skip 3-D Secure), or pairs their own card and hopes it lands in that user's wallet."""
    base = daemon.base_url + "/masterpass"
    # The victim pairs their own card.
    browser.get(checkout_url(daemon, backend, merchant, userId="victim-1"))
    fill(browser)
    browser.find_element(By.ID, "pairingConsent").click()
    params = pay_and_return(browser, daemon, merchant)
    redeemed = backend.get(base + "/pairingid", params={
        "pairingTransactionId": params["pairing_verifier"], "userId": "victim-1"}, timeout=10)
    assert redeemed.status_code == 200, redeemed.text

    # The attacker's own checkout, rewritten to name the victim, skip 3-D Secure or pay less: an error page.
    own = checkout_url(daemon, backend, merchant, userId="attacker-1")
    for tampering in ({"userId": "victim-1"}, {"userId": "victim-1", "suppress3DS": "true"}, {"amount": "0.01"},
                      {"suppress3Ds": "true"}):
        browser.get(own + "&" + urllib.parse.urlencode(tampering))
        assert not browser.find_elements(By.ID, "cardNumber"), tampering
        assert "This checkout cannot be opened" in browser.page_source
    # A Masterpass-style URL carrying everything itself opens nothing either.
    browser.get(daemon.base_url + "/srci/?" + urllib.parse.urlencode({
        "checkoutId": CHECKOUT_ID, "cartId": "evil", "amount": "0.01", "currency": "USD",
        "allowedCardTypes": "visa", "userId": "victim-1", "suppress3DS": "true",
        "callbackUrl": merchant.base + "/callback"}))
    assert not browser.find_elements(By.ID, "cardNumber")
    assert "This checkout cannot be opened" in browser.page_source

    # The attacker pays their own checkout and agrees to pair: the card waits for attacker-1 only.
    browser.get(own)
    fill(browser, card=ATTACKER_VISA, street="666 Evil Road")
    browser.find_element(By.ID, "pairingConsent").click()
    params = pay_and_return(browser, daemon, merchant)
    assert params["mpstatus"] == "success"
    stolen = backend.get(base + "/pairingid", params={
        "pairingTransactionId": params["pairing_verifier"], "userId": "victim-1"}, timeout=10)
    assert stolen.status_code == 404
    # What the victim's wallet holds: their card and their address, nothing of the attacker's.
    pre = backend.get(base + "/precheckoutdata/" + redeemed.json()["pairingId"], timeout=10)
    assert pre.status_code == 200, pre.text
    assert [card["lastFour"] for card in pre.json()["cards"]] == ["4444"]
    assert [address["line1"] for address in pre.json()["shippingAddresses"]] == ["2 Side Street"]


def test_3ds_runs_when_the_checkout_id_requires_it(daemon, merchant, backend, browser):
    """The policy is the checkout id's, on the server: a challenge card meets its challenge, whatever the URL says."""
    response = backend.post(daemon.base_url + "/masterpass/checkouts/%s/sessions" % CHECKOUT_ID,
                            json=session_body(merchant, suppress3DS=True), timeout=10)
    assert response.status_code == 400
    url = checkout_url(daemon, backend, merchant)
    browser.get(url + "&suppress3DS=true")
    assert not browser.find_elements(By.ID, "cardNumber")
    browser.get(url)
    fill(browser, card=MAESTRO_CHALLENGE)
    browser.find_element(By.CSS_SELECTOR, "button.pay").click()
    WebDriverWait(browser, 20).until(lambda d: "/acs/" in d.current_url)


def test_zz_checkout_card_numbers_are_nowhere_in_clear(daemon, merchant):
    """After the checkouts above: no card number typed on the page appears in the data directory, the daemon's
    logs or the merchant's callbacks (ASCII, UTF-16, BCD)."""
    files = [path for path in pathlib.Path(daemon.data_dir).rglob("*") if path.is_file()]
    files += [daemon.log_path, daemon.stdout_path]
    secrets = [MASTERCARD, MAESTRO_CHALLENGE, ATTACKER_VISA, "5555 5555 5555 4444", "securityCode=123"]
    for path in files:
        content = path.read_bytes()
        for secret in secrets:
            encodings = [secret.encode("ascii"), secret.encode("utf-16-le"), secret.encode("utf-16-be")]
            if secret.isdigit():
                encodings.append(bytes(int(secret[i]) << 4 | int(secret[i + 1]) for i in range(0, len(secret), 2)))
            for encoded in encodings:
                assert encoded not in content, "%s... found in %s" % (secret[:6], path.name)
    assert not any(MASTERCARD in callback or MAESTRO_CHALLENGE in callback for callback in merchant.callbacks)
