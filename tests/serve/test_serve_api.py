#!/usr/bin/env python3
"""`gpen serve` end to end on 127.0.0.1, every answer checked against docs/openapi.yaml: each route's
good answers equal the CLI's (restore: the bytes `gpen restore` writes for the same file and options,
in every input format, EXIF orientation included; photos and aligned crops, also when concurrent requests
share GPEN batches; detect: `gpen detect --json`'s object; plan: `gpen plan --pipeline --json`'s);
bad images are 400 with the decoder's message; 404, 405, 413 (on Content-Length, before the body is
sent, and for a chunked body), 408 for a stalled body, keep-alive, 100-continue; the API key (401);
a full queue (503 with Retry-After); SIGTERM stops accepting, finishes the request in flight and
exits 0. Models: the tiny GPEN of the fixtures (32 x 32) and the real RetinaFace mobilenet0.25."""
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import socket
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import (FIXTURES, GPEN, SHARED, OpenApi, Server, error_message, models, need,  # noqa: E402
                           read, run, scratch)

CHECKS = []


def check(cond, what):
    CHECKS.append(what)
    if not cond:
        raise AssertionError(what)


class Client:
    """Requests through a server, every answer checked against the OpenAPI document."""

    def __init__(self, server, api):
        self.s, self.api = server, api

    def call(self, method, target, body=None, headers=None):
        status, h, b = self.s.request(method, target, body=body, headers=headers)
        self.api.check(method, target, status, h, b)
        return status, h, b

    def raw(self, method, target, data, **kw):
        status, h, b = self.s.raw(data, **kw)
        check(status is not None, f"{method} {target}: an answer")
        self.api.check(method, target, status, h, b)
        return status, h, b


def png_claiming(width, height, png):
    """A real PNG whose IHDR claims another size (with its CRC made right again)."""
    b = bytearray(png)
    b[16:20] = width.to_bytes(4, "big")
    b[20:24] = height.to_bytes(4, "big")
    b[29:33] = zlib.crc32(bytes(b[12:29])).to_bytes(4, "big")
    return bytes(b)


def photos(work):
    """Inputs in every format the server reads, and the CLI's outputs for them (a folder run, so
    each output keeps its input's format; the BMP's is a PNG)."""
    src = {
        "kids.png": os.path.join(FIXTURES, "align", "kids", "image.png"),
        "kids.jpg": os.path.join(SHARED, "images", "kids_1024x768.jpg"),
        "orient6.jpg": os.path.join(FIXTURES, "image", "codec", "orient6.jpg"),
        "orient6.webp": os.path.join(FIXTURES, "image", "codec", "orient6.webp"),
        "bgr24.bmp": os.path.join(FIXTURES, "image", "bgr24.bmp"),
    }
    indir = os.path.join(work, "in")
    os.makedirs(indir)
    for name, path in src.items():
        need(path, name)
        shutil.copy(path, os.path.join(indir, name))
    return indir


