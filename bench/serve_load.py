#!/usr/bin/env python3
"""Requests per second and latency of gpen_engine.serve at several instance counts (the table in
docs/serving.md). Starts the server per count, sends REQUESTS photos from CLIENTS concurrent
tritonclient clients (after a warm-up of one request per instance), stops it.

    bench/serve_load.py --model M.gpw --detector D.gpw --photo P [--instances 1,2,4] [--clients 8] [--requests 64]
"""
import argparse
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import tritonclient.http as httpclient


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(a, n):
    port = free_port()
    cmd = [sys.executable, "-m", "gpen_engine.serve", "--model", a.model, "--detector", a.detector,
           "--instances", str(n), "--port", str(port), "--log-file", f"/tmp/serve_load_{port}.log"]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(srv.stdout.readline())
        blob = open(a.photo, "rb").read()

        def one(c):
            inp = httpclient.InferInput("image", [1], "BYTES")
            inp.set_data_from_numpy(np.array([blob], dtype=np.object_))
            t = time.perf_counter()
            c.infer("gpen", [inp])
            return time.perf_counter() - t

        def client(k):
            c = httpclient.InferenceServerClient(url=f"127.0.0.1:{port}", network_timeout=600)
            lat = [one(c) for _ in range(k)]
            c.close()
            return lat

        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            list(pool.map(client, [1] * n))  # warm-up: every instance plans its arena once
        per = [a.requests // a.clients + (1 if i < a.requests % a.clients else 0) for i in range(a.clients)]
        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
            lat = sorted(x for l in pool.map(client, per) for x in l)
        wall = time.perf_counter() - t0
        return {"instances": n, "threads_per_instance": ready["threads_per_instance"], "requests": len(lat),
                "clients": a.clients, "rps": len(lat) / wall, "p50_ms": 1000 * float(np.percentile(lat, 50)),
                "p99_ms": 1000 * float(np.percentile(lat, 99))}
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--detector", required=True)
    ap.add_argument("--photo", required=True)
    ap.add_argument("--instances", default="1,2,4")
    ap.add_argument("--threads", type=int, default=None, help="threads per instance (default: cores / instances)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=64)
    a = ap.parse_args()
    print(f"{'instances':>9} {'threads':>7} {'req/s':>8} {'p50 ms':>9} {'p99 ms':>9}")
    for n in map(int, a.instances.split(",")):
        r = run(a, n)
        print(f"{r['instances']:>9} {r['threads_per_instance']:>7} {r['rps']:>8.2f} {r['p50_ms']:>9.0f} {r['p99_ms']:>9.0f}",
              flush=True)


if __name__ == "__main__":
    main()
