"""Runs last (file name order): no card number or security code of the tests may appear in the data
directory or the daemon's logs, in ASCII, UTF-16 or BCD (with CARDVAULT_TEST_BACKEND=postgres-pair: both daemons'
logs, and the database's files, WAL and pg_dump output)."""
import pathlib

from test_card_lifecycle import REGISTERED as LIFECYCLE_NUMBERS
from test_hostile_values import REGISTERED as HOSTILE_NUMBERS
from sandbox_cards import ISSUED as FRESH_NUMBERS
from test_mangopay_sdk import AMEX, VISA
from test_payins_e2e import NUMBERS as PAYIN_NUMBERS
from test_sdk_flows import NUMBERS as FLOW_NUMBERS

# 5033950000020004 and 5555555555554444: the hosted pages' browser tests (test_pages_browser.py; not imported, so
# that this scan never depends on Selenium being installed).
NUMBERS = [VISA, AMEX, "4970107111111118", "5033950000020004", "5555555555554444"] + PAYIN_NUMBERS
# The hosted pages post `securityCode` (the checkout and the web card pay-in page).
SECURITY_CODES = ["cardCvx=123", "cardCvx=1234", "securityCode=123"]


def encodings(text):
    yield text.encode("ascii")
    yield text.encode("utf-16-le")
    yield text.encode("utf-16-be")
    if text.isdigit() and len(text) % 2 == 0:
        yield bytes(int(text[i]) << 4 | int(text[i + 1]) for i in range(0, len(text), 2))


def test_no_pan_or_cvx_in_data_directory_or_logs(daemon):
    files = [path for path in pathlib.Path(daemon.data_dir).rglob("*") if path.is_file()]
    files += [daemon.log_path, daemon.stdout_path]
    # The numbers the flow and hostile-value tests made up during this session (empty when they did not run).
    secrets = NUMBERS + HOSTILE_NUMBERS + LIFECYCLE_NUMBERS + FRESH_NUMBERS + list(FLOW_NUMBERS.values()) + SECURITY_CODES
    for path in files:
        content = path.read_bytes()
        for secret in secrets:
            for encoded in encodings(secret):
                assert encoded not in content, "%s found in %s" % (secret[:6] + "...", path.name)
    assert daemon.log_path.stat().st_size > 0  # the daemon did log the requests
    if getattr(daemon, "cluster", None) is not None:
        # Two daemons on one PostgreSQL database: its table files, WAL and pg_dump output hold none of them either.
        from test_postgres_pair import _scan_cluster
        _scan_cluster(daemon.cluster, [secret for secret in secrets if secret.isdigit()])
