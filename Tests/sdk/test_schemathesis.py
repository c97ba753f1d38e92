"""Schemathesis over the whole of docs/openapi.yaml against the live daemon (the release binary, CARDVAULT_BIN).

Every check schemathesis has (`--checks all`) runs on positive and negative cases (`--mode all`): no 5xx, every
response as the document describes it (status, content type, headers, body), every request the document calls
invalid refused, every valid one accepted (schemathesis.toml names the few operations whose rules JSON Schema
cannot state), 405 with a right `Allow` for undocumented methods. Every request must get an answer: a lost or
stalled connection is an error of the run. The number of cases is printed and must reach the floor.

Two sizes: the `make test` run (CARDVAULT_FUZZ_EXAMPLES examples per operation, at least 2,000 cases, about a
minute) and the heavy run of `make fuzz-api` (CARDVAULT_FUZZ_HEAVY=1: more examples per operation, a fresh seed
unless CARDVAULT_FUZZ_SEED is set, at least 20,000 cases).
"""
import os
import pathlib
import random
import re
import subprocess
import sys

import pytest
import requests

from conftest import Daemon

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent

HEAVY = os.environ.get("CARDVAULT_FUZZ_HEAVY") == "1"
EXAMPLES = os.environ.get("CARDVAULT_FUZZ_EXAMPLES", "200" if HEAVY else "5")
MINIMUM_CASES = 20_000 if HEAVY else 2_000


def test_openapi_document_is_served(daemon):
    served = requests.get(daemon.base_url + "/openapi.yaml")
    assert served.status_code == 200
    assert served.content == (ROOT / "docs" / "openapi.yaml").read_bytes()


def test_every_route_is_in_the_document():
    """Each route the route groups register (Sources/*API/*Routes.swift, HTTPServer/RouteGroup.swift) has its path and
    method in docs/openapi.yaml, and the document names no route the server lacks."""
    import yaml

    document = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    documented = set()
    for path, item in document["paths"].items():
        for method in item:
            if method in ("get", "put", "post", "delete", "options", "patch"):
                documented.add((method.upper(), re.sub(r"\{[^}]+\}", "{}", path)))
    registered = set()
    for source in [*sorted((ROOT / "Sources").glob("*API/*Routes.swift")), ROOT / "Sources/HTTPServer/RouteGroup.swift"]:
        for method, path in _registered_routes(source.read_text()):
            registered.add((method, re.sub(r":[A-Za-z]+", "{}", path)))
    # The SDKs' spellings of some routes, served as aliases and left out of the document on purpose (case and one
    # trailing slash are the router's, for every route).
    aliases = {("GET", "/v2.01/{}/responses//{}"),
               # The SDK's deposit URLs (a slash before the id).
               ("GET", "/v2.01/{}/deposit-preauthorizations//{}"), ("PUT", "/v2.01/{}/deposit-preauthorizations//{}")}
    # The JS kit completes a card registration under /v2/ (the document has the /v2.01/ spelling).
    aliases |= {(method, "/v2/{}/cardregistrations/{}") for method in ("PUT", "POST", "OPTIONS")}
    assert len(registered) > 40, sorted(registered)
    assert registered - aliases - documented == set(), "routes missing from docs/openapi.yaml"
    assert documented - registered == set(), "documented routes the server does not register"


# `let base = "…"`, `for path in ["…", …]`, `for (prefix, …) in [("…", …), …]`, `let path = …` and the route calls.
_EVENT = re.compile(
    r'let (?P<let>\w+) = (?P<value>[^\n]+)'
    r'|for \(?(?P<var>\w+)(?:, \w+)?\)? in \[(?P<list>[^\]]*)\]'
    r'|router\.(?P<call>get|put|post|delete|add\(\.options,|addImmediate\(\.get,)\(?\s*(?P<expr>[^{\n]*?)\)?\s*\{'
    # A group's own registering helper, e.g. the rate-limited `page(.get, "/srci/…") { … }`.
    r'|\bpage\(\.(?P<helper>get|put|post|delete|options), (?P<helperexpr>[^{\n]*?)\)\s*\{')


