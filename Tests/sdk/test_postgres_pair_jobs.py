"""Background work and store metrics of two daemons on one PostgreSQL database (Tests/sdk/postgres_support.py).

Hooks: the delivery engine runs on the one daemon that leads `hook-delivery` (an advisory lock), so with requests
spread over both daemons every event is delivered once, in order per resource; when the leader is SIGKILLed with
an event still failing, the other daemon takes the engine over and delivers it. The record sweeper and the
challenge sweeper likewise have one leader each (`cardvault_background_job_leader{job}`). The PostgreSQL store's
series (`cardvault_store_commit_seconds`, commits by outcome, conflicts, the pool, reconnects, in-doubt commits)
appear on each daemon's /metrics and move with the traffic, and no secret or database URI shows in them.
"""
import concurrent.futures
import json
import re
import signal
import time

import pytest
import requests

import sandbox_cards
import test_hooks
from postgres_support import DaemonPair
from test_hooks import Merchant, Receiver, verify

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
JOBS = ("challenge-sweeper", "hook-delivery", "record-sweeper")


def scrape(daemon):
    text = requests.get(daemon.base_url + "/metrics", timeout=10).text
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, "not a Prometheus sample: %r" % line
            samples[(match.group(1), match.group(2) or "")] = float(match.group(3))
    return samples, text


def leaders(pair, job):
    """The daemons whose /metrics say they lead `job` now."""
    return [d for d in pair.daemons if scrape(d)[0].get(("cardvault_background_job_leader", 'job="%s"' % job)) == 1]


def wait_for_leaders(pair, timeout=20):
    """{job: [its leader]} once every daemon has tried every job (its gauge is there) and one leads each."""
    deadline = time.time() + timeout
    while True:
        scrapes = {d.port: scrape(d)[0] for d in pair.daemons}
        tried = all(("cardvault_background_job_leader", 'job="%s"' % job) in samples
                    for samples in scrapes.values() for job in JOBS)
        found = {job: [d for d in pair.daemons
                       if scrapes[d.port].get(("cardvault_background_job_leader", 'job="%s"' % job)) == 1]
                 for job in JOBS}
        if tried and all(len(daemons) == 1 for daemons in found.values()):
            return found
        assert time.time() < deadline, "not exactly one leader per job: %r" % {
            job: [d.port for d in daemons] for job, daemons in found.items()}
        time.sleep(0.25)


@pytest.fixture(scope="module")
def receiver():
    instance = Receiver()
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def pair():
    instance = DaemonPair(extra_env={"CARDVAULT_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true",
                                     "CARDVAULT_HOOKS_RETRY_INTERVAL_SECONDS": "1",
                                     "CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS": "1"})
    yield instance
    instance.stop()


@pytest.fixture(scope="module")
def merchant(pair, receiver):
    merchant = Merchant(pair)  # through the round-robin proxy: requests alternate between the daemons
    first = requests.post(merchant.url("/hooks"), headers=merchant.auth, timeout=10,
                          json={"Url": receiver.base + "/created", "EventType": "PAYIN_NORMAL_CREATED"})
    assert first.status_code == 200, first.text
    merchant.secret = first.json()["Secret"]
    merchant.succeeded = merchant.hook(receiver.base + "/hooks/cardvault", "PAYIN_NORMAL_SUCCEEDED")
    return merchant


def test_each_job_has_one_leader_and_store_metrics_appear_without_secrets(pair):
    found = wait_for_leaders(pair)
    for daemon in pair.daemons:
        samples, text = scrape(daemon)
        for name in ("cardvault_store_commit_seconds_count", "cardvault_store_conflicts_total",
                     "cardvault_store_pool_waits_total", "cardvault_store_reconnects_total",
                     "cardvault_store_pool_queued"):
            assert (name, "") in samples, name
        # The default `database.poolSize` (README): the pair's daemons set none.
        assert samples[("cardvault_store_pool_connections", 'state="size"')] == 2
        assert samples[("cardvault_store_pool_connections", 'state="connected"')] >= 1
        assert samples[("cardvault_store_writable", "")] == 1
        for resolution in ("applied", "resent"):
            assert ("cardvault_store_in_doubt_commits_total", 'resolution="%s"' % resolution) in samples
        for job in JOBS:
            expected = 1 if found[job][0] is daemon else 0
            assert samples[("cardvault_background_job_leader", 'job="%s"' % job)] == expected
        # No database URI (it may hold a password), socket directory, API key or key material in the metrics.
        assert pair.database_url not in text and str(pair.cluster.directory) not in text
        assert "postgresql:" not in text and pair.api_key not in text
        log = daemon.log_path.read_text(errors="replace")
        assert pair.database_url not in log


