"""The official Mangopay Python SDK (mangopaysdk) against a live CardVault daemon, unmodified."""
import uuid

import pytest
import requests

VISA = "4970107111111119"
AMEX = "375989111111119"


@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


@pytest.fixture
def user(sdk):
    user = sdk.NaturalUser(
        first_name="John", last_name="Doe", email="john@example.com", birthday=188352000,
        nationality="FR", country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER")
    user.save()
    return user


def register(sdk, user, number=VISA, expiry="1229", cvx="123", card_type=None, headers=None):
    """Creates a registration, posts the card form to its URL and completes it; returns (registration, response)."""
    registration = sdk.CardRegistration(user=user, currency="EUR")
    if card_type:
        registration.card_type = card_type
    registration.save()
    response = requests.post(
        registration.card_registration_url,
        data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
              "cardNumber": number, "cardExpirationDate": expiry, "cardCvx": cvx},
        headers=dict({"content-type": "application/x-www-form-urlencoded"}, **(headers or {})))
    registration.registration_data = response.text
    registration.save()
    return registration, response


def test_users_and_wallet(sdk, user):
    assert user.id
    fetched = sdk.NaturalUser.get(user.id)
    assert (fetched.first_name, fetched.last_name, fetched.email) == ("John", "Doe", "john@example.com")
    legal = sdk.LegalUser(
        name="Acme", legal_person_type="BUSINESS", legal_representative_first_name="Ann",
        legal_representative_last_name="Lee", email="acme@example.com", user_category="PAYER")
    legal.save()
    assert sdk.LegalUser.get(legal.id).name == "Acme"
    sca = sdk.NaturalUserSca(
        first_name="Sam", last_name="Ca", email="sam@example.com", terms_and_conditions_accepted=True,
        user_category="PAYER")
    sca.save()
    assert sca.user_status == "ACTIVE"
    wallet = sdk.Wallet(owners=[user], description="Main", currency="EUR")
    wallet.save()
    again = sdk.Wallet.get(wallet.id)
    assert again.balance.amount == 0 and str(again.balance.currency) == "EUR"
    assert again.description == "Main"
    assert [w.id for w in sdk.Wallet.get_all_for_user(user.id)] == [wallet.id]


def test_user_validation_errors(sdk):
    from mangopay.exceptions import APIError
    bad = sdk.NaturalUser(first_name="A", last_name="B", email="not-an-email", nationality="XX")
    with pytest.raises(APIError) as caught:
        bad.save()
    assert caught.value.code == 400
    assert caught.value.content["Type"] == "param_error"
    assert set(caught.value.content["errors"]) == {"Email", "Nationality"}


def test_unknown_ids_raise_does_not_exist(sdk):
    with pytest.raises(sdk.NaturalUser.DoesNotExist):
        sdk.NaturalUser.get("user_doesnotexist")
    with pytest.raises(sdk.Card.DoesNotExist):
        sdk.Card.get("card_doesnotexist")


def test_card_registration_read_list_fingerprint_deactivate(sdk, user):
    registration, response = register(sdk, user, headers={"User-Agent": "sdk-test-browser", "Origin": "https://shop.example"})
    assert response.status_code == 200 and response.text.startswith("data=")
    assert response.headers["Access-Control-Allow-Origin"] == "https://shop.example"
    reference = response.headers["Profiling-Attempt-Reference"]
    assert reference
    assert registration.status == "VALIDATED"
    assert registration.result_code == "000000"
    assert sdk.CardRegistration.get(registration.id).status == "VALIDATED"

    card = sdk.Card.get(registration.card_id)
    assert card.alias == "497010XXXXXX1119"
    assert card.card_provider == "VISA" and card.card_type == "CB_VISA_MASTERCARD"
    assert card.expiration_date == "1229" and card.currency == "EUR"
    assert card.active is True and card.validity == "UNKNOWN"
    assert len(card.fingerprint) == 32
    assert card.user_id == user.id

    assert [c.id for c in user.cards.all()] == [card.id]
    assert card.id in [c.id for c in sdk.Card.get_by_fingerprint(card.fingerprint)]
    assert list(card.get_transactions()) == []

    card.active = False
    card.save()
    assert sdk.Card.get(card.id).active is False


