"""/metrics after SDK flows in one daemon: the business counters (tokenizations by result, pay-ins by status and
result code, 3-D Secure challenges, risk decisions), the store's and the build's series, and no secret in any of it;
the log lines of those requests carry their requestId, and 4xx lines their error code.

Each test scrapes before and after the flows it runs and checks the exact change, so it holds whatever ran before in
the session daemon (and the totals after a whole session, which `make test-sdk` runs, only add to it)."""
import json
import random
import re

import pytest
import requests
from requests.adapters import HTTPAdapter

from test_tokenization_cors import log_lines
from test_payins_e2e import CHALLENGED, DECLINED, FRICTIONLESS, answer_challenge, pay, payer

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@pytest.fixture
def sdk(mangopay_api):
    from mangopay import resources
    return resources


def scrape(daemon):
    """{(name, ((label, value), ...)): float} of one /metrics scrape, and the raw text. For a pair of daemons on one
    database (CARDVAULT_TEST_BACKEND=postgres-pair) each daemon is scraped directly and the samples are summed: the
    requests of a flow went to either, so the flow's counts are the sum of both daemons' changes."""
    samples = {}
    texts = []
    for instance in getattr(daemon, "daemons", [daemon]):
        text = requests.get(instance.base_url + "/metrics", timeout=10).text
        texts.append(text)
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            match = SAMPLE.match(line)
            assert match, "not a Prometheus sample: %r" % line
            labels = tuple(sorted(LABEL.findall(match.group(2) or "")))
            key = (match.group(1), labels)
            samples[key] = samples.get(key, 0.0) + float(match.group(3))
    return samples, "".join(texts)


def backend(daemon):
    return "postgresql" if hasattr(daemon, "daemons") else "file"


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


class _FromAddress(HTTPAdapter):
    """Connections from one loopback address of 127/8 (its own tokenization rate limit, whatever ran before)."""

    def __init__(self, address):
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def browser():
    session = requests.Session()
    address = "127.%d.%d.%d" % (random.randrange(1, 255), random.randrange(256), random.randrange(1, 255))
    session.mount("http://", _FromAddress(address))
    return session


BROWSER = browser()


def tokenize(registration, number, origin=None):
    headers = {"content-type": "application/x-www-form-urlencoded", "User-Agent": "metrics-test/1"}
    if origin:
        headers["Origin"] = origin
    return BROWSER.post(
        registration.card_registration_url,
        data={"data": registration.preregistration_data, "accessKeyRef": registration.access_key,
              "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": "123"}, headers=headers)


def luhn_valid(number):
    digits = [int(d) for d in number][::-1]
    return sum(d if i % 2 == 0 else (d * 2 - 9 if d * 2 > 9 else d * 2) for i, d in enumerate(digits)) % 10 == 0


def fresh_number(prefix, suffix, length=16):
    """A Luhn-valid number made for this test (`prefix`, random digits, `suffix`): its fingerprint has no history,
    so earlier tests' velocity and failures do not change its risk decision."""
    while True:
        middle = "".join(random.choice("0123456789") for _ in range(length - len(prefix) - len(suffix)))
        if luhn_valid(prefix + middle + suffix):
            return prefix + middle + suffix


def register_card(sdk, user, number):
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    answer = tokenize(registration, number)
    assert answer.text.startswith("data="), answer.text
    registration.registration_data = answer.text
    registration.save()
    return registration.card_id


