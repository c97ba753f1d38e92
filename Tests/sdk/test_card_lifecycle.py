"""The card lifecycle through the official Mangopay SDK (mangopaysdk, unmodified) against the release binary, the
way the SDK's own suite drives it (tests/test_payins.py test_RecurringPayment, test_ApplePay_payIn,
test_users.py test_Users_categorize*, test_Users_Close*, test_cards.py test_get_transactions_for_fingerprint):
recurring registrations with a CIT (3-D Secure on the sandbox ACS page) and an MIT, a refund of each, the
registration's get and update to ENDED; Apple Pay and Google Pay pay-ins; BIN metadata; transactions per
fingerprint, user and wallet; categorizing users; closing natural and legal users. Every request the SDK sends is
recorded through its own `request_finished` signal, and none may be answered 404, 405 or 5xx."""
import random
import uuid

import pytest
import requests

IP = "2001:0620:0000:0000:0211:24FF:FE80:C12C"
REGISTERED = []  # every number this file registers, for test_zz_scan (the daemon never shows them)


def luhn_valid(number):
    total = 0
    for index, digit in enumerate(int(d) for d in reversed(number)):
        doubled = digit * 2 if index % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def card_number(last_four):
    """A number with the sandbox alias 497010XXXXXX<last_four> (1119 frictionless, 8183 challenged) and a fingerprint
    of its own (the risk engine counts a card's earlier transactions)."""
    while True:
        number = "497010" + "".join(random.choice("0123456789") for _ in range(6)) + last_four
        if luhn_valid(number):
            return number


@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


@pytest.fixture
def sdk_requests(mangopay_api):
    """The (method, url, status) of every request the SDK sends during the test; none may be 404, 405 or 5xx."""
    from mangopay.signals import request_finished
    seen = []

    def record(sender, **kwargs):
        seen.append((kwargs["method"], kwargs["url"], kwargs["result"].status_code))

    request_finished.connect(record, weak=False)
    yield seen
    request_finished.disconnect(record)
    assert seen, "the SDK made no request"
    bad = [entry for entry in seen if entry[2] in (404, 405) or entry[2] >= 500]
    assert not bad, bad


def browser_info():
    from mangopay.utils import BrowserInfo
    return BrowserInfo(
        accept_header="text/html, application/xhtml+xml, application/xml;q=0.9, /;q=0.8", java_enabled=True,
        language="FR-FR", color_depth=4, screen_width=400, screen_height=1800, javascript_enabled=True,
        timezone_offset="+60", user_agent="Mozilla/5.0 (iPhone; CPU iPhone OS 13_6_1 like Mac OS X)")


def address(line2="no 2 ap 6"):
    from mangopay.utils import Address
    return Address(address_line_1="Big Street", address_line_2=line2, country="FR", city="Lyon", postal_code="68400")


def john(sdk):
    user = sdk.NaturalUser(
        first_name="John", last_name="Doe", email="john@example.com", birthday=188352000, nationality="FR",
        country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER")
    user.save()
    return user


def wallet_of(sdk, user):
    wallet = sdk.Wallet(owners=[user], description="WALLET IN EUR", currency="EUR")
    wallet.save()
    return wallet


def register_card(sdk, user, number):
    REGISTERED.append(number)
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    response = requests.post(
        registration.card_registration_url,
        data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
              "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": "123"})
    assert response.text.startswith("data="), response.text
    registration.registration_data = response.text
    registration.save()
    assert registration.status == "VALIDATED"
    return sdk.Card.get(registration.card_id)


def answer_challenge(redirect_url, code="123456"):
    """Posts the sandbox ACS form as a browser without JavaScript would."""
    path, _, query = redirect_url.partition("?")
    secret = query.split("s=", 1)[1]
    response = requests.post(path, data={"s": secret, "code": code, "action": "submit"}, allow_redirects=False)
    assert response.status_code == 303, response.text
    return response


def balance(sdk, wallet):
    return int(sdk.Wallet.get(wallet.id).balance.amount)