def test_same_number_same_fingerprint(sdk, user):
    first, _ = register(sdk, user)
    second, _ = register(sdk, user)
    assert sdk.Card.get(first.card_id).fingerprint == sdk.Card.get(second.card_id).fingerprint


@pytest.mark.parametrize("number,expiry,cvx,card_type,error_code,result_code", [
    ("4970107111111118", "1229", "123", None, "02625", "105202"),   # Luhn
    (VISA, "1329", "123", None, "02626", "105203"),                 # month 13
    (VISA, "0120", "123", None, "02626", "105203"),                 # expired
    (VISA, "1229", "1234", None, "02627", "105204"),                # CVX size
    (VISA, "1229", "123", "AMEX", "02625", "105202"),               # brand not allowed by CardType
])
def test_tokenization_errors(sdk, user, number, expiry, cvx, card_type, error_code, result_code):
    registration, response = register(sdk, user, number=number, expiry=expiry, cvx=cvx, card_type=card_type)
    assert response.text == "errorCode=" + error_code
    assert registration.status == "ERROR"
    assert registration.result_code == result_code
    assert registration.card_id is None


def test_amex_registration_accepts_amex(sdk, user):
    registration, response = register(sdk, user, number=AMEX, cvx="1234", card_type="AMEX")
    assert registration.status == "VALIDATED"
    assert sdk.Card.get(registration.card_id).card_provider == "AMEX"


def test_reused_access_key_is_refused(sdk, user):
    registration, _ = register(sdk, user)
    again = requests.post(
        registration.card_registration_url,
        data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
              "cardNumber": VISA, "cardExpirationDate": "1229", "cardCvx": "123"})
    assert again.text == "errorCode=09101"


def test_form_without_content_type_is_parsed(sdk, user):
    from urllib.parse import urlencode
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    body = urlencode({"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
                      "cardNumber": VISA, "cardExpirationDate": "1229", "cardCvx": "123"})
    response = requests.post(registration.card_registration_url, body)
    assert response.text.startswith("data=")


def test_idempotency(sdk, user):
    key = str(uuid.uuid4())
    wallet = sdk.Wallet(owners=[user], description="Idem", currency="EUR")
    wallet.save(idempotency_key=key)
    stored = sdk.IdempotencyResponse.get(key)
    assert stored.status == "200"
    assert stored.resource["Id"] == wallet.id
    replay = sdk.Wallet(owners=[user], description="Idem", currency="EUR")
    replay.save(idempotency_key=key)
    assert replay.id == wallet.id
    from mangopay.exceptions import APIError
    with pytest.raises(APIError) as caught:
        sdk.Wallet(owners=[user], description="Other", currency="EUR").save(idempotency_key=key)
    assert caught.value.code == 409
    with pytest.raises(APIError) as unknown:
        sdk.IdempotencyResponse.get(str(uuid.uuid4()))
    assert unknown.value.code == 400 and unknown.value.content["Type"] == "correlationid_not_found"


def test_wrong_credentials_and_foreign_client(daemon, session):
    token = session.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, "wrong"))
    assert token.status_code == 401 and token.json()["error"] == "invalid_client"
    good = session.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key)).json()
    headers = {"Authorization": "Bearer " + good["access_token"]}
    foreign = session.get(daemon.base_url + "/v2.01/someoneelse/users/x", headers=headers)
    assert foreign.status_code == 403
    bad = session.get(daemon.base_url + "/v2.01/%s/users/x" % daemon.client_id, headers={"Authorization": "Bearer x"})
    assert bad.status_code == 401 and bad.json()["Type"] == "invalid_credentials"
