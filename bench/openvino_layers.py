#!/usr/bin/env python3
"""OpenVINO's own per-layer times for an ONNX export (the one `gpen bench --compare openvino`
made under .peers/), to set beside `gpen bench --profile`: which layers the engine leads by less.

Runs the model on the CPU plugin with the settings of tests/reference/peer_bench.py (threads, one
stream, latency hint, f32) and PERF_COUNT on; after --warmup runs, keeps the fastest of --runs
inferences and prints its wall time, the time per (layer type, kernel), and the slowest layers.
OpenVINO fuses and renames layers (a blur is a Pad and a Convolution, a modulated conv a Subgraph
around a Convolution), so the names map onto the engine's nodes by their ONNX paths, not one to one.
With --engine JSON (the output of `gpen bench --profile --json` on the same configuration, run just
before), it also sets each of OpenVINO's convolutions beside the engine node it computes, with the
ratio, and sums both by kind (stride-1 convs, transposed convs, stride-2 convs, blurs, the rest).
Usage (the peers' interpreter, scripts/peers_venv.sh):
  .venv-peers/bin/python bench/openvino_layers.py .peers/gpen_256_cm1_n0.5_b1.onnx [--threads 2] [--top 30]
      [--engine profile.json]
"""
import argparse
import collections
import json
import re
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
    ap.add_argument('--engine', help='gpen bench --profile --json output to set beside OpenVINO\'s layers')
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
    if a.engine:
        side_by_side(best[1], a.engine)


def engine_node(name, typ):
    """The engine node (gpen bench --profile) that OpenVINO's convolution `name` computes, or None.
    OpenVINO keeps the ONNX paths: /generator/convs.5/conv/Conv is generator.convs.5, its
    ConvTranspose the node's .convT, .../conv/blur/Conv its .blur; /ecd1/ecd1.0/ecd1.0.0/Conv is
    ecd1's blur and .../ecd1.0.1/Conv the stride-2 conv ecd1 (ecd0.0.0 is ecd0, a 1x1 conv)."""
    if typ not in ('Convolution', 'ConvolutionBackpropData'):
        return None
    parts = name.strip('/').split('/')
    if parts[0] == 'generator' and len(parts) >= 3:
        node = 'generator.' + parts[1]
        if 'blur' in parts:
            return node + '.blur'
        return node + ('.convT' if typ == 'ConvolutionBackpropData' else '')
    m = re.fullmatch(r'(ecd\d+)\.0\.(\d)', parts[2] if len(parts) >= 3 else '')
    if m:
        ecd, i = m.group(1), int(m.group(2))
        return ecd if ecd == 'ecd0' or i == 1 else ecd + '.blur'
    return None


def kind(node, op):
    if node.endswith('.blur'):
        return 'blurs'
    if op == 'modconv_up':
        return 'transposed 3x3'
    if op == 'conv2d' and node != 'ecd0':
        return 'stride-2 3x3'
    if op == 'modconv' and 'to_rgb' not in node:
        return 'stride-1 3x3'
    return 'the rest'


def side_by_side(layers, engine_json):
    with open(engine_json) as f:
        prof = json.load(f)['profile']
    eng = {n['node']: (n['ms'], n['op']) for n in prof['nodes']}
    ov = collections.defaultdict(float)
    ov_rest = 0.0
    for ms, name, typ, _ in layers:
        node = engine_node(name, typ)
        if node in eng:
            ov[node] += ms
        else:
            ov_rest += ms
    sums = collections.defaultdict(lambda: [0.0, 0.0])
    for node, (ms, op) in eng.items():
        k = kind(node, op) if node in ov else 'the rest'
        sums[k][0] += ms
        sums[k][1] += ov.get(node, 0.0)
    sums['the rest'][1] += ov_rest
    print(f'engine ({engine_json}: {prof["total_ms"]:.2f} ms, each node timed alone) beside OpenVINO, by kind (ms):')
    print(f'  {"kind":<16}{"engine":>10}{"openvino":>10}{"ratio":>8}')
    for k in ('stride-1 3x3', 'transposed 3x3', 'stride-2 3x3', 'blurs', 'the rest'):
        e, o = sums[k]
        print(f'  {k:<16}{e:10.3f}{o:10.3f}{(o / e if e else 0):8.2f}')
    e = sum(v[0] for v in sums.values())
    o = sum(v[1] for v in sums.values())
    print(f'  {"all":<16}{e:10.3f}{o:10.3f}{o / e:8.2f}')
    print('per convolution (ms, OpenVINO / engine):')
    for node in sorted(ov, key=lambda n: -eng[n][0]):
        print(f'  {node:<28}{eng[node][1]:<12}{eng[node][0]:8.3f}{ov[node]:9.3f}{ov[node] / eng[node][0]:7.2f}')


if __name__ == '__main__':
    main()