def test_business_counters_move_with_the_flows(sdk, daemon):
    before, _ = scrape(daemon)
    user, wallet = payer(sdk)

    # Tokenizations: one refused by its number, one from a refused origin (the card is not read), then success.
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    unlisted = fresh_number("4111", "")  # not in the sandbox table: frictionless up to 50.00
    declining = fresh_number("497010", "0016")  # config/sandbox.json: 497010XXXXXX0016 declines with 101101
    assert tokenize(registration, "4970107111111118").text == "errorCode=02625"
    refused = tokenize(registration, unlisted, origin="https://evil.example")
    assert refused.status_code == 403
    ok = tokenize(registration, unlisted, origin="https://shop.example")
    assert ok.text.startswith("data=")
    registration.registration_data = ok.text
    registration.save()
    card_id = registration.card_id

    # Pay-ins: frictionless, declined, challenged then passed, challenged then failed.
    frictionless = pay(sdk, user, wallet, card_id, 1000)
    assert frictionless.status == "SUCCEEDED"
    declined_card = register_card(sdk, user, declining)
    declined = pay(sdk, user, wallet, declined_card, 1000)
    assert declined.status == "FAILED" and declined.result_code == "101101"
    challenged_card = register_card(sdk, user, fresh_number("4111", ""))
    passed = pay(sdk, user, wallet, challenged_card, 1000, secure_mode="FORCE")
    failed = pay(sdk, user, wallet, challenged_card, 1000, secure_mode="FORCE")
    assert passed.status == failed.status == "CREATED"
    assert answer_challenge(passed.secure_mode_redirect_url, "123456").status_code == 303
    assert answer_challenge(failed.secure_mode_redirect_url, "000000").status_code == 303
    assert sdk.PayIn.get(passed.id).status == "SUCCEEDED"
    assert sdk.PayIn.get(failed.id).result_code == "101301"

    after, text = scrape(daemon)
    assert delta(before, after, "cardvault_tokenizations_total", result="success") == 3  # 1 here, 2 by register_card
    assert delta(before, after, "cardvault_tokenizations_total", result="refused", code="02625") == 1
    assert delta(before, after, "cardvault_tokenizations_total", result="origin_refused") == 1

    payin = dict(kind="payin")
    assert delta(before, after, "cardvault_transactions_total", status="SUCCEEDED", result_code="000000", **payin) == 2
    assert delta(before, after, "cardvault_transactions_total", status="FAILED", result_code="101101", **payin) == 1
    assert delta(before, after, "cardvault_transactions_total", status="FAILED", result_code="101301", **payin) == 1
    assert delta(before, after, "cardvault_transactions_total", status="CREATED", result_code="", **payin) == 2

    assert delta(before, after, "cardvault_3ds_challenges_total", outcome="started") == 2
    assert delta(before, after, "cardvault_3ds_challenges_total", outcome="succeeded") == 1
    assert delta(before, after, "cardvault_3ds_challenges_total", outcome="failed") == 1
    assert delta(before, after, "cardvault_3ds_challenge_answer_seconds_count") == 2

    decisions = sum(delta(before, after, "cardvault_risk_decisions_total", decision=d)
                    for d in ("allow", "challenge", "block"))
    assert decisions == 4  # one per pay-in
    assert delta(before, after, "cardvault_risk_score_count") == 4
    assert "# TYPE cardvault_risk_rule_hits_total counter" in text

    # The store's series moved with the writes (the file store: group commits and fsyncs, segments; PostgreSQL:
    # commits and their latency); key versions and build info are there.
    if backend(daemon) == "file":
        assert delta(before, after, "cardvault_store_group_commit_records_count") > 0
        assert delta(before, after, "cardvault_store_fsync_seconds_count") > 0
        assert value(after, "cardvault_store_segments") >= 1
        assert value(after, "cardvault_store_damaged_records") == 0
    else:
        assert delta(before, after, "cardvault_store_commit_seconds_count") > 0
        assert delta(before, after, "cardvault_store_commits_total", outcome="applied") > 0
        assert value(after, "cardvault_store_writable") == 2  # both daemons
    assert value(after, "cardvault_data_key_versions_in_use") >= 1
    builds = [number for (name, labels), number in after.items()
              if name == "cardvault_build_info" and dict(labels).get("store") == backend(daemon)]
    assert builds == [len(getattr(daemon, "daemons", [daemon]))]


