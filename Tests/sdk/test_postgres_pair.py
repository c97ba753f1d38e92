"""Two daemons on one PostgreSQL database (databaseURL), with the official SDK: a card registered through A is
read and paid through B; 16 concurrent 3-D Secure answers to one pay-in, half to A and half to B, credit the
wallet once; an idempotency key replays across daemons; SIGKILL of a daemon under registration load loses no
acknowledged card; SIGKILL of the primary with a synchronous standby promoted loses none either, and both
daemons serve again within 10 s; no card number or CVC in the database files, the WAL or pg_dump output."""
import concurrent.futures
import os
import re
import pathlib
import random
import signal
import subprocess
import threading
import time
import uuid

import pytest
import requests

from postgres_support import BIN, DaemonPair, PostgresCluster, as_server_user
from test_payins_e2e import CHALLENGED, FRICTIONLESS, answer_challenge, balance, pay, payer, register_card

# Numbers only this module registers (the scan looks for them).
LOAD_PREFIX = "497010"
SECURITY_CODE = b"cardCvx=123"


def luhn_complete(partial):
    digits = [int(d) for d in partial]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2 == 0:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return partial + str((10 - total % 10) % 10)


def load_number(rng):
    # Frictionless sandbox numbers end in anything but the decline suffix.
    return luhn_complete(LOAD_PREFIX + "".join(str(rng.randrange(10)) for _ in range(8)) + "5")


USED_NUMBERS = [FRICTIONLESS, CHALLENGED]


@pytest.fixture(scope="module")
def pair():
    instance = DaemonPair()
    yield instance
    instance.stop()


def handler_for(pair, daemon):
    from mangopay.api import APIRequest
    return APIRequest(client_id=pair.client_id, apikey=pair.api_key, sandbox=True,
                      api_sandbox_url=daemon.base_url + "/v2.01/")


@pytest.fixture(scope="module")
def sdk(pair):
    import mangopay
    from mangopay import resources
    mangopay.client_id = pair.client_id
    mangopay.apikey = pair.api_key
    mangopay.api_sandbox_url = pair.base_url + "/v2.01/"
    mangopay.api_url = pair.base_url + "/v2.01/"
    mangopay.sandbox = True
    return resources


def test_card_registered_through_a_is_read_and_paid_through_b(pair, sdk):
    a, b = handler_for(pair, pair.a), handler_for(pair, pair.b)
    user, wallet = payer(sdk, handler=a)
    card_id, reference = register_card(sdk, user, FRICTIONLESS, "Mozilla/5.0 (pair)", handler=a)
    card = sdk.Card.get(card_id, handler=b)
    assert card.alias.endswith(FRICTIONLESS[-4:]) and card.validity in ("VALID", "UNKNOWN")
    payin = pay(sdk, user, wallet, card_id, 1500, handler=b)
    assert payin.status == "SUCCEEDED", payin.result_message
    assert balance(sdk, wallet, handler=a) == 1500
    assert balance(sdk, wallet, handler=b) == 1500


def test_sixteen_concurrent_challenge_answers_over_both_daemons_credit_once(pair, sdk):
    a = handler_for(pair, pair.a)
    user, wallet = payer(sdk, handler=a)
    card_id, _ = register_card(sdk, user, CHALLENGED, "Mozilla/5.0 (pair)", handler=a)
    payin = pay(sdk, user, wallet, card_id, 2300, secure_mode="FORCE", handler=a)
    assert payin.status == "CREATED" and payin.secure_mode_redirect_url
    path = payin.secure_mode_redirect_url.split("/", 3)[3]
    urls = [(pair.a if index % 2 == 0 else pair.b).base_url + "/" + path for index in range(16)]
    barrier = threading.Barrier(16)

    def answer(url):
        barrier.wait()
        return answer_challenge(url, "123456").status_code

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(answer, urls))
    assert all(status in (303, 200, 409, 410) for status in statuses), statuses
    assert 303 in statuses
    deadline = time.time() + 10
    while sdk.PayIn.get(payin.id, handler=a).status == "CREATED" and time.time() < deadline:
        time.sleep(0.1)
    assert sdk.PayIn.get(payin.id, handler=handler_for(pair, pair.b)).status == "SUCCEEDED"
    assert balance(sdk, wallet, handler=a) == 2300
    assert balance(sdk, wallet, handler=handler_for(pair, pair.b)) == 2300