def registration_for(sdk, user, wallet, card, first=(12, 1), following=(12, 1), line2="no 2 ap 6"):
    from mangopay.utils import Billing, Money, Shipping
    recurring = sdk.RecurringPayInRegistration()
    recurring.author = user
    recurring.card = card
    recurring.user = user
    recurring.credited_wallet = wallet
    recurring.first_transaction_debited_funds = Money(first[0], "EUR")
    recurring.first_transaction_fees = Money(first[1], "EUR")
    recurring.free_cycles = 0
    recurring.billing = Billing(first_name="John", last_name="Doe", address=address(line2))
    recurring.shipping = Shipping(first_name="John", last_name="Doe", address=address(line2))
    recurring.end_date = 4102444800  # 2100-01-01
    recurring.migration = True
    recurring.next_transaction_debited_funds = Money(following[0], "EUR")
    recurring.next_transaction_fees = Money(following[1], "EUR")
    return recurring.save()


def cit_for(sdk, registration_id, amount=12, fees=1):
    from mangopay.utils import Money
    cit = sdk.RecurringPayInCIT()
    cit.recurring_payin_registration_id = registration_id
    cit.tag = "custom meta"
    cit.statement_descriptor = "lorem"
    cit.secure_mode_return_url = "http://www.my-site.com/returnurl"
    cit.ip_address = IP
    cit.browser_info = browser_info()
    cit.debited_funds = Money(amount, "EUR")
    cit.fees = Money(fees, "EUR")
    return cit.save()


def mit_for(sdk, registration_id, amount=10, fees=1):
    from mangopay.utils import Money
    mit = sdk.RecurringPayInMIT()
    mit.recurring_payin_registration_id = registration_id
    mit.statement_descriptor = "lorem"
    mit.tag = "custom meta"
    mit.debited_funds = Money(amount, "EUR")
    mit.fees = Money(fees, "EUR")
    return mit.save()


# ---------------------------------------------------------------------------------------------- recurring

def test_recurring_registration_with_cit_and_mit_refunds_and_end(sdk, sdk_requests):
    from mangopay.exceptions import APIError
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    card = register_card(sdk, user, card_number("8183"))

    result = registration_for(sdk, user, wallet, card)
    assert result.get("free_cycles") is not None
    created = sdk.RecurringPayInRegistration.get(result.get("id"))
    assert created.status == "CREATED"
    assert created.current_state.payins_linked == 0

    # The CIT: the shopper is there, the challenge card asks for 3-D Secure on the sandbox ACS page.
    created_cit = cit_for(sdk, created.id)
    assert created_cit["status"] == "CREATED" and created_cit["secure_mode_needed"]
    assert sdk.RecurringPayInRegistration.get(created.id).status == "AUTHENTICATION_NEEDED"
    answer_challenge(created_cit["secure_mode_redirect_url"])
    got_cit = sdk.RecurringPayInCIT.get(created_cit["id"])
    assert isinstance(got_cit, sdk.RecurringPayInCIT)
    assert got_cit.status == "SUCCEEDED" and got_cit.recurring_payin_registration_id == created.id
    in_progress = sdk.RecurringPayInRegistration.get(created.id)
    assert in_progress.status == "IN_PROGRESS"
    assert in_progress.current_state.cumulated_debited_amount["Amount"] == 12
    assert balance(sdk, wallet) == 11

    # The MIT: no shopper, no browser data, no challenge although the card's sandbox rule challenges.
    created_mit = mit_for(sdk, created.id)
    assert created_mit["status"] == "SUCCEEDED" and not created_mit["secure_mode_needed"]
    got_mit = sdk.RecurringPayInMIT.get(created_mit["id"])
    assert isinstance(got_mit, sdk.RecurringPayInMIT)
    assert balance(sdk, wallet) == 20
    state = sdk.RecurringPayInRegistration.get(created.id).current_state
    assert state.payins_linked == 2 and state.last_payin_id == created_mit["id"]
    assert state.cumulated_debited_amount["Amount"] == 22 and state.cumulated_debited_fees["Amount"] == 2

    # A refund of each (they are pay-ins).
    for payin in (sdk.RecurringPayInCIT.get(created_cit["id"]), got_mit):
        refund = sdk.PayInRefund(author=user, payin=payin)
        refund.save()
        assert refund.status == "SUCCEEDED"
    assert balance(sdk, wallet) == 0

    # Update to ENDED the way the SDK does it: the whole object sent back with the new status.
    ending = sdk.RecurringPayInRegistration.get(created.id)
    ending.status = "ENDED"
    ending.save()
    assert sdk.RecurringPayInRegistration.get(created.id).status == "ENDED"
    with pytest.raises(APIError) as refused:
        mit_for(sdk, created.id)
    assert refused.value.code == 400


