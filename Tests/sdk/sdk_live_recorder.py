"""Placed as conftest.py next to the official SDK's copied tests (Tests/sdk/test_sdk_live_suite.py): records every
request the SDK makes through its `request_finished` signal, with the test that made it, as JSON lines."""
import json
import os

import pytest
from mangopay.signals import request_finished

LOG = os.environ["SDK_LIVE_REQUEST_LOG"]
_current = {"test": None, "live": False}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    from tests.test_base import BaseTestLive
    _current["test"] = item.nodeid
    _current["live"] = item.cls is not None and issubclass(item.cls, BaseTestLive)


def _record(sender=None, **kw):
    # Mocked tests (the `responses` library) answer without the daemon: only live tests' requests count.
    if not _current["live"]:
        return
    with open(LOG, "a") as out:
        out.write(json.dumps({"test": _current["test"], "method": kw["method"], "url": kw["url"],
                              "status": kw["result"].status_code}) + "\n")


request_finished.connect(_record, weak=False)
