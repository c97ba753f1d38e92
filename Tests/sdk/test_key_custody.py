"""Key custody (docs/key-custody.md), against the release binary: a shares install starts sealed and opens only with
the threshold of operator shares; a copy of its data and keys directories opens no card offline (the attack of
offline_attack.py, which does open a key-file install's copy); rotations and rekeys leave no old key material on
disk; while serving, the master key and the data keys sit only in the locked, not-dumped arena, and after
`operator seal` nowhere in the process; no share or key reaches a log, an answer or the audit file.

The shares are checked independently: this file rebuilds the master key from them with its own GF(2^8) Lagrange
interpolation (Shamir's scheme as published), and opens the keyring with it to find the data keys."""
import base64
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

import pytest
import requests
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import offline_attack
from conftest import ROOT, _free_port

BINARY = os.environ.get("CARDVAULT_BIN", str(ROOT / ".build" / "release" / "cardvault"))
CARDS = [("4970107111111119", "CB_VISA_MASTERCARD", "123"), ("5555555555554444", "CB_VISA_MASTERCARD", "123")]


# --- Shamir over GF(2^8) (x^8 + x^4 + x^3 + x + 1), written from the scheme, not from CardVault's code ---

def gf_mul(a, b):
    product = 0
    while b:
        if b & 1:
            product ^= a
        a = ((a << 1) ^ 0x11B) if a & 0x80 else (a << 1)
        b >>= 1
    return product


def gf_inv(a):
    return next(x for x in range(1, 256) if gf_mul(a, x) == 1)


def parse_share(line):
    match = re.fullmatch(r"cvs1-(\d+)-(\d+)-([0-9a-f]{64})-([0-9a-f]{6})", line.strip())
    assert match, line[:8]
    return int(match.group(1)), int(match.group(2)), bytes.fromhex(match.group(3)), match.group(4)


def combine(lines):
    shares = [parse_share(line) for line in lines]
    secret = bytearray(32)
    for j, (_, xj, yj, _) in enumerate(shares):
        weight = 1
        for m, (_, xm, _, _) in enumerate(shares):
            if m != j:
                weight = gf_mul(weight, gf_mul(xm, gf_inv(xm ^ xj)))
        for position in range(32):
            secret[position] ^= gf_mul(yj[position], weight)
    return bytes(secret)


def master_key(keys_dir, lines):
    """The shares rebuild the unseal key; it opens the master key of the custody record."""
    custody = json.loads((pathlib.Path(keys_dir) / "custody.json").read_text())
    box = base64.b64decode(custody["wrappedMaster"])
    return AESGCM(combine(lines)).decrypt(box[:12], box[12:], b"cardvault master key v1")


def data_keys(data_dir, master):
    """Every live data key of the file keyring, opened with `master`."""
    ring = json.loads((pathlib.Path(data_dir) / "keyring.json").read_text())
    keys = []
    for entry in ring["dataKeys"]:
        if entry.get("wrapped"):
            box = base64.b64decode(entry["wrapped"])
            label = ("cardvault data key v%d" % entry["version"]).encode()
            keys.append(AESGCM(master).decrypt(box[:12], box[12:], label))
    return keys


def encodings(secret):
    """The forms a key or share could leak in: raw, hex (both cases), base64."""
    return [secret, secret.hex().encode(), secret.hex().upper().encode(), base64.b64encode(secret)]


# --- An install: a working directory with data/ and keys/, the CLI and a daemon on it ---

