"""What the `gpen serve` tests share: the converted models, a real server on 127.0.0.1 (a free port,
stopped with SIGTERM), plain and raw HTTP exchanges, the CLI's own outputs to compare answers with,
and the check of an answer against docs/openapi.yaml.

Environment (tests/serve/CMakeLists.txt sets it): GPEN_CLI (the gpen binary), GPEN_SHARED_DIR,
GPEN_FIXTURE_DIR, GPEN_TEST_TMP (a scratch folder). A test exits 77 (skipped) when an input it
needs is missing."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPEN = os.environ.get("GPEN_CLI", os.path.join(ROOT, "build", "gpen"))
SHARED = os.environ.get("GPEN_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
FIXTURES = os.environ.get("GPEN_FIXTURE_DIR", os.path.join(ROOT, "tests", "fixtures"))
TMP = os.environ.get("GPEN_TEST_TMP", os.path.join(ROOT, "build", "serve-test"))
DETECTOR_PTH = os.path.join(SHARED, "models", "retinaface-mobilenet0.25.pth")


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


def need(path, what):
    if not os.path.exists(path):
        skip(f"{what} is missing: {path}")


def scratch(name):
    d = os.path.join(TMP, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr.decode(errors='replace')}")
    return r


def convert(src, dst):
    if not os.path.exists(dst):
        run([GPEN, "convert", src, "-o", dst])
    return dst


def models(work):
    """The tiny GPEN of the fixtures (32 x 32) and the real RetinaFace mobilenet0.25, converted."""
    need(GPEN, "the gpen CLI")
    need(DETECTOR_PTH, "the RetinaFace mobilenet0.25 weights")
    gpen = convert(os.path.join(FIXTURES, "gpen", "s32", "checkpoint.pth"), os.path.join(work, "gpen_s32.gpw"))
    det = convert(DETECTOR_PTH, os.path.join(work, "mnet.gpw"))
    return gpen, det


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Checks:
    """check(cond, what): raises naming `what` when cond is false; counts the checks made."""

    def __init__(self):
        self.made = []

    def __call__(self, cond, what):
        self.made.append(what)
        if not cond:
            raise AssertionError(what)


def check_face_model_answers(s, api, check, kind, photo, face, restored_photo, restored_face, report, refused):
    """A service started on a GFPGAN, CodeFormer or RestoreFormer model: a photo and an aligned crop
    answered with the bytes `gpen restore` (restored_photo) and `--aligned` (restored_face) wrote with
    the service's options, the X-Faces-* headers as that restore's `report` entry, and each query of
    `refused` (GPEN's options) a 400 naming the option and `kind`. Returns the call function, each
    answer checked against docs/openapi.yaml."""
    def call(method, target, body=None):
        status, h, b = s.request(method, target, body=body)
        api.check(method, target, status, h, b)
        return status, h, b

    st, h, b = call("POST", "/v1/restore?format=png", read(photo))
    check(st == 200 and b == read(restored_photo), "a photo: the bytes of gpen restore's")
    check(int(h["x-faces-found"]) == report["faces_found"], "X-Faces-Found as gpen restore's report")
    check(int(h["x-faces-restored"]) == report["faces_restored"], "X-Faces-Restored as gpen restore's report")
    st, h, b = call("POST", "/v1/restore?aligned=1", read(face))
    check(st == 200 and b == read(restored_face), "aligned=1: the bytes of --aligned's")
    for query in refused:
        st, _, b = call("POST", "/v1/restore?" + query, read(face))
        name = "sr" if "sr" in query else "mask"
        msg = error_message(b)
        check(st == 400 and msg.startswith(name + " is an option of GPEN models") and kind in msg,
              f"{query}: 400 naming {name} and {kind} ({msg})")
    return call


class Server:
    """`gpen serve ARGS --port 0` on 127.0.0.1; waits until it listens (and, unless told not to,
    until /readyz says ready). Its stderr is collected in .log."""

    def __init__(self, args, ready=True, timeout=180):
        self.proc = subprocess.Popen([GPEN, "serve", "--port", "0", *args], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL)
        self.log = []
        self.port = None
        listening = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                self.log.append(line)
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    listening.set()
            listening.set()

        threading.Thread(target=drain, daemon=True).start()
        if not listening.wait(timeout) or self.port is None:
            self.proc.kill()
            raise AssertionError("gpen serve did not start:\n" + "\n".join(self.log))
        if ready:
            deadline = time.time() + timeout
            while self.get("/readyz")[0] != 200:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise AssertionError("gpen serve did not get ready:\n" + "\n".join(self.log))
                time.sleep(0.1)

    def request(self, method, target, body=None, headers=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, target, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def get(self, target, headers=None):
        return self.request("GET", target, headers=headers)

    def post(self, target, body, headers=None):
        return self.request("POST", target, body=body, headers=headers)

    def raw(self, data, read_timeout=30, close_write=False):
        """Sends bytes as they are and returns what comes back until the server closes (or the
        read times out): the status and the parsed JSON body of the first answer."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=read_timeout)
        try:
            try:
                s.sendall(data)
                if close_write:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return parse_answer(recv_all(s))
        finally:
            s.close()

    def rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("gpen serve did not stop on SIGTERM:\n" + "\n".join(self.log))
        time.sleep(0.1)  # the last lines of its stderr
        # The sanitizer build runs the same tests: a report fails them whatever the exit status.
        text = "\n".join(self.log)
        assert "Sanitizer" not in text and "runtime error:" not in text, text
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def recv_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if answer_complete(data):
                break
    except (socket.timeout, ConnectionResetError):
        pass
    return data


def answer_complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    return m is not None and len(body) >= int(m.group(1))


def parse_answer(data):
    """(status, headers, body) of the first answer in raw bytes; (None, {}, b"") when none came."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None, {}, b""
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", len(body)))
    return status, headers, body[:n]


def error_message(body):
    j = json.loads(body)
    assert set(j) == {"error"} and isinstance(j["error"], str) and j["error"], j
    return j["error"]


class OpenApi:
    """Answers checked against docs/openapi.yaml (OpenAPI 3.1, whose schemas are JSON Schema
    2020-12: python3-jsonschema validates them): the path, method and status are documented, the
    content type is one the status declares, JSON bodies match their schema, the required headers
    are there and match theirs."""

    def __init__(self, path=os.path.join(ROOT, "docs", "openapi.yaml")):
        try:
            import jsonschema
            import yaml
        except ImportError as e:
            skip(f"python3-jsonschema / python3-yaml: {e}")
        self.jsonschema = jsonschema
        with open(path) as f:
            self.spec = yaml.safe_load(f)
        assert self.spec["openapi"].startswith("3.1"), self.spec["openapi"]
        self.resolver = jsonschema.RefResolver("", self.spec)
        self.checked = set()
        self._check_refs(self.spec)
        for path_item in self.spec["paths"].values():
            for op in path_item.values():
                for resp in op["responses"].values():
                    for media in resp.get("content", {}).values():
                        if "schema" in media:
                            jsonschema.Draft202012Validator.check_schema(media["schema"])

    def _check_refs(self, node):
        if isinstance(node, dict):
            if "$ref" in node:
                self.resolver.resolve(node["$ref"])
            for v in node.values():
                self._check_refs(v)
        elif isinstance(node, list):
            for v in node:
                self._check_refs(v)

    def _deref(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.resolver.resolve(node["$ref"])[1]
        return node

    def check(self, method, target, status, headers, body):
        path = target.split("?")[0]
        item = self.spec["paths"].get(path)
        if item is None:
            assert status == 404, f"{path} is not in docs/openapi.yaml, answered {status}"
            responses = {"404": self.spec["components"]["responses"]["NotFound"]}
        else:
            op = item.get(method.lower())
            if op is None:
                assert status == 405, f"{method} {path}: not documented, answered {status}"
                op = item[next(iter(item))]
            responses = op["responses"]
        resp = self._deref(responses.get(str(status)) or responses.get("default"))
        assert resp is not None, f"{method} {path}: status {status} is not documented"
        ctype = headers.get("content-type", "").split(";")[0].strip()
        content = resp.get("content", {})
        assert ctype in content, f"{method} {path} {status}: content type {ctype!r}, documented {list(content)}"
        media = content[ctype]
        if ctype == "application/json":
            schema = media["schema"]
            self.jsonschema.Draft202012Validator(schema, resolver=self.resolver).validate(json.loads(body))
        for name, h in resp.get("headers", {}).items():
            h = self._deref(h)
            if h.get("required"):
                assert name.lower() in headers, f"{method} {path} {status}: header {name} missing"
            if name.lower() in headers:
                value = headers[name.lower()]
                kind = h.get("schema", {}).get("type")
                if kind == "integer":
                    value = int(value)
                elif kind == "number":
                    value = float(value)
                self.jsonschema.Draft202012Validator(h.get("schema", {}), resolver=self.resolver).validate(value)
        self.checked.add((method.upper(), path, status))