def test_idempotency_key_replays_across_daemons(pair, sdk):
    a, b = handler_for(pair, pair.a), handler_for(pair, pair.b)
    user, wallet = payer(sdk, handler=a)
    card_id, _ = register_card(sdk, user, FRICTIONLESS, "Mozilla/5.0 (pair)", handler=b)
    key = str(uuid.uuid4())
    ip = "10.16.16.16"  # the same request twice (a different body under the same key is a 409)
    first = pay(sdk, user, wallet, card_id, 700, handler=a, idempotency_key=key, ip=ip)
    second = pay(sdk, user, wallet, card_id, 700, handler=b, idempotency_key=key, ip=ip)
    assert first.id == second.id
    assert balance(sdk, wallet, handler=b) == 700


def _registration_load(sdk, pair, daemons, seconds, rng, stop_event=None):
    """Registers cards from 4 threads against `daemons` (in turn); returns the acknowledged (card id, number)."""
    acknowledged = []
    lock = threading.Lock()
    user, _ = payer(sdk, handler=handler_for(pair, daemons[0]))
    end = time.time() + seconds

    def worker(index):
        local = random.Random(rng.random())
        count = 0
        while time.time() < end and not (stop_event and stop_event.is_set()):
            daemon = daemons[(index + count) % len(daemons)]
            count += 1
            number = load_number(local)
            try:
                card_id, _ = register_card(sdk, user, number, "Mozilla/5.0 (load)", handler=handler_for(pair, daemon))
            except Exception:
                continue  # not acknowledged (daemon or database down): not counted
            with lock:
                acknowledged.append((card_id, number))
                USED_NUMBERS.append(number)

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return acknowledged


def test_sigkill_of_a_daemon_under_load_loses_no_acknowledged_card(sdk):
    instance = DaemonPair()
    try:
        rng = random.Random(16)
        killer = threading.Timer(2.0, lambda: instance.a.process.send_signal(signal.SIGKILL))
        killer.start()
        acknowledged = _registration_load(sdk, instance, [instance.a, instance.b], 4.0, rng)
        killer.join()
        assert instance.a.process.wait(timeout=5) == -signal.SIGKILL
        assert len(acknowledged) > 10
        b = handler_for(instance, instance.b)
        for card_id, number in acknowledged:
            assert sdk.Card.get(card_id, handler=b).alias.endswith(number[-4:])
    finally:
        instance.stop()


def test_primary_sigkill_with_synchronous_standby_promoted_loses_nothing_and_both_serve_within_10s(sdk):
    primary = PostgresCluster(settings={"synchronous_standby_names": "'*'", "wal_level": "replica"}).start()
    standby = PostgresCluster(initdb=False)
    as_server_user([BIN + "/pg_basebackup", "-D", str(standby.data), "-R", "-X", "stream", "-c", "fast",
                    "-h", primary.host, "-p", str(primary.port), "-U", "postgres"])
    standby.start()
    deadline = time.time() + 20
    while primary.psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") != "1":
        assert time.time() < deadline, "the standby did not become synchronous"
        time.sleep(0.2)
    url = "postgresql:///postgres?host=%s,%s&port=%d,%d&user=postgres&target_session_attrs=read-write" % (
        primary.host, standby.host, primary.port, standby.port)
    instance = DaemonPair(cluster=primary, database_url=url)
    try:
        rng = random.Random(1616)
        stop = threading.Event()
        killed_at = []

        def crash_and_promote():
            primary.kill()
            killed_at.append(time.time())
            as_server_user([BIN + "/pg_ctl", "-D", str(standby.data), "-w", "promote"])

        timer = threading.Timer(2.0, crash_and_promote)
        timer.start()
        acknowledged = _registration_load(sdk, instance, [instance.a, instance.b], 5.0, rng, stop)
        timer.join()
        assert len(acknowledged) > 5
        # Both daemons serve again (a write and a read through each) within 10 s of the crash.
        for daemon in (instance.a, instance.b):
            handler = handler_for(instance, daemon)
            while True:
                try:
                    payer(sdk, handler=handler)
                    break
                except Exception:
                    assert time.time() - killed_at[0] < 10, "daemon did not serve again within 10 s"
                    time.sleep(0.2)
            assert time.time() - killed_at[0] < 10
        b = handler_for(instance, instance.b)
        for card_id, number in acknowledged:
            assert sdk.Card.get(card_id, handler=b).alias.endswith(number[-4:])
        _scan_cluster(standby, [number for _, number in acknowledged])
    finally:
        instance.stop()
        primary.remove()
        standby.remove()