def _registered_routes(text):
    """(method, path) of every router call in a route group's source, with its loops and `let`s expanded."""
    values = {}
    routes = []
    for event in _EVENT.finditer(text):
        if event["let"]:
            if event["value"].lstrip().startswith('"') or re.match(r"\s*\w+ \+", event["value"]):
                values[event["let"]] = _evaluate(event["value"], values)
        elif event["var"]:
            # The first string of each element: `["a", "b"]` or `[("", false), ("/sca", true)]`.
            items = re.findall(r'(?:^|[\[(,]\s*)\(?\s*("(?:[^"]*)"(?:\s*\+\s*"[^"]*")*|\w+ \+ "[^"]*")', event["list"])
            values[event["var"]] = sorted({path for item in items for path in _evaluate(item, values)})
        elif event["helper"]:
            expression = event["helperexpr"].strip().rstrip(",").strip()
            routes += [(event["helper"].upper(), path) for path in _evaluate(expression, values)]
        else:
            method = {"add(.options,": "OPTIONS", "addImmediate(.get,": "GET"}.get(event["call"], event["call"].upper())
            expression = event["expr"].strip().rstrip(",").strip()
            routes += [(method, path) for path in _evaluate(expression, values)]
    return routes


def _evaluate(expression, values):
    """Every string a `"a" + name + "b"` expression can be, given the values each name may take."""
    results = [""]
    for literal, name in re.findall(r'"([^"]*)"|(\w+)', expression):
        options = [literal] if not name else values.get(name, [])
        if isinstance(options, str):
            options = [options]
        results = [result + option for result in results for option in options]
    return results


def _existing_resources(daemon, token):
    """A user, wallet, card registration, card (tokenized as a browser does it), a SUCCEEDED pay-in and a
    refund, so that the run reaches real resources and not only 404s; their ids go to schemathesis.toml."""
    session = requests.Session()
    session.headers["Authorization"] = "Bearer " + token
    base = daemon.base_url + "/v2.01/" + daemon.client_id

    def post(path, body, status=200):
        answer = session.post(base + path, json=body)
        assert answer.status_code == status, answer.text
        return answer.json()

    user = post("/users/natural", {"FirstName": "Fuzz", "LastName": "Target", "Email": "fuzz@shop.example"})
    wallet = post("/wallets", {"Owners": [user["Id"]], "Description": "fuzz", "Currency": "EUR"})
    registration = post("/cardregistrations", {"UserId": user["Id"], "Currency": "EUR"})
    tokenized = requests.post(registration["CardRegistrationURL"], data={
        "data": registration["PreregistrationData"], "accessKeyRef": registration["AccessKey"],
        "cardNumber": "4970107111111119", "cardExpirationDate": "1240", "cardCvx": "123"})
    assert tokenized.text.startswith("data="), tokenized.text
    completed = session.put(base + "/cardregistrations/" + registration["Id"], json={"RegistrationData": tokenized.text})
    card = session.get(base + "/cards/" + completed.json()["CardId"]).json()
    browser = {"AcceptHeader": "text/html", "JavaEnabled": False, "JavascriptEnabled": True, "Language": "en-US",
               "ColorDepth": 24, "ScreenHeight": 800, "ScreenWidth": 1200, "TimeZoneOffset": 0, "UserAgent": "fuzz"}
    payin = post("/payins/card/direct", {
        "AuthorId": user["Id"], "CreditedWalletId": wallet["Id"], "CardId": card["Id"],
        "DebitedFunds": {"Currency": "EUR", "Amount": 5000}, "Fees": {"Currency": "EUR", "Amount": 100},
        "SecureModeReturnURL": "https://shop.example/return", "IpAddress": "192.0.2.10", "BrowserInfo": browser,
        "ProfilingAttemptReference": tokenized.headers["Profiling-Attempt-Reference"]})
    assert payin["Status"] == "SUCCEEDED", payin
    refund = post("/payins/%s/refunds" % payin["Id"], {"DebitedFunds": {"Currency": "EUR", "Amount": 100},
                                                       "Fees": {"Currency": "EUR", "Amount": 0}})
    return {
        "CARDVAULT_USER_ID": user["Id"], "CARDVAULT_WALLET_ID": wallet["Id"],
        "CARDVAULT_CARD_REGISTRATION_ID": registration["Id"], "CARDVAULT_CARD_ID": card["Id"],
        "CARDVAULT_FINGERPRINT": card["Fingerprint"], "CARDVAULT_PAYIN_ID": payin["Id"],
        "CARDVAULT_REFUND_ID": refund["Id"], "CARDVAULT_REFERENCE": tokenized.headers["Profiling-Attempt-Reference"],
    }


