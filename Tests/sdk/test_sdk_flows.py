"""The official Mangopay SDK (mangopaysdk, unmodified) drives every flow CardVault offers the way the SDK's own
test suite does (tests/test_base.py, test_users.py, test_wallets.py, test_cards.py, test_payins.py,
test_refunds.py of the sdist): the same model classes, built with the same value types (CompanyNumber and
IncomeRange as ints, birthdays as int, float or date, Address/Billing/Money/BrowserInfo objects, booleans
that the SDK sends as 1/0). Every request the SDK makes is recorded through its own `request_finished`
signal, and none may be answered 404, 405 or 5xx."""
import datetime
import random
import time

import pytest
import requests

IP = "2001:0620:0000:0000:0211:24FF:FE80:C12C"


def luhn_valid(number):
    total = 0
    for index, digit in enumerate(int(d) for d in reversed(number)):
        doubled = digit * 2 if index % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def card_number(last_four="1119"):
    """A number with the sandbox alias 497010XXXXXX<last_four> (1119: frictionless, 8183: challenged) and a
    fingerprint of its own: the daemon is shared by the whole session, and the risk engine counts earlier
    transactions per card (other tests pay with the suite's number many times)."""
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
    """Every request the SDK sends during the test, as (method, url, status); checked after the test."""
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
    """BaseTest.get_browser_info() of the SDK's suite."""
    from mangopay.utils import BrowserInfo
    browser = BrowserInfo()
    browser.accept_header = "text/html, application/xhtml+xml, application/xml;q=0.9, /;q=0.8"
    browser.java_enabled = True
    browser.language = "FR-FR"
    browser.color_depth = 4
    browser.screen_width = 400
    browser.screen_height = 1800
    browser.javascript_enabled = True
    browser.timezone_offset = "+60"
    browser.user_agent = ("Mozilla/5.0 (iPhone; CPU iPhone OS 13_6_1 like Mac OS X) AppleWebKit/605.1.15 "
                          "(KHTML, like Gecko) Mobile/15E148")
    return browser


def sample_address():
    from mangopay.utils import Address
    return Address(address_line_1="AddressLine1", address_line_2="AddressLine2", city="City", region="Region",
                   postal_code="11222", country="FR")


def john(sdk):
    """BaseTestLive.get_john_instance(): an OWNER with an int birthday and IncomeRange '1'."""
    user = sdk.NaturalUser()
    user.first_name = "John"
    user.last_name = "Doe"
    user.birthday = 188352000
    user.email = "john.doe@sample.org"
    user.address = sample_address()
    user.nationality = "FR"
    user.country_of_residence = "FR"
    user.occupation = "programmer"
    user.income_range = "1"
    user.person_type = "NATURAL"
    user.terms_and_conditions_accepted = True
    user.user_category = "OWNER"
    return sdk.NaturalUser(**user.save())


def wallet_of(sdk, user):
    """BaseTestLive.create_new_wallet()."""
    wallet = sdk.Wallet()
    wallet.owners = (user,)
    wallet.currency = "EUR"
    wallet.description = "WALLET IN EUR"
    return sdk.Wallet(**wallet.save())


NUMBERS = {}  # card id -> the number registered (the daemon never shows it)


def card_number_of(card):
    return NUMBERS[card.id]