def test_commit_metrics_move_with_requests_on_each_daemon(pair):
    before = [scrape(d)[0] for d in pair.daemons]
    merchant = Merchant(pair)
    for _ in range(4):
        merchant.sdk.NaturalUser(
            first_name="Met", last_name="Rics", email="m@example.com", birthday=188352000, nationality="FR",
            country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER",
            handler=merchant.handler).save()
    after = [scrape(d)[0] for d in pair.daemons]
    for old, new in zip(before, after):
        applied = ("cardvault_store_commits_total", 'outcome="applied"')
        assert new[applied] > old[applied]
        assert new[("cardvault_store_commit_seconds_count", "")] > old[("cardvault_store_commit_seconds_count", "")]
        assert new[("cardvault_store_commit_seconds_sum", "")] > old[("cardvault_store_commit_seconds_sum", "")]
        inf = ("cardvault_store_commit_seconds_bucket", 'le="+Inf"')
        assert new[inf] == new[("cardvault_store_commit_seconds_count", "")]


def test_conflicts_are_counted(pair):
    """16 concurrent updates of one user from both daemons, each with the version it read: the store answers
    conflicts (retried inside), and the daemons count them."""
    merchant = Merchant(pair)
    user = merchant.sdk.NaturalUser(
        first_name="Con", last_name="Flict", email="c@example.com", birthday=188352000, nationality="FR",
        country_of_residence="FR", terms_and_conditions_accepted=True, user_category="PAYER",
        handler=merchant.handler)
    user.save()
    before = sum(scrape(d)[0][("cardvault_store_conflicts_total", "")] for d in pair.daemons)
    auth = merchant.auth
    deadline = time.time() + 30
    while True:
        def update(index):
            daemon = pair.daemons[index % 2]
            return requests.put("%s/v2.01/%s/users/natural/%s" % (daemon.base_url, pair.client_id, user.id),
                                headers=auth, json={"Occupation": "job %d" % index}, timeout=30).status_code
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            statuses = list(pool.map(update, range(16)))
        assert all(status < 500 for status in statuses), statuses
        after = sum(scrape(d)[0][("cardvault_store_conflicts_total", "")] for d in pair.daemons)
        if after > before:
            break
        assert time.time() < deadline, "no conflict counted after concurrent updates of one record"


def payin(merchant):
    """test_hooks' pay-in, with a fresh number of the same sandbox alias each time (the risk engine's per-card
    velocity would otherwise challenge the later ones)."""
    test_hooks.FRICTIONLESS = sandbox_cards.fresh(FRICTIONLESS)
    return merchant.payin()


FRICTIONLESS = test_hooks.FRICTIONLESS


@pytest.fixture(scope="module", autouse=True)
def _restore_test_hooks_number():
    yield
    test_hooks.FRICTIONLESS = FRICTIONLESS


def _deliveries(receiver, resource_id):
    return [r for r in receiver.for_resource(resource_id) if r["status"] == 200]


