"""PayPal pay-ins through the official Mangopay SDK (PayPalWebPayIn, PayPalPayIn, RecurringPayPalPayInCIT/MIT)
against the release daemon, approved or cancelled in headless Chromium on the sandbox PayPal approval page:
approved ends SUCCEEDED on ReturnURL, cancelled FAILED 001031 on CancelURL; refunds, transaction lists, recurring
CIT then MIT, the line items' sum rule and the sandbox's refused amount; and each hook fires once."""
import os
import time
import urllib.parse

import pytest
import requests

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from browser_support import Merchant, axe_violations, chrome, describe  # noqa: E402


@pytest.fixture(scope="module")
def merchant():
    site = Merchant()
    yield site
    site.shutdown()


@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


@pytest.fixture(scope="module")
def browser():
    driver = chrome(390, 844)
    yield driver
    driver.quit()


def buyer(sdk, handler=None):
    extra = {"handler": handler} if handler else {}
    user = sdk.NaturalUser(
        first_name="Ada", last_name="Lovelace <b>", email="ada@example.com", birthday=188352000, nationality="GB",
        country_of_residence="GB", terms_and_conditions_accepted=True, user_category="PAYER", **extra)
    user.save()
    wallet = sdk.Wallet(owners=[user], description="Shop", currency="EUR", **extra)
    wallet.save()
    return user, wallet


def items(*lines):
    from mangopay.utils import LineItem
    return [LineItem(name=name, quantity=quantity, unit_amount=unit, tax_amount=tax, description="Seller 1",
                     category="PHYSICAL_GOODS").to_api_json() for name, quantity, unit, tax in lines]


def paypal_payin(sdk, user, wallet, merchant, lines, amount, fees=100, handler=None):
    from mangopay.utils import Address, Money, Shipping
    payin = sdk.PayPalWebPayIn(
        author=user, credited_wallet=wallet, debited_funds=Money(amount=amount, currency="EUR"),
        fees=Money(amount=fees, currency="EUR"), return_url=merchant.base + "/paid?order=7",
        cancel_url=merchant.base + "/cancelled", line_items=items(*lines), shipping_preference="SET_PROVIDED_ADDRESS",
        shipping=Shipping(first_name="Ada", last_name="Lovelace", address=Address(
            address_line_1="6 rue de la Cité", city="Paris", postal_code="75003", country="FR")),
        reference="order-7", culture="EN", statement_descriptor="Shop", tag="paypal test",
        **({"handler": handler} if handler else {}))
    payin.save()
    return payin


def auth(daemon):
    from mangopay.api import APIRequest
    handler = APIRequest(client_id=daemon.client_id, apikey=daemon.api_key,
                         api_sandbox_url=daemon.base_url + "/v2.01/", sandbox=True)
    return {"Authorization": handler.auth_manager.get_token()}


def landed(driver, merchant, path):
    WebDriverWait(driver, 20).until(lambda d: d.current_url.startswith(merchant.base + path))
    return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(driver.current_url).query))


def test_approved_in_the_browser_succeeds_lands_on_return_url_and_refunds(sdk, merchant, browser, daemon):
    user, wallet = buyer(sdk)
    payin = paypal_payin(sdk, user, wallet, merchant, [("Running shoes", 2, 400, 100), ("Socks", 1, 400, 100)], 1400)
    assert payin.status == "CREATED" and payin.payment_type == "PAYPAL" and payin.execution_type == "WEB"
    assert payin.redirect_url.startswith(daemon.base_url + "/paypal/checkout/")
    assert payin.paypal_order_id and payin.paypal_payer_id is None and payin.buyer_first_name is None

    browser.get(payin.redirect_url)
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en"
    assert browser.find_element(By.ID, "pp-buyer").text == "Ada Lovelace <b>"  # escaped, shown as text
    assert [row.text.split("\n")[0] for row in browser.find_elements(By.CSS_SELECTOR, "#pp-items tbody th")] \
        == ["Running shoes", "Socks"]
    assert browser.find_element(By.ID, "pp-total").text.replace("\u00a0", " ") == "14.00 EUR"
    violations = axe_violations(browser)
    assert not violations, describe(violations)
    browser.find_element(By.ID, "pp-approve").click()
    assert landed(browser, merchant, "/paid") == {"order": "7", "transactionId": payin.id}

    fetched = sdk.PayIn.get(payin.id)
    assert isinstance(fetched, sdk.PayPalWebPayIn)
    assert fetched.status == "SUCCEEDED" and fetched.result_code == "000000"
    assert fetched.paypal_payer_id and fetched.paypal_order_id == payin.paypal_order_id
    assert (fetched.buyer_first_name, fetched.buyer_last_name, fetched.buyer_country) == ("Ada", "Lovelace <b>", "FR")
    assert fetched.return_url == merchant.base + "/paid?order=7&transactionId=" + payin.id
    assert sdk.Wallet.get(wallet.id).balance.amount == 1300
    listed = requests.get("%s/v2.01/%s/wallets/%s/transactions" % (daemon.base_url, daemon.client_id, wallet.id),
                          headers=auth(daemon), timeout=10).json()
    assert [(t["Id"], t["PaymentType"], t["Status"]) for t in listed] == [(payin.id, "PAYPAL", "SUCCEEDED")]

    # The link is spent: opening it again shows the outcome only; its button returns to the merchant.
    browser.get(payin.redirect_url)
    assert browser.find_elements(By.ID, "pp-approve") == []
    assert "approved" in browser.find_element(By.ID, "pp-outcome").text

    from mangopay.utils import Money
    refund = sdk.PayInRefund(payin=fetched, author=user, debited_funds=Money(amount=1300, currency="EUR"),
                             fees=Money(amount=0, currency="EUR"))
    refund.save()
    assert refund.status == "SUCCEEDED" and refund.initial_transaction_id == payin.id
    assert sdk.Wallet.get(wallet.id).balance.amount == 0