def registered_card_id(sdk, user, number=None):
    """The card registration of the SDK's live tests: save, post the card form, save the dict back."""
    number = number or card_number()
    card_registration = sdk.CardRegistration()
    card_registration.user = user
    card_registration.currency = "EUR"
    saved_registration = card_registration.save()
    data = {"cardNumber": number, "cardCvx": "123", "cardExpirationDate": "1229",
            "accessKeyRef": card_registration.access_key, "data": card_registration.preregistration_data}
    response = requests.post(card_registration.card_registration_url, data=data,
                             headers={"content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 200 and response.text.startswith("data="), response.text
    saved_registration["registration_data"] = response.text
    updated_registration = sdk.CardRegistration(**saved_registration).save()
    assert updated_registration["status"] == "VALIDATED"
    NUMBERS[updated_registration["card_id"]] = number
    return updated_registration["card_id"]


def direct_payin(sdk, user, wallet, card_id, amount=1000, fees=100, secure_mode="DEFAULT"):
    """test_create_partial_refund_for_payin's pay-in: the wallet object given as credited_wallet_id."""
    from mangopay.utils import Money
    payin = sdk.DirectPayIn(author=user, debited_funds=Money(amount=amount, currency="EUR"),
                            fees=Money(amount=fees, currency="EUR"), credited_wallet_id=wallet, card_id=card_id,
                            secure_mode=secure_mode, ip_address=IP, browser_info=browser_info(),
                            secure_mode_return_url="https://www.ulule.com/")
    payin.save()
    return payin


def balance(sdk, wallet):
    return int(sdk.Wallet.get(wallet.id).balance.amount)


# ---------------------------------------------------------------------------------------------- users

def test_natural_users_create_get_update(sdk, sdk_requests):
    owner = john(sdk)
    assert owner.id and owner.user_category == "OWNER" and owner.terms_and_conditions_accepted is True
    assert owner.birthday == datetime.date(1975, 12, 21)  # 188352000, read back through the SDK's DateField
    assert owner.income_range == "1" and owner.address.city == "City"

    # BaseTest.natural_user: IncomeRange the int 6, Birthday the float time.mktime() gives, None proofs.
    from mangopay.utils import Address
    payer = sdk.NaturalUser(**{
        "first_name": "Victor", "last_name": "Hugo",
        "address": Address(address_line_1="AddressLine1", address_line_2="AddressLine2", city="City",
                           region="Region", postal_code="11222", country="FR"),
        "birthday": time.mktime(datetime.date(1980, 2, 29).timetuple()),
        "nationality": "FR", "country_of_residence": "FR", "occupation": "Writer", "income_range": 6,
        "proof_of_identity": None, "proof_of_address": None, "person_type": "NATURAL",
        "email": "victor@hugo.com", "tag": "Python SDK Unit Test",
    })
    payer.save()
    fetched = sdk.NaturalUser.get(payer.id)
    assert (fetched.first_name, fetched.income_range, fetched.tag) == ("Victor", "6", "Python SDK Unit Test")
    assert fetched.birthday == datetime.datetime.utcfromtimestamp(
        time.mktime(datetime.date(1980, 2, 29).timetuple())).date()
    assert isinstance(sdk.User.get(payer.id), sdk.NaturalUser)

    # A birthday given as a date: the SDK's DateField sends its timestamp.
    dated = sdk.NaturalUser(first_name="Date", last_name="Field", email="date@example.com",
                            birthday=datetime.date(1990, 5, 17), user_category="PAYER")
    dated.save()
    assert sdk.NaturalUser.get(dated.id).birthday == datetime.date(1990, 5, 17)

    # test_Users_Update*: change one field and save the whole object back (read-only fields included).
    fetched.first_name = "Victor - CHANGED"
    fetched.save()
    again = sdk.NaturalUser.get(payer.id)
    assert again.first_name == "Victor - CHANGED" and again.income_range == "6" and again.last_name == "Hugo"

    # SCA payer (get_john_sca_payer_instance), read through both SCA routes, then updated.
    sca = sdk.NaturalUserSca()
    sca.first_name = "John SCA"
    sca.last_name = "Doe SCA Review"
    sca.email = "john.doe.sca@sample.org"
    sca.terms_and_conditions_accepted = True
    sca.user_category = "PAYER"
    sca.phone_number = "+33611111111"
    sca.phone_number_country = "FR"
    sca.address = sample_address()
    sca = sdk.NaturalUserSca(**sca.save())
    assert sca.user_status == "ACTIVE" and sca.phone_number == "+33611111111"
    assert isinstance(sdk.User.get_sca(sca.id), sdk.NaturalUserSca)
    fetched_sca = sdk.NaturalUserSca.get(sca.id)
    fetched_sca.first_name = "John SCA - CHANGED"
    fetched_sca.save()
    assert sdk.NaturalUserSca.get(sca.id).first_name == "John SCA - CHANGED"


def test_legal_users_create_get_update(sdk, sdk_requests):
    # BaseTestLive.get_user_legal_instance(): CompanyNumber is the int 123456789.
    legal = sdk.LegalUser()
    legal.name = "MatrixSampleOrg_PythonSDK"
    legal.email = "mail@test.com"
    legal.legal_person_type = "BUSINESS"
    legal.legal_representative_first_name = "Mango"
    legal.legal_representative_last_name = "Pay"
    legal.legal_representative_email = "mango@mangopay.com"
    legal.person_type = "LEGAL"
    legal.headquarters_address = sample_address()
    legal.legal_representative_birthday = 1300186358
    legal.legal_representative_nationality = "FR"
    legal.legal_representative_country_of_residence = "FR"
    legal.company_number = 123456789
    legal.tag = "Python SDK Unit Test"
    legal.terms_and_conditions_accepted = True
    legal.user_category = "OWNER"
    legal = sdk.LegalUser(**legal.save())
    assert legal.id and legal.company_number == "123456789"

    fetched = sdk.LegalUser.get(legal.id)
    assert (fetched.name, fetched.company_number, fetched.user_category) == (
        "MatrixSampleOrg_PythonSDK", "123456789", "OWNER")
    assert fetched.legal_representative_birthday == datetime.datetime.utcfromtimestamp(1300186358).date()
    assert fetched.headquarters_address.postal_code == "11222"
    assert isinstance(sdk.User.get(legal.id), sdk.LegalUser)

    fetched.name = "MatrixSampleOrg_PythonSDK - CHANGED"
    fetched.save()
    again = sdk.LegalUser.get(legal.id)
    assert again.name == "MatrixSampleOrg_PythonSDK - CHANGED" and again.company_number == "123456789"

    # BaseTest.legal_user: explicit None fields, a PAYER by default.
    payer = sdk.LegalUser(**{
        "name": "MangoPay", "legal_person_type": "BUSINESS", "headquarters_address": sample_address(),
        "legal_representative_first_name": "Mango", "legal_representative_last_name": "Pay",
        "legal_representative_email": "mango@mangopay.com", "legal_representative_birthday": 188301600,
        "legal_representative_nationality": "FR", "legal_representative_country_of_residence": "FR",
        "proof_of_registration": None, "shareholder_declaration": None, "legal_representative_address": None,
        "statute": None, "person_type": "LEGAL", "email": "info@mangopay.com", "tag": "Python SDK Unit Test",
    })
    payer.save()
    assert sdk.LegalUser.get(payer.id).user_category == "PAYER"

    # SCA payer with a LegalRepresentative object (get_user_legal_sca_payer_instance).
    from mangopay.utils import LegalRepresentative
    sca = sdk.LegalUserSca()
    sca.name = "Alex Smith"
    sca.email = "alex.smith.services@example.com"
    sca.legal_person_type = "SOLETRADER"
    sca.terms_and_conditions_accepted = True
    sca.legal_representative = LegalRepresentative(first_name="Alex", last_name="Smith",
                                                   email="alex.smith.services@example.com",
                                                   phone_number="0611111111", phone_number_country="FR")
    sca.user_category = "PAYER"
    sca.legal_representative_address = sample_address()
    sca = sdk.LegalUserSca(**sca.save())
    assert sca.user_status == "ACTIVE"
    fetched_sca = sdk.LegalUserSca.get(sca.id)
    assert fetched_sca.legal_representative.phone_number == "0611111111"
    fetched_sca.name = "Alex Smith - CHANGED"
    fetched_sca.save()
    assert sdk.LegalUserSca.get(sca.id).name == "Alex Smith - CHANGED"


# ---------------------------------------------------------------------------------------------- wallets

def test_wallets_create_get_update_list(sdk, sdk_requests):
    user = john(sdk)
    first = wallet_of(sdk, user)
    # BaseTest.legal_user_wallet: owners as a list, a tag.
    second = sdk.Wallet(**{"tag": "My custom tag", "owners": [user], "description": "Wallet of Victor Hugo",
                           "currency": "EUR"})
    second.save()

    fetched = sdk.Wallet.get(first.id)
    assert fetched.id == first.id and fetched.description == "WALLET IN EUR"
    assert int(fetched.balance.amount) == 0 and fetched.currency == "EUR"

    fetched.description = "WALLET IN EUR - CHANGED"
    fetched.tag = "changed tag"
    fetched.save()
    again = sdk.Wallet.get(first.id)
    assert (again.description, again.tag) == ("WALLET IN EUR - CHANGED", "changed tag")

    assert sorted(w.id for w in sdk.Wallet.get_all_for_user(user.id)) == sorted([first.id, second.id])


# ---------------------------------------------------------------------------------------------- cards

def test_card_registration_card_and_validation(sdk, sdk_requests):
    user = john(sdk)
    card_id = registered_card_id(sdk, user)

    # get_johns_card(): save, post, set registration_data, save the same object again; then .card.
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    response = requests.post(registration.card_registration_url, data={
        "data": registration.preregistration_data, "accessKeyRef": registration.access_key,
        "cardNumber": card_number(), "cardExpirationDate": "1229", "cardCvx": "123"},
        headers={"content-type": "application/x-www-form-urlencoded"})
    registration.registration_data = response.text
    registration.save()
    assert sdk.CardRegistration.get(registration.id).status == "VALIDATED"
    card = registration.card
    assert card.id == registration.card_id and card.alias == "497010XXXXXX1119"

    fetched = sdk.Card.get(card_id)
    assert (fetched.user_id, fetched.currency, fetched.validity, fetched.active) == (user.id, "EUR", "UNKNOWN", True)
    assert sorted(c.id for c in user.cards.all()) == sorted([card_id, card.id])

    # test_cards.py: a validation with the suite's BrowserInfo, then read back through get_card_validation.
    card_validation = sdk.CardValidation()
    card_validation.author = user
    card_validation.tag = "test"
    card_validation.secure_mode_return_url = "http://www.example.com/"
    card_validation.ip_address = IP
    card_validation.browser_info = browser_info()
    card_validation.payment_category = "TelephoneOrder"
    validation_response = card_validation.validate(card_id)
    assert validation_response["id"] and validation_response["payment_category"] == "TelephoneOrder"
    assert validation_response["status"] == "SUCCEEDED"

    get_card_validation = sdk.CardValidation()
    get_card_validation.id = validation_response["id"]
    page = get_card_validation.get_card_validation(card_id)
    assert page.data[0].id == validation_response["id"]
    assert sdk.Card.get(card_id).validity == "VALID"


# ---------------------------------------------------------------------------------------------- pay-ins

def test_direct_payin_with_avs_billing(sdk, sdk_requests):
    """test_PayIns_CardDirect_CreateWithAvs, with Money built empty and filled with ints."""
    from mangopay.utils import Address, Billing, Money, SecurityInfo
    user = john(sdk)
    debited_wallet = wallet_of(sdk, user)
    credited_wallet = wallet_of(sdk, user)
    card = sdk.Card.get(registered_card_id(sdk, user))

    pay_in = sdk.DirectPayIn()
    pay_in.author = user
    pay_in.debited_wallet = debited_wallet
    pay_in.credited_wallet = credited_wallet
    pay_in.card = card
    pay_in.fees = Money()
    pay_in.fees.amount = 100
    pay_in.fees.currency = "EUR"
    pay_in.debited_funds = Money()
    pay_in.debited_funds.amount = 1000
    pay_in.debited_funds.currency = "EUR"
    pay_in.secure_mode_return_url = "http://www.example.com/"
    pay_in.ip_address = IP
    pay_in.browser_info = browser_info()
    address = Address()
    address.address_line_1 = "Big Street"
    address.address_line_2 = "no 2 ap 6"
    address.country = "FR"
    address.city = "Lyon"
    address.postal_code = "68400"
    pay_in.billing = Billing(first_name="John", last_name="Doe", address=address)
    result = pay_in.save()

    assert isinstance(result["security_info"], SecurityInfo)
    assert result["security_info"].avs_result == "NO_CHECK"
    assert result["status"] == "SUCCEEDED"
    fetched = sdk.PayIn.get(result["id"])
    assert isinstance(fetched, sdk.DirectPayIn) and fetched.billing.address["City"] == "Lyon"
    assert fetched.browser_info.timezone_offset == "+60" and fetched.browser_info.color_depth == 4
    assert balance(sdk, credited_wallet) == 900 and balance(sdk, debited_wallet) == 0
    assert [t.id for t in card.get_transactions()] == [result["id"]]
    # test_get_transactions_for_fingerprint: the same card registered twice, one fingerprint, both cards' pay-ins.
    again = sdk.Card.get(registered_card_id(sdk, user, card_number_of(card)))
    assert again.fingerprint == card.fingerprint and again.id != card.id
    second = direct_payin(sdk, user, credited_wallet, again.id, amount=500, fees=0)
    listed = sdk.Card.get_transactions_by_fingerprint(card.fingerprint)
    assert sorted(t.id for t in listed) == sorted([result["id"], second.id])
    assert {t.status for t in listed} == {"SUCCEEDED"}


def test_direct_payin_with_3ds_challenge(sdk, sdk_requests):
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    card_id = registered_card_id(sdk, user, card_number("8183"))
    payin = direct_payin(sdk, user, wallet, card_id, amount=2500, fees=0, secure_mode="FORCE")
    assert payin.status == "CREATED" and payin.secure_mode_needed is True
    assert payin.secure_mode_redirect_url

    # The shopper's browser on the sandbox ACS page: the form as a browser without JavaScript posts it.
    path, _, query = payin.secure_mode_redirect_url.partition("?")
    answer = requests.post(path, data={"s": query.split("s=", 1)[1], "code": "123456", "action": "submit"},
                           allow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["Location"].startswith("https://www.ulule.com/?transactionId=" + payin.id)

    fetched = sdk.PayIn.get(payin.id)
    assert fetched.status == "SUCCEEDED" and fetched.result_code == "000000"
    assert balance(sdk, wallet) == 2500
    card = sdk.Card.get(card_id)
    assert card.validity == "VALID"
    assert [t.id for t in card.get_transactions()] == [payin.id]


# ---------------------------------------------------------------------------------------------- refunds

def test_partial_and_full_refunds_with_listings(sdk, sdk_requests):
    """test_create_partial_refund_for_payin (DebitedFunds 15, Fees 4 on a 1000/100 pay-in), then a full refund."""
    from mangopay.utils import Money
    user = john(sdk)
    wallet = wallet_of(sdk, user)
    card_id = registered_card_id(sdk, user)
    payin = direct_payin(sdk, user, wallet, card_id)
    assert payin.status == "SUCCEEDED" and balance(sdk, wallet) == 900

    refund = sdk.PayInRefund()
    refund.payin = payin
    refund.author = user
    refund.fees = Money()
    refund.fees.amount = 4
    refund.fees.currency = "EUR"
    refund.debited_funds = Money()
    refund.debited_funds.amount = 15
    refund.debited_funds.currency = "EUR"
    refund_result = refund.save()
    assert refund_result["id"]
    assert ("PAYOUT", "REFUND") == (refund_result["type"], refund_result["nature"])
    assert refund_result["status"] == "SUCCEEDED"
    # The platform keeps the 4 fees: the card gets 11, the wallet gives 15.
    assert int(refund_result["credited_funds"].amount) == 11
    assert balance(sdk, wallet) == 885

    # Fees given back: at most the pay-in's 100.
    back = sdk.PayInRefund(author=user, payin=payin, debited_funds=Money(amount=85, currency="EUR"),
                           fees=Money(amount=-30, currency="EUR"))
    back.save()
    assert back.status == "SUCCEEDED" and int(back.credited_funds.amount) == 115
    assert balance(sdk, wallet) == 800

    # A full refund: everything left of the credited funds, and every fee left given back.
    full = sdk.PayInRefund(author=user, payin=payin)
    full.save()
    assert full.status == "SUCCEEDED"
    assert (int(full.debited_funds.amount), int(full.fees.amount), int(full.credited_funds.amount)) == (800, -70, 870)
    assert balance(sdk, wallet) == 0

    listed = payin.get_refunds()
    assert sorted(r.id for r in listed) == sorted([refund_result["id"], back.id, full.id])
    assert sdk.Refund.get(full.id).initial_transaction_id == payin.id
    # The shopper got back exactly what was paid, minus the 4 kept on the first refund.
    assert sum(int(sdk.Refund.get(r.id).credited_funds.amount) for r in listed) == 1000 - 4
