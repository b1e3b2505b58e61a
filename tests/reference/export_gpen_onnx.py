#!/usr/bin/python3
"""Exports gpen_reference.py's FullGenerator to ONNX for the ONNX Runtime / OpenVINO peers.

The model is the one `gpen bench --compare-pytorch` times: random_model(size, cm, narrow, seed)
(speed does not depend on the values), and the input that bench uses (torch.rand with seed 0,
times 2 minus 1). The modulated convs are written unfused, the form ONNX exporters accept and
deployments (FaceFusion's GPEN exports) run: input times the style, a conv with the static weight
(a constant, folded at export), output times the demodulation d[n, o] = rsqrt(sum_i s[n, i]^2 *
sum_k w[o, i, k]^2 + 1e-8); the same sums as the official grouped conv up to float rounding. The
2x FIR upsampling zero-inserts with stack + reshape instead of a strided slice assignment.

Writes DIR/gpen_<size>_cm<cm>_n<narrow>_b<batch>.onnx, ..._input.npy and ..._expect.npy (the
official fused PyTorch forward on that input), and prints one JSON line with the paths, the
max abs difference of the unfused forward against the fused one and the export time.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpen_reference as ref  # noqa: E402


def unfused_modconv_forward(self, x, w, trace=None, name=None):
    s = self.modulation(w)                                       # (N, cin)
    wstat = self.scale * self.weight[0]                          # (cout, cin, k, k), constant
    out = x * s[:, :, None, None]
    if self.upsample:
        out = F.conv_transpose2d(out, wstat.transpose(0, 1), padding=0, stride=2)
    else:
        out = F.conv2d(out, wstat, padding=self.padding)
    if self.demodulate:
        d = torch.rsqrt((s * s) @ wstat.pow(2).sum([2, 3]).t() + 1e-8)  # (N, cout)
        out = out * d[:, :, None, None]
    if self.upsample:
        out = self.blur(out)
    return out


def upfirdn_export(x, kernel, up, pad0, pad1, down):
    if up > 1:
        assert up == 2
        n, c, h, w = x.shape
        z = torch.zeros_like(x)
        x = torch.stack([x, z], dim=4).reshape(n, c, h, 2 * w)
        x = torch.stack([x, torch.zeros_like(x)], dim=3).reshape(n, c, 2 * h, 2 * w)
    return _upfirdn_official(x, kernel, 1, pad0, pad1, down)


_upfirdn_official = ref.upfirdn


def paths(out_dir, size, cm, narrow, batch):
    stem = os.path.join(out_dir, 'gpen_%d_cm%g_n%g_b%d' % (size, cm, narrow, batch))
    return stem + '.onnx', stem + '_input.npy', stem + '_expect.npy'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--size', type=int, default=512)
    ap.add_argument('--cm', type=float, default=2)
    ap.add_argument('--narrow', type=float, default=1.0)
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--seed', type=int, default=0, help='seed of the random weights (as gpen_reference.py)')
    ap.add_argument('--opset', type=int, default=13)
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--out-dir', required=True)
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    cm = int(a.cm) if float(a.cm).is_integer() else a.cm
    os.makedirs(a.out_dir, exist_ok=True)
    onnx_path, in_path, exp_path = paths(a.out_dir, a.size, cm, a.narrow, a.batch)
    model = ref.random_model(a.size, cm, a.narrow, a.seed)
    x = torch.rand(a.batch, 3, a.size, a.size, generator=torch.Generator().manual_seed(0)) * 2 - 1
    with torch.no_grad():
        expect = model(x)
    t0 = time.perf_counter()
    ref.ModulatedConv2d.forward = unfused_modconv_forward
    ref.upfirdn = upfirdn_export
    with torch.no_grad():
        unfused = model(x)
        torch.onnx.export(model, (x,), onnx_path + '.tmp', input_names=['input'], output_names=['output'],
                          opset_version=a.opset, do_constant_folding=True)
    os.replace(onnx_path + '.tmp', onnx_path)
    np.save(in_path, x.numpy().astype(np.float32))
    np.save(exp_path, expect.numpy().astype(np.float32))
    print(json.dumps({'onnx': onnx_path, 'input': in_path, 'expect': exp_path, 'opset': a.opset,
                      'torch': torch.__version__, 'export_s': round(time.perf_counter() - t0, 2),
                      'unfused_vs_fused_max_abs': float((unfused - expect).abs().max()),
                      'onnx_bytes': os.path.getsize(onnx_path)}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