def _binary():
    return os.environ.get("CARDVAULT_BIN", str(pathlib.Path(__file__).resolve().parents[2] / ".build/release/cardvault"))


def test_serve_refuses_a_database_without_the_schema_naming_db_migrate(tmp_path):
    cluster = PostgresCluster().start()
    try:
        subprocess.run([_binary(), "keys", "init", "--keys-dir", str(tmp_path / "keys")], check=True, capture_output=True)
        env = dict(os.environ, CARDVAULT_DATABASE_URL=cluster.url(), CARDVAULT_KEYS_DIR=str(tmp_path / "keys"),
                   CARDVAULT_DATA_DIR=str(tmp_path / "data"), CARDVAULT_LISTEN="127.0.0.1:0")
        status = subprocess.run([_binary(), "db", "status"], env=env, capture_output=True, text=True, timeout=30)
        assert status.returncode == 1 and "schema version 0" in status.stdout
        refused = subprocess.run([_binary(), "serve"], env=env, capture_output=True, text=True, timeout=30)
        assert refused.returncode == 78, refused.stderr
        assert "cardvault db migrate" in refused.stderr
        assert cluster.url() not in refused.stderr + refused.stdout  # the URI (it may hold a password) is never shown
        migrated = subprocess.run([_binary(), "db", "migrate"], env=env, capture_output=True, text=True, timeout=30)
        # Up to the binary's newest schema version (3 since the key_version index was dropped), from 0 in one run.
        assert migrated.returncode == 0 and re.search(r"from version 0 to ([3-9]|\d{2,})\b", migrated.stdout), \
            migrated.stdout
        again = subprocess.run([_binary(), "db", "migrate"], env=env, capture_output=True, text=True, timeout=30)
        assert again.returncode == 0 and "already" in again.stdout
    finally:
        cluster.remove()


