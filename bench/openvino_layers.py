#!/usr/bin/env python3
"""OpenVINO's own per-layer times for an ONNX export (the one `gpen bench --compare openvino`
made under .peers/), to set beside `gpen bench --profile`: which layers the engine leads by less.

Runs the model on the CPU plugin with the settings of tests/reference/peer_bench.py (threads, one
stream, latency hint, f32) and PERF_COUNT on; after --warmup runs, keeps the fastest of --runs
inferences and prints its wall time, the time per (layer type, kernel), and the slowest layers.
OpenVINO fuses and renames layers (a blur is a Pad and a Convolution, a modulated conv a Subgraph
around a Convolution), so the names map onto the engine's nodes by their ONNX paths, not one to one.
Usage (the peers' interpreter, scripts/peers_venv.sh):
  .venv-peers/bin/python bench/openvino_layers.py .peers/gpen_256_cm1_n0.5_b1.onnx [--threads 2] [--top 30]
"""
import argparse
import collections
import sys
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('onnx')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--warmup', type=int, default=3)
    ap.add_argument('--top', type=int, default=30)
    a = ap.parse_args(argv)
    import openvino as ov
    core = ov.Core()
    try:
        model = core.read_model(a.onnx)
    except Exception as e:  # noqa: BLE001 - OpenVINO raises its own types
        sys.exit(f'openvino_layers: {a.onnx}: {e}')
    cfg = {'INFERENCE_NUM_THREADS': str(a.threads), 'NUM_STREAMS': '1', 'PERFORMANCE_HINT': 'LATENCY',
           'INFERENCE_PRECISION_HINT': 'f32', 'PERF_COUNT': 'YES'}
    compiled = core.compile_model(model, 'CPU', cfg)
    req = compiled.create_infer_request()
    rng = np.random.default_rng(0)
    feed = {i.any_name: rng.random(tuple(i.shape), dtype=np.float32) for i in compiled.inputs}
    for _ in range(a.warmup):
        req.infer(feed)
    best = None
    for _ in range(a.runs):
        t = time.perf_counter()
        req.infer(feed)
        dt = time.perf_counter() - t
        if best is None or dt < best[0]:
            best = (dt, [(p.real_time.total_seconds() * 1e3, p.node_name, p.node_type, p.exec_type)
                         for p in req.get_profiling_info()])
    print(f'openvino {ov.__version__}, {a.threads} threads: {best[0] * 1e3:.2f} ms wall (fastest of {a.runs})')
    by = collections.defaultdict(float)
    for ms, _, typ, ex in best[1]:
        by[(typ, ex)] += ms
    print('by layer type and kernel (ms):')
    for (typ, ex), ms in sorted(by.items(), key=lambda kv: -kv[1]):
        if ms > 0:
            print(f'  {ms:8.3f}  {typ} ({ex})')
    print(f'slowest {a.top} layers (ms):')
    for ms, name, typ, ex in sorted(best[1], reverse=True)[:a.top]:
        print(f'  {ms:8.3f}  {name}  {typ} ({ex})')


if __name__ == '__main__':
    main()
