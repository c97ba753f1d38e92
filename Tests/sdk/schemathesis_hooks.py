"""Schemathesis hooks for test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS).

Generated Idempotency-Key values collide (the shortest valid key comes up again and again), so most creates were
answered 409 (the same key with another body) before their body was read: 8,475 of 26,981 cases in one heavy run.
A key the document calls valid is therefore replaced by a fresh UUID; an invalid one (a negative case) is sent as
generated, so that its refusal is still checked. Replays and conflicts have their own tests (test_payins_e2e.py).
"""
import re
import uuid

import schemathesis

VALID_KEY = re.compile(r"[A-Za-z0-9-]{16,36}")


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    for name, value in list(headers.items()):
        if name.lower() == "idempotency-key" and isinstance(value, str) and VALID_KEY.fullmatch(value):
            headers[name] = str(uuid.uuid4())