def main():
    work = scratch("api")
    gpen, det = models(os.path.dirname(work))
    api = OpenApi()
    indir = photos(work)
    ffhq = os.path.join(SHARED, "images", "ffhq_lq_00000.png")  # FFHQ photos are aligned faces
    need(ffhq, "an aligned face")

    # The CLI's answers.
    t0 = time.time()
    out = os.path.join(work, "cli")
    run([GPEN, "restore", "-m", gpen, "-d", det, indir, "-o", out, "--report", os.path.join(work, "report.json")])
    report = {os.path.basename(i["image"]): i for i in json.load(open(os.path.join(work, "report.json")))["images"]}
    kids_png = os.path.join(indir, "kids.png")
    kids_jpg = os.path.join(indir, "kids.jpg")
    run([GPEN, "restore", "-m", gpen, "-d", det, kids_png, "-o", os.path.join(work, "q80.jpg"), "--jpeg-quality", "80"])
    run([GPEN, "restore", "-m", gpen, "-d", det, kids_jpg, "-o", os.path.join(work, "kids.webp")])
    run([GPEN, "restore", "-m", gpen, "--aligned", ffhq, "-o", os.path.join(work, "aligned.png")])
    detect_cli = json.loads(run([GPEN, "detect", "-d", det, kids_jpg, "--json"]).stdout)
    print(f"CLI references: {time.time() - t0:.1f} s")

    t0 = time.time()
    s = Server(["-m", gpen, "-d", det, "--max-body", "4MiB", "--read-timeout", "1.5", "--batch-wait-ms", "1000",
                "--queue", "16"])
    print(f"server ready: {time.time() - t0:.1f} s")
    c = Client(s, api)
    try:
        # Liveness, readiness, the page.
        st, h, _ = c.call("GET", "/healthz")
        version = run([GPEN, "--version"]).stdout.decode().split()[1]
        check(st == 200 and h["server"] == f"gpen-engine/{version}", f"healthz 200, Server: gpen-engine/{version}")
        st, _, b = c.call("GET", "/readyz")
        check(st == 200 and json.loads(b) == {"status": "ready"}, "readyz ready")
        st, h, page = c.call("GET", "/")
        check(st == 200 and b"<html" in page and b"http:" not in page and b"https:" not in page,
              "the page, without external URLs")

        # restore: every input format, default options, equal to the CLI's file byte for byte.
        for name in sorted(os.listdir(indir)):
            st, h, b = c.call("POST", "/v1/restore", read(os.path.join(indir, name)))
            cli_name = re.sub(r"\.bmp$", ".png", name)
            check(st == 200, f"restore {name}: 200")
            check(b == read(os.path.join(out, cli_name)), f"restore {name}: the bytes of gpen restore's {cli_name}")
            check(int(h["x-faces-found"]) == report[name]["faces_found"], f"restore {name}: X-Faces-Found")
            check(int(h["x-faces-restored"]) == report[name]["faces_restored"], f"restore {name}: X-Faces-Restored")
        check(report["kids.png"]["faces_restored"] > 0, "the kids photo has faces restored")
        st, h, b = c.call("POST", "/v1/restore?format=jpg&quality=80", read(kids_png))
        check(h["content-type"] == "image/jpeg" and b == read(os.path.join(work, "q80.jpg")),
              "format=jpg&quality=80 equals --jpeg-quality 80")
        st, h, b = c.call("POST", "/v1/restore?format=webp", read(kids_jpg))
        check(h["content-type"] == "image/webp" and b == read(os.path.join(work, "kids.webp")), "format=webp")

        # Aligned crops: 8 at once share GPEN batches; each answer equals the CLI's.
        want = read(os.path.join(work, "aligned.png"))
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: c.call("POST", "/v1/restore?aligned=1", read(ffhq)), range(8)))
        check(all(a[0] == 200 and a[2] == want for a in answers), "aligned=1: 8 concurrent answers equal --aligned")
        metrics = c.call("GET", "/metrics")[2].decode()
        ones = int(re.search(r'gpen_batch_size_bucket\{le="1"\} (\d+)', metrics).group(1))
        batches = int(re.search(r"gpen_batch_size_count (\d+)", metrics).group(1))
        check(batches > ones, f"aligned crops of concurrent requests shared batches ({batches - ones} of {batches})")

        # Photos: 4 at once share GPEN batches (fewer GPEN runs than photos); each answer is still
        # the bytes gpen restore writes for that photo alone.
        want = read(os.path.join(work, "kids.webp"))
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: c.call("POST", "/v1/restore?format=webp", read(kids_jpg)), range(4)))
        check(all(a[0] == 200 and a[2] == want for a in answers), "4 concurrent photos equal gpen restore's")
        metrics = c.call("GET", "/metrics")[2].decode()
        runs = int(re.search(r"gpen_batch_size_count (\d+)", metrics).group(1)) - batches
        check(0 < runs < 4, f"photos of concurrent requests shared GPEN batches ({runs} runs for 4 photos)")

        # detect and plan.
        st, h, b = c.call("POST", "/v1/detect", read(kids_jpg))
        got = json.loads(b)
        check(got["image"] == "-" and {**got, "image": detect_cli["image"]} == detect_cli, "detect equals gpen detect")
        st, h, b = c.call("GET", "/v1/plan")
        plan = json.loads(b)
        cli_plan = json.loads(run([GPEN, "plan", "--pipeline", "--arch", "retinaface-mnet", "--input-size", "1500x1500",
                                   "-m", gpen, "--batch", str(plan["batch_limit"]), "--precision", "fp32",
                                   "--device", "cpu", "--json"]).stdout)
        check({k: v for k, v in plan.items() if k != "batch_limit"} == cli_plan, "plan equals gpen plan --pipeline")

        # Metrics after traffic.
        st, h, b = c.call("GET", "/metrics")
        text = b.decode()
        check(h["content-type"].startswith("text/plain; version=0.0.4"), "metrics content type")
        for series in ['gpen_http_requests_total{route="/v1/restore",status="200"}',
                       'gpen_http_request_duration_seconds_bucket{route="/v1/restore",le="+Inf"}',
                       "gpen_faces_found_total", "gpen_faces_restored_total", "gpen_batch_size_count",
                       "gpen_queue_depth", "gpen_arena_bytes", "gpen_weights_bytes", "gpen_workspace_bytes",
                       "gpen_resident_bytes"]:
            check(series in text, f"metrics: {series}")
        restored = int(re.search(r"gpen_faces_restored_total (\d+)", text).group(1))
        check(restored >= sum(r["faces_restored"] for r in report.values()) + 8, "metrics count restored faces")

        # Bad requests.
        png = read(kids_png)
        for body, words in [(b"", "empty"), (b"this is text, not an image", "unsupported image format"),
                            (png[: len(png) // 2], "PNG"), (png_claiming(60000, 60000, png), "pixels")]:
            for route in ("/v1/restore", "/v1/detect"):
                st, h, b = c.call("POST", route, body)
                check(st == 400 and words in error_message(b), f"{route} on a bad image ({words}): 400")
        check(c.call("POST", "/v1/restore?fromat=png", png)[0] == 400, "an unknown parameter: 400")
        check(c.call("POST", "/v1/restore?mask=parse", png)[0] == 400, "mask=parse without --parse: 400")
        check(c.call("GET", "/no/such/path")[0] == 404, "unknown path: 404")
        st, h, b = c.call("GET", "/v1/restore")
        check(st == 405 and h["allow"] == "POST", "GET /v1/restore: 405, Allow: POST")
        check(c.call("PUT", "/metrics", b"x")[0] == 405, "PUT /metrics: 405")

        # Over --max-body: refused on the headers, before the body is sent; also chunked.
        # (Waiting for the body would end in a 408 after --read-timeout instead.)
        st, h, b = c.raw("POST", "/v1/restore",
                         b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n")
        check(st == 413 and "max-body" in error_message(b), "413 on Content-Length, without the body")
        st, h, b = c.raw("POST", "/v1/restore", b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n"
                         b"Expect: 100-continue\r\n\r\n")
        check(st == 413, "413 to an Expect: 100-continue request over the limit")
        chunk = b"x" * 65536
        chunked = b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + \
            b"".join(b"10000\r\n" + chunk + b"\r\n" for _ in range(70)) + b"0\r\n\r\n"
        st, h, b = c.raw("POST", "/v1/restore", chunked)
        check(st == 413, "413 on a chunked body past the limit")
        # 100-continue within the limit: the server asks for the body, then answers.
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        sock.sendall(b"POST /v1/detect HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: "
                     + str(len(png)).encode() + b"\r\n\r\n")
        check(sock.recv(100).startswith(b"HTTP/1.1 100 Continue"), "100 Continue before the body")
        sock.sendall(png)
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        check(resp.status == 200, "the answer after 100 Continue")
        sock.close()

        # A stalled body: 408 after --read-timeout, with a JSON error.
        t0 = time.time()
        st, h, b = c.raw("POST", "/v1/restore", b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
                         + png[:100])
        waited = time.time() - t0
        check(st == 408 and 1.4 < waited < 10, f"a stalled body: 408 after {waited:.1f} s")
        st, h, b = c.raw("GET", "/healthz", b"GET /heal", read_timeout=10)
        check(st == 408, "stalled headers: 408")
        st, h, b = c.raw("GET", "/healthz", b"NOT HTTP AT ALL\r\n\r\n")
        check(st == 400, "garbage: 400")
        st, h, b = c.raw("GET", "/healthz", b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        check(st == 431, "headers over 16 KiB: 431")

        # Keep-alive: several requests on one connection.
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        for _ in range(3):
            conn.request("POST", "/v1/detect", body=png)
            r = conn.getresponse()
            check(r.status == 200 and json.loads(r.read())["faces"], "keep-alive: detect again on one connection")
        conn.close()
        check(c.call("GET", "/healthz")[0] == 200, "still alive after the hostile requests")
    finally:
        rc = s.stop()
    check(rc == 0, f"SIGTERM: exit status 0 (was {rc})")

    # The API key, a full queue, and SIGTERM with a request in flight.
    key_file = os.path.join(work, "key.txt")
    with open(key_file, "w") as f:
        f.write("  k3y-for-the-test \n")
    s = Server(["-m", gpen, "-d", det, "--api-key-file", key_file, "--queue", "1", "--read-timeout", "30"])
    c = Client(s, api)
    auth = {"Authorization": "Bearer k3y-for-the-test"}
    try:
        for method, target, body in [("GET", "/v1/plan", None), ("POST", "/v1/restore", png), ("POST", "/v1/detect", png)]:
            st, h, b = c.call(method, target, body)
            check(st == 401 and h["www-authenticate"] == "Bearer", f"{target} without the key: 401")
            st, h, b = c.call(method, target, body, {"Authorization": "Bearer k3y-for-the-tesT"})
            check(st == 401, f"{target} with a wrong key: 401")
            check(c.call(method, target, body, auth)[0] == 200, f"{target} with the key: 200")
        check(c.call("GET", "/healthz")[0] == 200 and c.call("GET", "/metrics")[0] == 200,
              "healthz and metrics need no key")

        # Hold the only queue slot: a restore whose body has not arrived yet.
        held = socket.create_connection(("127.0.0.1", s.port), timeout=60)
        held.sendall(b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k3y-for-the-test\r\n"
                     b"Content-Length: " + str(len(png)).encode() + b"\r\n\r\n" + png[:1000])
        deadline = time.time() + 10
        while "gpen_queue_depth 1" not in s.get("/metrics")[2].decode() and time.time() < deadline:
            time.sleep(0.05)
        st, h, b = c.call("POST", "/v1/detect", png, auth)
        check(st == 503 and h["retry-after"] == "1", "the queue full: 503 with Retry-After")

        # SIGTERM now: no new connections; the request in flight is finished and answered.
        s.proc.send_signal(15)
        deadline = time.time() + 10
        refused = False
        while time.time() < deadline and not refused:
            try:
                socket.create_connection(("127.0.0.1", s.port), timeout=1).close()
                time.sleep(0.05)
            except ConnectionRefusedError:
                refused = True
        check(refused, "after SIGTERM new connections are refused")
        held.sendall(png[1000:])
        resp = http.client.HTTPResponse(held)
        resp.begin()
        body = resp.read()
        check(resp.status == 200 and body == read(os.path.join(out, "kids.png")),
              "the request in flight at SIGTERM is answered in full")
        held.close()
        rc = s.proc.wait(60)
        check(rc == 0, f"after draining: exit status 0 (was {rc})")
    finally:
        s.stop()

    # Every documented route was exercised.
    for path, item in api.spec["paths"].items():
        for method in item:
            check((method.upper(), path, 200) in api.checked, f"{method.upper()} {path} answered 200 at least once")
    print(f"ok: {len(CHECKS)} checks, {len(api.checked)} (method, path, status) combinations validated")


if __name__ == "__main__":
    main()
