"""The app of issue 10: Python's http.server with one thread per connection
(socketserver.ThreadingMixIn), a listen backlog of 5, and HTTP/1.1 keep-alive.

    python3 app.py --listen 127.0.0.1:3001 [--name NAME] [--boot-delay SECONDS]

GET /_stats  200 {"connections_peak", "requests_peak", "requests"}: the most
             connections open at once, the most requests in progress at once,
             and the requests answered, since the app started
GET (other)  200 {"name", "pid", "listening_at"}: a short body
POST         reads the whole body, by Content-Length or chunked (http.server
             does not decode chunked bodies: read_body does), and answers
             200 {"bytes": n, "sha256": "..."}
"""

import argparse
import datetime
import hashlib
import http.server
import json
import os
import threading
import time

BACKLOG = 5


class Server(http.server.ThreadingHTTPServer):
    # socketserver passes it to listen(): the backlog of the report.
    request_queue_size = BACKLOG


class Stats:
    """Counts connections and requests; a lock, since each has its thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.connections = self.connections_peak = 0
        self.in_progress = self.requests_peak = 0
        self.requests = 0

    def opened(self):
        with self.lock:
            self.connections += 1
            self.connections_peak = max(self.connections_peak, self.connections)

    def closed(self):
        with self.lock:
            self.connections -= 1

    def started(self):
        with self.lock:
            self.in_progress += 1
            self.requests_peak = max(self.requests_peak, self.in_progress)

    def ended(self):
        with self.lock:
            self.in_progress -= 1
            self.requests += 1

    def snapshot(self):
        with self.lock:
            return {
                "connections_peak": self.connections_peak,
                "requests_peak": self.requests_peak,
                "requests": self.requests,
            }


class BadBody(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the report's app
    name = "pyapp"
    listening_at = ""
    stats = Stats()

    def setup(self):
        super().setup()
        self.stats.opened()

    def finish(self):
        try:
            super().finish()
        finally:
            self.stats.closed()

    def do_GET(self):
        self.stats.started()
        try:
            if self.path == "/_stats":
                self.reply(self.stats.snapshot())
            else:
                self.reply({"name": self.name, "pid": os.getpid(), "listening_at": self.listening_at})
        finally:
            self.stats.ended()

    def do_POST(self):
        self.stats.started()
        try:
            try:
                n, digest = self.read_body()
            except (BadBody, ValueError) as e:
                self.close_connection = True
                self.send_error(400, str(e))
                return
            self.reply({"bytes": n, "sha256": digest})
        finally:
            self.stats.ended()

    def read_body(self):
        """Reads the body whole and returns its length and SHA-256."""
        h = hashlib.sha256()
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            n = 0
            while True:
                line = self.rfile.readline(1024)
                if not line.endswith(b"\n"):
                    raise BadBody("a chunk size line is cut or too long")
                size = int(line.split(b";", 1)[0].strip(), 16)  # chunk extensions ignored
                if size == 0:
                    break
                n += self.copy(h, size)
                if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                    raise BadBody("a chunk does not end with CRLF")
            while True:  # trailers, up to the empty line
                line = self.rfile.readline(8192)
                if line in (b"\r\n", b"\n"):
                    break
                if not line:
                    raise BadBody("the body ends before its last CRLF")
            return n, h.hexdigest()
        return self.copy(h, int(self.headers.get("Content-Length") or 0)), h.hexdigest()

    def copy(self, h, size):
        left = size
        while left:
            b = self.rfile.read(min(left, 64 << 10))
            if not b:
                raise BadBody("the body ends early")
            h.update(b)
            left -= len(b)
        return size

    def reply(self, obj):
        body = json.dumps(obj).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # a line per request would cost more than the answer


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", required=True, help="host:port")
    p.add_argument("--name", default="pyapp")
    p.add_argument("--boot-delay", type=float, default=0, help="seconds to wait before opening the port")
    args = p.parse_args()
    time.sleep(args.boot_delay)
    host, port = args.listen.rsplit(":", 1)
    Handler.name = args.name
    with Server((host, int(port)), Handler) as srv:
        Handler.listening_at = datetime.datetime.now(datetime.timezone.utc).isoformat()
        srv.serve_forever()


if __name__ == "__main__":
    main()
