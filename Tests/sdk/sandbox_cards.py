"""Card numbers for tests that share the session's daemon.

`fresh(like)` gives a Luhn-valid number with the BIN (first six digits) and last four of `like`: the same sandbox
alias, so the sandbox table decides the same 3-D Secure flow, but a fingerprint of its own. The risk engine counts a
card's earlier transactions within the hour (more than 5 adds points, more than 10 adds them twice), so tests that
all paid with one documented test card would start to be challenged or blocked as the session's tests pile up.
Every number handed out is kept in ISSUED for test_zz_scan (none may reach a log or a data file in clear).
"""
import random

ISSUED = []


def luhn_valid(number):
    total = 0
    for index, digit in enumerate(int(d) for d in reversed(number)):
        doubled = digit * 2 if index % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def fresh(like):
    middle = len(like) - 10
    while True:
        number = like[:6] + "".join(random.choice("0123456789") for _ in range(middle)) + like[-4:]
        if number != like and luhn_valid(number):
            ISSUED.append(number)
            return number