def test_mit_needs_a_succeeded_cit_and_the_mocks_decline(sdk, sdk_requests):
    from mangopay.exceptions import APIError
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    card = register_card(sdk, user, card_number("1119"))
    registration = registration_for(sdk, user, wallet, card)
    with pytest.raises(APIError) as refused:
        mit_for(sdk, registration["id"])
    assert refused.value.code == 400 and "RecurringPayinRegistrationId" in refused.value.content["errors"]

    # Mangopay's documented sandbox mock: 33501 with Billing.AddressLine2 01131 is a soft decline of an MIT.
    mocked = registration_for(sdk, user, wallet, card, first=(100, 0), following=(33501, 0), line2="01131")
    cit = cit_for(sdk, mocked["id"], amount=100, fees=0)
    assert cit["status"] == "SUCCEEDED"  # frictionless card, small amount
    mit = mit_for(sdk, mocked["id"], amount=33501, fees=0)
    assert mit["status"] == "FAILED" and mit["result_code"] == "101305"
    after = sdk.RecurringPayInRegistration.get(mocked["id"])
    assert after.status == "AUTHENTICATION_NEEDED"
    assert balance(sdk, wallet) == 100


# ---------------------------------------------------------------------------------------------- wallets

def test_apple_pay_and_google_pay_payins(sdk, sdk_requests):
    from mangopay import constants
    from mangopay.utils import ApplepayPaymentData, Money
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    pay_in = sdk.ApplepayPayIn()
    pay_in.author = user
    pay_in.credited_user = user
    pay_in.credited_wallet = wallet
    pay_in.fees = Money(1, "EUR")
    pay_in.debited_funds = Money(199, "EUR")
    pay_in.payment_data = ApplepayPaymentData(
        transaction_id=uuid.uuid4().hex, network="VISA",
        token_data='{"version":"EC_v1","data":"w4HMBVqNC9ghPP4zncTA","signature":"MIAGCSqGSIb3DQEHAqCAMIACAQEx",'
                   '"header":{"ephemeralPublicKey":"MFkwEwYHKoZIzj0CAQYI","publicKeyHash":"saPRAqS7TZ4bAYwz",'
                   '"transactionId":"b061eb32181a2d9ca42ad16031b476eebaa62a9a095ad660e2759fba52b51a61"}}')
    pay_in.statement_descriptor = "Python"
    pay_in.payment_type = constants.PAYIN_PAYMENT_TYPE.applepay
    pay_in.execution_type = constants.EXECUTION_TYPE_CHOICES.direct
    result = pay_in.save()
    assert result["status"] == "SUCCEEDED"
    got = sdk.PayIn.get(result["id"])
    assert isinstance(got, sdk.ApplepayPayIn) and got.payment_data.network == "VISA"
    assert got.payment_data.token_data is None  # the wallet token is never stored nor shown

    google = sdk.GooglePayDirectPayIn(
        author=user, credited_wallet=wallet, debited_funds=Money(300, "EUR"), fees=Money(0, "EUR"),
        secure_mode_return_url="https://shop.example/return", ip_address=IP, browser_info=browser_info(),
        payment_data='{"signature":"MEUCIQ","protocolVersion":"ECv2","signedMessage":"{}"}',
        statement_descriptor="Python")
    google.save()
    assert google.status == "SUCCEEDED"
    assert isinstance(sdk.PayIn.get(google.id), sdk.GooglePayDirectPayIn)
    assert balance(sdk, wallet) == 198 + 300

    # Wallet transactions list both; filters by status.
    listed = sdk.Wallet.get(wallet.id).transactions.all()
    assert sorted(t.id for t in listed) == sorted([result["id"], google.id])
    assert len(sdk.Transaction.all(user_id=user.id, status="FAILED")) == 0


def test_payment_method_metadata_for_a_bin(sdk, sdk_requests):
    metadata = sdk.PaymentMethodMetadata(type="BIN", bin="497010").save()
    assert metadata["issuer_country_code"] == "FR"
    assert metadata["bin_data"][0]["Brand"] == "VISA"
    assert "SANDBOX" in metadata["issuing_bank"]


# ---------------------------------------------------------------------------------------------- lists

