"""The README's quick start, run as written against the release binary so that it cannot rot.

Blocks are marked in README.md by an HTML comment before their fence: `<!-- quickstart:settings -->` (the
exports of the daemon's URL and credentials), `<!-- quickstart:curl -->` (run in order by one bash process,
so variables carry over) and `<!-- quickstart:python -->` (the script with the official SDK). The test keeps
the settings block and overrides its values with those of a daemon of its own: a fresh data directory, like
the first `make run`, so that no other test's pay-ins feed the risk engine's velocity rules.
"""
import html
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from conftest import ROOT, Daemon

README = ROOT / "README.md"
BLOCK = re.compile(r"<!-- quickstart:(\w+) -->\n```(\w+)\n(.*?)\n```", re.S)
SETTINGS = ("CARDVAULT", "CLIENT_ID", "API_KEY")
CARDS = ("4970107111111119", "4970105181818183")


def blocks(kind):
    found = [(language, code) for name, language, code in BLOCK.findall(README.read_text()) if name == kind]
    assert found, "README.md has no block marked quickstart:" + kind
    return found


@pytest.fixture(scope="module")
def fresh_daemon():
    instance = Daemon()
    yield instance
    instance.stop()


def settings_script(daemon):
    """The README's settings block, then the same exports with this daemon's values."""
    (language, code), = blocks("settings")
    assert language == "sh"
    exported = re.findall(r"^export (\w+)=", code, re.M)
    assert exported == list(SETTINGS), "the settings block exports %r" % exported
    values = {"CARDVAULT": daemon.base_url, "CLIENT_ID": daemon.client_id, "API_KEY": daemon.api_key}
    return code + "\n" + "".join("export %s=%s\n" % (name, shlex.quote(values[name])) for name in SETTINGS)


def run_file(arguments, text, suffix, env=None, timeout=120):
    """Runs `text` from a private temporary file (the API key is in it, never in a command line)."""
    with tempfile.TemporaryDirectory(prefix="cardvault-readme-") as directory:
        path = pathlib.Path(directory) / ("quickstart" + suffix)
        path.write_text(text)
        path.chmod(0o600)
        result = subprocess.run(arguments + [str(path)], capture_output=True, text=True, env=env, timeout=timeout,
                                cwd=directory)
    assert result.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (result.returncode, result.stdout,
                                                                         result.stderr)
    return result.stdout


def api_get(daemon, path):
    token = requests.post(daemon.base_url + "/v2.01/oauth/token", auth=(daemon.client_id, daemon.api_key),
                          data={"grant_type": "client_credentials"}).json()["access_token"]
    response = requests.get(daemon.base_url + "/v2.01/" + daemon.client_id + path,
                            headers={"Authorization": "Bearer " + token})
    assert response.status_code == 200, response.text
    return response.json()


def assert_log_clean(daemon, card_id):
    """Once the daemon has logged the tokenization of `card_id` (its log is flushed every 200 ms): no card number
    of the quick start and not the API key in its log."""
    deadline = time.time() + 5
    while card_id not in daemon.log_path.read_text(errors="replace") and time.time() < deadline:
        time.sleep(0.1)
    log = daemon.log_path.read_text(errors="replace")
    assert card_id in log
    for secret in CARDS + (daemon.api_key,):
        assert secret not in log


def test_the_settings_block_holds_no_credential_and_matches_the_daemon_defaults():
    (_, code), = blocks("settings")
    values = dict(re.findall(r"^export (\w+)=(\S+)", code, re.M))
    assert values["CARDVAULT"] == "http://127.0.0.1:8080"  # `make run` with config/cardvault.json
    assert values["CLIENT_ID"] == "dev"                    # the development client's id
    assert not re.fullmatch(r"[A-Za-z0-9]{32,}", values["API_KEY"]), "a real-looking API key in README.md"
    assert "ClientId=dev ApiKey=" in README.read_text()     # the start-up line the reader copies them from