def test_cancelled_in_the_browser_fails_and_lands_on_cancel_url(sdk, merchant, browser):
    user, wallet = buyer(sdk)
    payin = paypal_payin(sdk, user, wallet, merchant, [("Book", 1, 900, 0)], 900)
    browser.get(payin.redirect_url)
    browser.find_element(By.ID, "pp-cancel").click()
    assert landed(browser, merchant, "/cancelled") == {"transactionId": payin.id}
    fetched = sdk.PayIn.get(payin.id)
    assert fetched.status == "FAILED" and fetched.result_code == "001031"
    assert fetched.paypal_payer_id is None
    assert sdk.Wallet.get(wallet.id).balance.amount == 0


def test_line_items_that_do_not_sum_and_the_refused_amount(sdk, merchant, daemon, session):
    user, wallet = buyer(sdk)
    body = {"AuthorId": user.id, "CreditedWalletId": wallet.id, "DebitedFunds": {"Currency": "EUR", "Amount": 1000},
            "Fees": {"Currency": "EUR", "Amount": 0}, "ReturnURL": "https://shop.example/paid",
            "LineItems": [{"Name": "Shoes", "Quantity": 2, "UnitAmount": 400, "TaxAmount": 100}]}
    url = "%s/v2.01/%s/payins/payment-methods/paypal" % (daemon.base_url, daemon.client_id)
    answer = session.post(url, json=body, headers=auth(daemon), timeout=10)
    assert answer.status_code == 400, answer.text
    assert "(900) must equal DebitedFunds.Amount (1000)" in answer.json()["errors"]["LineItems"]
    body["LineItems"][0].update({"Quantity": 9223372036854775807, "UnitAmount": 100000000000})
    answer = session.post(url, json=body, headers=auth(daemon), timeout=10)
    assert answer.status_code == 400 and "out of range" in answer.json()["errors"]["LineItems"]
    # The sandbox refuses amounts ending in 13.
    refused = paypal_payin(sdk, user, wallet, merchant, [("Pen", 1, 1013, 0)], 1013)
    assert refused.status == "FAILED" and refused.result_code == "101199" and refused.redirect_url is None


def test_legacy_web_call_goes_through_the_same_approval(sdk, merchant, browser):
    from mangopay.utils import Address, Money, ShippingAddress
    user, wallet = buyer(sdk)
    payin = sdk.PayPalPayIn(
        author=user, credited_wallet=wallet, debited_funds=Money(amount=1980, currency="EUR"),
        fees=Money(amount=0, currency="EUR"), return_url=merchant.base + "/paid",
        shipping_address=ShippingAddress(recipient_name="Ada Lovelace", address=Address(
            address_line_1="6 rue de la Cité", city="Paris", postal_code="75003", country="FR")))
    payin.save()
    assert payin.status == "CREATED" and payin.redirect_url
    browser.get(payin.redirect_url)
    browser.find_element(By.ID, "pp-approve").click()
    assert landed(browser, merchant, "/paid")["transactionId"] == payin.id
    assert sdk.PayIn.get(payin.id).status == "SUCCEEDED"
    assert sdk.Wallet.get(wallet.id).balance.amount == 1980


