"""Hostile values in every numeric and string field of users, wallets, card registrations, cards, pay-ins, card
validations and refunds, sent as raw JSON to the release daemon: extreme integers (Int64 bounds, 2^63, 2^64,
30 digits), floats (fractions, exponents, 1e400), wrong JSON types, null, arrays and objects.

Each answer is below 500. A 4xx names the field (its path, a parent or a child of it). Where the binding
(docs/wire-binding.md) cannot take the value for the field's kind, the answer is a 400 naming exactly that field:
an amount takes only an integer within +/-100000000000, a text field a string or an integer in 64 bits, an
integer field an integer in 64 bits (integral decimals up to 2^53, digit strings), a boolean true/false/1/0.
The daemon stays up: /health answers after every batch and the process is alive."""
import copy
import json
import random
import uuid

import pytest
import requests

MAXIMUM_AMOUNT = 100_000_000_000

# Raw JSON literals, sent as written (json.dumps cannot write 1e400 or -0).
LITERALS = [
    "-9223372036854775808", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "18446744073709551616", "123456789012345678901234567890", "100000000001", "-100000000001",
    "0", "-0", "1", "-1", "7",
    "1.5", "-0.5", "1.0", "1E2", "1e300", "1e400", "-1e-7",
    "true", "false", "null",
    '""', '"hostile"', '"1.5"', '"9223372036854775808"', '"12"',
    "[]", "[1]", '["a"]', "{}", '{"a":1}',
]
MARKER = "__HOSTILE_VALUE__"


def literal_value(literal):
    """What the literal is as JSON, classified: ('int', n) | ('float', x) | ('bool', b) | ('null',) | ('str', s) |
    ('array',) | ('object',) | ('unparsable',)."""
    if literal == "1e400":
        return ("unparsable",)
    value = json.loads(literal)
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, str):
        return ("str", value)
    return ("array",) if isinstance(value, list) else ("object",)


def binding_refuses(kind, literal):
    """True when the binding layer cannot take `literal` for a field of `kind` (so: a 400 naming the field)."""
    value = literal_value(literal)
    tag = value[0]
    if tag in ("null", "unparsable"):
        return False
    in64 = lambda n: -2**63 <= n < 2**63
    if kind == "text":
        return not (tag == "str" or (tag == "int" and in64(value[1])) and literal.lstrip("-").isdigit())
    if kind == "integer":
        if tag == "int":
            return not in64(value[1])
        if tag == "float":
            return not (value[1] == int(value[1]) and abs(value[1]) <= 2**53)
        if tag == "str":
            text = value[1]
            digits = text[1:] if text[:1] in "+-" else text
            return not (digits.isdigit() and digits.isascii() and len(digits) <= 19 and in64(int(text)))
        return True
    if kind == "amount":
        # Integers only, written without fraction or exponent.
        return not (tag == "int" and literal.lstrip("-").isdigit() and -MAXIMUM_AMOUNT <= value[1] <= MAXIMUM_AMOUNT)
    if kind == "boolean":
        return not (tag == "bool" or (tag == "int" and value[1] in (0, 1) and literal.lstrip("-").isdigit()))
    if kind == "object":
        return tag != "object"
    if kind == "list":
        return tag != "array" or literal == "[{}]"
    raise AssertionError(kind)


def set_path(body, path, value):
    target = body
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    target[parts[-1]] = value


def names(errors, path):
    """Whether an error map names `path`, a parent of it, or a child of it."""
    return any(key == path or key.startswith(path + ".") or path.startswith(key + ".") for key in errors)