def test_metrics_never_carry_a_secret_or_an_identifier(sdk, daemon):
    user, _ = payer(sdk)
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    answer = tokenize(registration, FRICTIONLESS)
    assert answer.text.startswith("data="), answer.text
    token = requests.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key)).json()
    samples, text = scrape(daemon)
    secrets = [FRICTIONLESS, CHALLENGED, DECLINED, daemon.api_key, token["access_token"],
               registration.access_key, registration.preregistration_data, answer.text.split("=", 1)[1],
               user.id, registration.id]
    for secret in secrets:
        assert secret not in text, "a secret or identifier (%s...) is in /metrics" % secret[:4]
    assert not re.search(r"\d{12,}", text.replace("e+", "")), "a long digit run (a card number?) is in /metrics"
    # Every label value is one of the fixed vocabularies: words, codes, versions, route patterns.
    for (_, labels) in samples:
        for _, label_value in labels:
            assert re.fullmatch(r"[A-Za-z0-9_.:/+<> \-]*", label_value), "unexpected label value %r" % label_value


def test_request_log_lines_carry_request_id_and_4xx_error_code(sdk, daemon):
    user, _ = payer(sdk)
    registration = sdk.CardRegistration(user=user, currency="EUR")
    registration.save()
    answer = tokenize(registration, FRICTIONLESS)
    assert answer.text.startswith("data="), answer.text
    request_id = answer.headers["X-Request-Id"]
    bad = requests.post(daemon.base_url + "/v2.01/%s/users/natural" % daemon.client_id,
                        headers={"Authorization": "Bearer " + requests.post(
                            daemon.base_url + "/v2.01/oauth/token",
                            auth=(daemon.client_id, daemon.api_key)).json()["access_token"]},
                        json={"FirstName": "A", "LastName": "B", "Email": "not-an-email", "Nationality": "XX"})
    assert bad.status_code == 400
    bad_id = bad.headers["X-Request-Id"]
    lines = log_lines(daemon, lambda line: line.get("msg") == "request" and line.get("requestId") == bad_id)
    tokenized = [line for line in lines if line.get("msg") == "card tokenized"]
    assert tokenized and all(line.get("requestId") for line in tokenized)
    assert any(line.get("requestId") == request_id for line in tokenized)
    refused = [line for line in lines if line.get("msg") == "request" and line.get("requestId") == bad_id]
    assert refused, "no log line for the 400"
    assert refused[-1]["status"] == 400 and refused[-1]["route"] == "/v2.01/:clientId/users/natural"
    assert refused[-1]["error"] == "param_error[Email,Nationality]"
    assert all("not-an-email" not in json.dumps(line) for line in refused)


def test_the_grafana_dashboard_queries_only_series_the_daemon_exposes(daemon):
    """docs/grafana/cardvault-dashboard.json: every metric its panels query is in a scrape (with its # TYPE)."""
    import pathlib
    dashboard = json.loads((pathlib.Path(__file__).resolve().parents[2] / "docs" / "grafana" /
                            "cardvault-dashboard.json").read_text())
    _, text = scrape(daemon)
    declared = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    queried = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            queried |= set(re.findall(r"\b(cardvault_[a-z0-9_]+)", target["expr"]))
    assert queried
    # The file store's own panels (group commits, fsync, segments, compaction) are empty on PostgreSQL.
    file_store_only = {"cardvault_store_group_commit_records", "cardvault_store_fsync_seconds",
                       "cardvault_store_segments", "cardvault_store_log_bytes", "cardvault_store_compacted_segments_total",
                       "cardvault_store_damaged_records"}
    # The PostgreSQL store's panels (commits, pool, failover, job leaders) are empty on the file store.
    postgres_only = {"cardvault_store_commit_seconds", "cardvault_store_commits_total", "cardvault_store_conflicts_total",
                     "cardvault_store_pool_connections", "cardvault_store_pool_queued", "cardvault_store_pool_waits_total",
                     "cardvault_store_reconnects_total", "cardvault_store_in_doubt_commits_total",
                     "cardvault_store_writable", "cardvault_background_job_leader"}
    assert postgres_only <= {re.sub(r"_(bucket|sum|count)$", "", name) for name in queried}
    for name in queried:
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if backend(daemon) != "file" and base in file_store_only:
            assert base not in declared
            continue
        if backend(daemon) == "file" and base in postgres_only:
            continue
        assert name in declared or base in declared, "%s is queried by the dashboard but not exposed" % name
