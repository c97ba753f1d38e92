#!/usr/bin/env python3
"""The record sweeper's cost on an idle daemon with many card registrations (docs/hot-path.md).

Starts a release daemon on fresh directories with a short sweep interval, creates card registrations with wrk
(bench/wrk/create.lua) for --load seconds, then leaves the daemon idle for --idle seconds and reports its CPU
time (user + system, /proc) over that window, with the number of sweep rounds it saw (/metrics), and its CPU per
creation during the load. Run it with two
binaries (CARDVAULT_BIN) to compare them on the same machine, one after the other.

    bench/tools/sweeper_idle_cpu.py [--load 30] [--idle 60] [--interval 10] [--bin .build/release/cardvault]
        [--load-bin OLDER_BINARY] [--idempotent]

With --idempotent, each creation carries an Idempotency-Key of its own, so the store also holds as many
idempotency entries (24 hours each). With --load-bin, that binary serves the load and the measured one then opens the store it left (an upgrade).
"""
import argparse
import base64
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def redacted(text):
    """The daemon's output with the development client's API key masked (it is printed once, at start)."""
    return re.sub(r"ApiKey=\S+", "ApiKey=<redacted>", text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def call(url, method="GET", body=None, headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read().decode()


def metric(base, name):
    text = call(base + "/metrics")
    match = re.search(r"^" + re.escape(name) + r"(?:\{[^}]*\})? (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def kind_count(base, kind):
    text = call(base + "/metrics")
    match = re.search(r'^cardvault_records\{kind="' + re.escape(kind) + r'"\} (\S+)$', text, re.M)
    return int(float(match.group(1))) if match else 0


def registrations(base):
    return kind_count(base, "card-registrations")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--load", type=int, default=30, help="seconds of registration creation")
    parser.add_argument("--idle", type=int, default=60, help="seconds of idle measurement")
    parser.add_argument("--interval", type=int, default=10, help="the sweep interval (seconds)")
    parser.add_argument("--bin", default=os.environ.get("CARDVAULT_BIN", ROOT + "/.build/release/cardvault"))
    parser.add_argument(
        "--load-bin", help="the binary that serves the load (default --bin); the idle window then runs --bin on its store")
    parser.add_argument("--idempotent", action="store_true", help="an Idempotency-Key on each creation")
    options = parser.parse_args()

    home = tempfile.mkdtemp(prefix="cardvault-sweeper-")
    port = free_port()
    environment = dict(
        os.environ,
        CARDVAULT_LISTEN=f"127.0.0.1:{port}",
        CARDVAULT_PUBLIC_URL=f"http://127.0.0.1:{port}",
        CARDVAULT_DATA_DIR=home + "/data",
        CARDVAULT_KEYS_DIR=home + "/keys",
        CARDVAULT_LOG_LEVEL="warn",
        CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS=str(options.interval),
        CARDVAULT_HTTP_MAX_CONNECTIONS_PER_ADDRESS="512",
    )
    log = open(home + "/daemon.log", "w+")

    def start(binary):
        process = subprocess.Popen(
            [binary, "serve", "--config", ROOT + "/config/cardvault.json"], env=environment, stdout=log,
            stderr=subprocess.STDOUT, cwd=ROOT)
        for _ in range(300):
            if process.poll() is not None:
                break
            try:
                call(base + "/health")
                return process
            except OSError:
                time.sleep(0.1)
        log.seek(0)
        sys.exit(f"{binary} did not start: " + redacted(log.read()[-500:]))

    def stop(process):
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()

    base = f"http://127.0.0.1:{port}"
    daemon = start(options.load_bin or options.bin)
    try:
        log.seek(0)
        client = re.search(r"ClientId=(\S+) ApiKey=(\S+)", log.read())
        if not client:
            sys.exit("the daemon printed no development client")
        basic = base64.b64encode(f"{client.group(1)}:{client.group(2)}".encode()).decode()
        token = json.loads(call(
            base + "/v2.01/oauth/token", "POST", b"grant_type=client_credentials",
            {"Authorization": "Basic " + basic, "Content-Type": "application/x-www-form-urlencoded"}))["access_token"]
        api = f"{base}/v2.01/{client.group(1)}/"
        headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        user = json.loads(call(api + "users/natural", "POST", json.dumps({
            "FirstName": "Idle", "LastName": "Shopper", "Email": "idle@example.com", "Birthday": 188352000,
            "Nationality": "FR", "CountryOfResidence": "FR", "TermsAndConditionsAccepted": True,
            "UserCategory": "PAYER"}).encode(), headers))["Id"]
        out = tempfile.mkdtemp(prefix="registrations-", dir=home)
        load_cpu = cpu_seconds(daemon.pid)
        subprocess.run(
            ["wrk", "-t2", "-c16", f"-d{options.load}s", "-s", ROOT + "/bench/wrk/create.lua", base, "--",
             client.group(1), token, user, out] + (["idempotent"] if options.idempotent else []),
            check=True, stdout=subprocess.DEVNULL)
        count = registrations(base)
        load_cpu = cpu_seconds(daemon.pid) - load_cpu
        if options.load_bin and options.load_bin != options.bin:
            # The store as an older build left it, opened by the build measured.
            stop(daemon)
            daemon = start(options.bin)
        time.sleep(2)
        rounds_before = metric(base, "cardvault_sweep_rounds_total") or 0
        before = cpu_seconds(daemon.pid)
        # The daemon's CPU between one finished round and the next (the round's work and the idle time between).
        by_round, seen, mark = [], rounds_before, before
        end = time.monotonic() + options.idle
        while time.monotonic() < end:
            time.sleep(0.5)
            rounds_now = metric(base, "cardvault_sweep_rounds_total") or 0
            if rounds_now > seen:
                cpu = cpu_seconds(daemon.pid)
                by_round.append(round(1000 * (cpu - mark)))
                seen, mark = rounds_now, cpu
        used = cpu_seconds(daemon.pid) - before
        if daemon.poll() is not None:
            sys.exit("the daemon stopped during the measurement")
        rounds = (metric(base, "cardvault_sweep_rounds_total") or 0) - rounds_before
        count = max(count, registrations(base))
        print(json.dumps({
            "binary": options.bin, "registrations": count,
            "load_cpu_us_per_creation": round(1e6 * load_cpu / count, 1) if count else None,
            "idempotency_entries": kind_count(base, "idempotent-responses"), "idle_seconds": options.idle,
            "sweep_rounds": rounds, "cpu_seconds": round(used, 3),
            "cpu_ms_per_round": round(1000 * used / rounds, 1) if rounds else None,
            "cpu_ms_up_to_each_round": by_round}))
    finally:
        log.seek(0)
        tail = redacted(log.read()[-2000:])
        if tail.count("\n") > 2:
            print("the daemon's log ends:\n" + tail, file=sys.stderr)
        stop(daemon)
        subprocess.run(["rm", "-rf", home])


if __name__ == "__main__":
    main()
