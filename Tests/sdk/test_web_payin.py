"""Web card pay-ins through the official Mangopay SDK against the release daemon, completed in a real browser
(headless Chromium): `POST /payins/card/web` answers a RedirectURL to CardVault's hosted payment page; the page
tokenizes the card, runs 3-D Secure on the sandbox ACS page when the issuer asks, and returns to ReturnURL with
transactionId; `GET /payins/card/web/{id}/extended` shows the card it took. The page is checked at 1280x800,
390x844 and 320x640 (no horizontal scroll, Pay in view on desktop and phone, axe-core) and by keyboard alone."""
import urllib.parse

import pytest

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from browser_support import (VIEWPORTS, Merchant, assert_fits, axe_violations, chrome, describe, keyboard_type,  # noqa: E402
                             screenshot, set_viewport, tab_to)
from sandbox_cards import fresh  # noqa: E402

FRICTIONLESS = "4970107111111119"
CHALLENGED = "4970105181818183"
DECLINED = "4970100000080016"
CHALLENGE_CODE = "123456"


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
    driver = chrome(*VIEWPORTS["phone"])
    yield driver
    driver.quit()


def payer(sdk):
    user = sdk.NaturalUser(
        first_name="Web", last_name="Payer", email="web@example.com", birthday=188352000, nationality="FR",
        country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER")
    user.save()
    wallet = sdk.Wallet(owners=[user], description="Shop", currency="EUR")
    wallet.save()
    return user, wallet


def web_payin(sdk, user, wallet, merchant, amount=1200, fees=100, culture="EN"):
    from mangopay.utils import Money
    payin = sdk.CardWebPayIn(
        author=user, credited_wallet=wallet, debited_funds=Money(amount=amount, currency="EUR"),
        fees=Money(amount=fees, currency="EUR"), return_url=merchant.base + "/return?order=9#done",
        card_type="CB_VISA_MASTERCARD", secure_mode="DEFAULT", culture=culture, statement_descriptor="FancyShop")
    payin.save()
    return payin


def fill(driver, number, expiry="1230", cvc="123"):
    for name, value in (("cardNumber", number), ("expiry", expiry), ("securityCode", cvc),
                        ("cardHolderName", "Ada Lovelace")):
        field = driver.find_element(By.ID, name)
        field.clear()
        field.send_keys(value)


def returned(driver, merchant):
    WebDriverWait(driver, 20).until(lambda d: d.current_url.startswith(merchant.base + "/return"))
    parsed = urllib.parse.urlparse(driver.current_url)
    assert parsed.fragment == "done"
    return dict(urllib.parse.parse_qsl(parsed.query))


def test_web_payin_frictionless_through_the_sdk_and_the_page(sdk, merchant, browser):
    user, wallet = payer(sdk)
    payin = web_payin(sdk, user, wallet, merchant)
    assert payin.status == "CREATED" and payin.execution_type == "WEB" and payin.payment_type == "CARD"
    assert payin.redirect_url and "/payins/web/" in payin.redirect_url
    browser.get(payin.redirect_url)
    assert browser.find_element(By.TAG_NAME, "h1").text
    assert "12.00" in browser.find_element(By.CSS_SELECTOR, ".amount").text
    assert [li.get_attribute("data-brand") for li in browser.find_elements(By.CSS_SELECTOR, ".brands li")] \
        == ["visa", "mastercard"]
    fill(browser, fresh(FRICTIONLESS))
    browser.find_element(By.CSS_SELECTOR, "button.pay").click()
    params = returned(browser, merchant)
    assert params == {"order": "9", "transactionId": payin.id}

    fetched = sdk.CardWebPayIn.get(payin.id)
    assert fetched.status == "SUCCEEDED" and fetched.result_code == "000000"
    assert fetched.credited_funds.amount == 1100
    extended = sdk.ExtendedCardWebPayIn.get(payin.id)
    assert extended.alias.endswith(FRICTIONLESS[-4:]) and extended.alias.startswith(FRICTIONLESS[:6])
    assert FRICTIONLESS not in extended.alias
    assert extended.card_type == "CB_VISA_MASTERCARD" and extended.fingerprint
    assert sdk.Wallet.get(wallet.id).balance.amount == 1100
    # The link is spent: opening it again goes straight back to the merchant, paying nothing twice.
    browser.get(payin.redirect_url)
    assert returned(browser, merchant)["transactionId"] == payin.id
    assert sdk.Wallet.get(wallet.id).balance.amount == 1100


def test_web_payin_with_a_challenge_shows_the_acs_page_in_french(sdk, merchant, browser):
    user, wallet = payer(sdk)
    payin = web_payin(sdk, user, wallet, merchant, amount=4990, fees=0, culture="FR")
    browser.get(payin.redirect_url)
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "fr-FR"
    assert browser.find_element(By.CSS_SELECTOR, "button.pay").text.replace("\u00a0", " ") == "Payer 49,90 EUR"
    fill(browser, fresh(CHALLENGED))
    browser.find_element(By.CSS_SELECTOR, "button.pay").click()
    WebDriverWait(browser, 20).until(lambda d: "/acs/" in d.current_url)
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "fr"
    assert browser.find_element(By.ID, "acs-amount").text.replace("\u00a0", " ") == "49,90 EUR"
    assert browser.find_element(By.ID, "acs-merchant").text   # the client's name
    assert sdk.CardWebPayIn.get(payin.id).status == "CREATED"
    code = browser.find_element(By.ID, "code")
    code.send_keys(CHALLENGE_CODE)
    code.send_keys(Keys.ENTER)
    assert returned(browser, merchant)["transactionId"] == payin.id
    assert sdk.CardWebPayIn.get(payin.id).status == "SUCCEEDED"
    assert sdk.Wallet.get(wallet.id).balance.amount == 4990


def test_web_payin_declined_and_cancelled_fail_without_moving_money(sdk, merchant, browser):
    user, wallet = payer(sdk)
    declined = web_payin(sdk, user, wallet, merchant)
    browser.get(declined.redirect_url)
    fill(browser, DECLINED)
    browser.find_element(By.CSS_SELECTOR, "button.pay").click()
    assert returned(browser, merchant)["transactionId"] == declined.id
    fetched = sdk.CardWebPayIn.get(declined.id)
    assert fetched.status == "FAILED" and fetched.result_code == "101101"
    cancelled = web_payin(sdk, user, wallet, merchant)
    browser.get(cancelled.redirect_url)
    browser.find_element(By.CSS_SELECTOR, "button.cancel").click()
    assert returned(browser, merchant)["transactionId"] == cancelled.id
    assert sdk.CardWebPayIn.get(cancelled.id).result_code == "101002"
    assert sdk.Wallet.get(wallet.id).balance.amount == 0


def test_web_payin_bad_requests_are_refused(sdk, merchant):
    from mangopay.exceptions import APIError
    from mangopay.utils import Money
    user, wallet = payer(sdk)
    with pytest.raises(APIError) as refused:
        sdk.CardWebPayIn(author=user, credited_wallet=wallet, debited_funds=Money(amount=100, currency="USD"),
                         fees=Money(amount=0, currency="USD"), return_url="javascript:alert(1)",
                         card_type="CB_VISA_MASTERCARD", culture="FRA").save()
    errors = refused.value.content["errors"]
    assert {"ReturnURL", "Culture"} <= set(errors)
    with pytest.raises(sdk.ExtendedCardWebPayIn.DoesNotExist):   # the SDK's answer to a 404
        sdk.ExtendedCardWebPayIn.get("wpayin_unknown")


def test_web_payin_page_layout_axe_and_keyboard(sdk, merchant):
    user, wallet = payer(sdk)
    payin = web_payin(sdk, user, wallet, merchant, amount=2500, fees=0)
    driver = chrome(*VIEWPORTS["desktop"])
    try:
        driver.get(payin.redirect_url)
        for name, (width, height) in VIEWPORTS.items():
            set_viewport(driver, width, height)
            assert_fits(driver, "web pay-in page at " + name, pay_in_view=name != "small")
            violations = axe_violations(driver)
            assert not violations, describe(violations)
            screenshot(driver, "web-payin-" + name)
        set_viewport(driver, *VIEWPORTS["desktop"])
        driver.get(payin.redirect_url)
        tab_to(driver, "cardNumber")
        keyboard_type(driver, fresh(FRICTIONLESS) + Keys.TAB + "1230" + Keys.TAB + "123" + Keys.TAB + "Ada Lovelace")
        keyboard_type(driver, Keys.TAB)
        assert "pay" in driver.switch_to.active_element.get_attribute("class")
        keyboard_type(driver, Keys.ENTER)
        assert returned(driver, merchant)["transactionId"] == payin.id
        assert sdk.CardWebPayIn.get(payin.id).status == "SUCCEEDED"
    finally:
        driver.quit()
