#!/usr/bin/env python3
"""Instructions (callgrind Ir) the daemon spends per tokenization POST and per frictionless pay-in: a stable
figure on a noisy machine, for before/after comparisons of two builds.

    bench/tools/callgrind_per_request.py [--flow] .build/release/cardvault [COUNT]

Starts `cardvault serve` under valgrind --tool=callgrind, creates COUNT registrations, zeroes the counters,
runs COUNT sequential tokenizations (one keep-alive connection) and dumps, then the same for COUNT pay-ins.
With `--flow`, the registration flow of bench/wrk/flow.lua instead of the pay-ins: COUNT registration
creations, tokenization POSTs, PUT RegistrationData and GET card, each step measured on its own, and the
flow's mean per request (the four steps' sum / 4).
Valgrind cannot read the Swift binary's DWARF 5: give it a copy without (strip -g -o /tmp/cv cardvault). Prints Ir per request for each.
`TOP=N` prints the N functions with the most instructions (self) of the tokenization dump; `KEEP=PATH` keeps it;
`KEEP_DIR=DIR` keeps every measured dump as DIR/<step>.cg (tokenize, create, flowtokenize, complete, card, payin).

With CARDVAULT_DATABASE_URL set, the daemon runs on the PostgreSQL backend: give it a freshly migrated database each
time (`cardvault db migrate` on an empty schema), since its key ring is made under this run's own master key.

STRACE=1 runs the daemon without valgrind and prints `strace -c -f` of all its threads over each phase instead
(system calls per request: divide the calls column by COUNT).
"""
import glob
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

from merchant_daemon import RISK_LIMITS, Merchant, free_port, wait_until_serving

ROOT = pathlib.Path(__file__).resolve().parents[2]


def total_ir(path):
    text = pathlib.Path(path).read_text(errors="replace")
    match = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    return int(match.group(1))


def main(binary, count, flow=False):
    work = pathlib.Path(tempfile.mkdtemp(prefix="cv-callgrind-"))
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    risk = work / "risk.json"
    risk.write_text(RISK_LIMITS)
    env = dict(os.environ, CARDVAULT_LISTEN="127.0.0.1:%d" % port, CARDVAULT_PUBLIC_URL=base,
               CARDVAULT_DATA_DIR=str(work / "data"), CARDVAULT_KEYS_DIR=str(work / "keys"),
               CARDVAULT_LOG_LEVEL="warn", CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS="100000000",
               CARDVAULT_RISK_FILE=str(risk), CARDVAULT_CRASH_BACKTRACE="off", SWIFT_BACKTRACE="enable=no",
               # The record sweeper's round (every 60 s) would land in some measurements and not others: under
               # valgrind a run lasts minutes. Once a day keeps it out.
               CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS="86400")
    if os.environ.get("CARDVAULT_DATABASE_URL"):
        # The PostgreSQL backend (its schema migrated first with `cardvault db migrate`): the daemon wants its master
        # key made beforehand.
        subprocess.run([binary, "keys", "init"], cwd=str(ROOT), env=env, check=True, capture_output=True)
    out = open(work / "out", "wb")
    tracing = bool(os.environ.get("STRACE"))
    command = [binary, "serve"] if tracing else [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=" + str(work / "cg.%p"), binary, "serve"]
    process = subprocess.Popen(command, cwd=str(ROOT), env=env, stdout=out, stderr=open(work / "err", "wb"))
    try:
        merchant = Merchant(base, wait_until_serving(process, work / "out", work / "err", 120), count)
        http, api, auth, user, form = merchant.http, merchant.api, merchant.auth, merchant.user, merchant.form
        pid = str(process.pid)

        def traced(name, body):
            trace = subprocess.Popen(["strace", "-c", "-f", "-o", str(work / ("st-" + name)), "-p", pid],
                                     stderr=subprocess.DEVNULL)
            time.sleep(1.5)  # strace attaches to every thread
            body()
            trace.send_signal(2)
            trace.wait()
            return (work / ("st-" + name)).read_text()

        def measured(name, body):
            subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
            body()
            before = set(glob.glob(str(work / "cg.*")))
            subprocess.run(["callgrind_control", "-d", name, pid], check=True, capture_output=True)
            time.sleep(1)
            dumps = sorted(set(glob.glob(str(work / "cg.*"))) - before, key=os.path.getmtime)
            if os.environ.get("KEEP_DIR"):
                shutil.copy(dumps[-1], os.path.join(os.environ["KEEP_DIR"], name + ".cg"))
            return total_ir(dumps[-1])

        def create():
            created.extend(http.post(api + "/cardregistrations", headers=auth, json={
                "UserId": user, "Currency": "EUR", "CardType": "CB_VISA_MASTERCARD"}).json() for _ in range(count))
            assert all("AccessKey" in r for r in created), created[-1]

        def tokenize_created():
            for r in created:
                answer = http.post(r["CardRegistrationURL"], data=form(r)).text
                assert answer.startswith("data="), answer
                answers.append(answer)

        def complete():
            for r, answer in zip(created, answers):
                done = http.put(api + "/cardregistrations/" + r["Id"], headers=auth,
                                json={"RegistrationData": answer}).json()
                assert done.get("Status") == "VALIDATED", done
                cards.append(done["CardId"])

        def read_cards():
            for card_id in cards:
                assert http.get(api + "/cards/" + card_id, headers=auth).json().get("Id") == card_id

        created, answers, cards = [], [], []
        if tracing:
            print("tokenization POST, %d requests:\n%s" % (count, traced("tokenize", merchant.tokenize)))
            print("frictionless pay-in, %d requests:\n%s" % (count, traced("payin", merchant.pay)))
            return
        tokenization = measured("tokenize", merchant.tokenize)
        tokenization_dump = sorted(glob.glob(str(work / "cg.*")), key=os.path.getmtime)[-1]
        if os.environ.get("KEEP"):
            shutil.copy(tokenization_dump, os.environ["KEEP"])
        print("tokenization POST: %d Ir/request (%d requests)" % (tokenization // count, count))
        if os.environ.get("TOP"):
            # The functions with the most instructions (self), from the tokenization dump.
            annotated = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no",
                                        tokenization_dump], capture_output=True, text=True)
            lines = [line for line in annotated.stdout.splitlines() if re.match(r"^\s*[\d,]+ \(", line)]
            print("\n".join(lines[:int(os.environ["TOP"])]))
        if flow:
            steps = [("create registration", measured("create", create)),
                     ("tokenization POST", measured("flowtokenize", tokenize_created)),
                     ("PUT RegistrationData", measured("complete", complete)),
                     ("GET card", measured("card", read_cards))]
            for name, total in steps:
                print("flow, %s: %d Ir/request (%d requests)" % (name, total // count, count))
            print("registration flow: %d Ir/request (mean of the four steps)"
                  % (sum(total for _, total in steps) // (4 * count)))
        else:
            payins = measured("payin", merchant.pay)
            print("frictionless pay-in: %d Ir/request (%d requests)" % (payins // count, count))
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[1:] if argument != "--flow"]
    main(arguments[0], int(arguments[1]) if len(arguments) > 1 else 200, flow="--flow" in sys.argv[1:])
