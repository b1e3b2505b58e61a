#!/usr/bin/env python3
"""`gpen serve` under load: 16 clients send 2,000 requests, 10 % of them hostile (an empty body, a
truncated PNG, text, a PNG header claiming 60000 x 60000 pixels, a body over --max-body, a body
that stalls). Nothing crashes; every good answer equals the CLI's (restore: the bytes `gpen
restore` writes, photos and aligned crops; detect: `gpen detect --json`; the GET routes: their
first answer); every hostile one is a 4xx with a JSON error; the resident memory after the load is
within 5 % of what it was after the warm-up; p50 / p99 latency and the throughput are printed.

GPEN is a synthetic GPEN-BFR-256 (scripts/make_synthetic_gpen.py: random weights, the real layout
and cost), the detector the real RetinaFace mobilenet0.25. The mix keeps GPEN's share small enough
for about a minute on 2 cores: the engine runs ~150 faces; the rest are photos without faces,
detections and the cheap routes. LOAD_REQUESTS=N changes the count."""
import http.client
import json
import os
import queue
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import (FIXTURES, GPEN, ROOT, SHARED, Server, convert, error_message, models, need,  # noqa: E402
                           read, run, scratch, skip)

CLIENTS = 16
REQUESTS = int(os.environ.get("LOAD_REQUESTS", "2000"))
MAX_BODY = 2 << 20
READ_TIMEOUT_S = 1.0


def synthetic_gpen256(work):
    gpw = os.path.join(work, "syn256.gpw")
    if not os.path.exists(gpw):
        pth = os.path.join(work, "syn256.pth")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_synthetic_gpen.py"), pth,
                            "--size", "256", "--seed", "1"], capture_output=True)
        if r.returncode != 0:
            skip("scripts/make_synthetic_gpen.py needs torch: " + r.stderr.decode(errors="replace")[-300:])
        convert(pth, gpw)
        os.remove(pth)
    return gpw


def inputs(work):
    """Small photos: a face at 256 x 256 and a 64 x 64 aligned crop (from an FFHQ photo, aligned by
    construction), and photos without faces in each format."""
    try:
        import cv2
    except ImportError:
        skip("python3-opencv is needed to make the small inputs")
    ffhq = os.path.join(SHARED, "images", "ffhq_lq_00000.png")
    need(ffhq, "an FFHQ photo")
    img = cv2.imread(ffhq)
    d = os.path.join(work, "in")
    os.makedirs(d)
    cv2.imwrite(os.path.join(d, "face256.png"), cv2.resize(img, (256, 256), interpolation=cv2.INTER_AREA))
    cv2.imwrite(os.path.join(d, "crop64.png"), cv2.resize(img, (64, 64), interpolation=cv2.INTER_AREA))
    codec = os.path.join(FIXTURES, "image", "codec")
    for name in ("png_rgb8.png", "jpeg_420.jpg", "orient6.jpg", "webp_lossy.webp"):
        shutil.copy(os.path.join(codec, name), d)
    shutil.copy(os.path.join(FIXTURES, "image", "bgr24.bmp"), d)
    return d


