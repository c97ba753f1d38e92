"""Preauthorizations and deposit preauthorizations with the official Mangopay SDK's own model classes against the
release binary, the way the SDK's test-suite drives them: create, get, cancel and list preauthorizations, capture
them (single and multi-capture with Idempotency-Key) and refund a capture; create, get, list, cancel and fully
capture deposits; a 3-D Secure challenge on a preauthorization through the sandbox ACS form. Every request the
SDK sends is recorded: none may be answered 404, 405 or 5xx (the SDK takes a 404 as an empty success)."""
import calendar
import random
import time
import uuid

import pytest
import requests
from sandbox_cards import fresh

FRICTIONLESS = "4970107111111119"
CHALLENGED = "4970105181818183"
RETURN_URL = "https://shop.example/return?order=7"


@pytest.fixture(autouse=True)
def answers(mangopay_api, monkeypatch):
    """Every (method, path, status) the SDK saw during the test; checked to hold no 404, 405 or 5xx."""
    from mangopay import api
    seen = []
    original = api.requests_session.request

    def recording(method, url, *args, **kwargs):
        response = original(method, url, *args, **kwargs)
        seen.append((method, url.split("/v2.01/", 1)[-1], response.status_code))
        return response

    monkeypatch.setattr(api.requests_session, "request", recording)
    yield seen
    bad = [answer for answer in seen if answer[2] in (404, 405) or answer[2] >= 500]
    assert not bad, bad


@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


def new_ip():
    return "10.%d.%d.%d" % (random.randrange(256), random.randrange(256), random.randrange(1, 255))


