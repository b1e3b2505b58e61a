#!/usr/bin/env python3
"""Times the GPEN ONNX export (export_gpen_onnx.py), or with --arch retinaface the RetinaFace
export of --checkpoint for --image (export_retinaface_onnx.py: the network alone, on the input
the engine's detect() feeds), or with --arch gfpgan, codeformer or restoreformer the export named by --onnx, --input
and --expect (export_gfpgan_onnx.py, export_transformer_onnx.py, run by gpen bench itself, which
feeds the engine the same input),
on ONNX Runtime or OpenVINO, CPU, fp32. --save-output keeps the peer's last output (.npy) for the
caller to compare with its own.

Run with the peers' interpreter (.venv-peers/bin/python, made by scripts/peers_venv.sh). When
the export for the configuration is not in --cache-dir yet, it is made first in a separate
process (torch stays out of the timed process and its peak RSS). The peer runs the export's
input with the given threads (ONNX Runtime: intra_op_num_threads, one inter-op thread, all
graph optimisations; OpenVINO: INFERENCE_NUM_THREADS, one stream, latency hint); its output is
compared with the official PyTorch forward on the same input (max abs). Prints one JSON line:
ms_per_face (median of --runs after --warmup), min_ms_per_face, peak_rss_mib (the whole
process, ru_maxrss), max_abs_vs_pytorch, the peer's version and settings; {"error"} on failure.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The archs whose export the caller made and names (--onnx, --input, --expect).
EXPORTED = ('gfpgan', 'codeformer', 'restoreformer')


def ensure_export(a):
    if a.arch in EXPORTED:
        return a.onnx, a.input, a.expect, None
    if a.arch == 'retinaface':
        # The export names its files after the checkpoint and the input size: let it decide.
        cmd = [a.export_python, os.path.join(HERE, 'export_retinaface_onnx.py'), '--checkpoint', a.checkpoint,
               '--image', a.image, '--out-dir', a.cache_dir]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError('the ONNX export failed: ' + (r.stderr.strip().splitlines() or ['?'])[-1])
        e = json.loads(r.stdout.strip().splitlines()[-1])
        return e['onnx'], e['input'], e['expect'], e
    onnx_path, in_path, exp_path = export_paths(a)
    if all(os.path.exists(p) for p in (onnx_path, in_path, exp_path)):
        return onnx_path, in_path, exp_path, None
    cmd = [a.export_python, os.path.join(HERE, 'export_gpen_onnx.py'), '--size', str(a.size), '--cm', str(a.cm),
           '--narrow', str(a.narrow), '--batch', str(a.batch), '--out-dir', a.cache_dir]
    if a.threads > 0:
        cmd += ['--threads', str(a.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('the ONNX export failed: ' + (r.stderr.strip().splitlines() or ['?'])[-1])
    return onnx_path, in_path, exp_path, json.loads(r.stdout.strip().splitlines()[-1])


def export_paths(a):
    stem = os.path.join(a.cache_dir, 'gpen_%d_cm%g_n%g_b%d' % (a.size, float(a.cm), a.narrow, a.batch))
    return stem + '.onnx', stem + '_input.npy', stem + '_expect.npy'


def onnxruntime_runner(onnx_path, threads):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx_path, so, providers=['CPUExecutionProvider'])
    name = sess.get_inputs()[0].name
    settings = {'intra_op_num_threads': threads, 'inter_op_num_threads': 1, 'graph_optimization': 'ORT_ENABLE_ALL'}
    def run(x):
        outs = sess.run(None, {name: x})
        return outs[0] if len(outs) == 1 else np.concatenate(outs, -1)
    return run, ort.__version__, settings


def openvino_runner(onnx_path, threads):
    import numpy as np
    import openvino as ov
    core = ov.Core()
    cfg = {'INFERENCE_NUM_THREADS': threads, 'NUM_STREAMS': 1, 'PERFORMANCE_HINT': 'LATENCY',
           'INFERENCE_PRECISION_HINT': 'f32'}
    compiled = core.compile_model(core.read_model(onnx_path), 'CPU', cfg)
    req = compiled.create_infer_request()
    out = compiled.outputs[0]

    def run(x):
        req.infer({0: x})
        if len(compiled.outputs) > 1:
            return np.concatenate([req.get_tensor(o).data.copy() for o in compiled.outputs], -1)
        return req.get_tensor(out).data.copy()
    settings = {k: str(v) for k, v in cfg.items()}
    # Which ISA the compiled kernels use (brgconv_avx512_f32, jit_avx2_f32, ...): under
    # bench/avx2_only.c this shows the AVX2 path was taken.
    isa = {}
    for node in compiled.get_runtime_model().get_ordered_ops():
        rt = node.get_rt_info()
        if 'primitiveType' in rt:
            for tok in str(rt['primitiveType'].astype(str)).split('_'):
                if tok.startswith(('avx', 'sse', 'amx', 'ref')):
                    isa[tok] = isa.get(tok, 0) + 1
    settings['primitive_isa'] = ','.join('%s:%d' % kv for kv in sorted(isa.items()))
    return run, ov.__version__, settings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--peer', choices=('onnxruntime', 'openvino'), required=True)
    ap.add_argument('--arch', choices=('gpen', 'retinaface') + EXPORTED, default='gpen')
    ap.add_argument('--checkpoint', help='--arch retinaface: the .pth the export loads')
    ap.add_argument('--image', help='--arch retinaface: the photo whose network input is timed')
    ap.add_argument('--onnx', help='--arch gfpgan, codeformer, restoreformer: the export')
    ap.add_argument('--input', help='--arch gfpgan, codeformer, restoreformer: its input (.npy)')
    ap.add_argument('--expect', help='--arch gfpgan, codeformer, restoreformer: the official forward on that input (.npy)')
    ap.add_argument('--save-output', help='where to write the peer\'s output (.npy)')
    ap.add_argument('--size', type=int, default=512)
    ap.add_argument('--cm', type=float, default=2)
    ap.add_argument('--narrow', type=float, default=1.0)
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--warmup', type=int, default=1)
    ap.add_argument('--cache-dir', required=True, help='where the ONNX export and its input/output are kept')
    ap.add_argument('--export-python', default='/usr/bin/python3', help='the interpreter with torch for the export')
    a = ap.parse_args(argv)
    info = {'peer': a.peer, 'size': a.size, 'cm': a.cm, 'narrow': a.narrow, 'batch': a.batch, 'threads': a.threads,
            'runs': a.runs, 'warmup': a.warmup}
    if a.arch == 'retinaface':
        if not a.checkpoint or not a.image:
            ap.error('--arch retinaface needs --checkpoint and --image')
        info = {'peer': a.peer, 'arch': 'retinaface', 'checkpoint': a.checkpoint, 'image': a.image,
                'threads': a.threads, 'runs': a.runs, 'warmup': a.warmup, 'timed': 'network only'}
    if a.arch in EXPORTED:
        if not (a.onnx and a.input and a.expect):
            ap.error('--arch %s needs --onnx, --input and --expect' % a.arch)
        info = {'peer': a.peer, 'arch': a.arch, 'batch': a.batch, 'threads': a.threads, 'runs': a.runs,
                'warmup': a.warmup}
    try:
        import numpy as np
        onnx_path, in_path, exp_path, exported = ensure_export(a)
        info['onnx'] = onnx_path
        if exported:
            info['export'] = exported
        x = np.load(in_path)
        expect = np.load(exp_path)
        t0 = time.perf_counter()
        runner = onnxruntime_runner if a.peer == 'onnxruntime' else openvino_runner
        run, version, settings = runner(onnx_path, a.threads)
        info.update(version=version, settings=settings, load_s=round(time.perf_counter() - t0, 3))
        times, y = [], None
        for i in range(a.warmup + a.runs):
            t = time.perf_counter()
            y = run(x)
            if i >= a.warmup:
                times.append(time.perf_counter() - t)
        med = float(np.median(times))
        info.update(ms_per_face=1e3 * med / a.batch, min_ms_per_face=1e3 * min(times) / a.batch,
                    peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
                    max_abs_vs_pytorch=float(np.abs(y - expect).max()),
                    mean_abs_vs_pytorch=float(np.abs(y - expect).mean()))
        if a.arch == 'retinaface':
            info['median_ms'] = info['ms_per_face']
        if a.save_output:
            np.save(a.save_output, np.ascontiguousarray(y, dtype=np.float32))
    except Exception as e:  # one peer failing must not hide the other
        info['error'] = '%s: %s' % (type(e).__name__, (str(e).strip().splitlines() or [''])[0][:400])
        print(json.dumps(info))
        return 1
    print(json.dumps(info))
    return 0


if __name__ == '__main__':
    sys.exit(main())
