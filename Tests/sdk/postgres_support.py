"""Throw-away PostgreSQL 15 clusters and pairs of CardVault daemons sharing one, for the SDK tests.

A cluster is initdb'd in a temporary directory and listens on a Unix socket there only (a free port
number names the socket); as the `postgres` user when the tests run as root. A DaemonPair starts two
daemons on the same database (`cardvault db migrate` first) with their own data directories and the same
master key, and a small HTTP proxy in front that sends each request to the next daemon in turn, so an SDK
test's requests are spread over both.
"""
import http.client
import os
import pathlib
import shutil
import signal
import socket
import socketserver
import subprocess
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = "/usr/lib/postgresql/15/bin"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def as_server_user(argv, **kwargs):
    if os.getuid() == 0:
        argv = ["runuser", "-u", "postgres", "--"] + argv
    return subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, **kwargs)


class PostgresCluster:
    """One PostgreSQL server in its own directory (data in `data/`, socket and log beside it)."""

    def __init__(self, directory=None, port=None, settings=None, initdb=True):
        self.directory = pathlib.Path(directory or tempfile.mkdtemp(prefix="cv-pg-", dir="/var/tmp"))
        self.data = self.directory / "data"
        self.port = port or free_port()
        self.settings = dict(settings or {})
        if os.getuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        if initdb:
            as_server_user([BIN + "/initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                            "--locale=C", "--no-sync"])
        self.process = None

    @property
    def host(self):
        return str(self.directory)

    def url(self, dbname="postgres"):
        return "postgresql:///%s?host=%s&port=%d&user=postgres" % (dbname, self.directory, self.port)

    def start(self):
        options = {"listen_addresses": "''", "unix_socket_directories": "'%s'" % self.directory,
                   "port": str(self.port), "fsync": "on", "max_connections": "100", "shared_buffers": "64MB"}
        options.update(self.settings)
        command = " ".join("-c %s=%s" % item for item in options.items())
        as_server_user([BIN + "/pg_ctl", "-D", str(self.data), "-l", str(self.directory / "server.log"), "-w",
                        "-t", "60", "-o", command, "start"])
        return self

    def postmaster_pid(self):
        text = (self.data / "postmaster.pid").read_text()
        return int(text.split()[0])

    def kill(self):
        """SIGKILL of the postmaster and every backend (a crash of the machine, for the database)."""
        pid = self.postmaster_pid()
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        os.kill(pid, signal.SIGKILL)
        for child in children:
            try:
                os.kill(int(child), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def psql(self, sql, dbname="postgres"):
        result = subprocess.run([BIN + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.url(dbname),
                                 "-c", sql], check=True, capture_output=True, text=True)
        return result.stdout.strip()

    def stop(self, mode="fast"):
        try:
            as_server_user([BIN + "/pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop"])
        except subprocess.CalledProcessError:
            pass

    def remove(self):
        self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


class RoundRobinProxy:
    """An HTTP/1.1 proxy on a free loopback port: request n goes to backend n mod len(backends)."""

    def __init__(self, backends, port=None):
        self.backends = backends
        self.counter = 0
        self.lock = threading.Lock()
        self.port = port or free_port()
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                connections = {}
                try:
                    while True:
                        line = self.rfile.readline(65537)
                        if not line or not line.strip():
                            return
                        method, target, _ = line.decode("latin-1").split(" ", 2)
                        headers = []
                        length = 0
                        while True:
                            header = self.rfile.readline(65537).decode("latin-1")
                            if header in ("\r\n", "\n", ""):
                                break
                            name, value = header.split(":", 1)
                            if name.strip().lower() == "content-length":
                                length = int(value.strip())
                            headers.append((name.strip(), value.strip()))
                        body = self.rfile.read(length) if length else None
                        index = proxy.next_backend()
                        port = proxy.backends[index]
                        for attempt in range(2):
                            connection = connections.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                            connections[port] = connection
                            try:
                                connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                                for name, value in headers:
                                    connection.putheader(name, value)
                                connection.endheaders(body)
                                response = connection.getresponse()
                                payload = response.read()
                                break
                            except (http.client.HTTPException, OSError):
                                connection.close()
                                connections.pop(port, None)
                                if attempt == 1:
                                    self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                                    return
                        out = ["HTTP/1.1 %d %s" % (response.status, response.reason)]
                        for name, value in response.getheaders():
                            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                                out.append("%s: %s" % (name, value))
                        out.append("X-CardVault-Backend: %d" % index)
                        out.append("Content-Length: %d" % len(payload))
                        self.wfile.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + payload)
                        self.wfile.flush()
                finally:
                    for connection in connections.values():
                        connection.close()

        class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next_backend(self):
        with self.lock:
            self.counter += 1
            return self.counter % len(self.backends)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class _PairProcess:
    """`poll()` over both daemons, as tests call it on one daemon's process: the exit code of the first that
    exited, None while both run."""

    def __init__(self, daemons):
        self.daemons = daemons

    def poll(self):
        for instance in self.daemons:
            code = instance.process.poll()
            if code is not None:
                return code
        return None


class _PairFile:
    """Both daemons' files of one kind (their logs, their stdout) read as one, as tests read conftest's Daemon's
    `log_path`: read_text, read_bytes, stat (the sizes summed) and name."""

    def __init__(self, paths, name):
        self.paths = paths
        self.name = name

    def read_bytes(self):
        return b"".join(path.read_bytes() for path in self.paths)

    def read_text(self, errors=None):
        return "".join(path.read_text(errors=errors) for path in self.paths)

    def stat(self):
        class Stat:
            st_size = sum(path.stat().st_size for path in self.paths)
        return Stat()

    def __str__(self):
        return self.name


class DaemonPair:
    """Two daemons on one PostgreSQL database behind a round-robin proxy; quacks like conftest's Daemon
    (base_url, client_id, api_key, log_path, stdout_path, data_dir, stop)."""

    def __init__(self, cluster=None, database_url=None, extra_env=None, public_url_via_proxy=True):
        from conftest import Daemon
        self.own_cluster = cluster is None and database_url is None
        self.cluster = PostgresCluster().start() if self.own_cluster else cluster
        self.database_url = database_url or self.cluster.url()
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="cardvault-pair-"))
        self.keys = self.workdir / "keys"
        binary = os.environ.get("CARDVAULT_BIN", str(ROOT / ".build" / "release" / "cardvault"))
        subprocess.run([binary, "keys", "init", "--keys-dir", str(self.keys)], check=True, capture_output=True)
        env = {"CARDVAULT_DATABASE_URL": self.database_url, "CARDVAULT_KEYS_DIR": str(self.keys),
               # Load tests register from one address; the per-address limit is not what they test.
               "CARDVAULT_TOKENIZATIONS_PER_MINUTE_PER_ADDRESS": "100000"}
        migrate = subprocess.run([binary, "db", "migrate"], env=dict(os.environ, **env), capture_output=True, text=True)
        assert migrate.returncode == 0, migrate.stderr
        self.proxy_port = free_port()
        self.base_url = "http://127.0.0.1:%d" % self.proxy_port
        env.update(extra_env or {})
        if public_url_via_proxy:
            env["CARDVAULT_PUBLIC_URL"] = self.base_url
        self.env = env
        # The first daemon creates the development client; the second finds it.
        self.a = Daemon(extra_env=env)
        self.b = Daemon(extra_env=env, wait_for_credentials=False)
        self.daemons = [self.a, self.b]
        self.client_id, self.api_key = self.a.client_id, self.a.api_key
        self.proxy = RoundRobinProxy([self.a.port, self.b.port], port=self.proxy_port)
        # Tests read "the daemon's" log: here both daemons' lines (a request may have gone to either).
        self.log_path = _PairFile([self.a.log_path, self.b.log_path], "daemon.log (both daemons)")
        self.stdout_path = _PairFile([self.a.stdout_path, self.b.stdout_path], "daemon.out (both daemons)")
        self.data_dir = self.a.data_dir
        self.process = _PairProcess(self.daemons)

    def stop(self):
        self.proxy.stop()
        for instance in self.daemons:
            instance.stop()
        if self.own_cluster:
            self.cluster.remove()