class Install:
    def __init__(self, extra_env=None):
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="cardvault-custody-"))
        self.data = self.workdir / "data"
        self.keys = self.workdir / "keys"
        self.port = _free_port()
        self.base_url = "http://127.0.0.1:%d" % self.port
        self.env = dict(os.environ)
        self.env.update({
            "CARDVAULT_LISTEN": "127.0.0.1:%d" % self.port, "CARDVAULT_PUBLIC_URL": self.base_url,
            "CARDVAULT_DATA_DIR": str(self.data), "CARDVAULT_KEYS_DIR": str(self.keys),
        })
        self.env.update(extra_env or {})
        self.process = None
        self.credentials = None
        self.starts = 0

    def cli(self, *args, stdin=None):
        # The working directory holds no config/cardvault.json: the custody comes from the keys directory.
        return subprocess.run([BINARY, *args], cwd=self.workdir, env=self.env, input=stdin, capture_output=True,
                              text=True, timeout=120)

    def start(self):
        self.starts += 1
        self.out = self.workdir / ("serve-%d.out" % self.starts)
        self.err = self.workdir / ("serve-%d.log" % self.starts)
        self.phases = 0
        self.process = subprocess.Popen([BINARY, "serve"], cwd=self.workdir, env=self.env,
                                        stdout=open(self.out, "wb"), stderr=open(self.err, "wb"))
        self.wait_for(lambda: "serving on" in self.out.read_text())

    def wait_for(self, condition, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError("cardvault exited: " + self.err.read_text()[-2000:])
            if condition():
                return
            time.sleep(0.05)
        raise AssertionError("timed out; log: " + self.err.read_text()[-2000:])

    def unseal(self, line):
        return self.cli("operator", "unseal", stdin=line + "\n")

    def serving(self):
        """Waits until the daemon serves unsealed (its next "cardvault serving on" line, printed after the
        development client's credentials on the first start), and picks up those credentials."""
        self.phases += 1
        self.wait_for(lambda: [line.startswith("cardvault serving on")
                               for line in self.out.read_text().splitlines()].count(True) >= self.phases)
        assert self.health()[0] == 200
        text = self.out.read_text()
        if "ClientId=" in text:
            fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
            self.credentials = fields["ClientId"], fields["ApiKey"]

    def health(self):
        try:
            answer = requests.get(self.base_url + "/health", timeout=5)
        except requests.ConnectionError:
            return None, None
        return answer.status_code, answer.json()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None

    def logs(self):
        return b"".join(path.read_bytes() for path in self.workdir.glob("serve-*"))

    def copy(self):
        """What a thief with a backup of both directories holds."""
        stolen = pathlib.Path(tempfile.mkdtemp(prefix="cardvault-stolen-"))
        shutil.copytree(self.data, stolen / "data", ignore=shutil.ignore_patterns("admin.sock"))
        shutil.copytree(self.keys, stolen / "keys")
        return stolen

    def remove(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def register_card(base_url, credentials, number, card_type, cvx):
    client, api_key = credentials
    token = requests.post(base_url + "/v2.01/oauth/token", auth=(client, api_key),
                          data={"grant_type": "client_credentials"}, timeout=10).json()["access_token"]
    headers = {"Authorization": "Bearer " + token}
    api = base_url + "/v2.01/" + client
    user = requests.post(api + "/users/natural", headers=headers, timeout=10, json={
        "FirstName": "Ada", "LastName": "Lovelace", "Email": "ada@example.com", "Birthday": 188352000,
        "Nationality": "FR", "CountryOfResidence": "FR", "TermsAndConditionsAccepted": True,
        "UserCategory": "PAYER"}).json()["Id"]
    registration = requests.post(api + "/cardregistrations", headers=headers, timeout=10,
                                 json={"UserId": user, "Currency": "EUR", "CardType": card_type}).json()
    tokenized = requests.post(registration["CardRegistrationURL"], timeout=10, data={
        "data": registration["PreregistrationData"], "accessKeyRef": registration["AccessKey"],
        "cardNumber": number, "cardExpirationDate": "1229", "cardCvx": cvx})
    assert tokenized.status_code == 200 and tokenized.text.startswith("data="), tokenized.text
    done = requests.put(api + "/cardregistrations/" + registration["Id"], headers=headers, timeout=10,
                        json={"RegistrationData": tokenized.text}).json()
    assert done["Status"] == "VALIDATED", done
    return done["CardId"]


def read_card(base_url, credentials, card_id):
    client, api_key = credentials
    token = requests.post(base_url + "/v2.01/oauth/token", auth=(client, api_key),
                          data={"grant_type": "client_credentials"}, timeout=10).json()["access_token"]
    return requests.get(base_url + "/v2.01/%s/cards/%s" % (client, card_id), timeout=10,
                        headers={"Authorization": "Bearer " + token})


def admin_call(data_dir, command, arguments):
    """One command on the daemon's admin socket, as the CLI sends it (one JSON line each way)."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(pathlib.Path(data_dir) / "admin.sock"))
        sock.sendall((json.dumps({"command": command, "arguments": arguments}) + "\n").encode())
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = sock.recv(65536)
            assert chunk, "the daemon closed the admin socket"
            reply += chunk
    answer = json.loads(reply.splitlines()[-1])
    assert answer.get("ok"), answer
    return answer["result"]


def init_shares(install, shares=3, threshold=2):
    made = install.cli("keys", "init", "--shares", str(shares), "--threshold", str(threshold), "--json")
    assert made.returncode == 0, made.stderr
    result = json.loads(made.stdout)
    return [share["share"] for share in result["keyShares"]], result


@pytest.fixture
def shares_install():
    install = Install()
    yield install
    install.remove()


def test_init_prints_shares_once_and_stores_only_their_check_value(shares_install):
    lines, result = init_shares(shares_install, shares=5, threshold=3)
    assert len(lines) == 5 and result["threshold"] == 3 and result["shares"] == 5
    indexes = sorted(parse_share(line)[1] for line in lines)
    assert indexes == [1, 2, 3, 4, 5]
    unseal_key = combine(lines[1:4])
    assert combine([lines[0], lines[2], lines[4]]) == unseal_key  # any 3 of the 5
    assert combine(lines[:2]) != unseal_key  # 2 are not enough
    master = master_key(shares_install.keys, lines[1:4])
    # Each share's printed check value is 3 bytes of AES-256-ECB of a zero block under it.
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    for share in result["keyShares"]:
        raw = parse_share(share["share"])[2]
        encryptor = Cipher(algorithms.AES(raw), modes.ECB()).encryptor()
        assert encryptor.update(bytes(16))[:3].hex() == share["checkValue"] == parse_share(share["share"])[3]
    assert sorted(os.listdir(shares_install.keys)) == ["custody.json"]
    custody = json.loads((shares_install.keys / "custody.json").read_text())
    assert set(custody) == {"format", "provider", "threshold", "shares", "masterCheckValue", "wrappedMaster"}
    assert (custody["provider"], custody["threshold"], custody["shares"]) == ("shares", 3, 5)
    assert custody["masterCheckValue"] == result["masterCheckValue"]
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    assert Cipher(algorithms.AES(master), modes.ECB()).encryptor().update(bytes(16))[:3].hex() == custody[
        "masterCheckValue"]
    assert data_keys(shares_install.data, master)  # the keyring opens with the master key the shares open
    on_disk = b"".join(path.read_bytes() for path in shares_install.workdir.rglob("*") if path.is_file())
    for secret in [master, unseal_key] + [parse_share(line)[2] for line in lines]:
        for form in encodings(secret):
            assert form not in on_disk
    again = shares_install.cli("keys", "init", "--shares", "3", "--threshold", "2")
    assert again.returncode == 1 and "exists" in again.stderr


@pytest.mark.parametrize("arguments", [["--shares", "3", "--threshold", "1"], ["--shares", "2", "--threshold", "3"],
                                       ["--shares", "17", "--threshold", "2"], ["--shares", "3"]])
def test_init_refuses_impossible_share_parameters(shares_install, arguments):
    made = shares_install.cli("keys", "init", *arguments)
    assert made.returncode == 64, made.stderr
    assert not shares_install.keys.exists() or not os.listdir(shares_install.keys)


def test_sealed_start_threshold_unseal_restart_and_seal(shares_install):
    install = shares_install
    lines, _ = init_shares(install)
    install.start()
    status, body = install.health()
    assert status == 503 and body == {"status": "sealed", "keyCustody": "shares",
                                      "unseal": {"progress": 0, "threshold": 2}}
    metrics = requests.get(install.base_url + "/metrics", timeout=5)
    assert metrics.status_code == 200 and "cardvault_sealed 1" in metrics.text
    for method, path in [("POST", "/v2.01/oauth/token"), ("GET", "/v2.01/dev/users"), ("GET", "/nowhere"),
                         ("POST", "/tokenize/x")]:
        answer = requests.request(method, install.base_url + path, timeout=5)
        assert answer.status_code == 503, (path, answer.status_code)
        assert "sealed" in answer.json()["Message"]
    # A mistyped share is refused at once, naming its index; nothing is counted.
    _, index, raw, kcv = parse_share(lines[1])
    typo = "cvs1-2-%d-%s-%s" % (index, bytes([raw[0] ^ 1]).hex() + raw[1:].hex(), kcv)
    refused = install.unseal(typo)
    assert refused.returncode == 1 and ("share %d does not match its check value" % index) in refused.stderr
    assert install.health()[1]["unseal"]["progress"] == 0
    # K - 1 shares leave it sealed; a repeated index is refused.
    first = install.unseal(lines[0])
    assert first.returncode == 0 and "1 of 2" in first.stdout
    repeated = install.unseal(lines[0])
    assert repeated.returncode == 1 and "given already" in repeated.stderr
    assert install.health() == (503, {"status": "sealed", "keyCustody": "shares",
                                      "unseal": {"progress": 1, "threshold": 2}})
    assert requests.post(install.base_url + "/v2.01/oauth/token", timeout=5).status_code == 503
    # The threshold unseals it; it serves.
    second = install.unseal(lines[2])
    assert second.returncode == 0 and "unsealed" in second.stdout
    install.serving()
    assert install.health() == (200, {"status": "ok", "keyCustody": "shares"})
    card = register_card(install.base_url, install.credentials, *CARDS[0])
    # A restart is sealed again; other shares open it, and the card is there.
    install.stop()
    install.start()
    assert install.health()[0] == 503
    assert install.unseal(lines[1]).returncode == 0 and install.unseal(lines[2]).returncode == 0
    install.serving()
    assert read_card(install.base_url, install.credentials, card).json()["Id"] == card
    # `operator seal` drops the keys: sealed again, until the threshold is given again.
    sealed = install.cli("operator", "seal")
    assert sealed.returncode == 0, sealed.stderr
    install.wait_for(lambda: install.health()[0] == 503)
    assert install.cli("operator", "status").returncode == 2
    assert install.cli("keys", "list").returncode == 1  # the keys are not in memory
    assert install.unseal(lines[0]).returncode == 0 and install.unseal(lines[1]).returncode == 0
    install.serving()
    assert read_card(install.base_url, install.credentials, card).status_code == 200
    # The audit file: each share accepted or refused (with its index), the unseals and the seal, by uid.
    events = [json.loads(line) for line in (install.data / "custody-audit.log").read_text().splitlines()]
    kinds = [event["event"] for event in events]
    assert kinds[0] == "keys.init"
    assert kinds.count("unsealed") == 3 and kinds.count("sealed") == 1
    assert {"event": "share.refused", "reason": "checkValue"}.items() <= events[1].items()
    assert any(e["event"] == "share.refused" and e.get("reason") == "repeatedIndex" and e["index"] == 1 for e in events)
    assert all(event["uid"] == os.getuid() for event in events)
    # No share and no key in the logs, the answers the CLI printed, or the audit file.
    master = master_key(install.keys, lines[:2])
    leaked = install.logs() + (install.data / "custody-audit.log").read_bytes()
    for secret in [master] + data_keys(install.data, master) + [parse_share(line)[2] for line in lines]:
        for form in encodings(secret):
            assert form not in leaked


def test_wrong_set_of_shares_is_refused_and_progress_reset(shares_install):
    lines, _ = init_shares(shares_install)
    other = Install()
    try:
        foreign, _ = init_shares(other)  # a valid share set of another vault, same threshold
    finally:
        other.remove()
    shares_install.start()
    assert shares_install.unseal(lines[0]).returncode == 0
    refused = shares_install.unseal(foreign[1])
    assert refused.returncode == 1 and "progress was reset" in refused.stderr
    assert shares_install.health() == (503, {"status": "sealed", "keyCustody": "shares",
                                             "unseal": {"progress": 0, "threshold": 2}})
    wrong_threshold = Install()
    try:
        three, _ = init_shares(wrong_threshold, shares=3, threshold=3)
    finally:
        wrong_threshold.remove()
    refused = shares_install.unseal(three[0])
    assert refused.returncode == 1 and "needing 3 shares" in refused.stderr
    assert shares_install.unseal(lines[0]).returncode == 0 and shares_install.unseal(lines[1]).returncode == 0
    shares_install.serving()


def test_a_backup_opens_cards_offline_only_in_file_custody():
    # File custody (development): the copy opens every card.
    plain = Install()
    try:
        plain.start()
        plain.serving()
        numbers = {number for number, _, _ in CARDS}
        for card in CARDS:
            register_card(plain.base_url, plain.credentials, *card)
        plain.stop()
        stolen = plain.copy()
        assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys")) == numbers
        # `keys seal` turns the same install into a shares one: the key file is gone, the copy opens nothing.
        sealed = plain.cli("keys", "seal", "--shares", "3", "--threshold", "2", "--json")
        assert sealed.returncode == 0, sealed.stderr
        lines = [share["share"] for share in json.loads(sealed.stdout)["keyShares"]]
        assert sorted(os.listdir(plain.keys)) == ["custody.json"]
        stolen = plain.copy()
        assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys")) == set()
        # ... and the shares open the same cards.
        assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys")) == set()
        plain.start()
        assert plain.unseal(lines[0]).returncode == 0 and plain.unseal(lines[2]).returncode == 0
        plain.serving()
    finally:
        plain.remove()
    # Shares custody from the start: the copy opens nothing.
    install = Install()
    try:
        lines, _ = init_shares(install)
        install.start()
        assert install.unseal(lines[0]).returncode == 0 and install.unseal(lines[1]).returncode == 0
        install.serving()
        for card in CARDS:
            register_card(install.base_url, install.credentials, *card)
        install.stop()
        stolen = install.copy()
        report = []
        assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys"), report) == set()
        assert offline_attack.clear_card_numbers(str(stolen / "data"), str(stolen / "keys")) == set()
    finally:
        install.remove()


def test_rotate_master_and_rekey_leave_no_old_key_material(shares_install):
    install = shares_install
    lines, _ = init_shares(install)
    install.start()
    assert install.unseal(lines[0]).returncode == 0 and install.unseal(lines[1]).returncode == 0
    install.serving()
    card = register_card(install.base_url, install.credentials, *CARDS[0])
    old_master = master_key(install.keys, lines[:2])
    old_check = json.loads((install.keys / "custody.json").read_text())["masterCheckValue"]
    # rotate-master: a new master key (the data keys rewrapped) and a new share set of the same shape.
    # It takes the threshold of current shares (one operator alone cannot hand himself a new set).
    alone = install.cli("keys", "rotate-master", "--json", stdin=lines[0] + "\n")
    assert alone.returncode == 1 and master_key(install.keys, lines[:2]) == old_master
    # Prepared but never committed (the caller died before showing the shares): nothing changed.
    prepared = admin_call(install.data, "keys.rotate-master", {"currentShares": lines[:2]})
    assert len(prepared["keyShares"]) == 3 and prepared["commit"]
    assert master_key(install.keys, lines[:2]) == old_master
    rotated = install.cli("keys", "rotate-master", "--json", stdin="\n".join(lines[1:]) + "\n")
    assert rotated.returncode == 0, rotated.stderr
    rotated_result = json.loads(rotated.stdout)
    rotated_lines = [share["share"] for share in rotated_result["keyShares"]]
    assert (rotated_result["threshold"], len(rotated_lines)) == (2, 3)
    new_master = master_key(install.keys, rotated_lines[1:])
    assert new_master != old_master and rotated_result["masterCheckValue"] != old_check
    # rekey: the same master key under a new unseal key and share set, given the threshold of current shares.
    rekeyed = install.cli("keys", "rekey", "--shares", "4", "--threshold", "3", "--json",
                          stdin="\n".join(rotated_lines[:2]) + "\n")
    assert rekeyed.returncode == 0, rekeyed.stderr
    rekeyed_result = json.loads(rekeyed.stdout)
    rekeyed_lines = [share["share"] for share in rekeyed_result["keyShares"]]
    assert len(rekeyed_lines) == 4 and master_key(install.keys, rekeyed_lines[1:]) == new_master
    assert rekeyed_result["masterCheckValue"] == rotated_result["masterCheckValue"]
    custody = json.loads((install.keys / "custody.json").read_text())
    assert (custody["threshold"], custody["shares"]) == (3, 4)
    # A rekey needs the threshold of current shares: old ones, or too few, are refused.
    assert install.cli("keys", "rekey", "--shares", "3", "--threshold", "2", stdin=lines[0] + "\n" + lines[1]
                       + "\n").returncode == 1
    assert install.cli("keys", "rekey", "--shares", "3", "--threshold", "2",
                       stdin=rekeyed_lines[0] + "\n" + rekeyed_lines[1] + "\n").returncode == 1
    # A second rekey of the same shape voids the first one's shares.
    again = install.cli("keys", "rekey", "--shares", "4", "--threshold", "3", "--json",
                        stdin="\n".join(rekeyed_lines[1:]) + "\n")
    assert again.returncode == 0, again.stderr
    current_lines = [share["share"] for share in json.loads(again.stdout)["keyShares"]]
    install.stop()
    on_disk = b"".join(path.read_bytes() for path in install.workdir.rglob("*")
                       if path.is_file() and not path.name.startswith("serve-"))
    unseal_keys = [combine(group) for group in (lines[:2], rotated_lines[:2], rekeyed_lines[:3], current_lines[:3])]
    shares = [parse_share(line)[2] for line in lines + rotated_lines + rekeyed_lines + current_lines]
    for secret in [old_master, new_master] + unseal_keys + shares:
        for form in encodings(secret):
            assert form not in on_disk
    assert data_keys(install.data, new_master)
    # Neither the first set nor the first rekey's opens the vault any more; the current one does.
    install.start()
    assert install.unseal(lines[0]).returncode == 1  # a set needing 2, the vault needs 3
    for line in rekeyed_lines[:2]:
        assert install.unseal(line).returncode == 0
    void = install.unseal(rekeyed_lines[2])
    assert void.returncode == 1 and "does not open" in void.stderr
    assert install.health()[0] == 503
    for line in current_lines[:3]:
        assert install.unseal(line).returncode == 0
    install.serving()
    assert read_card(install.base_url, install.credentials, card).status_code == 200


# --- The process's memory, read as root would ---

def mappings(pid):
    """(start, end, flags) of each readable mapping, with its VmFlags."""
    result = []
    current = None
    for line in pathlib.Path("/proc/%d/smaps" % pid).read_text().splitlines():
        head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        if head:
            current = [int(head.group(1), 16), int(head.group(2), 16), head.group(3), ""]
            result.append(current)
        elif line.startswith("VmFlags:") and current is not None:
            current[3] = line.split(":", 1)[1].split()
    return [(start, end, flags) for start, end, perms, flags in result if perms.startswith("r")]


def occurrences(pid, secrets):
    """Where each secret's 32 bytes sit in the process's memory: [(secret index, address, VmFlags)]."""
    found = []
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as memory:
        for start, end, flags in mappings(pid):
            if "io" in flags or end - start > (1 << 31):
                continue
            try:
                memory.seek(start)
                content = memory.read(end - start)
            except OSError:
                continue
            for index, secret in enumerate(secrets):
                at = content.find(secret)
                while at >= 0:
                    found.append((index, start + at, flags))
                    at = content.find(secret, at + 1)
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root, as the attacker has")
def test_keys_live_only_in_the_locked_arena_and_leave_with_seal(shares_install):
    install = shares_install
    lines, _ = init_shares(install)
    master = master_key(install.keys, [lines[0], lines[2]])
    install.start()
    # Sealed: neither the master key nor the data keys are anywhere in the process.
    assert occurrences(install.process.pid, [master] + data_keys(install.data, master)) == []
    assert install.unseal(lines[0]).returncode == 0 and install.unseal(lines[2]).returncode == 0
    install.serving()
    for card in CARDS:
        register_card(install.base_url, install.credentials, *card)
    secrets = [master] + data_keys(install.data, master)
    pid = install.process.pid
    found = occurrences(pid, secrets)
    assert found, "the scan must see the keys it looks for"
    assert {index for index, _, _ in found} >= {0, 1}  # the master key and the data key in use
    for index, address, flags in found:
        assert "dd" in flags and "lo" in flags, "key %d at %#x in a mapping with VmFlags %s" % (index, address, flags)
    assert install.cli("operator", "seal").returncode == 0
    install.wait_for(lambda: install.health()[0] == 503)
    time.sleep(0.5)
    assert occurrences(pid, secrets) == []


# --- An HSM through PKCS#11: SoftHSM2, a software stand-in for a token ---

SOFTHSM_MODULE = "/usr/lib/softhsm/libsofthsm2.so"


class SoftHSM:
    """A throw-away SoftHSM2 token directory with one token (`make test` installs Debian's softhsm2)."""

    def __init__(self, workdir, label="cardvault", pin="4711"):
        assert shutil.which("softhsm2-util"), "softhsm2-util is missing: `make test` installs Debian's softhsm2"
        tokens = workdir / "tokens"
        tokens.mkdir()
        self.config = workdir / "softhsm2.conf"
        self.config.write_text("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\n" % tokens)
        self.tokens = tokens
        self.label, self.pin = label, pin
        subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", label, "--pin", pin, "--so-pin", "0815"],
                       env=dict(os.environ, SOFTHSM2_CONF=str(self.config)), check=True, capture_output=True)
        self.pin_file = workdir / "hsm.pin"
        self.pin_file.write_text(pin + "\n")
        self.pin_file.chmod(0o600)

    def env(self):
        return {"SOFTHSM2_CONF": str(self.config), "CARDVAULT_KEK_PROVIDER": "pkcs11",
                "CARDVAULT_KEK_MODULE": SOFTHSM_MODULE, "CARDVAULT_KEK_TOKEN_LABEL": self.label,
                "CARDVAULT_KEK_PIN_FILE": str(self.pin_file)}


@pytest.fixture
def hsm_install():
    install = Install()
    hsm = SoftHSM(install.workdir)
    install.env.update(hsm.env())
    install.hsm = hsm
    yield install
    install.remove()


def test_pkcs11_custody_serves_restarts_and_leaves_no_key_on_disk(hsm_install):
    install = hsm_install
    made = install.cli("keys", "init", "--pkcs11")
    assert made.returncode == 0, made.stderr
    assert json.loads((install.keys / "custody.json").read_text())["provider"] == "pkcs11"
    install.start()
    install.serving()  # no shares: the daemon opened the token key itself
    assert install.health() == (200, {"status": "ok", "keyCustody": "pkcs11"})
    cards = {}
    for number, card_type, cvx in CARDS:
        cards[number] = register_card(install.base_url, install.credentials, number, card_type, cvx)
    install.stop()
    install.start()
    install.serving()
    for card in cards.values():
        assert read_card(install.base_url, install.credentials, card).status_code == 200
    refused = install.cli("keys", "rotate-master")
    assert refused.returncode == 1 and "never leaves the HSM" in refused.stderr
    install.stop()
    # The keys directory holds the custody record only; a backup of it and of the data opens nothing.
    assert sorted(os.listdir(install.keys)) == ["custody.json"]
    stolen = install.copy()
    assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys")) == set()
    # Even with the token's files beside them, as long as the PIN is not among them.
    shutil.copytree(install.hsm.tokens, stolen / "keys" / "tokens")
    assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys")) == set()
    # The PIN never reaches a log.
    assert install.hsm.pin.encode() not in install.logs().replace(b'"pid"', b"")


def test_pkcs11_start_up_errors_are_clear(hsm_install):
    install = hsm_install
    assert install.cli("keys", "init", "--pkcs11").returncode == 0
    for change, expected in [({"CARDVAULT_KEK_TOKEN_LABEL": "no-such-token"}, "no-such-token"),
                             ({"CARDVAULT_KEK_MODULE": "/nonexistent/libpkcs11.so"}, "/nonexistent/libpkcs11.so"),
                             ({"CARDVAULT_KEK_KEY_LABEL": "another-key"}, "another-key")]:
        run = subprocess.run([BINARY, "serve"], cwd=install.workdir, env=dict(install.env, **change),
                             capture_output=True, text=True, timeout=60)
        assert run.returncode != 0 and expected in run.stderr, (change, run.stderr[-500:])
    install.hsm.pin_file.write_text("0000\n")
    run = subprocess.run([BINARY, "serve"], cwd=install.workdir, env=install.env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode != 0 and "PIN" in run.stderr and "0000" not in run.stderr, run.stderr[-500:]
    install.hsm.pin_file.chmod(0o644)
    run = subprocess.run([BINARY, "serve"], cwd=install.workdir, env=install.env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 78 and "chmod 600" in run.stderr, run.stderr[-500:]


def test_keys_seal_moves_a_key_file_install_into_the_hsm(hsm_install):
    install = hsm_install
    file_env = dict(install.env)
    for name in list(file_env):
        if name.startswith("CARDVAULT_KEK_"):
            del file_env[name]
    pkcs11_env = install.env
    install.env = file_env
    install.start()
    install.serving()
    card = register_card(install.base_url, install.credentials, *CARDS[0])
    install.stop()
    install.env = pkcs11_env
    sealed = install.cli("keys", "seal", "--pkcs11")
    assert sealed.returncode == 0, sealed.stderr
    assert sorted(os.listdir(install.keys)) == ["custody.json"]
    stolen = install.copy()
    assert offline_attack.recover_card_numbers(str(stolen / "data"), str(stolen / "keys")) == set()
    install.start()
    install.serving()
    assert read_card(install.base_url, install.credentials, card).status_code == 200


# --- Many daemons on one PostgreSQL database: the custody record is in the database ---

def test_postgres_daemons_start_sealed_and_unseal_with_the_same_shares():
    from postgres_support import PostgresCluster
    cluster = PostgresCluster().start()
    daemons = []
    try:
        first = Install({"CARDVAULT_DATABASE_URL": cluster.url()})
        daemons.append(first)
        assert first.cli("db", "migrate").returncode == 0
        lines, result = init_shares(first)
        assert not first.keys.exists() or os.listdir(first.keys) == []  # nothing on the host
        second = Install({"CARDVAULT_DATABASE_URL": cluster.url()})  # another host: no keys directory at all
        daemons.append(second)
        for install in daemons:
            install.start()
            assert install.health()[0] == 503
            assert install.health()[1]["unseal"]["threshold"] == 2  # read from the database
        # One share given to both daemons at once, then the next one.
        for line in lines[:2]:
            unsealed = first.cli("operator", "unseal", "--data-dir", str(first.data), "--data-dir",
                                 str(second.data), stdin=line + "\n")
            assert unsealed.returncode == 0, unsealed.stderr
        for install in daemons:
            install.serving()
        credentials = first.credentials or second.credentials
        card = register_card(first.base_url, credentials, *CARDS[0])
        assert read_card(second.base_url, credentials, card).status_code == 200
        assert cluster.psql("SELECT count(*) FROM cardvault_custody").strip().endswith("1")
    finally:
        for install in daemons:
            install.remove()
        cluster.remove()


def test_an_interrupted_master_rotation_still_unseals(shares_install):
    """A crash between a rotation's two writes leaves a custody record whose current master key does not open the
    keyring yet, and the previous one that does: the shares still unseal the vault, which says so."""
    install = shares_install
    lines, _ = init_shares(install)
    path = install.keys / "custody.json"
    custody = json.loads(path.read_text())
    unseal_key = combine(lines[:2])
    nonce, next_master = os.urandom(12), os.urandom(32)
    custody["previousWrappedMaster"] = custody["wrappedMaster"]
    custody["wrappedMaster"] = base64.b64encode(
        nonce + AESGCM(unseal_key).encrypt(nonce, next_master, b"cardvault master key v1")).decode()
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    custody["masterCheckValue"] = Cipher(algorithms.AES(next_master), modes.ECB()).encryptor().update(
        bytes(16))[:3].hex()
    path.write_text(json.dumps(custody))
    install.start()
    assert install.unseal(lines[0]).returncode == 0
    second = install.unseal(lines[1])
    assert second.returncode == 0, second.stderr
    install.serving()
    assert b"rotation was cut short" in install.err.read_bytes()
