#!/usr/bin/env python3
"""ctest reference_onnx_export: the ONNX export of the peers (export_gpen_onnx.py) on a tiny GPEN.

The unfused modulated convs must give the official fused forward's output to float rounding
(max abs <= 1e-5 on outputs of magnitude ~1), and where onnxruntime is installed the exported
graph must too (<= 1e-4). Exits 77 (ctest: skipped) when torch is missing for this interpreter;
without onnxruntime only the PyTorch half runs, and says so.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    try:
        import numpy as np
        import torch  # noqa: F401
    except ImportError as e:
        print('reference_onnx_export: skipped: %s for %s' % (e, sys.executable))
        return 77
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, os.path.join(HERE, 'export_gpen_onnx.py'), '--size', '32', '--cm', '1',
                            '--narrow', '0.125', '--threads', '1', '--out-dir', d], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        info = json.loads(r.stdout.strip().splitlines()[-1])
        print('reference_onnx_export: unfused vs fused max abs %.3g' % info['unfused_vs_fused_max_abs'])
        if not info['unfused_vs_fused_max_abs'] <= 1e-5:
            return 1
        try:
            import onnxruntime as ort
        except ImportError:
            print('reference_onnx_export: onnxruntime not installed for %s: the ONNX graph itself not run '
                  '(scripts/peers_venv.sh, then GPEN_PEERS_PYTHON)' % sys.executable)
            return 0
        sess = ort.InferenceSession(info['onnx'], providers=['CPUExecutionProvider'])
        y = sess.run(None, {sess.get_inputs()[0].name: np.load(info['input'])})[0]
        err = float(np.abs(y - np.load(info['expect'])).max())
        print('reference_onnx_export: onnxruntime %s vs PyTorch max abs %.3g' % (ort.__version__, err))
        return 0 if err <= 1e-4 else 1


if __name__ == '__main__':
    sys.exit(main())
