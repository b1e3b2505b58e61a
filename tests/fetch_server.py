#!/usr/bin/python3
"""A loopback HTTP server for the `gpen fetch` tests: serves the files under a folder ROOT with Range
support (http.server has none) and can misbehave on purpose. The first path segment picks the
behaviour for the rest of the path:
  /ok/PATH        the file ROOT/PATH; "Range: bytes=N-" gets 206 and that suffix
  /cut/PATH       the first request for PATH sends half the body under the full Content-Length,
                  then closes the connection; later requests behave as /ok
  /cutalways/PATH every response is cut at the half of what it should carry
  /norange/PATH   ignores Range (always 200 with the whole file)
Anything missing is a 404. Each request is appended to LOG as one JSON line
{"path", "range"}. The chosen port is written to PORTFILE once listening.
Usage: fetch_server.py ROOT PORTFILE LOG"""
import http.server
import json
import os
import sys
import threading

ROOT, PORTFILE, LOG = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
cut_done = set()
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep the test's output clean
        pass

    def do_GET(self):
        rng = self.headers.get("Range")
        with lock, open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "range": rng}) + "\n")
        parts = self.path.lstrip("/").split("/", 1)
        mode, name = (parts + [""])[:2]
        path = os.path.normpath(os.path.join(ROOT, name))
        inside = path.startswith(os.path.normpath(ROOT) + os.sep)
        if mode not in ("ok", "cut", "cutalways", "norange") or not inside or not os.path.isfile(path):
            body = b"not found\n"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = open(path, "rb").read()
        start = 0
        if rng and mode != "norange" and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        body = data[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        cut = mode == "cutalways"
        if mode == "cut":
            with lock:
                cut = name not in cut_done
                cut_done.add(name)
        if cut:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
tmp = PORTFILE + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.replace(tmp, PORTFILE)
srv.serve_forever()