def recurring_paypal(sdk, merchant, browser, handler=None):
    """A PAYPAL recurring registration, its CIT approved in the browser and one MIT; returns (registration, cit, mit)."""
    from mangopay.utils import Money
    extra = {"handler": handler} if handler else {}
    user, wallet = buyer(sdk, handler)
    registration = sdk.RecurringPayInRegistration(
        author=user, credited_wallet=wallet, payment_type="PAYPAL",
        first_transaction_debited_funds=Money(amount=1000, currency="EUR"),
        first_transaction_fees=Money(amount=0, currency="EUR"),
        next_transaction_debited_funds=Money(amount=500, currency="EUR"),
        next_transaction_fees=Money(amount=0, currency="EUR"), **extra)
    registration.save()
    assert registration.status == "CREATED" and registration.payment_type == "PAYPAL"
    cit = sdk.RecurringPayPalPayInCIT(
        recurring_payin_registration_id=registration.id, return_url=merchant.base + "/paid",
        cancel_url=merchant.base + "/cancelled", line_items=items(("Subscription", 1, 800, 200)), **extra)
    cit.save()
    assert cit.status == "CREATED" and cit.redirect_url
    assert sdk.RecurringPayInRegistration.get(registration.id, **extra).status == "AUTHENTICATION_NEEDED"
    browser.get(cit.redirect_url)
    browser.find_element(By.ID, "pp-approve").click()
    assert landed(browser, merchant, "/paid")["transactionId"] == cit.id
    assert sdk.RecurringPayInRegistration.get(registration.id, **extra).status == "IN_PROGRESS"
    mit = sdk.RecurringPayPalPayInMIT(
        recurring_payin_registration_id=registration.id, debited_funds=Money(amount=500, currency="EUR"),
        fees=Money(amount=0, currency="EUR"), return_url=merchant.base + "/paid",
        line_items=items(("Subscription", 1, 500, 0)), **extra)
    mit.save()
    assert sdk.Wallet.get(wallet.id, **extra).balance.amount == (1500 if mit.status == "SUCCEEDED" else 1000)
    return registration, cit, mit


def test_recurring_paypal_cit_approved_in_the_browser_then_mit_succeed(sdk, merchant, browser):
    registration, cit, mit = recurring_paypal(sdk, merchant, browser)
    assert sdk.PayIn.get(cit.id).status == "SUCCEEDED"
    assert mit.status == "SUCCEEDED" and mit.redirect_url is None
    current = sdk.RecurringPayInRegistration.get(registration.id)
    assert current.current_state.payins_linked == 2 and current.current_state.last_payin_id == mit.id


@pytest.mark.skipif(os.environ.get("CARDVAULT_TEST_BACKEND") == "postgres-pair",
                    reason="a daemon of its own that may deliver to loopback (first pass)")
def test_every_paypal_hook_fires_once(merchant, browser):
    from test_hooks import Merchant as HookMerchant, Receiver, Vault
    receiver = Receiver()
    vault = Vault({"CARDVAULT_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true", "CARDVAULT_HOOKS_RETRY_INTERVAL_SECONDS": "1"})
    try:
        shop = HookMerchant(vault)
        for event in ("PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED", "PAYIN_NORMAL_FAILED",
                      "RECURRING_REGISTRATION_AUTH_NEEDED", "RECURRING_REGISTRATION_IN_PROGRESS"):
            requests.post(shop.url("/hooks"), headers=shop.auth, timeout=10,
                          json={"Url": receiver.base + "/hooks/" + event, "EventType": event}).raise_for_status()
        user, wallet = buyer(shop.sdk, shop.handler)
        approved = paypal_payin(shop.sdk, user, wallet, merchant, [("Hat", 1, 700, 0)], 700, 0, shop.handler)
        browser.get(approved.redirect_url)
        browser.find_element(By.ID, "pp-approve").click()
        landed(browser, merchant, "/paid")
        cancelled = paypal_payin(shop.sdk, user, wallet, merchant, [("Cap", 1, 600, 0)], 600, 0, shop.handler)
        browser.get(cancelled.redirect_url)
        browser.find_element(By.ID, "pp-cancel").click()
        landed(browser, merchant, "/cancelled")
        registration, cit, mit = recurring_paypal(shop.sdk, merchant, browser, shop.handler)
        expected = {
            approved.id: ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"],
            cancelled.id: ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_FAILED"],
            cit.id: ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"],
            mit.id: ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"],
            registration.id: ["RECURRING_REGISTRATION_AUTH_NEEDED", "RECURRING_REGISTRATION_IN_PROGRESS"],
        }
        for resource, events in expected.items():
            for event in events:
                receiver.wait_for(resource, path="/hooks/" + event)
        time.sleep(2)  # a duplicate would arrive within the retry interval
        for resource, events in expected.items():
            delivered = sorted(r["path"].rsplit("/", 1)[1] for r in receiver.for_resource(resource))
            assert delivered == sorted(events), (resource, delivered)
    finally:
        vault.stop()
        receiver.stop()
