#!/usr/bin/env python3
"""Writes a data directory (and its development keys) with records of every kind the merchant API stores, by
driving a `cardvault serve` binary over HTTP; StoreFixtureTests opens it and reads every record back.

The committed fixture `store-5a42ffc/` was written by the release build of commit 5a42ffc (JSON records):
    git worktree add /tmp/cv-5a42ffc 5a42ffc && (cd /tmp/cv-5a42ffc && swift build -c release)
    Tests/Fixtures/make_store_fixture.py /tmp/cv-5a42ffc/.build/release/cardvault \
        Tests/Fixtures/store-5a42ffc
Only sandbox test card numbers go in; the keys are throwaway development keys made for the fixture.
Its `manifest.json` lists what was created (ids only), for the test to check against.
"""
import json
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import requests

FRICTIONLESS = "4970107111111119"
CHALLENGED = "4970105181818183"
DECLINED = "4970100000080016"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(binary, target):
    target = pathlib.Path(target)
    work = pathlib.Path(tempfile.mkdtemp(prefix="cv-fixture-"))
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    env = {"PATH": "/usr/bin:/bin", "CARDVAULT_LISTEN": "127.0.0.1:%d" % port, "CARDVAULT_PUBLIC_URL": base,
           "CARDVAULT_DATA_DIR": str(work / "data"), "CARDVAULT_KEYS_DIR": str(work / "keys"),
           "CARDVAULT_CHECKOUT_ORIGINS": "https://shop.example"}
    out = open(work / "out", "wb")
    root = pathlib.Path(__file__).resolve().parents[2]
    process = subprocess.Popen([binary, "serve"], cwd=str(root), env=env, stdout=out, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            text = (work / "out").read_text(errors="replace")
            if "serving on" in text and "ClientId=" in text:
                break
            if time.time() > deadline or process.poll() is not None:
                raise SystemExit("daemon did not start")
            time.sleep(0.1)
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        client, api_key = fields["ClientId"], fields["ApiKey"]
        token = requests.post(base + "/v2.01/oauth/token", auth=(client, api_key)).json()["access_token"]
        api = base + "/v2.01/" + client
        headers = {"Authorization": "Bearer " + token}

        def call(method, path, body=None, extra=None, expect=200):
            response = requests.request(method, api + path, json=body, headers=dict(headers, **(extra or {})))
            assert response.status_code == expect, (method, path, response.status_code, response.text)
            return response.json()

        manifest = {"clientId": client}
        natural = call("POST", "/users/natural", {
            "FirstName": "Ada", "LastName": "Lovelace", "Email": "ada@example.com", "Birthday": 188352000,
            "Nationality": "FR", "CountryOfResidence": "FR", "TermsAndConditionsAccepted": True,
            "UserCategory": "PAYER", "Tag": "fixture natural",
            "Address": {"AddressLine1": "1 rue de la Paix", "City": "Paris", "PostalCode": "75002", "Country": "FR"}})
        legal = call("POST", "/users/legal", {
            "Name": "Shop SARL", "LegalPersonType": "BUSINESS", "Email": "shop@example.com",
            "LegalRepresentativeFirstName": "Bob", "LegalRepresentativeLastName": "Shop",
            "TermsAndConditionsAccepted": True, "UserCategory": "OWNER",
            "LegalRepresentativeBirthday": 188352000, "LegalRepresentativeNationality": "FR",
            "LegalRepresentativeCountryOfResidence": "FR", "CompanyNumber": "123456789",
            "HeadquartersAddress": {"AddressLine1": "2 rue", "City": "Lyon", "PostalCode": "69001", "Country": "FR"},
            "LegalRepresentativeEmail": "bob@example.com"}, expect=200)
        call("PUT", "/users/natural/" + natural["Id"], {"Tag": "updated tag"})
        wallet = call("POST", "/wallets", {"Owners": [natural["Id"]], "Description": "Main €", "Currency": "EUR",
                                            "Tag": "fixture wallet"})
        manifest.update(natural=natural["Id"], legal=legal["Id"], wallet=wallet["Id"])

        def register(number, complete=True, answer=None):
            registration = call("POST", "/cardregistrations", {"UserId": natural["Id"], "Currency": "EUR",
                                                               "CardType": "CB_VISA_MASTERCARD", "Tag": "reg"})
            if not complete:
                return registration, None, None
            response = requests.post(registration["CardRegistrationURL"], data={
                "data": registration["PreregistrationData"], "accessKeyRef": registration["AccessKey"],
                "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": "123"},
                headers={"User-Agent": "fixture-browser/1 (é)", "Accept-Language": "fr-FR",
                         "X-Forwarded-For": "203.0.113.7"})
            assert response.text.startswith("data="), response.text
            reference = response.headers["Profiling-Attempt-Reference"]
            done = call("PUT", "/cardregistrations/" + registration["Id"],
                        {"RegistrationData": answer or response.text, "CardHolderName": "ADA LOVELACE"})
            return done, reference, response.text

        created, _, _ = register(None, complete=False)
        frictionless, reference, _ = register(FRICTIONLESS)
        challenged, _, _ = register(CHALLENGED)
        declined, _, _ = register(DECLINED)
        failed, _, _ = register(FRICTIONLESS, answer="errorCode=02625")
        manifest.update(createdRegistration=created["Id"], failedRegistration=failed["Id"],
                        cards=[frictionless["CardId"], challenged["CardId"], declined["CardId"]],
                        profilingReference=reference)

        def payin(card, amount, key=None, ip="203.0.113.9", expect=200):
            return call("POST", "/payins/card/direct", {
                "AuthorId": natural["Id"], "CreditedWalletId": wallet["Id"], "CardId": card,
                "DebitedFunds": {"Currency": "EUR", "Amount": amount}, "Fees": {"Currency": "EUR", "Amount": 100},
                "SecureModeReturnURL": "https://shop.example/return", "IpAddress": ip, "SecureMode": "DEFAULT",
                "StatementDescriptor": "SHOP", "Tag": "order",
                "ProfilingAttemptReference": reference,
                "BrowserInfo": {"AcceptHeader": "text/html", "JavaEnabled": False, "JavascriptEnabled": True,
                                "Language": "fr-FR", "ColorDepth": 24, "ScreenHeight": 900, "ScreenWidth": 1440,
                                "TimeZoneOffset": "+60", "UserAgent": "Mozilla/5.0 (fixture)"},
                "Billing": {"FirstName": "Ada", "LastName": "Lovelace", "Address": {
                    "AddressLine1": "1 rue de la Paix", "City": "Paris", "PostalCode": "75002", "Country": "FR"}}},
                extra={"Idempotency-Key": key} if key else None, expect=expect)

        succeeded = payin(frictionless["CardId"], 4200, key="fixture-key-0001")
        assert succeeded["Status"] == "SUCCEEDED", succeeded
        pending = payin(challenged["CardId"], 1500)
        refused = payin(declined["CardId"], 1300)
        refund = call("POST", "/payins/" + succeeded["Id"] + "/refunds", {
            "AuthorId": natural["Id"], "DebitedFunds": {"Currency": "EUR", "Amount": 1000},
            "Fees": {"Currency": "EUR", "Amount": 0}, "Tag": "partial"})
        validation = call("POST", "/cards/" + frictionless["CardId"] + "/validation", {
            "AuthorId": natural["Id"], "SecureModeReturnURL": "https://shop.example/return", "IpAddress": "203.0.113.9",
            "BrowserInfo": {"AcceptHeader": "text/html", "JavaEnabled": False, "JavascriptEnabled": True,
                            "Language": "fr-FR", "ColorDepth": 24, "ScreenHeight": 900, "ScreenWidth": 1440,
                            "TimeZoneOffset": "+60", "UserAgent": "Mozilla/5.0 (fixture)"}})
        call("PUT", "/cards/" + declined["CardId"], {"Active": False})
        balance = call("GET", "/wallets/" + wallet["Id"])["Balance"]["Amount"]
        # The hosted checkout: a checkout id (checkout-registrations) and a session opened by a browser.
        checkout = requests.post(base + "/masterpass/checkouts", headers=headers, json={
            "callbackUrlPrefixes": ["https://shop.example/"], "allowedCardTypes": ["master", "visa"],
            "checkoutId": "fixturecheckout0001", "merchantName": "Fixture Shop"})
        assert checkout.status_code in (200, 201), checkout.text
        opened = requests.get(base + "/srci/", allow_redirects=False, params={
            "checkoutId": "fixturecheckout0001", "cartId": "cart-1", "amount": "12.50", "currency": "EUR",
            "allowedCardTypes": "master,visa", "callbackUrl": "https://shop.example/done"})
        assert opened.status_code in (302, 303), opened.text
        manifest["checkoutSession"] = opened.headers["Location"].rsplit("/", 1)[1]
        manifest.update(payIns={"succeeded": succeeded["Id"], "pending": pending["Id"], "refused": refused["Id"]},
                        payInStatuses={"succeeded": succeeded["Status"], "pending": pending["Status"],
                                       "refused": refused["Status"]},
                        refund=refund["Id"], validation=validation["Id"], balance=balance,
                        idempotencyKey="fixture-key-0001")
    finally:
        process.terminate()
        process.wait(timeout=15)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copytree(work / "data", target / "data", ignore=shutil.ignore_patterns("LOCK", "admin.sock"))
    shutil.copytree(work / "keys", target / "keys")
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(work)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
