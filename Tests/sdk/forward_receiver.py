"""A local TLS receiver standing in for a PSP, with a throwaway CA (made with the openssl command line).

`ThrowawayCA` writes a CA and a server certificate for localhost/127.0.0.1/::1 into a directory; `Receiver`
serves HTTPS with it on a free loopback port and records every request it gets. Paths:
  /psp/echo       200, JSON {"received": <body>, "header": <X-Card header>, "spaced": <number with spaces>};
                  the response header X-Echo carries the number seen in the body
  /psp/other      200, echoes the `Other` field of the JSON body as is (another vaulted number)
  /psp/redirect   302 to /psp/landing (which must never be hit)
  /psp/slow       answers after 5 s
  /psp/big        200 with a 256 KiB body
"""
import http.server
import json
import pathlib
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time

OPENSSL = shutil.which("openssl") or "openssl"


def _run(*args):
    subprocess.run([OPENSSL, *args], check=True, capture_output=True)


class ThrowawayCA:
    def __init__(self, directory, name="CardVault test CA"):
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        d = self.directory
        self.ca_key, self.ca_cert = d / "ca.key", d / "ca.pem"
        self.key, self.cert = d / "server.key", d / "server.pem"
        _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.ca_key), "-out", str(self.ca_cert),
             "-days", "2", "-subj", "/CN=" + name, "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        csr = d / "server.csr"
        _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key), "-out", str(csr), "-subj", "/CN=localhost")
        extensions = d / "server.ext"
        extensions.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n")
        _run("x509", "-req", "-in", str(csr), "-CA", str(self.ca_cert), "-CAkey", str(self.ca_key), "-CAcreateserial",
             "-out", str(self.cert), "-days", "2", "-extfile", str(extensions))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without this, Nagle's algorithm holds the second one for the
        # client's delayed ACK (40 ms a request).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _answer(self, status, body, headers=None):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        self.server.receiver.requests.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body,
             "client": self.client_address})
        path = self.path.split("?")[0]
        if path == "/psp/echo":
            digits = re.search(r"\d{12,19}", body)
            number = digits.group(0) if digits else ""
            spaced = " ".join(number[i:i + 4] for i in range(0, len(number), 4))
            self._answer(200, json.dumps({"received": body, "header": self.headers.get("X-Card", ""),
                                          "spaced": spaced}),
                         {"Content-Type": "application/json", "X-Echo": number})
        elif path == "/psp/other":
            other = json.loads(body or "{}").get("Other", "")
            self._answer(200, json.dumps({"other": other}), {"Content-Type": "application/json"})
        elif path == "/psp/redirect":
            self._answer(302, "", {"Location": "https://localhost:%d/psp/landing" % self.server.server_port})
        elif path == "/psp/slow":
            time.sleep(5)
            self._answer(200, "late")
        elif path == "/psp/big":
            self._answer(200, b"x" * (256 << 10), {"Content-Type": "text/plain"})
        else:
            self._answer(404, "no such path")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class Receiver:
    def __init__(self, ca):
        self.requests = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.receiver = self
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(ca.cert), str(ca.key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_port
        self.base = "https://localhost:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def hits(self, path):
        return [r for r in self.requests if r["path"].split("?")[0] == path]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