def payer(sdk):
    user = sdk.NaturalUser(
        first_name="Hotel", last_name="Guest", email="guest@example.com", birthday=188352000, nationality="FR",
        country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER")
    user.save()
    wallet = sdk.Wallet(owners=[user], description="Hotel", currency="EUR")
    wallet.save()
    return user, wallet


def register_card(sdk, user, number):
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


def browser_info():
    from mangopay.utils import BrowserInfo
    return BrowserInfo(
        accept_header="text/html", java_enabled=False, javascript_enabled=True, language="fr-FR", color_depth=24,
        screen_height=900, screen_width=1440, timezone_offset="+60", user_agent="Mozilla/5.0 (test)")


def preauthorize(sdk, user, card, amount, **extra):
    from mangopay.utils import Address, Billing, Money
    preauthorization = sdk.PreAuthorization(
        author=user, card=card, debited_funds=Money(amount=amount, currency="EUR"), secure_mode="DEFAULT",
        secure_mode_return_url=RETURN_URL, culture="FR", ip_address=new_ip(), browser_info=browser_info(),
        billing=Billing(first_name="Hotel", last_name="Guest", address=Address(
            address_line_1="1 rue de la Paix", city="Paris", postal_code="75002", country="FR")),
        statement_descriptor="HOTEL", tag="room 12", **extra)
    preauthorization.save()
    return preauthorization


def capture(sdk, user, wallet, preauthorization, amount, fees=0, idempotency_key=None):
    from mangopay.utils import Money
    payin = sdk.PreAuthorizedPayIn(
        author=user, credited_wallet=wallet, preauthorization=preauthorization,
        debited_funds=Money(amount=amount, currency="EUR"), fees=Money(amount=fees, currency="EUR"), tag="stay")
    payin.save(idempotency_key=idempotency_key)
    return payin


def deposit(sdk, user, card, amount):
    from mangopay.utils import Money
    made = sdk.Deposit(
        author_id=user.id, card_id=card.id, debited_funds=Money(amount=amount, currency="EUR"),
        secure_mode_return_url=RETURN_URL, statement_descriptor="RENTAL", culture="FR", ip_address=new_ip(),
        browser_info=browser_info())
    made.save()
    return made


def balance(sdk, wallet):
    return int(sdk.Wallet.get(wallet.id).balance.amount)


def test_preauthorization_is_created_read_captured_once_and_the_capture_refunded(sdk):
    user, wallet = payer(sdk)
    card = register_card(sdk, user, fresh(FRICTIONLESS))
    preauthorization = preauthorize(sdk, user, card, 3000)
    assert (preauthorization.status, preauthorization.payment_status) == ("SUCCEEDED", "WAITING")
    assert preauthorization.result_code == "000000" and preauthorization.secure_mode_needed is False
    assert int(preauthorization.remaining_funds.amount) == 3000
    assert preauthorization.execution_type == "DIRECT" and preauthorization.card_info.brand == "VISA"
    assert preauthorization.expiration_date is not None and preauthorization.payin_id is None

    fetched = sdk.PreAuthorization.get(preauthorization.id)
    assert fetched.author_id == user.id and fetched.card_id == card.id
    assert int(fetched.debited_funds.amount) == 3000 and fetched.tag == "room 12"
    assert fetched.billing.address["City"] == "Paris"
    # 7 days after its creation
    assert abs(calendar.timegm(fetched.expiration_date.utctimetuple()) - (time.time() + 7 * 86400)) < 120

    payin = capture(sdk, user, wallet, preauthorization, 1000, fees=100)
    assert payin.status == "SUCCEEDED" and payin.result_code == "000000"
    read = sdk.PayIn.get(payin.id)
    assert isinstance(read, sdk.PreAuthorizedPayIn)  # the SDK's cast on PaymentType PREAUTHORIZED
    assert read.preauthorization_id == preauthorization.id and read.payment_type == "PREAUTHORIZED"
    assert int(read.credited_funds.amount) == 900
    assert balance(sdk, wallet) == 900

    after = sdk.PreAuthorization.get(preauthorization.id)
    assert after.payment_status == "VALIDATED" and int(after.remaining_funds.amount) == 2000
    assert after.payin_id == payin.id and after.multi_capture is False
    assert [t.id for t in after.get_transactions()] == [payin.id]

    # Without an Idempotency-Key the first capture is the only one.
    from mangopay.exceptions import APIError
    with pytest.raises(APIError) as refused:
        capture(sdk, user, wallet, preauthorization, 500)
    assert refused.value.code == 400

    refund = sdk.PayInRefund(payin=read, author=user)
    refund.save()
    assert refund.status == "SUCCEEDED" and int(refund.debited_funds.amount) == 900
    assert balance(sdk, wallet) == 0
    # The capture is also one of the card's transactions.
    assert payin.id in [t.id for t in sdk.Card.get(card.id).get_transactions()]


def test_multi_capture_needs_idempotency_keys_and_never_exceeds_the_authorization(sdk):
    from mangopay.exceptions import APIError
    user, wallet = payer(sdk)
    card = register_card(sdk, user, fresh(FRICTIONLESS))
    preauthorization = preauthorize(sdk, user, card, 4000)
    first_key = str(uuid.uuid4())
    first = capture(sdk, user, wallet, preauthorization, 1000, idempotency_key=first_key)
    second = capture(sdk, user, wallet, preauthorization, 2500, idempotency_key=str(uuid.uuid4()))
    replay = capture(sdk, user, wallet, preauthorization, 1000, idempotency_key=first_key)
    assert replay.id == first.id  # a replayed key answers the stored capture: no money moves twice
    with pytest.raises(APIError) as above:
        capture(sdk, user, wallet, preauthorization, 501, idempotency_key=str(uuid.uuid4()))
    assert above.value.code == 400 and "DebitedFunds.Amount" in str(above.value.content)
    with pytest.raises(APIError) as no_key:
        capture(sdk, user, wallet, preauthorization, 100)
    assert no_key.value.code == 400
    last = capture(sdk, user, wallet, preauthorization, 500, idempotency_key=str(uuid.uuid4()))

    held = sdk.PreAuthorization.get(preauthorization.id)
    assert held.payment_status == "VALIDATED" and held.multi_capture is True
    assert int(held.remaining_funds.amount) == 0
    assert sorted(t.id for t in held.get_transactions()) == sorted([first.id, second.id, last.id])
    assert balance(sdk, wallet) == 4000


def test_preauthorization_is_canceled_and_listed_per_card_and_per_user(sdk):
    from mangopay.exceptions import APIError
    user, wallet = payer(sdk)
    card = register_card(sdk, user, fresh(FRICTIONLESS))
    kept = preauthorize(sdk, user, card, 1200)
    canceled = preauthorize(sdk, user, card, 800)
    canceled.payment_status = "CANCELED"
    canceled.save()
    assert sdk.PreAuthorization.get(canceled.id).payment_status == "CANCELED"
    with pytest.raises(APIError) as refused:
        capture(sdk, user, wallet, canceled, 800)
    assert refused.value.code == 400
    assert balance(sdk, wallet) == 0

    on_card = {p.id: p.payment_status for p in card.get_pre_authorizations()}
    assert on_card == {kept.id: "WAITING", canceled.id: "CANCELED"}
    assert {p.id for p in user.get_pre_authorizations()} == {kept.id, canceled.id}
    page = user.get_pre_authorizations(page=1, per_page=1)
    assert len(page) == 1
    other, _ = payer(sdk)
    assert list(other.get_pre_authorizations()) == []


def test_challenged_preauthorization_completes_through_the_sandbox_acs(sdk):
    user, wallet = payer(sdk)
    card = register_card(sdk, user, fresh(CHALLENGED))
    preauthorization = preauthorize(sdk, user, card, 2000)
    assert preauthorization.status == "CREATED" and preauthorization.secure_mode_needed is True
    redirect = preauthorization.secure_mode_redirect_url
    assert "/acs/a/" in redirect
    path, _, query = redirect.partition("?")
    assert requests.get(redirect).status_code == 200
    answer = requests.post(path, data={"s": query.split("s=", 1)[1], "code": "123456", "action": "submit"},
                           allow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["Location"].startswith(RETURN_URL + "&transactionId=" + preauthorization.id)
    done = sdk.PreAuthorization.get(preauthorization.id)
    assert (done.status, done.payment_status, done.result_code) == ("SUCCEEDED", "WAITING", "000000")
    payin = capture(sdk, user, wallet, done, 2000)
    assert payin.status == "SUCCEEDED" and balance(sdk, wallet) == 2000


def test_deposit_is_created_read_listed_canceled_and_fully_captured(sdk):
    from mangopay.exceptions import APIError
    from mangopay.utils import Money
    user, wallet = payer(sdk)
    card = register_card(sdk, user, fresh(FRICTIONLESS))
    made = deposit(sdk, user, card, 5000)
    assert (made.status, made.payment_status) == ("SUCCEEDED", "WAITING")
    fetched = sdk.Deposit.get(made.id)
    assert fetched.author_id == user.id and fetched.card_id == card.id
    assert int(fetched.debited_funds.amount) == 5000
    assert fetched.payins_linked.payin_capture_id is None

    other = deposit(sdk, user, card, 700)
    other.payment_status = "CANCELED"
    other.save()
    assert sdk.Deposit.get(other.id).payment_status == "CANCELED"
    assert {d.id for d in sdk.Deposit.get_all_for_user(user.id)} == {made.id, other.id}
    assert {d.id for d in sdk.Deposit.get_all_for_card(card.id)} == {made.id, other.id}

    # A deposit is captured in full: a partial amount is refused.
    partial = sdk.CardPreAuthorizedDepositPayIn(
        author_id=user.id, credited_wallet_id=wallet.id, deposit_id=made.id,
        debited_funds=Money(amount=4000, currency="EUR"), fees=Money(amount=0, currency="EUR"))
    with pytest.raises(APIError):
        partial.create_without_complement()
    full = sdk.CardPreAuthorizedDepositPayIn(
        author_id=user.id, credited_wallet_id=wallet.id, deposit_id=made.id,
        debited_funds=Money(amount=5000, currency="EUR"), fees=Money(amount=250, currency="EUR"))
    result = full.create_without_complement()
    assert result["status"] == "SUCCEEDED" and result["payment_type"] == "PREAUTHORIZED"
    assert balance(sdk, wallet) == 4750
    captured = sdk.Deposit.get(made.id)
    assert captured.payment_status == "VALIDATED"
    assert captured.payins_linked.payin_capture_id == result["id"]
    with pytest.raises(APIError):
        sdk.CardPreAuthorizedDepositPayIn(
            author_id=user.id, credited_wallet_id=wallet.id, deposit_id=made.id,
            debited_funds=Money(amount=5000, currency="EUR"),
            fees=Money(amount=0, currency="EUR")).create_without_complement()
    assert balance(sdk, wallet) == 4750


def test_deposit_is_captured_before_a_complement_then_complemented_beyond_the_hold(sdk):
    """The SDK's `create_prior_to_complement` and `create_complement`: the full capture leaves the deposit
    TO_BE_COMPLETED, the complement (any amount, beyond the hold) makes it VALIDATED, once; both credit the wallet."""
    from mangopay.exceptions import APIError
    from mangopay.utils import Money
    user, wallet = payer(sdk)
    card = register_card(sdk, user, fresh(FRICTIONLESS))
    made = deposit(sdk, user, card, 5000)

    def capture(amount, how):
        payin = sdk.CardPreAuthorizedDepositPayIn(
            author_id=user.id, credited_wallet_id=wallet.id, deposit_id=made.id,
            debited_funds=Money(amount=amount, currency="EUR"), fees=Money(amount=0, currency="EUR"))
        return getattr(payin, how)()

    # No complement before the capture that announces it.
    with pytest.raises(APIError):
        capture(1200, "create_complement")
    prior = capture(5000, "create_prior_to_complement")
    assert prior["status"] == "SUCCEEDED" and balance(sdk, wallet) == 5000
    waiting = sdk.Deposit.get(made.id)
    assert waiting.payment_status == "TO_BE_COMPLETED"
    assert waiting.payins_linked.payin_capture_id == prior["id"] and waiting.payins_linked.payin_complement_id is None
    with pytest.raises(APIError):  # the deposit's funds are captured already
        capture(5000, "create_without_complement")
    complement = capture(1200, "create_complement")
    assert complement["status"] == "SUCCEEDED" and balance(sdk, wallet) == 6200
    done = sdk.Deposit.get(made.id)
    assert done.payment_status == "VALIDATED" and done.payins_linked.payin_complement_id == complement["id"]
    with pytest.raises(APIError):  # once
        capture(100, "create_complement")
    assert balance(sdk, wallet) == 6200