def test_curl_quick_start(fresh_daemon):
    parts = blocks("curl")
    assert len(parts) == 4 and all(language == "sh" for language, _ in parts)
    script = "set -euo pipefail\n" + settings_script(fresh_daemon)
    for index, (_, code) in enumerate(parts):
        script += "echo '### block %d'\n%s\n" % (index, code)
    script += "echo '### variables'\nprintf '%s\\n' \"$USER_ID\" \"$WALLET_ID\" \"$CARD_ID\" \"$PAYIN_ID\" \"$ACS_URL\"\n"
    output = run_file(["bash"], script, ".sh", env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})

    sections = re.split(r"^### (?:block \d|variables)\n", output, flags=re.M)[1:]
    assert len(sections) == 5, output
    account, card, frictionless, challenged, variables = (section.splitlines() for section in sections)
    user_id, wallet_id, card_id, payin_id, acs_url = variables
    assert account == [user_id + " " + wallet_id] and user_id.startswith("user_") and wallet_id.startswith("wlt_")
    assert card == [card_id] and card_id.startswith("card_")
    assert frictionless == ["SUCCEEDED"]
    assert challenged == ["303 https://shop.example/return?transactionId=" + payin_id, "SUCCEEDED"]

    # What the daemon holds agrees with what the README printed.
    payin = api_get(fresh_daemon, "/payins/" + payin_id)
    assert (payin["Status"], payin["ResultCode"], payin["SecureMode"], payin["SecureModeNeeded"]) == \
        ("SUCCEEDED", "000000", "FORCE", True)
    assert (payin["CardId"], payin["CreditedWalletId"], payin["AuthorId"]) == (card_id, wallet_id, user_id)
    transactions = api_get(fresh_daemon, "/cards/%s/transactions" % card_id)
    assert sorted((t["Status"], t["DebitedFunds"]["Amount"]) for t in transactions) == \
        [("SUCCEEDED", 1200), ("SUCCEEDED", 1200)]

    # The README posts what the ACS page's form holds: its action is the link's path, its hidden `s` the secret.
    page = requests.get(acs_url).text
    url = urlsplit(acs_url)
    action = html.unescape(re.search(r'<form method="post" action="([^"]*)"', page).group(1))
    secret = html.unescape(re.search(r'<input type="hidden" name="s" value="([^"]*)"', page).group(1))
    assert url.scheme + "://" + url.netloc == fresh_daemon.base_url and action == url.path
    assert parse_qs(url.query) == {"s": [secret]}
    assert_log_clean(fresh_daemon, card_id)


def test_python_quick_start_with_the_official_sdk(fresh_daemon):
    (language, code), = blocks("python")
    assert language == "python"
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"),
           "CARDVAULT": fresh_daemon.base_url, "CLIENT_ID": fresh_daemon.client_id, "API_KEY": fresh_daemon.api_key}
    lines = run_file([sys.executable], code, ".py", env=env).splitlines()
    assert len(lines) == 4, lines
    assert lines[0] == "frictionless: SUCCEEDED"
    assert lines[1] == "challenged: CREATED True"
    match = re.fullmatch(r"303 https://shop\.example/return\?transactionId=(payin_\w+)", lines[2])
    assert match, lines[2]
    assert lines[3] == "after 3-D Secure: SUCCEEDED"
    # The SDK talked to this daemon, not to Mangopay: the pay-in is here, on the challenged card.
    payin = api_get(fresh_daemon, "/payins/" + match.group(1))
    assert (payin["Status"], payin["SecureModeNeeded"], payin["CardInfo"]["BIN"]) == ("SUCCEEDED", True, "497010")
    assert api_get(fresh_daemon, "/cards/" + payin["CardId"])["Alias"] == "497010XXXXXX8183"
    assert_log_clean(fresh_daemon, payin["CardId"])


def test_the_sdk_behaves_as_the_readme_warns():
    """mangopaysdk in its default sandbox mode ignores api_url, and keeps its first handler."""
    probe = """
import mangopay
mangopay.client_id, mangopay.apikey = "dev", "not-a-key"
mangopay.api_url = "http://127.0.0.1:9/v2.01/"
first = mangopay.get_default_handler().api_url
mangopay.api_sandbox_url = "http://127.0.0.1:9/v2.01/"
print(mangopay.sandbox, first, mangopay.get_default_handler().api_url)
"""
    output = run_file([sys.executable], probe, ".py", env={"PATH": os.environ["PATH"]}).split()
    assert output == ["True", "https://api.sandbox.mangopay.com/v2.01/", "https://api.sandbox.mangopay.com/v2.01/"]
    # The README's own setting line, the one the warning recommends.
    (_, code), = blocks("python")
    setting = re.search(r"^mangopay\.api_url = mangopay\.api_sandbox_url = CARDVAULT \+ \"/v2\.01/\"", code, re.M)
    assert setting, "the Python quick start no longer sets both URLs"