def hostile_bodies(png):
    huge = bytearray(png)
    huge[16:24] = (60000).to_bytes(4, "big") * 2
    huge[29:33] = zlib.crc32(bytes(huge[12:29])).to_bytes(4, "big")
    return {
        "empty": (b"", 400),
        "truncated": (png[: len(png) // 3], 400),
        "text": (b"GET me a restored face, please\n" * 20, 400),
        "huge_header": (bytes(huge), 400),
    }


def raw_exchange(port, data, timeout=30):
    """Sends bytes, returns (status, body) of the answer (None when none came)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            buf += chunk
            head, sep, body = buf.partition(b"\r\n\r\n")
            if sep:
                n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                if n and len(body) >= n[0]:
                    break
        head, sep, body = buf.partition(b"\r\n\r\n")
        if not sep:
            return None, b""
        return int(head.split(b" ")[1]), body
    finally:
        s.close()


def main():
    work = scratch("load")
    _, det = models(os.path.dirname(work))
    gpen = synthetic_gpen256(os.path.dirname(work))
    indir = inputs(work)
    t0 = time.time()
    out = os.path.join(work, "cli")
    run([GPEN, "restore", "-m", gpen, "-d", det, indir, "-o", out, "--report", os.path.join(work, "report.json")])
    report = {os.path.basename(i["image"]): i for i in json.load(open(os.path.join(work, "report.json")))["images"]}
    assert report["face256.png"]["faces_restored"] == 1, report["face256.png"]
    run([GPEN, "restore", "-m", gpen, "--aligned", os.path.join(indir, "crop64.png"), "-o", os.path.join(work, "aligned.png")])
    face256 = os.path.join(indir, "face256.png")
    # `gpen detect --json`'s line as it prints it, the file name replaced by the server's "-".
    detect_cli = run([GPEN, "detect", "-d", det, face256, "--json"]).stdout.strip().replace(
        json.dumps(face256).encode(), b'"-"')
    print(f"CLI references: {time.time() - t0:.1f} s")

    def restore_case(name):
        cli_name = name.replace(".bmp", ".png")
        return ("POST", "/v1/restore", read(os.path.join(indir, name)), read(os.path.join(out, cli_name)))

    # (method, target, body, expected answer body or None for "as its first answer")
    good = {
        "aligned": ("POST", "/v1/restore?aligned=1", read(os.path.join(indir, "crop64.png")),
                    read(os.path.join(work, "aligned.png"))),
        "face": restore_case("face256.png"),
        "detect": ("POST", "/v1/detect", read(face256), detect_cli),
        "healthz": ("GET", "/healthz", None, b'{"status":"alive"}'),
        "readyz": ("GET", "/readyz", None, b'{"status":"ready"}'),
        "plan": ("GET", "/v1/plan", None, None),
        "page": ("GET", "/", None, None),
        "metrics": ("GET", "/metrics", None, None),
    }
    for name in ("png_rgb8.png", "jpeg_420.jpg", "orient6.jpg", "webp_lossy.webp", "bgr24.bmp"):
        good["noface_" + name] = restore_case(name)
    # Shares of the good requests: GPEN runs for "aligned" and "face" only.
    weights = {"aligned": 60, "face": 25, "detect": 80, "healthz": 150, "readyz": 100, "plan": 100, "page": 60,
               "metrics": 60}
    for k in good:
        weights.setdefault(k, 73)
    hostile = hostile_bodies(read(os.path.join(indir, "face256.png")))
    hostile_kinds = list(hostile) + ["over_limit", "stalled"]

    rng = random.Random(1)
    n_hostile = REQUESTS // 10
    plan = rng.choices(list(weights), weights=list(weights.values()), k=REQUESTS - n_hostile)
    plan += [hostile_kinds[i % len(hostile_kinds)] for i in range(n_hostile)]
    rng.shuffle(plan)

    server = Server(["-m", gpen, "-d", det, "--memory-budget", "600MiB", "--max-body", str(MAX_BODY),
                     "--read-timeout", str(READ_TIMEOUT_S), "--queue", "64"])
    port = server.port
    firsts, failures, lock = {}, [], threading.Lock()
    latencies = {"good": [], "hostile": []}

    def one(kind, conn):
        t = time.perf_counter()
        if kind in good:
            method, target, body, want = good[kind]
            for attempt in range(2):
                try:
                    conn.request(method, target, body=body)
                    r = conn.getresponse()
                    got = r.read()
                    break
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    conn.close()  # a kept-alive connection the server closed: once more on a new one
                    if attempt:
                        raise
            ms = (time.perf_counter() - t) * 1000
            with lock:
                if want is None and kind != "metrics":
                    want = firsts.setdefault(kind, got)
                ok = r.status == 200 and (kind == "metrics" or got == want)
                if not ok:
                    failures.append(f"{kind}: status {r.status}, {len(got)} bytes: {got[:200]!r}")
                latencies["good"].append(ms)
            return
        if kind in hostile:
            body, want_status = hostile[kind]
            status, got = raw_exchange(port, b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                       + str(len(body)).encode() + b"\r\n\r\n" + body)
        elif kind == "over_limit":
            want_status = 413
            status, got = raw_exchange(port, b"POST /v1/restore HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                       + str(MAX_BODY + 1).encode() + b"\r\n\r\n" + b"\0" * 4096)
        else:  # stalled: a body that stops coming
            want_status = 408
            status, got = raw_exchange(port, b"POST /v1/detect HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n"
                                       + b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
        ms = (time.perf_counter() - t) * 1000
        with lock:
            try:
                message = error_message(got)
            except (ValueError, AssertionError):
                message = None
            if status != want_status or message is None:
                failures.append(f"{kind}: status {status} (want {want_status}), body {got[:200]!r}")
            latencies["hostile"].append(ms)

    def drive(kinds):
        q = queue.Queue()
        for k in kinds:
            q.put(k)

        def client():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            while True:
                try:
                    kind = q.get_nowait()
                except queue.Empty:
                    break
                try:
                    one(kind, conn)
                except Exception as e:  # noqa: BLE001 - every failure is reported below
                    with lock:
                        failures.append(f"{kind}: {type(e).__name__}: {e}")
            conn.close()

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        t = time.time()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return time.time() - t

    try:
        # Warm-up: every kind of request, concurrently, before the memory baseline.
        warm = [k for k in good for _ in range(4)] + hostile_kinds * 2
        rng.shuffle(warm)
        warm_s = drive(warm)
        rss_warm = server.rss()
        latencies = {"good": [], "hostile": []}
        wall = drive(plan)
        rss_after = server.rss()
        alive = server.get("/healthz")[0] == 200
    finally:
        rc = server.stop()

    good_ms = sorted(latencies["good"])
    hostile_ms = sorted(latencies["hostile"])

    def pct(v, p):
        return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")

    growth = (rss_after - rss_warm) / rss_warm
    print(f"warm-up: {len(warm)} requests in {warm_s:.1f} s")
    print(f"load: {len(plan)} requests ({len(good_ms)} good, {len(hostile_ms)} hostile) from {CLIENTS} clients in "
          f"{wall:.1f} s: {len(plan) / wall:.1f} requests/s")
    print(f"latency of good requests: p50 {pct(good_ms, 50):.1f} ms, p99 {pct(good_ms, 99):.1f} ms, "
          f"mean {statistics.fmean(good_ms):.1f} ms; hostile: p50 {pct(hostile_ms, 50):.1f} ms, "
          f"p99 {pct(hostile_ms, 99):.1f} ms")
    print(f"resident memory: {rss_warm / 2**20:.1f} MiB after the warm-up, {rss_after / 2**20:.1f} MiB after the "
          f"load ({growth * 100:+.2f} %)")
    kinds = {}
    for f in failures:
        kinds[f.split(":")[0]] = kinds.get(f.split(":")[0], 0) + 1
    for f in failures[:10]:
        print("FAILED:", f)
    if failures:
        print("failures by kind:", kinds)
    assert not failures, f"{len(failures)} requests answered wrong"
    assert alive, "the server did not survive the load"
    assert abs(growth) <= 0.05, f"resident memory moved {growth * 100:+.1f} % under load"
    assert rc == 0, f"exit status {rc} after SIGTERM"
    print("ok")


if __name__ == "__main__":
    main()