@pytest.fixture(scope="module")
def fuzzed_daemon():
    """A daemon of its own: the run fills its store, which other tests must not inherit. All its requests come
    from 127.0.0.1, so the per-address limits of the unauthenticated routes are raised (their 429s are documented
    and tested in test_abuse_limits.py); at the defaults most page, ACS and failed-token cases would stop at 429."""
    instance = Daemon(extra_env={
        "CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS": "1000000",
        "CARDVAULT_PAGE_VIEWS_PER_MINUTE_PER_ADDRESS": "1000000",
        "CARDVAULT_ACS_REQUESTS_PER_MINUTE_PER_ADDRESS": "1000000",
        "CARDVAULT_TOKEN_FAILURES_PER_MINUTE_PER_ADDRESS": "1000000",
    })
    yield instance
    instance.stop()


def test_schemathesis_finds_no_server_errors_or_schema_violations(fuzzed_daemon):
    daemon = fuzzed_daemon
    token = requests.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key)).json()
    resources = _existing_resources(daemon, token["access_token"])
    seed = os.environ.get("CARDVAULT_FUZZ_SEED") or (str(random.randrange(1, 2**31)) if HEAVY else "1")
    env = dict(
        os.environ, CARDVAULT_CLIENT_ID=daemon.client_id, CARDVAULT_API_KEY=daemon.api_key,
        CARDVAULT_TOKEN=token["access_token"], SCHEMATHESIS_HOOKS=str(HERE / "schemathesis_hooks.py"), **resources)
    report_dir = daemon.workdir / "schemathesis"
    command = [
        str(pathlib.Path(sys.executable).parent / "schemathesis"), "--config-file", str(HERE / "schemathesis.toml"),
        "run", str(ROOT / "docs" / "openapi.yaml"), "--url", daemon.base_url,
        "--checks", "all", "--mode", "all", "--max-examples", EXAMPLES, "--workers", "1", "--seed", seed,
        # A request left unanswered for 10 s counts as a lost connection, never retried.
        "--request-timeout", "10", "--request-retries", "0", "--no-color",
        "--report", "junit", "--report-dir", str(report_dir),
    ]
    run = subprocess.run(command, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=3000)
    output = run.stdout + run.stderr
    generated = re.findall(r"(\d+) generated", output)
    cases = int(generated[-1]) if generated else 0
    print("\nschemathesis: %d cases (%s examples per operation, seed %s); report in %s" % (cases, EXAMPLES, seed, report_dir))
    print(output[-2500:])
    assert run.returncode == 0, output[-8000:]
    assert "Errors:" not in output, output[-8000:]
    assert cases >= MINIMUM_CASES, "only %d cases (at least %d wanted)" % (cases, MINIMUM_CASES)
    assert daemon.process.poll() is None, "the daemon died during the run"
    assert requests.get(daemon.base_url + "/health", timeout=5).json()["status"] == "ok"
