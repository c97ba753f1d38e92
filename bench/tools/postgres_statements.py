#!/usr/bin/env python3
"""What PostgreSQL does for each tokenization POST and each frictionless pay-in of one daemon on the PostgreSQL
backend: per statement (pg_stat_statements: calls, execution time, WAL records and bytes per request), rows
inserted and updated (and how many of the updates were HOT), and the WAL written (records and bytes per request).
WAL records and rows are exact and do not move with the machine's load; execution times do.

    bench/tools/postgres_statements.py [--bin .build/release/cardvault] [--count 300] [--sql 'SQL after migrate']

Makes a throw-away cluster (initdb in /var/tmp, Unix socket only, fsync and synchronous_commit on, the bench's
settings plus pg_stat_statements), migrates it with the binary, starts `cardvault serve` on it, creates COUNT
registrations, then measures COUNT sequential tokenizations and COUNT pay-ins (one keep-alive connection each),
with the server's CPU time per request (/proc: the postmaster and its children; it moves with the machine's load).
`--sql` runs after `cardvault db migrate`, to try a schema change before writing its migration. Run as root
(the server runs as `postgres` through runuser) or as a user that may run initdb.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

from merchant_daemon import RISK_LIMITS, Merchant, free_port, wait_until_serving

ROOT = pathlib.Path(__file__).resolve().parents[2]
PG = "/usr/lib/postgresql/15/bin"
SETTINGS = ["listen_addresses=''", "port=5432", "fsync=on", "synchronous_commit=on", "max_connections=100",
            "shared_buffers=256MB", "wal_buffers=16MB", "shared_preload_libraries=pg_stat_statements",
            "pg_stat_statements.track=all"]


def as_server_user(*command):
    prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    return subprocess.run(prefix + list(command), check=True, capture_output=True, text=True).stdout


def server_cpu_seconds(data):
    """User + system CPU of the server so far: the postmaster and its children (backends, WAL writer...)."""
    postmaster = open(data / "postmaster.pid").readline().strip()
    ticks = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % entry).read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if entry == postmaster or fields[1] == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(ROOT / ".build/release/cardvault"))
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--sql", default="")
    arguments = parser.parse_args()
    count = arguments.count
    work = pathlib.Path(tempfile.mkdtemp(prefix="cv-pgstatements-", dir="/var/tmp"))
    os.chmod(work, 0o777)
    data = work / "pg"
    as_server_user(PG + "/initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
                   "--no-sync")
    options = " ".join("-c " + s for s in SETTINGS + ["unix_socket_directories='%s'" % work])
    as_server_user(PG + "/pg_ctl", "-D", str(data), "-l", str(work / "server.log"), "-w", "-o", options, "start")
    process = None
    try:
        def sql(query):
            return subprocess.run([PG + "/psql", "-X", "-A", "-F", " | ", "-h", str(work), "-U", "postgres", "-d",
                                   "postgres", "-c", query], check=True, capture_output=True, text=True).stdout

        def value(query):
            return sql(query).split("\n")[1]

        sql("CREATE EXTENSION pg_stat_statements")
        port = free_port()
        base = "http://127.0.0.1:%d" % port
        daemon = work / "cardvault"
        daemon.mkdir()
        risk = daemon / "risk.json"
        risk.write_text(RISK_LIMITS)
        env = dict(os.environ, CARDVAULT_LISTEN="127.0.0.1:%d" % port, CARDVAULT_PUBLIC_URL=base,
                   CARDVAULT_DATA_DIR=str(daemon / "data"), CARDVAULT_KEYS_DIR=str(daemon / "keys"),
                   CARDVAULT_DATABASE_URL="postgresql://postgres@/postgres?host=%s" % work,
                   CARDVAULT_LOG_LEVEL="warn", CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS="100000000",
                   CARDVAULT_RISK_FILE=str(risk), CARDVAULT_LIFETIMES_SWEEP_INTERVAL_SECONDS="86400")
        subprocess.run([arguments.bin, "db", "migrate"], env=env, check=True, capture_output=True, cwd=str(ROOT))
        if arguments.sql:
            sql(arguments.sql)
        subprocess.run([arguments.bin, "keys", "init"], env=env, check=True, capture_output=True, cwd=str(ROOT))
        out = daemon / "out"
        process = subprocess.Popen([arguments.bin, "serve"], env=env, stdout=open(out, "wb"),
                                   stderr=open(daemon / "err", "wb"), cwd=str(ROOT))
        merchant = Merchant(base, wait_until_serving(process, out, daemon / "err", 60), count)

        def measured(name, body):
            time.sleep(0.5)  # the daemon's own start-up writes settle
            sql("SELECT pg_stat_statements_reset(); SELECT pg_stat_reset(); SELECT pg_stat_reset_shared('wal')")
            before = value("SELECT pg_current_wal_lsn()")
            cpu = server_cpu_seconds(data)
            body()
            cpu = server_cpu_seconds(data) - cpu
            time.sleep(1)  # statistics reach the collector
            wal = float(value("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '%s')" % before))
            records = int(value("SELECT wal_records FROM pg_stat_wal"))
            print("== %s, %d requests: %.1f WAL records and %.0f WAL bytes per request, server CPU %.0f µs per "
                  "request" % (name, count, records / count, wal / count, cpu * 1e6 / count))
            print(sql("SELECT round(calls::numeric / %d, 2) AS calls_per_request, "
                      "round((total_exec_time * 1000 / %d)::numeric, 1) AS exec_us_per_request, "
                      "round(wal_records::numeric / %d, 2) AS wal_records_per_request, "
                      "left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS statement "
                      "FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat%%' AND query NOT LIKE '%%pg_current%%'"
                      "ORDER BY total_exec_time DESC LIMIT 8" % (count, count, count)))
            print(sql("SELECT round(n_tup_ins::numeric / %d, 2) AS inserts_per_request, "
                      "round(n_tup_upd::numeric / %d, 2) AS updates_per_request, "
                      "round(n_tup_hot_upd::numeric / %d, 2) AS hot_updates_per_request "
                      "FROM pg_stat_user_tables WHERE relname = 'cardvault_records'" % (count, count, count)))

        measured("tokenization POST", merchant.tokenize)
        measured("frictionless pay-in", merchant.pay)
    finally:
        if process:
            process.terminate()
            process.wait(30)
        as_server_user(PG + "/pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