class Api:
    def __init__(self, daemon):
        self.daemon = daemon
        token = requests.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key),
                              data={"grant_type": "client_credentials"}).json()["access_token"]
        self.session = requests.Session()
        self.session.headers.update({"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        self.base = daemon.base_url + "/v2.01/" + daemon.client_id
        self.sent = 0

    def send(self, method, path, raw):
        self.sent += 1
        return self.session.request(method, self.base + path, data=raw.encode(), timeout=10)

    def json(self, method, path, body):
        response = self.send(method, path, json.dumps(body))
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def healthy(self):
        assert self.daemon.process.poll() is None, "the daemon died"
        assert requests.get(self.daemon.base_url + "/health", timeout=5).status_code == 200


def new_ip():
    return "10.%d.%d.%d" % (random.randrange(256), random.randrange(256), random.randrange(1, 255))


def natural_body():
    return {"FirstName": "Host", "LastName": "Ile", "Email": "host@example.com", "Birthday": 188352000,
            "Nationality": "FR", "CountryOfResidence": "FR", "UserCategory": "PAYER", "TermsAndConditionsAccepted": 1,
            "Occupation": "tester", "IncomeRange": "2", "Capacity": "NORMAL", "PhoneNumber": "+33611111111",
            "PhoneNumberCountry": "FR", "PersonType": "NATURAL", "Tag": "t",
            "Address": {"AddressLine1": "1 rue", "AddressLine2": None, "City": "Paris", "Region": None,
                        "PostalCode": "75001", "Country": "FR"}}


def browser_info():
    return {"AcceptHeader": "text/html", "JavaEnabled": True, "JavascriptEnabled": True, "Language": "FR-FR",
            "ColorDepth": 24, "ScreenHeight": 900, "ScreenWidth": 1440, "TimeZoneOffset": "+60", "UserAgent": "UA"}


@pytest.fixture(scope="module")
def api(daemon):
    instance = Api(daemon)
    yield instance
    print("\nhostile-value requests sent:", instance.sent)


def fresh_payer(api):
    """A natural user with a EUR wallet and a registered card (no risk history yet)."""
    user = api.json("POST", "/users/natural", natural_body())["Id"]
    wallet = api.json("POST", "/wallets", {"Owners": [user], "Description": "d", "Currency": "EUR"})["Id"]
    return {"user": user, "wallet": wallet, "card": register_card(api, user)}


@pytest.fixture(scope="module")
def payer(api):
    return fresh_payer(api)


def random_visa():
    """A Luhn-valid Visa number of its own (a card fingerprint without history).

    The prefix 4111 stays clear of the co-branded ranges inside Visa's 4 (Elo, Maestro, Naranja: see
    BrandCatalog+Standard.swift), which a CB_VISA_MASTERCARD registration rightly refuses."""
    digits = [4, 1, 1, 1] + [random.randrange(10) for _ in range(11)]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if index % 2 == 0 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


REGISTERED = []  # every number this module registers, for the PAN scan of test_zz_scan.py


def register_card(api, user, number=None):
    """A registered card of `user`; a number of its own by default (no other test's fingerprint listing grows)."""
    number = number or random_visa()
    REGISTERED.append(number)
    registration = api.json("POST", "/cardregistrations", {"UserId": user, "Currency": "EUR"})
    form = requests.post(registration["CardRegistrationURL"], data={
        "data": registration["PreregistrationData"], "accessKeyRef": registration["AccessKey"],
        "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": "123"})
    assert form.text.startswith("data="), form.text
    done = api.json("PUT", "/cardregistrations/" + registration["Id"], {"RegistrationData": form.text})
    return done["CardId"]


def payin_body(payer, amount=1000, fees=0):
    return {"AuthorId": payer["user"], "CreditedWalletId": payer["wallet"], "CardId": payer["card"],
            "DebitedFunds": {"Currency": "EUR", "Amount": amount}, "Fees": {"Currency": "EUR", "Amount": fees},
            "SecureModeReturnURL": "https://shop.example/return", "SecureMode": "DEFAULT", "IpAddress": new_ip(),
            "BrowserInfo": browser_info(), "StatementDescriptor": "SHOP", "Tag": "t", "Culture": "FR",
            "PaymentCategory": "ECommerce", "PreferredCardNetwork": "VISA",
            "Billing": {"FirstName": "A", "LastName": "B",
                        "Address": {"AddressLine1": "1 rue", "City": "Paris", "PostalCode": "75001", "Country": "FR"}},
            "Shipping": {"FirstName": "A", "LastName": "B", "Address": {"City": "Paris", "Country": "FR"}}}


def batch(api, method, path_for, base_for, fields, after_success=None):
    """Sends every literal in every field; checks each answer; checks the daemon after the batch.

    `fields` maps a field path to its kind. Returns how many requests were accepted (2xx)."""
    accepted = 0
    for field, kind in fields.items():
        for literal in LITERALS:
            body = base_for()
            set_path(body, field, MARKER)
            raw = json.dumps(body).replace('"%s"' % MARKER, literal)
            response = api.send(method, path_for(), raw)
            where = "%s %s = %s -> %d %s" % (method, field, literal, response.status_code, response.text[:300])
            assert response.status_code < 500, where
            if response.status_code >= 400:
                assert response.status_code < 500, where
                errors = response.json().get("errors") or {}
                if literal == "1e400":
                    assert "Body" in errors, where  # not JSON: a number beyond the double range
                else:
                    assert names(errors, field), where
            else:
                accepted += 1
                if after_success:
                    after_success(field, response.json())
            if binding_refuses(kind, literal):
                assert response.status_code == 400, where
                assert field in response.json()["errors"], where
        api.healthy()
    return accepted


# ---------------------------------------------------------------------------------------------- tests

NATURAL_FIELDS = {
    "FirstName": "text", "LastName": "text", "Email": "text", "Tag": "text", "UserCategory": "text",
    "TermsAndConditionsAccepted": "boolean", "Birthday": "integer", "Nationality": "text",
    "CountryOfResidence": "text", "Occupation": "text", "IncomeRange": "text", "Capacity": "text",
    "PhoneNumber": "text", "PhoneNumberCountry": "text", "PersonType": "text", "Address": "object",
    "Address.AddressLine1": "text", "Address.City": "text", "Address.PostalCode": "text", "Address.Country": "text",
}


def test_natural_users(api):
    accepted = batch(api, "POST", lambda: "/users/natural", natural_body, NATURAL_FIELDS)
    assert accepted > 0
    user = api.json("POST", "/users/natural", natural_body())["Id"]
    # PersonType is read-only on an update (the SDK sends the whole object back): not looked at.
    batch(api, "PUT", lambda: "/users/natural/" + user, natural_body,
          {field: kind for field, kind in NATURAL_FIELDS.items() if field != "PersonType"})


def test_legal_users(api):
    def legal():
        return {"Name": "Acme", "LegalPersonType": "BUSINESS", "Email": "acme@example.com", "UserCategory": "PAYER",
                "LegalRepresentativeFirstName": "Ann", "LegalRepresentativeLastName": "Lee",
                "LegalRepresentativeEmail": "ann@example.com", "LegalRepresentativeBirthday": 188352000,
                "LegalRepresentativeNationality": "FR", "LegalRepresentativeCountryOfResidence": "FR",
                "CompanyNumber": "123456789", "HeadquartersAddress": {"City": "Paris", "Country": "FR"},
                "PersonType": "LEGAL"}
    batch(api, "POST", lambda: "/users/legal", legal, {
        "Name": "text", "LegalPersonType": "text", "CompanyNumber": "text", "LegalRepresentativeFirstName": "text",
        "LegalRepresentativeEmail": "text", "LegalRepresentativeBirthday": "integer",
        "LegalRepresentativeNationality": "text", "HeadquartersAddress": "object",
        "HeadquartersAddress.Country": "text", "HeadquartersAddress.PostalCode": "text",
    })

    def sca_legal():
        return {"Name": "Acme", "LegalPersonType": "SOLETRADER", "Email": "acme@example.com", "UserCategory": "PAYER",
                "TermsAndConditionsAccepted": True,
                "LegalRepresentative": {"FirstName": "Ann", "LastName": "Lee", "Email": "ann@example.com",
                                        "Birthday": 188352000, "PhoneNumber": "0611111111",
                                        "PhoneNumberCountry": "FR"}}
    batch(api, "POST", lambda: "/sca/users/legal", sca_legal, {
        "LegalRepresentative": "object", "LegalRepresentative.FirstName": "text",
        "LegalRepresentative.Birthday": "integer", "LegalRepresentative.PhoneNumberCountry": "text",
        "TermsAndConditionsAccepted": "boolean",
    })


def test_wallets(api, payer):
    def wallet():
        return {"Owners": [payer["user"]], "Description": "d", "Currency": "EUR", "Tag": "t"}
    batch(api, "POST", lambda: "/wallets", wallet,
          {"Owners": "list", "Description": "text", "Currency": "text", "Tag": "text"})
    existing = api.json("POST", "/wallets", wallet())["Id"]
    batch(api, "PUT", lambda: "/wallets/" + existing, lambda: {"Description": "d2", "Tag": "t2"},
          {"Description": "text", "Tag": "text"})


def test_card_registrations_and_cards(api, payer):
    batch(api, "POST", lambda: "/cardregistrations",
          lambda: {"UserId": payer["user"], "Currency": "EUR", "CardType": "CB_VISA_MASTERCARD", "Tag": "t"},
          {"UserId": "text", "Currency": "text", "CardType": "text", "Tag": "text"})
    # Each update goes to a registration of its own (an update completes it).
    fresh = lambda: "/cardregistrations/" + api.json(
        "POST", "/cardregistrations", {"UserId": payer["user"], "Currency": "EUR"})["Id"]
    batch(api, "PUT", fresh, lambda: {"RegistrationData": "data=abc", "CardHolderName": "A B", "Tag": "t"},
          {"RegistrationData": "text", "CardHolderName": "text", "Tag": "text"})
    # Deactivation is one-way: every literal goes to a card of its own.
    batch(api, "PUT", lambda: "/cards/" + register_card(api, payer["user"]), lambda: {"Active": True},
          {"Active": "boolean"})


PAYIN_FIELDS = {
    "AuthorId": "text", "CreditedUserId": "text", "CreditedWalletId": "text", "CardId": "text",
    "DebitedFunds": "object", "DebitedFunds.Amount": "amount", "DebitedFunds.Currency": "text",
    "Fees": "object", "Fees.Amount": "amount", "Fees.Currency": "text",
    "SecureModeReturnURL": "text", "SecureMode": "text", "IpAddress": "text", "StatementDescriptor": "text",
    "Tag": "text", "Culture": "text", "PaymentCategory": "text", "PreferredCardNetwork": "text",
    "ProfilingAttemptReference": "text", "BrowserInfo": "object", "BrowserInfo.AcceptHeader": "text",
    "BrowserInfo.JavaEnabled": "boolean", "BrowserInfo.JavascriptEnabled": "boolean",
    "BrowserInfo.ColorDepth": "integer", "BrowserInfo.ScreenHeight": "integer", "BrowserInfo.ScreenWidth": "integer",
    "BrowserInfo.TimeZoneOffset": "text", "BrowserInfo.UserAgent": "text", "BrowserInfo.Language": "text",
    "Billing": "object", "Billing.FirstName": "text", "Billing.Address": "object", "Billing.Address.Country": "text",
    "Billing.Address.PostalCode": "text", "Shipping.Address.City": "text",
}


def test_payins(api, payer):
    accepted = batch(api, "POST", lambda: "/payins/card/direct", lambda: payin_body(payer), PAYIN_FIELDS)
    assert accepted > 0


def test_card_validations(api, payer):
    def validation():
        return {"AuthorId": payer["user"], "SecureModeReturnURL": "https://shop.example/return", "IpAddress": new_ip(),
                "BrowserInfo": browser_info(), "Tag": "t", "PaymentCategory": "TelephoneOrder", "SecureMode": "DEFAULT",
                "PreferredCardNetwork": "VISA"}
    batch(api, "POST", lambda: "/cards/%s/validation" % payer["card"], validation, {
        "AuthorId": "text", "SecureModeReturnURL": "text", "IpAddress": "text", "Tag": "text",
        "PaymentCategory": "text", "SecureMode": "text", "PreferredCardNetwork": "text", "BrowserInfo": "object",
        "BrowserInfo.ColorDepth": "integer", "BrowserInfo.JavaEnabled": "boolean",
    })


def test_refunds(api):
    state = {}

    def new_payin():
        # A payer of its own each time: the many requests of a batch must not build a risk history.
        state["payer"] = fresh_payer(api)
        made = api.json("POST", "/payins/card/direct", payin_body(state["payer"], amount=4000, fees=500))
        assert made["Status"] == "SUCCEEDED", made
        state["payin"] = made["Id"]

    def after_success(field, refund):
        # A full refund (no DebitedFunds) empties the pay-in: the next request needs a new one.
        if refund["Status"] != "SUCCEEDED" or refund["DebitedFunds"]["Amount"] > 1:
            new_payin()

    new_payin()
    batch(api, "POST", lambda: "/payins/%s/refunds" % state["payin"],
          lambda: {"AuthorId": state["payer"]["user"], "DebitedFunds": {"Currency": "EUR", "Amount": 1},
                   "Fees": {"Currency": "EUR", "Amount": 0}, "Tag": "t"},
          {"AuthorId": "text", "Tag": "text", "DebitedFunds": "object", "DebitedFunds.Amount": "amount",
           "DebitedFunds.Currency": "text", "Fees": "object", "Fees.Amount": "amount", "Fees.Currency": "text"},
          after_success=after_success)


def test_refund_fees_of_int64_min_are_a_field_error_not_a_crash(api):
    payer = fresh_payer(api)
    made = api.json("POST", "/payins/card/direct", payin_body(payer, amount=2000, fees=100))
    path = "/payins/%s/refunds" % made["Id"]
    body = '{"DebitedFunds":{"Currency":"EUR","Amount":15},"Fees":{"Currency":"EUR","Amount":%s}}'
    response = api.send("POST", path, body % "-9223372036854775808")
    assert response.status_code == 400 and "Fees.Amount" in response.json()["errors"], response.text
    api.healthy()
    # In range, but more fees back than the pay-in took: a FAILED refund (005404) that moves nothing.
    response = api.send("POST", path, body % "-101")
    assert response.status_code == 200, response.text
    assert (response.json()["Status"], response.json()["ResultCode"]) == ("FAILED", "005404")
    # Positive fees: the platform keeps them; the card gets DebitedFunds - Fees.
    response = api.send("POST", path, body % "4")
    assert response.status_code == 200 and response.json()["Status"] == "SUCCEEDED", response.text
    assert response.json()["CreditedFunds"]["Amount"] == 11
    listing = api.session.get(api.base + path).json()
    assert sorted(r["Status"] for r in listing) == ["FAILED", "SUCCEEDED"]
    wallet = api.session.get(api.base + "/wallets/" + payer["wallet"]).json()
    assert wallet["Balance"]["Amount"] == 1900 - 15
