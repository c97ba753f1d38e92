"""What the bench tools share: a free loopback port, risk limits that never block the load, waiting for
`cardvault serve` to print its development credentials, and a merchant (user, wallet, registrations, one card)
with the sequential tokenizations and frictionless pay-ins the tools measure."""
import socket
import time

import requests

# Risk limits high enough that no measured request is refused or challenged.
RISK_LIMITS = ('{"maxPerCard": 1000000000, "maxPerUser": 1000000000, "maxPerIP": 1000000000, '
               '"maxPerDevice": 1000000000, "cardsPerDeviceChallenge": 1000000000, '
               '"cardsPerDeviceBlock": 1000000000}')


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_serving(process, out, err, timeout):
    """The `key=value` fields the daemon printed to `out` once it serves (ClientId, ApiKey...)."""
    deadline = time.time() + timeout
    while True:
        text = out.read_text(errors="replace")
        if "serving on" in text and "ClientId=" in text:
            return dict(part.split("=", 1) for part in text.split() if "=" in part)
        if time.time() > deadline or process.poll() is not None:
            raise SystemExit("daemon did not start: " + err.read_text(errors="replace")[-800:])
        time.sleep(0.2)


class Merchant:
    """The development client of a daemon at `base`: one user and wallet, `count` + 1 card registrations (the first
    made into a card for the pay-ins), over one keep-alive connection."""

    def __init__(self, base, fields, count):
        self.count = count
        self.http = requests.Session()
        token = self.http.post(base + "/v2.01/oauth/token", auth=(fields["ClientId"], fields["ApiKey"])).json()
        self.api = base + "/v2.01/" + fields["ClientId"]
        self.auth = {"Authorization": "Bearer " + token["access_token"]}
        self.user = self.http.post(self.api + "/users/natural", headers=self.auth, json={
            "FirstName": "A", "LastName": "B", "Email": "a@example.com", "Birthday": 0, "Nationality": "FR",
            "CountryOfResidence": "FR", "TermsAndConditionsAccepted": True, "UserCategory": "PAYER"}).json()["Id"]
        self.wallet = self.http.post(self.api + "/wallets", headers=self.auth, json={
            "Owners": [self.user], "Description": "w", "Currency": "EUR"}).json()["Id"]
        self.registrations = [self.http.post(self.api + "/cardregistrations", headers=self.auth, json={
            "UserId": self.user, "Currency": "EUR"}).json() for _ in range(count + 1)]
        first = self.registrations[0]
        answer = self.http.post(first["CardRegistrationURL"], data=self.form(first)).text
        self.card = self.http.put(self.api + "/cardregistrations/" + first["Id"], headers=self.auth,
                                  json={"RegistrationData": answer}).json()["CardId"]
        self.payin = {
            "AuthorId": self.user, "CreditedWalletId": self.wallet, "CardId": self.card,
            "DebitedFunds": {"Currency": "EUR", "Amount": 1000}, "Fees": {"Currency": "EUR", "Amount": 0},
            "SecureModeReturnURL": "https://shop.example/return", "IpAddress": "203.0.113.9",
            "BrowserInfo": {"AcceptHeader": "text/html", "JavaEnabled": False, "JavascriptEnabled": True,
                            "Language": "fr-FR", "ColorDepth": 24, "ScreenHeight": 900, "ScreenWidth": 1440,
                            "TimeZoneOffset": "+60", "UserAgent": "Mozilla/5.0"}}

    @staticmethod
    def form(registration):
        """The tokenization form for `registration` (a test card number)."""
        return {"data": registration["PreregistrationData"], "accessKeyRef": registration["AccessKey"],
                "cardNumber": "4970107111111119", "cardExpirationDate": "1229", "cardCvx": "123"}

    def tokenize(self):
        """`count` sequential tokenization POSTs, one per registration left."""
        for registration in self.registrations[1:]:
            assert self.http.post(registration["CardRegistrationURL"], data=self.form(registration)).text.startswith(
                "data=")

    def pay(self):
        """`count` sequential frictionless direct pay-ins with the card."""
        for _ in range(self.count):
            answer = self.http.post(self.api + "/payins/card/direct", headers=self.auth, json=self.payin).json()
            assert answer.get("Status") == "SUCCEEDED", answer