def test_key_rotation_through_one_daemon_is_seen_by_the_other_within_a_second(pair, sdk):
    env = dict(os.environ, CARDVAULT_DATABASE_URL=pair.database_url, CARDVAULT_KEYS_DIR=str(pair.keys))

    def status(daemon):
        result = subprocess.run([_binary(), "keys", "status", "--json", "--data-dir", str(daemon.data_dir),
                                 "--keys-dir", str(pair.keys)], env=env, capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        import json
        return json.loads(result.stdout)["currentVersion"]

    before = status(pair.b)
    rotated = subprocess.run([_binary(), "keys", "rotate", "--data-dir", str(pair.a.data_dir), "--keys-dir", str(pair.keys)],
                             env=env, capture_output=True, text=True, timeout=30)
    assert rotated.returncode == 0, rotated.stderr
    started = time.time()
    deadline = started + 1.0
    while status(pair.b) == before:
        assert time.time() < deadline, "daemon B did not see the rotation within a second"
        time.sleep(0.05)
    # Both daemons write under the new version and read the old records.
    card_id, _ = register_card(sdk, payer(sdk, handler=handler_for(pair, pair.b))[0], FRICTIONLESS, "Mozilla/5.0 (rot)",
                               handler=handler_for(pair, pair.b))
    assert sdk.Card.get(card_id, handler=handler_for(pair, pair.a)).id == card_id


def test_the_sweeper_runs_on_one_daemon_and_moves_on_when_it_dies(tmp_path, sdk):
    import json
    sandbox = json.loads((pathlib.Path(__file__).resolve().parents[2] / "config" / "sandbox.json").read_text())
    sandbox["challengeWindowSeconds"] = 2
    path = tmp_path / "sandbox.json"
    path.write_text(json.dumps(sandbox))
    instance = DaemonPair(extra_env={"CARDVAULT_SANDBOX_FILE": str(path)})
    try:
        def swept(daemon):
            lines = daemon.log_path.read_text(errors="replace").splitlines()
            return sum(json.loads(text)["count"] for text in lines if '"msg":"expired 3-D Secure challenges"' in text)

        def leads(daemon):
            # The challenge sweeper's leader (hook delivery and the record sweeper have leaders of their own).
            return any('"msg":"leading background job"' in text and json.loads(text).get("job") == "challenge-sweeper"
                       for text in daemon.log_path.read_text(errors="replace").splitlines())

        deadline = time.time() + 15
        while not (leads(instance.a) or leads(instance.b)):
            assert time.time() < deadline
            time.sleep(0.2)
        leader, other = (instance.a, instance.b) if leads(instance.a) else (instance.b, instance.a)
        assert not leads(other)
        handler = handler_for(instance, other)
        user, wallet = payer(sdk, handler=handler)
        card_id, _ = register_card(sdk, user, CHALLENGED, "abandoning-browser/2", handler=handler)
        first = pay(sdk, user, wallet, card_id, 1000, handler=handler)
        deadline = time.time() + 20
        while swept(leader) < 1:
            assert time.time() < deadline, "the leading daemon did not sweep"
            time.sleep(0.25)
        assert swept(other) == 0
        assert sdk.PayIn.get(first.id, handler=handler).result_code == "101304"
        # The leader dies: the other daemon takes the sweeper over.
        leader.process.send_signal(signal.SIGKILL)
        leader.process.wait(timeout=5)
        second = pay(sdk, user, wallet, card_id, 1000, handler=handler)
        deadline = time.time() + 25
        while swept(other) < 1:
            assert time.time() < deadline, "no daemon took the sweeper over"
            time.sleep(0.25)
        assert sdk.PayIn.get(second.id, handler=handler).result_code == "101304"
        assert balance(sdk, wallet, handler=handler) == 0
    finally:
        instance.stop()


def _encodings(text):
    yield text.encode("ascii")
    yield text.encode("utf-16-le")
    if text.isdigit() and len(text) % 2 == 0:
        yield bytes(int(text[i]) << 4 | int(text[i + 1]) for i in range(0, len(text), 2))


def _scan_cluster(cluster, numbers):
    """No number nor the security code in any file of the cluster (tables, WAL, logs) nor in pg_dump output."""
    cluster.psql("CHECKPOINT")
    dump = subprocess.run([BIN + "/pg_dump", "-d", cluster.url()], check=True, capture_output=True).stdout
    assert b"cardvault_records" in dump
    blobs = [("pg_dump", dump)]
    for path in pathlib.Path(cluster.data).rglob("*"):
        if path.is_file():
            blobs.append((str(path.relative_to(cluster.data)), path.read_bytes()))
    assert any(name.startswith("pg_wal/") for name, _ in blobs)
    for name, content in blobs:
        assert SECURITY_CODE not in content, "security code found in " + name
        for number in numbers:
            for encoded in _encodings(number):
                assert encoded not in content, "%s... found in %s" % (number[:6], name)


def test_zz_no_pan_or_cvc_in_database_files_wal_or_pg_dump(pair):
    _scan_cluster(pair.cluster, USED_NUMBERS)