def test_transactions_per_fingerprint_and_per_user(sdk, sdk_requests):
    from mangopay.utils import Money
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    number = card_number("1119")
    card = register_card(sdk, user, number)
    payins = []
    for amount in (500, 700):
        payin = sdk.DirectPayIn(
            author=user, credited_wallet=wallet, card=card, debited_funds=Money(amount, "EUR"),
            fees=Money(0, "EUR"), secure_mode_return_url="https://shop.example/return", ip_address=IP,
            browser_info=browser_info(), secure_mode="DEFAULT")
        payin.save()
        assert payin.status == "SUCCEEDED"
        payins.append(payin.id)
    transactions = sdk.Card.get_transactions_by_fingerprint(card.fingerprint)
    assert sorted(t.id for t in transactions) == sorted(payins)

    refund = sdk.PayInRefund(author=user, payin=sdk.PayIn.get(payins[0]))
    refund.save()
    everything = user.transactions.all()
    assert {t.id for t in everything} == set(payins) | {refund.id}
    only_refunds = sdk.Transaction.all(user_id=user.id, nature="REFUND")
    assert [t.id for t in only_refunds] == [refund.id] and only_refunds[0].type == "PAYOUT"
    newest_first = sdk.Transaction.all(user_id=user.id, type="PAYIN", sort="CreationDate:desc")
    assert {t.id for t in newest_first} == set(payins)


# ---------------------------------------------------------------------------------------------- users

def test_categorize_natural_and_legal_users(sdk, sdk_requests):
    from mangopay.utils import LegalRepresentative
    natural = sdk.NaturalUserSca(
        first_name="John SCA", last_name="Doe", email="john.sca@example.com", terms_and_conditions_accepted=True,
        user_category="PAYER")
    natural.save()
    categorized = natural.categorize(**{
        "id": natural.id, "user_category": "OWNER", "terms_and_conditions_accepted": True, "birthday": 188352000,
        "nationality": "FR", "country_of_residence": "FR", "sca_context": "USER_PRESENT"})
    assert categorized["user_category"] == "OWNER"
    assert sdk.NaturalUserSca.get(natural.id).user_category == "OWNER"

    legal = sdk.LegalUserSca(
        name="MartixSampleOrg", legal_person_type="BUSINESS", email="org@example.com", user_category="PAYER",
        terms_and_conditions_accepted=True,
        legal_representative=LegalRepresentative(first_name="John SCA", last_name="Doe SCA", email="jd@example.com"))
    legal.save()
    categorized = legal.categorize(**{
        "id": legal.id, "user_category": "OWNER", "terms_and_conditions_accepted": True,
        "legal_representative": {"Birthday": 188352000, "Nationality": "FR", "CountryOfResidence": "FR",
                                 "FirstName": "John SCA", "LastName": "Doe SCA review",
                                 "Email": "john.doe.sca@sample.org", "PhoneNumber": "", "PhoneNumberCountry": "FR"},
        "headquarters_address": {"AddressLine1": "AddressLine1", "AddressLine2": "AddressLine2", "City": "City",
                                 "Region": "Region", "PostalCode": "11222", "Country": "FR"},
        "company_number": "123456789", "sca_context": "USER_PRESENT"})
    assert categorized["user_category"] == "OWNER"


def test_close_natural_and_legal_users(sdk, sdk_requests):
    from mangopay.exceptions import APIError
    from mangopay.utils import Money
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    card = register_card(sdk, user, card_number("1119"))
    sdk.NaturalUser.close(user.id)
    closed = sdk.NaturalUser.get(user.id)
    assert closed.id == user.id and closed.user_status == "CLOSED"
    assert sdk.Card.get(card.id).active is False
    with pytest.raises(APIError) as refused:
        sdk.DirectPayIn(
            author=user, credited_wallet=wallet, card=card, debited_funds=Money(100, "EUR"), fees=Money(0, "EUR"),
            secure_mode_return_url="https://shop.example/return", ip_address=IP,
            browser_info=browser_info()).save()
    assert refused.value.code == 400

    legal = sdk.LegalUser(
        name="MangoPay", legal_person_type="BUSINESS", legal_representative_first_name="Mango",
        legal_representative_last_name="Pay", email="info@mangopay.com", headquarters_address=address(),
        legal_representative_birthday=188352000, legal_representative_nationality="FR",
        legal_representative_country_of_residence="FR", company_number="123456789", user_category="PAYER",
        terms_and_conditions_accepted=True)
    legal.save()
    sdk.LegalUser.close(legal.id)
    closed = sdk.LegalUser.get(legal.id)
    assert closed.id == legal.id and closed.user_status == "CLOSED"