def test_every_event_is_delivered_once_in_order_by_the_leader(merchant, receiver, pair):
    leader = wait_for_leaders(pair)["hook-delivery"][0]
    before = {d.port: scrape(d)[0].get(("cardvault_hook_deliveries_total", ""), 0) for d in pair.daemons}
    payins = [payin(merchant) for _ in range(8)]  # each one's requests alternate between the daemons
    for payin_id in payins:
        receiver.wait_for(payin_id, timeout=10)
        receiver.wait_for(payin_id, path="/created", timeout=10)
    time.sleep(1.5)  # a second delivery, if there were one, would come within a few poll intervals
    for payin_id in payins:
        hits = _deliveries(receiver, payin_id)
        kinds = [hit["params"]["EventType"] for hit in hits]
        assert sorted(kinds) == ["PAYIN_NORMAL_CREATED", "PAYIN_NORMAL_SUCCEEDED"], kinds  # once each
        assert kinds[0] == "PAYIN_NORMAL_CREATED"  # in order per resource
        assert all(verify(hit["signature"], hit["query"], merchant.secret) for hit in hits)
    after = {d.port: scrape(d)[0].get(("cardvault_hook_deliveries_total", ""), 0) for d in pair.daemons}
    assert after[leader.port] - before[leader.port] == 16
    other = [d for d in pair.daemons if d is not leader][0]
    assert after[other.port] == before[other.port]


def test_one_cards_pay_ins_through_both_daemons_count_toward_its_velocity(merchant, pair):
    """Each daemon keeps its own risk counters; on a shared database it reads the history again once a counter is a
    second old, so a card paying through the two daemons in turn meets the per-card velocity rule (more than 5
    earlier pay-ins in the window) as it would on one daemon. Without that, each daemon would see about half."""
    user, wallet, card_id = merchant.shopper(sandbox_cards.fresh(FRICTIONLESS))
    rule = ("cardvault_risk_rule_hits_total", 'rule="velocity.card"')
    before = sum(scrape(d)[0].get(rule, 0) for d in pair.daemons)
    for index in range(8):  # one request each: the proxy sends them to the daemons in turn
        time.sleep(1.1)
        payin = merchant.direct_payin(user, wallet, card_id, 100, "10.77.%d.%d" % (index, 10 + index))
        assert payin.status in ("SUCCEEDED", "CREATED", "FAILED"), payin.status
    after = sum(scrape(d)[0].get(rule, 0) for d in pair.daemons)
    assert after - before >= 1, "no daemon counted the card's pay-ins made through the other one"


def test_delivery_moves_to_the_other_daemon_when_the_leader_dies(merchant, receiver, pair):
    leader = wait_for_leaders(pair)["hook-delivery"][0]
    survivor = [d for d in pair.daemons if d is not leader][0]
    with receiver.lock:
        receiver.statuses["/hooks/cardvault"] = [500] * 1000  # keeps the event in the outbox, retried each second
    payin_id = payin(merchant)
    deadline = time.time() + 10
    while not [r for r in receiver.for_resource(payin_id) if r["status"] == 500]:
        assert time.time() < deadline, "the leader did not attempt the delivery"
        time.sleep(0.05)
    leader.process.send_signal(signal.SIGKILL)
    leader.process.wait(timeout=5)
    killed = time.time()
    with receiver.lock:
        receiver.statuses["/hooks/cardvault"] = []
    hits = receiver.wait_for(payin_id, timeout=20)
    assert hits[0]["at"] - killed < 20
    assert len(hits) == 1
    assert scrape(survivor)[0][("cardvault_background_job_leader", 'job="hook-delivery"')] == 1
    # Counted once the outbox entry is gone (just after the receiver's answer).
    deadline = time.time() + 5
    while scrape(survivor)[0][("cardvault_hook_deliveries_total", "")] < 1:
        assert time.time() < deadline, "the survivor did not count its delivery"
        time.sleep(0.1)
    # The record sweeper and the challenge sweeper move too.
    deadline = time.time() + 20
    while not all(leaders(pair=_Alive(survivor), job=job) for job in JOBS):
        assert time.time() < deadline, "the survivor did not take every job over"
        time.sleep(0.25)

    def logged_jobs():  # lines below warning reach the log in 200 ms batches
        return {json.loads(line)["job"] for line in survivor.log_path.read_text(errors="replace").splitlines()
                if '"leading background job"' in line}

    deadline = time.time() + 10
    while not logged_jobs() >= set(JOBS):
        assert time.time() < deadline, "the survivor logged leading only %r" % logged_jobs()
        time.sleep(0.2)


class _Alive:
    def __init__(self, daemon):
        self.daemons = [daemon]
